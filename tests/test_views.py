"""app.presentation: the data behind every page, checked without Streamlit."""
import ast
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from app import routes
from app.presentation.algorithms import AlgorithmFilter, algorithm_frame, compare_algorithms, differing_attributes
from app.presentation.common import (DIMENSIONS, INFERRED_MIN_CONFIDENCE, TABLE2, first_selected, lookup_node,
                                     lookup_work)
from app.presentation.node_sections import NodeContext, family_base, node_sections
from app.presentation.overview import (FORMULAS, TABLE1, cell_keys, cell_works, heatmap, inferred_cell_works,
                                       inferred_cells, table1_markdown, work_dimensions, works_per_year, year_chart)
from app.presentation.search import SearchState, results_frame, why_matched
from app.presentation.taxonomy import (dimension_children, dimension_roots, dimension_tree, graph_view,
                                       inferred_node_works, node_options, node_page, tree_frame, tree_rows)
from app.presentation.work import facts_markdown, work_options, work_page


def test_table1_markdown_renders_every_row_with_math(catalog):
    md = table1_markdown(catalog)
    lines = md.splitlines()
    assert lines[0].startswith("| Concept | Traditional PBRFT")
    rows = lines[2:]
    assert len(rows) == len(catalog.tables[TABLE1].frame) == 5
    for row in rows:
        assert row.count("|") - row.count(r"\|") == 4  # three cells, no stray pipes
        assert row.count("$") % 2 == 0                  # math opens and closes in every row
    assert "**State space** $\\mathcal{S}$" in md
    assert "\\text{ agent }" not in md and "\\text{agent}" in md
    assert "$T > 1$." in md  # "$T > 1$ ." tidied


def test_formulas_are_balanced_latex():
    for tex in FORMULAS.values():
        assert tex.count("{") == tex.count("}")
        assert tex.count(r"\langle") == tex.count(r"\rangle")
    assert "T = 1" in FORMULAS["pbrft_mdp"]
    assert r"\gamma" in FORMULAS["agentic_pomdp"] and r"\mathcal{O}" in FORMULAS["agentic_pomdp"]


def test_heatmap_cells_match_cooccurrence_and_cell_works(catalog):
    heat = heatmap(catalog)
    counts = catalog.graph.cooccurrence("capability", "task")
    assert len(heat.ids) == counts.size
    data = heat.spec["series"][0]["data"]
    for (cap, task), item in zip(heat.ids, data):
        n = int(counts.loc[cap, task])
        assert item["value"][2] == (n if n else "-")
        assert len(cell_works(catalog, cap, task)) == n
    works = cell_works(catalog, "perception", "vision")
    assert works and all({"perception", "vision"} <= set(catalog.placements(w.key, expand=True)) for w in works)
    json.dumps(heat.spec)  # JSON-compatible, as st.echarts_chart requires


def test_heatmap_marks_the_selected_cell(catalog):
    heat = heatmap(catalog, selected=("tool-use", "search-research"))
    marked = [i for i, item in enumerate(heat.spec["series"][0]["data"]) if "itemStyle" in item]
    assert [heat.ids[i] for i in marked] == [("tool-use", "search-research")]


def test_works_per_year_counts_each_dimension(catalog):
    table = works_per_year(catalog, min_year=2018)
    assert table.index[0] == "before 2018" and "2025" in table.index
    assert list(table.columns) == [d for d in DIMENSIONS if d in table.columns]
    n2025_cap = sum(1 for w in catalog if w.year == 2025 and "capability" in work_dimensions(catalog, w))
    assert table.loc["2025", "capability"] == n2025_cap
    chart = year_chart(table)
    assert len(chart.spec["series"]) == len(table.columns)
    json.dumps(chart.spec)


@pytest.mark.parametrize("dim", DIMENSIONS)
def test_dimension_tree_indices_map_to_nodes(catalog, dim):
    tree = dimension_tree(catalog, dim)
    data = tree.spec["series"][0]["data"]
    assert len(data) == len(tree.ids)
    real = [i for i in tree.ids if i is not None]
    assert sorted(real) == sorted(r.node for r in tree_rows(catalog, dim))
    roots = set(dimension_roots(catalog, dim))
    for nid, item in zip(tree.ids, data):
        if item["symbolSize"] == 0:  # a point where an edge bends
            assert nid is None and not item["label"]["show"]
            continue
        assert item["name"].endswith(f"({item['value']})")
        if nid is not None and not (nid in roots and len(roots) == 1):  # a lone root shows the dimension's name
            assert item["name"].startswith(catalog.taxonomy[nid].name)
    # ECharts keys a graph's points by name: every name once
    assert len({item["name"] for item in data}) == len(data)
    # followed through its bend points, every edge goes from a parent to its child
    nodes = {i for i, item in enumerate(data) if item["symbolSize"] > 0}
    out: dict[int, list[int]] = {}
    for link in tree.spec["series"][0]["links"]:
        out.setdefault(link["source"], []).append(link["target"])

    def reached(i: int) -> set[int]:
        return {j for t in out.get(i, []) for j in ({t} if t in nodes else reached(t))}

    for i in nodes:
        parent = tree.ids[i]
        for j in reached(i):
            child = tree.ids[j]
            assert child is not None and catalog.taxonomy[child].parent == parent or parent is None
    assert sorted(j for i in nodes for j in reached(i)) == sorted(nodes - {tree.ids.index(tree.ids[0])})
    json.dumps(tree.spec)


def _segments(path):
    return list(zip(path, path[1:]))


def _crosses(box, segment) -> bool:
    """Whether an axis-parallel segment passes through the inside of a box (left, top, right, bottom)."""
    (x1, y1), (x2, y2) = segment
    left, top, right, bottom = box
    return min(x1, x2) < right and max(x1, x2) > left and min(y1, y2) < bottom and max(y1, y2) > top


def _check_tree_geometry(layout, column_px):
    from app.presentation.taxonomy import label_box

    for node in layout.order:  # each node in the column of its own depth, a leaf too
        assert layout.pos[node][0] == layout.depth[node] * column_px
    for parent, child, path in layout.edges:
        # an edge starts at its parent and ends exactly at its child, in horizontal and vertical pieces
        assert path[0] == layout.pos[parent] and path[-1] == layout.pos[child]
        assert all(a[0] == b[0] or a[1] == b[1] for a, b in _segments(path))
    for node in layout.order:
        kids = [c for p, c, _ in layout.edges if p == node]
        if kids:  # an inner node at the middle of its first and last child
            assert layout.pos[node][1] == (layout.pos[kids[0]][1] + layout.pos[kids[-1]][1]) / 2
    boxes = {n: label_box(layout, n) for n in layout.order if n is not None}
    names = list(boxes)
    for i, a in enumerate(names):  # no two labels overlap
        for b in names[i + 1:]:
            ba, bb = boxes[a], boxes[b]
            assert not (ba[0] < bb[2] and bb[0] < ba[2] and ba[1] < bb[3] and bb[1] < ba[3]), (a, b)
    for n, box in boxes.items():  # and no edge runs through a label
        for parent, child, path in layout.edges:
            assert not any(_crosses(box, seg) for seg in _segments(path)), (n, parent, child)


def test_tree_layout_geometry():
    """The tree's geometry (app.presentation.taxonomy.tree_layout): a root whose children are a leaf, an inner
    node with three leaves (the middle edge a straight line at the parent's height) and one with two."""
    from app.presentation.taxonomy import COLUMN_PX, tree_layout

    children = {"root": ["leaf", "odd", "even"], "odd": ["o1", "o2", "o3"], "even": ["e1", "e2"],
                "e2": ["deep"]}
    labels = {n: f"{n} label ({i})" for i, n in enumerate(["root", "leaf", "odd", "o1", "o2", "o3", "even", "e1",
                                                           "e2", "deep"])}
    layout = tree_layout(children, "root", labels)
    assert layout.order == ["root", "leaf", "odd", "o1", "o2", "o3", "even", "e1", "e2", "deep"]
    assert layout.pos["leaf"] == (COLUMN_PX, 0.0)  # a root's leaf child in column 1, not in the leaves' last column
    assert layout.pos["deep"][0] == 3 * COLUMN_PX
    middle = next(path for parent, child, path in layout.edges if child == "o2")
    assert {y for _, y in middle} == {layout.pos["odd"][1]}  # one straight line at the parent's height
    assert layout.pos["even"][1] == (layout.pos["e1"][1] + layout.pos["e2"][1]) / 2
    _check_tree_geometry(layout, COLUMN_PX)
    # a long inner label is cut before it reaches its parent's spine (its full name is in the tooltip)
    long = tree_layout({"r": ["x"], "x": ["y"]}, "r", {"r": "r", "x": "x" * 200, "y": "y"})
    assert long.label_chars["x"] < 200
    _check_tree_geometry(long, COLUMN_PX)


@pytest.mark.parametrize("dim", DIMENSIONS)
def test_every_dimension_tree_has_clean_geometry(catalog, dim):
    from app.presentation.taxonomy import COLUMN_PX, tree_layout

    roots = dimension_roots(catalog, dim)
    children = {None: roots} if len(roots) > 1 else {}

    def collect(n):
        children[n] = dimension_children(catalog, n)
        for c in children[n]:
            collect(c)

    for r in roots:
        collect(r)
    nodes = set(children) | {c for kids in children.values() for c in kids}
    labels = {n: f"{catalog.taxonomy[n].name if n else dim} (99)" for n in nodes}
    _check_tree_geometry(tree_layout(children, None if len(roots) > 1 else roots[0], labels), COLUMN_PX)


def test_tree_rows_are_depth_first_with_counts(catalog):
    rows = tree_rows(catalog, "capability")
    assert rows[0].node == "capabilities" and rows[0].depth == 0
    assert [r.node for r in rows[1:4]] == ["planning", "planning-external-guide", "planning-internal-driver"]
    memory = next(r for r in rows if r.node == "memory")
    assert memory.works == len(catalog.works_in("memory")) and memory.direct == 1
    frame = tree_frame(catalog, "capability")
    assert frame.loc[0, "open"] == "taxonomy?node=capabilities"


def test_graph_view_ids_and_edges(catalog):
    graph = graph_view(catalog, "capability")
    series = graph.spec["series"][0]
    assert len(series["data"]) == len(graph.ids)
    kinds = {i.split(":", 1)[0] for i in graph.ids}
    assert kinds == {"node", "work", "algorithm"}
    assert "node:memory" in graph.ids and "work:memory-r1" in graph.ids
    edges = {(graph.ids[link["source"]], graph.ids[link["target"]]) for link in series["links"]}
    assert ("work:memory-r1", "node:memory-rag-style") in edges or ("node:memory-rag-style", "work:memory-r1") in edges
    again = graph_view(catalog, "capability")
    assert [d["x"] for d in again.spec["series"][0]["data"]] == [d["x"] for d in series["data"]]  # seeded layout
    everything = graph_view(catalog, None)
    assert not any(i.startswith("work:") for i in everything.ids)  # all dimensions: no works
    json.dumps(graph.spec)


def test_graph_layout_does_not_depend_on_the_hash_seed():
    """Two processes with different PYTHONHASHSEED draw the same picture (a set-ordered layout did not)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = ("import json; from papers.catalog import Catalog; from app.presentation.taxonomy import graph_view; "
            "d = graph_view(Catalog.load(), 'capability').spec['series'][0]['data']; "
            "print(json.dumps([[x['id'], round(x['x'], 3), round(x['y'], 3)] for x in d]))")
    root = Path(__file__).resolve().parents[1]
    outs = [subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout
            for seed in ("1", "2")]
    assert outs[0] == outs[1]


def test_first_selected_reads_echarts_state():
    state = {"selection": {"selected": [{"series_index": 0, "data_type": "node", "data_indices": [4]}], "areas": []}}
    assert first_selected(state) == 4
    assert first_selected({"selection": {"selected": []}}) is None
    assert first_selected(None) is None
    edge = {"selection": {"selected": [{"series_index": 0, "data_type": "edge", "data_indices": [1]}]}}
    assert first_selected(edge) is None


def test_node_page_with_and_without_descendants(catalog):
    page = node_page(catalog, "memory")
    assert [p for p, _ in page.path] == ["capabilities", "memory"]
    assert {c for c, _, _ in page.children} == {"memory-rag-style", "memory-token-level", "memory-structured"}
    assert len(page.works) == len(catalog.works_in("memory")) == page.all_works
    assert any(title.startswith("Table 3") for title, _ in page.tables)
    direct = node_page(catalog, "memory", include_descendants=False)
    assert len(direct.works) == direct.direct_works < len(page.works)
    years = [w.year or 0 for w in page.works]
    assert years == sorted(years, reverse=True)


def test_work_page_facts_and_rows(catalog):
    page = work_page(catalog, "search-r1")
    facts = dict(page.facts)
    assert facts["arXiv"] == "2503.09516" and facts["Year"] == "2025"
    assert ("Code", "https://github.com/PeterGriffinJin/Search-R1") in page.links
    assert [p for p, _ in page.placements[0]][-1] == "search-external-web"
    assert any(t.startswith("Table 4") for t, _ in page.tables)
    frame = page.tables[0][1]
    assert "Base LLM" in frame.columns and frame.loc[0, "open"] == "work?key=search-r1"
    assert page.related and all(n >= 1 for _, n in page.related)
    md = facts_markdown([("a|b", "x|y")])
    assert r"a\|b" in md and r"x\|y" in md


def test_lookups_give_suggestions(catalog):
    assert lookup_node(catalog, "Memory").found == "memory"
    miss = lookup_node(catalog, "memroy")
    assert miss.found is None and "memory" in miss.suggestions
    assert lookup_work(catalog, "2503.09516").found == "search-r1"
    assert lookup_work(catalog, "Search-R1").found == "search-r1"
    miss = lookup_work(catalog, "serch-r1")
    assert miss.found is None and "search-r1" in miss.suggestions
    assert lookup_work(catalog, "").found is None


def test_algorithm_frame_filter_and_compare(catalog):
    frame = algorithm_frame(catalog)
    assert len(frame) == len(catalog.tables[TABLE2].frame)
    grpo = frame[frame["method"] == "GRPO"].iloc[0]
    assert grpo["node"] == "alg-grpo" and grpo["works_using"] >= 20
    only_dpo = AlgorithmFilter(families=("DPO family",)).apply(frame)
    assert set(only_dpo["family"]) == {"DPO family"}
    no_clip = AlgorithmFilter(clip="No").apply(frame)
    assert set(no_clip["clip"]) == {"No"}
    text = AlgorithmFilter(text="sequence").apply(frame)
    assert "GSPO" in set(text["method"])
    cmp = compare_algorithms(frame, ["PPO", "GRPO", "nonexistent"])
    assert list(cmp.columns) == ["PPO", "GRPO"]
    assert cmp.loc["Clip", "PPO"] == "Yes" and cmp.loc["KL penalty", "PPO"] == "No"
    assert "KL penalty" in differing_attributes(cmp) and "Clip" not in differing_attributes(cmp)


def test_search_state_round_trips_and_reports_bad_values(catalog):
    params = {"q": ["memory  agents"], "node": ["memory", "Tool use"], "dim": ["capability"], "from": ["2024"],
              "to": ["2025"], "kind": ["method"], "algo": ["grpo"], "code": ["yes"], "xnode": ["code"],
              "xkind": ["survey"], "page": ["3"], "mode": ["lexical"]}
    state, problems = SearchState.from_params(params, catalog)
    assert problems == []
    assert state.q == "memory agents" and state.nodes == ("memory", "tool-use") and state.algorithms == ("GRPO",)
    assert state.has_code is True and state.page == 3 and state.mode == "lexical"
    again, _ = SearchState.from_params({k: v if isinstance(v, list) else [v] for k, v in state.to_params().items()},
                                             catalog)
    assert again == state
    assert SearchState().to_params() == {}
    bad, problems = SearchState.from_params(
        {"node": ["memroy"], "kind": ["paper"], "from": ["20x5"], "code": ["maybe"], "page": ["-2"]}, catalog)
    assert bad == SearchState()
    assert any("memroy" in p and "memory" in p for p in problems) and len(problems) == 4
    backwards, problems = SearchState.from_params({"from": ["2025"], "to": ["2020"]}, catalog)
    assert (backwards.year_from, backwards.year_to) == (2020, 2025) and "backwards" in problems[0]
    kwargs = state.filter_kwargs()
    assert kwargs["nodes"] == ["memory", "tool-use"] and kwargs["has_code"] is True


def test_why_matched_prefers_specific_nodes(catalog):
    class Hit:
        key, score, dense_score = "memory-r1", 0.5, 0.4
        matched_nodes = ["memory-rag-style", "memory", "capabilities"]
        matched_terms = ["memory"]
    why = why_matched(catalog, Hit())
    assert why.startswith("in RL in RAG-style memory, Memory") and "terms: memory" in why
    assert "capability perspective" not in why
    frame = results_frame(catalog, [Hit()])
    assert list(frame["key"]) == ["memory-r1"] and frame.loc[0, "why"] == why


def test_options_cover_every_node_and_work(catalog):
    assert set(node_options(catalog)) == set(catalog.taxonomy.nodes)
    opts = work_options(catalog)
    assert set(opts) == set(catalog.works)
    assert re.match(r"Search-R1 \(2025\) — ", opts["search-r1"])


# -- routes: every page defined once ---------------------------------------------------------------
APP_DIR = Path(__file__).resolve().parents[1] / "app"


def test_links_spell_each_route_once():
    assert routes.work("search-r1").url == "work?key=search-r1"
    assert routes.node("memory").url == "taxonomy?node=memory"
    assert routes.search(q="web agents", kind=["method", "benchmark"], node="").url == \
        "search?q=web+agents&kind=method&kind=benchmark"  # lists repeat, empty values are left out
    assert routes.work("a&b=c").url == "work?key=a%26b%3Dc"  # a key is a value, never more parameters
    assert routes.page("overview").url == "overview" and routes.lab(run="r1").script == "views/lab.py"
    with pytest.raises(KeyError, match="no page 'nowhere'"):
        routes.page("nowhere")
    for page in routes.PAGES.values():
        assert (APP_DIR / page.script).is_file(), page
    assert [p.path for p in routes.PAGES.values() if p.default] == ["overview"]


def _code_strings(path: Path) -> list[str]:
    """The string literals of a module's code, docstrings left out (they may quote a URL)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


def test_no_page_route_is_spelled_outside_app_routes():
    """Pages, ui and presentation link through app.routes: no hand-written "work?key=" or script path."""
    offenders = []
    for path in sorted(APP_DIR.rglob("*.py")):
        if path.name == "routes.py":
            continue
        for text in _code_strings(path):
            if re.search(r"\b(" + "|".join(routes.PAGES) + r")\?\w+=", text) or re.search(r"views/\w+\.py", text):
                offenders.append(f"{path.relative_to(APP_DIR)}: {text!r}")
        source = path.read_text(encoding="utf-8")
        if path.name != "ui.py" and re.search(r"st\.(page_link|switch_page)\(", source):
            offenders.append(f"{path.relative_to(APP_DIR)}: calls st.page_link/switch_page (use ui.page_link/goto)")
    assert not offenders, "\n".join(offenders)


def test_presentation_and_routes_import_without_streamlit():
    import pkgutil
    import subprocess
    import sys

    import app.presentation

    modules = [f"app.presentation.{m.name}" for m in pkgutil.iter_modules(app.presentation.__path__)]
    assert len(modules) >= 11
    r = subprocess.run([sys.executable, "-c", f"import sys, app.routes, {', '.join(modules)}; "
                                              "print('streamlit' in sys.modules)"],
                       capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "False"


def test_every_page_has_its_own_presentation_module_and_the_package_reexports_nothing():
    """app/views/X.py takes its data from app/presentation/X.py; a name has one home (no re-exports)."""
    for page in sorted((APP_DIR / "views").glob("*.py")):
        assert (APP_DIR / "presentation" / page.name).exists(), page.name
        assert f"from app.presentation.{page.stem} import " in page.read_text(encoding="utf-8"), page.name
    init = ast.parse((APP_DIR / "presentation" / "__init__.py").read_text(encoding="utf-8"))
    assert [type(n) for n in init.body] == [ast.Expr]  # its docstring only


def test_algorithm_rows_say_whether_they_run_and_link_to_the_lab(catalog):
    from lab.catalog import default_preset, for_node

    frame = algorithm_frame(catalog)
    for _, row in frame.iterrows():
        impls = for_node(row["node"]) if row["node"] else []
        assert row["runnable"] == bool(impls), row["method"]
        if impls:
            assert row["lab"] == routes.lab(impl=impls[0].id, preset=default_preset(impls[0])).url
    assert frame.set_index("method").loc["GRPO", "runnable"]


def _node_sections(catalog, node_id: str) -> dict:
    """The node page's sections of ``node_id`` (no comparison grid, no value-search record)."""
    return dict(node_sections(NodeContext(catalog, node_id, load_grids=list, load_value_searches=lambda _: [])))


def _links(blocks) -> list[tuple[str, routes.Link]]:
    return [(part.label, part.body) for block in blocks for part in block.parts if part.kind == "link"]


def test_family_headers_link_to_their_base(catalog):
    (label, link), *_ = _links(_node_sections(catalog, "alg-grpo")["implementations"])
    assert label == "Run this" and link.query["impl"] == "calculator-grpo"
    # a node with its own implementation shows it, even when it is also a family header
    header = _node_sections(catalog, "alg-grpo-family")
    assert "implementations" in header and "family" not in header
    # a header without its own implementation links to its first child that runs
    from reference_impls import registry

    import dataclasses

    stripped = tuple(dataclasses.replace(i, nodes=tuple(n for n in i.nodes if n != "alg-ppo-family"))
                     for i in registry.implementations())

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(registry, "implementations", lambda: stripped)
        header = _node_sections(catalog, "alg-ppo-family")
        assert "implementations" not in header
        [(label, link)] = _links(header["family"])
        assert label == "Run the family's base" and link.query["impl"] == "calculator-ppo"
        assert family_base(catalog, "alg-ppo-family").id == "calculator-ppo"


def test_every_algorithm_node_runs_links_to_its_family_or_says_why_not(catalog):
    """Issues 18/19: each algorithm node has "Run this", or is a family header linking to its base, or is
    listed in NOT_IMPLEMENTED with the reason the node page shows (and only then)."""
    from reference_impls.implementations import NOT_IMPLEMENTED

    tax = catalog.taxonomy
    shown = {node: _node_sections(catalog, node) for node in tax.by_dimension(tax["alg-grpo"].dimension)}
    missing = {node for node, sections in shown.items() if not {"implementations", "family"} & set(sections)}
    assert missing == set(NOT_IMPLEMENTED), missing ^ set(NOT_IMPLEMENTED)
    assert {node for node, sections in shown.items() if "not implemented" in sections} == missing
    assert len(shown) == 42


def test_heatmap_with_inferred_axes_adds_guesses_beside_the_survey(catalog):
    from papers.axes import by_work, load_inferred

    inferred = by_work(load_inferred(catalog))
    survey = heatmap(catalog)
    both = heatmap(catalog, inferred=inferred)
    cells = inferred_cells(catalog, inferred)
    assert cells, "the shipped inferences add methods to some cells"
    added = 0
    for s_item, b_item, ids in zip(survey.spec["series"][0]["data"], both.spec["series"][0]["data"], both.ids):
        v = 0 if s_item["value"][2] == "-" else s_item["value"][2]
        w = 0 if b_item["value"][2] == "-" else b_item["value"][2]
        extra = cells.get(ids, set()) - cell_keys(catalog, *ids)
        assert w == v + len(extra)  # the survey's count is never changed, only added to
        if extra:
            added += 1
            assert b_item["label"]["formatter"] == f"{v}+{len(extra)}"
            assert {x.key for x in inferred_cell_works(catalog, *ids, inferred)} == extra
    assert added > 0
    # every counted guess is the first choice of an axis the survey does not give, above the threshold
    for (cap, task), keys in cells.items():
        for key in keys:
            axes = inferred[key]
            assert any(r[0].section in (cap, task) and r[0].section_confidence >= INFERRED_MIN_CONFIDENCE
                       for r in axes.values())


def test_inferred_node_works_respect_the_threshold(catalog):
    from papers.axes import by_work, load_inferred

    inferred = by_work(load_inferred(catalog))
    rows = inferred_node_works(catalog, "tool-use", inferred)
    assert rows and all(c >= INFERRED_MIN_CONFIDENCE for _, c in rows)
    for work, confidence in rows:
        tops = [ranked[0] for ranked in inferred[work.key].values()]
        assert any("tool-use" in catalog.taxonomy.path(t.node) and t.confidence == confidence for t in tops)
    assert inferred_node_works(catalog, "tool-use", inferred, min_confidence=1.01) == []


def test_import_form_is_checked_and_written_as_the_importers_csv(catalog):
    import csv
    import io

    from app.presentation.imports import form_csv, form_problem, node_paths, upload_name, user_works_frame
    from papers.ingest import AUTO_TAG
    from papers.schema import Work

    assert form_problem(" ", "2025") == "Title: required."
    assert form_problem("A title", "25") == "Year: '25' is not a year."
    assert form_problem("A title", "") is None and form_problem("A title", "2025") is None
    rows = list(csv.reader(io.StringIO(form_csv(title="A, title", year="2025", abstract="x\ny"))))
    assert rows == [["title", "year", "arxiv_id", "url", "code_url", "abstract"],
                    ["A, title", "2025", "", "", "", "x\ny"]]
    assert upload_name("../../etc/pass wd.bib") == "_.._etc_pass_wd.bib"  # one name in the uploads folder
    assert upload_name(".hidden") == "hidden" and upload_name("...") == "upload"
    works = [Work(key="a", title="A", nodes=("memory",)), Work(key="b", title="B", tags=(AUTO_TAG,)),
             Work(key="c", title="C")]
    frame = user_works_frame(works, {"c": "unknown node 'x'"})
    assert list(frame["placement"]) == ["accepted", "suggested", "needs attention: unknown node 'x'"]
    assert node_paths(catalog)["memory"].endswith("> Memory")


def test_runs_table_and_curves_of_chosen_runs(tmp_path):
    from app.presentation.runs import MISSING, comparison, runs_frame

    def run(run_id, rows, **extra):
        path = tmp_path / f"{run_id}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        fields = dict(id=run_id, status="finished", shown_status="finished", name="calculator-dapo", preset="quick",
                      model="tiny", config={"steps": 8}, final_metrics={}, error=None, metrics_path=path,
                      started=1000.0, finished=1225.0)
        return SimpleNamespace(**{**fields, **extra})

    runs = [run("r1", [{"step": 1, "reward_mean": 0.1}, {"step": 2, "reward_mean": 0.25}]),
            run("r2", [{"step": 1, "kl": 0}], name="memory-ppo", preset=None, status="running",
                shown_status="stopping", finished=None),
            run("r3", [], status="queued", shown_status="queued", started=None, finished=None)]
    table = runs_frame(runs, now=1100.0)
    assert list(table["id"]) == ["r1", "r2", "r3"]
    assert list(table["implementation"]) == ["calculator-dapo", "memory-ppo", "calculator-dapo"]
    assert list(table["preset"]) == ["quick", MISSING, "quick"]
    assert list(table["status"]) == ["finished", "stopping", "queued"]
    assert list(table["duration"]) == ["3 min 45 s", "1 min 40 s", MISSING]  # a running run: to now
    assert list(table["steps"]) == ["2 / 8", "1 / 8", "0 / 8"]
    assert list(table["model"]) == ["tiny (random)"] * 3
    assert list(table["reward_mean"]) == ["0.250", MISSING, MISSING] and table["error"].tolist() == ["", "", ""]
    assert table.loc[2, "started"] == MISSING and table.loc[0, "started"].startswith("19")
    assert "None" not in table.to_csv()
    curves, missing = comparison(runs, ["r1", "r2", "r3"], "reward_mean")
    assert list(curves["run"].unique()) == ["calculator-dapo · r1"] and curves["value"].tolist() == [0.1, 0.25]
    assert missing == ["memory-ppo · r2: does not log reward_mean", "calculator-dapo · r3: no RL step yet (queued)"]
    empty, missing = comparison(runs, ["r3"], "kl")
    assert empty.empty and len(missing) == 1


def test_every_policy_model_has_a_short_name_in_the_runs_table():
    from app.presentation.runs import MODEL_LABELS
    from reference_impls.models import MODEL_NAMES

    assert set(MODEL_LABELS) == set(MODEL_NAMES)
    assert all(len(label) <= 13 for label in MODEL_LABELS.values())  # what the column's 100 px hold


def test_metric_charts_fit_their_axes_to_the_values():
    """issue 45: a one-point loss of 1.45 is not drawn on a 0-1 axis, a constant 0 reads 0, numbers are not
    printed with six decimals, steps are whole numbers."""
    import pandas as pd

    from app.presentation.runs import VALUE_FORMAT, axis_domain, curve_frame, metric_chart

    lo, hi = axis_domain([1.45])
    assert lo < 1.45 < hi and hi - lo < 1
    assert axis_domain([0.0, 0.0]) == (-1.0, 1.0)
    assert axis_domain([1.0, 3.0]) == (0.9, 3.1)
    assert axis_domain([]) == (0.0, 1.0)
    spec = metric_chart(curve_frame([{"step": 1, "loss": 1.45}], "loss"), "loss").to_dict()
    enc = spec["encoding"]
    assert enc["y"]["axis"]["format"] == VALUE_FORMAT and enc["x"]["axis"]["format"] == "d"
    assert enc["y"]["scale"]["domain"] == list(axis_domain([1.45])) and enc["y"]["scale"]["zero"] is False
    assert enc["x"]["scale"]["domain"] == [0.5, 1.5] and spec["mark"]["point"] is True
    curves = pd.DataFrame({"step": [1, 2, 1], "value": [0.1, 0.2, 0.3], "run": ["a", "a", "b"]})
    legend = metric_chart(curves, "reward_mean", color="run").to_dict()["encoding"]["color"]
    assert legend["field"] == "run" and legend["legend"]["orient"] == "bottom"
    assert curve_frame([{"step": 1, "kl": 0.0}, {"step": 2}], "kl").values.tolist() == [[1, 0.0]]


def test_transcript_shows_task_observations_and_model_text_apart_and_escapes_every_text():
    from app.presentation.lab import SEGMENT_STYLES, transcript_html

    out = transcript_html([{"role": "prompt", "text": "Add 2 & 3"}, {"role": "model", "text": "<calc>2+3</calc>"},
                           {"role": "env", "text": "<result>5</result>"}, {"role": "system", "text": "hidden"},
                           {"role": "model", "text": 7}])
    for role in ("prompt", "env", "model"):
        assert SEGMENT_STYLES[role][1] in out and f">{SEGMENT_STYLES[role][0]}</small>" in out
    assert out.index("Add 2 &amp; 3") < out.index("&lt;calc&gt;2+3&lt;/calc&gt;") < out.index("&lt;result&gt;5")
    assert "<calc>" not in out and "hidden" not in out and ">7</pre>" in out


def test_run_caption_names_the_implementation_and_shows_the_sandbox_layer():
    """issue 47: the code sandbox's layer recorded in a run's status.json is shown under the run's title;
    issue 45: the run is named by its implementation, and a pending stop reads "stopping"."""
    from types import SimpleNamespace

    from app.presentation.lab import run_caption

    run = SimpleNamespace(name="code-grpo", model="tiny", preset="quick", shown_status="running", error="")
    assert "code sandbox: bwrap" in run_caption(run, {"state": "running", "sandbox_layer": "bwrap"})
    plain = run_caption(run, {"state": "running"})
    assert "sandbox" not in plain and plain == "code-grpo · tiny · preset quick · status **running**"
    stopping = SimpleNamespace(name="calculator-dapo", model="tiny", preset=None, shown_status="stopping", error="")
    assert run_caption(stopping, {}) == "calculator-dapo · tiny · status **stopping**"


def test_equation_lines_split_only_at_top_level_quads():
    from app.presentation.lab import equation_lines

    assert equation_lines(r"a=1,\quad b=2") == ["a=1", "b=2"]
    assert equation_lines(r"\left( x \quad y \right),\quad {p \quad q}") == [r"\left( x \quad y \right)", r"{p \quad q}"]
    assert equation_lines(r"x \qquad y") == [r"x \qquad y"]

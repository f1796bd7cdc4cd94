"""app.presentation.node_sections: what only some node pages show, as sections built without Streamlit (the
pages that render them are checked in test_node_proxies.py and test_app_pages.py)."""
from types import SimpleNamespace

import pytest

from app import routes
from app.presentation.node_sections import (PASSK_NODE, SECTIONS, TOURS, NodeContext, Part, TourStop, node_proxy_note,
                                            node_sections, passk_note, tour_line, tour_stops)


def shown(catalog, node_id, grids=(), records=()):
    """The sections a node page shows, by name, with stand-in comparison grids and value-search records."""
    return dict(node_sections(NodeContext(catalog, node_id, load_grids=lambda: list(grids),
                                          load_value_searches=lambda _: list(records))))


def parts(blocks, kind):
    return [part for block in blocks for part in block.parts if part.kind == kind]


def test_sections_come_in_the_page_order():
    assert [s.name for s in SECTIONS] == ["implementations", "in the code", "two forms", "measured learning", "claims",
                                          "comparison", "value search", "not implemented", "proxy", "pass@k",
                                          "scaling sweep", "family", "tour"]


def test_a_node_with_an_implementation_shows_it_boxed_with_run_this(catalog):
    sections = shown(catalog, "alg-grpo")
    # no grid measured it here, so no comparison lines; its learning preset on the calculator is measured
    assert list(sections) == ["implementations", "measured learning"]
    first = sections["implementations"][0]
    assert first.boxed and first.parts[0].body.startswith("**Reference implementation:** ")
    assert [p.kind for p in first.parts].count("latex") == 1
    assert first.parts[-1] == Part("link", routes.lab(impl="calculator-grpo", preset="learn"), "Run this",
                                   ":material/play_arrow:")


def test_comparison_lines_name_the_grid_and_link_to_it(catalog):
    row = {"implementation": "calculator-grpo", "seeds": 2, "heldout": 0.5, "low": 0.4, "high": 0.6,
           "verdict": "better than the baseline"}
    summary = SimpleNamespace(progression={}, board={"calculator": [row]})
    grid = SimpleNamespace(spec={"name": "my_grid"}, key="yours:my_grid", cells=[{"implementation": "calculator-grpo"}],
                           summary=lambda: summary)
    [block] = shown(catalog, "alg-grpo", grids=[grid])["comparison"]
    [line] = parts([block], "caption")
    assert line.body == (r"In the comparison grid *my\_grid* (calculator, 2 seeds): held-out 50.0 % [40.0, 60.0]; "
                         "better than the baseline.")
    # the text names the grid, the link opens it by its key (a user's folder: ``yours:<folder>``)
    assert parts([block], "link")[0].body == routes.compare(grid="yours:my_grid") and not block.boxed


def test_a_value_search_record_is_a_box_with_its_table_and_verdicts(catalog):
    diff = {"difference": {"mean": 0.1, "low": -0.05, "high": 0.25}, "verdict": "no significant difference"}
    method = {"success": {"mean": 0.5, "low": 0.4, "high": 0.6}, "mean_calls": 20.0}
    record = {"env": "sokoban", "model": "warm/*sokoban*", "budgets": [
        {"budget": 16, "n": 2, "methods": {m: method for m in ("policy", "heuristic", "learned")},
         "learned_vs_heuristic": diff}]}
    [block] = shown(catalog, "planning-external-guide", records=[record])["value search"]
    assert block.boxed and [p.kind for p in block.parts] == ["markdown", "table", "caption"]
    assert r"warm/\*sokoban\*" in block.parts[0].body  # a record's text is shown literally
    assert len(block.parts[1].body) == 3


def test_a_node_without_an_implementation_shows_its_proxy_or_why_not(catalog, monkeypatch, node_without_implementation):
    from reference_impls.implementations import NODE_PROXIES

    proxied = node_without_implementation  # NODE_PROXIES is empty since issue 65: a stand-in entry
    assert node_proxy_note(proxied) is None and "proxy" not in shown(catalog, proxied)
    monkeypatch.setitem(NODE_PROXIES, proxied, ("zoom-grpo", "A stand-in proxy entry of this test, long enough."))
    sections = shown(catalog, proxied)
    assert "implementations" not in sections
    note = node_proxy_note(proxied)
    [block] = sections["proxy"]
    assert [(p.kind, p.icon) for p in block.parts] == [("note", ":material/pending:"), ("link", ":material/play_arrow:")]
    assert block.parts[1].body == note.link and block.parts[1].label == "Run the proxy"
    monkeypatch.setitem(NODE_PROXIES, proxied, (None, "No runnable proxy yet, for the test."))
    [block] = shown(catalog, proxied)["proxy"]
    assert [p.kind for p in block.parts] == ["note"]  # no runnable proxy: nothing to link
    assert "proxy" not in shown(catalog, "perception")  # it runs itself


def test_only_the_mechanistic_debate_node_shows_the_pass_at_k_note(catalog):
    grids = [SimpleNamespace(spec={"name": "core"}, key="core", passk={}, cells=[])]
    [block] = shown(catalog, PASSK_NODE, grids=grids)["pass@k"]
    note = passk_note(grids)
    assert block.parts[0] == Part("note", f"**{note.heading}** {note.text}", icon=":material/query_stats:")
    assert block.parts[1] == Part("link", note.link, note.link_label, ":material/leaderboard:")
    assert "pass@k" not in shown(catalog, "alg-grpo")


def test_grids_are_loaded_once_and_only_for_a_section_that_reads_them(catalog):
    calls = []
    ctx = NodeContext(catalog, "introduction", load_grids=lambda: calls.append(1) or [], load_value_searches=lambda _: [])
    node_sections(ctx)
    assert calls == []  # no implementation, not the pass@k node
    ctx = NodeContext(catalog, PASSK_NODE, load_grids=lambda: calls.append(1) or [], load_value_searches=lambda _: [])
    node_sections(ctx)
    node_sections(ctx)
    assert calls == [1]


def test_a_part_is_one_of_the_kinds_the_page_shows():
    with pytest.raises(ValueError, match="unknown part kind"):
        Part("video", {})


MEASURED = {"status": "learns", "seeds": 3, "steps": 3, "wall_s_median": 240.0, "load_1min_max": 1.8, "cpu": "cpu x",
            "reward_last": 0.8, "control_last": 0.2, "diff": 0.6, "ci_low": 0.4, "ci_high": 0.8, "control_lr": 0.0,
            "heldout_before": {"mean": 0.3, "low": 0.2, "high": 0.4}, "heldout_after": {"mean": 0.5, "low": 0.4,
                                                                                          "high": 0.6},
            "rewards": {"rl": [[0.2, 0.5, 0.8], [0.3, 0.6, 0.9], [0.1, 0.4, 0.7]],
                        "control": [[0.2, 0.2, 0.2], [0.3, 0.3, 0.3], [0.1, 0.1, 0.1]]},
            "memory_r1": {"rl": {"mean": 0.55, "low": 0.45, "high": 0.65},
                          "warm_start": {"mean": 0.3, "low": 0.2, "high": 0.4},
                          "add_only": {"mean": 0.5, "low": 0.4, "high": 0.6},
                          "rl_vs_warm_start": {"difference": 0.25, "low": 0.1, "high": 0.4},
                          "rl_vs_add_only": {"difference": 0.05, "low": -0.05, "high": 0.15}}}


def test_a_measured_preset_shows_its_curve_figures_and_memory_table_on_the_node(catalog, monkeypatch):
    from lab import recipes

    real = recipes.measured
    monkeypatch.setattr(recipes, "measured", lambda env, name="learn": MEASURED if env == "memory" else real(env, name))
    blocks = shown(catalog, "memory")["measured learning"]
    assert len(blocks) == 1 and blocks[0].boxed
    (chart,) = [p.body for p in parts(blocks, "chart")]
    arms = {row["arm"] for row in chart["data"]["values"]}
    assert arms == {"RL (learning preset)", "control (no update)"}
    assert max(row["high"] for row in chart["data"]["values"]) == 0.9  # the seeds' band, not only the mean
    text = " ".join(p.body for p in parts(blocks, "markdown") + parts(blocks, "caption"))
    assert "memory-grpo" in text and "median 4.0 min" in text and "0.40" in text  # settings, time, interval
    (table,) = [p.body for p in parts(blocks, "table")]
    assert list(table["manager"]) == ["RL manager", "warm start (no RL)", "add-only baseline"]
    assert list(table["exact_match"]) == [0.55, 0.3, 0.5]


def test_an_environment_without_measured_rewards_shows_no_measured_learning(catalog):
    from lab import recipes

    assert recipes.measured("zoom")["status"] == recipes.NOT_MEASURED
    assert "measured learning" not in shown(catalog, "perception-tool-driven")


def test_the_shipped_memory_measurement_is_on_the_memory_node(catalog):
    from lab import recipes

    block = recipes.measured("memory")
    blocks = shown(catalog, "memory")["measured learning"]
    (chart,) = [p.body for p in parts(blocks, "chart")]
    rl = [row for row in chart["data"]["values"] if row["arm"] == "RL (learning preset)"]
    assert len(rl) == block["steps"] and rl[0]["seeds"] == block["seeds"]
    assert [p.body for p in parts(blocks, "table")][0]["exact_match"].tolist()[0] == block["memory_r1"]["rl"]["mean"]


# -- the guided tours of the survey's prose and root nodes ----------------------------------------------------

#: the survey's prose sections, the roots of its map and two grouping nodes (task-others, env-domain-specific) (issue
#: 65): each links to a tour of its children's implementations
PROSE_AND_ROOTS = ("introduction", "preliminaries", "challenges", "conclusion", "capabilities", "tasks", "task-others",
                   "environments", "frameworks", "env-domain-specific")


def test_the_prose_and_root_nodes_and_only_they_show_a_tour(catalog, monkeypatch):
    assert set(TOURS) == set(PROSE_AND_ROOTS)
    for node in PROSE_AND_ROOTS:
        sections = shown(catalog, node)
        assert "tour" in sections and "family" not in sections, node  # a root is not a family of algorithms
        [block] = sections["tour"]
        assert block.boxed and block.parts[0].body.startswith("**A guided tour.** ")
    import dataclasses

    from app.presentation.node_sections import family_base
    from lab.catalog import for_node
    from reference_impls import registry

    # since issue 65 every node with children runs itself or has a tour; with gui's own row taken away, gui is a
    # family header again (its children run), and shows the family section, not a tour
    stripped = tuple(dataclasses.replace(i, nodes=tuple(n for n in i.nodes if n != "gui"))
                     for i in registry.implementations())
    monkeypatch.setattr(registry, "implementations", lambda: stripped)
    families = [n for n in catalog.taxonomy.nodes if n not in TOURS and not for_node(n) and family_base(catalog, n)]
    assert "gui" in families and all("tour" not in shown(catalog, n) and "family" in shown(catalog, n)
                                     for n in families[:3])


def test_a_tour_stops_at_each_child_with_what_runs_under_it(catalog):
    from lab.catalog import for_node

    tax = catalog.taxonomy
    for node in ("tasks", "frameworks", "preliminaries"):
        stops = tour_stops(catalog, node)
        assert [s.node for s in stops] == tax.children[node]
        for stop in stops:
            subtree = [stop.node, *tax.descendants(stop.node)]
            ids = {impl.id for n in subtree for impl in for_node(n)}
            assert stop.implementations == len(ids) and stop.nodes == len(subtree)
            assert stop.runnable_nodes == sum(bool(for_node(n)) for n in subtree)
            assert (stop.start is None) == (not ids) and (stop.start is None or stop.start.id in ids)
    general = {s.node: s for s in tour_stops(catalog, "frameworks")}["fw-general-rl"]
    assert general.start.id == "gymnasium-frozenlake-grpo"


def test_the_domain_specific_tour_stops_at_each_field_and_starts_with_its_environment(catalog):
    stops = {s.node: s for s in tour_stops(catalog, "env-domain-specific")}
    assert list(stops) == catalog.taxonomy.children["env-domain-specific"]
    assert stops["env-science-research"].start.id == "science-grpo"
    assert stops["env-biomedical"].start.id == "biomed-grpo"
    assert stops["env-mle"].start.id == "mle-grpo"
    assert stops["env-cybersecurity"].start.id == "ctf-grpo"
    assert all(s.start is not None for s in stops.values())


def test_the_introduction_and_the_conclusion_tour_the_roots_of_the_map(catalog):
    roots = ["preliminaries", "capabilities", "tasks", "environments", "frameworks", "challenges"]
    for node in ("introduction", "conclusion"):
        assert [s.node for s in tour_stops(catalog, node)] == roots


def test_a_stop_is_one_line_linking_the_node_and_where_to_start(catalog):
    from lab.catalog import for_node

    start = for_node("alg-grpo")[0]
    line = tour_line(2, TourStop("rl-algorithms", "RL Algorithms", 40, 42, 38, start))
    assert line == ("2. **[RL Algorithms](taxonomy?node=rl-algorithms)**: 38 implementations on 40 of its 42 nodes; "
                    r"start with [GRPO tool agent \(calculator\)](lab?impl=calculator-grpo&preset=learn).")
    assert tour_line(1, TourStop("other-social", "Social", 0, 1, 0)) == \
        "1. **[Social](taxonomy?node=other-social)**: nothing runnable yet."
    assert tour_line(5, TourStop("vision", "RL in vision agents", 0, 4, 0)).endswith("nothing runnable yet (4 nodes).")
    one = tour_line(3, TourStop("fw-general-rl", "General-purpose RL frameworks", 1, 1, 1, start))
    assert ": 1 implementation; start with" in one


def test_the_tour_is_on_the_node_page():
    from test_node_proxies import _node_page

    at = _node_page("frameworks")
    text = "\n".join(str(e.value) for e in at.markdown)
    assert "**A guided tour.**" in text
    assert "[General-purpose RL frameworks](taxonomy?node=fw-general-rl)" in text
    assert "(lab?impl=gymnasium-frozenlake-grpo&preset=" in text
    assert not any(e.proto.label == "Run the family's base" for e in at.get("page_link"))


def test_a_preliminary_node_shows_its_rows_and_where_its_concept_is_in_the_code(catalog):
    """Issue 65: each of the survey's six preliminaries nodes runs the one-step and the multi-turn row and names
    the file and function that are its concept."""
    from reference_impls.implementations import CONCEPT_CODE, PRELIMINARY_NODES

    for node in PRELIMINARY_NODES:
        sections = shown(catalog, node)
        assert list(sections)[:2] == ["implementations", "in the code"], node
        runs = [p.body for p in parts(sections["implementations"], "link")]
        assert {r.query["impl"] for r in runs} >= {"calculator-one-step-grpo", "calculator-multi-turn-grpo"}, node
        [text] = [p.body for p in parts(sections["in the code"], "markdown")]
        for path, name, _ in CONCEPT_CODE[node]:
            assert f"`{name}`" in text and path in text, (node, name)
    assert "in the code" not in shown(catalog, "alg-grpo")

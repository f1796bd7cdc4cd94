"""Every page under Streamlit's AppTest: renders, navigates, searches, exports, and survives bad links."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app import routes
from papers import parse_bibtex

APP = str(Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py")


def open_page(view: str | None = None, /, **params) -> AppTest:
    """Open page ``view`` (a name in app.routes.PAGES, None: the default page) with URL query parameters."""
    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    if view:
        at.switch_page(routes.PAGES[view].script)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest) -> str:
    parts = [e.value for kind in ("title", "header", "subheader", "markdown", "caption", "warning", "info")
             for e in getattr(at, kind)]
    return "\n".join(str(p) for p in parts)


def qp(at: AppTest, name: str) -> list[str]:
    v = at.query_params.get(name, [])
    return list(v) if isinstance(v, (list, tuple)) else [v]


def links(at: AppTest) -> list[tuple[str, str]]:
    return [(e.proto.label, e.proto.query_string) for e in at.get("page_link")]


@pytest.mark.parametrize("page,params", [
    (None, {}),
    (None, {"cap": "tool-use", "task": "search-research"}),
    ("taxonomy", {}),
    ("taxonomy", {"dim": "task", "view": "list"}),
    ("taxonomy", {"dim": "algorithm", "view": "graph"}),
    ("taxonomy", {"dim": "all"}),
    ("taxonomy", {"node": "memory"}),
    ("work", {"key": "search-r1"}),
    ("work", {}),
    ("algorithms", {}),
    ("search", {}),
    ("search", {"q": "memory agents"}),
])
def test_every_page_renders(page, params):
    at = open_page(page, **params)
    assert not at.error, [e.value for e in at.error]
    assert at.title, "every page has a title"


def test_overview_shows_counts_formulas_and_cell_works(catalog):
    from app.presentation.overview import cell_works

    at = open_page()
    assert "Agentic RL Atlas" in at.title[0].value
    assert {m.label for m in at.metric} >= {"Works", "Taxonomy nodes", "With code"}
    assert len(at.get("latex")) >= 4 and "Table 1" in texts(at)
    at = open_page(None, cap="tool-use", task="search-research")
    works = cell_works(catalog, "tool-use", "search-research")
    names = catalog.taxonomy["tool-use"].name, catalog.taxonomy["search-research"].name
    assert len(works) > 1 and [h.value for h in at.subheader if names[0] in h.value] == [
        f"{names[0]} × {names[1]}: {len(works)} works"]
    assert list(at.dataframe[0].value["name"]) == [w.display_name for w in works]


def works_frame(at):
    """The node page's works table (a node page may show other tables above it, e.g. the Memory-R1 table)."""
    (frame,) = [d.value for d in at.dataframe if "name" in d.value.columns and "title" in d.value.columns]
    return frame


def test_choosing_a_node_changes_the_works_shown():
    at = open_page("taxonomy")
    at.sidebar.selectbox(key="node_picker").set_value("code").run()
    assert at.title[0].value == "Code agent" and qp(at, "node") == ["code"]
    code_works = set(works_frame(at)["name"])
    at.sidebar.selectbox(key="node_picker").set_value("memory").run()
    assert at.title[0].value == "Memory"
    memory_works = works_frame(at)
    assert set(memory_works["name"]) != code_works and "Memory-R1" in set(memory_works["name"])
    at.toggle(key="with_descendants").set_value(False).run()  # only the works placed on Memory itself
    assert len(works_frame(at)) < len(memory_works)
    assert qp(at, "desc") == ["0"]


def test_node_page_shows_breadcrumb_children_tables_and_related(catalog):
    at = open_page("taxonomy", node="memory")
    body = texts(at)
    assert "Sub-nodes" in body and "In the survey's tables" in body
    labels = [label for label, _ in links(at)]
    assert "Taxonomy" in labels
    assert all(catalog.taxonomy[a].name in labels for a in catalog.taxonomy.ancestors("memory"))  # the breadcrumb
    assert any(label.startswith("RL for token-level memory") for label in labels)
    assert any(q == "node=memory" and "Search within" in label for label, q in links(at))
    assert any("Table 3" in e.label for e in at.expander)


def test_work_page_shows_facts_summary_keywords_and_similar():
    at = open_page("work", key="search-r1")
    body = texts(at)
    assert at.title[0].value == "Search-R1"
    assert "2503.09516" in body and "masking retrieved tokens" in body
    assert "retrieved token masking" in body  # keywords
    assert "Search from the external Internet" in [label for label, _ in links(at)]
    assert any("Table 4" in e.label for e in at.expander)
    from app import state

    # the page never waits for the search index: it asks for it, and shows similar works once it is loaded
    assert state.search_ready(wait_s=600)
    at.run()
    similar, sharing = at.dataframe[-2].value, at.dataframe[-1].value  # the two tabs of "Similar works"
    for frame in (similar, sharing):
        assert len(frame) > 0 and "work?key=search-r1" not in set(frame["open"])
    assert all(why.startswith("similarity ") for why in similar["why"])


def test_low_confidence_summary_is_marked(catalog):
    key = next(w.key for w in catalog if w.summary_confidence == "low")
    at = open_page("work", key=key)
    assert "Low-confidence summary" in texts(at)


def test_a_search_returns_results_that_say_why():
    query = "memory agents that learn what to store"
    at = open_page("search")
    at.text_input(key="s_q").input(query).run()
    body = texts(at)
    assert f"for “{query}”" in body  # the results say which query they answer
    assert ":blue-badge[:material/lightbulb: why]" in body and "terms:" in body
    assert qp(at, "q") == ["memory agents that learn what to store"]
    hits = [label for label, q in links(at) if q.startswith("key=")]
    assert len(hits) == 10 and hits[0].startswith("**1. ")


def test_search_facets_and_pages_are_links():
    at = open_page("search", q="tool calling", kind="method", page="2", **{"from": "2025"})
    assert at.multiselect(key="s_kinds").value == ["method"]
    assert at.slider(key="s_years").value[0] == 2025
    hits = [label for label, q in links(at) if q.startswith("key=")]
    assert hits[0].startswith("**11. ")
    at.multiselect(key="s_kinds").set_value(["benchmark"]).run()  # a new filter starts again at page 1
    assert [label for label, q in links(at) if q.startswith("key=")][0].startswith("**1. ")
    assert qp(at, "kind") == ["benchmark"] and "page" not in at.query_params


def test_bibtex_download_reparses(monkeypatch):
    from streamlit.runtime import memory_media_file_storage as mfs

    stored: dict[str, bytes] = {}
    original = mfs.MemoryMediaFileStorage.load_and_get_id

    def spy(self, path_or_data, mimetype, kind, filename=None):
        file_id = original(self, path_or_data, mimetype, kind, filename)
        stored[filename or file_id] = path_or_data if isinstance(path_or_data, bytes) else str(path_or_data).encode()
        return file_id

    monkeypatch.setattr(mfs.MemoryMediaFileStorage, "load_and_get_id", spy)
    at = open_page("search", q="web search agents", kind="method")
    total = int(texts(at).split("**")[1].split()[0])
    assert total > 10
    shown = [q.removeprefix("key=") for _, q in links(at) if q.startswith("key=")]
    # by default the top ten, in rank order, and the file name says so
    entries, failed = parse_bibtex(stored["atlas-search-top10.bib"].decode())
    assert not failed and [e["key"] for e in entries] == shown
    # "all matches" exports every match, named by their number
    at.segmented_control(key="s_export").set_value(1).run()
    entries, failed = parse_bibtex(stored[f"atlas-search-all{total}.bib"].decode())
    assert not failed and len(entries) == total and shown[0] in {e["key"] for e in entries}
    csv_text = stored[f"atlas-search-all{total}.csv"].decode()
    assert csv_text.startswith("key,") and len(csv_text.strip().splitlines()) == total + 1


def test_similar_works_view():
    at = open_page("search", like="search-r1")
    assert "Works similar to Search-R1" in texts(at)
    hits = [q for _, q in links(at) if q.startswith("key=")]
    assert len(hits) >= 10 and "key=search-r1" not in hits[1:]


@pytest.mark.parametrize("page,params,bad,suggestion", [
    ("taxonomy", {"node": "memroy"}, "memroy", "node=memory"),
    ("work", {"key": "serch-r1"}, "serch-r1", "key=search-r1"),
    (None, {"cap": "tool-us", "task": "code"}, "tool-us", "node=tool-use"),
    ("search", {"like": "serch-r1"}, "serch-r1", "like=search-r1"),
])
def test_unknown_keys_in_the_url_are_friendly(page, params, bad, suggestion):
    at = open_page(page, **params)
    assert not at.error
    assert any(bad in w.value and "No " in w.value for w in at.warning)
    assert suggestion in [q for _, q in links(at)]


def test_bad_search_parameters_are_reported_not_fatal():
    at = open_page("search", q="memory", node="nowhere", kind="paper")
    warnings = " ".join(w.value for w in at.warning)
    assert "unknown node 'nowhere'" in warnings and "unknown kind 'paper'" in warnings
    assert "memory" in texts(at)


def test_deep_links_reopen_the_same_view():
    at = open_page("taxonomy", dim="task", view="graph")
    assert at.get("segmented_control")[0].value == "task" and at.get("segmented_control")[1].value == "graph"
    at = open_page("algorithms", compare=["DAPO", "gspo"], family="GRPO family")
    assert at.multiselect(key="algo_compare").value == ["DAPO", "GSPO"]
    assert set(at.dataframe[0].value["family"]) == {"GRPO family"}
    at = open_page("work", key="2503.09516")  # an arXiv id resolves and the URL becomes canonical
    assert at.title[0].value == "Search-R1" and qp(at, "key") == ["search-r1"]


def test_overview_and_node_pages_switch_to_inferred_axes():
    from app.presentation.overview import cell_keys, inferred_cells
    from papers import load_catalog
    from papers.axes import by_work, load_inferred

    cat = load_catalog()
    inferred = by_work(load_inferred(cat))
    (cap, task), keys = max(inferred_cells(cat, inferred).items(), key=lambda kv: len(kv[1]))
    extra = len(keys - cell_keys(cat, cap, task))
    survey = open_page(None, cap=cap, task=task)
    assert "With an inferred axis" not in texts(survey)
    at = open_page(None, cap=cap, task=task, axes="inferred")
    assert f"With an inferred axis: {extra} method" in texts(at)
    assert len(at.dataframe) == len(survey.dataframe) + 1  # the survey's table stays, the guesses are apart
    node = open_page("taxonomy", node="tool-use")
    toggle = next(t for t in node.toggle if "placement model puts here" in t.label)
    toggle.set_value(True).run()
    assert not node.exception
    assert any("confidence" in d.value.columns for d in node.dataframe)


def test_source_page_shows_a_cited_file_and_refuses_others():
    at = open_page("source", path="reference_impls/rollout.py")
    assert at.title[0].value == "Source" and "reference\\_impls/rollout.py" in texts(at)
    [code] = at.code
    assert code.value.strip() == (Path(APP).parents[1] / "reference_impls" / "rollout.py").read_text().strip()
    at = open_page("source", path="tests/conftest.py")
    assert not at.code and "No source file 'tests/conftest.py'" in texts(at)


def test_docs_page_links_the_paths_a_document_cites():
    """docs/compare.md cites other documents as plain paths (linked) and source files in code spans (kept)."""
    from app.presentation.docs import doc_markdown

    at = open_page("docs", path="compare.md")
    body = "\n".join(m.value for m in at.markdown)
    plain = doc_markdown("compare.md")
    assert body.count("](docs?path=") > plain.count("](docs?path=")
    assert "`reference_impls/stats.py`" in plain and "`reference_impls/stats.py`" in body


def test_background_search_load_on_a_fresh_data_folder_follows_the_shipped_vectors(tmp_path, monkeypatch):
    """The warm-up loads the search model in the background when no catalog embedding is left to compute: on a fresh
    data folder the shipped vectors cover the catalog, so it does; without them (nor a data-folder cache) it would
    embed the whole catalog, and it does not."""
    from app import state
    from papers.search import index
    from papers.search.embed import MiniLMEmbedder

    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path / "fresh"))
    (tmp_path / "fresh").mkdir()
    assert index.shipped_embeddings_path(MiniLMEmbedder().model_id).exists()
    assert state._embeddings_cached()
    monkeypatch.setattr(index, "SHIPPED_EMBEDDINGS", tmp_path / "nothing-shipped" / "search")
    assert not state._embeddings_cached()

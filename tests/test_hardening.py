"""Regression tests for issue 25 (hardening): bad imported rows, hostile text, bad input files, CLI edges.

Each test reproduces a defect as a new user met it; the two-process import race and the
property-based importer tests are in test_import_fuzz.py, the browser check in test_browser.py.
"""
import csv
import io
import json
import time
from pathlib import Path

import pytest
import streamlit as st

from app.presentation.common import md_escape, safe_url, works_frame
from app.presentation.taxonomy import node_page
from app.presentation.work import facts_markdown, work_page
from papers.export import to_bibtex, to_csv, to_json
from papers.importers import normalise_arxiv_id, read_records
from papers import ingest
from papers.ingest import import_file
from papers.schema import Work
from papers.userstore import UserStore

from inprocess import papers_cli

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def store(tmp_path):
    return UserStore(tmp_path / "user.sqlite")


def cli(tmp_path, *args):
    return papers_cli(*args, data_dir=tmp_path / "data", cwd=ROOT)


def put_raw_row(store: UserStore, key: str, data: str, norm_title: str = "x") -> None:
    """A stored row as an older version (or a hand edit) may have left it: no validation."""
    with store.connect() as db:
        db.execute("INSERT INTO works (key, data, arxiv_id, norm_title, created, updated) VALUES (?,?,?,?,?,?)",
                   (key, data, None, norm_title, time.time(), time.time()))


def user_work(**fields) -> Work:
    return Work(**{"key": "mine", "title": "My work", "origin": "user", **fields})


# -- 1. an unknown node id ------------------------------------------------------------------------
def test_import_skips_a_row_placed_in_an_unknown_node(tmp_path, catalog, store):
    path = tmp_path / "b.csv"
    path.write_text("title,year,nodes\nX placed nowhere,2025,no-such-node\nY placed in memory,2025,memory; memroy\n")
    report = import_file(path, catalog, store)
    assert store.works() == []
    reasons = dict(report.skipped)
    assert reasons[2].startswith("unknown node 'no-such-node'") and reasons[2].endswith("(field 'nodes')")
    assert reasons[3].startswith("unknown node 'memroy' (did you mean: memory") and "(field 'nodes')" in reasons[3]


def test_a_bad_stored_row_is_shown_as_needing_attention_not_a_crash(catalog, store):
    w = user_work(key="bad-node", title="A work placed in a node that does not exist", nodes=("no-such-node", "memory"))
    put_raw_row(store, w.key, json.dumps(w.model_dump(mode="json")))
    put_raw_row(store, "garbled", "{not json")
    put_raw_row(store, "invalid", json.dumps({"key": "invalid", "title": "", "year": "soon"}))
    merged = catalog.with_works(store.works())
    assert merged.get("bad-node").nodes == ("memory",)  # kept, with its known node only
    assert "unknown node 'no-such-node'" in merged.attention["bad-node"]
    assert "bad-node" in {x.key for x in merged.works_in("memory")}  # the graph builds
    assert node_page(merged, "memory").all_works == node_page(catalog, "memory").all_works + 1
    assert work_page(merged, "bad-node").work.key == "bad-node"
    problems = dict(store.unreadable())
    assert set(problems) == {"garbled", "invalid"} and "not valid JSON" in problems["garbled"]


def test_cli_lists_and_shows_with_a_bad_stored_row(tmp_path):
    r = cli(tmp_path, "list")  # creates the data dir
    store = UserStore(tmp_path / "data" / "user_works.sqlite")
    w = user_work(key="bad-node", title="Zebra memory work", nodes=("no-such-node",))
    put_raw_row(store, w.key, json.dumps(w.model_dump(mode="json")))
    r = cli(tmp_path, "list", "--node", "memory")
    assert r.returncode == 0, r.stderr
    r = cli(tmp_path, "show", "bad-node")
    assert r.returncode == 0, r.stderr
    assert "needs attention: placed in unknown node 'no-such-node'" in r.stdout
    r = cli(tmp_path, "user", "list")
    assert r.returncode == 0 and "needs attention" in r.stdout


@pytest.fixture
def app_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path / "data"))
    st.cache_resource.clear()
    st.cache_data.clear()
    yield tmp_path / "data"
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.mark.parametrize("page,params", [
    (None, {}), ("taxonomy", {"node": "memory"}), ("taxonomy", {}), ("work", {"key": "bad-node"}), ("imports", {}),
])
def test_app_pages_survive_a_bad_stored_row(app_data_dir, page, params):
    from test_app_pages import open_page, texts

    store = UserStore()
    w = user_work(key="bad-node", title="A work placed in a node that does not exist", nodes=("no-such-node",))
    put_raw_row(store, w.key, json.dumps(w.model_dump(mode="json")))
    put_raw_row(store, "garbled", "{not json")
    at = open_page(page, **params)  # asserts no exception
    if page in ("work", "imports"):
        shown = texts(at) + " ".join(str(e.value) for e in at.warning)
        assert "no-such-node" in shown and "needs attention" in shown.lower()
    if page == "imports":
        assert "garbled" in " ".join(str(e.value) for e in at.warning)


# -- 3. deep JSON -----------------------------------------------------------------------------------
def test_deeply_nested_json_line_is_skipped_and_later_lines_import(tmp_path, catalog, store):
    path = tmp_path / "deep.jsonl"
    deep = '{"x": ' + "[" * 5000 + "]" * 5000 + "}"
    path.write_text("\n".join([
        json.dumps({"id": "2601.00001", "title": "Before the deep line"}), deep,
        json.dumps({"id": "2601.00002", "title": "After the deep line"}),
    ]) + "\n")
    report = import_file(path, catalog, store)
    assert {w.key for w in store.works()} == {"arxiv-2601.00001", "arxiv-2601.00002"}
    assert report.skipped == [(2, "invalid JSON (nested too deeply)")]


# -- 6. CSV formula injection -------------------------------------------------------------------------
def test_csv_export_neutralises_formulas_and_keeps_json_bibtex_exact():
    hostile = [
        user_work(key="a", title="=HYPERLINK(\"https://evil.example\",\"x\")", summary="+1+cmd|' /C calc'!A0",
                  venue="@SUM(A1)", keywords=("-2+3", "\tTAB", "\rCR", "ok")),
        user_work(key="b", title="Plain title", summary="- a list-like summary", year=2025),
    ]
    rows = list(csv.DictReader(io.StringIO(to_csv(hostile))))
    assert rows[0]["title"] == "'=HYPERLINK(\"https://evil.example\",\"x\")"
    assert rows[0]["summary"] == "'+1+cmd|' /C calc'!A0"
    assert rows[0]["venue"] == "'@SUM(A1)"
    assert rows[0]["keywords"] == "'-2+3; \tTAB; \rCR; ok"
    assert rows[1]["summary"] == "'- a list-like summary" and rows[1]["year"] == "2025" and rows[1]["title"] == "Plain title"
    for row in rows:
        assert not any(v and v[0] in "=+-@\t\r" for v in row.values())
    assert json.loads(to_json(hostile))[0]["title"] == hostile[0].title  # JSON stays exact
    assert "=HYPERLINK" in to_bibtex(hostile) and "'=HYPERLINK" not in to_bibtex(hostile)


def test_csv_cell_numbers_stay_numbers():
    from papers.export import csv_safe

    assert csv_safe("-0.25") == "-0.25" and csv_safe("-3e-4") == "-3e-4" and csv_safe("+7") == "+7"
    assert csv_safe(-1.5) == "-1.5" and csv_safe(2025) == "2025"
    assert csv_safe("-1+2") == "'-1+2" and csv_safe("=1") == "'=1" and csv_safe("@x") == "'@x"


def test_csv_export_reimports_to_the_same_text(tmp_path, catalog, store):
    hostile = [user_work(key="f1", title="=cmd title", summary="+ summary of the =cmd work", year=2025)]
    path = tmp_path / "roundtrip.csv"
    rows = list(csv.DictReader(io.StringIO(to_csv(hostile))))
    with open(path, "w", newline="") as f:  # the importable columns of our own export
        writer = csv.DictWriter(f, fieldnames=["key", "title", "year", "summary"], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    assert "'=cmd title" in path.read_text()
    report = import_file(path, catalog, store)
    assert report.skipped == [] and store.get("f1").title == "=cmd title"
    assert store.get("f1").summary == "+ summary of the =cmd work"


def test_cli_csv_export_is_neutralised(tmp_path):
    src = tmp_path / "f.csv"
    src.write_text('key,title,year\nformula-work,"=HYPERLINK(""https://evil.example"")",2025\n')
    assert cli(tmp_path, "import", str(src), "--no-place").returncode == 0
    r = cli(tmp_path, "list", "--format", "csv")
    row = next(r for r in csv.DictReader(io.StringIO(r.stdout)) if r["key"] == "formula-work")
    assert row["title"] == "'=HYPERLINK(\"https://evil.example\")"
    assert "formula" in cli(tmp_path, "list", "--help").stdout.lower()


# -- 7. markdown injection ------------------------------------------------------------------------------
HOSTILE_TEXT = "[phish](https://evil.example) ![img](https://evil.example/p.png) <b>x</b> :red[boom] **bold** $x$ www.evil.example"


def test_md_escape_leaves_no_markdown():
    out = md_escape(HOSTILE_TEXT)
    for raw in ("[phish](", "![img](", "<b>", ":red[", "**", "$x$", "www.evil"):
        assert raw not in out
    assert md_escape("Search-R1: a 2025 method (v2.1)") == r"Search-R1: a 2025 method \(v2.1\)"
    assert md_escape("- item") == r"\- item" and md_escape("12. item") == r"12\. item"
    assert md_escape("a\nb\n# c") == "a b \\# c"  # one line: no headings, no lists


def test_safe_url_allows_only_web_links():
    assert safe_url("https://github.com/x/y") == "https://github.com/x/y"
    for bad in ("javascript:alert(1)", "data:text/html,<b>x</b>", "JaVaScRiPt:alert(1)", "//evil.example", "ftp://x", ""):
        assert safe_url(bad) == ""


def test_facts_and_work_frame_escape_user_text(catalog):
    w = user_work(key="hostile", title=HOSTILE_TEXT, venue="[v](https://evil.example)", authors="![a](https://evil.example/a.png)",
                  url="data:text/html,hi", code_url="javascript:alert(1)")
    merged = catalog.with_works([w])
    page = work_page(merged, "hostile")
    md = facts_markdown(page.facts)
    assert "](https://evil" not in md and "![" not in md
    assert page.links == []  # neither a data: nor a javascript: link becomes a button
    frame = works_frame([w], merged)
    assert frame.loc[0, "code"] == "" and frame.loc[0, "arxiv"] == ""


def _all_markdown(at) -> list[str]:
    out = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "warning", "info", "error", "success"):
        out += [str(e.value) for e in getattr(at, kind)]
    out += [e.proto.label for e in at.get("page_link")]
    out += [e.proto.label for e in at.get("link_button")]
    return out


@pytest.mark.parametrize("page,params", [
    ("work", {"key": "[phish](https://evil.example)"}),
    ("search", {"q": "[phish](https://evil.example) ![i](https://evil.example/q.png)"}),
    ("search", {"q": "memory", "node": "![i](https://evil.example/n.png)", "kind": "[k](https://evil.example)"}),
    ("taxonomy", {"node": "[phish](https://evil.example)"}),
    (None, {"cap": "[phish](https://evil.example)", "task": "x"}),
    ("algorithms", {"compare": "[phish](https://evil.example)"}),
    ("lab", {"impl": "[phish](https://evil.example)", "run": "![i](https://evil.example/r.png)"}),
])
def test_url_parameters_never_render_as_markdown(app_data_dir, page, params):
    from test_app_pages import open_page

    at = open_page(page, **params)
    shown = _all_markdown(at)
    assert any("evil" in s for s in shown), "the value is echoed (escaped), so the user sees what was asked"
    for s in shown:
        assert "](https://evil" not in s and "![" not in s, s


def test_hostile_imported_work_never_renders_as_markdown(app_data_dir):
    from test_app_pages import open_page

    store = UserStore()
    w = user_work(key="hostile", title=HOSTILE_TEXT, name="![n](https://evil.example/n.png)",
                  summary="![s](https://evil.example/s.png) [data](data:text/html,hi)", venue="[v](https://evil.example)",
                  keywords=("x] :red[boom", "[k](https://evil.example)"), code_url="javascript:alert(1)",
                  url="data:text/html,hi", nodes=("memory",))
    store_put(store, w)
    for page, params in (("work", {"key": "hostile"}), ("search", {"q": "phish evil"}), ("imports", {})):
        at = open_page(page, **params)
        shown = _all_markdown(at)
        for s in shown:
            assert "](https://evil" not in s and "![" not in s and "](data:" not in s and ":red[" not in s, (page, s)
        assert not any("javascript:" in e.proto.url or "data:" in e.proto.url for e in at.get("link_button"))


def store_put(store: UserStore, work: Work) -> None:
    from papers.importers import normalise_title

    with store.connect() as db:
        store.insert(db, work, normalise_title(work.title))


def test_page_icon_is_shipped_locally():
    from app import ui

    config = (ROOT / "app" / "streamlit_app.py").read_text().split("set_page_config(", 1)[1].split(")", 1)[0]
    assert "page_icon=ui.PAGE_ICON" in config  # not ":material/...": the browser would fetch that from a font CDN
    assert ui.PAGE_ICON.is_file() and ui.PAGE_ICON.read_text().lstrip().startswith("<svg")
    assert "http" not in ui.PAGE_ICON.read_text().replace("http://www.w3.org/2000/svg", "")


# -- 9. a directory or an unreadable file -------------------------------------------------------------
def test_import_of_a_directory_is_one_clear_line(tmp_path):
    folder = tmp_path / "folder.bib"
    folder.mkdir()
    r = cli(tmp_path, "import", str(folder), "--no-place")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"error: {folder}: is a directory")
    assert "Traceback" not in r.stderr


def test_import_of_an_unreadable_file_is_one_clear_line(tmp_path, monkeypatch, capsys, catalog):
    from papers import cli as papers_cli
    from papers import ingest

    path = tmp_path / "locked.jsonl"
    path.write_text(json.dumps({"id": "2601.00001", "title": "x"}) + "\n")
    real_open = open

    def guarded_open(file, *a, **k):
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *a, **k)

    monkeypatch.setattr("builtins.open", guarded_open)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path / "data"))
    with pytest.raises(ingest.ImportInputError, match=f"{path}: permission denied"):
        ingest.import_file(path, catalog, UserStore(tmp_path / "u.sqlite"))
    assert papers_cli.main(["import", str(path), "--no-place"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {path}: permission denied (cannot read the file)\n"


# -- 10. encodings and types -------------------------------------------------------------------------
def test_latin1_bibtex_is_refused_with_the_line(tmp_path, catalog, store):
    path = tmp_path / "latin1.bib"
    path.write_bytes("@misc{a, title = {Plain}, year = {2025}}\n@misc{b, title = {Caf\u00e9 agents}, year = {2025}}\n".encode("latin-1"))
    with pytest.raises(ingest.ImportInputError, match=r"latin1.bib: not UTF-8 text \(byte 0xe9 at line 2, column 22\)"):
        import_file(path, catalog, store)
    assert store.works() == []
    report = import_file(path, catalog, store, encoding="latin-1")
    assert report.skipped == [] and store.get("b").title == "Caf\u00e9 agents"


def test_cli_encoding_option_and_refusal(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("title,year\nCaf\u00e9 agents,2025\n".encode("latin-1"))
    r = cli(tmp_path, "import", str(path), "--no-place")
    assert r.returncode == 2 and "not UTF-8 text" in r.stderr and "--encoding" in r.stderr and r.stderr.count("\n") == 1
    r = cli(tmp_path, "import", str(path), "--no-place", "--encoding", "latin-1")
    assert r.returncode == 0 and "1 works added" in r.stdout
    r = cli(tmp_path, "import", str(path), "--no-place", "--encoding", "klingon")
    assert r.returncode == 2 and "unknown encoding 'klingon'" in r.stderr


@pytest.mark.parametrize("name,content", [
    ("bom.csv", "\ufefftitle,year\nA work behind a BOM,2025\n"),
    ("bom.jsonl", "\ufeff" + json.dumps({"id": "2601.00009", "title": "A work behind a BOM"}) + "\n"),
    ("bom.bib", "\ufeff@misc{bom2025, title = {A work behind a BOM}, year = {2025}}\n"),
])
def test_utf8_bom_is_accepted(tmp_path, catalog, store, name, content):
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8"))
    report = import_file(path, catalog, store)
    assert report.skipped == [] and [w.title for w in store.works()] == ["A work behind a BOM"]


@pytest.mark.parametrize("title,reason", [
    (None, "missing title"),
    (["list", "title"], "field 'title' must be text, not a list"),
    ({"a": 1}, "field 'title' must be text, not an object"),
    (42, "field 'title' must be text, not a number"),
])
def test_json_titles_must_be_text(tmp_path, catalog, store, title, reason):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"id": "2601.00042", "title": title}) + "\n")
    report = import_file(path, catalog, store)
    assert report.skipped == [(1, reason)] and store.works() == []


def test_json_other_text_fields_must_be_text(tmp_path, catalog, store):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"id": "2601.00043", "title": "Fine", "abstract": ["x"]}) + "\n"
                    + json.dumps({"id": 2601.00044, "title": "Numeric id"}) + "\n")
    report = import_file(path, catalog, store)
    assert report.skipped == [(1, "field 'abstract' must be text, not a list"), (2, "field 'id' must be text, not a number")]


@pytest.mark.parametrize("raw,expected", [
    ("9901.12345", ""), ("0612.1234", ""), ("2613.00001", ""), ("1501.1234", ""), ("1412.12345", ""),
    ("0704.0001", "0704.0001"), ("2503.09516", "2503.09516"), ("math.GT/0309136", "math.GT/0309136"),
    ("hep-th/9901001v2", "hep-th/9901001"),
])
def test_arxiv_ids_are_checked(raw, expected):
    assert normalise_arxiv_id(raw) == expected


def test_impossible_arxiv_id_is_skipped_not_dated_2099(tmp_path, catalog, store):
    path = tmp_path / "ids.jsonl"
    path.write_text(json.dumps({"id": "9901.12345", "title": "From the future"}) + "\n"
                    + json.dumps({"id": "math.GT/0309136", "title": "An old-style id", "update_date": "2008-01-01"}) + "\n")
    report = import_file(path, catalog, store)
    assert report.skipped[0][0] == 1 and "malformed arXiv id" in report.skipped[0][1]
    w = store.get("arxiv-math.GT-0309136")
    assert w is not None and w.arxiv_id == "math.GT/0309136" and w.year == 2003


def test_control_characters_are_removed_from_imported_text(tmp_path, catalog, store):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "2601.00077", "title": "Red \x1b[31mtitle\x1b[0m\x07", "authors": "A\x00B"}) + "\n")
    import_file(path, catalog, store)
    w = store.get("arxiv-2601.00077")
    assert w.title == "Red [31mtitle[0m" and w.authors == "AB"


# -- 12. smaller CLI defects -----------------------------------------------------------------------------
def test_cli_error_keeps_its_quotes(tmp_path):
    r = cli(tmp_path, "user", "delete", "nope")
    assert r.returncode == 2 and r.stderr == "error: no user work 'nope'\n"


def test_cli_list_refuses_a_backwards_year_range(tmp_path):
    r = cli(tmp_path, "list", "--year-from", "2026", "--year-to", "2020")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "2026" in r.stderr and "2020" in r.stderr


def test_cli_search_refuses_query_with_similar(tmp_path):
    r = cli(tmp_path, "search", "memory", "--similar", "search-r1")
    assert r.returncode == 2 and r.stderr == "error: give either QUERY or --similar, not both\n"


def test_cli_show_does_not_echo_huge_or_control_text(tmp_path):
    r = cli(tmp_path, "show", "x\x1b[31mred" + "a" * 100_000)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "\x1b" not in r.stderr and len(r.stderr) < 300 and "\\x1b" in r.stderr

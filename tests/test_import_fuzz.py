"""Importers under arbitrary input (hypothesis) and two imports running at once (issue 25, items 2 and 3).

Whatever the bytes, an import either refuses the whole file with one ``ImportInputError`` (not
text in the expected encoding) and stores nothing, or returns a report in which every skipped
entry has a line and a reason, and the store is consistent: one row per added work, unique keys,
titles and arXiv ids, every node a taxonomy node, the import's counters equal to what is stored.
"""
import json
import multiprocessing
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from papers.importers import normalise_title
from papers.ingest import ImportInputError, import_file
from papers.userstore import UserStore

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_consistent(store: UserStore, catalog, report) -> None:
    works = store.works()
    assert store.unreadable() == []
    assert len(works) == store.count() == report.added
    assert len({w.key for w in works}) == len(works)
    assert not any(w.key in catalog for w in works)
    titles = [normalise_title(w.title) for w in works]
    assert len(set(titles)) == len(titles), "a duplicate title was stored"
    ids = [w.arxiv_id for w in works if w.arxiv_id]
    assert len(set(ids)) == len(ids), "a duplicate arXiv id was stored"
    assert all(n in catalog.taxonomy for w in works for n in w.nodes)
    for line, reason in report.skipped:
        assert isinstance(line, int) and line >= 1
        assert isinstance(reason, str) and reason.strip()
    with sqlite3.connect(store.path) as db:
        status, added, skipped = db.execute("SELECT status, added, skipped FROM imports WHERE id=?", (report.import_id,)).fetchone()
    assert (status, added, skipped) == ("done", report.added, len(report.skipped))


def import_bytes(catalog, suffix: str, data: bytes):
    """Import ``data`` as a file with ``suffix`` into a fresh store: (store, report or None if refused)."""
    folder = Path(tempfile.mkdtemp(prefix="atlas-fuzz-"))
    path = folder / f"input{suffix}"
    path.write_bytes(data)
    store = UserStore(folder / "user.sqlite")
    try:
        return store, import_file(path, catalog, store, batch_size=7)
    except ImportInputError as e:
        assert str(path) in str(e) and "line" in str(e)
        assert store.count() == 0
        return store, None


# -- arbitrary bytes and arbitrary text -------------------------------------------------------------------
@FUZZ
@given(data=st.binary(max_size=3000), suffix=st.sampled_from([".bib", ".jsonl", ".csv"]))
def test_every_importer_survives_arbitrary_bytes(catalog, data, suffix):
    store, report = import_bytes(catalog, suffix, data)
    if report is None:  # refused as a whole: only for bytes that are not UTF-8
        with pytest.raises(UnicodeDecodeError):
            data.decode("utf-8")
    else:
        check_consistent(store, catalog, report)


# text built from the characters that matter to each format, so the parsers see near-valid input
_SYNTAX = st.sampled_from(['@misc{', '@article{', '}', '{', ',', ' = ', 'title', 'year', '2025', '"', '\n', '\r\n',
                           'nodes', 'memory', 'no-such-node', 'key', 'id', ':', '[', ']', '2601.00001', 'math.GT/0309136',
                           'null', 'true', '\\', '%', '#', '\ufeff', '\x00', '\x1b[31m', 'é', ';'])
_TEXTISH = st.lists(st.one_of(_SYNTAX, st.text(max_size=8)), max_size=120).map("".join)


@FUZZ
@given(text=_TEXTISH, suffix=st.sampled_from([".bib", ".jsonl", ".csv"]))
def test_every_importer_survives_arbitrary_text(catalog, text, suffix):
    store, report = import_bytes(catalog, suffix, text.encode("utf-8"))
    assert report is not None, "UTF-8 text is never refused as a whole"
    check_consistent(store, catalog, report)


@FUZZ
@given(header=st.lists(st.sampled_from(["key", "title", "year", "nodes", "kind", "arxiv_id", "tags", "summary"]),
                       min_size=1, max_size=5, unique=True),
       rows=st.lists(st.lists(st.one_of(_SYNTAX, st.text(max_size=12)), min_size=0, max_size=6), max_size=25))
def test_csv_importer_survives_arbitrary_rows(catalog, header, rows):
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(header)
    writer.writerows(rows)
    store, report = import_bytes(catalog, ".csv", buf.getvalue().encode("utf-8"))
    assert report is not None
    check_consistent(store, catalog, report)


# -- arbitrary JSON, arbitrarily nested ----------------------------------------------------------------------
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
    | st.sampled_from(["2601.00001", "2503.09516", "hep-th/9901001", "9901.12345", "memory"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=30,
)
_FIELDS = st.sampled_from(["id", "title", "abstract", "authors", "categories", "update_date", "x"])


def _nest(value, depth: int, kind: str):
    """``value`` wrapped ``depth`` times in lists or objects (built as text: no recursion here)."""
    text = json.dumps(value)
    opener, closer = ("[", "]") if kind == "list" else ('{"a": ', "}")
    return opener * depth + text + closer * depth


@FUZZ
@given(lines=st.lists(st.one_of(
    st.dictionaries(_FIELDS, _JSON, max_size=7).map(json.dumps),
    _JSON.map(json.dumps),
    st.tuples(_JSON, st.integers(0, 6000), st.sampled_from(["list", "object"])).map(lambda t: _nest(*t)),
    st.tuples(_FIELDS, _JSON, st.integers(0, 6000), st.sampled_from(["list", "object"]))
      .map(lambda t: '{"%s": %s}' % (t[0], _nest(t[1], t[2], t[3]))),
), max_size=20))
def test_jsonl_importer_survives_arbitrary_json_nesting(catalog, lines):
    store, report = import_bytes(catalog, ".jsonl", "\n".join(lines).encode("utf-8"))
    assert report is not None
    check_consistent(store, catalog, report)
    nonblank = sum(1 for ln in "\n".join(lines).split("\n") if ln.strip())
    assert report.added + len(report.skipped) == nonblank, "every line is either added or skipped with a reason"


# -- two imports at once -------------------------------------------------------------------------------------
N = 900  # entries per file


def _entries(which: str, clash_keys: bool) -> list[tuple[str, str]]:
    """(key, title) rows of file a or b. At the same positions, so the two imports reach them together:
    rows i % 3 == 0 share a title under different keys (duplicates: one is kept); with ``clash_keys``,
    rows i % 3 == 1 share a key with different titles (a clash, not a duplicate: both are kept, one renamed)."""
    rows = []
    for i in range(N):
        if i % 3 == 0:
            rows.append((f"{which}{i}", f"Shared agent title number {i}"))
        elif i % 3 == 1 and clash_keys:
            rows.append((f"k{i}", f"{'Alpha' if which == 'a' else 'Beta'} agent study number {i}"))
        else:
            rows.append((f"{which}{i}", f"{'Alpha' if which == 'a' else 'Beta'} agent study number {i}"))
    return rows


def _import_worker(path: str, store_path: str, barrier, results) -> None:
    from papers import Catalog

    catalog = Catalog.load()
    barrier.wait()  # both start their first batch together
    try:
        report = import_file(path, catalog, UserStore(Path(store_path)), batch_size=10)
        results.put((path, "ok", report.added, len(report.skipped)))
    except Exception as e:  # noqa: BLE001  reported to the test, which fails on it
        results.put((path, "error", f"{type(e).__name__}: {e}", 0))


@pytest.mark.parametrize("clash_keys", [True, False], ids=["overlapping-keys-and-titles", "overlapping-titles"])
def test_two_concurrent_imports_store_no_duplicates_and_lose_no_rows(tmp_path, clash_keys):
    paths = {}
    for which in ("a", "b"):
        rows = _entries(which, clash_keys)
        path = tmp_path / f"{which}.csv"
        path.write_text("key,title,year\n" + "".join(f"{k},{t},2026\n" for k, t in rows))
        paths[which] = (path, rows)
    store_path = tmp_path / "data" / "user_works.sqlite"
    UserStore(store_path)  # created once, as the first import would
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_import_worker, args=(str(p), str(store_path), barrier, results)) for p, _ in paths.values()]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert all(status == "ok" for _, status, _, _ in outcomes), outcomes

    works = UserStore(store_path).works()
    titles = [w.title for w in works]
    assert len(set(titles)) == len(titles), f"{len(titles) - len(set(titles))} duplicate titles stored"
    expected_titles = {t for _, rows in paths.values() for _, t in rows}
    assert set(titles) == expected_titles, "every distinct title is stored once: nothing lost"
    assert len({w.key for w in works}) == len(works)
    added = sum(a for _, _, a, _ in outcomes)
    skipped = sum(s for _, _, _, s in outcomes)
    assert added == len(works) == len(expected_titles) == 2 * N - N // 3
    assert skipped == N // 3  # the shared titles: each stored by whichever import got there first
    if clash_keys:  # a clashing key is renamed, not dropped: both k1's are there
        assert {w.title for w in works if w.key in ("k1", "k1-2")} == {"Alpha agent study number 1", "Beta agent study number 1"}

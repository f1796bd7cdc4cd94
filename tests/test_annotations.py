"""Tags and notes: the store, the CLI (tag/untag/tags/note, --tag reading lists), the work and search pages."""
import json
from pathlib import Path

import pytest

from papers import annotations
from papers.annotations import NOTE_MAX_CHARS, AnnotationError, AnnotationStore
from papers.catalog import UnknownKeyError
from papers.schema import Work

from inprocess import papers_cli

ROOT = Path(__file__).resolve().parents[1]
ONE_MB = "x" * (1 << 20)


@pytest.fixture
def store(tmp_path):
    return AnnotationStore(tmp_path / "annotations.sqlite")


@pytest.fixture
def with_user_work(catalog):
    mine = Work(key="my-own-2025", title="My own agent paper", year=2025, origin="user", authors="Ada Lovelace")
    return catalog.with_works([mine])


def test_tags_on_shipped_and_imported_works(store, with_user_work):
    cat = with_user_work
    assert store.add_tags(cat, "search-r1", ["Reading-List", "rl"]) == ["reading-list", "rl"]
    assert store.add_tags(cat, "my-own-2025", ["reading-list"]) == ["reading-list"]
    assert store.add_tags(cat, "search-r1", ["reading-list"]) == ["reading-list", "rl"]  # no duplicates
    assert store.all_tags() == {"reading-list": 2, "rl": 1}
    assert store.keys_with_tags(["reading-list"]) == ["search-r1", "my-own-2025"]  # in tagging order
    assert store.remove_tags(cat, "search-r1", ["rl"]) == ["reading-list"]
    assert store.all_tags() == {"reading-list": 2}


@pytest.mark.parametrize("bad,why", [("", "tag is empty"), ("   ", "tag is empty"), ("two words", "no spaces"),
                                     ("x" * 65, "at most 64"), ("-dash", "start with a letter")])
def test_bad_tags_are_refused_and_nothing_is_saved(store, catalog, bad, why):
    store.add_tags(catalog, "search-r1", ["keep"])
    with pytest.raises(AnnotationError, match=why):
        store.add_tags(catalog, "search-r1", ["fine", bad])
    assert store.tags_of("search-r1") == ["keep"]  # "fine" was not saved either


def test_unknown_key_is_refused_with_suggestions(store, catalog):
    with pytest.raises(UnknownKeyError, match="did you mean: search-r1"):
        store.add_tags(catalog, "serch-r1", ["x"])
    with pytest.raises(UnknownKeyError):
        store.set_note(catalog, "serch-r1", "text")
    assert store.all_tags() == {}


def test_unknown_tag_filter_names_close_matches(store, catalog):
    store.add_tags(catalog, "search-r1", ["reading-list"])
    with pytest.raises(AnnotationError, match="did you mean: reading-list"):
        store.keys_with_tags(["readinglist"])
    with pytest.raises(AnnotationError, match="has no tag .nope."):
        store.remove_tags(catalog, "search-r1", ["nope"])


def test_notes_limit_and_nothing_lost(store, catalog):
    store.set_note(catalog, "search-r1", "compare with ZeroSearch")
    with pytest.raises(AnnotationError, match=r"1,048,576 characters; the limit is 20,000"):
        store.set_note(catalog, "search-r1", ONE_MB)
    with pytest.raises(AnnotationError, match="empty"):
        store.set_note(catalog, "search-r1", "  ")
    assert store.note_of("search-r1") == "compare with ZeroSearch"
    store.set_note(catalog, "search-r1", "y" * NOTE_MAX_CHARS)  # exactly the limit is fine
    assert len(store.note_of("search-r1")) == NOTE_MAX_CHARS
    assert store.clear_note(catalog, "search-r1") and store.note_of("search-r1") == ""


def test_notes_never_leave_the_machine(store, catalog):
    from papers import FORMATS, to_format

    store.set_note(catalog, "search-r1", "secret-marker-3141")
    for fmt in FORMATS:
        assert "secret-marker-3141" not in to_format([catalog.get("search-r1")], fmt)


# -- CLI ------------------------------------------------------------------------------------------
def cli(tmp_path, *args, stdin=None):
    return papers_cli(*args, data_dir=tmp_path, stdin=stdin, cwd=ROOT)


def test_cli_tag_note_and_reading_list_in_every_format(tmp_path):
    assert cli(tmp_path, "tag", "search-r1", "reading-list").returncode == 0
    assert cli(tmp_path, "tag", "2505.03335", "reading-list").returncode == 0  # by arXiv id: Absolute Zero
    r = cli(tmp_path, "tags")
    assert "reading-list" in r.stdout and "2 works" in r.stdout
    r = cli(tmp_path, "list", "--tag", "reading-list", "--format", "json")
    keys = {d["key"] for d in json.loads(r.stdout)}
    assert "search-r1" in keys and len(keys) == 2
    for fmt in ("bibtex", "cslj", "ris", "arxiv-ids", "csv"):
        r = cli(tmp_path, "list", "--tag", "reading-list", "--format", fmt)
        assert r.returncode == 0 and ("search-r1" in r.stdout or "2503.09516" in r.stdout), fmt
    assert cli(tmp_path, "note", "search-r1", "read section 3").returncode == 0
    assert cli(tmp_path, "note", "search-r1").stdout.strip() == "read section 3"
    assert cli(tmp_path, "untag", "search-r1", "reading-list").returncode == 0
    assert len(json.loads(cli(tmp_path, "list", "--tag", "reading-list", "--format", "json").stdout)) == 1


@pytest.mark.parametrize("args,message", [
    (("tag", "serch-r1", "x"), "unknown work key 'serch-r1' (did you mean: search-r1"),
    (("tag", "search-r1", ""), "tag is empty"),
    (("untag", "search-r1", "never-added"), "has no tag 'never-added'"),
    (("list", "--tag", "nothing-tagged"), "no work is tagged 'nothing-tagged'"),
    (("note", "search-r1", ""), "note is empty"),
])
def test_cli_bad_input_exits_2_with_one_clear_line(tmp_path, args, message):
    r = cli(tmp_path, *args)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and message in r.stderr and r.stderr.count("\n") == 1


def test_cli_one_megabyte_note_is_refused_and_the_old_note_kept(tmp_path):
    assert cli(tmp_path, "note", "search-r1", "keep me").returncode == 0
    r = cli(tmp_path, "note", "search-r1", "-", stdin=ONE_MB)
    assert r.returncode == 2 and "the limit is 20,000" in r.stderr
    assert cli(tmp_path, "note", "search-r1").stdout.strip() == "keep me"


# -- pages (AppTest) ------------------------------------------------------------------------------
@pytest.fixture
def app_store(tmp_path, monkeypatch):
    path = tmp_path / "annotations.sqlite"
    monkeypatch.setattr(annotations, "default_annotations_path", lambda: path)
    return AnnotationStore(path)


def open_work(key="search-r1"):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app" / "streamlit_app.py"), default_timeout=180)
    at.query_params["key"] = key
    at.switch_page("views/work.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_work_page_tags_and_note(app_store, catalog):
    at = open_work()
    at.text_input(key="ann_tag-search-r1").input("reading-list, To-Replicate").run()
    at.button(key="ann_add-search-r1").click().run()
    assert not at.exception
    assert app_store.tags_of("search-r1") == ["reading-list", "to-replicate"]
    assert {b.label for b in at.button if b.key and b.key.startswith("ann_untag-")} == {"reading-list", "to-replicate"}
    at.button(key="ann_untag-search-r1-to-replicate").click().run()
    assert app_store.tags_of("search-r1") == ["reading-list"]
    at.text_area(key="ann_note-search-r1").input("check the masking ablation").run()
    at.button(key="ann_save-search-r1").click().run()
    assert app_store.note_of("search-r1") == "check the masking ablation"
    # the authors are on the page, each a link to their works (built by app.routes)
    from app import routes

    assert any(f"({routes.search(author='Jiawei Han').url})" in m.value for m in at.markdown)
    # and the companion-list row, ready to copy
    assert any("| Search-R1 | External | Qwen2.5-3B/7B-Base/Instruct |" in c.value for c in at.code)


def test_work_page_bad_input_is_an_error_and_nothing_is_lost(app_store, catalog):
    app_store.add_tags(catalog, "search-r1", ["keep"])
    app_store.set_note(catalog, "search-r1", "old note")
    at = open_work()
    at.text_input(key="ann_tag-search-r1").input("bad tag!").run()
    at.button(key="ann_add-search-r1").click().run()
    assert any("Tag not added" in e.value for e in at.error)
    at.text_area(key="ann_note-search-r1").input(ONE_MB).run()
    at.button(key="ann_save-search-r1").click().run()
    assert not at.exception
    assert any("Note not saved" in e.value and "20,000" in e.value for e in at.error)
    assert app_store.tags_of("search-r1") == ["keep"] and app_store.note_of("search-r1") == "old note"


def test_search_page_filters_by_tag_and_author(app_store, catalog):
    from streamlit.testing.v1 import AppTest

    app_store.add_tags(catalog, "search-r1", ["reading-list"])
    app_store.add_tags(catalog, "ppo", ["reading-list"])
    at = AppTest.from_file(str(ROOT / "app" / "streamlit_app.py"), default_timeout=180)
    at.query_params["tag"] = "reading-list"
    at.switch_page("views/search.py")
    at.run()
    assert not at.exception
    hits = {e.proto.query_string for e in at.get("page_link") if e.proto.query_string.startswith("key=")}
    assert hits == {"key=search-r1", "key=ppo"}
    at.text_input(key="s_author").input("Jiawei Han").run()
    hits = {e.proto.query_string for e in at.get("page_link") if e.proto.query_string.startswith("key=")}
    assert hits == {"key=search-r1"}
    at.text_input(key="s_author").input("Jiawei Hann").run()
    assert not at.exception and any("did you mean: Jiawei Han" in w.value for w in at.warning)


def test_deleting_an_imported_work_deletes_its_tags_and_note(tmp_path, catalog):
    """Issue 47: a deleted work's tags and note stayed (``tags`` still counted them), and a different work
    imported later under the same key inherited both. A shipped work's annotations are never touched."""
    from papers.ingest import import_file
    from papers.userstore import UserStore

    users = UserStore(tmp_path / "user_works.sqlite")
    notes = AnnotationStore(tmp_path / "annotations.sqlite")  # beside the user works, as in the data folder
    path = tmp_path / "mine.csv"
    path.write_text("key,title,year\nmine-1,My private reading,2026\n")
    import_file(path, catalog, users)
    merged = catalog.with_works(users.works())
    notes.add_tags(merged, "mine-1", ["secret-project"])
    notes.set_note(merged, "mine-1", "reviewer 2 is my advisor")
    notes.add_tags(merged, "search-r1", ["reading-list"])
    users.delete("mine-1")
    assert notes.tags_of("mine-1") == [] and notes.note_of("mine-1") == ""
    assert notes.all_tags() == {"reading-list": 1}
    with pytest.raises(KeyError):
        users.delete("search-r1")  # a shipped work is not the user's to delete ...
    assert notes.tags_of("search-r1") == ["reading-list"]  # ... and its tags stay
    path.write_text("key,title,year\nmine-1,Somebody else's paper,2026\n")
    import_file(path, catalog, users)
    assert notes.tags_of("mine-1") == [] and notes.note_of("mine-1") == ""

"""Importing user works: BibTeX, arXiv JSON lines, CSV; duplicates; bad input; resume."""
import json

import pytest

from papers.importers import normalise_arxiv_id, read_records
from papers.ingest import AUTO_TAG, accept_placement, import_file
from papers.userstore import UserStore


@pytest.fixture
def store(tmp_path):
    return UserStore(tmp_path / "user.sqlite")


BIB = r"""
@article{newagent2026,
  title = {{NewAgent}: Teaching web agents to browse with \& without tools},
  author = {Doe, Jane and Roe, Rich},
  year = {2026},
  journal = {TMLR},
  abstract = {We train a browsing agent with GRPO.},
}
@misc{dup-of-ppo,
  title = {Proximal Policy Optimization Algorithms},
  year = {2017},
  eprint = {1707.06347},
}
@misc{broken title = {x}}
@misc{noyear, title = {An agent without a year}}
@misc{badyear, title = {An agent with a bad year}, year = {20x6}}
"""


def test_bibtex_import_with_report(tmp_path, catalog, store):
    path = tmp_path / "mine.bib"
    path.write_text(BIB)
    report = import_file(path, catalog, store)
    keys = {w.key for w in store.works()}
    assert keys == {"newagent2026", "noyear"}
    w = store.get("newagent2026")
    assert w.title == "NewAgent: Teaching web agents to browse with & without tools"
    assert (w.year, w.venue, w.origin, w.authors) == (2026, "TMLR", "user", "Doe, Jane and Roe, Rich")
    reasons = dict(report.skipped)
    assert reasons[9] == "duplicate of 'ppo'"
    assert "Expected comma after entry key" in reasons[14]
    assert "'20x6' is not a year" in reasons[16]
    assert report.added == 2


def test_arxiv_jsonl_import_and_bad_lines(tmp_path, catalog, store):
    lines = [
        json.dumps({"id": "2601.00001", "title": "Memory agents that forget on purpose", "abstract": "A   study.", "authors": "A. B.", "categories": "cs.LG cs.AI", "update_date": "2026-01-05"}),
        "{not json",
        json.dumps({"id": "2503.09516", "title": "Search-R1 again", "abstract": ""}),  # arXiv id of a survey work
        json.dumps({"id": "2601.00002", "title": "", "abstract": "no title"}),
        json.dumps({"id": "garbage", "title": "x"}),
        json.dumps({"id": "2601.00003", "title": "Memory agents that forget on purpose"}),  # same title, new id
        json.dumps(["a", "list"]),
    ]
    path = tmp_path / "arxiv.jsonl"
    path.write_text("\n".join(lines) + "\n")
    report = import_file(path, catalog, store)
    assert [w.key for w in store.works()] == ["arxiv-2601.00001"]
    w = store.get("arxiv-2601.00001")
    assert (w.year, w.abstract, w.tags) == (2026, "A study.", ("arxiv:cs.LG", "arxiv:cs.AI"))
    reasons = dict(report.skipped)
    assert reasons[2].startswith("invalid JSON")
    assert reasons[3] == "duplicate of 'search-r1'"
    assert reasons[4] == "missing title"
    assert "field 'id'" in reasons[5]
    assert reasons[6] == "duplicate of 'arxiv-2601.00001'"
    assert reasons[7] == "expected a JSON object"


def test_csv_import(tmp_path, catalog, store):
    path = tmp_path / "works.csv"
    path.write_text('key,title,year,kind,nodes\nmy-work,A planner for GUI agents,2026,method,gui\nbad,Another,2026,paper,\n,"broken,2026\n')
    report = import_file(path, catalog, store)
    assert store.get("my-work").nodes == ("gui",)
    reasons = dict(report.skipped)
    assert reasons[3] == "unknown kind 'paper' (field 'kind')"
    assert "broken CSV quoting" in reasons[4]


def test_interrupted_import_resumes_without_loss(tmp_path, catalog, store):
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps({"id": f"2601.{i:05d}", "title": f"Synthetic agent paper number {i}"}) + "\n" for i in range(1, 101)))
    first = import_file(path, catalog, store, batch_size=30, max_batches=2)  # interrupted after 2 batches
    assert first.added == 60 and store.count() == 60
    second = import_file(path, catalog, store, batch_size=30)
    assert second.resumed_after_line == 60
    assert store.count() == 100 and second.added == 100  # the import's total
    assert len({w.key for w in store.works()}) == 100


def test_failed_batch_commits_nothing(tmp_path, catalog, store):
    path = tmp_path / "x.jsonl"
    path.write_text("".join(json.dumps({"id": f"2602.{i:05d}", "title": f"Paper {i}"}) + "\n" for i in range(10)))

    class Exploding:
        def embed_works(self, works):
            raise RuntimeError("embedding failed")

    with pytest.raises(RuntimeError):
        import_file(path, catalog, store, placer=Exploding(), batch_size=5)
    assert store.count() == 0  # the batch rolled back; a rerun starts from line 0
    report = import_file(path, catalog, store, batch_size=5)
    assert report.resumed_after_line == 0 and store.count() == 10


def test_edit_delete_accept(tmp_path, catalog, store):
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"id": "2601.11111", "title": "A tool-using agent"}) + "\n")

    class Fixed:
        encode_new = None

        def embed_works(self, works):
            import numpy as np

            return np.ones((len(works), 4), dtype=np.float32)

        def suggest_vectors(self, vectors):
            return [[("tool-use", 0.6), ("tasks", 0.2), ("code", 0.1)] for _ in vectors]

    import_file(path, catalog, store, placer=Fixed())
    w = store.get("arxiv-2601.11111")
    assert w.nodes == ("tool-use",) and AUTO_TAG in w.tags
    assert store.suggestions(w.key) == [("tool-use", 0.6), ("tasks", 0.2), ("code", 0.1)]
    keys, vectors = store.embeddings("unknown")
    assert keys == [w.key] and vectors.shape == (1, 4)
    w2 = accept_placement(store, catalog, w.key, ["tool-use-react-style"])
    assert w2.nodes == ("tool-use-react-style",) and AUTO_TAG not in w2.tags
    store.update(w2.model_copy(update={"title": "A better title"}))
    assert store.get(w.key).title == "A better title"
    store.delete(w.key)
    assert store.get(w.key) is None and store.suggestions(w.key) == []


def test_merged_catalog_marks_user_works(tmp_path, catalog, store):
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"id": "2601.22222", "title": "Yet another agent"}) + "\n")
    import_file(path, catalog, store)
    merged = catalog.with_works(store.works())
    assert len(merged) == len(catalog) + 1
    assert merged.get("arxiv-2601.22222").origin == "user" and merged.get("ppo").origin == "survey"


@pytest.mark.parametrize("raw,expected", [("arXiv:2503.09516v2", "2503.09516"), ("https://arxiv.org/abs/1707.06347", "1707.06347"), ("cs/0112017", "cs/0112017"), ("nothing", "")])
def test_normalise_arxiv_id(raw, expected):
    assert normalise_arxiv_id(raw) == expected


def test_unknown_format(tmp_path):
    with pytest.raises(ValueError, match="cannot tell the format"):
        list(read_records(tmp_path / "x.txt"))


def test_cli_import_then_list_search_place_delete(tmp_path):
    from pathlib import Path

    from inprocess import papers_cli

    root = Path(__file__).resolve().parents[1]

    def cli(*args):
        return papers_cli(*args, data_dir=tmp_path / "data", cwd=root)

    src = tmp_path / "mine.jsonl"
    src.write_text(json.dumps({"id": "2609.01234", "title": "Zebrafish navigation agents trained with GRPO"}) + "\n{broken\n")
    r = cli("import", str(src), "--no-place")
    assert r.returncode == 0, r.stderr
    assert "1 works added, 1 skipped" in r.stdout and f"{src}:2: skipped: invalid JSON" in r.stdout
    shown = cli("show", "arxiv-2609.01234", "--json")
    assert json.loads(shown.stdout)["origin"] == "user"
    listed = cli("list", "--format", "json")
    assert "arxiv-2609.01234" in {w["key"] for w in json.loads(listed.stdout)}
    placed = cli("user", "place", "arxiv-2609.01234", "embodied-navigation")
    assert placed.returncode == 0, placed.stderr
    in_node = cli("list", "--node", "embodied", "--format", "json")
    assert "arxiv-2609.01234" in {w["key"] for w in json.loads(in_node.stdout)}
    bad = cli("user", "place", "arxiv-2609.01234", "embodyed")
    assert bad.returncode == 2 and "embodied" in bad.stderr
    assert cli("user", "delete", "arxiv-2609.01234").returncode == 0
    assert cli("user", "delete", "arxiv-2609.01234").returncode == 2
    missing = cli("import", str(tmp_path / "nope.bib"))
    assert missing.returncode == 2 and "nope.bib" in missing.stderr

"""The reviewed-diff workflow: facts from independent sources -> proposed changes -> review -> applied data."""
import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from papers.authors import split_authors
from papers.verification import (
    VERIFICATION_DIR, Change, Fact, accepted, apply_to_authors, apply_to_works, load_changes, load_facts, propose,
    same_value,
)
from taxonomy import DataError

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "papers" / "data"


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def current() -> dict[tuple[str, str], str]:
    cur = {(r["key"], f): r[f] for r in rows(DATA / "works.csv") for f in ("title", "year", "arxiv_id", "venue", "url")}
    cur.update({(r["key"], "authors"): r["authors"] for r in rows(DATA / "authors.csv")})
    return cur


def test_facts_load_strictly_for_known_works_with_a_source_each():
    keys = {r["key"] for r in rows(DATA / "works.csv")}
    facts = load_facts(VERIFICATION_DIR / "facts.csv", keys=keys)
    assert len(facts) >= 50
    assert all(f.source and f.checked_by in ("script", "search", "person") for f in facts)


@pytest.mark.parametrize("line, field, message", [
    ("ppo,title,PPO,https://x,guessed,2026-12-03", "checked_by", "checked_by must be one of"),
    ("ppo,title,PPO,,search,2026-12-03", "source", "needs its source"),
    ("ppo,arxiv_id,17.06347,https://x,search,2026-12-03", "value", "is not an arXiv id"),
    ("ppo,colour,red,https://x,search,2026-12-03", "field", "field must be one of"),
    ("ppo,title,PPO,https://x,search,3 Dec", "date", "YYYY-MM-DD"),
    ("nope,title,PPO,https://x,search,2026-12-03", "key", "unknown work 'nope'"),
])
def test_a_bad_fact_names_file_row_and_field(tmp_path, line, field, message):
    path = tmp_path / "facts.csv"
    path.write_text("key,field,value,source,checked_by,date\n" + line + "\n", encoding="utf-8")
    with pytest.raises(DataError) as e:
        load_facts(path, keys={"ppo"})
    assert f"row 2, field '{field}'" in str(e.value) and message in str(e.value)


def test_every_accepted_change_is_in_the_shipped_data():
    changes = load_changes(VERIFICATION_DIR / "changes.csv")
    acc = accepted(changes)
    assert len(acc) >= 40
    cur = current()
    wrong = {k: (cur.get(k), c.proposed) for k, c in acc.items() if not same_value(c.field, cur.get(k, ""), c.proposed)}
    assert wrong == {}
    assert all(c.reviewed_by for c in changes if c.decision)


def test_changes_file_is_what_the_facts_propose():
    """Nothing pending, nothing stale: re-proposing from the shipped data gives the committed changes.csv."""
    facts = load_facts(VERIFICATION_DIR / "facts.csv")
    changes = load_changes(VERIFICATION_DIR / "changes.csv")
    assert propose(facts, current(), changes) == changes
    assert [c for c in changes if not c.decision] == []


def test_verified_author_lists_are_marked_and_counted():
    by_key = {r["key"]: r for r in rows(DATA / "authors.csv")}
    for (key, field), c in accepted(load_changes(VERIFICATION_DIR / "changes.csv")).items():
        if field == "authors":
            r = by_key[key]
            assert r["check"] == "verified" and r["n_authors"] == str(len(split_authors(r["authors"]))), key
    assert "Brain Ichter" not in (DATA / "authors.csv").read_text(encoding="utf-8")


def test_propose_apply_round_trip_on_a_copy():
    works = [{"key": "w", "title": "Digirl: training agents", "year": "2024", "venue": "arXiv", "arxiv_id": "", "url": ""}]
    authors = [{"key": "w", "authors": "A B and others", "n_authors": "1", "truncated": "yes", "source": "survey ref [1]",
                "check": "agrees", "second_source": "x"}]
    facts = [Fact("w", "title", "DigiRL: Training Agents", "https://arxiv.org/abs/2406.11896", "search", "2026-12-03"),
             Fact("w", "arxiv_id", "2406.11896", "https://arxiv.org/abs/2406.11896", "search", "2026-12-03"),
             Fact("w", "authors", "A B and C D", "https://arxiv.org/abs/2406.11896", "search", "2026-12-03"),
             Fact("w", "year", "2024", "https://arxiv.org/abs/2406.11896", "search", "2026-12-03")]
    cur = {("w", "title"): works[0]["title"], ("w", "arxiv_id"): "", ("w", "authors"): authors[0]["authors"], ("w", "year"): "2024"}
    proposed = propose(facts, cur, [])
    assert [(c.field, c.proposed) for c in proposed] == [("title", "DigiRL: Training Agents"), ("arxiv_id", "2406.11896"),
                                                          ("authors", "A B and C D")]
    assert apply_to_works(works, proposed) == 0  # nothing reviewed yet: nothing applied
    decided = [Change(**{**c.row(), "decision": "reject" if c.field == "arxiv_id" else "accept", "reviewed_by": "t"})
               for c in proposed]
    assert apply_to_works(works, decided) == 1 and works[0]["title"] == "DigiRL: Training Agents" and works[0]["arxiv_id"] == ""
    assert apply_to_authors(authors, decided) == 1
    assert authors[0] == {**authors[0], "authors": "A B and C D", "n_authors": "2", "truncated": "", "check": "verified"}
    assert propose(facts, {**cur, ("w", "title"): works[0]["title"], ("w", "authors"): "A B and C D"}, decided) == decided


def test_a_decision_without_a_reviewer_is_refused(tmp_path):
    path = tmp_path / "changes.csv"
    path.write_text("key,field,current,proposed,source,checked_by,decision,reviewed_by\n"
                    "w,title,a,A,https://x,search,accept,\n", encoding="utf-8")
    with pytest.raises(DataError, match="row 2, field 'reviewed_by'"):
        load_changes(path)


def run_script(*args):
    return subprocess.run([sys.executable, "scripts/verify_catalog.py", *args], cwd=ROOT, capture_output=True, text=True)


def test_counts_after_corrections():
    r = run_script("counts")
    assert r.returncode == 0, r.stderr
    after = json.loads(r.stdout)
    before = json.loads((VERIFICATION_DIR / "counts_before.json").read_text(encoding="utf-8"))
    assert after["works"] == before["works"] == 573
    assert after["no_locator_(eprint_doi_url)"] == 0 < before["no_locator_(eprint_doi_url)"]
    assert after["authors_missing"] == after["year_missing"] == 0
    assert after["authors_person_braced_as_organisation"] == 0 < before["authors_person_braced_as_organisation"]
    assert after["arxiv_id_missing"] < before["arxiv_id_missing"]
    assert after["changes_pending"] == 0


def test_review_and_apply_on_a_copy(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(DATA, data)
    checked = {(r["key"], r["field"]) for r in rows(data / "verification" / "facts.csv")}
    key = next(r["key"] for r in rows(data / "works.csv") if (r["key"], "title") not in checked)  # a title not yet checked
    new_title = "A Title Read In An Independent Source"
    with (data / "verification" / "facts.csv").open("a", encoding="utf-8") as f:
        f.write(f"{key},title,{new_title},https://example.org/record,search,2026-12-03\n")
    assert run_script("propose", "--data", str(data)).returncode == 0
    assert run_script("review", "--data", str(data)).returncode == 2  # a reviewer must be named
    r = run_script("review", "--data", str(data), "--reviewer", "test")
    assert r.returncode == 0 and f"{key}/title" in r.stdout
    assert run_script("apply", "--data", str(data)).returncode == 0
    work = next(r for r in rows(data / "works.csv") if r["key"] == key)
    assert work["title"] == new_title
    assert next(r for r in rows(DATA / "works.csv") if r["key"] == key)["title"] != new_title  # the copy only


def test_committed_after_counts_are_current():
    """docs/catalog_accuracy.md quotes counts_after.json: it must be what the script measures now."""
    r = run_script("counts")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == json.loads((VERIFICATION_DIR / "counts_after.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("ours, found, verdict", [
    ("DigiRL: Training agents", "DigiRL: Training agents", "ok"),
    ("Octonav: Towards generalist navigation", "OctoNav: Towards Generalist Navigation", "name-casing"),
    ("Reinforcement learning enhanced LLMs: A survey", "Reinforcement Learning Enhanced LLMs: A Survey", "sentence-case"),
    ("Di-girl: Training agents", "DigiRL: Training agents", "words"),
])
def test_title_verdicts(ours, found, verdict):
    from papers.verification import title_verdict

    assert title_verdict(ours, found) == verdict


def test_same_people_compares_family_names_and_initials_in_order():
    from papers.verification import same_people

    assert same_people("Zora Z. Wang and Marc-Alexandre Cote", "Zora Zhiruo Wang and Marc-Alexandre Côté")
    assert not same_people("Kunal Singh and Mukund Khanna", "Mukund Khanna and Kunal Singh")
    assert not same_people("A B and C D and others", "A B and C D and E F")
    assert not same_people("{Lilian Weng}", "Lilian Weng")


def test_every_title_fact_is_the_shipped_title_unless_the_review_rejected_it():
    """A checked title is shipped as the source writes it; the only exceptions are facts the review
    rejected (each with its reviewer), e.g. a later version's new title kept out with its old authors."""
    titles = {r["key"]: r["title"] for r in rows(DATA / "works.csv")}
    rejected = {(c.key, c.proposed) for c in load_changes(VERIFICATION_DIR / "changes.csv")
                if c.field == "title" and c.decision == "reject" and c.reviewed_by}
    facts = [f for f in load_facts(VERIFICATION_DIR / "facts.csv") if f.field == "title"]
    differing = {f.key: (titles[f.key], f.value) for f in facts if titles[f.key] != f.value}
    assert {(k, v) for k, (_, v) in differing.items()} <= rejected, differing
    assert len(differing) <= 2  # TRISHUL and OS-R1, explained in docs/catalog_accuracy.md


def test_the_work_page_says_what_a_works_facts_rest_on(catalog):
    """Issue 64 item 5: a work whose title and authors no independent source gave (product pages, blog
    posts, an SSRN survey) says so on its page, with the kind of page the survey links; a checked work
    lists the fields that were checked."""
    from app.presentation.work import work_page

    facts = load_facts(VERIFICATION_DIR / "facts.csv")
    read = {(f.key, f.field) for f in facts}
    unsourced = [w.key for w in catalog if (w.key, "title") not in read and (w.key, "authors") not in read]
    assert unsourced and "claude-code" in unsourced
    for key in unsourced:
        said = dict(work_page(catalog, key).facts)["Facts rest on"]
        assert "Not checked" in said and "title, authors" in said and "survey's reference-list entry" in said, key
    claude = dict(work_page(catalog, "claude-code").facts)["Facts rest on"]
    assert "a product page or blog post https://www.anthropic.com/claude-code" in claude
    assert dict(work_page(catalog, "gemini").facts)["Author list"].startswith("incomplete: the first 10 names")
    assert "Author list" not in dict(work_page(catalog, "search-r1").facts)
    search = dict(work_page(catalog, "search-r1").facts)["Facts rest on"]
    assert search.startswith("Checked against") and "title, authors, year, venue" in search and "Not checked" not in search


def test_merge_validates_batches_and_keeps_earlier_readings(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(DATA, data)
    facts_before = (data / "verification" / "facts.csv").read_text(encoding="utf-8")
    old = next(f for f in load_facts(data / "verification" / "facts.csv") if f.field == "venue")
    fresh = next(r["key"] for r in rows(data / "works.csv")
                 if (r["key"], "venue") not in {(f.key, f.field) for f in load_facts(data / "verification" / "facts.csv")})
    good = tmp_path / "batch.csv"
    good.write_text("key,field,value,source,checked_by,date,note\n"
                    f"{fresh},venue,ICLR 2026,https://openreview.net/forum?id=x,search,2026-12-06,published title: Other\n"
                    f"{old.key},venue,{old.value},https://example.org/same,search,2026-12-06,\n"
                    "# DONE\n", encoding="utf-8")
    r = run_script("merge", "--data", str(data), str(good))
    assert r.returncode == 0, r.stderr
    assert "added 1, already_recorded 1, conflicts_kept_out 0" in r.stdout
    merged = {(f.key, f.field): f for f in load_facts(data / "verification" / "facts.csv")}
    assert merged[fresh, "venue"].source == "https://openreview.net/forum?id=x (published title: Other)"
    bad = tmp_path / "bad.csv"
    bad.write_text("key,field,value,source,checked_by,date\n"
                   f"{fresh},year,2026,seen in a list,search,2026-12-06\n", encoding="utf-8")
    r = run_script("merge", "--data", str(data), str(bad))
    assert r.returncode != 0 and "source must be a URL" in r.stderr and "bad.csv" in r.stderr
    unknown = tmp_path / "unknown.csv"
    unknown.write_text("key,field,value,source,checked_by,date\nnope,venue,X,https://x,search,2026-12-06\n", encoding="utf-8")
    r = run_script("merge", "--data", str(data), str(unknown))
    assert r.returncode != 0 and "unknown work 'nope'" in r.stderr
    assert facts_before != (data / "verification" / "facts.csv").read_text(encoding="utf-8")

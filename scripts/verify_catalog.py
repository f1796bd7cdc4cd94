"""Check the catalog against sources independent of the survey: measure, propose changes, apply accepted ones.

    python scripts/verify_catalog.py counts [--out FILE.json]   # accuracy counts of the shipped data
    python scripts/verify_catalog.py propose                    # facts.csv -> changes.csv (reviewable diff)
    python scripts/verify_catalog.py review --reviewer NAME [--reject KEY:FIELD ...]
                                                                # decide every pending row (shows each first)
    python scripts/verify_catalog.py apply                      # accepted rows of changes.csv -> works/authors
    python scripts/verify_catalog.py sample --seed 46 --n 40    # a random sample of work keys to check by hand
    python scripts/verify_catalog.py report --seed 46 --n 40 --before 9734a7f   # field-by-field error rates
    python scripts/verify_catalog.py vague                      # summaries that say where the survey cites a work
    python scripts/verify_catalog.py merge BATCH.csv ...        # add collected facts (validated) to facts.csv

The facts (``papers/data/verification/facts.csv``) are what the independent sources say, each with its
source, how it was read and the date (see ``papers.verification``). ``propose`` lists every fact that
differs from the shipped value, keeping earlier decisions; a reviewer marks each row ``accept`` or
``reject``; ``apply`` (also run by ``scripts/import_seed.py`` after a rebuild) writes the accepted ones.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import random
import re
import subprocess
import sys
from pathlib import Path

from papers import Catalog
from papers.authors import is_truncated, split_authors
from papers.csvio import read_csv_rows
from papers.venues import arxiv_year, is_published, rule_year
from papers.verification import (
    CHANGE_COLUMNS, FACT_COLUMNS, VERIFICATION_DIR, FIELDS, apply_to_authors, apply_to_works, apply_year_rule, load_changes, load_facts,
    propose, same_people, same_value, title_verdict, vague_summary, write_rows,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "papers" / "data"
_ORG = re.compile(r"\b(team|ai|inc|labs?|research|deepmind|openai|google|meta|anthropic|community|gravitas|doubao)\b", re.I)
# a leading coined name the survey's lower-casing may have flattened: "Spatialvlm:", "Ui-tars-2 ...", "Di-girl:"
_FLAT_NAME = re.compile(r"^[A-Z][a-z0-9]+(?:-[a-z0-9]+)*(?=:)|^[A-Z][a-z0-9]*(?:-[a-z0-9]+)+(?=\s)")


def _rows(path: Path) -> list[dict[str, str]]:
    return [r for _, r in read_csv_rows(path)[1]]


def current_values(works_rows, authors_rows) -> dict[tuple[str, str], str]:
    cur = {(r["key"], f): r[f] for r in works_rows for f in FIELDS if f in r}
    cur.update({(r["key"], "authors"): r["authors"] for r in authors_rows})
    return cur


def counts(catalog: Catalog, data_dir: Path = DATA) -> dict[str, object]:
    """The accuracy counts the issue asks for, measured on the data as shipped."""
    works = list(catalog)
    facts = load_facts(data_dir / "verification" / "facts.csv") if (data_dir / "verification" / "facts.csv").exists() else []
    changes = load_changes(data_dir / "verification" / "changes.csv")
    acc = [c for c in changes if c.decision == "accept"]
    author_rows = {r["key"]: r for r in _rows(data_dir / "authors.csv")}

    def braced_person(w) -> bool:
        return any(p.literal and len(p.literal.split()) == 2 and not _ORG.search(p.literal)
                   for p in split_authors(w.authors))

    author_facts = [f for f in facts if f.field == "authors"]
    agree = sum(1 for f in author_facts
                if _same_authors(author_rows.get(f.key, {}).get("authors", ""), f.value))
    return {
        "works": len(works),
        "titles_all_lower_case": sum(1 for w in works if w.title == w.title.lower()),
        "titles_flattened_leading_name_candidates": sum(1 for w in works if _FLAT_NAME.match(w.title)),
        "arxiv_id_missing": sum(1 for w in works if not w.arxiv_id),
        "venue_missing": sum(1 for w in works if not w.venue),
        "venue_arxiv_only": sum(1 for w in works if w.venue == "arXiv"),
        "authors_missing": sum(1 for w in works if not w.authors.strip()),
        "authors_cut_et_al": sum(1 for r in author_rows.values() if r["truncated"] == "yes"),
        "authors_person_braced_as_organisation": sum(1 for w in works if braced_person(w)),
        "year_missing": sum(1 for w in works if w.year is None),
        "no_locator_(eprint_doi_url)": sum(1 for w in works if not (w.arxiv_id or w.url)),
        "authors_check": {c: sum(1 for r in author_rows.values() if r["check"] == c)
                          for c in sorted({r["check"] for r in author_rows.values()})},
        "facts_checked": len(facts),
        "facts_by_field": {f: sum(1 for x in facts if x.field == f) for f in FIELDS},
        "works_with_a_checked_fact": len({f.key for f in facts}),
        "changes_accepted_by_field": {f: sum(1 for c in acc if c.field == f) for f in FIELDS},
        "changes_pending": sum(1 for c in changes if not c.decision),
        "author_lists_checked": len(author_facts),
        "author_lists_agreeing_with_source": agree,
    }


def _same_authors(ours: str, found: str) -> bool:
    return bool(ours) and same_value("authors", ours, found)


def cmd_propose(data_dir: Path) -> int:
    works_rows, authors_rows = _rows(data_dir / "works.csv"), _rows(data_dir / "authors.csv")
    facts = load_facts(data_dir / "verification" / "facts.csv", keys={r["key"] for r in works_rows})
    path = data_dir / "verification" / "changes.csv"
    changes = propose(facts, current_values(works_rows, authors_rows), load_changes(path))
    write_rows(path, CHANGE_COLUMNS, [c.row() for c in changes])
    pending = sum(1 for c in changes if not c.decision)
    print(f"{len(facts)} facts, {len(changes)} changes listed in {path} ({pending} awaiting review)")
    return 0


def apply_changes(data_dir: Path, changes_file: Path = VERIFICATION_DIR / "changes.csv") -> tuple[int, int]:
    """Apply the accepted rows of ``changes_file`` (default: the committed one) to ``data_dir``'s works.csv
    and authors.csv; (work cells, author lists) changed."""
    changes = load_changes(changes_file)
    n_works = n_authors = 0
    for name, applier in (("works.csv", apply_to_works), ("authors.csv", apply_to_authors)):
        path = data_dir / name
        if not path.exists():  # a rebuild without author sources writes no authors.csv
            continue
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f)
            columns, rows = tuple(reader.fieldnames or ()), list(reader)
        n = applier(rows, changes)
        if name == "works.csv":
            if "year_arxiv" not in columns:  # data written before the year rule: the column goes after year
                at = columns.index("year") + 1
                columns = columns[:at] + ("year_arxiv",) + columns[at:]
                n += 1
            n += apply_year_rule(rows)  # after the accepted venues: a published work takes its venue's year
        if n:
            write_rows(path, columns, rows)
        if name == "works.csv":
            n_works = n
        else:
            n_authors = n
    return n_works, n_authors


def _rows_at(rev: str, name: str) -> list[dict[str, str]]:
    """A data file as committed at ``rev`` (the shipped catalog before any correction)."""
    text = subprocess.run(["git", "show", f"{rev}:papers/data/{name}"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout
    return list(csv.DictReader(io.StringIO(text)))


def _year_verdict(year: str, venue: str, arxiv_fact: str, venue_fact: str) -> str:
    """A script check of the year rule (``papers.venues``) on verified inputs: a work with a verified
    published venue must carry that venue's year; an unpublished one the year of its verified arXiv id."""
    if venue_fact:
        expected = rule_year(venue_fact, arxiv_fact)
    elif not is_published(venue):
        expected = arxiv_year(arxiv_fact)
    else:
        expected = None
    if expected is None:
        return "unchecked"
    return "ok" if year == str(expected) else "differs"


def field_verdicts(works: dict[str, dict[str, str]], authors: dict[str, str], facts: dict[tuple[str, str], str],
                   key: str) -> dict[str, str]:
    """Each field of one work against the independent facts: ok, an error kind, or unchecked."""
    w, f = works[key], facts
    out = {}
    out["title"] = title_verdict(w["title"], f[key, "title"]) if (key, "title") in f else "unchecked"
    if (key, "authors") in f:
        ours = authors.get(key, "")
        out["authors"] = ("ok" if same_people(ours, f[key, "authors"])
                          else "cut (et al.)" if is_truncated(ours) else "differs")
    else:
        out["authors"] = "unchecked"
    if (key, "arxiv_id") in f:
        out["arxiv_id"] = "ok" if w["arxiv_id"] == f[key, "arxiv_id"] else "missing" if not w["arxiv_id"] else "differs"
    else:
        out["arxiv_id"] = "unchecked"
    if (key, "venue") in f:
        out["venue"] = "ok" if w["venue"] == f[key, "venue"] else "missing" if w["venue"] in ("", "arXiv") else "differs"
    else:
        out["venue"] = "unchecked"
    out["year"] = _year_verdict(w["year"], w["venue"], f.get((key, "arxiv_id"), ""), f.get((key, "venue"), ""))
    return out


REPORT_FIELDS = ("title", "authors", "year", "arxiv_id", "venue")


def report(keys: list[str], before: tuple[list, list], after: tuple[list, list], facts: list) -> str:
    """Markdown: per field, checked / errors before / errors after, and every non-ok verdict."""
    fmap = {(x.key, x.field): x.value for x in facts}
    states = {}
    for label, (w_rows, a_rows) in (("before", before), ("after", after)):
        works = {r["key"]: r for r in w_rows}
        authors = {r["key"]: r["authors"] for r in a_rows}
        states[label] = {k: field_verdicts(works, authors, fmap, k) for k in keys}
    lines = ["| field | checked | errors before | error rate before | errors after | error rate after | kinds before |",
             "|---|---|---|---|---|---|---|"]
    for field in REPORT_FIELDS:
        checked = [k for k in keys if states["before"][k][field] != "unchecked"]
        bad_b = [k for k in checked if states["before"][k][field] != "ok"]
        bad_a = [k for k in checked if states["after"][k][field] != "ok"]
        kinds = {v: sum(1 for k in bad_b if states["before"][k][field] == v) for v in sorted({states["before"][k][field] for k in bad_b})}
        n = len(checked) or 1
        lines.append(f"| {field} | {len(checked)} of {len(keys)} | {len(bad_b)} | {100 * len(bad_b) / n:.0f} % "
                     f"| {len(bad_a)} | {100 * len(bad_a) / n:.0f} % | {', '.join(f'{v} {c}' for v, c in kinds.items())} |")
    lines += ["", "| work | field | before | after |", "|---|---|---|---|"]
    for k in keys:
        for field in REPORT_FIELDS:
            b, a = states["before"][k][field], states["after"][k][field]
            if b not in ("ok", "unchecked") or a not in ("ok", "unchecked"):
                lines.append(f"| {k} | {field} | {b} | {a} |")
    return "\n".join(lines) + "\n"


def change_counts(changes: list) -> dict[str, int]:
    """What the accepted changes did, counted the way the issue asks."""
    acc = [c for c in changes if c.decision == "accept"]
    return {
        "titles_recased_or_corrected": sum(1 for c in acc if c.field == "title"),
        "titles_name_casing_restored": sum(1 for c in acc if c.field == "title" and title_verdict(c.current, c.proposed) == "name-casing"),
        "titles_sentence_to_authors_case": sum(1 for c in acc if c.field == "title" and title_verdict(c.current, c.proposed) == "sentence-case"),
        "titles_words_changed": sum(1 for c in acc if c.field == "title" and title_verdict(c.current, c.proposed) == "words"),
        "arxiv_ids_added": sum(1 for c in acc if c.field == "arxiv_id" and not c.current),
        "venues_filled_or_published": sum(1 for c in acc if c.field == "venue"),
        "author_lists_completed": sum(1 for c in acc if c.field == "authors" and is_truncated(c.current)),
        "author_lists_corrected": sum(1 for c in acc if c.field == "authors" and not is_truncated(c.current)),
        "locators_added": sum(1 for c in acc if c.field == "url" and not c.current),
        "changes_rejected": sum(1 for c in changes if c.decision == "reject"),
    }


def cmd_review(data_dir: Path, reviewer: str, reject: list[str]) -> int:
    """Print every pending change (current -> proposed, source) and record the reviewer's decision:
    ``reject`` for the KEY:FIELD pairs named, ``accept`` for the others."""
    from dataclasses import replace

    if not reviewer.strip():
        print("error: --reviewer is required (who read the changes against their sources)", file=sys.stderr)
        return 2
    path = data_dir / "verification" / "changes.csv"
    changes = load_changes(path)
    refused = set(reject)
    out = []
    for c in changes:
        if not c.decision:
            decision = "reject" if f"{c.key}:{c.field}" in refused else "accept"
            print(f"{decision:6} {c.key}/{c.field}: {c.current!r} -> {c.proposed!r}  [{c.source}]")
            c = replace(c, decision=decision, reviewed_by=reviewer.strip())
        out.append(c)
    write_rows(path, CHANGE_COLUMNS, [c.row() for c in out])
    return 0


def merge_batches(data_dir: Path, batches: list[Path]) -> dict[str, int]:
    """Add the rows of fact batches (facts.csv's columns plus an optional ``note``; lines starting with
    ``#`` ignored) to facts.csv. Every row is validated as facts.csv is (known work and field, a valid
    value, a source, ``checked_by``, an ISO date) and its source must be a URL; a ``note`` is kept in the
    source, in parentheses. A row whose key/field already has a fact is skipped when it agrees and kept
    out, counted as a conflict, when it does not (the earlier reading stays; a year fact there is the
    arXiv year, which the year rule no longer needs). A bad row stops the merge with its file and line."""
    import tempfile

    facts_path = data_dir / "verification" / "facts.csv"
    keys = {r["key"] for r in _rows(data_dir / "works.csv")}
    existing = {(f.key, f.field): f for f in load_facts(facts_path, keys=keys)}
    stats = {"added": 0, "already_recorded": 0, "conflicts_kept_out": 0}
    new_rows: list[dict[str, str]] = []
    for batch in batches:
        lines = [line for line in batch.read_text(encoding="utf-8").splitlines(keepends=True) if not line.startswith("#")]
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / batch.name
            copy.write_text("".join(lines), encoding="utf-8")
            try:
                checked = load_facts(copy, keys=keys)
            except Exception as e:  # name the batch, not the temporary copy
                raise SystemExit(f"error: {batch}: {str(e).split(': ', 1)[-1]}") from None
            notes = [" ".join(r.get("note", "").split()) for _, r in read_csv_rows(copy)[1]]
        for fact, note in zip(checked, notes):
            if not re.match(r"https?://", fact.source):
                raise SystemExit(f"error: {batch}: {fact.key}/{fact.field}: source must be a URL, not '{fact.source[:60]}'")
            old = existing.get((fact.key, fact.field))
            if old is not None:
                stats["already_recorded" if old.value == fact.value else "conflicts_kept_out"] += 1
                continue
            source = f"{fact.source} ({note})" if note else fact.source
            row = {"key": fact.key, "field": fact.field, "value": fact.value, "source": source,
                   "checked_by": fact.checked_by, "date": fact.date}
            new_rows.append(row)
            existing[(fact.key, fact.field)] = fact
            stats["added"] += 1
    with facts_path.open("a", encoding="utf-8", newline="") as f:
        csv.DictWriter(f, fieldnames=list(FACT_COLUMNS), lineterminator="\n").writerows(new_rows)
    load_facts(facts_path, keys=keys)  # the merged file still loads strictly
    return stats


def sample_keys(data_dir: Path, seed: int, n: int) -> list[str]:
    """``n`` work keys drawn at random (``random.Random(seed)``) from the sorted keys of works.csv."""
    keys = sorted(r["key"] for r in _rows(data_dir / "works.csv"))
    return random.Random(seed).sample(keys, n)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("counts", "propose", "review", "apply", "sample", "report", "vague", "merge"))
    ap.add_argument("batches", nargs="*", type=Path, help="merge: fact batch files")
    ap.add_argument("--data", type=Path, default=DATA, help="papers/data folder")
    ap.add_argument("--out", type=Path, help="counts: also write them to this JSON file")
    ap.add_argument("--seed", type=int, default=46)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--before", default="9734a7f", help="report: the git revision of the catalog before corrections")
    ap.add_argument("--reviewer", default="", help="review: who decided")
    ap.add_argument("--reject", nargs="*", default=[], metavar="KEY:FIELD", help="review: changes refused")
    args = ap.parse_intermixed_args(argv)
    if args.command == "counts":
        result = counts(Catalog.load(args.data), args.data)
        text = json.dumps(result, indent=1, ensure_ascii=False) + "\n"
        if args.out:
            args.out.write_text(text, encoding="utf-8")
        print(text, end="")
    elif args.command == "propose":
        return cmd_propose(args.data)
    elif args.command == "merge":
        stats = merge_batches(args.data, args.batches)
        print("merged: " + ", ".join(f"{k} {v}" for k, v in stats.items()))
    elif args.command == "review":
        return cmd_review(args.data, args.reviewer, args.reject)
    elif args.command == "apply":
        n_works, n_authors = apply_changes(args.data, args.data / "verification" / "changes.csv")
        print(f"applied: {n_works} work fields, {n_authors} author lists")
    elif args.command == "vague":
        cat = Catalog.load(args.data)
        found = [(w.key, vague_summary(w.title, w.summary)) for w in cat]
        found = [(k, why) for k, why in found if why]
        for k, why in found:
            print(f"{k}\t{why}\t{cat.get(k).summary_confidence}")
        print(f"{len(found)} of {len(cat)} summaries flagged")
    elif args.command == "sample":
        print("\n".join(sample_keys(args.data, args.seed, args.n)))
    else:
        keys = sample_keys(args.data, args.seed, args.n)
        facts = load_facts(args.data / "verification" / "facts.csv")
        before = (_rows_at(args.before, "works.csv"), _rows_at(args.before, "authors.csv"))
        after = (_rows(args.data / "works.csv"), _rows(args.data / "authors.csv"))
        print(f"## Sample of {args.n} works (seed {args.seed}) against the independent sources\n")
        print(report(keys, before, after, facts))
        changes = load_changes(args.data / "verification" / "changes.csv")
        print("## Accepted changes, whole catalog\n")
        print(json.dumps(change_counts(changes), indent=1))
        author_facts = [x for x in facts if x.field == "authors"]
        for label, rows in (("before", before[1]), ("after", after[1])):
            a = {r["key"]: r["authors"] for r in rows}
            agree = sum(1 for x in author_facts if same_people(a.get(x.key, ""), x.value))
            print(f"author lists agreeing with the independent source, {label}: {agree} of {len(author_facts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

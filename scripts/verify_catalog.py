"""Check the catalog against sources independent of the survey: measure, propose changes, apply accepted ones.

    python scripts/verify_catalog.py counts [--out FILE.json]   # accuracy counts of the shipped data
    python scripts/verify_catalog.py propose                    # facts.csv -> changes.csv (reviewable diff)
    python scripts/verify_catalog.py review --reviewer NAME [--reject KEY:FIELD ...]
                                                                # decide every pending row (shows each first)
    python scripts/verify_catalog.py apply                      # accepted rows of changes.csv -> works/authors
    python scripts/verify_catalog.py sample --seed 46 --n 40    # a random sample of work keys to check by hand

The facts (``papers/data/verification/facts.csv``) are what the independent sources say, each with its
source, how it was read and the date (see ``papers.verification``). ``propose`` lists every fact that
differs from the shipped value, keeping earlier decisions; a reviewer marks each row ``accept`` or
``reject``; ``apply`` (also run by ``scripts/import_seed.py`` after a rebuild) writes the accepted ones.
"""
from __future__ import annotations

import argparse
import csv
import json
import random
import re
import sys
from pathlib import Path

from papers import Catalog
from papers.authors import split_authors
from papers.csvio import read_csv_rows
from papers.verification import (
    CHANGE_COLUMNS, VERIFICATION_DIR, FIELDS, apply_to_authors, apply_to_works, load_changes, load_facts,
    propose, write_rows,
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
        "titles_equal_to_survey_lowercased_list": sum(1 for w in works if w.title_original and w.title_original[1:] == w.title_original[1:].lower()),
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
    from papers.verification import same_value

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
        if n:
            write_rows(path, columns, rows)
        if name == "works.csv":
            n_works = n
        else:
            n_authors = n
    return n_works, n_authors


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("counts", "propose", "review", "apply", "sample"))
    ap.add_argument("--data", type=Path, default=DATA, help="papers/data folder")
    ap.add_argument("--out", type=Path, help="counts: also write them to this JSON file")
    ap.add_argument("--seed", type=int, default=46)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--reviewer", default="", help="review: who decided")
    ap.add_argument("--reject", nargs="*", default=[], metavar="KEY:FIELD", help="review: changes refused")
    args = ap.parse_args(argv)
    if args.command == "counts":
        result = counts(Catalog.load(args.data), args.data)
        text = json.dumps(result, indent=1, ensure_ascii=False) + "\n"
        if args.out:
            args.out.write_text(text, encoding="utf-8")
        print(text, end="")
    elif args.command == "propose":
        return cmd_propose(args.data)
    elif args.command == "review":
        return cmd_review(args.data, args.reviewer, args.reject)
    elif args.command == "apply":
        n_works, n_authors = apply_changes(args.data, args.data / "verification" / "changes.csv")
        print(f"applied: {n_works} work fields, {n_authors} author lists")
    else:
        keys = sorted(w.key for w in Catalog.load(args.data))
        print("\n".join(random.Random(args.seed).sample(keys, args.n)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

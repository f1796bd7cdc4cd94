"""Facts about works checked against a source independent of the survey, and the reviewed changes they lead to.

Two files under ``papers/data/verification/`` (developer data: the app never reads them):

``facts.csv``    one row per checked field: ``key, field, value, source, checked_by, date``. ``value`` is what
                 the independent source says (the arXiv record, the venue's page, the paper's own
                 repository), ``source`` where it says it (a URL or an arXiv id), ``checked_by`` how it was
                 read: ``script`` (a program compared it), ``search`` (read from a stored public page found
                 with a search tool), ``person`` (a person read it). A fact that agrees with the catalog is
                 recorded too: it is what lets a field count as checked.
``changes.csv``  the reviewable diff ``scripts/verify_catalog.py propose`` writes from the facts: ``key, field,
                 current, proposed, source, checked_by, decision, reviewed_by``. A reviewer sets ``decision``
                 to ``accept`` or ``reject`` (empty: not reviewed yet); only accepted rows are applied, by
                 ``scripts/verify_catalog.py apply`` and by ``scripts/import_seed.py`` after every rebuild, so a
                 re-import from the survey never brings a corrected value back.

Fields and where they live: ``title``, ``year``, ``arxiv_id``, ``venue``, ``url`` in ``works.csv``; ``authors``
(BibTeX ``and`` list) in ``authors.csv``.

The app reads ``facts.csv`` for one thing only: the Work page says what a work's facts rest on
(``provenance``), which fields were read in an independent source, or that none was.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from papers.authors import fold, is_truncated, split_authors
from papers.csvio import read_csv_rows
from papers.venues import arxiv_year, rule_year, venue_year
from taxonomy import DataError

VERIFICATION_DIR = Path(__file__).resolve().parent / "data" / "verification"
WORK_FIELDS = ("title", "year", "arxiv_id", "venue", "url")
FIELDS = WORK_FIELDS + ("authors",)
CHECKED_BY = ("script", "search", "person")
DECISIONS = ("", "accept", "reject")
FACT_COLUMNS = ("key", "field", "value", "source", "checked_by", "date")
CHANGE_COLUMNS = ("key", "field", "current", "proposed", "source", "checked_by", "decision", "reviewed_by")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_ARXIV_ID = re.compile(r"\d{4}\.\d{4,5}")


@dataclass(frozen=True)
class Fact:
    key: str
    field: str
    value: str
    source: str
    checked_by: str
    date: str


@dataclass(frozen=True)
class Change:
    key: str
    field: str
    current: str
    proposed: str
    source: str
    checked_by: str
    decision: str = ""
    reviewed_by: str = ""

    def row(self) -> dict[str, str]:
        return {c: getattr(self, c) for c in CHANGE_COLUMNS}


def _check_field(path: Path, line: int, field: str, value: str) -> None:
    if field not in FIELDS:
        raise DataError(path, f"field must be one of {', '.join(FIELDS)}, not '{field}'", row=line, field="field")
    if field == "arxiv_id" and value and not _ARXIV_ID.fullmatch(value):
        raise DataError(path, f"'{value}' is not an arXiv id (NNNN.NNNNN)", row=line, field="value")
    if field == "year" and not re.fullmatch(r"\d{4}", value):
        raise DataError(path, f"'{value}' is not a year", row=line, field="value")


def load_facts(path: Path, keys: set[str] | None = None) -> list[Fact]:
    """Read ``facts.csv`` strictly: known field, known ``checked_by``, a source, an ISO date, a known key."""
    _, rows = read_csv_rows(path)
    facts: list[Fact] = []
    seen: set[tuple[str, str]] = set()
    for line, row in rows:
        fact = Fact(**{c: " ".join(row.get(c, "").split()) for c in FACT_COLUMNS})
        if keys is not None and fact.key not in keys:
            raise DataError(path, f"unknown work '{fact.key}'", row=line, field="key")
        _check_field(path, line, fact.field, fact.value)
        if not fact.value and fact.field != "arxiv_id":
            raise DataError(path, "empty value", row=line, field="value")
        if fact.checked_by not in CHECKED_BY:
            raise DataError(path, f"checked_by must be one of {', '.join(CHECKED_BY)}, not '{fact.checked_by}'", row=line, field="checked_by")
        if not fact.source:
            raise DataError(path, "a fact needs its source", row=line, field="source")
        if not _DATE.fullmatch(fact.date):
            raise DataError(path, f"date must be YYYY-MM-DD, not '{fact.date}'", row=line, field="date")
        if (fact.key, fact.field) in seen:
            raise DataError(path, f"second fact for {fact.key}/{fact.field}", row=line, field="field")
        seen.add((fact.key, fact.field))
        facts.append(fact)
    return facts


def load_changes(path: Path) -> list[Change]:
    if not path.exists():
        return []
    _, rows = read_csv_rows(path)
    changes = []
    for line, row in rows:
        change = Change(**{c: row.get(c, "") for c in CHANGE_COLUMNS})
        _check_field(path, line, change.field, change.proposed)
        if change.decision not in DECISIONS:
            raise DataError(path, f"decision must be 'accept', 'reject' or empty, not '{change.decision}'", row=line, field="decision")
        if change.decision and not change.reviewed_by:
            raise DataError(path, "a decision needs reviewed_by", row=line, field="reviewed_by")
        changes.append(change)
    return changes


def write_rows(path: Path, columns: tuple[str, ...], rows: list[dict[str, str]]) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")


def same_value(field: str, current: str, found: str) -> bool:
    """Whether the catalog's value already says what the source says (authors: same names in order,
    ignoring accents and punctuation, each a person or an organisation alike; a list cut with "et al."
    never equals a complete one)."""
    if field == "authors":
        if is_truncated(current) != is_truncated(found):
            return False

        def names(text: str) -> list[tuple[str, bool]]:
            return [(fold(p.display), bool(p.literal)) for p in split_authors(text)]

        return names(current) == names(found)
    return current.strip() == found.strip()


def same_people(ours: str, found: str) -> bool:
    """Looser than ``same_value``: the same number of people, in order, with the same family name and
    given-name initial ("Zora Z. Wang" ~ "Zora Zhiruo Wang", "Cote" ~ "Côté"); a cut list never agrees."""
    if is_truncated(ours) != is_truncated(found):
        return False
    a, b = split_authors(ours), split_authors(found)

    def key(p) -> tuple[str, str]:
        return (fold(p.literal), "") if p.literal else (fold(p.family), fold(p.given)[:1])

    return len(a) == len(b) and all(key(x) == key(y) for x, y in zip(a, b))


def _is_name(word: str) -> bool:
    """A word whose capitals carry meaning: an inner capital or an all-capital word (GoT, RFT, II, OctoNav)."""
    letters = [c for c in word if c.isalpha()]
    return any(c.isupper() for c in letters[1:])


def title_verdict(ours: str, found: str) -> str:
    """``ok`` (as printed); ``sentence-case`` (same words, only ordinary words' initial capitals differ:
    a Title Case source kept in sentence case); ``name-casing`` (a name or acronym lost its capitals:
    "Octonav", "rft", "ii"); ``words`` (the words themselves differ)."""
    if ours == found:
        return "ok"
    split = lambda t: re.sub(r"[^\w²]+", " ", t).split()  # noqa: E731
    a, b = split(ours), split(found)
    if [w.lower() for w in a] != [w.lower() for w in b]:
        return "words"
    return "name-casing" if any(x != y and _is_name(y) for x, y in zip(a, b)) else "sentence-case"


_PLACEMENT = re.compile(
    r"[,;]?\s*(?:(?:and|is|was|it is)\s+)?(?:cited|listed|grouped|placed|named|referenced|mentioned|used)\s+"
    r"(?:by|in|among|alongside|as|when|where|with|for|under)\b.*$|\bthe survey\b.*$", re.I)
_STOP = set("a an the of for and in with via to on by from its their that this which as at or into over than is are "
            "be it work paper model models method methods approach study using use uses".split())


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP and len(w) > 2}


def vague_summary(title: str, summary: str) -> str:
    """Why a summary says little about the work itself, or ``""``.

    ``placement``: it spends its second half on where the survey cites the work and, without that
    clause, adds fewer than 8 content words to the title. ``restates title``: no placement clause, but
    it adds fewer than 6 content words to the title. A heuristic to find candidates for rewriting."""
    core = _PLACEMENT.sub("", summary)
    new_words = _content_words(core) - _content_words(title)
    if core != summary and len(new_words) < 8:
        return "placement"
    if len(new_words) < 6:
        return "restates title"
    return ""


def ruled_by_year_rule(key: str, current: dict[tuple[str, str], str]) -> bool:
    """Whether the year rule (``papers.venues``) dates this work from its venue or arXiv id, so that a
    ``year`` fact is a check of the rule's input, never a change of its own."""
    return rule_year(current.get((key, "venue"), ""), current.get((key, "arxiv_id"), "")) is not None


def propose(facts: list[Fact], current: dict[tuple[str, str], str], previous: list[Change]) -> list[Change]:
    """The changes the facts call for, in the facts' order. A reviewer's earlier decision on the very
    same proposal is kept; a proposal the data already carries (applied) stays listed with its decision.
    A year fact is proposed only for a work the year rule leaves to its source (no venue year, no arXiv id)."""
    decided = {(c.key, c.field, c.proposed): c for c in previous}
    out: list[Change] = []
    for f in facts:
        if not f.value:
            continue
        cur = current.get((f.key, f.field), "")
        old = decided.get((f.key, f.field, f.value))
        if old is not None:
            out.append(old)
        elif f.field == "year" and ruled_by_year_rule(f.key, current):
            continue
        elif not same_value(f.field, cur, f.value):
            out.append(Change(f.key, f.field, cur, f.value, f.source, f.checked_by))
    return out


def accepted(changes: list[Change]) -> dict[tuple[str, str], Change]:
    return {(c.key, c.field): c for c in changes if c.decision == "accept"}


def apply_to_works(rows: list[dict[str, str]], changes: list[Change]) -> int:
    """Write accepted work-field changes into ``works.csv`` rows (in place); the number of cells changed."""
    acc = accepted(changes)
    n = 0
    for r in rows:
        for field in WORK_FIELDS:
            c = acc.get((r["key"], field))
            if c is not None and r[field] != c.proposed:
                r[field] = c.proposed
                n += 1
            if field == "arxiv_id" and c is not None and not r["url"]:
                r["url"] = f"https://arxiv.org/abs/{c.proposed}"
    return n


def apply_year_rule(rows: list[dict[str, str]]) -> int:
    """Date every ``works.csv`` row by the year rule (``papers.venues``), in place: ``year_arxiv`` from the
    arXiv id, ``year`` from the venue (published) or the arXiv id (unpublished) where the rule gives one;
    the number of cells changed. Run after the accepted changes, so a verified venue sets the year."""
    n = 0
    for r in rows:
        first = arxiv_year(r.get("arxiv_id", ""))
        values = {"year_arxiv": str(first) if first else ""}
        ruled = rule_year(r.get("venue", ""), r.get("arxiv_id", ""))
        if ruled is not None:
            values["year"] = str(ruled)
        for field, value in values.items():
            if r.get(field, "") != value:
                r[field] = value
                n += 1
    return n


def apply_to_authors(rows: list[dict[str, str]], changes: list[Change]) -> int:
    """Write accepted author lists into ``authors.csv`` rows (in place): the list, its count, no
    truncation, the new source, check ``verified``."""
    acc = accepted(changes)
    n = 0
    for r in rows:
        c = acc.get((r["key"], "authors"))
        if c is None or r["authors"] == c.proposed:
            continue
        r.update(authors=c.proposed, n_authors=str(len(split_authors(c.proposed))),
                 truncated="yes" if is_truncated(c.proposed) else "", source=c.source, check="verified",
                 second_source="")
        n += 1
    return n


_FIELD_WORDS = {"title": "title", "authors": "authors", "year": "year", "arxiv_id": "arXiv id", "venue": "venue",
                "url": "URL"}
_PAGE_KINDS = {"Web/blog": "a product page or blog post", "SSRN": "an SSRN working-paper page",
               "GitHub": "a code repository", "Hugging Face": "a model card", "arXiv": "an arXiv record"}


@lru_cache(maxsize=1)
def _checked_fields() -> dict[str, tuple[str, ...]]:
    path = VERIFICATION_DIR / "facts.csv"
    if not path.exists():
        return {}
    out: dict[str, list[str]] = {}
    for f in load_facts(path):
        out.setdefault(f.key, []).append(f.field)
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}


def provenance(key: str, venue: str, url: str, survey_refs: tuple[str, ...]) -> str:
    """What a survey work's facts rest on, in a sentence or two for its page: the fields read in a source
    independent of the survey, and those that are only the survey's reference-list entry, with the kind
    of page that entry links (a product page, a blog post, an SSRN page) where that page was not read."""
    checked = set(_checked_fields().get(key, ()))
    if "arxiv_id" in checked or ("venue" in checked and venue_year(venue) is not None):
        checked.add("year")  # the year rule dates it from the checked arXiv id or venue
    order = ("title", "authors", "year", "venue", "arxiv_id")
    done = [_FIELD_WORDS[f] for f in order if f in checked]
    missing = [_FIELD_WORDS[f] for f in ("title", "authors", "year", "venue") if f not in checked]
    ref = f" (ref. {', '.join(survey_refs)})" if survey_refs else ""
    page = f"{_PAGE_KINDS.get(venue, 'a web page')} {url}".strip()
    parts = []
    if done:
        parts.append("Checked against sources independent of the survey (the paper's record, its venue or its "
                     f"authors' page): {', '.join(done)}.")
    if missing:
        lead = "Not checked against any source independent of the survey" if not done else "Not checked"
        parts.append(f"{lead}: {', '.join(missing)}, as the survey's reference-list entry{ref} gives them; the page "
                     f"it points to, {page}, could not be read with the sources used for the check.")
    return " ".join(parts)

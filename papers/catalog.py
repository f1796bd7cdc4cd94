"""The catalog: the survey's works, their summaries, the survey tables and the taxonomy, validated.

    cat = Catalog.load()
    cat.get("search-r1").title         # lookups by key, arXiv id or alias: cat.resolve("2503.09516")
    cat.placements("search-r1", expand=True)
    cat.table_rows_for_node("code")
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

from pydantic import ValidationError

from papers.csvio import iter_split, read_csv_rows
from papers.schema import KINDS, LIST_FIELDS, Work
from papers.tables import SurveyTable, load_tables
from taxonomy import AtlasGraph, DataError, Taxonomy

DATA_DIR = Path(__file__).resolve().parent / "data"
SUMMARY_WORDS = (8, 45)  # bounds enforced at load; the style target is 15-35 words


def printable(value: str, limit: int = 80) -> str:
    """``value`` safe to echo in a message: control characters spelled out (no terminal escapes),
    cut to ``limit`` characters."""
    text = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in str(value)[: limit + 1])
    return text if len(text) <= limit and len(str(value)) <= limit else text[:limit] + f"... ({len(str(value))} characters)"


class UnknownKeyError(KeyError):
    """An unknown work key or node id; carries close matches for a 'did you mean' message."""

    def __init__(self, what: str, value: str, suggestions: list[str]):
        self.what, self.value, self.suggestions = what, value, suggestions
        hint = f" (did you mean: {', '.join(suggestions)}?)" if suggestions else ""
        super().__init__(f"unknown {what} '{printable(value)}'{hint}")

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return self.args[0]


def _work_from_row(path: Path, line: int, row: dict[str, str], origin: str = "survey") -> Work:
    data: dict[str, object] = {k: v.strip() for k, v in row.items()}
    for f in LIST_FIELDS:
        if f in data:
            data[f] = tuple(iter_split(str(data[f])))
    for name in ("year", "year_arxiv"):
        year = str(data.get(name, ""))
        if year == "":
            data[name] = None
        elif not re.fullmatch(r"\d{4}", year):
            raise DataError(path, f"'{year}' is not a year", row=line, field=name)
    data["origin"] = origin
    try:
        return Work(**data)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or None
        raise DataError(path, err["msg"], row=line, field=field) from None


def load_works(path: Path, taxonomy: Taxonomy, origin: str = "survey") -> dict[str, Work]:
    _, rows = read_csv_rows(path)
    works: dict[str, Work] = {}
    for line, row in rows:
        if not row.get("title", "").strip():
            raise DataError(path, "missing title", row=line, field="title")
        work = _work_from_row(path, line, row, origin)
        if work.key in works:
            raise DataError(path, f"duplicate key '{work.key}'", row=line, field="key")
        for node_id in work.nodes:
            if node_id not in taxonomy:
                near = taxonomy.suggest(node_id)
                hint = f" (did you mean: {', '.join(near)}?)" if near else ""
                raise DataError(path, f"unknown node '{node_id}'{hint}", row=line, field="nodes")
        works[work.key] = work
    return works


SUMMARY_CHECKS = ("paper", "none")
"""How a summary was checked: ``paper`` = read against the work's own abstract or page (``checked_source``
names it), ``none`` = written from the title and the survey's citing sentences, never compared with the
paper. The confidence mark follows from it: ``high`` exactly when ``checked`` is ``paper``."""


def load_summaries(path: Path, works: dict[str, Work]) -> dict[str, dict]:
    """Read summaries.csv (key, summary, keywords, confidence, checked, checked_source) and check every
    work has one; ``confidence`` must say how the summary was checked (``SUMMARY_CHECKS``)."""
    _, rows = read_csv_rows(path)
    out: dict[str, dict] = {}
    seen_text: dict[str, str] = {}
    for line, row in rows:
        key, text = row.get("key", "").strip(), " ".join(row.get("summary", "").split())
        if key not in works:
            raise DataError(path, f"summary for unknown work '{key}'", row=line, field="key")
        if key in out:
            raise DataError(path, f"second summary for '{key}'", row=line, field="key")
        n = len(text.split())
        if not SUMMARY_WORDS[0] <= n <= SUMMARY_WORDS[1]:
            raise DataError(path, f"summary has {n} words (allowed {SUMMARY_WORDS[0]}-{SUMMARY_WORDS[1]})", row=line, field="summary")
        if text.lower() in seen_text:
            raise DataError(path, f"summary duplicates the one of '{seen_text[text.lower()]}'", row=line, field="summary")
        conf = row.get("confidence", "").strip()
        if conf not in ("high", "low"):
            raise DataError(path, f"confidence must be 'high' or 'low', not '{conf}'", row=line, field="confidence")
        checked, source = row.get("checked", "none").strip(), row.get("checked_source", "").strip()
        if checked not in SUMMARY_CHECKS:
            raise DataError(path, f"checked must be 'paper' or 'none', not '{checked}'", row=line, field="checked")
        if checked == "paper" and not source:
            raise DataError(path, "a summary checked against the paper names where (checked_source)", row=line, field="checked_source")
        if (conf == "high") != (checked == "paper"):
            raise DataError(path, f"confidence '{conf}' but checked '{checked}': high means checked against the paper",
                            row=line, field="confidence")
        keywords = tuple(iter_split(row.get("keywords", "")))
        if len(keywords) > 8:
            raise DataError(path, f"{len(keywords)} keywords (at most 8)", row=line, field="keywords")
        seen_text[text.lower()] = key
        out[key] = {"summary": text, "keywords": keywords, "summary_confidence": conf}
    missing = [k for k in works if k not in out]
    if missing:
        raise DataError(path, f"{len(missing)} works have no summary, e.g. '{missing[0]}'", field="summary")
    return out


AUTHOR_CHECKS = ("verified", "agrees", "first-author", "differs", "single-source", "unknown")
"""``verified``: read name by name from a source independent of the survey (papers.verification);
the others: the survey's list compared with a second reference list (scripts/import_authors.py)."""


def load_authors(path: Path, works: dict[str, Work]) -> dict[str, dict]:
    """Read authors.csv (key, authors, n_authors, truncated, source, check, second_source).

    Optional: without the file, survey works have no authors. Every row must name a known work
    once; ``n_authors`` must equal the names in ``authors``.
    """
    from papers.authors import split_authors

    if not path.exists():
        return {}
    _, rows = read_csv_rows(path)
    out: dict[str, dict] = {}
    for line, row in rows:
        key = row.get("key", "").strip()
        if key not in works:
            raise DataError(path, f"authors for unknown work '{key}'", row=line, field="key")
        if key in out:
            raise DataError(path, f"second row for '{key}'", row=line, field="key")
        check = row.get("check", "").strip()
        if check not in AUTHOR_CHECKS:
            raise DataError(path, f"check must be one of {', '.join(AUTHOR_CHECKS)}, not '{check}'", row=line, field="check")
        authors = " ".join(row.get("authors", "").split())
        n = row.get("n_authors", "").strip()
        if authors and n != str(len(split_authors(authors))):
            raise DataError(path, f"n_authors is '{n}' but authors lists {len(split_authors(authors))}", row=line, field="n_authors")
        if bool(authors) == (check == "unknown"):
            raise DataError(path, "authors must be empty exactly when check is 'unknown'", row=line, field="authors")
        second = row.get("second_source", "").strip()
        note = row.get("source", "").strip() + (f"; checked against {second}" if second else "")
        out[key] = {"authors": authors, "authors_source": note, "authors_check": check}
    return out


class Catalog:
    """Works + taxonomy + survey tables. Immutable after load; user works are merged in by ``with_works``."""

    def __init__(self, works: dict[str, Work], taxonomy: Taxonomy, tables: dict[str, SurveyTable],
                 attention: dict[str, str] | None = None):
        self.works = works
        self.taxonomy = taxonomy
        self.tables = tables
        # user works that need the user's attention: key -> what is wrong (see with_works)
        self.attention: dict[str, str] = dict(attention or {})

    @classmethod
    def load(cls, data_dir: Path | None = None, taxonomy: Taxonomy | None = None) -> "Catalog":
        data_dir = Path(data_dir or DATA_DIR)
        taxonomy = taxonomy or Taxonomy.load()
        works = load_works(data_dir / "works.csv", taxonomy)
        summaries = load_summaries(data_dir / "summaries.csv", works)
        works = {k: w.model_copy(update=summaries[k]) for k, w in works.items()}
        authors = load_authors(data_dir / "authors.csv", works)
        works = {k: w.model_copy(update=authors[k]) if k in authors else w for k, w in works.items()}
        tables = load_tables(data_dir / "tables")
        for t in tables.values():
            if "work_key" in t.frame.columns:
                for line, cell in zip(t.frame.attrs["lines"], t.frame["work_key"]):
                    for key in iter_split(cell):
                        if key not in works:
                            raise DataError(data_dir / "tables" / f"{t.name}.csv", f"unknown work '{key}'", row=line, field="work_key")
        return cls(works, taxonomy, tables)

    def with_works(self, extra: Iterable[Work], strict: bool = False) -> "Catalog":
        """A new catalog with ``extra`` works added (user works).

        A stored work must never break the explorer: one placed in a node the taxonomy lacks is
        kept with its known nodes only, and one whose key the catalog already has is left out;
        both are listed in ``attention`` (key -> what is wrong). ``strict`` raises instead.
        """
        works = dict(self.works)
        attention = dict(self.attention)
        for w in extra:
            if w.key in works:
                if strict:
                    raise ValueError(f"work key '{w.key}' already exists")
                attention[w.key] = f"its key '{w.key}' is also a survey work's key; it is left out"
                continue
            unknown = [n for n in w.nodes if n not in self.taxonomy]
            if unknown:
                if strict:
                    raise UnknownKeyError("node", unknown[0], self.taxonomy.suggest(unknown[0]))
                attention[w.key] = "placed in unknown node " + ", ".join(f"'{n}'" for n in unknown) + "; place it again"
                w = w.model_copy(update={"nodes": tuple(n for n in w.nodes if n in self.taxonomy)})
            works[w.key] = w
        return Catalog(works, self.taxonomy, self.tables, attention)

    # -- lookups ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.works)

    def __contains__(self, key: str) -> bool:
        return key in self.works

    def __iter__(self):
        return iter(self.works.values())

    @cached_property
    def _alias_index(self) -> dict[str, str]:
        idx: dict[str, str] = {}
        for w in self.works.values():
            for name in (w.name, *w.aliases):
                if name:
                    idx.setdefault(name.lower(), w.key)
        return idx

    @cached_property
    def _arxiv_index(self) -> dict[str, str]:
        return {w.arxiv_id: w.key for w in self.works.values() if w.arxiv_id}

    def get(self, key: str) -> Work:
        try:
            return self.works[key]
        except KeyError:
            raise UnknownKeyError("work key", key, self.suggest(key)) from None

    def by_arxiv(self, arxiv_id: str) -> Work | None:
        key = self._arxiv_index.get(re.sub(r"v\d+$", "", arxiv_id.strip()))
        return self.works[key] if key else None

    def by_alias(self, name: str) -> Work | None:
        key = self._alias_index.get(name.strip().lower())
        return self.works[key] if key else None

    def resolve(self, ref: str) -> Work:
        """A work from its key, arXiv id, name or alias."""
        if ref in self.works:
            return self.works[ref]
        hit = self.by_arxiv(ref) or self.by_alias(ref)
        if hit:
            return hit
        raise UnknownKeyError("work key", ref, self.suggest(ref))

    def suggest(self, text: str, n: int = 3) -> list[str]:
        if len(text) > 200:  # nothing is that long; difflib on 100 KB would take seconds
            return []
        keys = difflib.get_close_matches(text.lower(), list(self.works), n=n, cutoff=0.6)
        alias = difflib.get_close_matches(text.lower(), list(self._alias_index), n=n, cutoff=0.6)
        return list(dict.fromkeys(keys + [self._alias_index[a] for a in alias]))[:n]

    def node(self, node_id: str):
        if node_id not in self.taxonomy:
            raise UnknownKeyError("node", node_id, self.taxonomy.suggest(node_id))
        return self.taxonomy[node_id]

    # -- structure -------------------------------------------------------------------------
    @cached_property
    def graph(self) -> AtlasGraph:
        return AtlasGraph(
            self.taxonomy,
            {k: w.nodes for k, w in self.works.items()},
            {k: w.algorithms for k, w in self.works.items()},
        )

    def placements(self, key: str, expand: bool = False) -> list[str]:
        """The work's taxonomy nodes; with ``expand``, every enclosing node too."""
        work = self.get(key)
        if not expand:
            return list(work.nodes)
        out: list[str] = []
        for nid in work.nodes:
            out.extend(self.taxonomy.path(nid))
        return list(dict.fromkeys(out))

    def works_in(self, node_id: str, include_descendants: bool = True) -> list[Work]:
        self.node(node_id)
        return [self.works[k] for k in self.graph.works_of(node_id, include_descendants)]

    def table_rows_for_work(self, key: str) -> dict[str, "object"]:
        self.get(key)
        return {n: rows for n, t in self.tables.items() if len(rows := t.rows_for({key}))}

    def table_rows_for_node(self, node_id: str) -> dict[str, "object"]:
        keys = {w.key for w in self.works_in(node_id)}
        return {n: rows for n, t in self.tables.items() if len(rows := t.rows_for(keys))}

    def select(
        self,
        node: str | None = None,
        kind: str | None = None,
        year_from: int | None = None,
        year_to: int | None = None,
        include_descendants: bool = True,
    ) -> list[Work]:
        """Works matching every given filter, in catalog order."""
        if kind is not None and kind not in KINDS:
            near = difflib.get_close_matches(kind, KINDS, n=3)
            raise UnknownKeyError("kind", kind, near)
        pool = self.works_in(node, include_descendants) if node else list(self.works.values())
        keys = {w.key for w in pool}
        return [
            w for w in self.works.values()
            if w.key in keys
            and (kind is None or w.kind == kind)
            and (year_from is None or (w.year is not None and w.year >= year_from))
            and (year_to is None or (w.year is not None and w.year <= year_to))
        ]

    def stats(self) -> dict[str, object]:
        return {
            "works": len(self.works),
            "nodes": len(self.taxonomy),
            "tables": len(self.tables),
            "nodes_without_description": sum(1 for n in self.taxonomy if not n.description.strip()),
            "works_without_node": sum(1 for w in self.works.values() if not w.nodes),
            "works_without_summary": sum(1 for w in self.works.values() if not w.summary),
            "summaries_low_confidence": sum(1 for w in self.works.values() if w.summary_confidence == "low"),
            "works_per_kind": {k: sum(1 for w in self.works.values() if w.kind == k) for k in KINDS},
            "nodes_per_dimension": {
                d: len(self.taxonomy.by_dimension(d))
                for d in ("capability", "task", "algorithm", "environment", "framework", "foundation")
            },
        }

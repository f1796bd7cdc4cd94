"""Read user works from BibTeX, arXiv metadata JSON lines, or a CSV with the catalog's columns.

Every reader yields ``ImportRecord``s lazily, one per entry, each either a candidate ``Work``
(``record.work``) or a skip reason (``record.error``) with its line number, so a malformed entry
never stops an import and a 100,000-line file is read in constant memory.
"""
from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from papers.csvio import iter_split
from papers.schema import KINDS, LIST_FIELDS, Work

FORMATS = ("bibtex", "arxiv-jsonl", "csv")
_ARXIV_NEW = re.compile(r"(\d{4}\.\d{4,5})(v\d+)?")
_ARXIV_OLD = re.compile(r"([a-z\-]+(\.[A-Z]{2})?/\d{7})(v\d+)?")


@dataclass
class ImportRecord:
    line: int  # 1-based line (BibTeX: the entry's first line)
    work: Work | None = None
    error: str | None = None


def detect_format(path: Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in (".bib", ".bibtex"):
        return "bibtex"
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "arxiv-jsonl"
    if suffix == ".csv":
        return "csv"
    raise ValueError(f"{path}: cannot tell the format from the extension '{suffix}' (use .bib, .jsonl or .csv, or pass a format)")


def normalise_arxiv_id(text: str) -> str:
    """'arXiv:2503.09516v2' / 'https://arxiv.org/abs/2503.09516' -> '2503.09516' ('' if none)."""
    text = (text or "").strip()
    m = _ARXIV_NEW.search(text) or _ARXIV_OLD.search(text)
    return m.group(1) if m else ""


def normalise_title(title: str) -> str:
    """A title reduced to lower-case words, for duplicate detection."""
    return " ".join(re.findall(r"[a-z0-9]+", (title or "").lower()))


def slug(text: str, max_len: int = 60) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    out = "-".join(words)[:max_len].strip("-")
    return out or "work"


def _year_from_arxiv(arxiv_id: str) -> int | None:
    m = re.match(r"(\d{2})(\d{2})\.", arxiv_id)
    return 2000 + int(m.group(1)) if m else None


def _make_work(line: int, data: dict) -> ImportRecord:
    title = " ".join(str(data.get("title", "")).split())
    if not title:
        return ImportRecord(line, error="missing title")
    year = data.get("year")
    if isinstance(year, str):
        year = year.strip()
        if not year:
            year = None
        elif not re.fullmatch(r"\d{4}", year):
            return ImportRecord(line, error=f"'{year}' is not a year (field 'year')")
    data = {**data, "title": title, "year": int(year) if year is not None else None, "origin": "user"}
    data.setdefault("title_original", title)
    if not data.get("key"):
        data["key"] = f"arxiv-{data['arxiv_id']}" if data.get("arxiv_id") else f"{slug(title)}-{data['year'] or 'nd'}"
    try:
        return ImportRecord(line, work=Work(**data))
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        return ImportRecord(line, error=f"{err['msg']} (field '{field}')")


def read_bibtex(path: Path) -> Iterator[ImportRecord]:
    from papers.export import parse_bibtex_blocks

    for line, entry, error in parse_bibtex_blocks(Path(path).read_text(encoding="utf-8", errors="replace")):
        if error:
            yield ImportRecord(line, error=error)
            continue
        arxiv_id = normalise_arxiv_id(entry.get("eprint", "") or entry.get("arxiv", "")) or (
            normalise_arxiv_id(entry.get("url", "")) if "arxiv.org" in entry.get("url", "") else "")
        venue = entry.get("booktitle") or entry.get("journal") or entry.get("howpublished") or ("arXiv" if arxiv_id else "")
        yield _make_work(line, {
            "key": re.sub(r"[^A-Za-z0-9._:-]", "-", entry["key"]).strip("-"),
            "title": entry.get("title", ""), "year": entry.get("year", ""), "venue": venue,
            "arxiv_id": arxiv_id, "url": entry.get("url", "") or (f"https://arxiv.org/abs/{arxiv_id}" if arxiv_id else ""),
            "code_url": entry.get("code", ""), "abstract": entry.get("abstract", ""),
            "authors": entry.get("author", ""),
            "keywords": tuple(k.strip() for k in re.split(r"[;,]", entry.get("keywords", "")) if k.strip())[:8],
        })


def read_arxiv_jsonl(path: Path) -> Iterator[ImportRecord]:
    """The public arXiv metadata snapshot's format: id, title, abstract, authors, categories, update_date."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                yield ImportRecord(line_no, error=f"invalid JSON ({e.msg} at column {e.colno})")
                continue
            if not isinstance(rec, dict):
                yield ImportRecord(line_no, error="expected a JSON object")
                continue
            arxiv_id = normalise_arxiv_id(str(rec.get("id", "")))
            if not arxiv_id:
                yield ImportRecord(line_no, error=f"missing or malformed arXiv id (field 'id': {str(rec.get('id'))[:40]!r})")
                continue
            date = str(rec.get("update_date", ""))
            year = _year_from_arxiv(arxiv_id) or (int(date[:4]) if re.match(r"\d{4}", date) else None)
            yield _make_work(line_no, {
                "arxiv_id": arxiv_id, "title": rec.get("title", ""), "year": str(year) if year else "",
                "venue": "arXiv", "url": f"https://arxiv.org/abs/{arxiv_id}",
                "abstract": " ".join(str(rec.get("abstract", "")).split()),
                "authors": str(rec.get("authors", ""))[:2000],
                "tags": tuple(f"arxiv:{c}" for c in str(rec.get("categories", "")).split())[:8],
            })


def read_csv_works(path: Path) -> Iterator[ImportRecord]:
    """A CSV with the catalog's columns (``title`` required; ``key``, ``nodes`` ... optional)."""
    allowed = set(Work.model_fields) - {"origin", "summary_confidence"}
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        reader = csv.reader(f, strict=True)
        try:
            header = [h.strip() for h in next(reader)]
        except (StopIteration, csv.Error):
            yield ImportRecord(1, error="empty file or unreadable header")
            return
        unknown = [h for h in header if h not in allowed]
        if unknown or "title" not in header:
            yield ImportRecord(1, error=f"header: unknown columns {unknown}" if unknown else "header: no 'title' column")
            return
        while True:
            start = reader.line_num + 1
            try:
                values = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                yield ImportRecord(start, error=f"broken CSV quoting ({e})")
                return  # the reader cannot resynchronise after a quoting error
            if not values:
                continue
            if len(values) != len(header):
                yield ImportRecord(start, error=f"expected {len(header)} fields, found {len(values)}")
                continue
            data: dict = dict(zip(header, (v.strip() for v in values)))
            for fld in LIST_FIELDS:
                if fld in data:
                    data[fld] = tuple(iter_split(data[fld]))
            if data.get("kind", "") == "":
                data.pop("kind", None)
            elif data["kind"] not in KINDS:
                yield ImportRecord(start, error=f"unknown kind '{data['kind']}' (field 'kind')")
                continue
            if data.get("arxiv_id"):
                data["arxiv_id"] = normalise_arxiv_id(data["arxiv_id"]) or data["arxiv_id"]
            yield _make_work(start, data)


READERS = {"bibtex": read_bibtex, "arxiv-jsonl": read_arxiv_jsonl, "csv": read_csv_works}


def read_records(path: Path, fmt: str | None = None) -> Iterator[ImportRecord]:
    fmt = fmt or detect_format(path)
    if fmt not in READERS:
        raise ValueError(f"unknown import format '{fmt}' (choose from {', '.join(FORMATS)})")
    return READERS[fmt](Path(path))

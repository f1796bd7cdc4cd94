"""Read user works from BibTeX, arXiv metadata JSON lines, or a CSV with the catalog's columns.

Every reader yields ``ImportRecord``s lazily, one per entry, each either a candidate ``Work``
(``record.work``) or a skip reason (``record.error``) with its line number, so a malformed entry
never stops an import and a 100,000-line file is read in constant memory.
"""
from __future__ import annotations

import codecs
import csv
import datetime
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from papers.csvio import iter_split
from papers.schema import KINDS, LIST_FIELDS, Work

FORMATS = ("bibtex", "arxiv-jsonl", "csv")
_ARXIV_NEW = re.compile(r"(?<![\d.])((\d{2})(\d{2})\.(\d{4,5}))(v\d+)?(?!\d)")
_ARXIV_OLD = re.compile(r"([a-z\-]+(\.[A-Z]{2})?/(\d{2})(\d{2})\d{3})(v\d+)?(?!\d)")
# C0/C1 control characters (tab and newline aside): an imported title must not drive a terminal
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# a CSV cell our own export neutralised for spreadsheets ('=..., '+..., see papers.export.csv_safe)
_NEUTRALISED = re.compile(r"^'(?=[=+\-@\t\r])")


#: the longest text each field of an imported work may hold, in characters (others: ``DEFAULT_MAX_CHARS``;
#: list fields: ``_MAX_ITEMS`` items of at most ``_MAX_ITEM_CHARS``). An abstract typed into the Import form
#: can be long (150 KB and more); a 50 MB title made every later search take over a minute.
FIELD_MAX_CHARS = {"title": 1000, "title_original": 1000, "name": 1000, "abstract": 256 * 1024,
                   "authors": 100_000, "summary": 20_000}
DEFAULT_MAX_CHARS = 2000
_MAX_ITEMS = 64
_MAX_ITEM_CHARS = 300
#: what the CSV reader reads of one field or one physical line at most; a longer one is skipped to its end
#: (the rows after it are read), so memory stays bounded whatever the file holds
CSV_READ_LIMIT = 16 * 2**20


def field_problem(name: str, value: object) -> str | None:
    """Why ``value`` is too large for field ``name``, or None."""
    if isinstance(value, str):
        limit = FIELD_MAX_CHARS.get(name, DEFAULT_MAX_CHARS)
        if len(value) > limit:
            return f"field '{name}' is {len(value):,} characters long; at most {limit:,} are allowed"
    elif isinstance(value, (tuple, list)):
        if len(value) > _MAX_ITEMS:
            return f"field '{name}' has {len(value):,} items; at most {_MAX_ITEMS} are allowed"
        for item in value:
            if isinstance(item, str) and len(item) > _MAX_ITEM_CHARS:
                return (f"field '{name}' has an item {len(item):,} characters long; at most {_MAX_ITEM_CHARS} "
                        "are allowed")
    return None


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


def _plausible_new_id(yy: str, mm: str, number: str) -> bool:
    """New-style ids began in April 2007 (YYMM.NNNN), five digits from January 2015 (YYMM.NNNNN)."""
    year, month = 2000 + int(yy), int(mm)
    if not 1 <= month <= 12 or (year, month) < (2007, 4) or year > datetime.date.today().year + 1:
        return False
    return len(number) == (5 if (year, month) >= (2015, 1) else 4)


def _plausible_old_id(yy: str, mm: str) -> bool:
    """Old-style ids (archive/YYMMNNN) ran from August 1991 to March 2007."""
    year = 1900 + int(yy) if int(yy) >= 91 else 2000 + int(yy)
    return 1 <= int(mm) <= 12 and (1991, 8) <= (year, int(mm)) <= (2007, 3)


def normalise_arxiv_id(text: str) -> str:
    """'arXiv:2503.09516v2' / 'https://arxiv.org/abs/2503.09516' -> '2503.09516' ('' if none).

    An id whose date part cannot exist (month 13, 1999 in the new scheme, the wrong number of
    digits for its month) is no id: '' rather than a work dated 2099.
    """
    text = (text or "").strip()
    m = _ARXIV_NEW.search(text)
    if m and _plausible_new_id(m.group(2), m.group(3), m.group(4)):
        return m.group(1)
    m = _ARXIV_OLD.search(text)
    if m and _plausible_old_id(m.group(3), m.group(4)):
        return m.group(1)
    return ""


def normalise_title(title: str) -> str:
    """A title reduced to lower-case words, for duplicate detection."""
    return " ".join(re.findall(r"[a-z0-9]+", (title or "").lower()))


def slug(text: str, max_len: int = 60) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    out = "-".join(words)[:max_len].strip("-")
    return out or "work"


def _year_from_arxiv(arxiv_id: str) -> int | None:
    m = re.match(r"(\d{2})\d{2}\.", arxiv_id)
    if m:
        return 2000 + int(m.group(1))
    m = re.search(r"/(\d{2})\d{5}$", arxiv_id)
    if m:
        return (1900 if int(m.group(1)) >= 91 else 2000) + int(m.group(1))
    return None


def _type_name(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    return type(value).__name__


def _text_fields(rec: dict, names: tuple[str, ...]) -> tuple[dict[str, str], str | None]:
    """The named JSON fields as text (absent or null: ''), or the first one that is not text."""
    out = {}
    for name in names:
        value = rec.get(name)
        if value is None:
            out[name] = ""
        elif isinstance(value, str):
            out[name] = value
        else:
            return out, f"field '{name}' must be text, not {_type_name(value)}"
    return out, None


def _clean_text(value: object) -> object:
    if isinstance(value, str):
        return _CONTROL.sub("", value)
    if isinstance(value, tuple):
        return tuple(_CONTROL.sub("", v) if isinstance(v, str) else v for v in value)
    return value


def _make_work(line: int, data: dict) -> ImportRecord:
    for name, value in data.items():
        problem = field_problem(name, value)
        if problem:
            return ImportRecord(line, error=problem)
    data = {k: _clean_text(v) for k, v in data.items()}
    title = data.get("title")
    if title is not None and not isinstance(title, str):
        return ImportRecord(line, error=f"field 'title' must be text, not {_type_name(title)}")
    title = " ".join((title or "").split())
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
        # an old-style id (math.GT/0309136) has a '/', which a key may not: arxiv-math.GT-0309136
        data["key"] = (f"arxiv-{data['arxiv_id'].replace('/', '-')}" if data.get("arxiv_id")
                       else f"{slug(title)}-{data['year'] or 'nd'}")
    try:
        return ImportRecord(line, work=Work(**data))
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        return ImportRecord(line, error=f"{err['msg']} (field '{field}')")


def text_encoding(encoding: str = "utf-8") -> str:
    """The codec to read with: UTF-8 accepts (and drops) the byte-order mark spreadsheets write."""
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise ValueError(f"unknown encoding '{encoding}' (e.g. utf-8, latin-1, cp1252)") from None
    return "utf-8-sig" if name in ("utf-8", "utf-8-sig") else name


def read_bibtex(path: Path, encoding: str = "utf-8") -> Iterator[ImportRecord]:
    from papers.export import parse_bibtex_blocks

    with open(path, encoding=text_encoding(encoding)) as f:
        text = f.read()
    for line, entry, error in parse_bibtex_blocks(text):
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


def read_arxiv_jsonl(path: Path, encoding: str = "utf-8") -> Iterator[ImportRecord]:
    """The public arXiv metadata snapshot's format: id, title, abstract, authors, categories, update_date."""
    with open(path, encoding=text_encoding(encoding), newline="\n") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                yield ImportRecord(line_no, error=f"invalid JSON ({e.msg} at column {e.colno})")
                continue
            except RecursionError:  # json's C parser refuses nesting deeper than the recursion limit
                yield ImportRecord(line_no, error="invalid JSON (nested too deeply)")
                continue
            except ValueError as e:  # e.g. a number too long to convert
                yield ImportRecord(line_no, error=f"invalid JSON ({str(e)[:120]})")
                continue
            if not isinstance(rec, dict):
                yield ImportRecord(line_no, error="expected a JSON object")
                continue
            if "title" in rec and rec["title"] is not None and not isinstance(rec["title"], str):
                yield ImportRecord(line_no, error=f"field 'title' must be text, not {_type_name(rec['title'])}")
                continue
            text, problem = _text_fields(rec, ("id", "abstract", "authors", "categories", "update_date"))
            if problem:
                yield ImportRecord(line_no, error=problem)
                continue
            arxiv_id = normalise_arxiv_id(text["id"])
            if not arxiv_id:
                yield ImportRecord(line_no, error=f"missing or malformed arXiv id (field 'id': {text['id'][:40]!r})")
                continue
            date = text["update_date"]
            year = _year_from_arxiv(arxiv_id) or (int(date[:4]) if re.match(r"\d{4}", date) else None)
            yield _make_work(line_no, {
                "arxiv_id": arxiv_id, "title": rec.get("title") or "", "year": str(year) if year else "",
                "venue": "arXiv", "url": f"https://arxiv.org/abs/{arxiv_id}",
                "abstract": " ".join(text["abstract"].split()),
                "authors": text["authors"][:2000],
                "tags": tuple(f"arxiv:{c}" for c in text["categories"].split())[:8],
            })


class _LineTooLong(Exception):
    pass


class _Lines:
    """The physical lines of a CSV file for ``csv.reader``, each at most ``CSV_READ_LIMIT`` characters (a
    longer one raises ``_LineTooLong`` once its rest is skipped); counts lines, and keeps the current
    record's lines and quote count, so a record that cannot be read can be named and skipped to its end."""

    def __init__(self, f):
        self.f = f
        self.count = 0  # physical lines read
        self.record: list[str] = []  # the current record's lines (the last one cut at the limit)
        self.quotes = 0  # '"' in the current record so far: an even count at a line's end ends the record

    def start_record(self) -> None:
        self.record, self.quotes = [], 0

    def __iter__(self):
        return self

    def __next__(self) -> str:
        line = self.f.readline(CSV_READ_LIMIT)
        if not line:
            raise StopIteration
        self.count += 1
        self.quotes += line.count('"')
        if len(line) >= CSV_READ_LIMIT and not line.endswith("\n"):
            self.record.append(line)
            while True:  # skip the rest of this line
                rest = self.f.readline(CSV_READ_LIMIT)
                self.quotes += rest.count('"')
                if not rest or rest.endswith("\n"):
                    break
            raise _LineTooLong
        self.record.append(line)
        return line

    def skip_record(self) -> None:
        """Read on to the end of the current record (quotes balanced at a line's end), without parsing it."""
        while self.quotes % 2:
            try:
                self.__next__()
            except _LineTooLong:
                continue
            except StopIteration:
                return


_CSV_CELL = re.compile(r'"(?:[^"]++|"")*+"|[^,"\r\n]*')


def _overflowing_column(text: str) -> int:
    """The 0-based column in which a record's text (cut at the limit) ends: the field that is too long."""
    pos, column = 0, 0
    while True:
        end = _CSV_CELL.match(text, pos).end()
        if end < len(text) and text[end] == ",":
            pos, column = end + 1, column + 1
            continue
        return column


def read_csv_works(path: Path, encoding: str = "utf-8") -> Iterator[ImportRecord]:
    """A CSV with the catalog's columns (``title`` required; ``key``, ``nodes`` ... optional).

    A cell that our CSV export neutralised for spreadsheets (``'=...``) is read back as it was. A field
    longer than its limit (``FIELD_MAX_CHARS``) skips its row, naming the row and the field, and the rows
    after it are imported; a broken quote stops the import there, saying so.
    """
    allowed = set(Work.model_fields) - {"origin", "summary_confidence", "authors_source", "authors_check"}  # survey-only
    if csv.field_size_limit() < CSV_READ_LIMIT:
        csv.field_size_limit(CSV_READ_LIMIT)  # csv's default (128 KiB) refused a long abstract as "broken quoting"
    with open(path, encoding=text_encoding(encoding), newline="") as f:
        lines = _Lines(f)
        reader = csv.reader(lines, strict=True)
        try:
            header = [h.strip() for h in next(reader)]
        except (StopIteration, csv.Error, _LineTooLong):
            yield ImportRecord(1, error="empty file or unreadable header")
            return
        unknown = [h for h in header if h not in allowed]
        if unknown or "title" not in header:
            yield ImportRecord(1, error=f"header: unknown columns {unknown}" if unknown else "header: no 'title' column")
            return
        while True:
            start = lines.count + 1
            lines.start_record()
            try:
                values = next(reader)
            except StopIteration:
                return
            except (csv.Error, _LineTooLong) as e:
                if isinstance(e, _LineTooLong) or "field limit" in str(e):
                    column = _overflowing_column("".join(lines.record))
                    name = header[column] if column < len(header) else f"column {column + 1}"
                    limit = FIELD_MAX_CHARS.get(name, DEFAULT_MAX_CHARS)
                    yield ImportRecord(start, error=f"field '{name}' is over {CSV_READ_LIMIT // 2**20} MiB; at most "
                                                    f"{limit:,} characters are allowed")
                    lines.skip_record()
                    continue
                yield ImportRecord(start, error=f"broken CSV quoting ({e}); the rows after it were not read")
                return  # the reader cannot resynchronise after a quoting error
            if not values:
                continue
            if len(values) != len(header):
                yield ImportRecord(start, error=f"expected {len(header)} fields, found {len(values)}")
                continue
            data: dict = dict(zip(header, (_NEUTRALISED.sub("", v.strip()) for v in values)))
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


def read_records(path: Path, fmt: str | None = None, encoding: str = "utf-8") -> Iterator[ImportRecord]:
    fmt = fmt or detect_format(path)
    if fmt not in READERS:
        raise ValueError(f"unknown import format '{fmt}' (choose from {', '.join(FORMATS)})")
    return READERS[fmt](Path(path), encoding)

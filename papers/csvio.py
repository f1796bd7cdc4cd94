"""Strict CSV reading that reports the file and line of any malformed row."""
from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from taxonomy.errors import DataError


def read_csv_rows(path: Path, skip_comment_lines: bool = False) -> tuple[str | None, list[tuple[int, dict[str, str]]]]:
    """Return (comment, [(line_number, row_dict)]) for a CSV file with a header.

    Broken quoting, a wrong number of fields, or an unreadable file raise ``DataError`` naming
    the file and the line. ``comment`` is the leading ``# ...`` line when ``skip_comment_lines``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(path, "file not found") from None
    except UnicodeDecodeError as e:
        raise DataError(path, f"not UTF-8 ({e.reason} at byte {e.start})") from None
    comment = None
    lines = text.splitlines(keepends=True)
    offset = 0
    if skip_comment_lines and lines and lines[0].startswith("#"):
        comment, offset = lines[0][1:].strip(), 1
    reader = csv.reader(iter(lines[offset:]), strict=True)
    rows: list[tuple[int, dict[str, str]]] = []
    try:
        header = next(reader)
    except StopIteration:
        raise DataError(path, "empty file (no header)") from None
    except csv.Error as e:
        raise DataError(path, f"broken CSV ({e})", row=offset + 1) from None
    while True:
        start = offset + reader.line_num + 1  # a quoted field may span lines: report where it began
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            stopped = offset + reader.line_num
            where = f"; the parser stopped at line {stopped}" if stopped != start else ""
            raise DataError(path, f"broken CSV quoting ({e}{where})", row=start) from None
        line = offset + reader.line_num
        if not values:
            continue
        if len(values) != len(header):
            raise DataError(path, f"expected {len(header)} fields, found {len(values)} (check the quoting)", row=line)
        rows.append((line, dict(zip(header, values))))
    return comment, rows


def iter_split(value: str, sep: str = ";") -> Iterator[str]:
    for part in value.split(sep):
        part = part.strip()
        if part:
            yield part

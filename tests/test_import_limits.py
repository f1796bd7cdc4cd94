"""Issue 47, item 5: import size limits. Each field is bounded with a message naming the row and the field,
the rows after a bad one are imported, and the Import form's long abstracts get through.

These failed before the fix: a CSV field over 128 KiB was "broken CSV quoting" and every later row was
dropped without a word (a 152 KB abstract from the form among them), and a 50 MB title was accepted."""
import csv
import io
import json
import re
import time

import pytest

from papers.importers import read_records

CSV_READ_LIMIT = 16 * 2**20  # papers.importers.CSV_READ_LIMIT
from papers.ingest import import_file
from papers.userstore import UserStore


def _csv(rows, header=("title", "year", "abstract")):
    buf = io.StringIO()
    w = csv.writer(buf)  # what the Import form writes
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def named_values(message: str) -> list[str]:
    """What an import error names, in order: quoted names and sizes (``'title'``, ``52,428,800``, ``16 MiB``)."""
    return re.findall(r"'[^']+'|\d[\d,]*(?: MiB)?", message)


def test_csv_long_abstract_from_the_form_is_imported(tmp_path):
    path = tmp_path / "form.csv"
    path.write_text(_csv([["A planner with a long abstract", "2026", "word " * 30_400]]))  # 152 KB
    records = list(read_records(path))
    assert [r.error for r in records] == [None]
    assert len(records[0].work.abstract) > 150_000


def test_csv_oversized_fields_skip_only_their_row(tmp_path):
    path = tmp_path / "works.csv"
    path.write_text(_csv([
        ["First good work", "2026", "short"],
        ["Abstract too long", "2026", "x" * (300 * 1024)],          # over the abstract's limit, under csv's read limit
        ["Second good work", "2026", "multi\nline\nabstract"],
        ["T" * (50 * 2**20), "2026", "a 50 MB title"],             # over the read limit: skipped to its end
        ["Third good work", "2026", 'with "quotes", commas\nand lines'],
        ["Quoted huge", "2026", "y\n" * (CSV_READ_LIMIT // 2 + 10)],  # one field over the limit, over many lines
        ["Fourth good work", "", ""],
    ]))
    t0 = time.monotonic()
    records = list(read_records(path))
    assert time.monotonic() - t0 < 30
    good = [r.work.title for r in records if r.work]
    assert good == ["First good work", "Second good work", "Third good work", "Fourth good work"]
    errors = {r.line: named_values(r.error) for r in records if r.error}
    # each error names the field, its size and the limit
    assert errors == {3: ["'abstract'", "307,200", "262,144"], 7: ["'title'", "16 MiB", "1,000"],
                      10: ["'abstract'", "16 MiB", "262,144"]}, errors


def test_a_50_mb_title_is_refused_in_every_format(tmp_path, catalog):
    title = "T" * (50 * 2**20)
    jsonl = tmp_path / "big.jsonl"
    jsonl.write_text(json.dumps({"id": "2601.00001", "title": title}) + "\n"
                     + json.dumps({"id": "2601.00002", "title": "A fine title"}) + "\n")
    store = UserStore(tmp_path / "user.sqlite")
    report = import_file(jsonl, catalog, store)
    assert report.added == 1
    assert [(line, named_values(reason)) for line, reason in report.skipped] == [(1, ["'title'", "52,428,800", "1,000"])]
    bib = tmp_path / "big.bib"
    bib.write_text("@misc{big, title = {" + title + "}}\n@misc{fine, title = {Another fine title}}\n")
    records = list(read_records(bib))
    assert named_values(records[0].error) == ["'title'", "52,428,800", "1,000"]
    assert records[1].work.title == "Another fine title"


def test_a_broken_quote_says_the_later_rows_were_not_read(tmp_path):
    path = tmp_path / "broken.csv"
    path.write_text('title,year\nfine,2026\n"broken"x,2026\nlater,2026\n')
    errors = [r.error for r in read_records(path) if r.error]
    assert len(errors) == 1 and "broken CSV quoting" in errors[0] and "rows after it were not read" in errors[0]


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_importing_a_fifo_or_a_device_is_refused_at_once(tmp_path, special):
    """Issue 47: importing a FIFO (the open blocks) or /dev/zero (the read never ends) hung."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if special == "fifo":
        path = tmp_path / "works.csv"
        os.mkfifo(path)
    else:
        path = tmp_path / "zero.csv"
        path.symlink_to("/dev/zero")
    root = Path(__file__).resolve().parents[1]
    code = ("import sys\nfrom papers.catalog import Catalog\nfrom papers.ingest import ImportInputError, import_file\n"
            "from papers.userstore import UserStore\n"
            f"try:\n    import_file({str(path)!r}, Catalog.load(), UserStore({str(tmp_path / 'u.sqlite')!r}))\n"
            "except ImportInputError as e:\n    print('refused:', e)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "ATLAS_DATA_DIR": str(tmp_path / "data")})
    kind = "a FIFO" if special == "fifo" else "a device"
    assert f"is {kind}, not a regular file" in r.stdout, r.stdout + r.stderr[-2000:]


def test_concurrent_imports_of_one_file_keep_their_own_ids_and_counts(tmp_path, catalog):
    """Issue 47: a second import of a file that was still being imported (another browser session)
    resumed the running one: one import id for both, and wrong counts."""
    from papers.ingest import file_fingerprint

    store = UserStore(tmp_path / "user.sqlite")
    path = tmp_path / "works.csv"
    path.write_text("title,year\nFirst concurrent work,2026\nSecond concurrent work,2026\n")
    running, _ = store.open_import(str(path), file_fingerprint(path), "csv")  # the other session, mid-import
    report = import_file(path, catalog, store)
    assert report.import_id != running and report.added == 2 and report.skipped == []
    store.release_import(running)  # the other session stops (say it was interrupted) ...
    again = import_file(path, catalog, store)  # ... and a later import resumes it, not a new one
    assert again.import_id == running
    assert sorted(reason for _, reason in again.skipped) == ["duplicate of 'first-concurrent-work-2026'",
                                                             "duplicate of 'second-concurrent-work-2026'"]

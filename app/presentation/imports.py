"""The Import page's data, computed without Streamlit: a safe name for an uploaded file, the one-work form
checked and written as CSV (the importer's own format), and the user's works with their placement status.

    problem = form_problem(title, year)            # None, or what to fix
    path = store_upload(uploads, "form.csv", form_csv(title=title, year=year).encode())
"""
from __future__ import annotations

import csv
import io
import os
import re
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from papers.catalog import Catalog
from papers.importers import field_problem
from papers.ingest import AUTO_TAG
from papers.schema import Work

#: the one-work form's fields, in the order of its CSV columns
FORM_COLUMNS = ("title", "year", "arxiv_id", "url", "code_url", "abstract")


def upload_name(name: str) -> str:
    """An uploaded file's name as a stored file's name: never a path, never hidden."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).lstrip(".") or "upload"


def store_upload(folder: Path, name: str, data: bytes) -> Path:
    """Write an upload (or the form's CSV) to a new file in ``folder`` and return its path: named
    ``<unix second>-<random>-<safe name>`` and created exclusively (``tempfile.mkstemp``, mode 0600), so two
    uploads of one name in the same second, or two forms sent at once, never share a file. The name ends
    with the upload's own (safe) name, so its extension still tells the import format."""
    fd, path = tempfile.mkstemp(prefix=f"{int(time.time())}-", suffix=f"-{upload_name(name)}", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException:
        os.unlink(path)
        raise
    return Path(path)


def form_problem(title: str, year: str, **fields: str) -> str | None:
    """What to fix in the one-work form before it is imported, or None: a missing title, a year that is not
    one, or a field over the import's size limits (``papers.importers.field_problem``, the same limits a
    file import applies)."""
    if not title.strip():
        return "Title: required."
    if year.strip() and not (year.strip().isdigit() and len(year.strip()) == 4):
        return f"Year: '{year}' is not a year."
    too_big = next(filter(None, (field_problem(name, value) for name, value in (("title", title), *fields.items()))),
                   None)
    return too_big[0].upper() + too_big[1:] + "." if too_big else None


def form_csv(**fields: str) -> str:
    """The form as a CSV file of one work (``FORM_COLUMNS``; a field not given is empty)."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(FORM_COLUMNS)
    writer.writerow([fields.get(c, "") for c in FORM_COLUMNS])
    return buf.getvalue()


def user_works_frame(works: Iterable[Work], attention: Mapping[str, str]) -> pd.DataFrame:
    """The user's works, each with its placement: needing attention (and why), suggested or accepted."""
    return pd.DataFrame([{
        "key": w.key, "title": w.title, "year": w.year, "placed in": "; ".join(w.nodes),
        "placement": ("needs attention: " + attention[w.key]) if w.key in attention
        else "suggested" if AUTO_TAG in w.tags else "accepted",
    } for w in works])


def node_paths(catalog: Catalog) -> dict[str, str]:
    """Node id -> its path from the root ("Capabilities > Memory > ..."), the placement picker's labels."""
    tax = catalog.taxonomy
    return {n.id: " > ".join(tax[p].name for p in tax.path(n.id)) for n in tax}


def suggestions_caption(catalog: Catalog, suggestions: Iterable[tuple[str, float]]) -> str:
    """The placement model's suggestions for a work, with their confidence (nodes the taxonomy lacks left out)."""
    tax = catalog.taxonomy
    return "Suggested: " + " · ".join(f"{tax[n].name} ({c:.0%})" for n, c in suggestions if n in tax)

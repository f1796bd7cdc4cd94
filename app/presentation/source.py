"""The Source page (``source?path=reference_impls/rollout.py``): which repository paths are source files the app
shows (.py and .yaml files of ``SOURCE_DIRS`` in this checkout) and their text. Documentation paths and source
paths in the pages' text become links here through ``app.presentation.docs.link_doc_paths``.

    source_file("reference_impls/rollout.py")      # its Path; None for tests/, '..', a missing file
    source_text("reference_impls/rollout.py")      # its text; KeyError, or SourceUnreadable saying why
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the folders whose .py and .yaml files the app shows as source
SOURCE_DIRS = ("reference_impls", "lab", "papers", "taxonomy", "benchmarks", "scripts", "app", "atlas_data", "results")
#: folders that moved (issue 58: the shipped results left the lab package), so that an older link still opens its file
MOVED = (("lab/grid-runs/", "results/grid-runs/"), ("lab/results/", "results/"))
#: the largest file the page shows (the largest shipped one is ~60 KB; a 30 MB file took 21 s to render)
MAX_SOURCE_BYTES = 1 << 20
SOURCE_PATH = re.compile(r"(" + "|".join(SOURCE_DIRS) + r")(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)+\.(py|yaml)")


def source_file(path: str) -> Path | None:
    """The file of repository path ``path`` (``reference_impls/rollout.py``) when the app shows it as source: a
    .py or .yaml file in one of ``SOURCE_DIRS`` of this checkout; else None (another folder or kind, a '..'
    segment, outside the checkout, missing)."""
    if not isinstance(path, str):
        return None
    path = next((new + path[len(old):] for old, new in MOVED if path.startswith(old)), path)
    if not SOURCE_PATH.fullmatch(path) or ".." in path.split("/"):
        return None
    file = (ROOT / path).resolve()
    return file if file.is_file() and (ROOT / path.split("/")[0]).resolve() in file.parents else None


class SourceUnreadable(ValueError):
    """A source file the app shows but cannot display; the message says why, for the page."""


def source_text(path: str) -> str:
    """The text of source file ``path`` (``source_file``). Raises KeyError for a path the app does not show,
    ``SourceUnreadable`` for a file over ``MAX_SOURCE_BYTES`` (checked before reading it) or not UTF-8 text."""
    file = source_file(path)
    if file is None:
        raise KeyError(f"no source file '{path}' the app shows")
    size = file.stat().st_size
    if size > MAX_SOURCE_BYTES:
        raise SourceUnreadable(f"'{path}' is {size / 2**20:.1f} MiB; the page shows files of at most "
                               f"{MAX_SOURCE_BYTES // 2**20} MiB")
    data = file.read_bytes()[:MAX_SOURCE_BYTES + 1]  # the file may have grown since stat
    if len(data) > MAX_SOURCE_BYTES:
        raise SourceUnreadable(f"'{path}' is over {MAX_SOURCE_BYTES // 2**20} MiB; the page shows files of at "
                               f"most {MAX_SOURCE_BYTES // 2**20} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise SourceUnreadable(f"'{path}' is not UTF-8 text (byte 0x{data[e.start]:02x} at line {line})") from None

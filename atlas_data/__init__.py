"""Where a user's machine keeps what it generates (never inside the package folders).

Converted models, the embedding cache, run directories and the SQLite files all live under one
directory: ``$ATLAS_DATA_DIR`` when set, else ``~/.cache/agentic-rl-atlas``. (Not the shipped data
files, which live beside their packages: ``taxonomy/data``, ``papers/data``.)

The bottom of the import graph: it imports nothing of the project, so the catalog (``papers``),
training (``reference_impls``) and the app all find the same directory without depending on each other.
"""
from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """Return the data directory, creating it if needed."""
    root = os.environ.get("ATLAS_DATA_DIR")
    path = Path(root).expanduser() if root else Path.home() / ".cache" / "agentic-rl-atlas"
    path.mkdir(parents=True, exist_ok=True)
    return path

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
    """Return the data directory, creating it if needed: private (0700) when we create it, and the default
    one (``~/.cache/agentic-rl-atlas``) always, since it holds private notes and imported works that code
    run under another uid (the sandbox's 65534) must not read. A folder named by ``$ATLAS_DATA_DIR`` that
    already exists keeps its mode (it may be shared on purpose); its private files are 0600 all the same."""
    root = os.environ.get("ATLAS_DATA_DIR")
    path = Path(root).expanduser() if root else Path.home() / ".cache" / "agentic-rl-atlas"
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            pass
    if not root:
        _tighten(path, 0o700)
    return path


def private_file(path: Path) -> None:
    """Make ``path`` (and a SQLite database's ``-wal`` and ``-shm`` beside it) readable by its owner only."""
    for p in (Path(path), Path(f"{path}-wal"), Path(f"{path}-shm")):
        _tighten(p, 0o600)


def private_dir(path: Path) -> Path:
    """Create ``path`` if needed and make it its owner's only (0700)."""
    Path(path).mkdir(parents=True, exist_ok=True, mode=0o700)
    _tighten(Path(path), 0o700)
    return Path(path)


def _tighten(path: Path, mode: int) -> None:
    try:
        st = path.stat()
        if st.st_uid == os.geteuid() and st.st_mode & 0o777 != mode:
            path.chmod(mode)
    except OSError:
        pass  # missing, or not ours: nothing to do

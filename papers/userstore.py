"""User works: a local SQLite database beside the shipped catalog (which is never modified).

Tables: ``works`` (one row per user work, list fields as JSON), ``placements`` (the auto-placer's
suggested nodes with confidence, and whether the user accepted them), ``imports`` (one row per
imported file: how far it got, so an interrupted import resumes where it stopped), ``embeddings``
(one vector per user work, so search never re-embeds them).

Reading never fails on one bad row: a row that no longer reads as a work (hand-edited JSON, a
field an older version allowed) is left out of ``works()`` and listed by ``unreadable()``, so the
explorer keeps working and the Import page can show it as needing attention.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from atlas_data import data_dir, private_file
from papers.schema import LIST_FIELDS, Work

_log = logging.getLogger(__name__)

# imports running in this process, by (database, import id): another import of the same file (a second
# browser session is a second thread) must not resume one of them, only an interrupted one
_ACTIVE: set[tuple[str, int]] = set()
_ACTIVE_LOCK = threading.Lock()


def _process_start(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[19].decode()
    except (OSError, IndexError):
        return None


def _me() -> str:
    """This process, as an import's owner: host, pid and start time (a reused pid is another process)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_process_start(os.getpid())}"


def _owner_alive(owner: str | None) -> bool:
    """Whether the process that owns an import still runs (an owner on another host is taken as alive)."""
    if not owner:
        return False
    host, _, rest = owner.partition(":")
    pid, _, start = rest.partition(":")
    if host != socket.gethostname():
        return True
    return pid.isdigit() and _process_start(int(pid)) == start

SCHEMA = """
CREATE TABLE IF NOT EXISTS works (
    key TEXT PRIMARY KEY,
    data TEXT NOT NULL,              -- the Work as JSON
    arxiv_id TEXT,
    norm_title TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    import_id INTEGER
);
CREATE INDEX IF NOT EXISTS works_arxiv ON works(arxiv_id);
CREATE INDEX IF NOT EXISTS works_title ON works(norm_title);
CREATE INDEX IF NOT EXISTS works_key_nocase ON works(key COLLATE NOCASE);  -- key_taken: BibTeX keys ignore case
CREATE TABLE IF NOT EXISTS placements (
    key TEXT NOT NULL REFERENCES works(key) ON DELETE CASCADE,
    rank INTEGER NOT NULL,
    node_id TEXT NOT NULL,
    confidence REAL NOT NULL,
    PRIMARY KEY (key, rank)
);
CREATE TABLE IF NOT EXISTS embeddings (
    key TEXT PRIMARY KEY REFERENCES works(key) ON DELETE CASCADE,
    model TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS imports (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    format TEXT NOT NULL,
    status TEXT NOT NULL,            -- running | done
    last_line INTEGER NOT NULL DEFAULT 0,
    added INTEGER NOT NULL DEFAULT 0,
    skipped INTEGER NOT NULL DEFAULT 0,
    started REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS import_skips (
    import_id INTEGER NOT NULL REFERENCES imports(id) ON DELETE CASCADE,
    line INTEGER NOT NULL,
    reason TEXT NOT NULL
);
"""


def _work_json(w: Work) -> str:
    return json.dumps(w.model_dump(mode="json"), ensure_ascii=False)


def _work_from_json(text: str) -> Work:
    data = json.loads(text)
    for f in LIST_FIELDS:
        data[f] = tuple(data.get(f, ()))
    return Work(**data)


def _row_problem(text: str) -> str | None:
    """Why a stored row does not read as a work, or None."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return "stored data is not valid JSON"
    if not isinstance(data, dict):
        return "stored data is not a JSON object"
    try:
        _work_from_json(text)
    except ValidationError as e:
        err = e.errors()[0]
        return f"{err['msg']} (field '{'.'.join(str(x) for x in err['loc'])}')"
    except (TypeError, ValueError) as e:
        return f"unreadable stored work ({e})"
    return None


def default_store_path() -> Path:
    return data_dir() / "user_works.sqlite"


class UserStore:
    def __init__(self, path: Path | None = None):
        self.path = Path(path or default_store_path())
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.connect() as db:
            db.executescript(SCHEMA)
            if "owner" not in {r["name"] for r in db.execute("PRAGMA table_info(imports)")}:
                db.execute("ALTER TABLE imports ADD COLUMN owner TEXT")  # the process running the import
        private_file(self.path)  # the WAL and shared-memory files SQLite adds take the database's mode

    @contextmanager
    def connect(self, immediate: bool = False) -> Iterator[sqlite3.Connection]:
        """One transaction: committed on success, rolled back on any error.

        ``immediate`` takes SQLite's write lock at the start (BEGIN IMMEDIATE) instead of at the
        first write, so what is read inside (a duplicate check) still holds at the insert: a second
        writer waits (up to 30 s) rather than slipping in between.
        """
        db = sqlite3.connect(self.path, timeout=30)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA journal_mode=WAL")
        try:
            with db:
                if immediate:
                    db.execute("BEGIN IMMEDIATE")
                yield db
        finally:
            db.close()

    # -- works -----------------------------------------------------------------------------
    def works(self) -> list[Work]:
        """Every readable user work (see ``unreadable`` for the rest)."""
        with self.connect() as db:
            rows = db.execute("SELECT key, data FROM works ORDER BY created, key").fetchall()
        out = []
        for r in rows:
            try:
                out.append(_work_from_json(r["data"]))
            except Exception as e:  # noqa: BLE001  one bad row must not hide the others
                _log.warning("user work %r is unreadable: %s", r["key"], e)
        return out

    def unreadable(self) -> list[tuple[str, str]]:
        """(key, what is wrong) for every stored row that does not read as a work."""
        with self.connect() as db:
            rows = db.execute("SELECT key, data FROM works ORDER BY created, key").fetchall()
        return [(r["key"], problem) for r in rows if (problem := _row_problem(r["data"]))]

    def get(self, key: str) -> Work | None:
        with self.connect() as db:
            row = db.execute("SELECT data FROM works WHERE key=?", (key,)).fetchone()
        if not row:
            return None
        try:
            return _work_from_json(row["data"])
        except Exception:  # noqa: BLE001  reported by unreadable(); delete still works on it
            return None

    def count(self) -> int:
        with self.connect() as db:
            return db.execute("SELECT COUNT(*) FROM works").fetchone()[0]

    def find_duplicate(self, db: sqlite3.Connection, arxiv_id: str, norm_title: str) -> str | None:
        if arxiv_id:
            row = db.execute("SELECT key FROM works WHERE arxiv_id=?", (arxiv_id,)).fetchone()
            if row:
                return row["key"]
        row = db.execute("SELECT key FROM works WHERE norm_title=?", (norm_title,)).fetchone()
        return row["key"] if row else None

    def key_taken(self, db: sqlite3.Connection, key: str) -> bool:
        """Is ``key`` taken, ignoring case (BibTeX, and so a reference manager, treats ``Search-R1`` and
        ``search-r1`` as one key)?"""
        return db.execute("SELECT 1 FROM works WHERE key=? COLLATE NOCASE", (key,)).fetchone() is not None

    def insert(self, db: sqlite3.Connection, work: Work, norm_title: str, import_id: int | None = None) -> None:
        now = time.time()
        db.execute(
            "INSERT INTO works (key, data, arxiv_id, norm_title, created, updated, import_id) VALUES (?,?,?,?,?,?,?)",
            (work.key, _work_json(work), work.arxiv_id or None, norm_title, now, now, import_id),
        )

    def update(self, work: Work) -> None:
        from papers.importers import normalise_title

        with self.connect() as db:
            cur = db.execute(
                "UPDATE works SET data=?, arxiv_id=?, norm_title=?, updated=? WHERE key=?",
                (_work_json(work), work.arxiv_id or None, normalise_title(work.title), time.time(), work.key),
            )
            if cur.rowcount == 0:
                raise KeyError(f"no user work '{work.key}'")

    def delete(self, key: str) -> None:
        """Delete a user work and, once it is gone, its tags and private note (kept beside this file, see
        papers.annotations), so a work imported later under the same key does not inherit them."""
        from papers.annotations import AnnotationStore

        with self.connect() as db:
            if db.execute("DELETE FROM works WHERE key=?", (key,)).rowcount == 0:
                raise KeyError(f"no user work '{key}'")
        AnnotationStore(self.annotations_path).forget(key)

    @property
    def annotations_path(self) -> Path:
        """The tags and notes file that belongs with this store (``annotations.sqlite`` beside it)."""
        return self.path.with_name("annotations.sqlite")

    # -- placements and embeddings ------------------------------------------------------------
    def set_suggestions(self, db: sqlite3.Connection, key: str, suggestions: Iterable[tuple[str, float]]) -> None:
        db.execute("DELETE FROM placements WHERE key=?", (key,))
        db.executemany("INSERT INTO placements (key, rank, node_id, confidence) VALUES (?,?,?,?)",
                       [(key, i, n, float(c)) for i, (n, c) in enumerate(suggestions)])

    def suggestions(self, key: str) -> list[tuple[str, float]]:
        with self.connect() as db:
            rows = db.execute("SELECT node_id, confidence FROM placements WHERE key=? ORDER BY rank", (key,)).fetchall()
        return [(r["node_id"], r["confidence"]) for r in rows]

    def put_embeddings(self, db: sqlite3.Connection, model: str, keys: list[str], vectors: np.ndarray) -> None:
        db.executemany("INSERT OR REPLACE INTO embeddings (key, model, vector) VALUES (?,?,?)",
                       [(k, model, v.astype(np.float32).tobytes()) for k, v in zip(keys, vectors)])

    def embeddings(self, model: str) -> tuple[list[str], np.ndarray]:
        with self.connect() as db:
            rows = db.execute("SELECT key, vector FROM embeddings WHERE model=? ORDER BY key", (model,)).fetchall()
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [r["key"] for r in rows], np.stack([np.frombuffer(r["vector"], dtype=np.float32) for r in rows])

    # -- imports ---------------------------------------------------------------------------
    def open_import(self, path: str, fingerprint: str, fmt: str) -> tuple[int, int]:
        """(import id, last committed line): an interrupted import of the same file is resumed; one that is
        still running (in this process or another live one) is not, so two concurrent imports of one file
        keep their own ids and counts. Call :meth:`release_import` when the import stops."""
        me = _me()
        with self.connect(immediate=True) as db, _ACTIVE_LOCK:
            rows = db.execute("SELECT id, last_line, owner FROM imports WHERE fingerprint=? AND status='running' "
                              "ORDER BY id DESC", (fingerprint,)).fetchall()
            for row in rows:
                mine_and_idle = row["owner"] == me and (str(self.path), row["id"]) not in _ACTIVE
                if mine_and_idle or (row["owner"] != me and not _owner_alive(row["owner"])):
                    db.execute("UPDATE imports SET owner=? WHERE id=?", (me, row["id"]))
                    _ACTIVE.add((str(self.path), row["id"]))
                    return row["id"], row["last_line"]
            now = time.time()
            cur = db.execute(
                "INSERT INTO imports (path, fingerprint, format, status, started, updated, owner) "
                "VALUES (?,?,?,'running',?,?,?)", (path, fingerprint, fmt, now, now, me))
            _ACTIVE.add((str(self.path), cur.lastrowid))
            return cur.lastrowid, 0

    def release_import(self, import_id: int) -> None:
        """The import stopped (finished, interrupted or failed): a later import of the file may resume it."""
        with _ACTIVE_LOCK:
            _ACTIVE.discard((str(self.path), import_id))

    def commit_progress(self, db: sqlite3.Connection, import_id: int, last_line: int, added: int, skips: list[tuple[int, str]]) -> None:
        db.executemany("INSERT INTO import_skips (import_id, line, reason) VALUES (?,?,?)", [(import_id, ln, r) for ln, r in skips])
        db.execute(
            "UPDATE imports SET last_line=?, added=added+?, skipped=skipped+?, updated=? WHERE id=?",
            (last_line, added, len(skips), time.time(), import_id),
        )

    def finish_import(self, import_id: int) -> dict:
        with self.connect() as db:
            db.execute("UPDATE imports SET status='done', updated=? WHERE id=?", (time.time(), import_id))
            row = dict(db.execute("SELECT * FROM imports WHERE id=?", (import_id,)).fetchone())
            row["skips"] = [(r["line"], r["reason"]) for r in db.execute(
                "SELECT line, reason FROM import_skips WHERE import_id=? ORDER BY line", (import_id,))]
        return row

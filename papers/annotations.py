"""Your tags and notes on any work, shipped or imported: a SQLite file beside the user works.

    store = AnnotationStore()                     # data_dir()/annotations.sqlite
    store.add_tags(catalog, "search-r1", ["reading-list"])
    store.set_note(catalog, "search-r1", "compare with ZeroSearch")
    store.keys_with_tags(["reading-list"])       # -> ["search-r1"]: filter lists and searches, export a reading list

Tags are short labels (letters, digits, ``- _ . : /``, at most 64 characters), kept in lower case
so ``Reading-List`` and ``reading-list`` are one tag. A note is free text up to ``NOTE_MAX_CHARS``
characters; a longer one is refused whole and the saved note stays as it was. Notes stay in this
file: no export writes them. Every change is one transaction; a work key must be in the catalog.
"""
from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from atlas_data import data_dir, private_file

NOTE_MAX_CHARS = 20_000
"""About ten pages of text: room for reading notes, small enough to render on the work page at once."""
TAG_MAX_CHARS = 64
_TAG = re.compile(r"^[^\W][\w.:/-]*$")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tags (
    key TEXT NOT NULL,
    tag TEXT NOT NULL,
    added REAL NOT NULL,
    PRIMARY KEY (key, tag)
);
CREATE INDEX IF NOT EXISTS tags_by_tag ON tags(tag);
CREATE TABLE IF NOT EXISTS notes (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    updated REAL NOT NULL
);
"""


class AnnotationError(ValueError):
    """Bad input to a tag or note operation; the message names the parameter and what is wrong."""


def default_annotations_path() -> Path:
    return data_dir() / "annotations.sqlite"


def normalise_tag(raw: str) -> str:
    """The stored form of a tag, or ``AnnotationError`` naming what is wrong with it."""
    tag = (raw or "").strip().lower()
    if not tag:
        raise AnnotationError("tag is empty")
    if len(tag) > TAG_MAX_CHARS:
        raise AnnotationError(f"tag '{tag[:20]}...' has {len(tag)} characters (at most {TAG_MAX_CHARS})")
    if not _TAG.match(tag):
        raise AnnotationError(f"tag '{tag}' may hold only letters, digits and - _ . : / (no spaces), "
                              "and must start with a letter or digit")
    return tag


def check_note(text: str) -> str:
    if text is None or not str(text).strip():
        raise AnnotationError("note is empty (to remove a note, clear it)")
    if len(text) > NOTE_MAX_CHARS:
        raise AnnotationError(f"note has {len(text):,} characters; the limit is {NOTE_MAX_CHARS:,} (nothing was saved)")
    if "\x00" in text:
        raise AnnotationError("note contains a NUL character")
    return str(text)


class AnnotationStore:
    def __init__(self, path: Path | None = None):
        self.path = Path(path or default_annotations_path())

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
            private_file(self.path)  # notes are private: 0600, and SQLite's -wal/-shm follow the database
            with db:  # one transaction: committed on success, rolled back on any error
                yield db
        finally:
            db.close()

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        if not self.path.exists():
            return []
        with self.connect() as db:
            return db.execute(sql, args).fetchall()

    @staticmethod
    def _known(catalog, key: str) -> str:
        return catalog.get(key).key  # raises UnknownKeyError with close matches

    # -- tags -------------------------------------------------------------------------------------
    def add_tags(self, catalog, key: str, tags: Iterable[str]) -> list[str]:
        """Tag a work; returns its tags afterwards. Every tag is checked before any is saved."""
        key = self._known(catalog, key)
        clean = [normalise_tag(t) for t in tags]
        if not clean:
            raise AnnotationError("no tag given")
        now = time.time()
        with self.connect() as db:
            db.executemany("INSERT OR IGNORE INTO tags(key, tag, added) VALUES (?, ?, ?)", [(key, t, now) for t in clean])
        return self.tags_of(key)

    def remove_tags(self, catalog, key: str, tags: Iterable[str]) -> list[str]:
        key = self._known(catalog, key)
        clean = [normalise_tag(t) for t in tags]
        have = set(self.tags_of(key))
        missing = [t for t in clean if t not in have]
        if missing:
            raise AnnotationError(f"work '{key}' has no tag '{missing[0]}'" + (f" (its tags: {', '.join(sorted(have))})" if have else ""))
        with self.connect() as db:
            db.executemany("DELETE FROM tags WHERE key = ? AND tag = ?", [(key, t) for t in clean])
        return self.tags_of(key)

    def tags_of(self, key: str) -> list[str]:
        return [r[0] for r in self._read("SELECT tag FROM tags WHERE key = ? ORDER BY tag", (key,))]

    def all_tags(self) -> dict[str, int]:
        """Every tag with how many works carry it."""
        return dict(self._read("SELECT tag, COUNT(*) FROM tags GROUP BY tag ORDER BY tag"))

    def keys_with_tags(self, tags: Iterable[str]) -> list[str]:
        """Keys of the works carrying any of ``tags`` (in tagging order). An unknown tag is an error
        naming close matches, so a typo is not mistaken for an empty reading list."""
        import difflib

        clean = [normalise_tag(t) for t in tags]
        known = self.all_tags()
        for t in clean:
            if t not in known:
                near = difflib.get_close_matches(t, list(known), n=3, cutoff=0.6)
                hint = f" (did you mean: {', '.join(near)}?)" if near else (f" (tags: {', '.join(known)})" if known else " (no tags yet)")
                raise AnnotationError(f"no work is tagged '{t}'{hint}")
        marks = ",".join("?" * len(clean))
        rows = self._read(f"SELECT key, MIN(added) FROM tags WHERE tag IN ({marks}) GROUP BY key ORDER BY MIN(added), key", tuple(clean))
        return [r[0] for r in rows]

    # -- notes ------------------------------------------------------------------------------------
    def set_note(self, catalog, key: str, text: str) -> None:
        key = self._known(catalog, key)
        text = check_note(text)
        with self.connect() as db:
            db.execute("INSERT INTO notes(key, text, updated) VALUES (?, ?, ?) "
                       "ON CONFLICT(key) DO UPDATE SET text = excluded.text, updated = excluded.updated",
                       (key, text, time.time()))

    def clear_note(self, catalog, key: str) -> bool:
        key = self._known(catalog, key)
        with self.connect() as db:
            return db.execute("DELETE FROM notes WHERE key = ?", (key,)).rowcount > 0

    def forget(self, key: str) -> None:
        """Drop every tag and the note of ``key`` (its work was deleted; no catalog check, as it is gone)."""
        if not self.path.exists():
            return
        with self.connect() as db:
            db.execute("DELETE FROM tags WHERE key = ?", (key,))
            db.execute("DELETE FROM notes WHERE key = ?", (key,))

    def note_of(self, key: str) -> str:
        rows = self._read("SELECT text FROM notes WHERE key = ?", (key,))
        return rows[0][0] if rows else ""

"""Import user works into the local SQLite store, streaming, batched, resumable.

    report = import_file("new.jsonl", catalog, store, placer=placer, progress=print)

A file is read lazily; every ``batch_size`` entries the valid, non-duplicate ones are embedded in
one batch, placed (top-3 suggestions; the first becomes the work's provisional node, tagged
``placement:auto`` until the user accepts or corrects it) and committed together with the import's
progress in ONE transaction. So memory stays constant, an interrupted import loses nothing it
committed, and running it again on the same file resumes after the last committed line.
Malformed entries (a bad field, an unknown node, a duplicate) are skipped and reported with their
line number and reason. A file that cannot be imported at all (a folder, unreadable, not in the
expected text encoding) raises ``ImportInputError`` naming the file (and line) before anything is stored.

Two imports may run at once (two terminals, or the CLI beside the app): the expensive part of a
batch (embedding, placement) runs outside any lock; then the duplicate check and the insert run
under SQLite's write lock (BEGIN IMMEDIATE), so neither a key nor a title can slip in between.
"""
from __future__ import annotations

import codecs
import hashlib
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from papers.catalog import UnknownKeyError
from papers.importers import detect_format, normalise_arxiv_id, normalise_title, read_records, text_encoding
from papers.schema import Work
from papers.userstore import UserStore

AUTO_TAG = "placement:auto"
Progress = Callable[[dict], None]


class ImportInputError(ValueError):
    """The file as a whole cannot be imported; the message names it (and the line, where one applies)."""


def check_input_file(path: Path, encoding: str = "utf-8") -> None:
    """Refuse a folder, an unreadable file or text not in ``encoding``, with one clear line.

    The encoding check reads the file once in 1 MiB chunks (constant memory): a Latin-1 file read
    as UTF-8 would otherwise turn every accented letter into U+FFFD without a word.
    """
    path = Path(path)
    codec = text_encoding(encoding)
    if path.is_dir():
        raise ImportInputError(f"{path}: is a directory, not a file")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ImportInputError(f"{path}: no such file") from None
    except OSError as e:
        raise ImportInputError(f"{path}: cannot read the file ({e.strerror or e})") from None
    if not stat.S_ISREG(mode):  # a FIFO would block the open, /dev/zero never end the read
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else \
            "a socket" if stat.S_ISSOCK(mode) else "not a regular file"
        raise ImportInputError(f"{path}: is {kind}, not a regular file")
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise ImportInputError(f"{path}: no such file") from None
    except PermissionError:
        raise ImportInputError(f"{path}: permission denied (cannot read the file)") from None
    except OSError as e:
        raise ImportInputError(f"{path}: cannot read the file ({e.strerror or e})") from None
    decoder = codecs.getincrementaldecoder(codec)("strict")
    line, column = 1, 1  # where the next decoded character sits
    with f:
        while True:
            try:
                chunk = f.read(1 << 20)
            except OSError as e:
                raise ImportInputError(f"{path}: cannot read the file ({e.strerror or e})") from None
            try:
                text = decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as e:
                good = bytes(e.object[:e.start]).decode(codec, errors="replace")  # the valid text before it
                nl = good.count("\n")
                col = len(good) - good.rfind("\n") if nl else column + len(good)
                name = "UTF-8" if codec == "utf-8-sig" else codec
                hint = "save it as UTF-8, or give its encoding (--encoding latin-1)" if name == "UTF-8" else "check --encoding"
                raise ImportInputError(f"{path}: not {name} text (byte 0x{e.object[e.start]:02x} at line {line + nl}, "
                                       f"column {col}); {hint}") from None
            nl = text.count("\n")
            line, column = line + nl, (len(text) - text.rfind("\n") if nl else column + len(text))
            if not chunk:
                return


@dataclass
class ImportReport:
    import_id: int
    path: str
    added: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)
    resumed_after_line: int = 0
    lines_done: int = 0

    def summary(self) -> str:
        head = f"{self.path}: {self.added} works added, {len(self.skipped)} skipped"
        if self.resumed_after_line:
            head += f" (resumed after line {self.resumed_after_line})"
        return head


def file_fingerprint(path: Path) -> str:
    """Size + first and last MiB: identifies 'the same file' for resuming without reading it all."""
    path = Path(path)
    size = path.stat().st_size
    h = hashlib.sha256(str(size).encode())
    with open(path, "rb") as f:
        h.update(f.read(1 << 20))
        if size > 2 << 20:
            f.seek(-(1 << 20), 2)
            h.update(f.read())
    return h.hexdigest()


class _Dedup:
    """Duplicate detection against the shipped catalog, the user store, and the current batch."""

    def __init__(self, catalog):
        self.catalog = catalog
        self.titles = {normalise_title(w.title): w.key for w in catalog}
        self.batch_ids: dict[str, str] = {}
        self.batch_titles: dict[str, str] = {}

    def duplicate_of(self, store: UserStore, db, work: Work) -> str | None:
        norm = normalise_title(work.title)
        arxiv_id = normalise_arxiv_id(work.arxiv_id)
        if arxiv_id:
            hit = self.catalog.by_arxiv(arxiv_id)
            if hit:
                return hit.key
            if arxiv_id in self.batch_ids:
                return self.batch_ids[arxiv_id]
        if norm in self.titles:
            return self.titles[norm]
        if norm in self.batch_titles:
            return self.batch_titles[norm]
        return store.find_duplicate(db, arxiv_id, norm)

    def remember(self, work: Work) -> None:
        if work.arxiv_id:
            self.batch_ids[work.arxiv_id] = work.key
        self.batch_titles[normalise_title(work.title)] = work.key

    def clear_batch(self) -> None:
        self.batch_ids.clear()
        self.batch_titles.clear()


def _unique_key(store: UserStore, db, catalog_keys: set[str], key: str, taken: set[str]) -> str:
    """``key``, or ``key-2``, ``key-3`` ... if it is taken. Case is ignored (``catalog_keys`` and ``taken`` are
    lower case): a key differing only in case from another would be the same BibTeX key on export, and
    would shadow a shipped work's name (``Search-R1``) on lookups."""
    candidate, n = key, 1
    while candidate.lower() in catalog_keys or candidate.lower() in taken or store.key_taken(db, candidate):
        n += 1
        candidate = f"{key}-{n}"
    return candidate


def unknown_node_reason(catalog, work: Work) -> str | None:
    """Why a work cannot be placed as given (its first unknown node, with close matches), or None."""
    for node_id in work.nodes:
        try:
            catalog.node(node_id)
        except UnknownKeyError as e:
            return f"{e} (field 'nodes')"
    return None


def import_file(
    path: Path | str,
    catalog,
    store: UserStore,
    placer=None,
    fmt: str | None = None,
    batch_size: int = 256,
    progress: Progress | None = None,
    max_batches: int | None = None,
    encoding: str = "utf-8",
) -> ImportReport:
    """Import ``path`` into ``store``. ``max_batches`` stops early (as an interruption would).

    Raises ``ImportInputError`` (nothing stored) for a file that cannot be read as a whole.
    """
    path = Path(path)
    fmt = fmt or detect_format(path)
    check_input_file(path, encoding)
    import_id, last_line = store.open_import(str(path), file_fingerprint(path), fmt)
    try:
        report = ImportReport(import_id, str(path), resumed_after_line=last_line, lines_done=last_line)
        dedup = _Dedup(catalog)
        catalog_keys = {w.key.lower() for w in catalog}
        batch: list = []
        batches = 0

        def flush() -> None:
            nonlocal batches
            if not batch:
                return
            skips: list[tuple[int, str]] = []
            candidates: list[tuple[int, Work]] = []
            # 1. without a lock: skip bad and already-known entries, then embed and place the rest
            with store.connect() as db:
                for rec in batch:
                    if rec.error:
                        skips.append((rec.line, rec.error))
                        continue
                    reason = unknown_node_reason(catalog, rec.work)
                    if reason:
                        skips.append((rec.line, reason))
                        continue
                    dup = dedup.duplicate_of(store, db, rec.work)
                    if dup:
                        skips.append((rec.line, f"duplicate of '{dup}'"))
                        continue
                    dedup.remember(rec.work)
                    candidates.append((rec.line, rec.work))
            suggestions: list = [[] for _ in candidates]
            vectors = None
            if placer is not None and candidates:
                vectors = placer.embed_works([w for _, w in candidates])
                suggestions = placer.suggest_vectors(vectors)
            # 2. under the write lock: check again (another import may have committed meanwhile), insert
            fresh: list[Work] = []
            fresh_rows: list[int] = []
            with store.connect(immediate=True) as db:
                taken: set[str] = set()
                for i, ((line_no, work), sugg) in enumerate(zip(candidates, suggestions)):
                    dup = store.find_duplicate(db, normalise_arxiv_id(work.arxiv_id), normalise_title(work.title))
                    if dup:
                        skips.append((line_no, f"duplicate of '{dup}'"))
                        continue
                    key = _unique_key(store, db, catalog_keys, work.key, taken)
                    taken.add(key.lower())
                    work = work.model_copy(update={"key": key})
                    if sugg and not work.nodes:
                        work = work.model_copy(update={"nodes": (sugg[0][0],), "tags": (*work.tags, AUTO_TAG)})
                    store.insert(db, work, normalise_title(work.title), import_id)
                    store.set_suggestions(db, work.key, sugg)
                    fresh.append(work)
                    fresh_rows.append(i)
                if vectors is not None and fresh:
                    model_id = getattr(placer.encode_new, "model_id", "unknown")
                    store.put_embeddings(db, model_id, [w.key for w in fresh], np.asarray(vectors)[fresh_rows])
                line = max(r.line for r in batch)
                skips.sort()
                store.commit_progress(db, import_id, line, len(fresh), skips)
            report.added += len(fresh)
            report.skipped.extend(skips)
            report.lines_done = line
            dedup.clear_batch()
            batch.clear()
            batches += 1
            if progress:
                progress({"lines_done": line, "added": report.added, "skipped": len(report.skipped)})

        for rec in read_records(path, fmt, encoding):
            if rec.line <= last_line:
                continue
            batch.append(rec)
            if len(batch) >= batch_size:
                flush()
                if max_batches is not None and batches >= max_batches:
                    return report
        flush()
        final = store.finish_import(import_id)
        report.skipped = final["skips"]
        report.added = final["added"]
        return report
    finally:
        store.release_import(import_id)


def accept_placement(store: UserStore, catalog, key: str, nodes: list[str]) -> Work:
    """The user accepts or corrects a work's nodes: they replace the provisional one."""
    work = store.get(key)
    if work is None:
        raise KeyError(f"no user work '{key}'")
    for node_id in nodes:
        catalog.node(node_id)  # raises UnknownKeyError with suggestions
    updated = work.model_copy(update={"nodes": tuple(nodes), "tags": tuple(t for t in work.tags if t != AUTO_TAG)})
    store.update(updated)
    return updated

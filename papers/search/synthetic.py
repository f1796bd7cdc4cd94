"""Synthetic corpora for benchmarks and tests: many works with random vectors and words.

Latency at 100k or 1M works does not depend on what the vectors mean, so they are random (noisy
copies of random topic centres, so that an HNSW graph sees neighbourhoods as in real embeddings); the words are drawn (Zipf-like) from the real catalog's vocabulary so BM25 posting lists
have realistic lengths; years, kinds, code links, algorithms and placements are drawn from the
real catalog's distributions.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from papers.schema import KINDS
from papers.search.index import Corpus, _node_weight_rows
from papers.search.text import terms
from taxonomy import DIMENSIONS


def synthetic_corpus(catalog, n: int, dim: int = 384, seed: int = 0, words_per_doc: int = 60, with_vectors: bool = True,
                     clusters: int = 600, noise: float = 0.08) -> Corpus:
    """``n`` works; vectors are ``clusters`` random centres plus Gaussian noise (cosine to the centre
    about 0.5 at the defaults: topical neighbourhoods like real embeddings; ``clusters=0`` gives
    plain random unit vectors, the worst case for an HNSW graph)."""
    rng = np.random.default_rng(seed)
    tax = catalog.taxonomy
    works = list(catalog)
    vocab: dict[str, int] = {}
    for w in works:
        for t in terms(f"{w.title} {w.summary} {' '.join(w.keywords)}"):
            vocab[t] = vocab.get(t, 0) + 1
    words = np.array(sorted(vocab, key=vocab.get, reverse=True))
    p = 1.0 / np.arange(1, len(words) + 1) ** 0.9
    p /= p.sum()
    # token ids per doc, kept as ids (bm25s accepts (ids, vocab)) to avoid 60M Python strings
    lengths = rng.integers(words_per_doc // 2, words_per_doc * 3 // 2, n)
    flat = rng.choice(len(words), size=int(lengths.sum()), p=p).astype(np.int32)
    splits = np.cumsum(lengths)[:-1]
    docs = np.split(flat, splits)
    # placements: reuse real works' placements
    pick = rng.integers(0, len(works), n)
    nodes = list(tax)
    node_pos = {nd.id: j for j, nd in enumerate(nodes)}
    uniq = {}
    for i in set(pick.tolist()):
        r, c, v = _node_weight_rows(tax, [works[i].nodes], node_pos, 0.5)
        uniq[i] = (c, v)
    rows, cols, vals = [], [], []
    for row, i in enumerate(pick):
        c, v = uniq[int(i)]
        rows.extend([row] * len(c)), cols.extend(c), vals.extend(v)
    W = sp.csr_matrix((np.array(vals, np.float32), (np.array(rows), np.array(cols))), shape=(n, len(nodes)))
    dim_bit = {d: 1 << i for i, d in enumerate(DIMENSIONS)}
    work_dims = np.array([sum({dim_bit[tax[x].dimension] for x in w.nodes}) for w in works], np.uint8)
    years = np.array([w.year or 0 for w in works], np.int32)[pick]
    kinds = np.array([KINDS.index(w.kind) for w in works], np.int8)[pick]
    has_code = rng.random(n) < np.mean([w.has_code for w in works])
    alg_names = sorted({a for w in works for a in w.algorithms})
    a_pos = {a: j for j, a in enumerate(alg_names)}
    arows, acols = [], []
    for row, i in enumerate(pick):
        for a in works[int(i)].algorithms:
            arows.append(row), acols.append(a_pos[a])
    A = sp.csc_matrix((np.ones(len(arows), bool), (arows, acols)), shape=(n, max(1, len(alg_names))))
    vectors = None
    if with_vectors:
        vectors = rng.standard_normal((n, dim), dtype=np.float32)
        if clusters:
            centres = rng.standard_normal((clusters, dim), dtype=np.float32)
            centres /= np.linalg.norm(centres, axis=1, keepdims=True)
            for a in range(0, n, 65_536):
                b = min(n, a + 65_536)
                vectors[a:b] *= noise
                vectors[a:b] += centres[rng.integers(0, clusters, b - a)]
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    node_vectors = rng.standard_normal((len(nodes), dim), dtype=np.float32)
    node_vectors /= np.linalg.norm(node_vectors, axis=1, keepdims=True)
    corpus = Corpus(
        keys=[f"synthetic-{i:07d}" for i in range(n)], years=years, kinds=kinds, has_code=has_code, dims=work_dims[pick],
        node_ids=[x.id for x in nodes], node_names=[x.name for x in nodes], node_dims=[x.dimension for x in nodes],
        node_weights=W, alg_names=alg_names, algs=A, lex_docs=None, dense_texts=None,
        node_texts=[f"{x.name}. {x.description}" for x in nodes], vectors=vectors, node_vectors=node_vectors,
    )
    corpus.lex_token_ids = (docs, {str(wd): j for j, wd in enumerate(words)})
    return corpus


class HashEmbedder:
    """A fast, deterministic stand-in for MiniLM (hashed bag of terms); for tests and latency runs."""

    def __init__(self, dim: int = 384, model_id: str = "test-hash-embedder"):
        self.dim, self.model_id, self.calls = dim, model_id, 0
        self.loaded = True

    def _vec(self, text: str) -> np.ndarray:
        import hashlib

        v = np.zeros(self.dim, np.float32)
        for t in terms(text) or ["<empty>"]:
            h = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        n = np.linalg.norm(v)
        return v / n if n else v

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls += len(texts)
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        return self._vec(text)

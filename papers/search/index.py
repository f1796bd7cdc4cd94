"""The search index: BM25 (bm25s) + MiniLM embeddings, fused; filters; similar works; ANN at scale.

Scoring of one query against work ``w`` (the form and weights come from benchmarks/search_eval.py):

* lexical: BM25 over the work's own document, plus ``lex_node_weight`` x the BM25 scores of the
  taxonomy nodes on its placement paths (each node's name + description is indexed once; a
  placement node counts fully, its parent ``ancestor_decay`` as much, and so on up to the root).
* dense: cosine between the query and the work's vector, where the work's vector is the MiniLM
  embedding of its own text moved towards the embeddings of its placement nodes
  (``normalize(v_work + dense_node_weight * normalize(sum_n weight_n v_node))``), so one vector
  per work carries the node descriptions too and an ANN index can hold it.
* hybrid: weighted reciprocal-rank fusion of the two rankings,
  ``(1 - alpha) / (rrf_k + rank_lexical) + alpha / (rrf_k + rank_dense)`` with rrf_k = 10 and
  alpha = 0.4 (a work without any query term gets no lexical part).

A work is a result when it passes the filters and matches the query: its lexical score is at least
``lex_match_ratio`` of the best one, or its cosine is at least ``dense_floor`` and within
``dense_match_margin`` of the best one (BM25 gives almost every work some score, since words such as
"agent" or "reinforcement" occur everywhere; the relative cut keeps ``total`` meaningful).
An empty query (no text at all) browses: every work passing the filters, newest first, then by key.

Above ``ann_threshold`` works the dense side is served by a usearch HNSW index; the fusion then
runs over the union of the lexical and dense top candidates, and ``total`` is an estimate.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from papers.schema import KINDS
from papers.search.embed import EmbeddingCache, MiniLMEmbedder, embed_with_cache
from papers.search.filters import SearchFilters, UnknownFilterValueError, close
from papers.search.text import clean, dense_document, lexical_document, node_text, query_terms, table_cells_by_work, terms, work_fields
from taxonomy import DIMENSIONS

log = logging.getLogger(__name__)

MODES = ("hybrid", "lexical", "dense")


@dataclass(frozen=True)
class SearchConfig:
    """Weights of the scoring; the defaults are the ones chosen in docs/search_evaluation.md."""

    lex_node_weight: float = 0.6      # BM25 of nodes on the work's paths, added to its own BM25
    dense_node_weight: float = 0.5    # how far a work's vector moves towards its nodes' vectors
    ancestor_decay: float = 0.5       # weight of a placement's parent relative to the placement
    fusion: str = "rrf"               # rrf | convex
    rrf_k: float = 10.0
    alpha: float = 0.4                # weight of the dense side in the fusion (lexical: 1 - alpha)
    lex_match_ratio: float = 0.25     # a lexical match scores at least this share of the best lexical score
    dense_floor: float = 0.30         # a dense match has at least this cosine ...
    dense_match_margin: float = 0.20  # ... and is within this margin of the best cosine
    node_match_floor: float = 0.40    # node cosine from which a node counts as matched (matched_nodes)
    ann_threshold: int = 20_000       # from this many works the dense side uses the usearch index
    ann_candidates: int = 200         # candidates per side when the ANN index serves the query
    ann_connectivity: int = 32        # HNSW links per node (usearch, int8 vectors)
    ann_expansion_add: int = 64       # HNSW build beam; 128 buys recall at ~1.5x the build time
    exact_filter_limit: int = 100_000  # filtered sets up to this size are scanned exactly, even with ANN
    common_term_share: float = 0.5    # above ann_threshold, query terms in more works than this share are skipped


@dataclass
class SearchHit:
    key: str
    score: float
    lexical_score: float = 0.0
    dense_score: float = 0.0
    matched_terms: list[str] = field(default_factory=list)
    matched_nodes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"key": self.key, "score": round(float(self.score), 6), "lexical_score": round(float(self.lexical_score), 4),
                "dense_score": round(float(self.dense_score), 4), "matched_terms": self.matched_terms,
                "matched_nodes": self.matched_nodes}


@dataclass
class SearchResults:
    query: str
    mode: str
    hits: list[SearchHit]
    total: int
    offset: int = 0
    k: int = 10
    browse: bool = False          # True when the query was empty (filters only)
    approximate: bool = False     # True when the ANN index served the dense side
    elapsed_ms: float = 0.0

    def __iter__(self):
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    @property
    def keys(self) -> list[str]:
        return [h.key for h in self.hits]


# -- the corpus: everything the index knows about the works, as arrays --------------------------------
@dataclass
class Corpus:
    keys: list[str]
    years: np.ndarray            # int32, 0 = unknown
    kinds: np.ndarray            # int8 index into KINDS
    has_code: np.ndarray         # bool
    dims: np.ndarray             # uint8 bitmask over DIMENSIONS (dimensions of placement nodes)
    node_ids: list[str]
    node_names: list[str]
    node_dims: list[str]
    node_weights: sp.csr_matrix  # works x nodes: 1 for a placement, decay^d for its ancestors
    alg_names: list[str]
    algs: sp.csc_matrix          # works x algorithm names (bool)
    lex_docs: list[list[str]] | None = None   # BM25 terms per work
    dense_texts: list[str] | None = None      # text embedded per work
    node_texts: list[str] = field(default_factory=list)
    vectors: np.ndarray | None = None         # own-text vectors (when given, e.g. synthetic)
    node_vectors: np.ndarray | None = None
    lex_token_ids: tuple | None = None        # (per-doc term ids, vocab) instead of lex_docs (synthetic corpora)

    def __len__(self) -> int:
        return len(self.keys)


def _node_weight_rows(taxonomy, placements: Sequence[Sequence[str]], node_pos: dict[str, int], decay: float):
    rows, cols, vals = [], [], []
    for i, nodes in enumerate(placements):
        best: dict[int, float] = {}
        for nid in nodes:
            path = taxonomy.path(nid)
            for depth, anc in enumerate(reversed(path)):
                j = node_pos[anc]
                best[j] = max(best.get(j, 0.0), decay ** depth)
        for j, v in best.items():
            rows.append(i), cols.append(j), vals.append(v)
    return rows, cols, vals


def build_corpus(catalog, include_summaries: bool = True, decay: float = 0.5, works: Iterable | None = None) -> Corpus:
    """The corpus of ``catalog`` (its works in catalog order)."""
    tax = catalog.taxonomy
    works = list(works if works is not None else catalog)
    nodes = list(tax)
    node_pos = {n.id: j for j, n in enumerate(nodes)}
    cells = table_cells_by_work(catalog)
    fields_ = [work_fields(w, cells.get(w.key, ()), include_summaries) for w in works]
    rows, cols, vals = _node_weight_rows(tax, [w.nodes for w in works], node_pos, decay)
    W = sp.csr_matrix((np.array(vals, np.float32), (rows, cols)), shape=(len(works), len(nodes)))
    dim_bit = {d: 1 << i for i, d in enumerate(DIMENSIONS)}
    dims = np.array([sum({dim_bit[tax[n].dimension] for n in w.nodes}) for w in works], np.uint8)
    alg_names: dict[str, int] = {}
    arows, acols = [], []
    for i, w in enumerate(works):
        for a in w.algorithms:
            j = alg_names.setdefault(a, len(alg_names))
            arows.append(i), acols.append(j)
    A = sp.csc_matrix((np.ones(len(arows), bool), (arows, acols)), shape=(len(works), max(1, len(alg_names))))
    return Corpus(
        keys=[w.key for w in works],
        years=np.array([w.year or 0 for w in works], np.int32),
        kinds=np.array([KINDS.index(w.kind) for w in works], np.int8),
        has_code=np.array([w.has_code for w in works], bool),
        dims=dims,
        node_ids=[n.id for n in nodes], node_names=[n.name for n in nodes], node_dims=[n.dimension for n in nodes],
        node_weights=W,
        alg_names=list(alg_names), algs=A,
        lex_docs=[lexical_document(f) for f in fields_],
        dense_texts=[dense_document(f) for f in fields_],
        node_texts=[node_text(n) for n in nodes],
    )


def _row_patterns(W: sp.csr_matrix) -> tuple[np.ndarray, sp.csr_matrix]:
    """(pattern id per row, matrix of the distinct rows) of a sparse matrix."""
    seen: dict[tuple[bytes, bytes], int] = {}
    pattern = np.empty(W.shape[0], np.int32)
    ind, dat, ptr = W.indices, W.data, W.indptr
    rows = []
    for i in range(W.shape[0]):
        a, b = ptr[i], ptr[i + 1]
        key = (ind[a:b].tobytes(), dat[a:b].tobytes())
        j = seen.get(key)
        if j is None:
            j = seen[key] = len(rows)
            rows.append(i)
        pattern[i] = j
    return pattern, W[rows] if rows else W[:0]


def _bm25_scores(bm25, token_ids: list[int], n: int) -> np.ndarray:
    """BM25 scores of every document (bm25s' precomputed index; a posting list has no repeats, so a
    fancy-index add is exact and much faster than ``np.add.at``)."""
    out = np.zeros(n, np.float32)
    if not token_ids:
        return out
    sc = bm25.scores
    data, indices, indptr = sc["data"], sc["indices"], sc["indptr"]
    for t in dict.fromkeys(token_ids):
        a, b = indptr[t], indptr[t + 1]
        out[indices[a:b]] += data[a:b]
    if getattr(bm25, "nonoccurrence_array", None) is not None:
        out += bm25.nonoccurrence_array[list(dict.fromkeys(token_ids))].sum()
    return out


def _dot(m: np.ndarray, v: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """``m[rows] @ v`` without BLAS threads: a matrix-vector product is memory-bound, and OpenBLAS's
    threads make it several times slower when other processes keep the cores busy."""
    if rows is not None:
        m = np.take(m, rows, axis=0)
    return np.einsum("ij,j->i", m, v)


def _normalize(m: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(m, axis=-1, keepdims=True)
    return (m / np.maximum(n, 1e-12)).astype(np.float32)


_DEFAULT_EMBEDDER: MiniLMEmbedder | None = None


#: where the catalog's own vectors are shipped (``scripts/ship_embeddings.py`` writes them): a new data folder is
#: seeded from them, so its first search index does not embed ~1000 texts on the user's CPU; keyed by each text's
#: SHA-256 like the data folder's cache, so a text that changed is embedded anew and a stale vector is never used
SHIPPED_EMBEDDINGS = Path(__file__).resolve().parents[1] / "data" / "search"


def shipped_embeddings_path(model_id: str) -> Path:
    """``papers/data/search/embeddings-<model>.npz``: the data folder's file name, in the package's data."""
    return EmbeddingCache.default_path(model_id, root=SHIPPED_EMBEDDINGS.parent)


def default_embedder() -> MiniLMEmbedder:
    """One MiniLM per process, shared by every index (the app, the CLI, the tests)."""
    global _DEFAULT_EMBEDDER
    if _DEFAULT_EMBEDDER is None:
        _DEFAULT_EMBEDDER = MiniLMEmbedder()
    return _DEFAULT_EMBEDDER


class SearchIndex:
    """Hybrid search over a catalog. Build with ``SearchIndex.load_or_build(catalog)``."""

    def __init__(self, corpus: Corpus, embedder=None, config: SearchConfig | None = None, catalog=None,
                 taxonomy=None, cache: EmbeddingCache | None = None, include_summaries: bool = True):
        """Index ``corpus``; missing vectors are embedded (through ``cache`` when given)."""
        import bm25s

        self._bm25s = bm25s
        self.config = config or SearchConfig()
        self.catalog = catalog
        self.taxonomy = taxonomy if taxonomy is not None else (catalog.taxonomy if catalog is not None else None)
        self.embedder = embedder if embedder is not None else default_embedder()
        self.cache = cache
        self.include_summaries = include_summaries
        self.embedded = 0  # texts embedded while building this index (0 when all came from the cache)
        self.timings: dict[str, float] = {}
        t0 = time.perf_counter()
        if corpus.vectors is None and corpus.dense_texts is not None:
            self._embed_corpus(corpus)
        t1 = time.perf_counter()
        self._set_corpus(corpus)
        self.timings.update(embed_s=t1 - t0, index_s=time.perf_counter() - t1)

    @classmethod
    def load_or_build(cls, catalog, *, include_summaries: bool = True, embedder=None, config: SearchConfig | None = None,
                      cache_path: Path | str | None = None, use_cache: bool = True) -> "SearchIndex":
        """Index ``catalog``. Embeddings come from the on-disk cache (``data_dir()/search/``); only texts
        the cache lacks are embedded, and the model is not even imported when none are missing."""
        config = config or SearchConfig()
        embedder = embedder if embedder is not None else default_embedder()
        t0 = time.perf_counter()
        corpus = build_corpus(catalog, include_summaries, config.ancestor_decay)
        t1 = time.perf_counter()
        path = (Path(cache_path) if cache_path else EmbeddingCache.default_path(embedder.model_id)) if use_cache else None
        cache = EmbeddingCache(path, embedder.model_id, embedder.dim).load()
        if use_cache and cache_path is None:  # a new data folder starts from the catalog's shipped vectors
            shipped = EmbeddingCache(shipped_embeddings_path(embedder.model_id), embedder.model_id, embedder.dim)
            cache.fill_from(shipped.load())
        idx = cls(corpus, embedder, config, catalog=catalog, cache=cache, include_summaries=include_summaries)
        idx.timings["corpus_s"] = t1 - t0
        return idx

    def _embed_corpus(self, corpus: Corpus) -> None:
        if self.cache is None:
            self.cache = EmbeddingCache(None, self.embedder.model_id, self.embedder.dim)
        texts = list(corpus.dense_texts or []) + list(corpus.node_texts)
        vecs, n_new = embed_with_cache(texts, self.embedder, self.cache)
        self.embedded += n_new
        n = len(corpus.dense_texts or [])
        corpus.vectors, corpus.node_vectors = vecs[:n], vecs[n:]
        if self.cache.path is not None and self.cache.dirty:
            try:
                self.cache.save()
            except OSError as e:  # a read-only data dir must not break search
                log.warning("could not write the embedding cache %s: %s", self.cache.path, e)

    def _set_corpus(self, corpus: Corpus, build_ann: bool = True) -> None:
        cfg = self.config
        self.corpus = corpus
        self.keys = corpus.keys
        self._node_lookup: dict[str, int] | None = None  # filled on first use
        self._alg_lookup: dict[str, int] | None = None
        self._pos = {k: i for i, k in enumerate(corpus.keys)}
        N = len(corpus)
        # lexical: works and nodes
        self.bm25 = self._bm25s.BM25()
        if corpus.lex_docs is not None:
            self.bm25.index([d if d else [""] for d in corpus.lex_docs], show_progress=False)
        elif corpus.lex_token_ids is not None:
            self.bm25.index(corpus.lex_token_ids, show_progress=False)
        sc = getattr(self.bm25, "scores", None)
        self._postings_sorted = True
        if sc is not None and len(sc["indices"]) < 20_000_000:  # bm25s builds sorted posting lists; check when cheap
            ok = np.ones(max(0, len(sc["indices"]) - 1), bool)
            ends = np.asarray(sc["indptr"][1:-1], np.int64) - 1
            ok[ends[(ends >= 0) & (ends < len(ok))]] = False
            self._postings_sorted = bool((np.diff(sc["indices"])[ok] > 0).all())
        self.node_bm25 = self._bm25s.BM25()
        self.node_bm25.index([terms(t) or [""] for t in corpus.node_texts], show_progress=False)
        self._node_W = corpus.node_weights.tocsr().astype(np.float32)
        # works share few distinct placement sets: score nodes per pattern, then gather per work
        self._pattern, self._patterns = _row_patterns(self._node_W)
        self._members = (corpus.node_weights > 0).tocsc()
        if self.taxonomy is not None:
            self._root_nodes = {j for j, nid in enumerate(corpus.node_ids) if nid in self.taxonomy and self.taxonomy[nid].parent is None}
        else:
            self._root_nodes = set()
        # dense: one vector per work, moved towards its nodes' vectors
        V = corpus.vectors
        U = corpus.node_vectors
        if V is not None and U is not None and len(U) and cfg.dense_node_weight:
            mix = np.asarray(self._patterns @ U, np.float32)
            has = np.asarray(self._patterns.sum(axis=1)).ravel() > 0
            mix = _normalize(mix) * has[:, None]
            out = np.empty_like(V, dtype=np.float32)
            for a in range(0, len(V), 65_536):  # chunks keep the temporaries small at 1M works
                b = min(len(V), a + 65_536)
                out[a:b] = _normalize(V[a:b] + cfg.dense_node_weight * mix[self._pattern[a:b]])
            V = out
        self.vectors = np.ascontiguousarray(V, np.float32) if V is not None else None
        self.node_vectors = U
        N = len(corpus)
        key_rank = np.empty(N, np.int64)
        key_rank[np.argsort(np.array(corpus.keys, dtype=object), kind="stable")] = np.arange(N)
        self._browse_order = np.lexsort((key_rank, -corpus.years.astype(np.int64)))
        self.ann = None
        if build_ann and self.vectors is not None and N >= cfg.ann_threshold:
            t = time.perf_counter()
            self.ann = self._build_ann(self.vectors, connectivity=cfg.ann_connectivity, expansion_add=cfg.ann_expansion_add)
            self.timings["ann_s"] = time.perf_counter() - t

    @staticmethod
    def _build_ann(vectors: np.ndarray, dtype: str = "i8", threads: int = 0, connectivity: int = 32, expansion_add: int = 64):
        from usearch.index import Index

        # int8 graph, 32 links per node: every candidate is re-scored with the f32 vectors, so int8 costs
        # little precision and builds ~2x faster than f16. On 300k synthetic works, recall@10 of 200
        # re-scored candidates: 0.993 (i8, M=32, ef_add=64), 0.923 (i8, M=16), 0.971 (f16, M=16, 2x slower).
        index = Index(ndim=vectors.shape[1], metric="ip", dtype=dtype, connectivity=connectivity, expansion_add=expansion_add,
                      expansion_search=64)
        index.add(np.arange(len(vectors), dtype=np.uint64), vectors, threads=threads)
        return index

    def warm(self) -> None:
        """Load the embedding model now (a first query otherwise pays the import, several seconds)."""
        if self.vectors is not None:
            self._query_vector("warm up")

    # -- properties ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.keys)

    def __contains__(self, key: str) -> bool:
        return key in self._pos

    # -- filters ------------------------------------------------------------------------------------
    def _node_index(self, value: str, filter_name: str) -> int:
        c = self.corpus
        if self._node_lookup is None:
            self._node_lookup = {nid: j for j, nid in enumerate(c.node_ids)}
            for j, name in enumerate(c.node_names):
                self._node_lookup.setdefault(name.casefold(), j)
        j = self._node_lookup.get(value, self._node_lookup.get(str(value).casefold()))
        if j is None:
            near = self.taxonomy.suggest(str(value)) if self.taxonomy is not None else close(value, c.node_ids)
            raise UnknownFilterValueError(filter_name, value, near, what="node")
        return j

    def _alg_index(self, value: str, filter_name: str) -> int:
        """Column of an algorithm name (case-insensitive) or algorithm node id; -1 for a node no work names."""
        c = self.corpus
        if self._alg_lookup is None:
            self._alg_lookup = {a.casefold(): j for j, a in enumerate(c.alg_names)}
        v = str(value)
        j = self._alg_lookup.get(v.casefold())
        if j is not None:
            return j
        if v in c.node_ids and c.node_dims[c.node_ids.index(v)] == "algorithm":
            return self._alg_lookup.get(c.node_names[c.node_ids.index(v)].casefold(), -1)
        options = c.alg_names + [n for n, d in zip(c.node_ids, c.node_dims) if d == "algorithm"]
        raise UnknownFilterValueError(filter_name, value, close(v, options), what="algorithm")

    def _any_member(self, cols: list[int]) -> np.ndarray:
        if not cols:
            return np.zeros(len(self), bool)
        return np.asarray(self._members[:, cols].sum(axis=1)).ravel() > 0

    def validate_filters(self, filters: SearchFilters | None) -> None:
        self._mask(filters)

    def _mask(self, filters: SearchFilters | None) -> np.ndarray | None:
        """Boolean mask of the works passing ``filters`` (None when there are no filters)."""
        if filters is None:
            return None
        if isinstance(filters, dict):
            filters = SearchFilters(**filters)
        c, N = self.corpus, len(self)
        node_cols = [self._node_index(v, "nodes") for v in filters.nodes]
        excl_cols = [self._node_index(v, "exclude_nodes") for v in filters.exclude_nodes]

        def kind_codes(values, name):
            out = []
            for v in values:
                if v not in KINDS:
                    raise UnknownFilterValueError(name, v, close(v, list(KINDS)), what="kind")
                out.append(KINDS.index(v))
            return out

        kinds = kind_codes(filters.kinds, "kinds")
        excl_kinds = kind_codes(filters.exclude_kinds, "exclude_kinds")
        bits = 0
        for d in filters.dimensions:
            if d not in DIMENSIONS:
                raise UnknownFilterValueError("dimensions", d, close(d, list(DIMENSIONS)), what="dimension")
            bits |= 1 << DIMENSIONS.index(d)
        algs = [self._alg_index(a, "algorithms") for a in filters.algorithms]
        if filters.is_empty():
            return None
        m = np.ones(N, bool)
        if node_cols:
            m &= self._any_member(node_cols)
        if excl_cols:
            m &= ~self._any_member(excl_cols)
        if bits:
            m &= (c.dims & bits) != 0
        if filters.year_from is not None:
            m &= (c.years >= filters.year_from) & (c.years > 0)
        if filters.year_to is not None:
            m &= (c.years <= filters.year_to) & (c.years > 0)
        if kinds:
            m &= np.isin(c.kinds, kinds)
        if excl_kinds:
            m &= ~np.isin(c.kinds, excl_kinds)
        if algs:
            real = [a for a in algs if a >= 0]
            m &= (np.asarray(c.algs[:, real].sum(axis=1)).ravel() > 0) if real else False
        if filters.has_code is not None:
            m &= c.has_code == filters.has_code
        if filters.keys is not None:
            allowed = np.zeros(N, bool)
            allowed[[self._pos[k] for k in filters.keys if k in self._pos]] = True
            m &= allowed
        return m

    # -- scoring ------------------------------------------------------------------------------------
    def _lexical(self, qterms: dict[str, str]):
        """(work scores incl. node propagation, own-text scores, node scores)."""
        N = len(self)
        ids = self.bm25.get_tokens_ids(list(qterms)) if qterms else []
        if N >= self.config.ann_threshold and len(ids) > 1:
            # at scale, skip terms found in more than half of all works (IDF under ln 2, yet each costs
            # a pass over a posting list as long as the corpus); keep the rarest if all are common
            ptr = self.bm25.scores["indptr"]
            df = {t: int(ptr[t + 1] - ptr[t]) for t in ids}
            kept = [t for t in ids if df[t] <= self.config.common_term_share * N]
            ids = kept or [min(ids, key=df.get)]
        own = _bm25_scores(self.bm25, ids, N)
        nids = self.node_bm25.get_tokens_ids(list(qterms)) if qterms else []
        node = _bm25_scores(self.node_bm25, nids, len(self.corpus.node_ids))
        total = own
        if self.config.lex_node_weight and node.any():
            per_pattern = np.asarray(self._patterns @ node, np.float32).ravel()
            total = own + self.config.lex_node_weight * per_pattern[self._pattern]
        return total, own, node

    def _query_vector(self, text: str) -> np.ndarray:
        return np.asarray(self.embedder.encode_query(text), np.float32)

    def _fuse(self, lex: np.ndarray, dense: np.ndarray, lex_ok: np.ndarray, dense_ok: np.ndarray) -> np.ndarray:
        """Fused score of candidates (arrays aligned); only matching sides contribute."""
        cfg = self.config
        n = len(lex)
        if cfg.fusion == "rrf":
            out = np.zeros(n, np.float64)
            for w, s, ok in ((1 - cfg.alpha, lex, lex_ok), (cfg.alpha, dense, dense_ok)):
                if w <= 0 or not ok.any():
                    continue
                order = np.argsort(-s, kind="stable")
                rank = np.empty(n, np.int64)
                rank[order] = np.arange(1, n + 1)
                out += np.where(ok, w / (cfg.rrf_k + rank), 0.0)
            return out
        if cfg.fusion == "convex":
            lmax = lex.max(initial=0.0)
            ln = lex / lmax if lmax > 0 else np.zeros(n)
            lo = cfg.dense_floor
            dmax = dense.max(initial=lo)
            dn = np.clip((dense - lo) / (dmax - lo), 0, None) if dmax > lo else np.zeros(n)
            return (1 - cfg.alpha) * ln + cfg.alpha * dn
        raise ValueError(f"unknown fusion '{cfg.fusion}'")

    def search(self, query: str | None, k: int = 10, offset: int = 0, filters: SearchFilters | dict | None = None,
               mode: str = "hybrid") -> SearchResults:
        """Rank the works for ``query``; an empty query browses the filtered works (newest first)."""
        t0 = time.perf_counter()
        if mode not in MODES:
            raise UnknownFilterValueError("mode", mode, close(str(mode), list(MODES)), what="mode")
        k, offset = max(0, int(k)), max(0, int(offset))
        mask = self._mask(filters)
        text = clean(query or "")
        if not text:
            return self._browse(mask, k, offset, query or "", mode, t0)
        qterms = query_terms(text)
        lex_total, own, node_lex = self._lexical(qterms) if mode != "dense" else (None, None, None)
        qvec = self._query_vector(text) if mode != "lexical" and self.vectors is not None else None
        if len(self) >= self.config.ann_threshold and (qvec is not None or mode == "lexical"):
            return self._search_ann(text, qterms, qvec, lex_total, own, node_lex, mask, k, offset, mode, t0)
        N = len(self)
        cand = np.flatnonzero(mask) if mask is not None else np.arange(N)
        lex = lex_total[cand] if lex_total is not None else np.zeros(len(cand), np.float32)
        dense = _dot(self.vectors, qvec, None if mask is None else cand) if qvec is not None else np.zeros(len(cand), np.float32)
        hits, total, _, _ = self._rank(cand, lex, dense, mode, k, offset)
        return self._results(text, qterms, qvec, node_lex, own, hits, total, k, offset, mode, t0, approximate=False)

    def _rank(self, cand, lex, dense, mode, k, offset):
        """Order candidates for ``mode``: (hits of the page, matching candidates, lexical / dense match masks)."""
        cfg = self.config
        lex_pos = lex > 0
        lex_ok = lex_pos & (lex >= cfg.lex_match_ratio * lex.max(initial=0.0))
        dense_ok = dense >= max(cfg.dense_floor, dense.max(initial=0.0) - cfg.dense_match_margin)
        if mode == "lexical":
            score, ok = lex.astype(np.float64), lex_ok
        elif mode == "dense":
            score, ok = dense.astype(np.float64), dense_ok
        else:
            score, ok = self._fuse(lex, dense, lex_pos, np.ones(len(dense), bool)), lex_ok | dense_ok
        sel = np.flatnonzero(ok)
        total = len(sel)
        if total == 0 or k == 0 or offset >= total:
            return [], total, lex_ok, dense_ok
        need = min(total, offset + k)
        s = score[sel]
        if need < len(sel):
            part = np.argpartition(-s, need - 1)[:need]
        else:
            part = np.arange(len(sel))
        # ties: higher score first, then catalog order
        part = part[np.lexsort((cand[sel[part]], -s[part]))]
        chosen = sel[part][offset:need]
        return [(int(cand[i]), float(score[i]), float(lex[i]), float(dense[i])) for i in chosen], total, lex_ok, dense_ok

    def _search_ann(self, text, qterms, qvec, lex_total, own, node_lex, mask, k, offset, mode, t0):
        """Large corpora: fuse the lexical top candidates and the dense top candidates (HNSW, or an exact
        scan of a small filtered set); candidates are re-scored exactly (f32 cosines)."""
        cfg = self.config
        need = offset + k
        C = max(cfg.ann_candidates, 4 * need)
        N = len(self)
        # dense candidates
        top = np.zeros(0, np.int64)
        if qvec is not None:
            n_allowed = int(mask.sum()) if mask is not None else N
            if mask is not None and n_allowed <= cfg.exact_filter_limit:
                allowed = np.flatnonzero(mask)
                sims = _dot(self.vectors, qvec, allowed)
                top = allowed[np.argpartition(-sims, C - 1)[:C]] if len(allowed) > C else allowed
            else:
                count = C if mask is None else min(N, int(C * 1.5 * N / max(1, n_allowed)))
                while True:
                    ids = np.asarray(self.ann.search(qvec, count=count).keys, np.int64)
                    if mask is not None:
                        ids = ids[mask[ids]]
                    if len(ids) >= C or count >= N:
                        break
                    count = min(N, count * 4)
                top = ids[:C]
        # lexical candidates: the C best of all (filtered) works
        lex_top = np.zeros(0, np.int64)
        ls = None
        if lex_total is not None:
            ls = lex_total if mask is None else np.where(mask, lex_total, np.float32(0))
            lex_top = np.argpartition(-ls, C - 1)[:C] if N > C else np.arange(N)
            lex_top = lex_top[ls[lex_top] > 0]
        cand = np.union1d(top, lex_top).astype(np.int64)
        lex = lex_total[cand] if lex_total is not None else np.zeros(len(cand), np.float32)
        dense = _dot(self.vectors, qvec, cand) if qvec is not None else np.zeros(len(cand), np.float32)
        hits, total, lex_ok, dense_ok = self._rank(cand, lex, dense, mode, k, offset)
        if ls is not None:  # count every lexical match, not just the candidates
            best = float(ls.max(initial=0.0))
            n_lex = int((ls >= cfg.lex_match_ratio * best).sum()) if best > 0 else 0
            total = n_lex + (int((dense_ok & ~lex_ok).sum()) if mode == "hybrid" else 0)
        return self._results(text, qterms, qvec, node_lex, own, hits, total, k, offset, mode, t0, approximate=qvec is not None)

    def _browse(self, mask, k, offset, query, mode, t0) -> SearchResults:
        order = self._browse_order if mask is None else self._browse_order[mask[self._browse_order]]
        hits = [SearchHit(self.keys[i], 0.0) for i in order[offset:offset + k]]
        return SearchResults(query, mode, hits, int(len(order)), offset, k, browse=True,
                             elapsed_ms=(time.perf_counter() - t0) * 1000)

    def _matched_nodes_for_query(self, qvec, node_lex) -> set[int]:
        """Nodes whose name/description matches the query: at least half the best node BM25 score, or a
        cosine of ``node_match_floor``. Roots (the six dimension headings) are too broad to count."""
        out: set[int] = set()
        if node_lex is not None and node_lex.max(initial=0) > 0:
            out |= set(np.flatnonzero(node_lex >= 0.5 * node_lex.max()).tolist())
        if qvec is not None and self.node_vectors is not None and len(self.node_vectors):
            out |= set(np.flatnonzero(_dot(self.node_vectors, qvec) >= self.config.node_match_floor).tolist())
        return out - self._root_nodes

    def _matched_terms(self, i: int, qterms: dict[str, str]) -> list[str]:
        """Query words (as typed) whose terms occur in work ``i``'s own text."""
        vocab = self.bm25.vocab_dict
        scores = self.bm25.scores
        indptr, indices = scores["indptr"], scores["indices"]
        out: list[str] = []
        for stem_, surface in qterms.items():
            t = vocab.get(stem_)
            if t is None or surface in out:
                continue
            post = indices[indptr[t]:indptr[t + 1]]  # document ids (sorted, as bm25s builds them)
            if self._postings_sorted:
                j = int(np.searchsorted(post, i))
                found = j < len(post) and post[j] == i
            else:
                found = bool((post == i).any())
            if found:
                out.append(surface)
        # "long-horizon" matched: drop its parts "long", "horizon" when they are listed too
        return [w for w in out if not any(w != o and w.casefold() in o.casefold() for o in out)]

    def _results(self, text, qterms, qvec, node_lex, own, hits, total, k, offset, mode, t0, approximate) -> SearchResults:
        matched_nodes = self._matched_nodes_for_query(qvec, node_lex)
        W = self._node_W
        out = []
        for i, score, lex, dense in hits:
            a, b = W.indptr[i], W.indptr[i + 1]
            row = sorted(zip(W.data[a:b].tolist(), W.indices[a:b].tolist()), key=lambda x: (-x[0], x[1]))
            nodes = [self.corpus.node_ids[j] for _, j in row if j in matched_nodes]
            out.append(SearchHit(self.keys[i], score, lex, dense, self._matched_terms(i, qterms) if qterms else [], nodes))
        return SearchResults(text, mode, out, int(total), offset, k, approximate=approximate,
                             elapsed_ms=(time.perf_counter() - t0) * 1000)

    # -- similar works ------------------------------------------------------------------------------
    def similar(self, key: str | None = None, *, text: str | None = None, keys: Iterable[str] | None = None, k: int = 10,
                filters: SearchFilters | dict | None = None) -> list[SearchHit]:
        """Works closest to one work (``key``), to free ``text``, or to the centroid of several ``keys``.

        The given keys are never returned. Scores are cosines of the works' vectors (dense).
        """
        given = [x for x in ([key] if key else []) + list(keys or [])]
        if sum(x is not None and x != [] for x in (key, text, keys)) != 1:
            raise ValueError("similar() takes exactly one of key=, text= or keys=")
        for g in given:
            if g not in self._pos:
                near = self.catalog.suggest(g) if self.catalog is not None else close(g, self.keys)
                raise UnknownFilterValueError("keys" if keys else "key", g, near, what="work key")
        if text is not None:
            text = clean(text)
            if not text:
                return []
            q = self._query_vector(text)
        else:
            if not given:
                return []
            q = _normalize(self.vectors[[self._pos[g] for g in given]].mean(axis=0))
        mask = self._mask(filters)
        exclude = {self._pos[g] for g in given}
        if self.ann is not None and (mask is None or mask.sum() > self.config.exact_filter_limit):
            want = max(4 * k, 50) + len(exclude)  # candidates from the graph, re-scored exactly
            count = want
            while True:
                got = np.asarray(self.ann.search(q, count=count).keys, np.int64)
                ids = np.array([i for i in got.tolist() if i not in exclude and (mask is None or mask[i])], np.int64)
                if len(ids) >= min(want, k) or count >= len(self):
                    break
                count = min(len(self), count * 4)
            sims = _dot(self.vectors, q, ids) if len(ids) else np.zeros(0, np.float32)
            order = np.lexsort((ids, -sims))[:k]
            ids, sims = ids[order], sims[order]
        else:
            sims_all = _dot(self.vectors, q)
            allowed = np.ones(len(self), bool) if mask is None else mask.copy()
            allowed[list(exclude)] = False
            pos = np.flatnonzero(allowed)
            order = pos[np.lexsort((pos, -sims_all[pos]))][:k]
            ids, sims = order, sims_all[order]
        return [SearchHit(self.keys[int(i)], float(s), 0.0, float(s)) for i, s in zip(ids, sims)]

    # -- growth -------------------------------------------------------------------------------------
    def add_works(self, works: Iterable) -> int:
        """Add works (e.g. user imports); embeds only texts the cache lacks. Returns the texts embedded."""
        works = list(works)
        if not works:
            return 0
        if self.catalog is None:
            raise ValueError("add_works needs an index built from a catalog")
        before = self.embedded
        old_ann, old_n = self.ann, len(self)
        self.catalog = self.catalog.with_works(works, strict=True)  # a clash here is the caller's error
        corpus = build_corpus(self.catalog, self.include_summaries, self.config.ancestor_decay)
        self._embed_corpus(corpus)
        if old_ann is not None:  # keep the HNSW graph and add only the new rows
            self._set_corpus(corpus, build_ann=False)
            old_ann.add(np.arange(old_n, len(self), dtype=np.uint64), self.vectors[old_n:])
            self.ann = old_ann
        else:
            self._set_corpus(corpus)
        return self.embedded - before

"""Auto-placement: the taxonomy nodes a new work most likely belongs to, with a confidence.

Two signals over all-MiniLM-L6-v2 embeddings (unit vectors, so dot product = cosine):

* description: how close the work's text is to each node's name + description,
  p_desc(n) = softmax_n(cos(w, d_n) / T_desc);
* neighbours: the k most similar already-placed works vote for their nodes, weighted by
  similarity, p_nb(n) = sum_j softmax_j(cos(w, w_j) / T_nb) * [n in nodes(j)] / |nodes(j)|.

The combined score is p(n) = a * p_desc(n) + (1 - a) * p_nb(n); ``a`` and the temperatures were
chosen by the leave-one-out evaluation in benchmarks/placement_eval.py (docs/placement_evaluation.md).
The top three nodes are suggested; the user accepts or corrects them.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from papers.schema import Work

Encode = Callable[[list[str]], np.ndarray]


def placement_text(work: Work) -> str:
    """What a work says about itself, with nothing that reveals its placement."""
    parts = [work.title]
    if work.name and work.name.lower() not in work.title.lower():
        parts.append(work.name)
    if work.summary:
        parts.append(work.summary)
    if work.abstract:
        parts.append(work.abstract)
    if work.keywords:
        parts.append("Keywords: " + "; ".join(work.keywords))
    return ". ".join(parts)


def placed_works(catalog) -> list[Work]:
    """The works a ``Placer`` learns from by default: every catalog work that has a node."""
    return [w for w in catalog if w.nodes]


def placer_texts(catalog) -> list[str]:
    """The texts a default ``Placer`` of ``catalog`` embeds: each node's, then each placed work's
    (``scripts/ship_embeddings.py`` ships their vectors, so a new data folder does not embed them again)."""
    tax = catalog.taxonomy
    return [node_text(n, tax) for n in tax] + [placement_text(w) for w in placed_works(catalog)]


def node_text(node, taxonomy) -> str:
    path = " > ".join(taxonomy[p].name for p in taxonomy.path(node.id))
    return f"{path}. {node.description}"


def _softmax(x: np.ndarray, temperature: float) -> np.ndarray:
    z = (x - x.max(axis=-1, keepdims=True)) / temperature
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


@dataclass
class PlacementConfig:
    # chosen on half of the survey's works by benchmarks/placement_eval.py
    desc_weight: float = 0.5  # a
    desc_temperature: float = 0.05
    neighbour_temperature: float = 0.1
    k_neighbours: int = 80


class Placer:
    def __init__(self, catalog, encode: Encode, config: PlacementConfig | None = None,
                 placed: Sequence[Work] | None = None, placed_vectors: np.ndarray | None = None,
                 encode_new: Encode | None = None):
        """``encode`` embeds node and placed-work texts (the same every time: cache them);
        ``encode_new`` embeds new works (a bulk import should not grow the shared cache)."""
        self.catalog, self.encode = catalog, encode
        self.encode_new = encode_new or encode
        self.config = config or PlacementConfig()
        tax = catalog.taxonomy
        self.node_ids = [n.id for n in tax]
        self._node_index = {n: i for i, n in enumerate(self.node_ids)}
        self.node_vectors = encode([node_text(n, tax) for n in tax])
        placed = list(placed if placed is not None else placed_works(catalog))
        self.placed_keys = [w.key for w in placed]
        self.placed_vectors = placed_vectors if placed_vectors is not None else encode([placement_text(w) for w in placed])
        # membership[j, n] = 1/|nodes(j)| if work j is placed in node n
        self.membership = np.zeros((len(placed), len(self.node_ids)), dtype=np.float32)
        for j, w in enumerate(placed):
            for nid in w.nodes:
                self.membership[j, self._node_index[nid]] = 1.0 / len(w.nodes)

    def scores(self, vectors: np.ndarray, exclude: Sequence[int | None] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(p_desc, p_nb), each (batch, n_nodes). ``exclude[i]`` hides placed work i's own row (leave-one-out)."""
        c = self.config
        p_desc = _softmax(vectors @ self.node_vectors.T, c.desc_temperature)
        sims = vectors @ self.placed_vectors.T
        if exclude is not None:
            for i, j in enumerate(exclude):
                if j is not None:
                    sims[i, j] = -np.inf
        k = min(c.k_neighbours, sims.shape[1])
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        top_sims = np.take_along_axis(sims, top, axis=1)
        weights = _softmax(top_sims, c.neighbour_temperature)
        p_nb = np.einsum("bk,bkn->bn", weights, self.membership[top])
        p_nb /= np.maximum(p_nb.sum(axis=1, keepdims=True), 1e-12)
        return p_desc, p_nb

    def combine(self, p_desc: np.ndarray, p_nb: np.ndarray, desc_weight: float | None = None) -> np.ndarray:
        a = self.config.desc_weight if desc_weight is None else desc_weight
        return a * p_desc + (1 - a) * p_nb

    def suggest_vectors(self, vectors: np.ndarray, k: int = 3) -> list[list[tuple[str, float]]]:
        p = self.combine(*self.scores(vectors))
        order = np.argsort(-p, axis=1)[:, :k]
        return [[(self.node_ids[j], round(float(p[i, j]), 4)) for j in row] for i, row in enumerate(order)]

    def embed_works(self, works: Sequence[Work]) -> np.ndarray:
        return self.encode_new([placement_text(w) for w in works])

    def suggest(self, works: Sequence[Work], k: int = 3) -> list[list[tuple[str, float]]]:
        """Top-``k`` (node id, confidence) for each work."""
        if not works:
            return []
        return self.suggest_vectors(self.embed_works(works), k)


def default_encoder(cache_new: bool = True) -> Encode:
    """all-MiniLM-L6-v2 through the search package's on-disk embedding cache.

    With ``cache_new`` False, texts missing from the cache are embedded but not added to it (bulk
    imports keep their vectors in the user database; the cache file is rewritten whole on save).
    """
    from papers.search.embed import EmbeddingCache, MiniLMEmbedder, embed_with_cache, text_hash

    from papers.search.index import shipped_embeddings_path

    embedder = MiniLMEmbedder()
    cache = EmbeddingCache(EmbeddingCache.default_path(embedder.model_id), embedder.model_id, embedder.dim).load()
    # the catalog's own placement texts are shipped (``placer_texts``): a new data folder does not spend a
    # minute of CPU embedding ~700 texts before its first suggestion
    shipped = EmbeddingCache(shipped_embeddings_path(embedder.model_id), embedder.model_id, embedder.dim)
    cache.fill_from(shipped.load())

    def encode(texts: list[str]) -> np.ndarray:
        texts = list(texts)
        if cache_new:
            vectors, n_new = embed_with_cache(texts, embedder, cache)
            if n_new:
                cache.save()
            return vectors
        vectors, missing = cache.get_many([text_hash(t) for t in texts])
        if missing:
            vectors[missing] = embedder.encode([texts[i] for i in missing])
        return vectors

    encode.model_id = embedder.model_id  # type: ignore[attr-defined]
    return encode

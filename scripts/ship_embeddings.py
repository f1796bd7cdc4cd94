"""Write the catalog's search and placement vectors into papers/data/search/ (developers: after the catalog's texts
change).

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/ship_embeddings.py

A new data folder's first search index is seeded from this file (``SearchIndex.load_or_build``), so it embeds only
the texts that changed since, not the whole catalog on the user's CPU; its first import's placer
(``papers.placement.default_encoder``) likewise finds the node and placed-work texts (``placer_texts``) there. The
file is the data folder's cache format (vectors keyed by the SHA-256 of each text, with a checksum);
tests/test_search.py fails when the shipped vectors no longer cover the catalog's texts.
"""
from __future__ import annotations

import sys

from papers import Catalog
from papers.placement import placer_texts
from papers.search.embed import EmbeddingCache, embed_with_cache
from papers.search.index import SearchIndex, default_embedder, shipped_embeddings_path


def main() -> int:
    embedder = default_embedder()
    path = shipped_embeddings_path(embedder.model_id)
    path.unlink(missing_ok=True)  # only the current catalog's texts: built from nothing
    catalog = Catalog.load()
    index = SearchIndex.load_or_build(catalog, embedder=embedder, cache_path=path)
    cache = EmbeddingCache(path, embedder.model_id, embedder.dim).load()
    _, placement_embedded = embed_with_cache(placer_texts(catalog), embedder, cache)
    cache.save()
    print(f"{path}: {index.embedded + placement_embedded} texts embedded, {path.stat().st_size / 1e6:.1f} MB",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Semantic search over the catalog: BM25 + MiniLM embeddings, fused; filters; similar works.

    from papers.search import SearchIndex, SearchFilters
    index = SearchIndex.load_or_build(catalog)          # embeddings cached under data_dir()/search/
    res = index.search("agents that learn to query a web search engine", k=10,
                       filters=SearchFilters(kinds=["method"], year_from=2025))
    res.total, [(h.key, h.score, h.matched_terms) for h in res.hits]
    index.similar(key="search-r1", k=5)

sentence-transformers is imported only when a text has to be embedded (a query, or a work the
cache lacks). How the scores are formed and why: ``papers/search/index.py`` and
docs/search_evaluation.md.
"""
from papers.search.filters import SearchFilters, UnknownFilterValueError
from papers.search.index import Corpus, SearchConfig, SearchHit, SearchIndex, SearchResults, build_corpus, default_embedder

__all__ = ["Corpus", "SearchConfig", "SearchFilters", "SearchHit", "SearchIndex", "SearchResults", "UnknownFilterValueError",
           "build_corpus", "default_embedder"]

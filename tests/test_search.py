"""papers.search: filters, fusion, the embedding cache, bad input, similar works, ANN, the CLI.

Most tests use ``HashEmbedder`` (a deterministic hashed bag of words, milliseconds to build); the
tests that need meaning use the real all-MiniLM-L6-v2, loaded once per session, over a small
sub-catalog so that embedding it takes seconds.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from papers import Catalog, UnknownKeyError, Work
from papers.search import SearchConfig, SearchFilters, SearchHit, SearchIndex, SearchResults, UnknownFilterValueError, build_corpus
from papers.search.embed import EmbeddingCache, MiniLMEmbedder, text_hash
from papers.search.synthetic import HashEmbedder, synthetic_corpus
from papers.search.text import clean, query_terms
from taxonomy import Taxonomy

from inprocess import papers_cli

ROOT = Path(__file__).resolve().parents[1]


# -- fixtures ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hidx(catalog):
    """The full catalog with hashed-bag-of-words vectors (no model, no disk cache)."""
    return SearchIndex.load_or_build(catalog, embedder=HashEmbedder(), use_cache=False)


@pytest.fixture(scope="session")
def minilm():
    emb = MiniLMEmbedder()
    emb.model()
    return emb


SMALL_KEYS = [
    "search-r1", "r1-searcher", "re-search", "zerosearch", "deepresearcher", "webshop", "webarena", "browsecomp",
    "swe-rl", "deepswe", "swe-bench", "rltf", "acecoder", "rlef", "digirl", "ui-tars", "mobilegui-rl", "osworld",
    "memory-r1", "memagent", "mem1", "memgpt", "zep", "deepseek-prover-v2", "minif2f", "kimina-prover",
    "dpo", "simpo", "orpo", "kto", "ppo", "dapo", "deepseekmath", "openrlhf", "verl", "rllib",
    "spiral", "marft", "vla-rl", "vlm-r1", "l1", "thinkprune", "ttrl", "torl", "retool",
]


@pytest.fixture(scope="session")
def small_catalog(catalog):
    """A sub-catalog (45 works, only the taxonomy nodes on their paths) for tests with the real model."""
    works = {k: catalog.get(k) for k in SMALL_KEYS}
    tax = catalog.taxonomy
    keep = {a for w in works.values() for n in w.nodes for a in tax.path(n)}
    small_tax = Taxonomy([n for n in tax if n.id in keep], source="test")
    return Catalog(works, small_tax, catalog.tables)


@pytest.fixture(scope="session")
def real_index(small_catalog, minilm, tmp_path_factory):
    return SearchIndex.load_or_build(small_catalog, embedder=minilm, cache_path=tmp_path_factory.mktemp("cache") / "emb.npz")


@pytest.fixture(scope="module")
def warm_data_dir(catalog, tmp_path_factory):
    """An ATLAS_DATA_DIR whose MiniLM cache already holds (hashed stand-in) vectors for every text of the
    catalog: commands that use it never embed a work, and only a query loads the real model."""
    root = tmp_path_factory.mktemp("atlas-data")
    emb = MiniLMEmbedder()  # model_id only; the model is not loaded
    corpus = build_corpus(catalog)
    texts = corpus.dense_texts + corpus.node_texts
    cache = EmbeddingCache(EmbeddingCache.default_path(emb.model_id, root), emb.model_id, emb.dim)
    cache.put_many([text_hash(t) for t in texts], HashEmbedder().encode(texts))
    cache.save()
    return root


def run_cli(*args, data_dir: Path, stdin: str | None = None):
    """``python -m papers search ARGS`` with ``ATLAS_DATA_DIR=data_dir``, run in this process."""
    return papers_cli("search", *args, data_dir=data_dir, stdin=stdin, cwd=ROOT)


def browse_keys(idx, **filters) -> list[str]:
    return idx.search("", k=10_000, filters=SearchFilters(**filters)).keys


# -- filters -----------------------------------------------------------------------------------------
def test_node_filter_includes_descendants(hidx, catalog):
    got = set(browse_keys(hidx, nodes=["memory"]))
    assert got == {w.key for w in catalog.works_in("memory")} and "memory-r1" in got and "memagent" in got
    two = set(browse_keys(hidx, nodes=["memory", "gui"]))  # values of one filter are alternatives
    assert two == got | {w.key for w in catalog.works_in("gui")}
    assert set(browse_keys(hidx, nodes=["Memory"])) == got  # an exact node name works too


def test_each_filter(hidx, catalog):
    works = {w.key: w for w in catalog}
    tax = catalog.taxonomy
    env = browse_keys(hidx, dimensions=["environment"])
    assert env and all(any(tax[n].dimension == "environment" for n in works[k].nodes) for k in env)
    yrs = browse_keys(hidx, year_from=2023, year_to=2024)
    assert set(yrs) == {k for k, w in works.items() if w.year and 2023 <= w.year <= 2024}
    assert set(browse_keys(hidx, kinds=["benchmark", "environment"])) == {k for k, w in works.items() if w.kind in ("benchmark", "environment")}
    grpo = set(browse_keys(hidx, algorithms=["grpo"]))
    assert grpo == {k for k, w in works.items() if "GRPO" in w.algorithms} and "deepseekmath" in grpo
    assert set(browse_keys(hidx, algorithms=["alg-grpo"])) == grpo  # algorithm node id
    assert set(browse_keys(hidx, has_code=True)) == {k for k, w in works.items() if w.code_url}
    assert set(browse_keys(hidx, has_code=False)) == {k for k, w in works.items() if not w.code_url}
    no_mem = set(browse_keys(hidx, exclude_nodes=["memory"]))
    assert no_mem == set(works) - {w.key for w in catalog.works_in("memory")}
    assert set(browse_keys(hidx, exclude_kinds=["survey", "foundation"])) == {k for k, w in works.items() if w.kind not in ("survey", "foundation")}


def test_filters_combine_and_apply_to_ranked_search(hidx, catalog):
    f = SearchFilters(nodes=["tasks"], kinds=["method"], year_from=2025, exclude_nodes=["gui"], has_code=True)
    allowed = set(browse_keys(hidx, **f.to_dict()))
    assert allowed
    for k in allowed:
        w = catalog.get(k)
        assert w.kind == "method" and w.year >= 2025 and w.code_url and "gui" not in catalog.placements(k, expand=True)
    for mode in ("hybrid", "lexical", "dense"):
        res = hidx.search("reinforcement learning agents", k=50, filters=f, mode=mode)
        assert res.hits and set(res.keys) <= allowed and res.total <= len(allowed)


def test_browse_is_newest_first_then_key(hidx, catalog):
    res = hidx.search("", k=10_000, filters=SearchFilters(kinds=["benchmark"]))
    assert res.browse and res.total == sum(w.kind == "benchmark" for w in catalog) == len(res.hits)
    order = [(-(catalog.get(k).year or 0), k) for k in res.keys]
    assert order == sorted(order)
    everything = hidx.search("", k=5)
    assert everything.total == len(catalog) and len(everything.hits) == 5


@pytest.mark.parametrize("field,value,hint", [
    ("nodes", "memroy", "memory"), ("exclude_nodes", "gui-agnet", "gui"), ("dimensions", "enviroment", "environment"),
    ("kinds", "benchmarks", "benchmark"), ("exclude_kinds", "surveys", "survey"), ("algorithms", "GRPOO", "GRPO"),
])
def test_unknown_filter_value_names_value_and_filter(hidx, field, value, hint):
    with pytest.raises(UnknownFilterValueError) as e:
        hidx.search("agents", filters=SearchFilters(**{field: [value]}))
    msg = str(e.value)
    assert value in msg and f"'{field}'" in msg and hint in msg, msg
    assert isinstance(e.value, UnknownKeyError) and isinstance(e.value, ValueError)
    assert e.value.filter == field and e.value.value == value


def test_other_bad_filter_values(hidx):
    with pytest.raises(ValueError, match="year_from=2026 is after year_to=2024"):
        SearchFilters(year_from=2026, year_to=2024)
    with pytest.raises(UnknownFilterValueError, match="has_code"):
        SearchFilters(has_code="yes")
    with pytest.raises(UnknownFilterValueError, match="year_from"):
        SearchFilters(year_from="soon")
    assert SearchFilters(year_from="2024").year_from == 2024
    with pytest.raises(UnknownFilterValueError, match="hybrid"):
        hidx.search("agents", mode="hybird")
    assert hidx.search("agents", filters={"kinds": ["survey"]}).hits  # a plain dict is accepted


# -- fusion ------------------------------------------------------------------------------------------
def test_rrf_fusion_form(hidx):
    lex = np.array([5.0, 4.0, 0.0, 1.0])
    dense = np.array([0.5, 0.9, 0.8, 0.1])
    cfg = hidx.config
    fused = hidx._fuse(lex, dense, lex > 0, np.ones(4, bool))
    k, a = cfg.rrf_k, cfg.alpha
    assert np.allclose(fused, [(1 - a) / (k + 1) + a / (k + 3), (1 - a) / (k + 2) + a / (k + 1), a / (k + 2), (1 - a) / (k + 3) + a / (k + 4)])
    assert fused[0] > fused[3] and fused[1] > fused[2]  # matching on both sides beats one side
    assert cfg.fusion == "rrf" and 0 < cfg.alpha < 1


def test_modes_differ_and_hybrid_combines(real_index):
    q = "agents that learn to call a web search engine while they reason"
    res = {m: real_index.search(q, k=10, mode=m) for m in ("lexical", "dense", "hybrid")}
    assert all(isinstance(r, SearchResults) and r.hits for r in res.values())
    assert all(h.lexical_score > 0 for h in res["lexical"].hits)
    assert all(h.dense_score >= real_index.config.dense_floor for h in res["dense"].hits)
    top = res["hybrid"].keys[:5]
    assert {"search-r1", "r1-searcher", "re-search"} & set(top), top
    h = res["hybrid"].hits[0]
    assert isinstance(h, SearchHit) and h.lexical_score > 0 and h.dense_score > 0 and h.score > 0
    scores = [x.score for x in res["hybrid"].hits]
    assert scores == sorted(scores, reverse=True)


def test_dense_finds_paraphrase_without_shared_words(real_index):
    # no query word occurs in DPO's title
    res = real_index.search("aligning to pairwise human choices without fitting a reward network", k=5, mode="dense")
    assert {"dpo", "simpo", "orpo", "kto"} & set(res.keys), res.keys


def test_matched_terms_and_nodes(real_index, small_catalog):
    res = real_index.search("GUI agents for phones trained online", k=5)
    assert res.hits
    for h in res.hits:
        assert set(h.matched_terms) <= {"GUI", "agents", "phones", "trained", "online"}
        assert set(h.matched_nodes) <= set(small_catalog.placements(h.key, expand=True))
    top = res.hits[0]
    assert "GUI" in top.matched_terms and any(n.startswith("gui") for n in top.matched_nodes), top


def test_pagination(hidx):
    full = hidx.search("policy optimization for language models", k=30)
    pages = [hidx.search("policy optimization for language models", k=10, offset=o) for o in (0, 10, 20)]
    assert sum((p.keys for p in pages), []) == full.keys[:30]
    assert all(p.total == full.total for p in pages)
    assert hidx.search("policy optimization", k=10, offset=10_000).hits == []


# -- the embedding cache -----------------------------------------------------------------------------
class CountingEmbedder(HashEmbedder):
    def __init__(self, model_id="counting-test-model"):
        super().__init__(model_id=model_id)


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    return tmp_path


def _cache_file(data_dir: Path, model_id="counting-test-model") -> Path:
    return EmbeddingCache.default_path(model_id, data_dir)


def test_second_build_embeds_nothing(catalog, data_dir):
    first = CountingEmbedder()
    a = SearchIndex.load_or_build(catalog, embedder=first)
    n_texts = len(catalog) + len(catalog.taxonomy)
    assert a.embedded == first.calls == n_texts and _cache_file(data_dir).exists()
    second = CountingEmbedder()
    b = SearchIndex.load_or_build(catalog, embedder=second)
    assert b.embedded == 0 and second.calls == 0 and b.cache.status == "loaded"
    assert np.array_equal(a.vectors, b.vectors)
    assert a.search("memory agents", k=5).keys == b.search("memory agents", k=5).keys


def test_add_works_embeds_only_new(catalog, data_dir):
    emb = CountingEmbedder()
    idx = SearchIndex.load_or_build(catalog, embedder=emb)
    calls = emb.calls
    new = Work(key="my-octopus-agent", title="Octopus arms as independent tool-using agents", year=2026, kind="method",
               nodes=("tool-use",), summary="A user-imported paper about cephalopod-inspired decentralised tool use.",
               origin="user")
    assert idx.add_works([new]) == 1 and emb.calls == calls + 1
    assert len(idx) == len(catalog) + 1 and "my-octopus-agent" in idx
    assert idx.search("cephalopod octopus", k=3).keys[0] == "my-octopus-agent"
    assert "my-octopus-agent" in browse_keys(idx, nodes=["tool-use"], year_from=2026)
    again = CountingEmbedder()  # the new work's vector was saved too
    assert SearchIndex.load_or_build(catalog.with_works([new]), embedder=again).embedded == 0 and again.calls == 0
    with pytest.raises(ValueError, match="already exists"):
        idx.add_works([new])


def _rewrite_npz(path: Path, **changes):
    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    data.update(changes)
    with open(path, "wb") as f:
        np.savez(f, **data)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "checksum", "model", "dim", "format", "nan"])
def test_corrupt_or_stale_cache_is_rebuilt(catalog, data_dir, damage, caplog):
    SearchIndex.load_or_build(catalog, embedder=CountingEmbedder())
    path = _cache_file(data_dir)
    raw = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"this is not a cache file" * 10)
    elif damage == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "checksum":  # a flipped vector, well-formed file
        with np.load(path) as z:
            v = z["vectors"].copy()
        v[3, 7] += 0.5
        _rewrite_npz(path, vectors=v)
    elif damage == "model":
        _rewrite_npz(path, model=np.array("some-other-model"))
    elif damage == "dim":
        with np.load(path) as z:
            v = z["vectors"][:, :100].copy()
        _rewrite_npz(path, vectors=v, dim=np.array(100))
    elif damage == "format":
        _rewrite_npz(path, format=np.array("0"))
    elif damage == "nan":
        with np.load(path) as z:
            v, h = z["vectors"].copy(), z["hashes"]
        v[0, 0] = np.nan
        _rewrite_npz(path, vectors=v, checksum=np.array(EmbeddingCache._checksum(h, v)))
    emb = CountingEmbedder()
    idx = SearchIndex.load_or_build(catalog, embedder=emb)
    assert idx.cache.status == "loaded" and idx.embedded == len(catalog) + len(catalog.taxonomy)
    assert "rebuilt" in caplog.text
    assert idx.search("memory agents", k=3).hits  # search works
    again = CountingEmbedder()
    assert SearchIndex.load_or_build(catalog, embedder=again).embedded == 0  # and the file was repaired


def test_cache_is_keyed_by_model(catalog, data_dir):
    SearchIndex.load_or_build(catalog, embedder=CountingEmbedder("model-a"))
    other = CountingEmbedder("model-b")
    assert SearchIndex.load_or_build(catalog, embedder=other).embedded == len(catalog) + len(catalog.taxonomy)
    assert _cache_file(data_dir, "model-a").exists() and _cache_file(data_dir, "model-b").exists()


def test_building_from_cache_never_imports_sentence_transformers(warm_data_dir):
    code = (
        "import sys; from papers import Catalog; from papers.search import SearchIndex, SearchFilters\n"
        "idx = SearchIndex.load_or_build(Catalog.load())\n"
        "r = idx.search('', filters=SearchFilters(kinds=['benchmark']))\n"
        "print(idx.embedded, r.total, 'sentence_transformers' in sys.modules, 'torch' in sys.modules)\n"
    )
    env = dict(os.environ, ATLAS_DATA_DIR=str(warm_data_dir))
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    embedded, total, st, torch = r.stdout.split()
    assert embedded == "0" and int(total) > 0 and st == "False" and torch == "False"


# -- bad input ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("query", [
    "", "   \t\n ", None, "x" * 10_000, "agent " * 2000, "Vérification formelle — théorème 定理 証明 for agents",
    "🤖🔍 web agents 🚀", "\x00\x07search\x1b[31m engine\u202e agents\x7f", "the of and", "'; DROP TABLE works; --",
    "\ud800 lone surrogate", "((((", "a", "*" * 300,
])
def test_bad_queries_never_crash(hidx, query):
    text = clean(query or "")
    words = set(query_terms(text).values())
    for mode in ("hybrid", "lexical", "dense"):
        res = hidx.search(query, k=5, mode=mode)
        keys = [h.key for h in res.hits]
        assert res.mode == mode and res.browse == (not text)  # only a query with nothing left in it browses
        assert len(keys) == min(5, res.total)  # a full page whenever there are enough matches
        assert len(set(keys)) == len(keys) and all(k in hidx for k in keys)  # real works, each once
        if not text:
            assert res.total == len(hidx)
            continue
        # the query is searched as cleaned: no control or format characters left, spaces collapsed
        assert res.query == text and not any(unicodedata.category(c) in ("Cc", "Cf", "Cs") for c in res.query)
        scores = [h.score for h in res.hits]
        assert scores == sorted(scores, reverse=True)
        assert all(set(h.matched_terms) <= words for h in res.hits)  # only words the user typed are "matched"
        if mode == "lexical":
            # a lexical hit contains a query word; a query without one (stop words, symbols) matches nothing
            assert all(h.lexical_score > 0 and h.matched_terms for h in res.hits)
            if not words:
                assert res.total == 0


def test_control_characters_are_removed(hidx):
    res = hidx.search("search\x00\x1b engine\u200b", k=3, mode="lexical")
    assert res.query == "search engine" and res.hits and "search" in res.hits[0].matched_terms


def test_long_unicode_queries_with_the_real_model(real_index):
    long_q = ("Agents that call a search engine while reasoning, trained with reinforcement learning. " * 120)[:10_000]
    assert len(long_q) == 10_000
    res = real_index.search(long_q, k=5)
    assert res.hits and res.hits[0].key in {"search-r1", "r1-searcher", "re-search", "deepresearcher", "zerosearch"}
    # symbols only: no word, nothing close in meaning; not an empty query either (that would browse)
    symbols = real_index.search("🤖🔍", k=3)
    assert not symbols.browse and symbols.total == 0 and symbols.hits == []
    # the one known word still finds the Lean provers; the CJK and emoji around it change nothing
    mixed = real_index.search("定理証明 Lean 🧮", k=3)
    assert {h.key for h in mixed.hits} == {"kimina-prover", "minif2f", "deepseek-prover-v2"}
    assert all(h.matched_terms == ["Lean"] for h in mixed.hits)
    # control characters only: cleaned to an empty query, which browses every work
    control = real_index.search("\x00\x01\x02", k=3)
    assert control.browse and control.total == len(real_index) and len(control.hits) == 3
    # accented words survive normalisation intact (and no work contains them)
    accented = real_index.search("ümlaut façade naïve", k=3, mode="lexical")
    assert accented.query == "ümlaut façade naïve" and accented.total == 0


def test_k_and_offset_edges(hidx):
    assert hidx.search("memory", k=0).hits == [] and hidx.search("memory", k=0).total > 0
    assert hidx.search("memory", k=-5).hits == []
    assert len(hidx.search("memory", k=3, offset=-2).hits) == 3


# -- similar works -----------------------------------------------------------------------------------
def test_similar_by_key_text_and_keys(real_index, small_catalog):
    sim = real_index.similar(key="search-r1", k=5)
    keys = [h.key for h in sim]
    assert "search-r1" not in keys and len(keys) == 5
    assert {"r1-searcher", "re-search", "zerosearch", "deepresearcher"} & set(keys[:3]), keys
    scores = [h.score for h in sim]
    assert scores == sorted(scores, reverse=True) and all(-1 <= s <= 1 for s in scores)
    by_text = real_index.similar(text="formal theorem proving in Lean with a proof checker as reward", k=3)
    assert {"deepseek-prover-v2", "kimina-prover", "minif2f"} & {h.key for h in by_text}
    group = real_index.similar(keys=["dpo", "simpo"], k=4)
    gk = [h.key for h in group]
    assert "dpo" not in gk and "simpo" not in gk and {"orpo", "kto"} & set(gk), gk
    only_benchmarks = real_index.similar(key="search-r1", k=3, filters=SearchFilters(kinds=["benchmark", "environment"]))
    assert only_benchmarks and all(small_catalog.get(h.key).kind in ("benchmark", "environment") for h in only_benchmarks)
    assert real_index.similar(text="   ", k=3) == []


def test_similar_bad_arguments(hidx):
    with pytest.raises(UnknownKeyError, match="serch-r1"):
        hidx.similar(key="serch-r1")
    with pytest.raises(UnknownKeyError, match="search-r1"):  # suggestion
        hidx.similar(keys=["search-r1", "serch-r1"])
    with pytest.raises(ValueError, match="exactly one"):
        hidx.similar(key="search-r1", text="x")
    with pytest.raises(ValueError, match="exactly one"):
        hidx.similar()


# -- approximate nearest neighbours ------------------------------------------------------------------
def test_ann_index_above_threshold(catalog):
    emb = HashEmbedder()
    exact = SearchIndex.load_or_build(catalog, embedder=emb, use_cache=False)
    ann = SearchIndex.load_or_build(catalog, embedder=emb, use_cache=False, config=SearchConfig(ann_threshold=100, ann_candidates=50))
    assert exact.ann is None and ann.ann is not None and len(ann.ann) == len(catalog)
    overlap = []
    for q in ("memory for agents", "GUI automation", "formal theorem proving", "multi-agent debate", "code generation with unit tests"):
        a, e = ann.search(q, k=10, mode="dense"), exact.search(q, k=10, mode="dense")
        assert a.approximate and not e.approximate
        overlap.append(len(set(a.keys) & set(e.keys)) / 10)
        h = ann.search(q, k=10)
        assert h.hits and h.total >= len(h.hits)
    assert np.mean(overlap) >= 0.9, overlap
    f = SearchFilters(nodes=["math"], kinds=["method"])
    allowed = set(browse_keys(exact, **f.to_dict()))
    res = ann.search("theorem proving", k=10, filters=f)
    assert res.hits and set(res.keys) <= allowed
    sim = ann.similar(key="search-r1", k=5)
    assert len(sim) == 5 and "search-r1" not in [h.key for h in sim]
    new = Work(key="user-ann-work", title="A user work about GUI automation agents", kind="method", nodes=("gui",), origin="user")
    ann.add_works([new])
    assert len(ann.ann) == len(catalog) + 1 and "user-ann-work" in ann.search("GUI automation agents user work", k=20).keys


def test_synthetic_corpus_with_ann(catalog):
    corpus = synthetic_corpus(catalog, 3000, seed=1)
    idx = SearchIndex(corpus, HashEmbedder(), SearchConfig(ann_threshold=1000), taxonomy=catalog.taxonomy)
    assert idx.ann is not None and len(idx) == 3000
    res = idx.search("agent memory reinforcement", k=10)
    assert len(res.hits) == 10 and res.approximate
    f = SearchFilters(nodes=["code"], year_from=2025)
    res = idx.search("agent memory reinforcement", k=10, filters=f)
    allowed = set(idx.search("", k=10_000, filters=f).keys)
    assert res.hits and set(res.keys) <= allowed
    lex = idx.search("agent memory reinforcement", k=10, mode="lexical")
    assert len(lex.hits) == 10 and all(h.lexical_score > 0 for h in lex.hits) and not lex.approximate
    dense = idx.search("agent memory reinforcement", k=10, mode="dense")
    assert dense.approximate and all(h.lexical_score == 0 for h in dense.hits)


# -- the CLI -----------------------------------------------------------------------------------------
def test_cli_batch_mode(tmp_path, warm_data_dir):
    qfile = tmp_path / "queries.txt"
    qfile.write_text("agents that search the web\n\nformal theorem proving 定理 🤖\n" + "x" * 10_000 + "\nmemory\x07 for agents\n",
                     encoding="utf-8")
    r = run_cli("--queries-file", str(qfile), "--k", "3", "--format", "json", data_dir=warm_data_dir)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4  # the blank line is not a query
    rows = [json.loads(x) for x in lines]
    assert rows[0]["query"] == "agents that search the web" and rows[1]["query"].endswith("🤖")
    for row in rows:
        assert set(row) == {"query", "results"} and len(row["results"]) <= 3
        for hit in row["results"]:
            assert set(hit) == {"key", "score"} and isinstance(hit["score"], float)
    assert rows[0]["results"]


def test_cli_batch_from_stdin_with_filters(warm_data_dir, catalog):
    r = run_cli("--queries-file", "-", "--k", "5", "--kind", "benchmark", "--mode", "lexical", data_dir=warm_data_dir,
                stdin="agents\ncode generation\n")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [x["query"] for x in rows] == ["agents", "code generation"]
    keys = [h["key"] for x in rows for h in x["results"]]
    assert keys and all(catalog.get(k).kind == "benchmark" for k in keys)


def cli(args, capsys, monkeypatch, data_dir):
    from papers.cli import main

    monkeypatch.setenv("ATLAS_DATA_DIR", str(data_dir))
    rc = main(["search", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_browse_and_errors(warm_data_dir, catalog, capsys, monkeypatch):
    rc, out, err = cli(["--kind", "benchmark", "--year-from", "2025", "--format", "json", "--k", "100"], capsys, monkeypatch, warm_data_dir)
    assert rc == 0, err
    data = json.loads(out)
    expected = {w.key for w in catalog if w.kind == "benchmark" and (w.year or 0) >= 2025}
    assert data["total"] == len(expected) and {x["key"] for x in data["results"]} == expected
    rc, out, err = cli(["--kind", "survey", "--exclude-node", "introduction"], capsys, monkeypatch, warm_data_dir)
    assert rc == 0 and "matching works" in out
    for args, must in [
        (["agents", "--node", "memroy"], ["memroy", "'nodes'", "memory"]),
        (["agents", "--exclude-kind", "surveys"], ["surveys", "exclude_kinds", "survey"]),
        (["agents", "--algorithm", "GRPOO"], ["GRPOO", "algorithms", "GRPO"]),
        (["agents", "--dimension", "tsak"], ["tsak", "dimensions", "task"]),
        (["agents", "--year-from", "2026", "--year-to", "2020"], ["year_from"]),
        (["--queries-file", "/nonexistent/q.txt"], ["queries file"]),
        (["--similar", "serch-r1"], ["serch-r1", "search-r1"]),
    ]:
        rc, out, err = cli(args, capsys, monkeypatch, warm_data_dir)
        assert rc == 2 and err.count("\n") == 1 and err.startswith("error: ") and all(m in err for m in must), (args, err)


def test_a_new_data_folder_is_seeded_from_the_shipped_vectors(data_dir):
    """papers/data/search/ ships the catalog's MiniLM vectors (scripts/ship_embeddings.py): a new data folder's
    first index of the shipped catalog embeds no text, and saves them into the data folder's own cache. Fails when
    the catalog's texts changed and the shipped vectors were not written again."""
    from papers import Catalog
    from papers.search.embed import MiniLMEmbedder
    from papers.search.index import shipped_embeddings_path

    model_id = MiniLMEmbedder().model_id  # the real model's id; the model itself is never loaded here
    assert shipped_embeddings_path(model_id).is_file()
    emb = CountingEmbedder(model_id=model_id)
    idx = SearchIndex.load_or_build(Catalog.load(), embedder=emb)
    assert idx.embedded == 0 and emb.calls == 0, "run scripts/ship_embeddings.py: the shipped vectors are stale"
    assert _cache_file(data_dir, model_id).is_file()  # the data folder keeps them
    # the placer's texts (every node, every placed work) are shipped too: a new data folder's first import
    # embeds only the new work
    from papers.placement import placer_texts
    from papers.search.embed import EmbeddingCache, text_hash

    shipped = EmbeddingCache(shipped_embeddings_path(model_id), model_id, MiniLMEmbedder.dim).load()
    _, missing = shipped.get_many([text_hash(t) for t in placer_texts(Catalog.load())])
    assert missing == [], "run scripts/ship_embeddings.py: the shipped placement vectors are stale"
    # a text that is not shipped is embedded, the rest still come from the shipped file
    new = Work(key="my-octopus-agent", title="Octopus arms as independent tool-using agents", year=2026,
               kind="method", nodes=("tool-use",), summary="A user paper.", origin="user")
    other = CountingEmbedder(model_id=model_id)
    (_cache_file(data_dir, model_id)).unlink()
    assert SearchIndex.load_or_build(Catalog.load().with_works([new]), embedder=other).embedded == 1
    # another model's shipped file is never used for this one
    assert SearchIndex.load_or_build(Catalog.load(), embedder=CountingEmbedder()).embedded > 700


QUERY_TEXTS = ["agentic reinforcement learning", "GRPO vs PPO for tool use?", "定理証明 Lean 🧮", "x",
               "Agents that call a search engine while reasoning. " * 80]  # the last is cut at 256 tokens


def test_a_query_is_encoded_as_sentence_transformers_encodes_it(minilm):
    """The query path (transformers alone, no sentence-transformers import) gives the model's own vectors."""
    from papers.search.embed import bare_query_encoder

    bare = bare_query_encoder(MiniLMEmbedder.model_path())
    assert bare is not None
    reference = minilm.model().encode(QUERY_TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    for text, ref in zip(QUERY_TEXTS, reference):
        vec = bare(text)
        assert vec.shape == (384,) and vec.dtype == np.float32
        np.testing.assert_allclose(vec, ref, atol=2e-6, err_msg=text[:40])
    # and what the index asks for: encode_query on a fresh embedder (bare path) equals encode (the model's)
    fresh = MiniLMEmbedder()
    np.testing.assert_allclose(fresh.encode_query(QUERY_TEXTS[1]), reference[1], atol=2e-6)


@pytest.mark.parametrize("change", ["cls pooling", "lower case", "extra module", "no modules file"])
def test_the_bare_query_path_refuses_another_module_stack(tmp_path, change):
    """A model folder that is not Transformer -> mean Pooling -> Normalize falls back to sentence-transformers
    (None), before any weight is read (the copied folder has none)."""
    import shutil

    from papers.search.embed import bare_query_encoder

    src = MiniLMEmbedder.model_path()
    for name in ("modules.json", "sentence_bert_config.json"):
        shutil.copy(src / name, tmp_path / name)
    (tmp_path / "1_Pooling").mkdir()
    shutil.copy(src / "1_Pooling" / "config.json", tmp_path / "1_Pooling" / "config.json")
    if change == "cls pooling":
        cfg = json.loads((tmp_path / "1_Pooling" / "config.json").read_text())
        cfg.update(pooling_mode_cls_token=True, pooling_mode_mean_tokens=False)
        (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(cfg))
    elif change == "lower case":
        cfg = json.loads((tmp_path / "sentence_bert_config.json").read_text())
        (tmp_path / "sentence_bert_config.json").write_text(json.dumps({**cfg, "do_lower_case": True}))
    elif change == "extra module":
        mods = json.loads((tmp_path / "modules.json").read_text())
        mods.append({"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"})
        (tmp_path / "modules.json").write_text(json.dumps(mods))
    else:
        (tmp_path / "modules.json").unlink()
    assert bare_query_encoder(tmp_path) is None


def test_a_query_does_not_import_sentence_transformers():
    """The first query after a server start waits for this import otherwise (seconds of CPU)."""
    code = ("import sys; from papers.search.embed import MiniLMEmbedder; "
            "v = MiniLMEmbedder().encode_query('tool use'); assert v.shape == (384,); "
            "print('sentence_transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"}, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"

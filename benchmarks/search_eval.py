"""Retrieval quality of papers.search on our own query set (benchmarks/search_queries.jsonl).

    .venv/bin/python benchmarks/search_eval.py                   # lexical / dense / hybrid, one table
    .venv/bin/python benchmarks/search_eval.py --both            # with and without summaries+keywords
    .venv/bin/python benchmarks/search_eval.py --no-summaries    # index text without summaries/keywords
    .venv/bin/python benchmarks/search_eval.py --sweep           # grid over the fusion form and weights
    .venv/bin/python benchmarks/search_eval.py --per-query       # first relevant rank per query and mode

Metrics (binary relevance; every listed key counts as relevant):
  hit@10  share of queries with at least one relevant work in the top 10
  MRR     mean of 1/rank of the first relevant work (rank within the top 100; 0 when absent)
  nDCG@10 DCG of the top 10 over the DCG of an ideal top 10
Embeddings come from the usual cache (ATLAS_DATA_DIR), so only the first run embeds.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from papers import Catalog  # noqa: E402
from papers.search import SearchConfig, SearchIndex, build_corpus  # noqa: E402

QUERIES = ROOT / "benchmarks" / "search_queries.jsonl"
MODES = ("lexical", "dense", "hybrid")


def load_queries(path: Path = QUERIES) -> list[dict]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append(json.loads(line))
    return out


def metrics(ranked: list[str], relevant: set[str]) -> dict[str, float]:
    first = next((i for i, k in enumerate(ranked[:100], 1) if k in relevant), None)
    dcg = sum(1 / math.log2(i + 1) for i, k in enumerate(ranked[:10], 1) if k in relevant)
    idcg = sum(1 / math.log2(i + 1) for i in range(1, min(10, len(relevant)) + 1))
    return {"hit@10": float(first is not None and first <= 10), "MRR": 1 / first if first else 0.0, "nDCG@10": dcg / idcg,
            "first": first}


def evaluate(index: SearchIndex, queries: list[dict], modes=MODES) -> dict[str, dict]:
    out = {}
    for mode in modes:
        per = []
        for q in queries:
            res = index.search(q["query"], k=100, mode=mode)
            per.append(metrics(res.keys, set(q["relevant"])))
        out[mode] = {m: statistics.fmean(p[m] for p in per) for m in ("hit@10", "MRR", "nDCG@10")}
        out[mode]["per_query"] = [p["first"] for p in per]
    return out


def table(results: dict[str, dict], title: str) -> str:
    lines = [f"**{title}**", "", "| method | hit@10 | MRR | nDCG@10 |", "|---|---|---|---|"]
    for mode in MODES:
        if mode in results:
            r = results[mode]
            lines.append(f"| {mode} | {r['hit@10']:.3f} | {r['MRR']:.3f} | {r['nDCG@10']:.3f} |")
    return "\n".join(lines)


def build(catalog, include_summaries: bool, config: SearchConfig | None = None) -> SearchIndex:
    return SearchIndex.load_or_build(catalog, include_summaries=include_summaries, config=config)


SWEEP_GRID = {
    "lex_node_weight": [0.0, 0.15, 0.3, 0.6],
    "dense_node_weight": [0.0, 0.25, 0.5, 1.0],
    "ancestor_decay": [0.0, 0.5],
}
SWEEP_FUSION = [("rrf", 10.0), ("rrf", 30.0), ("rrf", 60.0), ("convex", 0.0)]
SWEEP_ALPHA = [0.3, 0.4, 0.5, 0.6, 0.7]


def sweep(catalog, queries, include_summaries: bool) -> list[tuple[dict, dict]]:
    """Quality over a grid of node weights, fusion forms and weights (embeddings computed once)."""
    base = build(catalog, include_summaries)
    vectors, node_vectors = base.corpus.vectors, base.corpus.node_vectors
    rows = []
    corpora = {}
    for values in itertools.product(*SWEEP_GRID.values()):
        params = dict(zip(SWEEP_GRID, values))
        cfg = replace(SearchConfig(), **params)
        if cfg.ancestor_decay not in corpora:
            c = build_corpus(catalog, include_summaries, cfg.ancestor_decay)
            c.vectors, c.node_vectors = vectors, node_vectors
            corpora[cfg.ancestor_decay] = c
        idx = SearchIndex(corpora[cfg.ancestor_decay], base.embedder, cfg, catalog=catalog)
        single = evaluate(idx, queries, modes=("lexical", "dense"))
        for (fusion, k), alpha in itertools.product(SWEEP_FUSION, SWEEP_ALPHA):
            idx.config = replace(cfg, fusion=fusion, rrf_k=k or cfg.rrf_k, alpha=alpha)
            res = dict(single, **evaluate(idx, queries, modes=("hybrid",)))
            p = dict(params, fusion=fusion, rrf_k=k, alpha=alpha)
            rows.append((p, {m: {x: v for x, v in res[m].items()} for m in MODES}))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-summaries", action="store_true", help="index text without the works' summaries and keywords")
    ap.add_argument("--both", action="store_true", help="report with and without summaries/keywords")
    ap.add_argument("--sweep", action="store_true", help="grid over fusion forms and weights (hybrid, lexical, dense)")
    ap.add_argument("--per-query", action="store_true")
    ap.add_argument("--top", type=int, default=40, help="rows of the sweep to print")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args(argv)
    catalog = Catalog.load()
    queries = load_queries()
    print(f"{len(queries)} queries, {sum(len(q['relevant']) for q in queries)} relevance judgements, {len(catalog)} works\n")
    if args.sweep:
        rows = sweep(catalog, queries, not args.no_summaries)
        rows.sort(key=lambda r: (-r[1]["hybrid"]["MRR"], -r[1]["hybrid"]["hit@10"]))
        print("| lex_node_weight | dense_node_weight | ancestor_decay | fusion | rrf_k | alpha | lexical MRR | dense MRR | hybrid hit@10 | hybrid MRR | hybrid nDCG@10 |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for p, r in rows[: args.top]:
            print(f"| {p['lex_node_weight']} | {p['dense_node_weight']} | {p['ancestor_decay']} | {p['fusion']} | {p['rrf_k'] or '-'} | {p['alpha']} | "
                  f"{r['lexical']['MRR']:.3f} | {r['dense']['MRR']:.3f} | {r['hybrid']['hit@10']:.3f} | {r['hybrid']['MRR']:.3f} | {r['hybrid']['nDCG@10']:.3f} |")
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
        return 0
    settings = [True, False] if args.both else [not args.no_summaries]
    report = {}
    for include in settings:
        t = time.perf_counter()
        index = build(catalog, include)
        res = evaluate(index, queries)
        label = "index text with summaries and keywords" if include else "index text without summaries and keywords"
        print(table(res, label))
        print(f"\n(built in {time.perf_counter() - t:.1f} s, {index.embedded} texts embedded)\n")
        report[label] = res
        if args.per_query:
            print("| query | " + " | ".join(MODES) + " |\n|---|---|---|---|")
            for i, q in enumerate(queries):
                print(f"| {q['query'][:70]} | " + " | ".join(str(res[m]['per_query'][i] or '-') for m in MODES) + " |")
            print()
        h, lx, d = res["hybrid"], res["lexical"], res["dense"]
        ok = all(h[m] > max(lx[m], d[m]) for m in ("MRR", "hit@10"))
        print(f"hybrid beats both on MRR and hit@10: {'yes' if ok else 'NO'}\n")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Speed of papers.search: cold build, warm load from the cache, query latency at 573 / 100k / 1M works.

    .venv/bin/python benchmarks/search_bench.py                       # 573 works, 100k and 1M synthetic
    .venv/bin/python benchmarks/search_bench.py --sizes 100000        # only some synthetic sizes
    .venv/bin/python benchmarks/search_bench.py --no-catalog --json out.json

* 573 works (the catalog, real MiniLM): cold build in a fresh process with an empty data dir
  (imports sentence-transformers, embeds every text); warm load from the cache in a fresh process
  (what each new CLI call or app start pays; the model is not imported); warm query latency
  (model loaded, every query new so it is embedded; then the same queries again, vectors memoised).
* 100k / 1M synthetic works (random unit vectors, words drawn from the catalog's vocabulary,
  placements/years/kinds drawn from the catalog): index build (BM25, usearch HNSW), query
  latency with the real MiniLM query encoder, ANN recall@10 against exact search, and
  save + memory-mapped reload of the HNSW index.
Latency figures are wall-clock per ``SearchIndex.search`` call (embedding the query included).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from papers import Catalog  # noqa: E402
from papers.search import SearchConfig, SearchFilters, SearchIndex  # noqa: E402
from papers.search.synthetic import synthetic_corpus  # noqa: E402


def pct(xs: list[float], cpu: list[float] | None = None) -> dict[str, float]:
    a = np.array(xs) * 1000
    out = {"p50_ms": float(np.percentile(a, 50)), "p95_ms": float(np.percentile(a, 95)), "n": len(xs)}
    if cpu is not None:  # CPU time of this process: what the call costs when it has a core to itself
        out["cpu_p50_ms"] = float(np.percentile(np.array(cpu) * 1000, 50))
    return out


def mem_available_gb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 2**20
    return float("inf")


def machine() -> dict:
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpus": os.cpu_count(), "mem_gb": round(mem_gb, 1), "platform": platform.platform(), "python": platform.python_version(),
            "load_avg_at_start": [round(x, 2) for x in os.getloadavg()]}


def queries() -> list[str]:
    qs = [json.loads(line)["query"] for line in (ROOT / "benchmarks" / "search_queries.jsonl").read_text().splitlines() if line.strip()]
    extra = ["GRPO", "memory agents", "web agents trained with RL", "SWE-bench", "theorem proving", "GUI automation on phones",
             "multi-agent reinforcement learning", "reward hacking", "tool calling with RL", "vision language models"]
    return qs + extra


def time_queries(index: SearchIndex, qs: list[str], **kw) -> dict:
    wall, cpu = [], []
    for q in qs:
        t, c = time.perf_counter(), time.process_time()
        index.search(q, **kw)
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return pct(wall, cpu)


SUBPROCESS_BUILD = """
import json, sys, time
t0 = time.perf_counter()
from papers import Catalog
from papers.search import SearchIndex
cat = Catalog.load()
t1 = time.perf_counter()
idx = SearchIndex.load_or_build(cat)
t2 = time.perf_counter()
print(json.dumps({"catalog_load_s": t1 - t0, "load_or_build_s": t2 - t1, "embedded": idx.embedded,
                  "model_imported": "sentence_transformers" in sys.modules, "timings": idx.timings}))
"""


def run_build_subprocess(data_dir: str) -> dict:
    env = dict(os.environ, ATLAS_DATA_DIR=data_dir)
    r = subprocess.run([sys.executable, "-c", SUBPROCESS_BUILD], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def bench_catalog(report: dict, repeats: int) -> None:
    with tempfile.TemporaryDirectory(prefix="atlas-bench-") as d:
        print("573 works: cold build (fresh process, empty cache) ...", flush=True)
        cold = run_build_subprocess(d)
        print(f"  load_or_build {cold['load_or_build_s']:.1f} s, embedded {cold['embedded']} texts", flush=True)
        warm = [run_build_subprocess(d) for _ in range(repeats)]
        report["catalog_cold_build"] = cold
        report["catalog_warm_load"] = {
            "load_or_build_s_median": statistics.median(w["load_or_build_s"] for w in warm),
            "load_or_build_s_all": [w["load_or_build_s"] for w in warm],
            "catalog_load_s_median": statistics.median(w["catalog_load_s"] for w in warm),
            "embedded": [w["embedded"] for w in warm],
            "model_imported": any(w["model_imported"] for w in warm),
        }
        print(f"  warm load_or_build (median of {repeats}) {report['catalog_warm_load']['load_or_build_s_median'] * 1000:.0f} ms", flush=True)
        os.environ["ATLAS_DATA_DIR"] = d
        cat = Catalog.load()
        idx = SearchIndex.load_or_build(cat)
        t = time.perf_counter()
        idx.warm()
        report["model_first_load_s"] = time.perf_counter() - t
        qs = queries()
        res = {}
        res["hybrid_new_queries"] = (time_queries(idx, qs, k=10))
        res["hybrid_repeated_queries"] = (time_queries(idx, qs, k=10))
        res["lexical"] = (time_queries(idx, [q + " " for q in qs], k=10, mode="lexical"))
        f = SearchFilters(nodes=["tasks"], year_from=2024, kinds=["method"])
        res["hybrid_filtered_repeated"] = (time_queries(idx, qs, k=10, filters=f))
        res["browse_filtered"] = (time_queries(idx, [""] * 50, k=10, filters=f))
        enc, enc_cpu = [], []
        for q in qs:
            t, c = time.perf_counter(), time.process_time()
            idx.embedder.encode_query(q + " ?")
            enc.append(time.perf_counter() - t)
            enc_cpu.append(time.process_time() - c)
        res["query_encoding_only"] = pct(enc, enc_cpu)
        report["catalog_latency"] = res
        for k, v in res.items():
            print(f"  {k:<28} p50 {v['p50_ms']:7.2f} ms   p95 {v['p95_ms']:7.2f} ms   (CPU p50 {v.get('cpu_p50_ms', 0):6.2f} ms)", flush=True)


def bench_synthetic(report: dict, n: int, catalog, embedder, n_queries: int) -> None:
    print(f"{n:,} synthetic works ...", flush=True)
    out: dict = {}
    t = time.perf_counter()
    corpus = synthetic_corpus(catalog, n, seed=0)
    out["generate_s"] = time.perf_counter() - t
    t = time.perf_counter()
    # dense_node_weight=0: the vectors are used as given (no second 1.5 GB copy at 1M works); moving
    # them towards their nodes is a one-off build step that does not change query latency
    idx = SearchIndex(corpus, embedder, SearchConfig(dense_node_weight=0.0), taxonomy=catalog.taxonomy)
    out["build_s"] = time.perf_counter() - t
    corpus.lex_token_ids = None  # indexed; free the token arrays
    out["ann"] = idx.ann is not None
    out["ann_build_s"] = idx.timings.get("ann_s", 0.0)
    with tempfile.TemporaryDirectory(prefix="atlas-ann-") as d:
        path = str(Path(d) / "ann.usearch")
        t = time.perf_counter()
        idx.ann.save(path)
        out["ann_save_s"] = time.perf_counter() - t
        from usearch.index import Index

        t = time.perf_counter()
        viewed = Index.restore(path, view=True)
        out["ann_view_load_s"] = time.perf_counter() - t
        del viewed
    print(f"  generate {out['generate_s']:.1f} s, index build {out['build_s']:.1f} s (HNSW alone {out['ann_build_s']:.1f} s), "
          f"HNSW save {out['ann_save_s']:.2f} s, mmap reload {out['ann_view_load_s']:.3f} s", flush=True)
    embedder._queries.clear()
    qs = queries()[:n_queries]
    lat = {}
    lat["hybrid_new_queries"] = (time_queries(idx, qs, k=10))
    lat["hybrid_repeated_queries"] = (time_queries(idx, qs, k=10))
    lat["dense_repeated_queries"] = (time_queries(idx, qs, k=10, mode="dense"))
    lat["lexical"] = (time_queries(idx, qs, k=10, mode="lexical"))
    f = SearchFilters(nodes=["code"], year_from=2025)
    lat["hybrid_filtered_repeated"] = (time_queries(idx, qs, k=10, filters=f))
    lat["browse_filtered"] = (time_queries(idx, [""] * 20, k=10, filters=f))
    out["latency"] = lat
    for k, v in lat.items():
        print(f"  {k:<28} p50 {v['p50_ms']:7.2f} ms   p95 {v['p95_ms']:7.2f} ms   (CPU p50 {v.get('cpu_p50_ms', 0):6.2f} ms)", flush=True)
    # ANN quality against exact inner product. Queries near the data (a stored vector plus noise, as real
    # queries land in a topic) and, as a worst case, random directions. "as used": search() takes
    # ann_candidates from the graph and re-scores them with the f32 vectors; source@1: the stored vector
    # the query was made from comes first; gap: exact 10th-best cosine minus the returned 10th-best.
    rng = np.random.default_rng(1)
    src = rng.integers(0, n, 100)
    near = idx.vectors[src] + 0.03 * rng.standard_normal((100, idx.vectors.shape[1]), dtype=np.float32)
    far = rng.standard_normal((50, idx.vectors.shape[1]), dtype=np.float32)
    exact_t = []
    for name, qv in (("near", near), ("random", far)):
        qv /= np.linalg.norm(qv, axis=1, keepdims=True)
        exact = []
        for v in qv:
            t = time.perf_counter()
            sc = np.einsum("ij,j->i", idx.vectors, v)
            top = np.argpartition(-sc, 10)[:10]
            exact_t.append(time.perf_counter() - t)
            exact.append((set(top.tolist()), float(np.sort(sc[top])[0])))
        raw = [len(e & set(np.asarray(idx.ann.search(v, count=10).keys, np.int64).tolist())) / 10 for v, (e, _) in zip(qv, exact)]
        out[f"hnsw_recall_at_10_{name}"] = float(np.mean(raw))
        for C in (200, 1000):
            rec, gap, first, ms = [], [], [], []
            for j, (v, (e, tenth)) in enumerate(zip(qv, exact)):
                t = time.perf_counter()
                cand = np.asarray(idx.ann.search(v, count=C).keys, np.int64)
                ms.append(time.perf_counter() - t)
                sc = np.einsum("ij,j->i", idx.vectors[cand], v)
                order = np.argsort(-sc)[:10]
                rec.append(len(e & set(cand[order].tolist())) / 10)
                gap.append(tenth - float(sc[order][-1]))
                if name == "near":
                    first.append(int(cand[order][0]) == int(src[j]))
            out[f"search_recall_at_10_{name}_C{C}"] = float(np.mean(rec))
            out[f"tenth_score_gap_{name}_C{C}"] = float(np.mean(gap))
            out[f"hnsw_ms_p50_C{C}"] = float(np.percentile(np.array(ms) * 1000, 50))
            if first:
                out[f"source_at_1_C{C}"] = float(np.mean(first))
    out["exact_dense_scan"] = pct(exact_t)
    out["max_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"  HNSW top-10 recall {out['hnsw_recall_at_10_near']:.3f} near / {out['hnsw_recall_at_10_random']:.3f} random queries")
    for C in (200, 1000):
        print(f"  {C} candidates re-scored: recall@10 {out[f'search_recall_at_10_near_C{C}']:.3f} near / "
              f"{out[f'search_recall_at_10_random_C{C}']:.3f} random, source@1 {out[f'source_at_1_C{C}']:.3f}, "
              f"10th-score gap {out[f'tenth_score_gap_near_C{C}']:.4f}, graph search p50 {out[f'hnsw_ms_p50_C{C}']:.2f} ms")
    print(f"  exact scan p50 {out['exact_dense_scan']['p50_ms']:.1f} ms; "
          f"max RSS {out['max_rss_gb']:.1f} GB", flush=True)
    report[f"synthetic_{n}"] = out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,1000000", help="synthetic corpus sizes (comma-separated; '' for none)")
    ap.add_argument("--no-catalog", action="store_true", help="skip the 573-work measurements")
    ap.add_argument("--repeats", type=int, default=5, help="warm loads to time")
    ap.add_argument("--queries", type=int, default=86, help="queries per synthetic size")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    report = {"machine": machine()}
    print(json.dumps(report["machine"]), flush=True)
    if not args.no_catalog:
        bench_catalog(report, args.repeats)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if sizes:
        from papers.search import default_embedder

        catalog = Catalog.load()
        emb = default_embedder()
        emb.model()
        for n in sizes:
            avail = mem_available_gb()
            if n * 384 * 4 * 3.5 / 2**30 > avail:  # peak ~3.5x the vectors (BM25 build, HNSW)
                print(f"{n:,} synthetic works: skipped, only {avail:.1f} GB of memory available", flush=True)
                report[f"synthetic_{n}"] = {"skipped": f"{avail:.1f} GB available"}
                continue
            bench_synthetic(report, n, catalog, emb, args.queries)
    report["machine"]["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    print(json.dumps(report["machine"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

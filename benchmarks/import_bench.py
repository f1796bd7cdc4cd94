"""Import throughput and memory for a large arXiv-metadata JSON-lines file (synthetic).

    .venv/bin/python benchmarks/import_bench.py --n 100000 [--no-place] [--batch-size 256]

Writes a synthetic file in the arXiv snapshot's format (id, title, abstract, authors, categories,
update_date), imports it into a fresh SQLite store, and prints entries/s and resident memory
sampled every 10,000 lines (flat = constant memory). With placement on, every work is embedded
(all-MiniLM-L6-v2, batched) and placed; that dominates the time on a CPU.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from papers import Catalog
from papers.ingest import import_file
from papers.userstore import UserStore

TOPICS = ["web search agent", "code repair", "theorem proving", "GUI navigation", "memory management",
          "multi-agent debate", "tool calling", "video reasoning", "robot manipulation", "text-to-SQL"]
METHODS = ["GRPO", "PPO", "DPO", "process rewards", "self-play", "curriculum learning", "tree search"]


def write_synthetic(path: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            topic, method = rng.choice(TOPICS), rng.choice(METHODS)
            rec = {
                "id": f"{26 + i // 90000:02d}{1 + (i // 9000) % 9:02d}.{i % 90000 + 10000:05d}",
                "title": f"Scaling {method} for {topic} with synthetic study {i}",
                "abstract": f"We study {topic} trained with {method}. Experiment {i} measures reward and accuracy "
                            f"over {rng.randint(2, 64)} environments and reports ablations.",
                "authors": "A. Author, B. Author", "categories": "cs.LG cs.AI", "update_date": "2026-01-01",
            }
            f.write(json.dumps(rec) + "\n")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--no-place", action="store_true", help="skip embedding and placement")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="import-bench-"))
    src = tmp / "arxiv.jsonl"
    write_synthetic(src, args.n)
    catalog = Catalog.load()
    placer = None
    if not args.no_place:
        from papers.placement import Placer, default_encoder

        placer = Placer(catalog, default_encoder(), encode_new=default_encoder(cache_new=False))
    store = UserStore(tmp / "user.sqlite")
    samples = []
    next_mark = [10_000]

    def progress(p):
        if p["lines_done"] >= next_mark[0]:
            samples.append((p["lines_done"], round(rss_mb())))
            next_mark[0] += 10_000

    rss0 = rss_mb()
    t0 = time.time()
    report = import_file(src, catalog, store, placer=placer, batch_size=args.batch_size, progress=progress)
    dt = time.time() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({
        "entries": args.n, "added": report.added, "skipped": len(report.skipped), "placement": placer is not None,
        "seconds": round(dt, 1), "entries_per_s": round(args.n / dt, 1), "rss_before_mb": round(rss0),
        "peak_rss_mb": round(peak), "rss_every_10k_lines_mb": samples, "file_mb": round(src.stat().st_size / 2**20, 1),
        "db_mb": round((tmp / "user.sqlite").stat().st_size / 2**20, 1), "cores": os.cpu_count(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())

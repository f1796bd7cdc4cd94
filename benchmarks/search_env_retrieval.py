"""Can the search env's tool find the fact a question asks about? Recall@k of the gold work, per family.

    .venv/bin/python benchmarks/search_env_retrieval.py --modes lexical,hybrid

For every question of both splits (503 facts), runs the demonstration query (``Problem.query``) through
``papers.search`` in each mode and counts how often the gold work is among the top k entries, and how
often a gold answer string appears in the returned information block. Prints one JSON line per mode.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import time

from reference_impls.envs import search as S


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--modes", default="lexical,hybrid")
    p.add_argument("--k", type=int, default=3)
    a = p.parse_args()
    from papers.search import SearchIndex

    cat = S._catalog()
    index = SearchIndex.load_or_build(cat)
    problems = S.problems("train", 10_000, 0) + S.problems("heldout", 10_000, 0)
    for mode in a.modes.split(","):
        fn = S.index_search(index, cat, mode)
        hit, found, tot = collections.Counter(), collections.Counter(), collections.Counter()
        t0 = time.time()
        for q in problems:
            res = fn(q.query, a.k)
            tot[q.family] += 1
            hit[q.family] += q.key in [key for key, _ in res]
            found[q.family] += any(S.normalize_answer(g) in S.normalize_answer(t) for g in q.answers for _, t in res)
        print(json.dumps({"mode": mode, "k": a.k, "questions": len(problems),
                          "gold_work_in_top_k": sum(hit.values()), "gold_answer_in_block": sum(found.values()),
                          "ms_per_query": round(1000 * (time.time() - t0) / len(problems), 1),
                          "by_family": {f: [hit[f], found[f], tot[f]] for f in tot}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

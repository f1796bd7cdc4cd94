"""Wall time of the swe env's sandboxed calls: the ``test`` tool (the repository's unittest files) and the
hidden suite of a ``submit``, per isolation layer.

    .venv/bin/python -m benchmarks.swe_tool_bench [--runs 30] [--layers bwrap] [--level 3]

Runs both on generated tasks of the level (the buggy repository, so one test fails and its traceback is
formatted) ``--runs`` times per layer and prints the median and p95 in milliseconds with the load average
before and after (on a shared machine the load dominates the spread)."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from reference_impls import sandbox
from reference_impls.envs import swe, swe_harness


def _stats(times: list[float]) -> dict:
    times = sorted(times)
    return {"median_ms": round(1000 * statistics.median(times), 1),
            "p95_ms": round(1000 * times[int(0.95 * (len(times) - 1))], 1), "runs": len(times)}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--layers", default=sandbox.active_layer())
    ap.add_argument("--level", type=int, default=3, choices=(1, 2, 3))
    args = ap.parse_args(argv)
    tasks = swe.tasks("train", args.runs, seed=0, levels=(args.level,))
    report = {"active_layer": sandbox.active_layer(), "load_before": os.getloadavg(), "cpus": os.cpu_count(),
              "level": args.level, "layers": {}}
    for layer in args.layers.split(","):
        limits = sandbox.Limits(cpu_seconds=2, wall_seconds=8.0)
        test_t, submit_t = [], []
        for task in tasks:
            files = dict(task.files)
            t0 = time.perf_counter()
            res, outs = swe_harness._run(swe_harness._UNITTEST, files, {}, limits, layer)
            test_t.append(time.perf_counter() - t0)
            if not outs:
                report["layers"][layer] = {"error": res.stderr[-300:] or res.status}
                break
            t0 = time.perf_counter()
            checks = [[c.module, c.function, json.loads(c.args)] for c in task.checks]
            swe_harness._run(swe_harness._CHECKS, files, {"checks": checks}, limits, layer)
            submit_t.append(time.perf_counter() - t0)
        else:
            report["layers"][layer] = {"test_tool": _stats(test_t), "hidden_suite": _stats(submit_t)}
    report["load_after"] = os.getloadavg()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

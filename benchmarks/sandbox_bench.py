"""Overhead of one sandboxed execution (``reference_impls.sandbox.run_python``), per layer.

    .venv/bin/python -m benchmarks.sandbox_bench [--runs 50] [--layers bwrap,unshare,rlimits]

Runs a trivial program (``print(1)``) ``--runs`` times per layer and prints the median and p95 wall time
with the machine's load average before and after (the numbers on a shared machine depend on it)."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from reference_impls import sandbox


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--layers", default=",".join(sandbox.LAYERS))
    args = ap.parse_args(argv)
    report = {"active_layer": sandbox.active_layer(), "load_before": os.getloadavg(), "cpus": os.cpu_count(),
              "layers": {}}
    for layer in args.layers.split(","):
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            r = sandbox.run_python("print(1)", layer=layer)
            times.append(time.perf_counter() - t0)
            if not r.ok:
                report["layers"][layer] = {"error": r.stderr[-300:]}
                break
        else:
            times.sort()
            report["layers"][layer] = {"median_ms": round(1000 * statistics.median(times), 1),
                                       "p95_ms": round(1000 * times[int(0.95 * (len(times) - 1))], 1),
                                       "runs": len(times)}
    report["load_after"] = os.getloadavg()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

"""Shared plumbing of the staged benchmark scripts (calculator_learning, calculator_dpo_eval,
search_agent_eval): run a ``reference_impls`` CLI in a subprocess, and a results file in which a
recorded stage is skipped on the next run, so a long benchmark can be re-run to continue."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# importing the search env and the part-2 algorithms registers them, whatever the registries list
PRELUDE = "import sys, reference_impls.envs.search, reference_impls.algorithms.ppo.ppo, reference_impls.algorithms.dpo.dpo; "


def cli(module: str, args: list[str], log) -> str:
    """``python -m module args`` (with every env and algorithm registered); returns its stdout, exits the
    benchmark with the tail of stderr if it fails. The command, its stderr tail and its time go to ``log``."""
    code = PRELUDE + f"from {module} import main; sys.exit(main(sys.argv[1:]))"
    print(f"$ python -m {module} " + " ".join(args), file=log, flush=True)
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, HF_HUB_OFFLINE="1"))
    print(proc.stderr[-3000:], file=log, flush=True)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {module} {' '.join(args)}\n{proc.stderr[-3000:]}")
    print(f"({time.time() - t0:.0f} s)", file=log, flush=True)
    return proc.stdout


def last_json_line(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


class StageResults:
    """OUT/results.json as a dict of stages; ``record`` adds a stage's wall time, saves and logs it."""

    def __init__(self, out: Path):
        self.path = Path(out) / "results.json"
        self.data: dict = json.loads(self.path.read_text()) if self.path.exists() else {}
        self.data.setdefault("machine", f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores")

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def __getitem__(self, key: str):
        return self.data[key]

    def __setitem__(self, key: str, value) -> None:
        self.data[key] = value

    def save(self) -> None:
        self.path.write_text(json.dumps(self.data, indent=2))

    def record(self, key: str, value: dict, t0: float, log) -> None:
        self.data[key] = {**value, "stage_s": round(time.time() - t0, 1)}
        self.save()
        print(json.dumps({key: self.data[key]})[:600], file=log, flush=True)

"""Fingerprint every runnable implementation and every algorithm: tiny recipes (tiny random model, 2 steps,
seed 0, one torch thread) run in this process, their per-step metrics with timings dropped and a checksum
of the trained weights. Used to show that a refactor changed no behaviour: run it before and after, then
compare the two files.

Two kinds of entry:
- ``impl:ID``  each listed implementation through the trainer's CLI (``train.main --impl ID``), on its own
  environment. The random model earns no reward on most of them, so these mostly pin the rollout and env code.
- ``algo:NAME`` each algorithm with its default Config on the half-vocabulary toy task of the tests
  (tests/reference_impls/toy_env.py), where a random policy earns reward about half the time, so every
  loss produces a gradient and the weight checksum moves.

    PYTHONPATH=$PWD python scripts/recipe_fingerprint.py run OUT.json [--only NAME ...]
    python scripts/recipe_fingerprint.py diff BEFORE.json AFTER.json [--tol 1e-6]

Run it from the checkout to measure, with ``PYTHONPATH=$PWD``: the editable install points at one
checkout, and a script's own folder (not the current directory) heads ``sys.path``. A SIGTERM stops the
running entry's training early (the trainer checkpoints and exits cleanly), so stop the script with
SIGKILL and delete its last entry. Finished entries are kept: a second ``run`` goes on where it stopped.

It only calls the trainer's public CLI (``reference_impls.train.main`` with ``--impl``), so the same script
runs on either side of a change that moves modules around.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path



def _is_timing(name: str) -> bool:
    return name.endswith("_s") or any(w in name for w in ("wall", "per_s", "rss", "mem", "time"))


def run(out: Path, only: list[str]) -> int:
    import torch

    torch.set_num_threads(1)
    from reference_impls import train

    entries = [f"algo:{a}" for a in _algorithm_names()] + [f"impl:{i}" for i in _implementation_ids()]
    results: dict = json.loads(out.read_text()) if out.exists() else {}
    for key in entries:
        if key in results or (only and key.split(":", 1)[1] not in only):
            continue
        t0 = time.time()
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = Path(tmp) / "run"
            try:
                kind, name = key.split(":", 1)
                results[key] = _impl_run(train, name, run_dir) if kind == "impl" else _algo_run(train, name, run_dir)
            except BaseException as err:  # noqa: BLE001 - record and go on to the next entry
                results[key] = {"error": f"{type(err).__name__}: {err}".replace(str(run_dir), "RUN"),
                                "trace": traceback.format_exc()[-2000:]}
        print(f"{key}: {time.time() - t0:.1f}s {'error' if 'error' in results[key] else 'ok'}", flush=True)
        out.write_text(json.dumps(results, indent=1, sort_keys=True))  # resumable: finished entries are kept
    return 0


def _numeric(row: dict) -> dict:
    return {k: v for k, v in row.items() if isinstance(v, (int, float)) and not _is_timing(k)}


def _impl_run(train, impl: str, run_dir: Path) -> dict:
    argv = ["--impl", impl, "--model", "tiny", "--steps", "2", "--seed", "0", "--out", str(run_dir),
            "--checkpoint-every", "1000"]
    code = train.main(argv)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {"exit": code, "metrics": [_numeric(r) for r in rows]}


def _algo_run(train, algo: str, run_dir: Path) -> dict:
    from reference_impls.models import load_policy

    make_task = _toy_env().make_task

    model, tok = load_policy("tiny", device="cpu", seed=0)
    cfg = train.TrainConfig(algo=algo, env="half_vocab", model="tiny", out=str(run_dir), lr=3e-2,
                            prompts_per_step=4, group_size=4, max_new_tokens_per_turn=1, max_completion_tokens=1,
                            micro_batch_size=32, train_pool=8, steps=2)
    trainer = train.Trainer(cfg, task=make_task(model, tok), model=model, tokenizer=tok)
    trainer.t_start = time.time()
    metrics = [_numeric(trainer.train_step()[0]) for _ in range(2)]
    checksum = float(sum(p.detach().double().abs().sum() for p in model.parameters()))
    return {"metrics": metrics + [{"weight_abs_sum": checksum}]}


def _toy_env():
    """The tests' toy task module (tests/ is not a package), loaded from its file."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "tests" / "reference_impls" / "toy_env.py"
    spec = importlib.util.spec_from_file_location("recipe_fingerprint_toy_env", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _algorithm_names() -> list[str]:
    try:
        from reference_impls.train import ALGORITHMS
    except ImportError:  # after the redesign the registry lives in its own module
        from reference_impls.algorithms import ALGORITHMS
    return sorted(ALGORITHMS)


def _implementation_ids() -> list[str]:
    import contextlib
    import io

    from reference_impls import train

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        train.main(["--list", "--json"])
    data = json.loads(buf.getvalue())
    rows = data if isinstance(data, list) else data.get("implementations", data)
    return [r["id"] for r in rows if r.get("trains", True)]  # a row that trains nothing has no recipe to run


def _error_text(entry: dict) -> str | None:
    """The error with the run's temporary folder replaced (it differs between any two runs)."""
    return re.sub(r"/tmp/tmp\w+/run", "RUN", entry["error"]) if "error" in entry else None


def diff(before: Path, after: Path, tol: float) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    bad = 0
    print(f"{'implementation':28s} {'steps':>5s} {'metrics':>7s} {'max |diff|':>10s}  verdict")
    for impl in sorted(set(a) | set(b)):
        x, y = a.get(impl), b.get(impl)
        if x is None or y is None:
            print(f"{impl:28s} {'':>5s} {'':>7s} {'':>10s}  only in {'after' if x is None else 'before'}")
            bad += 1
            continue
        if "error" in x or "error" in y:
            same = _error_text(x) == _error_text(y)
            print(f"{impl:28s} {'':>5s} {'':>7s} {'':>10s}  error {'(same both sides)' if same else 'DIFFERS'}")
            bad += not same
            continue
        worst, n, missing = 0.0, 0, []
        if len(x["metrics"]) != len(y["metrics"]):
            missing.append("step count")
        for rx, ry in zip(x["metrics"], y["metrics"]):
            for k in set(rx) | set(ry):
                if k not in rx or k not in ry:
                    missing.append(k)
                    continue
                n += 1
                vx, vy = float(rx[k]), float(ry[k])
                if math.isnan(vx) and math.isnan(vy):
                    continue
                worst = max(worst, abs(vx - vy))
        ok = worst <= tol and not missing
        bad += not ok
        note = "same" if ok else ("DIFF" + (f" (keys: {sorted(set(missing))})" if missing else ""))
        print(f"{impl:28s} {len(x['metrics']):5d} {n:7d} {worst:10.2e}  {note}")
    print(f"{len(set(a) | set(b))} implementations, {bad} differ (tolerance {tol:g})")
    return 1 if bad else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--only", nargs="*", default=[])
    d = sub.add_parser("diff")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    d.add_argument("--tol", type=float, default=1e-6)
    args = p.parse_args(argv)
    return run(args.out, args.only) if args.cmd == "run" else diff(args.before, args.after, args.tol)


if __name__ == "__main__":
    sys.exit(main())

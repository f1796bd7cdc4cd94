"""First vs second attempt, with external vs self feedback: the self-correction measurement.

Usage::

    python -m reference_impls.measure.self_correction --model smollm2-135m-instruct --n 200 --json
    python -m reference_impls.measure.self_correction --run runs/score --n 200 --levels 1,2 --hint direction --json

For each feedback mode (``external``, ``self``) the same held-out problems of the ``self-correct`` env are rolled
out greedily (``evaluate.evaluate``; the problems are a pure function of n, seed and the options, so the modes and
two models are paired), and the report gives, per mode, the accuracy of attempt 1 and attempt 2, the change, and
the flips (wrong->right, right->wrong, ...). Greedy attempt 1 is the same text in both modes (same prompt), so the
modes differ only in what the feedback does to attempt 2.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from ..envs import get_env
from ..options import ConfigError
from ..rundir import policy_to_evaluate
from . import cli
from .evaluate import evaluate

FLIPS = ("wrong->right", "right->wrong", "right->right", "wrong->wrong")


def summarize(samples) -> dict:
    """Attempt-1/attempt-2 accuracy and flip counts of finished self-correct episodes (an episode cut off by the
    token budget counts as wrong in both attempts)."""
    n = len(samples)
    first = sum(bool(s.info.get("first_correct")) for s in samples)
    second = sum(bool(s.info.get("second_correct")) for s in samples)
    flips = Counter(s.info.get("flip", "wrong->wrong") for s in samples)
    return {"n": n, "first_accuracy": first / max(n, 1), "second_accuracy": second / max(n, 1),
            "delta": (second - first) / max(n, 1), "flips": {k: flips.get(k, 0) for k in FLIPS},
            "checked": sum(bool(s.info.get("checked")) for s in samples), "truncated": sum(bool(s.truncated) for s in samples)}


def measure(model, tokenizer, problems, env_options: dict | None = None, modes=("external", "self"),
            batch_size: int = 16, max_new_tokens_per_turn: int = 48, max_completion_tokens: int = 160) -> dict:
    """``{mode: summarize(...)}`` for each feedback mode on the same problems."""
    task = get_env("self-correct")
    out = {}
    for mode in modes:
        options = {**(env_options or {}), "feedback": mode}
        task.options(options)
        _, samples = evaluate(model, tokenizer, task, problems, batch_size, max_new_tokens_per_turn,
                              max_completion_tokens, options, return_samples=True)
        out[mode] = summarize(samples)
    return out


def build_parser(argv=None) -> argparse.ArgumentParser:
    p = cli.new_parser("reference_impls.measure.self_correction", __doc__)
    p.add_argument("--model", default=None, help="model name or folder (default: the run's latest checkpoint)")
    p.add_argument("--run", default=None, help="run directory: evaluates its latest checkpoint")
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--levels", default="1,2", help="calculator levels, e.g. 1,2")
    p.add_argument("--hint", default="none", help="external feedback's hint: none | direction")
    p.add_argument("--modes", default="external,self")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-new-tokens-per-turn", type=int, default=48)
    p.add_argument("--max-completion-tokens", type=int, default=160)
    p.add_argument("--json", action="store_true")
    return p


def check(args):
    try:
        levels = tuple(int(x) for x in args.levels.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"--levels: {args.levels!r} is not a comma-separated list of integers") from None
    modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    options = {"levels": levels, "hint": args.hint}
    task = get_env("self-correct")
    for mode in modes:
        task.options({**options, "feedback": mode})
    return task, options, modes, policy_to_evaluate(args.run, args.model)


def run(args, checked) -> dict:
    from ..models import load_policy

    task, options, modes, name = checked
    problems = task.problems("heldout", n=args.n, seed=args.seed, **options)
    model, tokenizer = load_policy(name)
    t0 = time.time()
    result = {"model": name, "options": {"levels": list(options["levels"]), "hint": args.hint},
              **measure(model, tokenizer, problems, options, modes, args.batch_size, args.max_new_tokens_per_turn,
                        args.max_completion_tokens)}
    result["wall_s"] = round(time.time() - t0, 1)
    return result


def main(argv=None) -> int:
    return cli.main(build_parser, cli.Command(run, check), argv)


if __name__ == "__main__":
    sys.exit(main())

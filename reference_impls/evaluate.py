"""Greedy held-out accuracy.

Usage::

    python -m reference_impls.evaluate --model smollm2-135m-instruct --env calculator --n 200 --json
    python -m reference_impls.evaluate --run runs/grpo --n 200 --json     # latest checkpoint of a run

Prints ``{"accuracy": ..., "n": ..., "correct": ..., "by_family": {...}}``. The held-out problems are a
pure function of (n, seed, levels, families), so two models evaluated with the same arguments are
compared on the very same problems (paired).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

from .envs import get_env
from .models import load_policy
from .rollout import RolloutConfig, rollout


def evaluate(model, tokenizer, task, problems, batch_size: int = 16, max_new_tokens_per_turn: int = 48,
             max_completion_tokens: int = 160, env_options=None, return_samples: bool = False):
    cfg = RolloutConfig(group_size=1, greedy=True, max_new_tokens_per_turn=max_new_tokens_per_turn,
                        max_completion_tokens=max_completion_tokens, env_options=dict(env_options or {}))
    samples = []
    for start in range(0, len(problems), batch_size):
        chunk, _ = rollout(model, tokenizer, task, problems[start:start + batch_size], cfg)
        for s in chunk:
            s.group += start
        samples += chunk
    by_family = defaultdict(lambda: [0, 0])
    for s in samples:
        fam = getattr(problems[s.group], "family", "all")
        by_family[fam][0] += int(bool(s.info.get("correct")))
        by_family[fam][1] += 1
    correct = sum(v[0] for v in by_family.values())
    result = {"accuracy": correct / max(len(samples), 1), "n": len(samples), "correct": correct,
              "by_family": {k: round(v[0] / v[1], 4) for k, v in sorted(by_family.items())}}
    return (result, samples) if return_samples else result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m reference_impls.evaluate", description=__doc__.split("\n")[0])
    p.add_argument("--model", default=None, help="model name or folder (default: the run's latest checkpoint)")
    p.add_argument("--run", default=None, help="run directory: evaluates its latest checkpoint")
    p.add_argument("--env", default="calculator")
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--levels", default="1,2,3")
    p.add_argument("--families", default="")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-new-tokens-per-turn", type=int, default=48)
    p.add_argument("--max-completion-tokens", type=int, default=160)
    p.add_argument("--json", action="store_true", help="print only the JSON result")
    args = p.parse_args(argv)

    name = args.model
    env_options = {}
    if args.run:
        from .train import latest_checkpoint

        ckpt = latest_checkpoint(Path(args.run))
        if ckpt is None and name is None:
            raise SystemExit(f"no checkpoint in {args.run}")
        name = str(ckpt) if ckpt is not None else name
        env_options = json.loads((Path(args.run) / "config.json").read_text()).get("env_options", {})
    name = name or "smollm2-135m-instruct"
    task = get_env(args.env)
    kwargs = {}
    if args.env == "calculator":
        kwargs["levels"] = tuple(int(x) for x in args.levels.split(","))
        if args.families:
            kwargs["families"] = tuple(args.families.split(","))
    elif args.env == "memory":  # one-step manager decisions; benchmarks/memory_eval.py runs whole dialogues
        kwargs["levels"] = tuple(int(x) for x in args.levels.split(","))
    problems = task.problems("heldout", n=args.n, seed=args.seed, **kwargs)
    model, tokenizer = load_policy(name)
    t0 = time.time()
    result = evaluate(model, tokenizer, task, problems, args.batch_size, args.max_new_tokens_per_turn,
                      args.max_completion_tokens, env_options)
    result["model"] = name
    result["wall_s"] = round(time.time() - t0, 1)
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

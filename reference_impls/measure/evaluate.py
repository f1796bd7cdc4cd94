"""Greedy held-out accuracy.

Usage::

    python -m reference_impls.measure.evaluate --model smollm2-135m-instruct --env calculator --n 200 --json
    python -m reference_impls.measure.evaluate --run runs/grpo --n 200 --json     # latest checkpoint of a run

Prints ``{"accuracy": ..., "n": ..., "correct": ..., "by_family": {...}}``. The held-out problems are a
pure function of (n, seed, the environment's options), so two models evaluated with the same arguments
are compared on the very same problems (paired). With ``--run`` the environment and its options are the
run's (config.json); flags such as ``--levels 1,2,3`` or ``--env-option KEY=VALUE`` override them.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict

from ..envs import ENVS, get_env, load_env_module
from ..models import load_policy
from ..options import add_flags, given_flags, key_values
from ..rollout import RolloutConfig, rollout
from ..rundir import policy_to_evaluate
from . import cli


def evaluate(model, tokenizer, task, problems, batch_size: int = 16, max_new_tokens_per_turn: int = 48,
             max_completion_tokens: int = 160, env_options=None, return_samples: bool = False):
    cfg = RolloutConfig(group_size=1, greedy=True, max_new_tokens_per_turn=max_new_tokens_per_turn,
                        max_completion_tokens=max_completion_tokens, env_config=task.config_of(env_options))
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


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    peek = argparse.ArgumentParser(add_help=False)
    peek.add_argument("--env")
    peek.add_argument("--run")
    peek.add_argument("--env-module", action="append", default=[])
    known, _ = peek.parse_known_args(argv)
    p = cli.new_parser("reference_impls.measure.evaluate", __doc__)
    p.add_argument("--model", default=None, help="model name or folder (default: the run's latest checkpoint)")
    p.add_argument("--run", default=None, help="run directory: evaluates its latest checkpoint on its environment")
    p.add_argument("--env", default=None, help="environment (default: the run's, else calculator)")
    p.add_argument("--env-module", action="append", default=[], help="import a module that registers an env")
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-new-tokens-per-turn", type=int, default=48)
    p.add_argument("--max-completion-tokens", type=int, default=160)
    p.add_argument("--env-option", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--json", action="store_true", help="print only the JSON result")
    for module in known.env_module:
        load_env_module(module)
    env = known.env or cli.run_config(known.run).get("env", "calculator")
    taken = {"model", "run", "env", "env_module", "n", "seed", "batch_size", "max_new_tokens_per_turn",
             "max_completion_tokens", "env_option", "json"}
    if env in ENVS:
        add_flags(p.add_argument_group(f"options of --env {env}"), ENVS[env].option_specs(), "env", taken)
    return p


def check(args):
    run_cfg = cli.run_config(args.run)
    env = args.env or run_cfg.get("env", "calculator")
    task = get_env(env)
    env_options = cli.heldout_options(task, env, run_cfg, {**given_flags(args, "env"), **key_values(args.env_option)})
    return task, env_options, policy_to_evaluate(args.run, args.model)


def run(args, checked) -> dict:
    task, env_options, name = checked
    problems = task.problems("heldout", n=args.n, seed=args.seed, config=env_options)
    model, tokenizer = load_policy(name)
    t0 = time.time()
    result = evaluate(model, tokenizer, task, problems, args.batch_size, args.max_new_tokens_per_turn,
                      args.max_completion_tokens, env_options)
    result["model"] = name
    result["wall_s"] = round(time.time() - t0, 1)
    return result


def main(argv=None) -> int:
    return cli.main(build_parser, cli.Command(run, check), argv)


if __name__ == "__main__":
    sys.exit(main())

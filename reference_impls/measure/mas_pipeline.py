"""The RL-free multi-agent baseline: the same roles, played by a prompted model with no training, run as a
fixed pipeline on the held-out problems that trained runs are evaluated on.

For the solver-verifier env the pipeline is: the solver proposes, the verifier accepts or rejects with a
reason, the solver revises after a rejection, up to ``max_rounds`` proposals (the env's protocol; greedy
decoding, nothing learned). The summary reports, beside the final accuracy, what each role contributed:
``solo_accuracy`` (the solver's first proposal alone: the single-agent answer), ``verdict_accuracy``
(right accepts/rejects), ``accept_rate``, mean ``rounds`` and each role's mean reward. Comparing
``accuracy`` with ``solo_accuracy`` says whether the verification loop helps this model at all; comparing
a trained run's summary (``--run``) with the base model's says what RL added (mas-rl-based vs mas-rl-free).

Usage::

    python -m reference_impls.measure.mas_pipeline --model smollm2-135m-instruct --n 100 --json
    python -m reference_impls.measure.mas_pipeline --run runs/sv --n 100 --json        # a trained run, same problems
"""
from __future__ import annotations

import argparse
import sys

from ..envs import get_env
from ..models import load_policy
from ..options import key_values
from ..rundir import policy_to_evaluate
from . import cli
from .evaluate import evaluate


def summarize(samples) -> dict:
    """Per-role statistics of evaluated multi-role episodes (keys the env reports; absent ones skipped)."""
    n = max(len(samples), 1)

    def mean(key):
        values = [float(s.info[key]) for s in samples if key in s.info]
        return round(sum(values) / len(values), 4) if values else None

    roles = sorted({r for s in samples for r in (s.info.get("role_rewards") or {})})
    out = {"n": len(samples), "accuracy": round(sum(bool(s.info.get("correct")) for s in samples) / n, 4),
           "solo_accuracy": mean("first_correct"), "verdict_accuracy": mean("verdict_accuracy"),
           "accept_rate": mean("accepted"), "rounds": mean("rounds"),
           "truncated": round(sum(bool(s.truncated) for s in samples) / n, 4)}
    out["role_rewards"] = {r: round(sum(float((s.info.get("role_rewards") or {}).get(r, 0.0)) for s in samples) / n, 4)
                           for r in roles}
    return out


def run_pipeline(model, tokenizer, env: str = "solver-verifier", n: int = 100, seed: int = 0,
                 env_options: dict | None = None, max_new_tokens_per_turn: int = 48,
                 max_completion_tokens: int = 192, batch_size: int = 16) -> dict:
    """Greedy pipeline on ``n`` held-out problems of ``env``; returns the summary (:func:`summarize`) with
    the evaluator's per-family accuracies."""
    task = get_env(env)
    options = dict(env_options or {})
    problems = task.problems("heldout", n=n, seed=seed, **options)
    result, samples = evaluate(model, tokenizer, task, problems, batch_size, max_new_tokens_per_turn,
                               max_completion_tokens, options, return_samples=True)
    return {**summarize(samples), "by_family": result["by_family"], "env": env}


def build_parser(argv=None) -> argparse.ArgumentParser:
    p = cli.new_parser("reference_impls.measure.mas_pipeline", __doc__)
    p.add_argument("--model", default=None, help="model name or folder (default smollm2-135m-instruct)")
    p.add_argument("--run", default=None, help="a trained run: its latest checkpoint plays the roles")
    p.add_argument("--env", default="solver-verifier")
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-new-tokens-per-turn", type=int, default=48)
    p.add_argument("--max-completion-tokens", type=int, default=192)
    p.add_argument("--env-option", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--json", action="store_true")
    return p


def check(args):
    options = key_values(args.env_option)
    get_env(args.env).options(options)  # validate before loading a model
    return options, policy_to_evaluate(args.run, args.model)


def run(args, checked) -> dict:
    options, name = checked
    model, tokenizer = load_policy(name)
    result = run_pipeline(model, tokenizer, args.env, args.n, args.seed, options, args.max_new_tokens_per_turn,
                          args.max_completion_tokens)
    result["model"] = name
    return result


def main(argv=None) -> int:
    return cli.main(build_parser, cli.Command(run, check), argv)


if __name__ == "__main__":
    sys.exit(main())

"""Environment reports and the reward-hacking detector, from the command line.

Usage::

    python -m reference_impls.measure.report heldout --env thinking --run RUN        # thinking length by level
    python -m reference_impls.measure.report heldout --env abstain --model smollm2-135m-instruct --n 80 \\
        --env-option hint_share=0.5 --json                                  # abstention, hallucination, hints
    python -m reference_impls.measure.report hacking --samples RUN          # flag reward hacking in samples.jsonl

``heldout`` evaluates a model (or a run's latest checkpoint, with the run's env options) greedily on held-out
problems and prints the env's registered report (``envs/reports.py``, :func:`heldout_report`); ``hacking`` runs
``envs.loophole.detect_reward_hacking`` over a run's samples.jsonl and exits 1 when it flags.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..options import ConfigError, key_values
from ..rundir import RunDir, policy_to_evaluate
from . import cli


def heldout_samples(model, tokenizer, env: str, n: int = 80, seed: int = 0, max_new_tokens_per_turn: int = 96,
                    max_completion_tokens: int = 192, options: dict | None = None):
    """Greedy episodes on ``n`` held-out problems of ``env``: ``(samples, problems)``."""
    from ..envs import get_env
    from .evaluate import evaluate

    task = get_env(env)
    options = dict(options or {})
    problems = task.problems("heldout", n=n, seed=seed, **options)
    _, samples = evaluate(model, tokenizer, task, problems, max_new_tokens_per_turn=max_new_tokens_per_turn,
                          max_completion_tokens=max_completion_tokens, env_options=options, return_samples=True)
    return samples, problems


def heldout_report(model, tokenizer, env: str, n: int = 80, seed: int = 0, max_new_tokens_per_turn: int = 96,
                   max_completion_tokens: int = 192, options: dict | None = None):
    """``env``'s registered report (``envs/reports.py``) on a greedy evaluation of ``n`` held-out problems
    (e.g. the thinking env's table of thinking length by level)."""
    from ..envs.reports import get_report

    return get_report(env).compute(*heldout_samples(model, tokenizer, env, n, seed, max_new_tokens_per_turn,
                                                    max_completion_tokens, options))


def check_heldout(args):
    from ..envs import get_env
    from ..envs.reports import get_report

    run_cfg = cli.run_config(args.run)
    env = args.env or run_cfg.get("env")
    if not env:
        raise ConfigError("--env: name the environment (or give --run)")
    task, report = get_env(env), get_report(env)
    options = cli.heldout_options(task, env, run_cfg, key_values(args.env_option))
    return env, report, options, policy_to_evaluate(args.run, args.model)


def run_heldout(args, checked) -> str:
    from ..models import load_policy

    env, report, options, name = checked
    model, tokenizer = load_policy(name)
    samples, problems = heldout_samples(model, tokenizer, env, args.n, args.seed, args.max_new_tokens_per_turn,
                                        args.max_completion_tokens, options)
    result = report.compute(samples, problems)
    return json.dumps(result) if args.json or report.format is None else report.format(result)


def check_hacking(args) -> Path:
    path = Path(args.samples)
    if path.is_dir():
        path = RunDir(path).samples_path
    if not path.is_file():
        raise ConfigError(f"--samples: no such file {str(path)!r}")
    return path


def run_hacking(args, path: Path) -> cli.Exit:
    from ..envs.loophole import detect_reward_hacking

    report = detect_reward_hacking(path, honest_key=args.honest_key, spam_numbers=args.spam_numbers)
    return cli.Exit({"flagged": report.flagged, "reasons": report.reasons, "warnings": report.warnings,
                     "stats": report.stats}, 1 if report.flagged else 0)


COMMANDS = {"heldout": cli.Command(run_heldout, check_heldout), "hacking": cli.Command(run_hacking, check_hacking)}


def build_parser(argv=None) -> argparse.ArgumentParser:
    p = cli.new_parser("reference_impls.measure.report", __doc__)
    sub = p.add_subparsers(dest="command", required=True)
    h = sub.add_parser("heldout", help="an environment's report on held-out problems")
    h.add_argument("--env", default=None, help="environment (default: the run's)")
    h.add_argument("--model", default=None, help="model name or folder (default: the run's latest checkpoint)")
    h.add_argument("--run", default=None, help="run directory: its latest checkpoint and its env options")
    h.add_argument("--n", type=int, default=80)
    h.add_argument("--seed", type=int, default=0)
    h.add_argument("--max-new-tokens-per-turn", type=int, default=96)
    h.add_argument("--max-completion-tokens", type=int, default=192)
    h.add_argument("--env-option", action="append", default=[], metavar="KEY=VALUE")
    h.add_argument("--json", action="store_true", help="print JSON")
    k = sub.add_parser("hacking", help="flag reward hacking in a run's samples.jsonl")
    k.add_argument("--samples", required=True, help="a samples.jsonl file or a run folder holding one")
    k.add_argument("--honest-key", default="strict_correct", help="episode info key of the honest metric")
    k.add_argument("--spam-numbers", type=int, default=3, help="numbers in one answer that count as spam")
    return p


def main(argv=None) -> int:
    return cli.main(build_parser, COMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())

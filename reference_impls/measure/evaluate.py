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
import dataclasses
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


#: fields that label a draw, not the problem: two draws of the same question differ in them only
DRAW_LABELS = ("uid", "split")
#: fields that word a problem: the same computation (or map) asked in other words is the same problem to solve
WORDING = ("question", "phrasing")


def problem_content(problem, leave_out: tuple[str, ...] = DRAW_LABELS):
    """What a problem *is*, without its draw-specific ``uid`` and ``split`` labels (and any other field named in
    ``leave_out``; nested problems too): two draws of the same question (or map, or program) have the same
    content."""
    if dataclasses.is_dataclass(problem) and not isinstance(problem, type):
        return (type(problem).__name__, *((f.name, problem_content(getattr(problem, f.name), leave_out))
                                          for f in dataclasses.fields(problem) if f.name not in leave_out))
    if isinstance(problem, (list, tuple)):
        return tuple(problem_content(p, leave_out) for p in problem)
    return repr(problem)


def problem_identity(problem):
    """What a problem asks, without its wording (``WORDING``) or draw labels: the calculator's computation and
    answer, a FrozenLake map and its plan. A validation problem must not share it with a test problem."""
    return problem_content(problem, DRAW_LABELS + WORDING)


def validation_problems(task, n: int, seed: int, test_n: int, test_seed: int, **options) -> list:
    """``n`` problems where a comparison chooses its settings (learning rates), apart from the test problems
    (``test_n`` problems drawn with ``test_seed``), so those are scored once. An environment with a validation
    split of its own (``EnvSpec.validation_split``: search, whose questions about one entity or document would
    otherwise reach both sets) gives its first ``n``; the others are drawn from the held-out distribution (the
    same phrasings, maps, levels as the test) with ``seed``, skipping any whose ``problem_identity`` is a test
    problem's or an earlier pick's. A pure function of its arguments. ValueError naming the environment when
    too few such problems exist."""
    if getattr(task, "validation_split", False):
        chosen = list(task.problems("validation", n=n, seed=seed, **options))
        if len(chosen) < n:
            raise ValueError(f"{task.name}: its validation split holds only {len(chosen)} of the {n} validation "
                             f"problems asked for; ask for fewer")
        return chosen
    test = {problem_identity(p) for p in task.problems("heldout", n=test_n, seed=test_seed, **options)}
    chosen, seen = [], set(test)
    for p in task.problems("heldout", n=n + test_n, seed=seed, **options):
        key = problem_identity(p)
        if key not in seen:
            seen.add(key)
            chosen.append(p)
            if len(chosen) == n:
                return chosen
    raise ValueError(f"{task.name}: only {len(chosen)} of {n} validation problems drawn with seed {seed} are "
                     f"distinct and outside the {test_n} test problems (seed {test_seed}); ask for fewer")


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

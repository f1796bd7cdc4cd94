"""The command line shared by the environments' report tools (``python -m reference_impls.envs.thinking``,
``... .abstain``): evaluate a model or a run's latest checkpoint greedily on held-out problems and hand
the episodes to the env's own table. The flags are ``evaluate.py``'s."""
from __future__ import annotations

import argparse
import sys

from ..options import ConfigError, key_values
from ..rundir import RunDir, RunDirError


def heldout_episodes(argv, default_env: str, prog: str, description: str):
    """``(samples, problems, as_json)``, or an exit status (2) after printing the error."""
    from ..evaluate import evaluate
    from ..models import load_policy
    from . import get_env

    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--model", default=None, help="model name or folder (default: the run's latest checkpoint)")
    p.add_argument("--run", default=None, help="run directory: its latest checkpoint and its env options")
    p.add_argument("--env", default=None, help=f"environment (default: the run's, else {default_env})")
    p.add_argument("--n", type=int, default=80)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-new-tokens-per-turn", type=int, default=96)
    p.add_argument("--max-completion-tokens", type=int, default=192)
    p.add_argument("--env-option", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--json", action="store_true", help="print JSON")
    args = p.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        run_cfg = RunDir(args.run).read_config() if args.run else {}
        env = args.env or run_cfg.get("env", default_env)
        task = get_env(env)
        base = run_cfg.get("env_options", {}) if run_cfg.get("env", env) == env else {}
        options = {**base, **key_values(args.env_option)}
        task.options(options)  # validate before loading a model
        name = args.model
        if args.run and name is None:
            ckpt = RunDir(args.run).latest_checkpoint()
            if ckpt is None:
                raise RunDirError(f"{args.run}: no complete checkpoint to evaluate")
            name = str(ckpt)
    except (ConfigError, RunDirError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    problems = task.problems("heldout", n=args.n, seed=args.seed, **options)
    model, tokenizer = load_policy(name or "smollm2-135m-instruct")
    _, samples = evaluate(model, tokenizer, task, problems, max_new_tokens_per_turn=args.max_new_tokens_per_turn,
                          max_completion_tokens=args.max_completion_tokens, env_options=options, return_samples=True)
    return samples, problems, args.json

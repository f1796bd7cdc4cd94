"""Held-out success: greedy, one 0/1 per test problem, the same problems for every cell of a grid. The untrained
model's (``base_eval_stage``), a warm start's (``warm_eval_stage``), and the record every stage stores
(``heldout_record``).
"""
from __future__ import annotations

import json
import time

from reference_impls.stats import config_interval

from .folder import GridDir, atomic_json, warm_name
from .cell_options import env_config, reference_config, warm_settings
from .grid import Grid


#: the interval a record stores for its own held-out success, named in the record (``heldout_interval_method``):
#: the one the board and the page show for one run (``stats.config_interval`` of one row of 0/1s). Records
#: written before it (no such field) keep the two-level bootstrap interval they were written with.
HELDOUT_INTERVAL_METHOD = "stats.config_interval of one run: exact Clopper-Pearson 95% over the problems"


#: what the interval of a record without ``heldout_interval_method`` is (every shipped record of 2026-12-03 and before)
LEGACY_HELDOUT_INTERVAL = "percentile bootstrap 95% over the problems (a record written before the field existed)"


def heldout_record(heldout: list[int]) -> dict:
    """Held-out success as every record stores it: the mean, its 95% interval (``HELDOUT_INTERVAL_METHOD``, the
    interval the page shows for one run), the interval's name, the 0/1s."""
    interval = config_interval([heldout]) if len(heldout) > 1 else None
    mean = sum(heldout) / len(heldout)
    return {"heldout": mean, "heldout_interval": [interval.low, interval.high] if interval else [mean, mean],
            "heldout_interval_method": HELDOUT_INTERVAL_METHOD, "heldout_by_problem": heldout}


def heldout_config(config: dict):
    """The typed env config of a run's held-out episodes: its options (``cell_options.env_config``), then the env's
    ``heldout_options`` (``EnvSpec.heldout_env_options``: selfplay-arith's held-out is the solver's)."""
    from reference_impls.envs import get_env

    task = get_env(config["env"])
    return task.config_of(env_config(config), **task.heldout_options)


def evaluate_heldout(model_name: str, env: str, env_options, n: int, seed: int,
                     max_new_tokens_per_turn: int, max_completion_tokens: int) -> list[int]:
    """Greedy held-out success, one 0/1 per problem (the same problems for every cell of the grid).
    ``env_options``: the run's typed env config (``heldout_config``: used as it is), or a mapping of a run's
    options (the env's ``heldout_options`` then applied)."""
    from reference_impls.envs import get_env

    task = get_env(env)
    if not isinstance(env_options, task.config):
        env_options = task.config_of(env_options, **task.heldout_options)
    problems = task.problems("heldout", n=n, seed=seed, config=env_options)
    return score_problems(model_name, task, problems, env_options, max_new_tokens_per_turn, max_completion_tokens)


def score_problems(model_name: str, task, problems: list, env_config, max_new_tokens_per_turn: int,
                   max_completion_tokens: int) -> list[int]:
    """Greedy success of a model on ``problems``, one 0/1 per problem, played under ``env_config`` (typed)."""
    from reference_impls.measure.evaluate import evaluate
    from reference_impls.models import load_policy

    model, tokenizer = load_policy(model_name)
    _, samples = evaluate(model, tokenizer, task, problems, max_new_tokens_per_turn=max_new_tokens_per_turn,
                          max_completion_tokens=max_completion_tokens, env_options=env_config, return_samples=True)
    correct = [0] * len(problems)
    for s in samples:
        correct[s.group] = int(bool(s.info.get("correct")))
    return correct


def reference_heldout(grid: Grid, env: str, model: str) -> dict:
    """A reference model's held-out record on ``env``'s cell problems and lengths, with its time."""
    config = reference_config(grid, env, model)
    t0 = time.time()
    heldout = evaluate_heldout(model, env, heldout_config(config), grid.eval_n, grid.eval_seed,
                               config["max_new_tokens_per_turn"], config["max_completion_tokens"])
    return {**heldout_record(heldout), "eval_s": round(time.time() - t0, 1)}


def warm_eval_stage(grid: Grid, gdir: GridDir, env: str, warm_seed: int | None = None) -> None:
    """Held-out success of a warm start alone (no RL): the reference every cell of ``env`` that starts from it is
    read against. Written into the warm start's ``done.json``."""
    folder = gdir.warm(warm_name(grid, env, warm_seed))
    done = folder / "done.json"
    atomic_json(done, {**json.loads(done.read_text()), **reference_heldout(grid, env, str(folder))})


def base_eval_stage(grid: Grid, gdir: GridDir, env: str) -> None:
    """Held-out success of the untrained model (no warm start, no RL)."""
    model = warm_settings(grid, env)["model"]
    record = reference_heldout(grid, env, model)
    gdir.base(env).parent.mkdir(parents=True, exist_ok=True)
    atomic_json(gdir.base(env), {"model": model, "env": env, **record})

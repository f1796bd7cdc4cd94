"""pass@k of the models a grid names in advance (``passk_models``): the untrained model, the warm start(s) and
every seed's cell of the implementation its ``passk`` names; resumable problem by problem (``passk_stage``).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from reference_impls.options import ConfigError
from reference_impls.rundir import RunDir

from .folder import GridDir, atomic_json, budget_status
from .cell_options import warm_settings
from .grid import Grid, cell_id
from .heldout import heldout_config
from .report import duration
from .warm import has_weights, weights_digest


#: a pass@k record's ``method``: what it sampled was named in the grid file before any result
PASSK_DECLARED = "declared in the grid file before any result; every seed's cell sampled"


def passk_models(grid: Grid, gdir: GridDir, env: str, seeds=None,
                 need_weights: bool = True) -> tuple[dict[str, str | None], dict[str, dict], dict]:
    """What pass@k samples on ``env``: (label -> model, RL label -> its cell, the cells' config) for the
    untrained model, the warm start (every warm start of a grid with several ``warm_seeds``: "warm start (warm seed
    W)", each RL cell's ``warm_curve`` naming its own) and every seed's cell of the implementation the grid names in
    advance (``Grid.passk_implementation``; only ``seeds`` of them when given); nothing is chosen by a result.
    ConfigError when the grid names none or a cell or warm start has not finished, or (``need_weights``) a cell has
    lost its checkpoint; without ``need_weights`` such a cell's model is None (its counts may be kept already)."""
    impl = grid.passk_implementation(env)
    if impl is None:
        raise ConfigError(f"passk --env {env}: grid {grid.name} names no pass@k implementation on {env}; name it in "
                          f"the grid file before any result (passk: {{implementation: VARIANT, problems: N >= 50, "
                          f"samples: G}}): pass@k is never run on a cell picked by its test score")
    models = {"base": warm_settings(grid, env)["model"]}
    warm_labels = {}
    for warm_seed, name in gdir.warm_starts(grid, env):
        if not (gdir.warm(name) / "done.json").exists():
            raise ConfigError(f"passk --env {env}: the warm start of {env} has not been trained ({gdir.warm(name)})")
        warm_labels[name] = "warm start" if len(grid.warm_seeds) == 1 else f"warm start (warm seed {warm_seed})"
        models[warm_labels[name]] = str(gdir.warm(name))
    cells, config = {}, None
    for seed in (grid.seeds if seeds is None else seeds):
        record, run = gdir.result(impl, seed), RunDir(gdir.cell(impl, seed) / "run")
        if record is None or (need_weights and run.latest_model() is None):
            raise ConfigError(f"passk --env {env}: {cell_id(impl, seed)} has not finished or has no checkpoint in "
                              f"{run.path}; pass@k samples every seed's cell of {impl} (train it: run the grid)")
        label = f"RL ({impl}, seed {seed})"
        models[label] = None if run.latest_model() is None else str(run.latest_model())
        cells[label] = {"cell": cell_id(impl, seed), "seed": seed, "in_verdicts": budget_status(record)["in_verdicts"]}
        if len(warm_labels) > 1:  # the warm start this seed's cell started from: the curve it is paired with
            cells[label]["warm_curve"] = warm_labels[gdir.warm_of(grid, env, seed).name]
        config = config or record["config"]
    return models, cells, config


def passk_stage(grid: Grid, gdir: GridDir, env: str, out=sys.stdout, seeds=None) -> None:
    """pass@k for k = 1..samples on the grid's test problems (the first ``problems`` of the held-out draw, the
    eval seed), at temperature 1, of the models ``passk_models`` names: the untrained model, the warm start and
    every seed's cell of the implementation named in the grid's ``passk`` (samples, problems and the tested k
    are the grid's too). The record's ``method`` says so; ``board.passk_comparison`` tests the seeds against
    the warm start.

    Resumable: each problem's count is saved as it is measured (``passk/.<env>.partial.json``), and each
    problem's samples draw from their own seed (the eval seed + the problem's index), so a killed stage
    resumes at the next problem and ends with the same counts as one that was never stopped. A model's counts
    are kept while its source is the same (the base model's name, the digest of the warm start's weights as they
    are on disk, the cell's finishing time); other settings start over.

    ``seeds``: count only those seeds' cells, into the partial file (``run`` does it right after each such cell
    trains, so that a grid carried across sessions without weights still has every seed's counts); the record
    is written when every model's counts are complete. A model whose counts are incomplete and whose weights
    are gone is a ConfigError that says so.
    """
    import dataclasses as dc

    import torch

    from reference_impls.envs import get_env
    from reference_impls.models import load_policy
    from reference_impls.rollout import RolloutConfig, rollout
    from reference_impls.stats import pass_at_k_curve

    models, cells, config = passk_models(grid, gdir, env, seeds=seeds, need_weights=False)
    samples, n_problems = grid.passk["samples"], grid.passk["problems"]
    task = get_env(env)
    env_options = task.heldout_env_options(config["env_options"])  # as the record names them
    episodes = heldout_config(config)
    problems = task.problems("heldout", n=n_problems, seed=grid.eval_seed, config=episodes)
    rcfg = RolloutConfig(group_size=samples, max_new_tokens_per_turn=config["max_new_tokens_per_turn"],
                         max_completion_tokens=config["max_completion_tokens"], temperature=1.0,
                         env_config=episodes)
    settings = {"env": env, "samples": samples, "problems": n_problems, "temperature": 1.0,
                "max_new_tokens_per_turn": rcfg.max_new_tokens_per_turn,
                "max_completion_tokens": rcfg.max_completion_tokens, "env_options": env_options}
    impl, sources = grid.passk_implementation(env), {}
    for label, name in models.items():  # what a model's counts belong to: the same source keeps them
        if label in cells:
            finished = gdir.result(impl, cells[label]["seed"]).get("finished")
            sources[label] = f"{cells[label]['cell']} finished {finished}"
        elif label == "base":
            sources[label] = str(name)
        else:  # the weights it samples: the recorded ones, or a restore's kept by held-out (warm_restore_stage)
            done = json.loads((Path(name) / "done.json").read_text())
            sources[label] = (weights_digest(Path(name)) if has_weights(Path(name)) else None
                              ) or done.get("weights_sha256") or str(name)
    (gdir.path / "passk").mkdir(exist_ok=True)
    partial_path = gdir.path / "passk" / f".{env}.partial.json"
    partial = json.loads(partial_path.read_text()) if partial_path.exists() else None
    if partial is None or partial.get("settings") != settings:  # other settings: start over
        partial = {"settings": settings, "counts": {}, "seconds": {}, "sources": {}, "models": {}}
    for key in ("sources", "models"):
        partial.setdefault(key, {})
    for label in list(partial["counts"]):  # another cell of the same label (re-run), another warm start: again
        if label in sources and partial["sources"].get(label) != sources[label]:
            for key in ("counts", "seconds", "sources", "models"):
                partial[key].pop(label, None)
    result = {"env": env, "samples": samples, "problems": len(problems), "temperature": 1.0,
              "method": PASSK_DECLARED, "implementation": impl, "k": grid.passk["k"],
              "seeds": list(grid.seeds), "cells": cells, "curves": {}}
    wanted = [label for label in models if seeds is None or label in cells]
    for label in wanted:
        name = models[label]
        counts = partial["counts"].setdefault(label, [])
        seconds = partial["seconds"].setdefault(label, [])
        if len(counts) < len(problems):
            if name is None:
                raise ConfigError(f"passk --env {env}: {label} has {len(counts)} of {len(problems)} problems counted "
                                  f"and its checkpoint is gone ({cells[label]['cell']}); pass@k counts each seed's "
                                  f"cell right after it trains (`run`), so move the cell folder away to train it again")
            partial["sources"][label], partial["models"][label] = sources[label], name
            model, tokenizer = load_policy(name, seed=grid.eval_seed)
            for i in range(len(counts), len(problems)):  # one problem at a time: its G = samples rows share a prefill
                t0 = time.time()
                torch.manual_seed(grid.eval_seed + i)
                rows, _ = rollout(model, tokenizer, task, [problems[i]], dc.replace(rcfg))
                counts.append(sum(int(bool(s.info.get("correct"))) for s in rows))
                seconds.append(round(time.time() - t0, 2))
                atomic_json(partial_path, partial)
                left = (len(problems) - i - 1) * sum(seconds) / len(seconds)
                print(f"{label}: problem {i + 1}/{len(problems)}, {counts[-1]}/{samples} correct "
                      f"({seconds[-1]:.0f}s; this model's ETA {duration(left)})", file=out, flush=True)
        result["curves"][label] = {"model": partial["models"].get(label, name), "correct_counts": counts,
                                   "wall_s": round(sum(seconds), 1),
                                   "pass_at_k": {str(k): v for k, v in pass_at_k_curve(counts, samples).items()}}
    if seeds is not None:  # the record waits for every model's counts
        atomic_json(partial_path, partial)
        return
    atomic_json(gdir.path / "passk" / f"{env}.json", result)
    partial_path.unlink()

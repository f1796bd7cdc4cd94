"""One training run of a grid (a cell's or a learning-rate trial's) and its record's work part (``train_run``):
``budget`` (``work_done``: the policy's rollout batches, episodes and updates, PPO's critic warm-up apart, an
offline run's episodes and usable pairs), ``complete`` and ``incomplete_reason`` (a run the safety cap stopped:
out of every verdict), ``diagnostics`` (one row per step, also ``diagnostics.jsonl``) and ``provenance`` (commit,
versions, threads, load, steal).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from reference_impls.rundir import RunDir, read_jsonl

from .folder import DIAGNOSTIC_KEYS, GridDir, warm_name
from .cell_options import cell_config, policy_steps, updates_per_batch
from .grid import Grid, cell_id
from .provenance import Host, provenance
from .warm import has_weights, weights_digest


def train_run(grid: Grid, gdir: GridDir, impl: str, seed: int, folder: Path, lr: float | None) -> dict:
    """Train one run of ``impl`` in ``folder/run`` (resuming a killed one) and return its record's work part:
    config, budget, completeness, curve, diagnostics, cost and provenance (no held-out: the caller scores
    validation or test). Also writes ``folder/diagnostics.jsonl``."""
    from lab.catalog import get
    from reference_impls.algorithms.dpo.dpo import load_pair_stats
    from reference_impls.train import main as train_main

    host = Host.sample()
    folder.mkdir(parents=True, exist_ok=True)
    run = RunDir(folder / "run")
    env = get(impl).env
    warm_seed = grid.warm_seed_of(seed)
    config = cell_config(grid, impl, seed, str(gdir.warm_of(grid, env, seed)), lr=lr)
    config["out"] = str(run.path)
    t0 = time.time()
    resumed_from = None
    if run.latest_checkpoint() is not None:  # a killed cell continues from its checkpoint
        resumed_from = json.loads(RunDir.trainer_state_path(run.latest_checkpoint()).read_text())["step"]
        rc = train_main(["--resume", str(run.path)])
    else:
        cfg_file = folder / "config.json"
        cfg_file.write_text(json.dumps(config, indent=1))
        rc = train_main(["--config", str(cfg_file), "--out", str(run.path), "--overwrite"])
    if rc != 0:
        raise RuntimeError(f"the trainer exited with {rc}")
    train_s = time.time() - t0
    if run.latest_checkpoint() is None:
        raise RuntimeError(f"{run.path}: no checkpoint after training")
    metrics = read_jsonl(run.metrics_path)
    # an offline algorithm (the DPO family) samples its episodes before the first step: their time and
    # tokens are part of the cell's cost, though no step's metrics carry them
    pair_stats = load_pair_stats(run.pairs_path)
    steps_done = metrics[-1]["step"] if metrics else 0
    diagnostics = diagnostic_rows(metrics, uses_reference(config))
    write_diagnostics(folder, diagnostics)
    complete, why = completion(config, steps_done)
    return {
        "cell": cell_id(impl, seed), "implementation": impl, "algo": config["algo"], "env": env, "seed": seed,
        # the warm start it started from (its name under warm/: the board pairs the cell with that one's held-out)
        "warm_start": warm_name(grid, env, warm_seed), "warm_seed": warm_seed,
        # the digest of those weights: the recorded one, or a restore's kept by held-out (done.json "restored")
        "warm_weights_sha256": weights_digest(Path(config["model"])) if has_weights(Path(config["model"])) else None,
        "config": config, "steps_done": steps_done, "resumed_from_step": resumed_from,
        "stopped_by_wall_cap": not complete,
        "budget": {**work_done(config, metrics, pair_stats), "counts": grid.budget}, "complete": complete,
        "incomplete_reason": why,
        "curve": [{"step": m["step"], "reward_mean": m.get("reward_mean"), "accuracy": m.get("accuracy")}
                  for m in metrics],
        "diagnostics": diagnostics,
        "tokens": round(sum(m.get("tokens_per_s", 0.0) * m.get("step_s", 0.0) for m in metrics))
                  + int(pair_stats.get("generated_tokens", 0)),
        "train_s": round((metrics[-1]["wall_s"] if metrics else train_s) + pair_stats.get("build_s", 0.0), 1),
        "sampling_before_training_s": pair_stats.get("build_s"),
        "provenance": provenance(host),
        "peak_rss_mb": round(peak_rss_mb(), 1),  # of the training (the held-out's is added by the caller)
    }


def completion(config: dict, steps_done: int) -> tuple[bool, str | None]:
    """(complete, why not): a run is complete when it did every budgeted step; one the safety cap stopped is
    not, and is kept out of every verdict."""
    if steps_done >= config["steps"]:
        return True, None
    return False, (f"stopped by the safety cap (max_wall_s {config.get('max_wall_s', 0):g}) after {steps_done} of "
                   f"{config['steps']} steps: kept out of every verdict")


def uses_reference(config: dict) -> bool:
    """Whether the run keeps a frozen reference (so its ``kl`` is a KL to the reference, not a placeholder 0)."""
    from reference_impls.options import build
    from reference_impls.train import ALGORITHMS

    algo_cls = ALGORITHMS[config["algo"]]
    return bool(algo_cls.uses_reference(build(algo_cls.Config, dict(config.get("algo_config", {})), "algo_config")))


def write_diagnostics(folder: Path, rows: list[dict]) -> None:
    """A cell's (or trial's) ``diagnostics.jsonl``: one JSON line per step (``diagnostic_rows``)."""
    with open(folder / "diagnostics.jsonl", "w") as f:
        f.writelines(json.dumps(row) + "\n" for row in rows)


def diagnostic_rows(metrics: list[dict], with_reference: bool) -> list[dict]:
    """One row per step: ``step``, ``phase`` (``critic-warmup`` for PPO's critic-only steps, else ``policy``)
    and the ``DIAGNOSTIC_KEYS`` the step's metrics have (``kl`` None when the run has no reference)."""
    rows = []
    for m in metrics:
        row = {"step": m["step"], "phase": "critic-warmup" if m.get("critic_warmup") else "policy"}
        row.update({k: m[k] for k in DIAGNOSTIC_KEYS if k in m})
        if "kl" in row and not with_reference:
            row["kl"] = None
        rows.append(row)
    return rows


def work_done(config: dict, metrics: list[dict], pair_stats: dict) -> dict:
    """The budget a run was given and the work it did (docs/compare.md, "Budget"): rollout batches and sampled
    episodes of the policy, its optimiser updates, PPO's critic warm-up apart, an offline run's episodes and
    usable pairs; and every episode counted once (issue 60): ``sampled_episodes`` (all the run sampled: the
    policy's batches, PPO's critic warm-up, an offline run's pair sampling), ``trained_episodes`` (those in the
    groups an online policy's updates used: DAPO's dynamic sampling drops groups of equal rewards without
    sampling more) and ``discarded_episodes`` (the policy's sampled episodes it did not train on)."""
    warm = [m for m in metrics if m.get("critic_warmup")]
    policy = [m for m in metrics if not m.get("critic_warmup")]
    online = not pair_stats
    budget = {"policy_steps": policy_steps(config), "policy_steps_done": len(policy),
              "prompts_per_step": config["prompts_per_step"], "group_size": config["group_size"],
              "mu": updates_per_batch(config),
              "policy_updates": int(sum(m.get("policy_updates", 1.0) for m in policy)),
              "episodes": int(sum(m.get("episodes", 0.0) for m in policy)) if online else int(pair_stats.get("samples", 0)),
              "critic_warmup_steps": config["steps"] - policy_steps(config),
              "critic_warmup_steps_done": len(warm),
              "critic_warmup_episodes": int(sum(m.get("episodes", 0.0) for m in warm)),
              "critic_updates": int(sum(m.get("critic_updates", 0.0) for m in metrics)),
              "max_wall_s": config.get("max_wall_s", 0.0)}
    if not online:
        budget["usable_pairs"] = int(pair_stats.get("pairs", 0))
        budget["pair_prompts"] = int(pair_stats.get("pair_prompts", 0))
        budget["sampled_episodes"] = budget["episodes"]
    else:
        # groups_kept_frac: the step's share of episodes in groups the update kept (absent: all kept)
        trained = round(sum(m.get("episodes", 0.0) * m.get("groups_kept_frac", 1.0) for m in policy))
        budget.update(sampled_episodes=budget["episodes"] + budget["critic_warmup_episodes"],
                      trained_episodes=int(trained), discarded_episodes=budget["episodes"] - int(trained))
    return budget


def peak_rss_mb() -> float:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20  # KiB on Linux, bytes on macOS

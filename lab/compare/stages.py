"""The stages of a grid and the driver that runs them.

Stages: the untrained model's held-out (``base_eval_stage``), an environment's warm start (``warm_stage``) and
its held-out (``warm_eval_stage``), a cell (``cell_stage``: train, then evaluate held-out) and pass@k
(``passk_stage``). Each runs in its own process (``python -m lab.compare _baseeval / _warm / _warmeval /
_cell / _passk``), one at a time: a crash or OOM costs one cell, and the peak memory is the cell's own.

The driver: ``validate`` (every cell's config passes the trainer's checks), ``run`` (every missing stage in
order, resumable: finished stages are kept) and ``status`` (each cell done, stale, partial, failed or pending).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from reference_impls.options import ConfigError
from reference_impls.rundir import RunDir, read_jsonl
from reference_impls.stats import bootstrap_interval

from .folder import GridDir, atomic_json, cell_results
from .grid import Grid, cell_config, cell_id, chosen_env_options, env_of, warm_settings
from .report import duration


def warm_stage(grid: Grid, gdir: GridDir, env: str) -> None:
    from reference_impls.models import load_policy
    from reference_impls.sft import demonstrations, sft

    out = gdir.warm(env)
    settings = warm_settings(grid, env)
    episode_options = None
    if settings["sft_env"] == env:
        impl = next(i for i in grid.implementations if env_of(i) == env)
        chosen = chosen_env_options(env, cell_config(grid, impl, grid.warm_seed, settings["model"])["env_options"])
        episode_options = chosen  # the cells' episode format (moves per tag, hints), whichever problems are shown
        if grid.warm_on_env_options:
            settings["options"] = chosen
    t0 = time.time()
    model, tokenizer = load_policy(settings["model"], seed=settings["seed"])
    losses = []
    if settings["sft_steps"] > 0:
        samples = demonstrations(tokenizer, settings["sft_env"], settings["sft_examples"], settings["seed"],
                                 options=settings.get("options"), episode_options=episode_options)
        def progress(step, loss):  # into warm-<env>.log: a long warm start shows where it is
            print(f"sft step {step}/{settings['sft_steps']} loss {loss:.4f} {time.time() - t0:.0f}s", flush=True)

        losses = sft(model, tokenizer, samples, settings["sft_steps"], lr=settings["sft_lr"], seed=settings["seed"],
                     log=progress, micro_batch_size=settings.get("micro_batch_size"))
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    atomic_json(tmp / "done.json", {**settings, "losses": losses, "wall_s": time.time() - t0})
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)


def _reference_heldout(grid: Grid, env: str, model: str) -> dict:
    """A reference model's held-out record on ``env``'s cell problems and lengths, with its time."""
    impl = next(i for i in grid.implementations if env_of(i) == env)
    config = cell_config(grid, impl, grid.warm_seed, model)
    t0 = time.time()
    heldout = evaluate_heldout(model, env, config["env_options"], grid.eval_n, grid.eval_seed,
                               config["max_new_tokens_per_turn"], config["max_completion_tokens"])
    return {**_heldout_record(heldout), "eval_s": round(time.time() - t0, 1)}


def warm_eval_stage(grid: Grid, gdir: GridDir, env: str) -> None:
    """Held-out success of the warm start alone (no RL): the reference every cell of ``env`` is read
    against. Written into the warm start's ``done.json``."""
    done = gdir.warm(env) / "done.json"
    atomic_json(done, {**json.loads(done.read_text()), **_reference_heldout(grid, env, str(gdir.warm(env)))})


def base_eval_stage(grid: Grid, gdir: GridDir, env: str) -> None:
    """Held-out success of the untrained model (no warm start, no RL)."""
    model = warm_settings(grid, env)["model"]
    record = _reference_heldout(grid, env, model)
    gdir.base(env).parent.mkdir(parents=True, exist_ok=True)
    atomic_json(gdir.base(env), {"model": model, "env": env, **record})


def _heldout_record(heldout: list[int]) -> dict:
    """Held-out success as every record stores it: the mean, its 95% bootstrap interval, the 0/1s."""
    interval = bootstrap_interval([heldout])
    return {"heldout": interval.mean, "heldout_interval": [interval.low, interval.high],
            "heldout_by_problem": heldout}


def evaluate_heldout(model_name: str, env: str, env_options: dict, n: int, seed: int,
                     max_new_tokens_per_turn: int, max_completion_tokens: int) -> list[int]:
    """Greedy held-out success, one 0/1 per problem (the same problems for every cell of the grid)."""
    from reference_impls.envs import get_env
    from reference_impls.measure.evaluate import evaluate
    from reference_impls.models import load_policy

    task = get_env(env)
    env_options = task.heldout_env_options(env_options)
    problems = task.problems("heldout", n=n, seed=seed, config=env_options)
    model, tokenizer = load_policy(model_name)
    _, samples = evaluate(model, tokenizer, task, problems, max_new_tokens_per_turn=max_new_tokens_per_turn,
                          max_completion_tokens=max_completion_tokens, env_options=env_options, return_samples=True)
    correct = [0] * len(problems)
    for s in samples:
        correct[s.group] = int(bool(s.info.get("correct")))
    return correct


def cell_stage(grid: Grid, gdir: GridDir, impl: str, seed: int) -> None:
    from lab.catalog import get
    from reference_impls.algorithms.dpo.dpo import load_pair_stats
    from reference_impls.train import main as train_main

    folder = gdir.cell(impl, seed)
    folder.mkdir(parents=True, exist_ok=True)
    run = RunDir(folder / "run")
    env = get(impl).env
    config = cell_config(grid, impl, seed, str(gdir.warm(env)))
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
    ckpt = run.latest_checkpoint()
    if ckpt is None:
        raise RuntimeError(f"{run.path}: no checkpoint after training")
    metrics = read_jsonl(run.metrics_path)
    # an offline algorithm (the DPO family) samples its episodes before the first step: their time and
    # tokens are part of the cell's cost, though no step's metrics carry them
    pair_stats = load_pair_stats(run.pairs_path)
    t1 = time.time()
    heldout = evaluate_heldout(str(ckpt), env, config["env_options"], grid.eval_n, grid.eval_seed,
                               config["max_new_tokens_per_turn"], config["max_completion_tokens"])
    atomic_json(folder / "result.json", {
        "cell": cell_id(impl, seed), "implementation": impl, "algo": config["algo"], "env": env, "seed": seed,
        "config": config, "steps_done": metrics[-1]["step"] if metrics else 0, "resumed_from_step": resumed_from,
        "stopped_by_wall_cap": bool(metrics) and metrics[-1]["step"] < config["steps"],
        "curve": [{"step": m["step"], "reward_mean": m.get("reward_mean"), "accuracy": m.get("accuracy")}
                  for m in metrics],
        "tokens": round(sum(m.get("tokens_per_s", 0.0) * m.get("step_s", 0.0) for m in metrics))
                  + int(pair_stats.get("generated_tokens", 0)),
        "train_s": round((metrics[-1]["wall_s"] if metrics else train_s) + pair_stats.get("build_s", 0.0), 1),
        "sampling_before_training_s": pair_stats.get("build_s"),
        "eval_s": round(time.time() - t1, 1), "peak_rss_mb": round(_peak_rss_mb(), 1),
        **_heldout_record(heldout),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    (folder / "error.txt").unlink(missing_ok=True)
    run.drop_resume_state()  # a finished cell is never resumed: keep its final weights only (pass@k samples them)


def passk_stage(grid: Grid, gdir: GridDir, env: str, samples: int, n_problems: int, out=sys.stdout) -> None:
    """pass@k for k = 1..samples of the base model, the warm start and the best RL cell of ``env``.

    Resumable: each problem's count is saved as it is measured (``passk/.<env>.partial.json``), and each
    problem's samples draw from their own seed (the eval seed + the problem's index), so a killed stage
    resumes at the next problem and ends with the same counts as one that was never stopped.
    """
    import dataclasses as dc

    import torch

    from reference_impls.envs import get_env
    from reference_impls.models import load_policy
    from reference_impls.rollout import RolloutConfig, rollout
    from reference_impls.stats import pass_at_k_curve

    done = [r for r in cell_results(grid, gdir) if r["env"] == env]
    if not done:
        raise ConfigError(f"passk --env {env}: no finished cell of this environment yet")
    best = max(done, key=lambda r: r["heldout"])
    best_run = RunDir(gdir.cell(best["implementation"], best["seed"]) / "run")
    if best_run.latest_model() is None:
        raise ConfigError(f"passk --env {env}: the best cell {best['cell']} has no checkpoint in {best_run.path} "
                          f"(an exported result without its run); train it again by moving its folder away")
    config = best["config"]
    models = {"base": warm_settings(grid, env)["model"], "warm start": str(gdir.warm(env)),
              f"RL ({best['implementation']}, seed {best['seed']})": str(best_run.latest_model())}
    task = get_env(env)
    env_options = task.heldout_env_options(config["env_options"])
    problems = task.problems("heldout", n=n_problems, seed=grid.eval_seed, config=env_options)
    rcfg = RolloutConfig(group_size=samples, max_new_tokens_per_turn=config["max_new_tokens_per_turn"],
                         max_completion_tokens=config["max_completion_tokens"], temperature=1.0,
                         env_config=task.config_of(env_options))
    settings = {"env": env, "samples": samples, "problems": n_problems, "temperature": 1.0, "models": models,
                "max_new_tokens_per_turn": rcfg.max_new_tokens_per_turn,
                "max_completion_tokens": rcfg.max_completion_tokens, "env_options": env_options}
    (gdir.path / "passk").mkdir(exist_ok=True)
    partial_path = gdir.path / "passk" / f".{env}.partial.json"
    partial = json.loads(partial_path.read_text()) if partial_path.exists() else None
    if partial is None or partial.get("settings") != settings:  # other settings or another best cell: start over
        partial = {"settings": settings, "counts": {}, "seconds": {}}
    result = {"env": env, "samples": samples, "problems": n_problems, "temperature": 1.0, "curves": {}}
    for label, name in models.items():
        counts = partial["counts"].setdefault(label, [])
        seconds = partial["seconds"].setdefault(label, [])
        if len(counts) < len(problems):
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
        result["curves"][label] = {"model": name, "correct_counts": counts, "wall_s": round(sum(seconds), 1),
                                   "pass_at_k": {str(k): v for k, v in pass_at_k_curve(counts, samples).items()}}
    atomic_json(gdir.path / "passk" / f"{env}.json", result)
    partial_path.unlink()


def _peak_rss_mb() -> float:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20  # KiB on Linux, bytes on macOS


def validate(grid: Grid, gdir: GridDir) -> None:
    """Every cell's config passes the trainer's own checks before anything runs (ConfigError names the cell)."""
    from reference_impls.train import config_from_dict, resolve

    for impl, seed in grid.cells():
        try:
            from lab.catalog import get

            config = cell_config(grid, impl, seed, str(gdir.warm(get(impl).env)))
            resolve(config_from_dict(config), check_model=False)
        except (ConfigError, TypeError, ValueError) as err:
            raise ConfigError(f"grid {grid.name}, cell {cell_id(impl, seed)}: {err}") from None


def stage_process(args: list[str], log: Path) -> int:
    """``python -m lab.compare ARGS`` (a stage) in its own process, its output appended to ``log``; the exit code."""
    with open(log, "a") as f:
        proc = subprocess.run([sys.executable, "-m", "lab.compare", *args], stdout=f, stderr=subprocess.STDOUT,
                              env=dict(os.environ, HF_HUB_OFFLINE="1"))
    return proc.returncode


def run(grid: Grid, gdir: GridDir, max_cells: int | None = None, out=sys.stdout, grid_arg: str | None = None,
        env: str | None = None) -> int:
    """Run every missing stage in order (only ``env``'s warm start and cells when given: a grid can be
    finished one environment at a time); returns the number of failed stages."""
    validate(grid, gdir)
    if env is not None and env not in grid.envs():
        raise ConfigError(f"--env {env}: the grid has no cells on it; its environments: {', '.join(grid.envs())}")
    gdir.bind(grid)
    grid_arg = grid_arg or str(gdir.path / "grid.yaml")
    failures = 0
    envs = [e for e in grid.envs() if env is None or e == env]
    for name in envs:
        if grid.base and not gdir.base(name).exists():
            print(f"held-out of the untrained {name} model ...", file=out, flush=True)
            gdir.base(name).parent.mkdir(parents=True, exist_ok=True)
            if stage_process(["_baseeval", grid_arg, "--dir", str(gdir.path), "--env", name],
                      gdir.path / f"base-eval-{name}.log"):
                print(f"  failed: see {gdir.path / f'base-eval-{name}.log'}", file=out, flush=True)
                return failures + 1
        if not (gdir.warm(name) / "done.json").exists():
            print(f"warm start of {name} ...", file=out, flush=True)
            gdir.warm(name).parent.mkdir(parents=True, exist_ok=True)
            if stage_process(["_warm", grid_arg, "--dir", str(gdir.path), "--env", name],
                             gdir.path / f"warm-{name}.log"):
                print(f"  failed: see {gdir.path / f'warm-{name}.log'}", file=out, flush=True)
                return failures + 1
        if "heldout" not in json.loads((gdir.warm(name) / "done.json").read_text()):
            print(f"held-out of the {name} warm start (no RL) ...", file=out, flush=True)
            if stage_process(["_warmeval", grid_arg, "--dir", str(gdir.path), "--env", name],
                      gdir.path / f"warm-eval-{name}.log"):
                print(f"  failed: see {gdir.path / f'warm-eval-{name}.log'}", file=out, flush=True)
                return failures + 1
    cells = [c for c in grid.cells() if env_of(c[0]) in envs]
    finished = {c: gdir.result(*c) for c in cells}
    todo = [c for c in cells if finished[c] is None]
    for (impl, seed), r in finished.items():  # kept, not re-run: the user decides whether the old result goes
        if r is not None and (changed := stale_fields(grid, gdir, impl, seed, r)):
            print(f"warning: {cell_id(impl, seed)} was trained with other {', '.join(changed)} than the recipe "
                  f"gives it now; move {gdir.cell(impl, seed)} away to re-run it", file=out, flush=True)
    total, finished_before = len(cells), len(cells) - len(todo)
    if max_cells is not None:
        todo = todo[:max_cells]
    durations = []
    for i, (impl, seed) in enumerate(todo):
        done = finished_before + i
        eta = f", ETA {duration(sum(durations) / len(durations) * (len(todo) - i))}" if durations else ""
        print(f"[{done + 1}/{total}] {cell_id(impl, seed)}{eta}", file=out, flush=True)
        folder = gdir.cell(impl, seed)
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        rc = stage_process(["_cell", grid_arg, "--dir", str(gdir.path), "--impl", impl, "--seed", str(seed)],
                    folder / "log.txt")
        durations.append(time.time() - t0)
        if rc != 0 or gdir.result(impl, seed) is None:
            failures += 1
            tail = (folder / "log.txt").read_text(errors="replace")[-2000:]
            (folder / "error.txt").write_text(f"exit code {rc}\n{tail}")
            print(f"  failed (exit {rc}): {folder / 'error.txt'}", file=out, flush=True)
        else:
            r = gdir.result(impl, seed)
            print(f"  held-out {r['heldout']:.3f} in {duration(durations[-1])}", file=out, flush=True)
    return failures


def stale_fields(grid: Grid, gdir: GridDir, impl: str, seed: int, result: dict) -> list[str]:
    """The run options in which a finished cell's recorded config differs from what the grid's recipe
    gives that cell now (a recipe edited after the cell ran): such a cell is not comparable with new ones."""
    now = cell_config(grid, impl, seed, str(gdir.warm(env_of(impl))))
    then = result.get("config", {})
    return sorted(k for k in set(now) | set(then) if k not in ("out", "model") and now.get(k) != then.get(k))


def status(grid: Grid, gdir: GridDir) -> list[dict]:
    rows = []
    for impl, seed in grid.cells():
        folder = gdir.cell(impl, seed)
        result = gdir.result(impl, seed)
        changed = [] if result is None else stale_fields(grid, gdir, impl, seed, result)
        if changed:
            state = "stale"
        elif result is not None:
            state = "done"
        elif gdir.result_problem(impl, seed):
            state = "bad"
            changed = [gdir.result_problem(impl, seed)]
        elif (folder / "error.txt").exists():
            state = "failed"
        elif RunDir(folder / "run").latest_checkpoint() is not None:
            state = "partial"
        else:
            state = "pending"
        rows.append({"cell": cell_id(impl, seed), "state": state, "changed": changed,
                     "heldout": None if result is None else result["heldout"]})
    return rows

"""The driver of a grid: ``validate`` (every cell's config passes the trainer's checks), ``sweep`` (the
learning-rate trials, then each choice), ``run`` (every missing stage in order, resumable: finished stages are
kept, each warm start on its own) and ``status`` (each cell done, stale, partial, failed or pending) with
``warm_status`` (each warm start trained, evaluated or pending).

The stages (``warm``, ``heldout``, ``trial``, ``cell``, ``passk``) each run in their own process (``python -m
lab.compare _baseeval / _warm / _warmeval / _warmrestore / _trial / _cell / _passk``), one at a time: a crash or
OOM costs one cell, and the peak memory is the cell's own.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from reference_impls.options import ConfigError
from reference_impls.rundir import RunDir

from .folder import GridDir, read_record
from .cell_options import cell_config, env_of
from .grid import Grid, cell_id
from .report import duration
from .trial import choose_lr, missing_trials
from .warm import has_weights


def validate(grid: Grid, gdir: GridDir) -> None:
    """Every cell's config passes the trainer's own checks before anything runs (ConfigError names the cell); a
    sweep's, every point's cells (``gdir``: the sweep's folder)."""
    from reference_impls.train import config_from_dict, resolve

    if grid.sweep:
        from .sweep import point_dir

        for name, value in grid.sweep_points():
            validate(grid.at_point(value), point_dir(gdir.path, name))
        return

    runs = [(impl, seed, None) for impl, seed in grid.cells()]
    runs += [(impl, seed, lr) for impl in grid.implementations for lr in grid.sweep_lrs(impl)  # the trials too
             for seed in grid.trial_seeds()]
    for impl, seed, lr in runs:
        try:
            config = cell_config(grid, impl, seed, str(gdir.warm_of(grid, env_of(impl), seed)), lr=lr)
            resolve(config_from_dict(config), check_model=False)
        except (ConfigError, TypeError, ValueError) as err:
            where = f"cell {cell_id(impl, seed)}" if lr is None else f"the trial of {impl} with lr {lr:g}"
            raise ConfigError(f"grid {grid.name}, {where}: {err}") from None


def stage_process(args: list[str], log: Path) -> int:
    """``python -m lab.compare ARGS`` (a stage) in its own process, its output appended to ``log``; the exit code."""
    with open(log, "a") as f:
        proc = subprocess.run([sys.executable, "-m", "lab.compare", *args], stdout=f, stderr=subprocess.STDOUT,
                              env=dict(os.environ, HF_HUB_OFFLINE="1"))
    return proc.returncode


def sweep(grid: Grid, gdir: GridDir, impls: list[str], grid_arg: str, out=sys.stdout) -> int:
    """Each of ``impls``' missing learning-rate trials (each in its own process: ``python -m lab.compare
    _trial``), then its choice; returns the number of implementations left without a choice."""
    failed = 0
    for impl in impls:
        if not grid.sweep_lrs(impl) or gdir.choice(impl) is not None:
            continue
        tried: set = set()
        # the rates to try grow while the best one sits at an end of them (trial.rates_to_try): run what is
        # missing until nothing is, each trial once per call (a failed one is not retried in a loop)
        while todo := [t for t in missing_trials(grid, gdir, impl) if t not in tried]:
            for lr, seed in todo:
                tried.add((lr, seed))
                folder = gdir.trial(impl, lr, seed)
                which = "" if seed is None else f" seed {seed}"
                print(f"lr trial {impl} lr {lr:g}{which} (scored on validation) ...", file=out, flush=True)
                folder.mkdir(parents=True, exist_ok=True)
                if stage_process(["_trial", grid_arg, "--dir", str(gdir.path), "--impl", impl, "--lr", repr(lr),
                                  *([] if seed is None else ["--seed", str(seed)])], folder / "log.txt"):
                    print(f"  failed: see {folder / 'log.txt'}", file=out, flush=True)
        try:
            choice = choose_lr(grid, gdir, impl)
        except ConfigError as err:
            print(f"  {err}", file=out, flush=True)
            failed += 1
            continue
        bracket = "" if choice.get("bracketed", True) else "; not bracketed: the best rate may lie beyond the range"
        print(f"  {impl}: lr {choice['lr']:g} chosen on validation ("
              + ", ".join(f"{t['lr']:g}: {t['validation']:.3f}" for t in choice["trials"]) + f"){bracket}", file=out,
              flush=True)
    return failed


def run(grid: Grid, gdir: GridDir, max_cells: int | None = None, out=sys.stdout, grid_arg: str | None = None,
        env: str | None = None, restore_by_heldout: bool = False) -> int:
    """Run every missing stage in order (only ``env``'s warm start and cells when given: a grid can be
    finished one environment at a time); returns the number of failed stages. ``restore_by_heldout``: see
    ``warm_restore_stage``'s ``by_heldout``."""
    if grid.sweep:
        raise ConfigError(f"grid {grid.name} is a sweep: each point is a grid of its own (lab.compare.sweep.run_sweep, "
                          f"which python -m lab.compare run calls for it)")
    validate(grid, gdir)
    gdir.refuse_links()
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
        for warm_seed, warm in gdir.warm_starts(grid, name):  # each on its own: a finished one is kept
            which = ["--env", name, "--warm-seed", str(warm_seed)]
            if not (gdir.warm(warm) / "done.json").exists():
                print(f"warm start of {name}{_seed_words(grid, warm_seed)} ...", file=out, flush=True)
                gdir.warm(warm).parent.mkdir(parents=True, exist_ok=True)
                if stage_process(["_warm", grid_arg, "--dir", str(gdir.path), *which], gdir.path / f"warm-{warm}.log"):
                    print(f"  failed: see {gdir.path / f'warm-{warm}.log'}", file=out, flush=True)
                    return failures + 1
            elif not has_weights(gdir.warm(warm)):  # its record came without its weights (another session)
                print(f"weights of the {name} warm start{_seed_words(grid, warm_seed)}: trained again and checked "
                      f"against the recorded digest ...", file=out, flush=True)
                by_heldout = ["--restore-by-heldout"] if restore_by_heldout else []
                if stage_process(["_warmrestore", grid_arg, "--dir", str(gdir.path), *which, *by_heldout],
                                 gdir.path / f"warm-restore-{warm}.log"):
                    print(f"  failed: see {gdir.path / f'warm-restore-{warm}.log'}", file=out, flush=True)
                    return failures + 1
            if "heldout" not in json.loads((gdir.warm(warm) / "done.json").read_text()):
                print(f"held-out of the {name} warm start{_seed_words(grid, warm_seed)} (no RL) ...", file=out,
                      flush=True)
                if stage_process(["_warmeval", grid_arg, "--dir", str(gdir.path), *which],
                                 gdir.path / f"warm-eval-{warm}.log"):
                    print(f"  failed: see {gdir.path / f'warm-eval-{warm}.log'}", file=out, flush=True)
                    return failures + 1
    cells = [c for c in grid.cells() if env_of(c[0]) in envs]
    if grid.lr_sweep:  # learning rates chosen on validation before any cell trains (and is tested)
        impls = list(dict.fromkeys(impl for impl, _ in cells))
        if sweep(grid, gdir, impls, grid_arg, out):
            return failures + 1
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
            cell_env = env_of(impl)
            if impl == grid.passk_implementation(cell_env):  # its pass@k counts while its weights are here
                log = gdir.path / f"passk-{cell_env}-s{seed}.log"
                print(f"  pass@k of {cell_id(impl, seed)} (named in the grid file) ...", file=out, flush=True)
                if stage_process(["_passk", grid_arg, "--dir", str(gdir.path), "--env", cell_env, "--seed",
                                  str(seed)], log):
                    failures += 1
                    print(f"  failed: see {log}", file=out, flush=True)
    for name in envs:  # pass@k of the implementation the grid names, once every seed's cell of it is done
        impl = grid.passk_implementation(name)
        if impl is None or (gdir.path / "passk" / f"{name}.json").exists() or any(
                gdir.result(impl, seed) is None for seed in grid.seeds):
            continue
        print(f"pass@k on {name}: the untrained model, the warm start and every seed of {impl} (named in the grid "
              f"file) ...", file=out, flush=True)
        log = gdir.path / f"passk-{name}.log"
        if stage_process(["_passk", grid_arg, "--dir", str(gdir.path), "--env", name], log):
            failures += 1
            print(f"  failed: see {log}", file=out, flush=True)
    return failures


def _seed_words(grid: Grid, warm_seed: int) -> str:
    """`` (warm seed 1)`` where the grid has several warm starts, else nothing (the log reads as before)."""
    return f" (warm seed {warm_seed})" if len(grid.warm_seeds) > 1 else ""


def stale_fields(grid: Grid, gdir: GridDir, impl: str, seed: int, result: dict) -> list[str]:
    """The run options in which a finished cell's recorded config differs from what the grid's recipe
    gives that cell now (a recipe edited after the cell ran): such a cell is not comparable with new ones."""
    choice = gdir.choice(impl) if grid.lr_sweep else None
    now = cell_config(grid, impl, seed, str(gdir.warm_of(grid, env_of(impl), seed)),
                      lr=None if choice is None else choice["lr"])
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
                     "heldout": None if result is None else result["heldout"],
                     "warm_start": gdir.warm_of(grid, env_of(impl), seed).name})
    return rows


def warm_status(grid: Grid, gdir: GridDir) -> list[dict]:
    """Each warm start of the grid (``warm/<env>``, ``warm/<env>@w<seed>``): ``done`` (trained and its held-out
    measured), ``trained`` (held-out not yet measured), ``bad`` (a ``done.json`` that is not a record) or
    ``pending``, with its held-out."""
    from .folder import BadRecord

    rows = []
    for env in grid.envs():
        for warm_seed, name in gdir.warm_starts(grid, env):
            try:
                record = read_record(gdir.warm(name) / "done.json", cell=True)
            except BadRecord:
                rows.append({"warm": name, "env": env, "warm_seed": warm_seed, "state": "bad", "heldout": None})
                continue
            state = "pending" if record is None else "done" if "heldout" in record else "trained"
            rows.append({"warm": name, "env": env, "warm_seed": warm_seed, "state": state,
                         "heldout": None if record is None else record.get("heldout")})
    return rows

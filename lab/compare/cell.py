"""A cell of the grid (``cell_stage``): trained (with the learning rate chosen on validation, when the grid sweeps
it; in a grid without ``lr_trials`` the chosen trial's run is taken as the cell of the trials' seed, in one with
them every cell trains after the choice), then scored once on the held-out test problems.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from reference_impls.options import ConfigError
from reference_impls.rundir import RunDir

from .folder import GridDir, atomic_json, read_record
from .grid import Grid, cell_id
from .heldout import evaluate_heldout, heldout_config, heldout_record
from .training import peak_rss_mb, train_run, write_diagnostics
from .trial import TRIAL_KEYS


def cell_stage(grid: Grid, gdir: GridDir, impl: str, seed: int) -> None:
    """Train a cell (with the learning rate chosen on validation, when the grid sweeps it), then score it once
    on the held-out test problems."""
    choice = gdir.choice(impl) if grid.lr_sweep else None
    if grid.lr_sweep and choice is None:
        raise ConfigError(f"{cell_id(impl, seed)}: the learning-rate sweep of {impl} has not chosen yet "
                          f"({gdir.choice_path(impl)} is missing); run the grid, which runs the sweep first")
    folder = gdir.cell(impl, seed)
    run = RunDir(folder / "run")
    record = _chosen_trial(gdir, impl, seed, choice, folder) if grid.trial_is_cell else None
    if record is None:
        record = train_run(grid, gdir, impl, seed, folder, lr=None if choice is None else choice["lr"])
    config = record["config"]
    t1 = time.time()
    heldout = evaluate_heldout(str(run.latest_model()), record["env"], heldout_config(config), grid.eval_n,
                               grid.eval_seed, config["max_new_tokens_per_turn"], config["max_completion_tokens"])
    atomic_json(folder / "result.json", {
        **record, "validation": choice,
        "eval_s": round(time.time() - t1, 1), "peak_rss_mb": max(record["peak_rss_mb"], round(peak_rss_mb(), 1)),
        **heldout_record(heldout),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    (folder / "error.txt").unlink(missing_ok=True)
    run.drop_resume_state()  # a finished cell is never resumed: keep its final weights only (pass@k samples them)


def _chosen_trial(gdir: GridDir, impl: str, seed: int, choice: dict | None, folder: Path) -> dict | None:
    """The chosen trial's run as the cell of the trials' seed (the same config, so the same training): moved
    into ``folder`` instead of trained again, with its record's work part; None when there is none to take
    (another seed, no sweep, or already taken: the cell then trains or resumes as usual)."""
    if choice is None or seed != choice["seed"]:
        return None
    trial = gdir.trial(impl, choice["lr"])
    record = read_record(trial / "result.json", ("config",))
    if record is None or not (trial / "run").is_dir() or (folder / "run").exists():
        return None
    folder.mkdir(parents=True, exist_ok=True)
    os.replace(trial / "run", folder / "run")
    work = {k: v for k, v in record.items() if k not in TRIAL_KEYS}
    work["config"] = {**work["config"], "out": str(folder / "run")}
    work["trained_as"] = f"the chosen learning-rate trial ({trial.relative_to(gdir.path)}), moved here"
    write_diagnostics(folder, work["diagnostics"])
    return work

"""The learning-rate trials of a grid with an ``lr_sweep`` (``trial_stage``), scored on the validation split only,
then the choice (``choose_lr``).

A grid with ``lr_trials`` (issue 60) tries each rate with every trial seed (none of them a cell seed; trial j from
the warm start of ``warm_seeds[j % n]``), chooses the rate of the highest mean validation success over those seeds,
and where that rate is at an end of the rates tried adds the next one beyond it (``rates_to_try``, at most
``lr_extend``), so that the choice is bracketed or the record says it is not; no trial's run is a cell, so every
cell trains after the choice. A grid without ``lr_trials`` (every grid.yaml written before) tries each rate once,
with seed ``warm_seed``, and its chosen trial is that seed's cell.
"""
from __future__ import annotations

import shutil
import time

from reference_impls.options import ConfigError
from reference_impls.rundir import RunDir

from .folder import GridDir, atomic_json, read_record
from .grid import Grid
from .heldout import heldout_config, score_problems
from .training import train_run


#: what a trial's record adds to the work part ``train_run`` returns
TRIAL_KEYS = ("lr", "validation", "validation_by_problem", "eval_s", "finished")


def trial_stage(grid: Grid, gdir: GridDir, impl: str, lr: float, seed: int | None = None) -> None:
    """One learning-rate trial of ``impl`` with ``lr``: trained as a cell of ``seed`` (a trial seed of
    ``lr_trials``; None: the old trial, of seed ``warm_seed``), scored on the validation problems only (never on
    the test problems)."""
    from reference_impls.envs import get_env
    from reference_impls.measure.evaluate import validation_problems

    if seed is not None and seed not in grid.lr_trial_seeds:
        raise ConfigError(f"--seed {seed}: not one of the grid's lr_trials seeds {list(grid.lr_trial_seeds)}")
    folder = gdir.trial(impl, lr, seed)
    record = train_run(grid, gdir, impl, grid.warm_seed if seed is None else seed, folder, lr=lr)
    config = record["config"]
    run = RunDir(folder / "run")
    task = get_env(record["env"])
    episodes = heldout_config(config)
    problems = validation_problems(task, grid.validation_n, grid.validation_seed, grid.eval_n, grid.eval_seed,
                                   config=episodes)
    t1 = time.time()
    scores = score_problems(str(run.latest_model()), task, problems, episodes,
                            config["max_new_tokens_per_turn"], config["max_completion_tokens"])
    atomic_json(folder / "result.json", {
        **record, "lr": lr, "validation": sum(scores) / len(scores), "validation_by_problem": scores,
        "eval_s": round(time.time() - t1, 1),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    if grid.trial_is_cell:
        # kept until the choice: the chosen trial is the cell of seed warm_seed (the same config), not trained twice
        run.drop_resume_state()
    else:  # no cell is ever a trial's run: its weights are not used again
        shutil.rmtree(run.path, ignore_errors=True)


def _trial_seeds(grid: Grid) -> list[int | None]:
    """The seeds of a rate's trials as ``GridDir.trial`` names them (None: the one old trial)."""
    return [None] if grid.trial_is_cell else list(grid.lr_trial_seeds)


def _scores(grid: Grid, gdir: GridDir, impl: str, lrs: list[float]) -> list[dict] | None:
    """Each rate's trials read back: {"lr", "validation" (mean over the trial seeds), "complete" (every seed's trial
    finished its budget), "validation_by_problem" (old trials) or "by_seed"}; None while one has not run."""
    rows = []
    for lr in lrs:
        records = []
        for seed in _trial_seeds(grid):
            r = read_record(gdir.trial(impl, lr, seed) / "result.json", ("validation",))
            if r is None:
                return None
            records.append((seed, r))
        row = {"lr": lr, "validation": sum(r["validation"] for _, r in records) / len(records),
               "complete": all(bool(r.get("complete")) for _, r in records)}
        if grid.trial_is_cell:
            row["validation_by_problem"] = records[0][1]["validation_by_problem"]
        else:
            row["by_seed"] = [{"seed": seed, "validation": r["validation"], "complete": bool(r.get("complete")),
                               "validation_by_problem": r["validation_by_problem"]} for seed, r in records]
        rows.append(row)
    return rows


def _best(rows: list[dict]) -> dict | None:
    usable = [t for t in rows if t["complete"]]
    return max(usable, key=lambda t: t["validation"]) if usable else None  # max keeps the first of equal scores


def beyond(lrs: list[float], lr: float) -> float | None:
    """The next rate past ``lr`` when it is the smallest or the largest of ``lrs`` (the range's outermost step
    again, three significant digits), else None: it is bracketed. None too past 1 (no learning rate)."""
    rates = sorted(lrs)
    if len(rates) < 2 or rates[0] < lr < rates[-1]:
        return None
    if lr == rates[0]:
        return float(f"{rates[0] * rates[0] / rates[1]:.3g}")
    nxt = float(f"{rates[-1] * rates[-1] / rates[-2]:.3g}")
    return nxt if nxt < 1 else None


def rates_to_try(grid: Grid, gdir: GridDir, impl: str) -> list[float]:
    """The rates ``impl``'s trials try now: the sweep's, then each rate added beyond the end that wins (the
    trials' scores decide, so this is the same on every call once they have run; at most ``lr_extend``)."""
    lrs = grid.sweep_lrs(impl)
    for _ in range(0 if grid.trial_is_cell else grid.lr_extend):
        rows = _scores(grid, gdir, impl, lrs)
        best = None if rows is None else _best(rows)
        nxt = None if best is None else beyond(lrs, best["lr"])
        if nxt is None:
            break
        lrs = [*lrs, nxt]
    return lrs


def missing_trials(grid: Grid, gdir: GridDir, impl: str) -> list[tuple[float, int | None]]:
    """(lr, seed) of each trial ``rates_to_try`` asks for that has no record yet."""
    return [(lr, seed) for lr in rates_to_try(grid, gdir, impl) for seed in _trial_seeds(grid)
            if read_record(gdir.trial(impl, lr, seed) / "result.json") is None]


def choose_lr(grid: Grid, gdir: GridDir, impl: str) -> dict:
    """The learning rate of ``impl``'s cells: the rate with the highest mean validation success (over the trial
    seeds) among those whose trials are all complete (ties: the first tried). Written to ``sweep/<impl>.json``
    and copied into every cell record, with ``seeds`` (the trial seeds), ``added`` (rates tried beyond the
    sweep's range) and ``bracketed`` (the chosen rate lies between two rates tried)."""
    lrs = rates_to_try(grid, gdir, impl)
    trials = _scores(grid, gdir, impl, lrs)
    if trials is None:
        missing = next(lr for lr in lrs if _scores(grid, gdir, impl, [lr]) is None)
        raise ConfigError(f"{impl}: the trial with lr {missing:g} has not run")
    best = _best(trials)
    if best is None:
        raise ConfigError(f"{impl}: no learning-rate trial finished its budget (all stopped by the safety cap)")
    choice = {"implementation": impl, "lr": best["lr"], "trials": trials, "seed": grid.warm_seed,
              "split": {"n": grid.validation_n, "seed": grid.validation_seed},
              "rule": "highest mean validation success among complete trials; ties: the first listed"}
    if not grid.trial_is_cell:
        sweep = grid.sweep_lrs(impl)
        choice.update(seed=None, seeds=list(grid.lr_trial_seeds), added=[lr for lr in lrs if lr not in sweep],
                      bracketed=beyond(lrs, best["lr"]) is None and min(lrs) < best["lr"] < max(lrs),
                      rule="highest mean validation success over the trial seeds among rates whose trials are all "
                           "complete; ties: the first tried; a rate at an end of the range tried extends it")
    gdir.choice_path(impl).parent.mkdir(parents=True, exist_ok=True)
    atomic_json(gdir.choice_path(impl), choice)
    for t in trials:  # the other trials' weights are never used again
        if t["lr"] != best["lr"]:
            shutil.rmtree(gdir.trial(impl, t["lr"]) / "run", ignore_errors=True)
    return choice

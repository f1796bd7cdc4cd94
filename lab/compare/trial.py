"""The learning-rate trials of a grid with an ``lr_sweep``: each trained like a cell of seed ``warm_seed``, from
that seed's warm start, and scored on the validation split only (``trial_stage``); then ``choose_lr``.
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


def trial_stage(grid: Grid, gdir: GridDir, impl: str, lr: float) -> None:
    """One learning-rate trial of ``impl``: trained as a cell of seed ``warm_seed`` with ``lr``, scored on the
    validation problems only (never on the test problems). The chosen trial's run becomes that seed's cell."""
    from reference_impls.envs import get_env
    from reference_impls.measure.evaluate import validation_problems

    folder = gdir.trial(impl, lr)
    record = train_run(grid, gdir, impl, grid.warm_seed, folder, lr=lr)
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
    # kept until the choice: the chosen trial is the cell of seed warm_seed (the same config), not trained twice
    run.drop_resume_state()


def choose_lr(grid: Grid, gdir: GridDir, impl: str) -> dict:
    """The learning rate of ``impl``'s cells: the trial with the highest mean validation success among the
    complete ones (ties: the first listed). Written to ``sweep/<impl>.json`` and copied into every cell record."""
    trials = []
    for lr in grid.sweep_lrs(impl):
        r = read_record(gdir.trial(impl, lr) / "result.json", ("validation",))
        if r is None:
            raise ConfigError(f"{impl}: the trial with lr {lr:g} has not run")
        trials.append({"lr": lr, "validation": r["validation"], "complete": bool(r.get("complete")),
                       "validation_by_problem": r["validation_by_problem"]})
    usable = [t for t in trials if t["complete"]]
    if not usable:
        raise ConfigError(f"{impl}: no learning-rate trial finished its budget (all stopped by the safety cap)")
    best = max(usable, key=lambda t: t["validation"])  # max keeps the first of equal scores
    choice = {"implementation": impl, "lr": best["lr"], "trials": trials, "seed": grid.warm_seed,
              "split": {"n": grid.validation_n, "seed": grid.validation_seed},
              "rule": "highest mean validation success among complete trials; ties: the first listed"}
    gdir.choice_path(impl).parent.mkdir(parents=True, exist_ok=True)
    atomic_json(gdir.choice_path(impl), choice)
    for t in trials:  # the other trials' weights are never used again
        if t["lr"] != best["lr"]:
            shutil.rmtree(gdir.trial(impl, t["lr"]) / "run", ignore_errors=True)
    return choice

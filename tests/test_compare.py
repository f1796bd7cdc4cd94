"""The comparison grid: statistics against hand values, grid validation, the leaderboard, and the runner on
the tiny model (two algorithms x one environment x two seeds), including a resume after a kill."""
import dataclasses
import io
import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from lab.compare.driver import run as run_grid, status as grid_status, validate as validate_grid
from lab.compare.passk import PASSK_DECLARED, passk_models, passk_stage
from lab.compare.warm import warm_stage, weights_digest
from lab.compare.board import ONE_SEED, PASSK_LEGACY, leaderboard, passk_comparison, progression
from lab.compare.cli import main
from lab.compare.folder import GridDir, atomic_json, cell_results
from lab.compare.cell_options import cell_config, chosen_env_options, warm_settings
from lab.compare.grid import GRIDS, Grid, cell_id
from lab.compare.report import export, passk_reading
from lab.compare.results import _records, load_results
from reference_impls.options import ConfigError
from reference_impls.rundir import RunDir
from reference_impls.stats import bootstrap_interval, holm, pass_at_k, pass_at_k_curve

from inprocess import compare_stages_in_process, run_main


# -- statistics ----------------------------------------------------------------------------------------

def test_pass_at_k_by_hand():
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 - C(3,2)/C(5,2)
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)  # k = 1: the fraction correct
    assert pass_at_k(4, 0, 3) == 0.0 and pass_at_k(4, 4, 1) == 1.0
    assert pass_at_k(6, 4, 3) == 1.0  # fewer than k wrong samples: every k-subset holds a correct one
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)
    with pytest.raises(ValueError):
        pass_at_k(4, 5, 1)


def test_pass_at_k_curve_averages_problems():
    curve = pass_at_k_curve([0, 2, 4], n=4, ks=[1, 2])
    assert curve[1] == pytest.approx((0 + 0.5 + 1) / 3)
    assert curve[2] == pytest.approx((0 + (1 - 1 / 6) + 1) / 3)  # C(2,2)/C(4,2) = 1/6


def _passk_record(counts_by_model, n):
    return {"samples": n, "curves": {label: {"correct_counts": counts} for label, counts in counts_by_model.items()}}


def _shown(reading):
    """The pass@k figures a reading shows, in order: (k, before %, after %, difference in points)."""
    import re

    return [tuple(map(int, m)) for m in re.findall(r"pass@(\d+) (\d+)% -> (\d+)% \(([+-]\d+) pts", reading)]


def _figures(row):
    """The same figures from a ``passk_comparison`` row, rounded as shown."""
    return (row["k"], round(100 * row["before"]), round(100 * row["value"]), round(100 * row["difference"]["mean"]))


def test_passk_comparison_reads_sharpening_against_hand_values():
    # 40 problems, 64 samples. Warm start: 8 right on 20 problems, 1 right on the other 20 (it can sample an
    # answer for all 40). RL: 32 right on the first 20, none on the other 20.
    record = _passk_record({"base": [0] * 40, "warm start": [8] * 20 + [1] * 20, "RL (x, seed 0)": [32] * 20 + [0] * 20},
                           n=64)
    rows = passk_comparison(record)
    assert [(r["model"], r["against"], r["k"]) for r in rows] == [
        ("warm start", "base", 1), ("warm start", "base", 64), ("RL (x, seed 0)", "warm start", 1),
        ("RL (x, seed 0)", "warm start", 64)]
    rl1, rl64 = rows[2], rows[3]
    assert rl1["before"] == pytest.approx((20 * 8 / 64 + 20 * 1 / 64) / 40)  # 0.0703
    assert rl1["value"] == pytest.approx(0.25) and rl1["verdict"] == "better"
    assert rl1["difference"]["mean"] == pytest.approx(0.25 - 0.0703125)
    # pass@64 with c >= 1 of 64 is 1: the warm start 1.0 everywhere, RL 1.0 on 20 problems and 0 on 20
    assert (rl64["before"], rl64["value"], rl64["verdict"]) == (1.0, 0.5, "worse")
    reading = passk_reading(rows)
    # a record without ``method`` is the old method's (its RL cell picked on the test problems): it says so first
    assert all(r["method"] == PASSK_LEGACY for r in rows)
    assert reading.startswith(PASSK_LEGACY[0].upper() + PASSK_LEGACY[1:])
    assert reading.index("RL (x, seed 0)") < reading.index("warm start")  # the model, then what it is read against
    assert _shown(reading) == [_figures(rl1), _figures(rl64)] == [(1, 7, 25, 18), (64, 100, 50, -50)]
    assert "Sharpened and narrowed" in reading

    # RL that solves problems the warm start never sampled a right answer for: "added"
    wider = passk_comparison(_passk_record({"warm start": [0] * 40, "RL": [2] * 40}, n=64))
    assert wider[-1]["verdict"] == "better" and "Added" in passk_reading(wider)
    same = passk_comparison(_passk_record({"warm start": [4] * 40, "RL": [4] * 40}, n=64))
    assert [r["verdict"] for r in same[-2:]] == ["no difference detected"] * 2
    assert "Neither sharpened nor widened" in passk_reading(same)
    assert _shown(passk_reading(same)) == [_figures(r) for r in same[-2:]]
    # every p behind a reading went through Holm over the record's tests, and the reading says so
    assert all(r["p_holm"] >= r["p_raw"] and r["tests"] == 2 for r in same)
    assert "Holm over the record's 2 tests" in passk_reading(same) and "significant" not in passk_reading(same)
    # records without per-problem counts (older files) give no comparison, not an error
    assert passk_comparison({"samples": 4, "curves": {"base": {"pass_at_k": {"1": 0.1}}}}) == []
    assert passk_reading([]) is None


def test_passk_comparison_of_the_declared_method_tests_every_seed():
    """A record of the declared method: the named implementation's complete seeds pooled into one model, tested
    against the warm-start row with the crossed seeds x problems test (``stats.compare`` on the same per-problem
    pass@k) at the record's k, Holm over those tests only; the warm start against the untrained model is one
    checkpoint a side: an observation, out of the Holm family; an incomplete seed is left out."""
    from reference_impls.stats import compare

    n = 8
    seeds = {0: [6] * 25 + [0] * 25, 1: [5] * 25 + [1] * 25, 2: [7] * 25 + [0] * 25, 3: [8] * 50}
    record = {"samples": n, "method": PASSK_DECLARED, "implementation": "x", "k": [1, 8],
              "cells": {f"RL (x, seed {s})": {"seed": s, "in_verdicts": s != 3} for s in seeds},
              "curves": {"base": {"correct_counts": [0] * 50}, "warm start": {"correct_counts": [2] * 50},
                         **{f"RL (x, seed {s})": {"correct_counts": c} for s, c in seeds.items()}}}
    rows = passk_comparison(record)
    assert [(r["model"], r["against"], r["k"]) for r in rows] == [
        ("warm start", "base", 1), ("warm start", "base", 8), ("RL (x, 3 seeds)", "warm start", 1),
        ("RL (x, 3 seeds)", "warm start", 8)]
    assert [r["verdict"] for r in rows[:2]] == ["one run", "one run"] and rows[0]["p_holm"] is None
    for row, k in zip(rows[2:], (1, 8)):
        direct = compare([[pass_at_k(n, c, k) for c in seeds[s]] for s in (0, 1, 2)],
                         [[pass_at_k(n, 2, k)] * 50])
        assert row["seeds"] == 3 and row["tests"] == 2 and row["p_raw"] == pytest.approx(direct.p_value)
        assert row["difference"]["mean"] == pytest.approx(direct.difference) and row["test"] == direct.test
        assert row["sentence"].startswith(f"{row['verdict']} than warm start" if row["verdict"] in ("better", "worse")
                                          else "no difference detected from warm start")
    assert [r["p_holm"] for r in rows[2:]] == pytest.approx(holm([r["p_raw"] for r in rows[2:]]))
    # pass@1: 25 problems at 6, 5 and 7 of 8, 25 at 0, 1 and 0 of 8 -> 475 / 1200 = 0.396 against the warm start's 0.25
    assert rows[2]["value"] == pytest.approx(475 / 1200) and rows[2]["before"] == 0.25
    reading = passk_reading(rows)
    assert reading.startswith(rows[2]["model"]) and PASSK_LEGACY[1:] not in reading  # the 3 seeds pooled, declared
    assert _shown(reading) == [_figures(r) for r in rows[2:]] and _shown(reading)[0][1:3] == (25, 40)


def test_bootstrap_interval_by_hand():
    flat = bootstrap_interval([[1, 1, 1], [1, 1, 1]])
    assert (flat.mean, flat.low, flat.high) == (1.0, 1.0, 1.0)
    # one seed, problems [0, 1]: a resample's mean is 0, 0.5 or 1 with probability 1/4, 1/2, 1/4, so the
    # 2.5 % and 97.5 % quantiles are 0 and 1
    two = bootstrap_interval([[0, 1]], draws=4000)
    assert two.mean == 0.5 and two.low == 0.0 and two.high == 1.0
    wide = bootstrap_interval([[1] * 10 + [0] * 10])
    assert 0.25 < wide.low < 0.5 < wide.high < 0.75
    with pytest.raises(ValueError):
        bootstrap_interval([])


# -- grid files ----------------------------------------------------------------------------------------

def _grid(tmp_path, **changes):
    """tiny.yaml with ``changes``, without its learning-rate sweep and pass@k unless given: these tests check the
    runner's cells (tests/test_compare_method.py runs tiny.yaml's method whole, sweep and pass@k included)."""
    data = yaml.safe_load((GRIDS / "tiny.yaml").read_text())
    data.pop("lr_sweep", None)
    data.pop("lr_trials", None)  # they try the sweep's rates
    data.pop("passk", None)  # the runner's pass@k stage: test_passk_* and tests/test_compare_method.py
    if "warm_seeds" not in changes:  # one warm start: these tests check cells (per seed: test_compare_method.py)
        data["warm_seed"] = 0
    data.update(changes)
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_shipped_grids_load_and_validate(tmp_path):
    """Every grid file in lab/recipes/grids/ loads, is named after its file (``run NAME`` and its folder
    ``compare/NAME`` agree) and has cells, each of whose configs passes the trainer's checks (validate raises
    otherwise)."""
    paths = sorted(GRIDS.glob("*.yaml"))
    assert {"core", "tiny"} <= {p.stem for p in paths}  # the folder is found: an empty loop would check nothing
    for path in paths:
        grid = Grid.load(str(path))
        assert grid.name == path.stem and grid.cells(), path
        validate_grid(grid, GridDir(tmp_path / grid.name))


def test_a_cell_trained_under_an_older_recipe_is_marked_stale(tmp_path):
    """A finished cell whose recorded config is not what the grid's recipe gives it now (the recipe was
    edited afterwards) is "stale" in status, with the changed options named."""
    grid = Grid.load(str(_grid(tmp_path)))
    gdir = GridDir(tmp_path / "g")
    (impl, seed), (other, other_seed) = grid.cells()[:2]
    current = cell_config(grid, impl, seed, str(gdir.warm("calculator")))
    for cell, config in (((impl, seed), {**current, "out": "elsewhere", "lr": current["lr"] * 10}),
                         ((other, other_seed), cell_config(grid, other, other_seed, "any/model"))):
        gdir.cell(*cell).mkdir(parents=True)
        (gdir.cell(*cell) / "result.json").write_text(json.dumps({"heldout": 0.5, "config": config}))
    rows = {r["cell"]: r for r in grid_status(grid, gdir)}
    assert rows[cell_id(impl, seed)]["state"] == "stale"
    assert rows[cell_id(impl, seed)]["changed"] == ["lr"]
    assert rows[cell_id(other, other_seed)]["state"] == "done"  # out and model are the folder's own
    assert rows[cell_id(other, other_seed)]["changed"] == []


def test_bad_grids_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match="implementations.*calculator-nope"):
        Grid.load(str(_grid(tmp_path, implementations=["calculator-nope"])))
    with pytest.raises(ConfigError, match="seeds"):
        Grid.load(str(_grid(tmp_path, seeds=[])))
    with pytest.raises(ConfigError, match="recipe"):
        Grid.load(str(_grid(tmp_path, recipe="nope")))
    with pytest.raises(ConfigError, match="unknown field"):
        Grid.load(str(_grid(tmp_path, budgets=3)))
    grid = Grid.load(str(_grid(tmp_path, options={"steps": -1})))
    with pytest.raises(ConfigError, match="cell calculator-grpo-s0.*steps"):
        validate_grid(grid, GridDir(tmp_path / "g"))


def test_a_folder_keeps_its_grid(tmp_path):
    gdir = GridDir(tmp_path / "g")
    GridDir.bind(gdir, Grid.load(str(_grid(tmp_path))))
    other = Grid.load(str(_grid(tmp_path, options={"model": "tiny", "steps": 3})))
    with pytest.raises(ConfigError, match="different options"):
        gdir.bind(other)


def _cell(impl, algo, seed, heldout, train_s=10.0):
    return {"cell": f"{impl}-s{seed}", "implementation": impl, "algo": algo, "env": "calculator", "seed": seed,
            "heldout_by_problem": heldout, "train_s": train_s, "tokens": 100, "peak_rss_mb": 500.0, "config": {}}


def test_leaderboard_ranks_and_compares_with_the_baseline():
    good = [1] * 40
    poor = [1] * 10 + [0] * 30
    cells = [_cell("calculator-grpo", "grpo", 0, poor), _cell("calculator-grpo", "grpo", 1, poor),
             _cell("calculator-ppo", "ppo", 0, good), _cell("calculator-ppo", "ppo", 1, good),
             _cell("calculator-dapo", "grpo", 0, poor)]
    board = leaderboard(cells)["calculator"]
    assert [r["implementation"] for r in board][0] == "calculator-ppo"
    rows = {r["implementation"]: r for r in board}
    assert rows["calculator-grpo"]["verdict"] == "baseline"  # dapo shares the algo but has switches
    # seed s pairs with seed s: both of ppo's seeds gain the same 30 problems; the only multi-seed test, so
    # Holm over 1 test
    test = rows["calculator-ppo"]["tests"]["baseline"]
    assert (test["relation"], test["against"], test["difference"], test["tests"]) == ("better", "calculator-grpo",
                                                                                       0.75, 1)
    assert test["p_raw"] <= test["p_holm"] < 0.001 and rows["calculator-ppo"]["verdict"] == test["verdict"]
    assert test["verdict"].startswith("better than calculator-grpo")
    assert rows["calculator-ppo"]["seeds"] == 2 and rows["calculator-ppo"]["heldout"] == 1.0
    # dapo has one seed: its comparison (seed 0 against seed 0) is an observation about that run, no verdict
    assert rows["calculator-dapo"]["verdict"].startswith(ONE_SEED)
    assert ONE_SEED not in rows["calculator-ppo"]["verdict"]
    assert rows["calculator-dapo"]["tests"]["baseline"]["p_holm"] is None


def test_progression_compares_each_stage_with_the_one_it_starts_from():
    """untrained -> SFT -> SFT + RL on the same 40 problems: SFT is paired with the untrained model, each RL
    implementation with the warm start; means are plain fractions of the 0/1s. Single runs are observations."""
    untrained = [0] * 40
    warm = [1] * 20 + [0] * 20
    base = {"calculator": {"heldout": 0.0, "heldout_by_problem": untrained}}
    warm_rec = {"calculator": {"heldout": 0.5, "heldout_by_problem": warm}}
    cells = [_cell("calculator-grpo", "grpo", 0, [1] * 40), _cell("calculator-rloo", "rloo", 0, list(warm)),
             _cell("calculator-rloo", "rloo", 1, list(warm)), _cell("calculator-dpo", "dpo", 0, [0] * 40)]
    rows = {r["stage"]: r for r in progression(cells, base, warm_rec)["calculator"]}
    assert list(rows) == ["untrained", "SFT (warm start)", "SFT + RL (calculator-grpo)", "SFT + RL (calculator-rloo)",
                          "SFT + RL (calculator-dpo)"]
    assert rows["untrained"]["vs"] is None and rows["untrained"]["heldout"] == 0.0
    assert rows["SFT (warm start)"]["vs_stage"] == "untrained" and rows["SFT (warm start)"]["vs"]["mean"] == 0.5
    # the warm start and the untrained model are one run each: an observation, with what differed
    assert rows["SFT (warm start)"]["verdict"].startswith(ONE_SEED) and "+50.0 points" in rows["SFT (warm start)"][
        "verdict"]
    grpo, rloo, dpo = (rows[f"SFT + RL (calculator-{a})"] for a in ("grpo", "rloo", "dpo"))
    assert grpo["vs_stage"] == "SFT (warm start)" and grpo["vs"]["mean"] == 0.5 and grpo["verdict"].startswith(ONE_SEED)
    # two seeds equal to the warm start on every problem: no difference detected, and the interval is the exact
    # bound on what 40 problems could hide (1 - 0.025^(1/40)), not [0, 0]
    bound = 1 - 0.025 ** (1 / 40)
    assert rloo["seeds"] == 2 and rloo["vs"] == {"mean": 0.0, "low": pytest.approx(-bound), "high": pytest.approx(bound)}
    assert rloo["verdict"].startswith("no difference detected") and f"+-{100 * bound:.1f} points" in rloo["verdict"]
    assert dpo["vs"]["mean"] == -0.5 and dpo["verdict"].startswith(ONE_SEED)
    assert ONE_SEED not in rloo["verdict"]
    # without references there is nothing to pair with; an environment with references but no cell is kept
    alone = progression(cells, {}, {})["calculator"]
    assert all(r["vs"] is None for r in alone)
    assert [r["stage"] for r in progression([], base, warm_rec)["calculator"]] == ["untrained",
                                                                                          "SFT (warm start)"]


# -- the runner on the tiny model ------------------------------------------------------------------------

@pytest.fixture
def tiny_grid(tmp_path):
    return _grid(tmp_path, options={"model": "tiny", "steps": 4, "prompts_per_step": 2, "group_size": 2,
                                    "max_new_tokens_per_turn": 8, "max_completion_tokens": 24,
                                    "checkpoint_every": 1, "sft_steps": 0}, eval={"n": 4, "seed": 7}, base=True)


def test_the_warm_start_reports_its_steps(tmp_path, capsys):
    """A long warm start shows where it is: each SFT step's loss goes to the stage's output (its log)."""
    grid = Grid.load(str(_grid(tmp_path)))  # tiny.yaml: one SFT step
    gdir = GridDir(tmp_path / "g")
    warm_stage(grid, gdir, "calculator")
    assert "sft step 1/1 loss" in capsys.readouterr().out
    assert json.loads((gdir.warm("calculator") / "done.json").read_text())["sft_steps"] == 1


def test_the_grids_rows_on_search_and_frozenlake_keep_their_calculator_rows_switches():
    """The core grid's algorithms on search and FrozenLake are declared in those environments' modules; each is
    its calculator row's algorithm with the same switches (a variant changed on the calculator only would compare
    another algorithm on the other environments)."""
    from reference_impls.registry import by_id

    rows = by_id()
    pairs = [(rows[f"{env}-{suffix}"], rows[f"calculator-{suffix}"]) for env in ("search", "frozenlake")
             for suffix in ("dr-grpo", "dapo", "gspo", "rloo", "ppo", "dpo")]
    for row, calculator in pairs:
        assert row.source == f"envs/{row.env}.py", row.id
        assert (row.algo, row.algo_options) == (calculator.algo, calculator.algo_options), row.id
    assert sum(row.algo_options != {} for row, _ in pairs) == 6  # dr-grpo, dapo, gspo on each: the switches compared


def test_the_grid_and_the_trainer_share_one_warm_start(tmp_path):
    """One warm start (``sft.warm_start``): the grid's warm stage and a training run's ``--sft-steps``, given the
    same settings (model, env, examples, steps, lr, seed, micro batch), end with the same weights and losses; what
    a grid leaves unset is the trainer's default."""
    from reference_impls.train import TrainConfig, Trainer

    settings = {"sft_steps": 2, "sft_examples": 8, "sft_lr": 3e-3, "micro_batch_size": 3}
    grid = Grid.load(str(_grid(tmp_path, options={"model": "tiny", **settings})))
    gdir = GridDir(tmp_path / "g")
    gdir.bind(grid)
    warm_stage(grid, gdir, "calculator")
    done = json.loads((gdir.warm("calculator") / "done.json").read_text())
    trainer = Trainer(TrainConfig(algo="grpo", env="calculator", model="tiny", out=str(tmp_path / "run"), steps=1,
                                  seed=grid.warm_seed, **settings))
    trainer.policy.save_pretrained(tmp_path / "trained")
    assert weights_digest(tmp_path / "trained") == done["weights_sha256"]
    assert trainer.warm_start_losses == done["losses"] and len(done["losses"]) == 2
    other = Trainer(TrainConfig(algo="grpo", env="calculator", model="tiny", out=str(tmp_path / "other"), steps=1,
                                seed=grid.warm_seed, **{**settings, "sft_lr": 1e-3}))
    other.policy.save_pretrained(tmp_path / "other-weights")
    assert weights_digest(tmp_path / "other-weights") != done["weights_sha256"]  # the digest tells settings apart
    bare = Grid.load(str(_grid(tmp_path, options={"model": "tiny"})))  # the quick recipe sets neither
    unset = warm_settings(bare, "calculator")
    assert (unset["sft_examples"], unset["sft_lr"]) == (TrainConfig().sft_examples, TrainConfig().sft_lr)


def test_runner_resumes_after_a_kill(tiny_grid, tmp_path):
    """The first cell's stages run in this process (the untrained model's and the warm start's held-out, the warm
    start, one cell); the run that is killed and the run that resumes it are real processes (``python -m
    lab.compare run``), each stage in its own process: a kill of the process group, and stages that end there."""
    grid = Grid.load(str(tiny_grid))
    gdir = GridDir(tmp_path / "run")
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    cmd = [sys.executable, "-m", "lab.compare", "run", str(tiny_grid), "--dir", str(gdir.path)]
    with pytest.MonkeyPatch.context() as in_process:
        stages = compare_stages_in_process(in_process)
        assert run_grid(grid, gdir, max_cells=1, out=sys.stderr, grid_arg=str(tiny_grid)) == 0
    assert stages == ["_baseeval", "_warm", "_warmeval", "_cell"]
    first = gdir.cell("calculator-grpo", 0) / "result.json"
    assert first.exists()
    stamp = first.stat().st_mtime_ns
    assert [r["state"] for r in grid_status(grid, gdir)] == ["done", "pending", "pending", "pending"]

    # kill the whole run while the second cell trains, once it has a checkpoint
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    second = RunDir(gdir.cell("calculator-rloo", 0) / "run")
    deadline = time.time() + 300
    while second.latest_checkpoint() is None and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    if GridDir.result(gdir, "calculator-rloo", 0) is not None:
        pytest.skip("the cell finished before it could be killed (machine too fast for this timing)")
    assert [r["state"] for r in grid_status(grid, gdir)][1] == "partial"

    assert subprocess.run(cmd, env=env, capture_output=True).returncode == 0
    assert first.stat().st_mtime_ns == stamp  # a finished cell is never run again
    assert [r["state"] for r in grid_status(grid, gdir)] == ["done"] * 4
    resumed = gdir.result("calculator-rloo", 0)
    assert resumed["resumed_from_step"] >= 1 and resumed["steps_done"] == 4
    for impl, seed in grid.cells():
        r = gdir.result(impl, seed)
        assert len(r["heldout_by_problem"]) == 4 and len(r["curve"]) == 4 and r["peak_rss_mb"] > 0
        assert r["config"]["model"] == str(gdir.warm("calculator"))  # every cell starts from the shared warm start
        # a finished cell keeps its final weights only (no optimizer state, no older checkpoints)
        run = RunDir(gdir.cell(impl, seed) / "run")
        assert [c.name for c in run.checkpoints()] == ["step_000004"] and not list(run.checkpoints_dir.rglob("*.pt"))

    def report(*flags):  # `python -m lab.compare report GRID --dir DIR FLAGS`, in this process
        return run_main(main, ["report", tiny_grid, "--dir", gdir.path, *flags], env=env,
                        prog="python -m lab.compare")

    out = report("--json")
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    records = [r for r in lines if r["record"] == "cell"]
    assert {(r["algo"], r["seed"]) for r in records} == {("grpo", 0), ("grpo", 1), ("rloo", 0), ("rloo", 1)}
    assert all({"heldout", "heldout_interval", "train_s", "tokens", "peak_rss_mb"} <= set(r) for r in records)
    # each cell's budget spent and its diagnostics per step, from its record
    assert all(r["budget"]["policy_steps_done"] == r["steps_done"] and r["complete"] for r in records)
    assert all(len(r["diagnostics"]) == r["steps_done"] and r["warm_weights_sha256"] for r in records)
    # then the comparisons (rloo against grpo, each against the warm start), each with its detectable effect
    tests = [r for r in lines if r["record"] == "comparison"]
    assert len(tests) == len(lines) - len(records) and tests and all("detectable" in t for t in tests)

    shipped = tmp_path / "shipped"
    assert export(grid, gdir, shipped) == 4
    assert len(list((shipped / "cells").glob("*.json"))) == 4  # exported cells sit flat in cells/
    # shipped configs name the warm start relative to a grid folder (not this machine's path), and the warm
    # start's own settings travel with them
    exported = [json.loads(f.read_text()) for f in (shipped / "cells").glob("*.json")]
    assert {c["config"]["model"] for c in exported} == {"warm/calculator"}
    assert all(c["config"]["out"] == f"cells/{c['cell']}/run" for c in exported)
    assert str(tmp_path) not in "".join(f.read_text() for f in (shipped / "cells").glob("*.json"))
    assert json.loads((shipped / "warm" / "calculator.json").read_text())["sft_steps"] == 0
    # the warm start alone was evaluated once, on the cells' held-out problems, and travels with the results
    warm = json.loads((gdir.warm("calculator") / "done.json").read_text())
    assert len(warm["heldout_by_problem"]) == 4 and warm["heldout"] == sum(warm["heldout_by_problem"]) / 4
    # so was the untrained model (base: true), once per environment, on the same problems
    base = json.loads(gdir.base("calculator").read_text())
    assert base["model"] == "tiny" and len(base["heldout_by_problem"]) == 4
    assert json.loads((shipped / "base" / "calculator.json").read_text()) == base
    line = load_results(shipped, shipped=True).reference_line("calculator")
    shown = [f"{100 * base['heldout']:.1f}%", f"{100 * warm['heldout']:.1f}%"]  # untrained, then the warm start
    assert line.index("Untrained") < line.index(shown[0], line.index("Untrained")) < line.index("Warm start") < \
        line.index(shown[1], line.index("Warm start"))
    text = report().stdout
    stages = [r["stage"] for r in load_results(shipped, shipped=True).progression()["calculator"]]
    assert stages[0] == "untrained" and stages[-1] == "SFT + RL (calculator-rloo)"
    assert all(stage in text for stage in stages)
    table = report("--markdown").stdout.splitlines()
    assert [line.split(" | ")[0] for line in table[2:]] == ["| calculator (calculator-grpo)",
                                                            "| calculator (calculator-rloo)"]
    assert sorted(r["cell"] for r in cell_results(None, GridDir(shipped))) == sorted(
        r["cell"] for r in cell_results(grid, gdir))


def test_passk_samples_the_named_implementation_and_resumes_where_it_stopped(tmp_path, monkeypatch, capsys):
    """pass@k of the untrained model, the warm start and every seed's cell of the implementation the grid names in
    advance (here one seed); refused while a grid names none or a seed's cell is missing; a stage killed after
    some problems keeps their counts and ends as an uninterrupted one would (each problem draws from its own
    seed)."""
    options = {"model": "tiny", "steps": 2, "prompts_per_step": 2, "group_size": 2, "max_new_tokens_per_turn": 8,
               "max_completion_tokens": 24, "checkpoint_every": 1, "sft_steps": 0}
    path = _grid(tmp_path, options=options, eval={"n": 4, "seed": 7}, seeds=[0])
    gdir = GridDir(tmp_path / "run")
    unnamed = Grid.load(str(path))
    with pytest.raises(ConfigError, match=r"passk --env calculator: .*\(passk: \{implementation"):
        passk_models(unnamed, gdir, "calculator")
    # the stage run in this process on 3 problems (a grid file refuses fewer than 50): the mechanics at a test's
    # cost; tests/test_compare_method.py runs a grid file's pass@k through the driver
    named = Grid.from_dict({**yaml.safe_load(path.read_text()),
                            "passk": {"implementation": "grpo", "problems": 50, "samples": 4}})
    grid = dataclasses.replace(named, passk={**named.passk, "problems": 3})
    progress = io.StringIO()  # the runner (`run GRID --max-cells 1`) and its stages in this process
    with monkeypatch.context() as in_process:
        stages = compare_stages_in_process(in_process)
        assert run_grid(unnamed, gdir, max_cells=1, out=progress, grid_arg=str(path)) == 0
    assert stages == ["_warm", "_warmeval", "_cell"]
    assert "[1/2] calculator-grpo-s0" in progress.getvalue()  # progress counts finished cells, not the --max-cells cut
    with pytest.raises(ConfigError, match="calculator-grpo-s1 has not finished"):
        passk_models(dataclasses.replace(grid, seeds=(0, 1)), gdir, "calculator")
    snapshots = []  # the partial file as the stage saves it after each problem
    write = atomic_json
    monkeypatch.setattr("lab.compare.passk.atomic_json", lambda path, data: (
        snapshots.append(json.loads(json.dumps(data))) if path.name.endswith(".partial.json") else None,
        write(path, data)))
    passk_stage(grid, gdir, "calculator", out=open(os.devnull, "w"))
    full = json.loads((gdir.path / "passk" / "calculator.json").read_text())
    assert list(full["curves"]) == ["base", "warm start", "RL (calculator-grpo, seed 0)"]
    assert (full["method"], full["implementation"], full["k"], full["seeds"]) == (
        PASSK_DECLARED, "calculator-grpo", [1, 4], [0])
    assert full["cells"] == {"RL (calculator-grpo, seed 0)": {"cell": "calculator-grpo-s0", "seed": 0,
                                                               "in_verdicts": True}}
    assert full["curves"]["warm start"]["model"] == str(gdir.warm("calculator"))
    for curve in full["curves"].values():
        counts = curve["correct_counts"]
        assert len(counts) == 3 and all(0 <= c <= 4 for c in counts)
        assert curve["pass_at_k"]["1"] == pytest.approx(sum(counts) / 12)  # pass@1: the fraction of samples correct
        assert list(curve["pass_at_k"]) == ["1", "2", "3", "4"]
    assert len(snapshots) == 9 and not (gdir.path / "passk" / ".calculator.partial.json").exists()
    export(grid, gdir, tmp_path / "exported")  # shipped, the models are named relative to a grid folder
    shipped = json.loads((tmp_path / "exported" / "passk" / "calculator.json").read_text())
    assert [c["model"] for c in shipped["curves"].values()] == [
        "tiny", os.path.join("warm", "calculator"), os.path.join("cells", "calculator-grpo-s0", "run", "checkpoints",
                                                                 "step_000002")]
    capsys.readouterr()
    assert main(["report", str(path), "--dir", str(gdir.path)]) == 0  # reads the record, whatever the file says
    text = capsys.readouterr().out
    record = json.loads((gdir.path / "passk" / "calculator.json").read_text())
    rows = passk_comparison(record)
    assert [(r["seeds"], r["verdict"]) for r in rows if r["against"] == "warm start"] == [(1, "one run")] * 2
    [line] = [line for line in text.splitlines() if line.startswith("pass@k, calculator: ")]
    assert line.index(rows[-1]["model"]) < line.index("warm start") and PASSK_LEGACY[1:] not in line
    assert _shown(line) == [_figures(r) for r in rows if r["against"] == "warm start"]

    # killed after the base model's three problems and two of the warm start's; the two kept counts are made to
    # differ from the true ones, so that the test sees them kept rather than measured again
    partial = snapshots[4]
    true_warm = full["curves"]["warm start"]["correct_counts"]
    partial["counts"]["warm start"] = [(c + 1) % 5 for c in true_warm[:2]]
    (gdir.path / "passk" / ".calculator.partial.json").write_text(json.dumps(partial))
    (gdir.path / "passk" / "calculator.json").unlink()
    # work in progress is neither shown nor shipped
    assert _records(gdir.path / "passk") == {}
    export(grid, gdir, tmp_path / "shipped")
    assert not (tmp_path / "shipped" / "passk").exists()
    passk_stage(grid, gdir, "calculator", out=open(os.devnull, "w"))
    resumed = json.loads((gdir.path / "passk" / "calculator.json").read_text())
    assert resumed["curves"]["base"]["correct_counts"] == full["curves"]["base"]["correct_counts"]
    assert resumed["curves"]["warm start"]["correct_counts"] == [(c + 1) % 5 for c in true_warm[:2]] + true_warm[2:]
    assert (resumed["curves"]["RL (calculator-grpo, seed 0)"]["correct_counts"]
            == full["curves"]["RL (calculator-grpo, seed 0)"]["correct_counts"])

    # a partial file of other settings (here 2 samples, not 4) is not mixed in: the stage starts over
    partial["settings"]["samples"] = 2
    (gdir.path / "passk" / ".calculator.partial.json").write_text(json.dumps(partial))
    passk_stage(grid, gdir, "calculator", out=open(os.devnull, "w"))
    restarted = json.loads((gdir.path / "passk" / "calculator.json").read_text())["curves"]
    assert {k: c["correct_counts"] for k, c in restarted.items()} == {
        k: c["correct_counts"] for k, c in full["curves"].items()}

    # across sessions (results/grid-runs/): a cell's counts are taken right after it trains (`run` starts
    # `_passk --seed S`), into the partial file only; its weights may then go, and the full stage samples the rest
    devnull = open(os.devnull, "w")
    (gdir.path / "passk" / "calculator.json").unlink()
    passk_stage(grid, gdir, "calculator", out=devnull, seeds=[0])
    partial_path = gdir.path / "passk" / ".calculator.partial.json"
    assert not (gdir.path / "passk" / "calculator.json").exists()
    assert list(json.loads(partial_path.read_text())["counts"]) == ["RL (calculator-grpo, seed 0)"]
    rl = "RL (calculator-grpo, seed 0)"
    import shutil
    shutil.rmtree(gdir.cell("calculator-grpo", 0) / "run")
    passk_stage(grid, gdir, "calculator", out=devnull)
    carried = json.loads((gdir.path / "passk" / "calculator.json").read_text())["curves"]
    assert {k: c["correct_counts"] for k, c in carried.items()} == {
        k: c["correct_counts"] for k, c in full["curves"].items()}
    assert carried[rl]["model"] == full["curves"][rl]["model"]  # the checkpoint it was sampled from
    # counts not taken while the weights were there cannot be taken now: said, not guessed
    (gdir.path / "passk" / "calculator.json").unlink()
    with pytest.raises(ConfigError, match=r"\b0 of 3 problems counted"):
        passk_stage(grid, gdir, "calculator", out=devnull)


def test_warm_start_can_demonstrate_the_cells_levels(tmp_path, monkeypatch):
    """``warm_on_env_options``: the warm start's demonstrations use the cells' env_options (here calculator
    level 1 only) instead of the environment's defaults, and done.json records them; a folder made without
    the switch refuses a grid with it."""
    from reference_impls import sft

    seen = []
    real = sft.demonstrations
    monkeypatch.setattr(sft, "demonstrations", lambda *a, **k: seen.append(k.get("options")) or real(*a, **k))
    options = {"model": "tiny", "sft_steps": 1, "sft_examples": 4, "env_options": {"levels": [1]}}
    for switch, folder in ((False, "off"), (True, "on")):
        grid = Grid.load(str(_grid(tmp_path, options=options, warm_on_env_options=switch)))
        gdir = GridDir(tmp_path / folder)
        gdir.bind(grid)
        warm_stage(grid, gdir, "calculator")
        done = json.loads((gdir.warm("calculator") / "done.json").read_text())
        assert (done.get("options") or {}).get("levels") == ([1] if switch else None)
    assert seen[0] is None and seen[1] == {"levels": [1]}  # only what the cells chose: defaults stay out
    with pytest.raises(ConfigError, match="warm_on_env_options"):
        GridDir(tmp_path / "off").bind(grid)


def test_warm_start_keeps_the_env_demonstration_options():
    """The cells' options that equal the env's defaults do not reach the warm start, so an env's
    demonstration_options survive (selfplay-arith demonstrates proposing and solving although its cells'
    resolved options say roles=propose; loophole keeps its SFT families)."""
    from reference_impls.envs import get_env
    from reference_impls.sft import demonstrations
    from reference_impls.models import load_tokenizer

    resolved = dataclasses.asdict(get_env("selfplay-arith").options({}))
    assert resolved["roles"] == ("propose",)
    assert chosen_env_options("selfplay-arith", resolved) == {}
    assert chosen_env_options("selfplay-arith", {**resolved, "levels": [1, 2, 3]}) == {"levels": [1, 2, 3]}
    assert chosen_env_options("zoom", {"levels": [1, 2], "max_zooms": 4}) == {"levels": [1, 2]}
    loophole = dataclasses.asdict(get_env("loophole").options({}))
    assert chosen_env_options("loophole", loophole) == {}
    samples = demonstrations(load_tokenizer(), "selfplay-arith", 8, 0,
                             options=chosen_env_options("selfplay-arith", resolved))
    texts = ["".join(seg["text"] for seg in s.segments) for s in samples]
    assert any("<problem>" in t for t in texts) and any("<answer>" in t for t in texts)


def test_run_one_environment_at_a_time(tmp_path):
    """``run --env``: only that environment's warm start and cells run; the others stay pending, and an
    environment the grid does not have is named in the error."""
    path = _grid(tmp_path, implementations=["calculator-grpo", "search-grpo"], seeds=[0],
                 options={"model": "tiny", "steps": 1, "prompts_per_step": 1, "group_size": 2,
                          "max_new_tokens_per_turn": 8, "max_completion_tokens": 16, "checkpoint_every": 1,
                          "sft_steps": 0}, eval={"n": 2, "seed": 7})
    grid = Grid.load(str(path))
    gdir = GridDir(tmp_path / "run")
    with pytest.raises(ConfigError, match="--env memory.*calculator, search"):
        run_grid(grid, gdir, env="memory")
    assert run_grid(grid, gdir, env="search", grid_arg=str(path)) == 0
    assert [r["state"] for r in grid_status(grid, gdir)] == ["pending", "done"]
    assert (gdir.warm("search") / "done.json").exists() and not gdir.warm("calculator").exists()


# -- a grid folder the runner may use, and records it cannot (issue 47) ----------------------------------------

def test_run_refuses_a_folder_that_is_not_a_grid_folder(tmp_path):
    """An unrelated non-empty folder is refused before anything is written or deleted in it."""
    folder = tmp_path / "mine"
    (folder / "warm" / "calculator").mkdir(parents=True)
    keep = folder / "warm" / "calculator" / "important.txt"
    keep.write_text("the user's")
    with pytest.raises(ConfigError, match="is not a grid folder"):
        GridDir(folder).bind(Grid.load("tiny"))
    assert keep.read_text() == "the user's" and sorted(p.name for p in folder.iterdir()) == ["warm"]
    assert main(["run", "tiny", "--dir", str(folder)]) == 2
    assert keep.exists()
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        GridDir(tmp_path / "a-file").bind(Grid.load("tiny"))


@pytest.mark.parametrize("text,why", [("{not yaml: [", "not valid YAML"), ("- a\n- b\n", "not a grid")])
def test_a_broken_grid_yaml_is_an_error_line_not_a_crash(tmp_path, text, why):
    (tmp_path / "grid.yaml").write_text(text)
    with pytest.raises(ConfigError, match=why):
        GridDir(tmp_path).bind(Grid.load("tiny"))


def test_bad_records_are_reported_and_left_out(tmp_path, capsys):
    """A result file holding a list (or broken JSON, or no held-out) is named by status, report and the
    Compare page's reader, and the good records are still read."""
    grid = Grid.load("tiny")
    gdir = GridDir(tmp_path)
    gdir.bind(grid)
    (impl, seed), (other, other_seed) = grid.cells()[:2]
    gdir.cell(impl, seed).mkdir(parents=True)
    (gdir.cell(impl, seed) / "result.json").write_text("[1, 2, 3]")
    gdir.cell(other, other_seed).mkdir(parents=True)
    good = {"cell": cell_id(other, other_seed), "implementation": other, "algo": "grpo", "env": "calculator",
            "seed": other_seed, "heldout": 0.5, "heldout_per_problem": [1, 0]}
    (gdir.cell(other, other_seed) / "result.json").write_text(json.dumps(good))
    rows = {r["cell"]: r for r in grid_status(grid, gdir)}
    assert rows[cell_id(impl, seed)]["state"] == "bad"
    assert "holds a JSON list" in rows[cell_id(impl, seed)]["changed"][0]
    assert [r["implementation"] for r in cell_results(None, gdir)] == [other]
    assert main(["status", "tiny", "--dir", str(tmp_path)]) == 0
    assert "bad record" in capsys.readouterr().out
    loaded = load_results(tmp_path, shipped=False)
    assert [c["implementation"] for c in loaded.cells] == [other]
    assert len(loaded.bad) == 1 and "result.json: holds a JSON list" in loaded.bad[0]
    (tmp_path / "passk").mkdir()
    (tmp_path / "passk" / "calculator.json").write_text('"just a string"')
    assert any("calculator.json" in p for p in load_results(tmp_path, shipped=False).bad)

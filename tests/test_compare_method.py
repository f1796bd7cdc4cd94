"""The comparison's method (issue 41): budget = work, mu per family, diagnostics per step, a validation split
apart from the test problems, records that reproduce; and the tiny grid end to end under it."""
import json
import os
import sys
import time

import pytest

from lab.compare.driver import run as run_grid, status as grid_status, warm_status
from lab.compare.heldout import HELDOUT_INTERVAL_METHOD
from lab.compare.passk import PASSK_DECLARED
from lab.compare.training import completion, work_done
from lab.compare.warm import weights_digest
from lab.compare.board import PASSK_LEGACY, passk_comparison
from lab.compare.report import passk_reading
from lab.compare.folder import (DIAGNOSTIC_KEYS, LEGACY_BASIS, GridDir, budget_status, cell_diagnostics,
                                cell_results, read_diagnostics_file)
from lab.compare.cell_options import cell_config, policy_steps, updates_per_batch
from lab.compare.grid import Grid
from lab.compare.provenance import cpu_info, cpu_times, steal_fraction
from reference_impls.envs import get_env
from reference_impls.measure.evaluate import problem_content, validation_problems
from reference_impls.options import ConfigError
from reference_impls.stats import config_interval

from inprocess import compare_stages_in_process, run_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIPPED = {"grpo", "dr-grpo", "dapo", "gspo", "gmpo", "ppo"}


# -- the budget ----------------------------------------------------------------------------------------

def test_core_grid_budget_is_work(tmp_path):
    """Every core cell samples 8 rollout batches of 4 x 8 episodes (budget: sampled-episodes): PPO's 2 critic
    warm-up steps among them, so its policy gets 6; each policy batch gives the variant's mu updates (at least 2
    for every clipped objective); DPO builds its pairs from as many prompts as an online cell draws; the wall cap
    is a safety cap far above a cell's time. Each seed has its own warm start, and the learning rates are tried on
    two seeds that are no cell's."""
    grid = Grid.load("core")
    assert grid.options["max_wall_s"] >= 1800 and grid.budget == "sampled-episodes"
    assert grid.warm_seeds == grid.seeds and len(grid.lr_trial_seeds) >= 2
    assert not set(grid.lr_trial_seeds) & set(grid.seeds) and grid.lr_extend >= 1
    for impl, seed in grid.cells():
        config = cell_config(grid, impl, seed, str(tmp_path))
        variant = impl.split("-", 1)[1]
        assert config["steps"] == 8 and config["prompts_per_step"] * config["group_size"] in (32, 16), impl
        if config["algo"] == "ppo":
            assert policy_steps(config) == 6 and config["algo_config"]["critic_warmup_steps"] == 2, impl
            assert updates_per_batch(config) == grid.mu["ppo"] == 4
        elif config["algo"] == "dpo":
            assert config["algo_config"]["pair_prompts"] == config["steps"] * config["prompts_per_step"], impl
            assert updates_per_batch(config) == 1
        else:
            assert policy_steps(config) == 8 and updates_per_batch(config) == grid.mu[variant], impl
        if variant in CLIPPED:
            assert updates_per_batch(config) >= 2, impl
    assert (grid.mu["gspo"], grid.mu["gmpo"], grid.mu["dapo"]) == (4, 8, 16)  # the papers' numbers


def _metrics(step, **kw):
    return {"step": step, "episodes": 32.0, "policy_updates": 4.0, **kw}


def test_work_done_counts_the_critic_warm_up_apart():
    config = {"steps": 4, "prompts_per_step": 4, "group_size": 8, "mini_batches": 1, "max_wall_s": 0.0,
              "algo": "ppo", "algo_config": {"critic_warmup_steps": 1, "num_iterations": 1, "num_mini_batches": 4}}
    metrics = [_metrics(1, critic_warmup=1.0, policy_updates=0.0, critic_updates=4.0),
               *(_metrics(s, critic_warmup=0.0, critic_updates=4.0) for s in (2, 3, 4))]
    budget = work_done(config, metrics, {})
    assert budget["policy_steps"] == budget["policy_steps_done"] == 3 and budget["episodes"] == 96
    assert budget["policy_updates"] == 12 and budget["mu"] == 4
    assert (budget["critic_warmup_steps"], budget["critic_warmup_steps_done"], budget["critic_warmup_episodes"],
            budget["critic_updates"]) == (1, 1, 32, 16)


def test_work_done_of_an_offline_run_counts_its_episodes_and_usable_pairs():
    config = {"steps": 2, "prompts_per_step": 4, "group_size": 8, "max_wall_s": 0.0, "algo": "dpo",
              "algo_config": {"pair_prompts": 8}}
    metrics = [{"step": 1, "policy_updates": 1.0, "pairs": 5.0}, {"step": 2, "policy_updates": 1.0, "pairs": 5.0}]
    budget = work_done(config, metrics, {"pair_prompts": 8, "pairs": 5, "samples": 64})
    assert (budget["episodes"], budget["usable_pairs"], budget["pair_prompts"], budget["policy_updates"]) == (64, 5, 8, 2)


def test_a_run_the_safety_cap_stops_is_incomplete(tmp_path, fresh_tiny_model):
    """The trainer stops at max_wall_s (checked between steps): 1 of 3 steps done, so the record is incomplete,
    says why, and is out of every verdict; the work it did is counted as done."""
    import dataclasses

    from reference_impls.run_config import TrainConfig
    from reference_impls.trainer import Trainer

    model, tok = fresh_tiny_model
    cfg = TrainConfig(model="tiny", out=str(tmp_path / "run"), steps=3, prompts_per_step=2, group_size=2,
                      max_new_tokens_per_turn=4, max_completion_tokens=8, max_wall_s=1e-6, mini_batches=2)
    trainer = Trainer(cfg, model=model, tokenizer=tok)
    rows = []
    trainer.add_callback("on_step_end", lambda t: rows.append(dict(t.last_metrics)))
    assert trainer.run() == "completed" and trainer.step == 1
    config = dataclasses.asdict(cfg)
    complete, why = completion(config, rows[-1]["step"])
    assert not complete and "after 1 of 3 steps" in why
    record = {"budget": work_done(config, rows, {}), "complete": complete, "incomplete_reason": why}
    assert record["budget"]["policy_steps_done"] == 1 and record["budget"]["policy_updates"] == 2
    assert record["budget"]["episodes"] == 4 and not budget_status(record)["in_verdicts"]
    assert completion(config, 3) == (True, None)


@pytest.fixture
def fresh_tiny_model():
    from reference_impls.models import load_policy

    return load_policy("tiny", device="cpu", seed=0)


def test_budget_status_reads_new_and_legacy_records():
    capped = {"budget": {}, "complete": False, "incomplete_reason": "stopped by the safety cap"}
    assert budget_status(capped) == {"basis": "work", "complete": False, "in_verdicts": False,
                                     "why": "stopped by the safety cap"}
    assert budget_status({"budget": {}, "complete": True})["in_verdicts"] is True
    legacy = budget_status({"stopped_by_wall_cap": True, "steps_done": 5, "config": {"steps": 8}})
    assert legacy["basis"] == LEGACY_BASIS and not legacy["in_verdicts"] and "5 of 8" in legacy["why"]
    assert budget_status({"stopped_by_wall_cap": False})["in_verdicts"] is True


def test_shipped_results_still_load_as_legacy():
    """Records written before the method (results/*) lack budget, diagnostics and provenance: they read as
    legacy, budget by wall time, with no diagnostics; the core grid's capped PPO cells are out of verdicts."""
    folder = os.path.join(ROOT, "results", "core-first")
    records = cell_results(None, GridDir(folder))
    assert len(records) >= 21
    statuses = [budget_status(r) for r in records]
    assert {s["basis"] for s in statuses} == {LEGACY_BASIS}
    assert all(cell_diagnostics(r) == [] for r in records)
    capped = [r["cell"] for r, s in zip(records, statuses) if not s["in_verdicts"]]
    assert capped and all(r.get("stopped_by_wall_cap") for r in records if r["cell"] in capped)


# -- grid fields -------------------------------------------------------------------------------------------

def _grid_data(**changes):
    import yaml

    from lab.compare.grid import GRIDS

    data = yaml.safe_load((GRIDS / "tiny.yaml").read_text())
    data.update(changes)
    return data


@pytest.mark.parametrize("changes,message", [
    ({"mu": {"nosuch": 2}}, "field 'mu': unknown nosuch"),
    ({"mu": {"grpo": 0}}, r"field 'mu', grpo: 0 is not an integer in \[1, "),
    ({"lr_sweep": {"default": [1e-5], "dpo": [1e-6, 3e-6]}}, "same number of trials"),
    ({"lr_sweep": {"default": [2.0]}}, "learning rates in (0, 1)"),
    ({"validation": None}, "needs a validation split"),
    ({"validation": {"n": 4, "size": 3}}, "a mapping with n and seed"),
    ({"passk": {"implementation": "grpo", "problems": 20, "samples": 4}}, r"problems: 20 is not an integer in \[50, "),
    ({"passk": {"implementation": "ppo", "problems": 50, "samples": 4}}, "'ppo' is not the variant of any"),
    ({"passk": {"implementation": {"calculator": "search-grpo"}, "problems": 50, "samples": 4}},
     "calculator: search-grpo"),
    ({"passk": {"implementation": "grpo", "problems": 50, "samples": 4, "k": [1, 8]}}, "integers from 1 to samples (4)"),
    ({"passk": {"problems": 50, "samples": 4}}, "a mapping with implementation"),
    ({"lr_trials": {"seeds": [100]}}, r"lr_trials', seeds: \[100\] .* two seeds"),
    ({"lr_trials": {"seeds": [100, 100]}}, "repeats a seed"),
    ({"lr_trials": {"seeds": [1, 100]}}, r"seeds: \[1\] also cell seeds"),
    ({"lr_trials": {"seeds": [100, 101], "extend": 9}}, r"extend: 9 is not an integer in \[0, 4\]"),
    ({"lr_trials": {"seeds": [100, 101]}, "lr_sweep": None, "validation": None}, "lr_trials': needs an lr_sweep"),
    ({"lr_trials": {"seeds": [100, 101]}, "lr_sweep": {"default": [1e-5]}}, "lr_sweep default .* two rates"),
    ({"budget": "wall-time"}, "'budget': 'wall-time' .* policy-batches, sampled-episodes"),
])
def test_bad_method_fields_name_the_problem(changes, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Grid.from_dict(_grid_data(**changes), "g.yaml")


def test_a_folder_binds_its_passk_declaration(tmp_path):
    """What pass@k samples is named before any result: a grid folder keeps it, and a grid naming another
    implementation (after the results are in) is refused there; the declaration reads per environment."""
    grid = Grid.from_dict(_grid_data(), "g.yaml")
    assert grid.passk == {"implementation": "grpo", "problems": 50, "samples": 4, "k": [1, 4]}
    assert grid.passk_implementation("calculator") == "calculator-grpo" and grid.passk_implementation("search") is None
    gdir = GridDir(tmp_path / "g")
    gdir.bind(grid)
    other = Grid.from_dict(_grid_data(passk={"implementation": {"calculator": "calculator-rloo"}, "problems": 50,
                                             "samples": 4}), "g.yaml")
    assert other.passk_implementation("calculator") == "calculator-rloo"
    with pytest.raises(ConfigError, match="different passk"):
        gdir.bind(other)


def test_sweep_lrs_by_variant_then_algorithm_then_default():
    grid = Grid.from_dict(_grid_data(lr_sweep={"default": [1e-5, 3e-5], "rloo": [1e-4, 3e-4]}), "g.yaml")
    assert grid.sweep_lrs("calculator-rloo") == [1e-4, 3e-4] and grid.sweep_lrs("calculator-grpo") == [1e-5, 3e-5]
    assert Grid.load("core").sweep_lrs("search-dpo") == [1e-7, 3e-7, 1e-6]


# -- validation split ------------------------------------------------------------------------------------

#: what a problem is about, per environment: a validation problem shares none of these with a test problem
ABOUT = {"calculator": lambda p: {("steps", p.steps)}, "frozenlake": lambda p: {("map", p.grid)},
         "search": lambda p: {("entity", p.entity.lower()), ("document", p.key)}}


@pytest.mark.parametrize("env", ["calculator", "search", "frozenlake"])
def test_validation_problems_are_disjoint_from_the_test_problems(env):
    """The core grid's environments: 50 validation problems, none equal to one of the 100 test problems (uids
    aside), none about what a test problem is about (the calculator's computation, the FrozenLake map, the search
    question's entity and the document that answers it: before the search env had a validation split, 46 of its
    50 validation questions named an entity a test question names), none repeated, and the same on every call."""
    task = get_env(env)
    test = task.problems("heldout", n=100, seed=4242)
    val = validation_problems(task, 50, 5151, 100, 4242)
    keys = [problem_content(p) for p in val]
    assert len(val) == 50 and len(set(keys)) == 50 and not set(keys) & {problem_content(p) for p in test}
    about_test = set().union(*(ABOUT[env](p) for p in test))
    assert [p for p in val if ABOUT[env](p) & about_test] == []
    assert keys == [problem_content(p) for p in validation_problems(task, 50, 5151, 100, 4242)]


def test_validation_skips_a_test_problem_asked_in_other_words():
    """Without a validation split of its own an environment's validation problems come from the held-out
    distribution, and one that asks a test problem's computation in another phrasing is skipped too."""
    import dataclasses

    from reference_impls.measure.evaluate import problem_identity

    task = get_env("calculator")
    test = task.problems("heldout", n=100, seed=4242)
    reworded = dataclasses.replace(test[0], question="Reworded: " + test[0].question, phrasing=test[0].phrasing + 1)
    assert problem_content(reworded) != problem_content(test[0]) and problem_identity(reworded) == problem_identity(test[0])


def test_search_validation_split_is_its_own():
    """Search draws validation questions from its own split (disjoint by construction), and says so when asked
    for more than it holds."""
    task = get_env("search")
    assert {p.split for p in validation_problems(task, 50, 5151, 100, 4242)} == {"validation"}
    with pytest.raises(ValueError, match="search: its validation split holds only"):
        validation_problems(task, 10_000, 5151, 100, 4242)


def test_validation_asks_too_much_of_a_small_distribution():
    """The calculator's level-1 held-out questions are few: more validation problems than exist outside the
    test set is a clear error naming the environment."""
    task = get_env("calculator")
    with pytest.raises(ValueError, match="calculator: only .* validation problems"):
        validation_problems(task, 2000, 1, 10, 2, levels=[1])  # 2010 draws hold ~1500 distinct questions


# -- provenance ---------------------------------------------------------------------------------------------

def test_steal_from_proc_stat_by_hand():
    start = cpu_times("cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3\n")
    end = cpu_times("cpu  200 0 100 1600 20 0 0 80 0 0\n")
    assert start == (40.0, 1000.0) and end == (80.0, 2000.0)
    assert steal_fraction(start, end) == 0.04 and steal_fraction(None, end) is None


def test_cpu_model_and_vector_sets_from_proc_cpuinfo():
    text = ("processor\t: 0\nmodel name\t: AMD EPYC 9R14\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512_bf16\n\n"
            "processor\t: 1\nmodel name\t: other\nflags\t\t: fpu\n")
    assert cpu_info(text) == {"model": "AMD EPYC 9R14", "isa": ["avx", "avx2", "fma", "avx512f", "avx512_bf16"]}
    assert cpu_info("flags : sse2\n") == {"model": None, "isa": []}


def test_dirty_means_changed_code_not_the_grids_own_records(tmp_path):
    """A grid updates tracked records while it runs (its committed pass@k partial file): that leaves the checkout
    clean; a changed source file does not."""
    import subprocess

    from lab.compare.provenance import git_state

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "results" / "grid-runs" / "core" / "passk").mkdir(parents=True)
    (tmp_path / "results" / "grid-runs" / "core" / "passk" / ".calculator.partial.json").write_text("{}")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    assert git_state(tmp_path)["dirty"] is False
    (tmp_path / "results" / "grid-runs" / "core" / "passk" / ".calculator.partial.json").write_text('{"seed": 0}')
    assert git_state(tmp_path)["dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    state = git_state(tmp_path)
    assert state["dirty"] is True and len(state["commit"]) == 40


# -- the tiny grid, end to end (CI) ------------------------------------------------------------------------

#: what the end-to-end test shrinks in tiny.yaml: the lengths of a rollout, the held-out draw and pass@k's samples
#: per problem. Every field of the method (implementations, seeds, warm starts, mu, validation, the learning-rate
#: trials, the budget, pass@k's implementation and its 50 problems) stays tiny.yaml's. The random tiny model rarely
#: stops early, so a rollout's time follows its token limits; with tiny.yaml's sizes pass@k's 5 models x 50 problems
#: x 4 samples were 1000 of the test's 1352 sampled episodes, and the test took 222-370 s on the 2-core CI machine.
SMALLER_THAN_TINY = {"options": {"max_new_tokens_per_turn": 8, "max_completion_tokens": 16},
                     "eval": {"n": 4}, "passk": {"samples": 2}}


def test_tiny_grid_runs_end_to_end_under_the_method(tmp_path, monkeypatch):
    """tiny.yaml, the design every next grid follows (issue 60), with shorter rollouts, 4 test problems and 2
    pass@k samples per problem (``SMALLER_THAN_TINY``; its method fields are tiny.yaml's): each seed its own warm
    start; the learning rate of each algorithm chosen on validation problems (never on the test problems) over two
    trial seeds that are no cell's, trial j from warm start j, the range extended by one rate where the best sat at
    its end; then each cell, every one trained after the choice, trains its budget with it and is scored on the
    test problems once; every record carries its budget (every sampled episode counted), completeness, diagnostics
    (also diagnostics.jsonl) and provenance. Then pass@k of every seed of the implementation the grid names (GRPO)
    on 50 test problems, each seed tested against its own warm start with the crossed seeds x problems test, Holm
    over its tests. The stages run in this process (``stage_process`` replaced: the interpreter and torch's import
    per stage cost most of this test's time; a stage's own process is tested in tests/test_compare.py's resume)."""
    import yaml

    from lab.compare.trial import rates_to_try

    tiny = _grid_data()
    data = {**tiny, **{key: {**tiny[key], **changes} for key, changes in SMALLER_THAN_TINY.items()}}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(data))
    grid = Grid.load(str(path))
    shipped = Grid.load("tiny")
    assert grid.design() == shipped.design() and grid.envs() == shipped.envs()
    assert {key for key in data if data[key] != tiny[key]} == set(SMALLER_THAN_TINY)
    gdir = GridDir(tmp_path / "tiny")
    calls = compare_stages_in_process(monkeypatch)
    t0 = time.time()
    assert run_grid(grid, gdir, out=sys.stderr, grid_arg=str(path)) == 0
    print(f"tiny grid: {time.time() - t0:.0f}s", file=sys.stderr)
    # a warm start per seed, each SFT'd from its own seed
    assert grid.warm_seeds == grid.seeds == (0, 1)
    assert [json.loads((gdir.warm(w) / "done.json").read_text())["seed"] for w in ("calculator", "calculator@w1")] \
        == [0, 1]
    steps, episodes = grid.options["steps"], grid.options["prompts_per_step"] * grid.options["group_size"]
    for impl in grid.implementations:
        choice = gdir.choice(impl)
        rates = rates_to_try(grid, gdir, impl)
        assert [t["lr"] for t in choice["trials"]] == rates and rates[:2] == grid.sweep_lrs(impl)
        assert choice["seeds"] == [100, 101] and choice["added"] == rates[2:] and len(rates) <= 2 + grid.lr_extend
        best = max(t["validation"] for t in choice["trials"])
        assert [t for t in choice["trials"] if t["lr"] == choice["lr"]][0]["validation"] == best
        assert choice["bracketed"] == (min(rates) < choice["lr"] < max(rates))
        for t in choice["trials"]:
            assert t["validation"] == pytest.approx(sum(b["validation"] for b in t["by_seed"]) / 2)
            for j, b in enumerate(t["by_seed"]):
                trial = json.loads((gdir.trial(impl, t["lr"], b["seed"]) / "result.json").read_text())
                assert len(trial["validation_by_problem"]) == grid.validation_n and "heldout" not in trial
                assert (trial["config"]["lr"], trial["config"]["seed"], trial["complete"]) == (t["lr"], b["seed"], True)
                assert trial["warm_start"] == ["calculator", "calculator@w1"][j]  # trial j from warm start j
                assert trial["budget"]["sampled_episodes"] == steps * episodes
                assert not (gdir.trial(impl, t["lr"], b["seed"]) / "run").exists()  # never a cell's run
        chosen_at = gdir.choice_path(impl).stat().st_mtime_ns
        for seed in grid.seeds:  # every cell, seed 0's included, trained after the choice, none a trial's run
            r = gdir.result(impl, seed)
            assert "trained_as" not in r and r["config"]["seed"] == seed and r["config"]["lr"] == choice["lr"]
            assert (gdir.cell(impl, seed) / "config.json").stat().st_mtime_ns >= chosen_at
    # the extension ran, not only allowed for: two rates, so the best of the first two sits at an end
    assert all(len(gdir.choice(impl)["added"]) == grid.lr_extend == 1 for impl in grid.implementations)
    for impl, seed in grid.cells():
        r = gdir.result(impl, seed)
        assert r["validation"] == gdir.choice(impl) and r["config"]["out"] == str(gdir.cell(impl, seed) / "run")
        assert r["warm_start"] == ["calculator", "calculator@w1"][seed] and r["warm_seed"] == seed
        assert len(r["heldout_by_problem"]) == grid.eval_n
        mu = grid.mu[impl.split("-", 1)[1]]
        b = r["budget"]
        assert r["complete"] and budget_status(r)["in_verdicts"]
        assert (b["policy_steps_done"], b["episodes"], b["policy_updates"], b["mu"]) == (
            steps, steps * episodes, steps * mu, mu)
        assert (b["counts"], b["sampled_episodes"]) == ("sampled-episodes", steps * episodes)
        assert b["trained_episodes"] + b["discarded_episodes"] == b["episodes"]
        rows = read_diagnostics_file(gdir.cell(impl, seed) / "diagnostics.jsonl")
        assert rows == cell_diagnostics(r) and [row["step"] for row in rows] == list(range(1, steps + 1))
        for row in rows:
            assert {"clip_frac_low", "clip_frac_high", "entropy", "ratio_mean", "ratio_max", "len_correct",
                    "len_incorrect", "zero_advantage_groups_frac", "policy_updates"} <= set(row) <= {
                        "step", "phase", *DIAGNOSTIC_KEYS}
            assert row["kl"] is None  # beta = 0: no reference, so no KL to show
        p = r["provenance"]
        assert len(p["commit"]) == 40 and p["versions"]["torch"] and "transformers" in p["versions"]
        assert p["threads"]["torch"] >= 1 and set(p["load_1min"]) == {"start", "end"} and "steal_frac" in p
        assert r["heldout_interval_method"] == HELDOUT_INTERVAL_METHOD
        interval = config_interval([r["heldout_by_problem"]])  # the stored interval is the one the page shows
        assert r["heldout_interval"] == [interval.low, interval.high]
    passk = json.loads((gdir.path / "passk" / "calculator.json").read_text())
    named = [f"RL (calculator-grpo, seed {s})" for s in grid.seeds]
    warm_curves = [f"warm start (warm seed {s})" for s in grid.seeds]
    assert list(passk["curves"]) == ["base", *warm_curves, *named] and passk["method"] == PASSK_DECLARED
    assert [passk["cells"][label]["warm_curve"] for label in named] == warm_curves
    assert passk["problems"] == grid.passk["problems"] >= 50 and passk["k"] == [1, grid.passk["samples"]] == [1, 2]
    assert all(len(c["correct_counts"]) == 50 for c in passk["curves"].values())
    # each named cell was counted right after it trained (its own stage), the rest at the end
    assert calls.count("_passk") == len(grid.seeds) + 1
    rows = passk_comparison(passk)
    rl = [row for row in rows if row["against"] == "warm start"]
    assert [(row["model"], row["k"], row["seeds"]) for row in rl] == [("RL (calculator-grpo, 2 seeds)", 1, 2),
                                                                       ("RL (calculator-grpo, 2 seeds)", 2, 2)]
    # the Holm family: every tested row, the two warm starts against the untrained model (a seed each) included
    tested = [row for row in rows if row["p_raw"] is not None]
    assert [row["model"] for row in tested] == ["warm start"] * 2 + [rl[0]["model"]] * 2
    assert all(row["tests"] == 4 and row["p_holm"] >= row["p_raw"] and row["test"].startswith("paired t-test, seeds")
               for row in tested)
    reading = passk_reading(rows)  # of the declared method's seeds, not a legacy record's single checkpoint
    assert rl[0]["model"] in reading and PASSK_LEGACY[1:] not in reading


# -- warm-start seeds (issue 42) ---------------------------------------------------------------------------

@pytest.mark.parametrize("changes,message", [
    ({"warm_seeds": []}, "field 'warm_seeds': a non-empty list"),
    ({"warm_seeds": [0, 0]}, r"repeats a seed"),
    ({"warm_seeds": [0, -1]}, r"-1 is not an integer in \[0, "),
    ({"warm_seeds": [0, 1, 2]}, "3 warm starts for 2 seeds"),
    ({"warm_seeds": [1, 0], "warm_seed": 0}, r"the first \(1\) differs from field 'warm_seed' \(0\)"),
])
def test_bad_warm_seeds_name_the_problem(changes, message):
    with pytest.raises(ConfigError, match=message):
        Grid.from_dict(_grid_data(**changes), "g.yaml")


def test_warm_seeds_assign_each_cell_seed_its_warm_start(tmp_path):
    """Cell seed index i starts from warm_seeds[i % n]; the first warm start keeps warm/<env> and the others are
    warm/<env>@w<seed>; a grid without warm_seeds has one warm start, writes no warm_seeds, and a folder of a grid
    with other warm seeds is refused (its cells would start elsewhere)."""
    from lab.compare.folder import split_warm_name, warm_name

    grid = Grid.from_dict(_grid_data(seeds=[0, 1, 2, 3, 4], warm_seeds=[3, 7]), "g.yaml")
    assert grid.warm_seed == 3 and [grid.warm_seed_of(s) for s in grid.seeds] == [3, 7, 3, 7, 3]
    gdir = GridDir(tmp_path / "g")
    assert [gdir.warm_of(grid, "calculator", s).name for s in (0, 1)] == ["calculator", "calculator@w7"]
    assert gdir.warm_starts(grid, "calculator") == [(3, "calculator"), (7, "calculator@w7")]
    assert warm_name(grid, "calculator", 7) == "calculator@w7" and warm_name(grid, "calculator") == "calculator"
    assert split_warm_name("calculator@w7") == ("calculator", 7) and split_warm_name("calculator") == ("calculator", None)
    assert split_warm_name("a@wx") == ("a@wx", None)
    assert Grid.from_dict(grid.as_dict(), "g.yaml") == grid  # grid.yaml round-trips
    one = Grid.from_dict(_grid_data(warm_seed=0), "g.yaml")
    assert one.warm_seeds == (0,) and "warm_seeds" not in one.as_dict() and one.as_dict()["warm_seed"] == 0
    # naming neither: each seed its own warm start (issue 60), written out so that the grid.yaml binds
    each = Grid.from_dict(_grid_data(seeds=[4, 2, 9]), "g.yaml")
    assert each.warm_seeds == (4, 2, 9) and [each.warm_seed_of(s) for s in (4, 2, 9)] == [4, 2, 9]
    assert Grid.from_dict(each.as_dict(), "g.yaml") == each
    gdir.bind(grid)
    with pytest.raises(ConfigError, match="different warm_seeds"):
        gdir.bind(Grid.from_dict(_grid_data(seeds=[0, 1, 2, 3, 4], warm_seeds=[3, 8]), "g.yaml"))


# eight problems; the two warm starts differ, so an RL seed read against the other seed's warm start gives another
# number: GRPO gains 1 problem on its own warm start in both seeds (+0.125), but seed 1 against warm seed 0's row
# would read as -0.25 (mean -0.0625)
W0, W1 = [1, 1, 1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 1]
GRPO = {0: [1, 1, 1, 1, 1, 0, 0, 0], 1: [0, 0, 0, 0, 0, 0, 1, 1]}
RLOO = {0: [1, 1, 1, 0, 0, 0, 0, 0], 1: [0, 0, 0, 0, 0, 1, 1, 1]}


def _cells(warm_named: bool) -> list[dict]:
    cells = []
    for impl, algo, rows in (("calculator-grpo", "grpo", GRPO), ("calculator-rloo", "rloo", RLOO)):
        for seed, row in rows.items():
            cell = {"cell": f"{impl}-s{seed}", "implementation": impl, "algo": algo, "env": "calculator",
                    "seed": seed, "heldout": sum(row) / len(row), "heldout_by_problem": row}
            if warm_named:
                cell.update(warm_start="calculator" if seed == 0 else "calculator@w1", warm_seed=seed)
            cells.append(cell)
    return cells


def _warm_records(*rows) -> dict[str, dict]:
    names = ["calculator", *(f"calculator@w{i}" for i in range(1, len(rows)))]
    return {n: {"heldout": sum(r) / len(r), "heldout_by_problem": r} for n, r in zip(names, rows)}


def test_the_board_pairs_each_rl_seed_with_its_own_warm_start():
    """RL against the warm start: seed s with the warm row its record names (the crossed test on those pairs), not
    the first warm start's; GRPO against RLOO stays paired by seed; the warm starts against the untrained model are
    a seed each; a grid of one warm start reads every seed against its one fixed row, as before."""
    from lab.compare.board import UNTRAINED, WARM, grid_tests, leaderboard, progression
    from reference_impls.stats import compare

    cells, warm = _cells(True), _warm_records(W0, W1)
    base = {"calculator": {"heldout": 0.0, "heldout_by_problem": [0] * 8}}
    tests = grid_tests(cells, "grpo", warm, base)
    own = tests[("calculator", "calculator-grpo", WARM)]
    assert own["difference"] == pytest.approx(0.125) and own["seeds"] == 2
    expected = compare([GRPO[0], GRPO[1]], [W0, W1])
    assert (own["low"], own["high"], own["p_raw"]) == pytest.approx((expected.low, expected.high, expected.p_value))
    wrong = compare([GRPO[0], GRPO[1]], [W0])  # every seed against warm seed 0: what the pairing must not do
    assert wrong.difference == pytest.approx(-0.0625) and wrong.difference != pytest.approx(own["difference"])
    rloo = tests[("calculator", "calculator-rloo", WARM)]
    assert rloo["difference"] == pytest.approx(compare([RLOO[0], RLOO[1]], [W0, W1]).difference) == pytest.approx(0.0625)
    vs_grpo = tests[("calculator", "calculator-rloo", "calculator-grpo")]
    assert vs_grpo["difference"] == pytest.approx(compare([RLOO[0], RLOO[1]], [GRPO[0], GRPO[1]]).difference)
    warm_base = tests[("calculator", WARM, UNTRAINED)]
    assert warm_base["seeds"] == 2 and warm_base["difference"] == pytest.approx((4 + 1) / 16)
    board = {r["implementation"]: r for r in leaderboard(cells, "grpo", warm, base, tests=tests)["calculator"]}
    assert board["calculator-grpo"]["vs_warm"]["mean"] == pytest.approx(0.125)
    stages_ = {r["stage"]: r for r in progression(cells, base, warm, "grpo", tests=tests)["calculator"]}
    assert stages_[WARM]["seeds"] == 2 and stages_[WARM]["heldout"] == pytest.approx(5 / 16)
    assert stages_["SFT + RL (calculator-grpo)"]["vs"]["mean"] == pytest.approx(0.125)
    # one warm start (records without warm_start, a warm dict keyed by env): every seed against its one row
    single = grid_tests(_cells(False), "grpo", _warm_records(W0), base)
    assert single[("calculator", "calculator-grpo", WARM)]["difference"] == pytest.approx(-0.0625)
    assert single[("calculator", WARM, UNTRAINED)]["seeds"] == 1


def test_an_exported_folder_of_two_warm_starts_loads_and_pairs(tmp_path):
    """An exported folder keeps warm/<env>.json and warm/<env>@w<seed>.json: the loader reads both (by name), the
    comparisons pair as the board does, and report --json names each cell's warm start."""
    import yaml

    from lab.compare.board import WARM
    from lab.compare.cli import main
    from lab.compare.folder import atomic_json
    from lab.compare.results import load_results

    folder = tmp_path / "shipped"
    (folder / "cells").mkdir(parents=True)
    (folder / "warm").mkdir()
    grid = Grid.from_dict(_grid_data(eval={"n": 8, "seed": 4242}, warm_seeds=[0, 1]), "g.yaml")
    (folder / "grid.yaml").write_text(yaml.safe_dump(grid.as_dict(), sort_keys=False))
    for cell in _cells(True):
        atomic_json(folder / "cells" / f"{cell['cell']}.json", cell)
    for name, record in _warm_records(W0, W1).items():
        atomic_json(folder / "warm" / f"{name}.json", record)
    loaded = load_results(folder, shipped=True)
    assert list(loaded.warm) == ["calculator", "calculator@w1"]
    assert loaded.tests()[("calculator", "calculator-grpo", WARM)]["difference"] == pytest.approx(0.125)
    assert "Warm start alone (no RL): 50.0%" in loaded.reference_line("calculator")
    assert "Warm start @w1 alone (no RL): 12.5%" in loaded.reference_line("calculator")
    # the stages table shows each warm start on its own (pooled, two warm starts give an interval of [0, 100])
    from lab.compare.report import progression_markdown
    table = progression_markdown(loaded.progression(), loaded.cells, loaded.warm)
    sft_column = [line.split(" | ") for line in table.splitlines()][2][2]
    assert [entry.split(" ") for entry in sft_column.split("; ")] == [
        ["50%", "[16,", "84]", "(warm/calculator)"], ["12%", "[0,", "53]", "(warm/calculator@w1)"]]
    from lab.compare.report import progression_text
    text = progression_text(loaded.progression(), loaded.warm).splitlines()
    sft = next(i for i, line in enumerate(text) if line.startswith("SFT (warm start)"))
    assert "each below" in text[sft] and "[0.000, 1.000]" not in text[sft]
    assert text[sft + 1].split() == ["warm/calculator", "0.500", "[0.157,", "0.843]"]
    assert text[sft + 2].split()[:2] == ["warm/calculator@w1", "0.125"]
    # without the warm records (or with one warm start) the stage keeps its own interval
    assert "each below" not in progression_text(loaded.progression())
    out = run_main(main, ["report", str(folder / "grid.yaml"), "--dir", str(folder), "--json"],
                   env=dict(os.environ, HF_HUB_OFFLINE="1"), prog="python -m lab.compare")
    assert out.returncode == 0, out.stderr
    named = {r["cell"]: r["warm_start"] for r in map(json.loads, out.stdout.splitlines()) if r["record"] == "cell"}
    assert named == {"calculator-grpo-s0": "calculator", "calculator-grpo-s1": "calculator@w1",
                     "calculator-rloo-s0": "calculator", "calculator-rloo-s1": "calculator@w1"}


def test_passk_pairs_each_rl_seed_with_its_own_warm_start():
    """A pass@k record of two warm starts: they are one model ("warm start", a seed each), and each RL seed is
    tested against the curve of the warm start it started from."""
    from reference_impls.stats import compare, pass_at_k

    record = {"method": PASSK_DECLARED, "implementation": "calculator-grpo", "samples": 4, "k": [1],
              "cells": {f"RL (calculator-grpo, seed {s})": {"cell": f"calculator-grpo-s{s}", "seed": s,
                                                              "in_verdicts": True,
                                                              "warm_curve": f"warm start (warm seed {s})"}
                        for s in (0, 1)},
              "curves": {label: {"correct_counts": counts} for label, counts in (
                  ("base", [0] * 8), ("warm start (warm seed 0)", [4, 4, 4, 4, 0, 0, 0, 0]),
                  ("warm start (warm seed 1)", [0] * 7 + [4]), ("RL (calculator-grpo, seed 0)", [4] * 5 + [0] * 3),
                  ("RL (calculator-grpo, seed 1)", [0] * 6 + [4, 4]))}}
    rows = passk_comparison(record)
    assert [(r["model"], r["against"], r["seeds"]) for r in rows] == [
        ("warm start", "base", 2), ("RL (calculator-grpo, 2 seeds)", "warm start", 2)]
    rl = rows[-1]
    curves = record["curves"]

    def p1(label):
        return [pass_at_k(4, c, 1) for c in curves[label]["correct_counts"]]

    expected = compare([p1("RL (calculator-grpo, seed 0)"), p1("RL (calculator-grpo, seed 1)")],
                       [p1("warm start (warm seed 0)"), p1("warm start (warm seed 1)")])
    assert rl["difference"]["mean"] == pytest.approx(expected.difference) == pytest.approx(0.125)


def test_a_grid_of_two_warm_starts_runs_and_resumes_each(tmp_path, monkeypatch):
    """warm_seeds [0, 1] and 2 seeds on the tiny model (stages in this process): two warm starts, warm/calculator
    (seed 0) and warm/calculator@w1 (seed 1), each SFT'd from its own seed and scored on the test problems; the
    cell of seed 1 starts from warm@w1 and its record says so; export keeps both; a second run redoes only the warm
    start that is missing (a finished one is never redone) and no cell."""
    import yaml

    from lab.compare.cli import main
    from lab.compare.report import export

    data = _grid_data(implementations=["calculator-grpo"], warm_seeds=[0, 1], eval={"n": 4, "seed": 7})
    for key in ("lr_sweep", "lr_trials", "passk", "validation", "mu"):
        data.pop(key, None)
    data["options"].update(steps=1, prompts_per_step=2, group_size=2, max_new_tokens_per_turn=8,
                           max_completion_tokens=16)
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(data))
    grid = Grid.load(str(path))
    gdir = GridDir(tmp_path / "g")
    calls = compare_stages_in_process(monkeypatch, lambda args: [a for a in args
                                                                 if a not in (str(path), "--dir", str(gdir.path))])
    assert run_grid(grid, gdir, out=sys.stderr, grid_arg=str(path)) == 0
    assert calls == [["_warm", "--env", "calculator", "--warm-seed", "0"],
                     ["_warmeval", "--env", "calculator", "--warm-seed", "0"],
                     ["_warm", "--env", "calculator", "--warm-seed", "1"],
                     ["_warmeval", "--env", "calculator", "--warm-seed", "1"],
                     ["_cell", "--impl", "calculator-grpo", "--seed", "0"],
                     ["_cell", "--impl", "calculator-grpo", "--seed", "1"]]
    first, second = gdir.warm("calculator"), gdir.warm("calculator@w1")
    done = [json.loads((w / "done.json").read_text()) for w in (first, second)]
    assert [d["seed"] for d in done] == [0, 1] and all(len(d["heldout_by_problem"]) == 4 for d in done)
    # the warm seed reached the SFT: the two warm starts are different models
    weights = [sorted(w.glob("*.safetensors")) for w in (first, second)]
    assert weights[0] and weights[0][0].read_bytes() != weights[1][0].read_bytes()
    for seed, warm in ((0, first), (1, second)):
        r = gdir.result("calculator-grpo", seed)
        assert r["config"]["model"] == str(warm) and r["warm_start"] == warm.name and r["warm_seed"] == seed
    assert [(w["warm"], w["state"]) for w in warm_status(grid, gdir)] == [("calculator", "done"),
                                                                                 ("calculator@w1", "done")]
    assert [r["warm_start"] for r in grid_status(grid, gdir)] == ["calculator", "calculator@w1"]
    shown = run_main(main, ["status", str(path), "--dir", str(gdir.path)], prog="python -m lab.compare").stdout
    assert "warm/calculator@w1" in shown.splitlines()[1] and "from warm/calculator@w1" in shown.splitlines()[3]
    shipped = tmp_path / "shipped"
    assert export(grid, gdir, shipped) == 2
    assert sorted(p.name for p in (shipped / "warm").iterdir()) == ["calculator.json", "calculator@w1.json"]
    assert json.loads((shipped / "cells" / "calculator-grpo-s1.json").read_text())["config"]["model"] == \
        "warm/calculator@w1"

    # resume: the first warm start is lost; the second, finished, is kept as it is, and so are the cells
    stamp = (second / "done.json").stat().st_mtime_ns
    import shutil
    shutil.rmtree(first)
    calls.clear()
    assert run_grid(grid, gdir, out=sys.stderr, grid_arg=str(path)) == 0
    assert calls == [["_warm", "--env", "calculator", "--warm-seed", "0"],
                     ["_warmeval", "--env", "calculator", "--warm-seed", "0"]]
    assert (second / "done.json").stat().st_mtime_ns == stamp


def test_a_grid_folder_carried_without_its_weights_resumes(tmp_path, monkeypatch):
    """A grid's small records committed between sessions (no weights: git keeps done.json and result.json only)
    resume: the warm start is trained again and kept only if its weights' digest is the recorded one, the record
    (with its held-out) stays as it was, and no finished cell runs again. Weights that differ, or a record without a
    digest, stop the run with the reason and change nothing."""
    import shutil

    import yaml

    data = _grid_data(implementations=["calculator-grpo"], eval={"n": 4, "seed": 7})
    for key in ("lr_sweep", "lr_trials", "passk", "validation", "mu"):
        data.pop(key, None)
    data["options"].update(steps=1, prompts_per_step=2, group_size=2, max_new_tokens_per_turn=8,
                           max_completion_tokens=16)
    data["seeds"] = [0]
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(data))
    grid = Grid.load(str(path))
    gdir = GridDir(tmp_path / "g")
    calls = compare_stages_in_process(monkeypatch)
    assert run_grid(grid, gdir, out=sys.stderr, grid_arg=str(path)) == 0
    warm = gdir.warm("calculator")
    record = json.loads((warm / "done.json").read_text())
    digest = record["weights_sha256"]
    assert len(digest) == 64 and digest == weights_digest(warm) and "heldout" in record
    assert gdir.result("calculator-grpo", 0)["warm_weights_sha256"] == digest  # the cell names what it started from

    def carry():  # what a commit of the folder keeps: the records, no weights, no run folders
        for f in warm.iterdir():
            if f.name != "done.json":
                f.unlink()
        shutil.rmtree(gdir.cell("calculator-grpo", 0) / "run", ignore_errors=True)

    carry()
    calls.clear()
    assert run_grid(grid, gdir, out=sys.stderr, grid_arg=str(path)) == 0
    assert calls == ["_warmrestore"]  # not evaluated again, no cell re-run
    assert weights_digest(warm) == digest and json.loads((warm / "done.json").read_text()) == record
    assert not list(warm.parent.glob(".*restore*"))

    # weights that come out different (another machine, version, thread count): refused, nothing changed
    carry()
    (warm / "done.json").write_text(json.dumps({**record, "weights_sha256": "0" * 64}))
    assert run_grid(grid, gdir, out=sys.stderr, grid_arg=str(path)) == 1
    log = (gdir.path / "warm-restore-calculator.log").read_text()
    assert "not the recorded 000000000000" in log
    assert [f.name for f in warm.iterdir()] == ["done.json"]
    # a record written before the digest existed cannot be checked: said, not guessed
    (warm / "done.json").write_text(json.dumps({k: v for k, v in record.items() if k != "weights_sha256"}))
    assert run_grid(grid, gdir, out=sys.stderr, grid_arg=str(path)) == 1
    assert "records no weights_sha256" in (gdir.path / "warm-restore-calculator.log").read_text()

    # --restore-by-heldout: other weights that answer every held-out problem as recorded are kept, and said so
    other = {**record, "weights_sha256": "0" * 64}
    flipped = [1 - record["heldout_by_problem"][0], *record["heldout_by_problem"][1:]]
    (warm / "done.json").write_text(json.dumps({**other, "heldout_by_problem": flipped}))
    assert run_grid(grid, gdir, out=sys.stderr, grid_arg=str(path), restore_by_heldout=True) == 1
    log = (gdir.path / "warm-restore-calculator.log").read_text()
    assert "answers 1 of 4 held-out" in log and "(first: problem [0])" in log  # how many differ, and which
    assert [f.name for f in warm.iterdir()] == ["done.json"]
    (warm / "done.json").write_text(json.dumps(other))
    calls.clear()
    assert run_grid(grid, gdir, out=sys.stderr, grid_arg=str(path), restore_by_heldout=True) == 0
    assert calls == ["_warmrestore"]  # the cell is kept: it started from the recorded weights
    kept = json.loads((warm / "done.json").read_text())
    assert kept["weights_sha256"] == "0" * 64  # the record of what the cells started from stays
    [restore] = kept["restored"]
    assert restore["weights_sha256"] == digest == weights_digest(warm)
    assert restore["heldout_by_problem_equal"] is True and restore["provenance"]["cpu"] is not None
    assert {k: v for k, v in kept.items() if k != "restored"} == other
    assert not list(warm.parent.glob(".*restore*"))


def test_export_of_one_environment_ships_only_its_records(tmp_path):
    """A grid run on fewer environments than its file plans ships as what ran: ``export --env`` writes that
    environment's cells, warm starts and pass@k, and a grid.yaml naming only its implementations (so the shipped
    grid is whole), with a comment naming what was not run; a folder with files is never written into."""
    import yaml

    from lab.compare.cli import main
    from lab.compare.folder import atomic_json
    from lab.compare.report import export
    from lab.compare.results import load_results

    grid = Grid.from_dict(_grid_data(implementations=["calculator-grpo", "frozenlake-grpo"], seeds=[0]), "g.yaml")
    gdir = GridDir(tmp_path / "g")
    gdir.path.mkdir()
    (gdir.path / "grid.yaml").write_text(yaml.safe_dump(grid.as_dict(), sort_keys=False))
    for impl, env in (("calculator-grpo", "calculator"), ("frozenlake-grpo", "frozenlake")):
        folder = gdir.cell(impl, 0)
        folder.mkdir(parents=True)
        atomic_json(folder / "result.json", {"cell": f"{impl}-s0", "implementation": impl, "algo": "grpo", "env": env,
                                             "seed": 0, "heldout": 0.5, "heldout_by_problem": [1, 0],
                                             "config": {"model": "x", "out": "y"}})
        gdir.warm(env).mkdir(parents=True)
        atomic_json(gdir.warm(env) / "done.json", {"heldout": 0.5, "heldout_by_problem": [1, 0]})
    (gdir.path / "passk").mkdir()
    for env in ("calculator", "frozenlake"):
        atomic_json(gdir.path / "passk" / f"{env}.json", {"env": env, "curves": {}})

    dest = tmp_path / "shipped"
    assert export(grid, gdir, dest, env="calculator") == 1
    assert sorted(p.name for p in dest.rglob("*.json")) == ["calculator-grpo-s0.json", "calculator.json",
                                                             "calculator.json"]
    text = (dest / "grid.yaml").read_text()
    first = text.splitlines()[0]
    assert first.startswith("# tiny ") and "calculator" in first and "frozenlake-grpo" in text.split("\nname:")[0]
    shipped = load_results(dest, shipped=True)
    assert shipped.spec["implementations"] == ["calculator-grpo"] and [c["cell"] for c in shipped.cells] == [
        "calculator-grpo-s0"]
    # the folder now has files: a second export is refused, with the reason, and changes nothing
    before = sorted(p.name for p in dest.rglob("*"))
    with pytest.raises(ConfigError, match="is not empty"):
        export(grid, gdir, dest)
    assert sorted(p.name for p in dest.rglob("*")) == before
    assert main(["export", str(gdir.path / "grid.yaml"), "--dir", str(gdir.path), "--to", str(tmp_path / "x"),
                 "--env", "search"]) == 2
    assert not (tmp_path / "x").exists()


# -- the design every next grid follows (issue 60) ---------------------------------------------------------

def _trial_record(lr, seed, validation, complete=True):
    return {"lr": lr, "seed": seed, "validation": validation, "complete": complete,
            "validation_by_problem": [1] * round(4 * validation) + [0] * (4 - round(4 * validation))}


def _write_trials(gdir, impl, scores):
    from lab.compare.folder import atomic_json

    for (lr, seed), validation in scores.items():
        gdir.trial(impl, lr, seed).mkdir(parents=True, exist_ok=True)
        atomic_json(gdir.trial(impl, lr, seed) / "result.json", _trial_record(lr, seed, validation))


def test_the_choice_is_over_the_trial_seeds_and_brackets_or_says_not(tmp_path):
    """Trials by hand (no training): the rate of the highest mean over both trial seeds wins, though seed 100 alone
    would pick the other; a winner at an end of the range adds the next rate beyond it (the range's outer step),
    which is then tried; the choice is bracketed once a rate on each side scored lower, and says it is not when
    the added rates ran out (extend) with the winner still at the end."""
    from lab.compare.trial import beyond, choose_lr, missing_trials, rates_to_try

    grid = Grid.from_dict(_grid_data(lr_sweep={"default": [1e-5, 3e-5, 1e-4]},
                                     lr_trials={"seeds": [100, 101], "extend": 1}), "g.yaml")
    gdir = GridDir(tmp_path / "g")
    impl = "calculator-grpo"
    assert beyond([1e-5, 3e-5, 1e-4], 1e-5) == pytest.approx(3.33e-6) and beyond([1e-5, 3e-5, 1e-4], 3e-5) is None
    assert beyond([1e-5, 1e-4], 1e-4) == pytest.approx(1e-3) and beyond([0.1, 0.5], 0.5) is None  # no rate >= 1
    assert missing_trials(grid, gdir, impl) == [(lr, s) for lr in (1e-5, 3e-5, 1e-4) for s in (100, 101)]
    # 3e-5 wins on the mean (0.5, 0.5 against 0.75, 0.0), the middle of the range: bracketed, nothing added
    _write_trials(gdir, impl, {(1e-5, 100): 0.75, (1e-5, 101): 0.0, (3e-5, 100): 0.5, (3e-5, 101): 0.5,
                               (1e-4, 100): 0.0, (1e-4, 101): 0.25})
    assert rates_to_try(grid, gdir, impl) == [1e-5, 3e-5, 1e-4] and missing_trials(grid, gdir, impl) == []
    choice = choose_lr(grid, gdir, impl)
    assert (choice["lr"], choice["seeds"], choice["added"], choice["bracketed"]) == (3e-5, [100, 101], [], True)
    assert [t["validation"] for t in choice["trials"]] == [0.375, 0.5, 0.125]
    assert [[b["seed"] for b in t["by_seed"]] for t in choice["trials"]] == [[100, 101]] * 3

    # the smallest rate wins: the next one below is asked for, both seeds, and then decides
    other = GridDir(tmp_path / "h")
    _write_trials(other, impl, {(1e-5, 100): 0.75, (1e-5, 101): 0.5, (3e-5, 100): 0.5, (3e-5, 101): 0.5,
                                (1e-4, 100): 0.0, (1e-4, 101): 0.25})
    assert missing_trials(grid, other, impl) == [(3.33e-6, 100), (3.33e-6, 101)]
    with pytest.raises(ConfigError, match="the trial with lr 3.33e-06 has not run"):
        choose_lr(grid, other, impl)
    _write_trials(other, impl, {(3.33e-6, 100): 0.25, (3.33e-6, 101): 0.25})
    choice = choose_lr(grid, other, impl)
    assert (choice["lr"], choice["added"], choice["bracketed"]) == (1e-5, [3.33e-6], True)
    # the added rate wins: extend 1 is spent, so nothing more is tried and the record says not bracketed
    _write_trials(other, impl, {(3.33e-6, 100): 1.0, (3.33e-6, 101): 1.0})
    assert missing_trials(grid, other, impl) == []
    choice = choose_lr(grid, other, impl)
    assert (choice["lr"], choice["added"], choice["bracketed"]) == (3.33e-6, [3.33e-6], False)
    # a grid without lr_trials keeps the old choice: one trial per rate, of seed warm_seed, no extension
    old = Grid.from_dict(_grid_data(lr_trials=None, warm_seed=0), "g.yaml")
    assert old.trial_is_cell and old.trial_seeds() == (0,) and rates_to_try(old, other, impl) == [1e-5, 1e-4]


def test_the_budget_counts_every_sampled_episode(tmp_path):
    """budget: sampled-episodes: PPO's critic warm-up is part of its steps (the same episodes sampled as every other
    cell); policy-batches (a grid.yaml without the field) adds it on top, as the shipped grids ran. work_done counts
    what was sampled and what the policy trained on: DAPO's dropped groups are discarded episodes."""
    data = _grid_data(recipe="compare", implementations=["calculator-grpo", "calculator-ppo", "calculator-dpo"])
    for key in ("lr_sweep", "lr_trials", "passk", "validation", "mu"):
        data.pop(key, None)
    data["options"]["steps"] = 4
    data.pop("budget")  # tiny.yaml's: sampled-episodes
    sampled = Grid.from_dict({**data, "budget": "sampled-episodes"}, "g.yaml")
    on_top = Grid.from_dict(data, "g.yaml")
    assert on_top.budget == "policy-batches" and "budget" not in on_top.as_dict()
    steps = data["options"]["steps"]
    for grid, ppo_steps in ((sampled, steps), (on_top, steps + 2)):
        configs = {impl: cell_config(grid, impl, 0, str(tmp_path)) for impl in grid.implementations}
        assert configs["calculator-ppo"]["steps"] == ppo_steps and configs["calculator-grpo"]["steps"] == steps
        assert configs["calculator-dpo"]["algo_config"]["pair_prompts"] == steps * configs["calculator-dpo"][
            "prompts_per_step"]
    assert policy_steps(cell_config(sampled, "calculator-ppo", 0, str(tmp_path))) == steps - 2
    short = Grid.from_dict({**data, "budget": "sampled-episodes", "options": {**data["options"], "steps": 2}}, "g")
    with pytest.raises(ConfigError, match=r"calculator-ppo: .*\(2 steps\).* 2 steps"):
        cell_config(short, "calculator-ppo", 0, str(tmp_path))
    config = {"steps": 2, "prompts_per_step": 2, "group_size": 4, "mini_batches": 1, "max_wall_s": 0.0,
              "algo": "grpo", "algo_config": {}}
    dapo = work_done(config, [_metrics(1, episodes=8.0, groups_kept_frac=0.25),
                              _metrics(2, episodes=8.0, groups_kept_frac=0.5)], {})
    assert (dapo["sampled_episodes"], dapo["trained_episodes"], dapo["discarded_episodes"]) == (16, 6, 10)


def test_a_tiny_grid_samples_the_same_episodes_in_every_cell(tmp_path, monkeypatch):
    """budget: sampled-episodes on the tiny model (the compare recipe, so PPO has its 2 critic warm-up steps), GRPO,
    DAPO and PPO, 3 steps of 2 x 2 episodes: every cell samples 12 episodes in all, PPO's critic warm-up's 8 among
    them (its policy gets 1 batch of 4); each record counts what the policy trained on (DAPO: the groups its dynamic
    sampling kept, as its per-step diagnostics say) and what it discarded; the report states both beside the
    results, and which budget the grid used."""
    import yaml

    from lab.compare.cli import main
    from lab.compare.folder import episode_counts

    data = _grid_data(recipe="compare", implementations=["calculator-grpo", "calculator-dapo", "calculator-ppo"],
                      seeds=[0], warm_seed=0, eval={"n": 4, "seed": 7})
    for key in ("lr_sweep", "lr_trials", "passk", "validation", "mu"):
        data.pop(key, None)
    data["options"].update(steps=3, prompts_per_step=2, group_size=2, max_new_tokens_per_turn=8,
                           max_completion_tokens=40, checkpoint_every=3)  # DAPO's overlong buffer is 32
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(data))
    grid = Grid.load(str(path))
    assert grid.budget == "sampled-episodes"
    gdir = GridDir(tmp_path / "g")

    compare_stages_in_process(monkeypatch)
    assert run_grid(grid, gdir, out=sys.stderr, grid_arg=str(path)) == 0
    budgets = {impl: gdir.result(impl, 0)["budget"] for impl in grid.implementations}
    assert {impl: b["sampled_episodes"] for impl, b in budgets.items()} == dict.fromkeys(grid.implementations, 12)
    ppo = budgets["calculator-ppo"]
    assert (ppo["critic_warmup_steps_done"], ppo["critic_warmup_episodes"], ppo["policy_steps_done"],
            ppo["episodes"]) == (2, 8, 1, 4)
    for impl, b in budgets.items():
        rows = [row for row in gdir.result(impl, 0)["diagnostics"] if row["phase"] == "policy"]
        kept = round(sum(row["episodes"] * row.get("groups_kept_frac", 1.0) for row in rows))
        assert (b["counts"], b["trained_episodes"], b["discarded_episodes"]) == (
            "sampled-episodes", kept, b["episodes"] - kept), impl
    assert budgets["calculator-grpo"]["discarded_episodes"] == 0  # GRPO trains on every group it sampled
    counts = episode_counts(cell_results(grid, gdir))
    assert [(c["implementation"], c["sampled"], c["trained"]) for c in counts] == [
        (impl, 12, b["trained_episodes"]) for impl, b in budgets.items()]
    report = run_main(main, ["report", str(path), "--dir", str(gdir.path)], prog="python -m lab.compare").stdout
    [line] = [line for line in report.splitlines() if line.startswith("Episodes per cell")]
    assert {part.split()[0]: part.split()[1:] for part in line.split(": ", 1)[1].split("; ")} == {
        impl: ["12", "/", str(b["trained_episodes"])] for impl, b in budgets.items()}
    assert "Design: " + " ".join(grid.design()) in report.splitlines()


def test_a_grid_without_lr_trials_keeps_the_old_choice(tmp_path, monkeypatch):
    """A grid.yaml written before issue 60 (no lr_trials, warm_seed named, no budget) runs as it ran: one trial per
    rate, of seed warm_seed, from the one warm start, the chosen trial moved into that seed's cell (``trained_as``)
    rather than trained again, PPO-free budget policy-batches; its Design line says each of these."""
    import yaml

    data = _grid_data(implementations=["calculator-grpo"], seeds=[0], warm_seed=0, eval={"n": 2, "seed": 7},
                      validation={"n": 2, "seed": 5151})
    for key in ("lr_trials", "budget", "passk", "mu"):
        data.pop(key, None)
    data["options"].update(steps=1, prompts_per_step=2, group_size=2, max_new_tokens_per_turn=8,
                           max_completion_tokens=16)
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(data))
    grid = Grid.load(str(path))
    assert (grid.trial_is_cell, grid.trial_seeds(), grid.warm_seeds, grid.budget) == (True, (0,), (0,),
                                                                                       "policy-batches")
    gdir = GridDir(tmp_path / "g")
    calls = compare_stages_in_process(monkeypatch)
    assert run_grid(grid, gdir, out=sys.stderr, grid_arg=str(path)) == 0
    assert calls == ["_warm", "_warmeval", "_trial", "_trial", "_cell"]
    choice = gdir.choice("calculator-grpo")
    assert [t["lr"] for t in choice["trials"]] == grid.sweep_lrs("calculator-grpo") and choice["seed"] == 0
    assert "seeds" not in choice and "bracketed" not in choice
    r = gdir.result("calculator-grpo", 0)
    assert r["trained_as"].startswith("the chosen learning-rate trial") and r["config"]["lr"] == choice["lr"]
    assert not (gdir.trial("calculator-grpo", choice["lr"]) / "run").exists()  # moved into the cell
    assert r["budget"]["counts"] == "policy-batches" and "lr_trials" not in yaml.safe_load(
        (gdir.path / "grid.yaml").read_text())
    new = Grid.load("tiny")
    assert [a == b for a, b in zip(grid.design(), new.design())] == [False, False, False]

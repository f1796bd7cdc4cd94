"""The learning presets' benchmark (benchmarks/learn_presets.py), the presets' structure and default_for
(lab.recipes), and what the Lab and node pages show of them (app.presentation.learning). Issue 59."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch
import yaml

from app.presentation import learning
from benchmarks import learn_presets as lp
from lab import recipes

TINY = ["steps=2", "prompts_per_step=2", "group_size=2", "sft_steps=1", "max_new_tokens_per_turn=8",
        "max_completion_tokens=16"]


def fake_record(env, arm, seed, rewards, heldout, memory=None) -> dict:
    record = {"env": env, "arm": arm, "seed": seed, "impl": f"{env}-grpo", "preset": "learn", "model": "tiny",
              "steps": len(rewards), "rewards": rewards, "train_wall_s": 100.0 + seed,
              "step_time": [{"step": i + 1, "rollout_s": 2.0, "update_s": 1.0, "step_s": 3.0}
                            for i in range(len(rewards))],
              "heldout": {"by_problem": heldout, "mean": sum(heldout) / len(heldout)},
              "provenance": {"load_1min": {"start": 0.5, "end": 1.5}, "cpu": {"model": "test cpu"}, "commit": "abc"}}
    if memory is not None:
        record["memory_r1"] = {"em_by_question": memory}
    return record


def write(out: Path, record: dict) -> None:
    path = lp.record_path(out, record["env"], record["arm"], record["seed"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))


def make_env(out, env, seeds, rl_rewards, control_rewards, memory=False):
    for seed in seeds:
        write(out, fake_record(env, "rl", seed, rl_rewards(seed), [1, 1, 0, 1],
                               memory=[1, 1, 0, 1, 1] if memory else None))
        write(out, fake_record(env, "control", seed, control_rewards(seed), [0, 1, 0, 0],
                               memory=[0, 1, 0, 0, 1] if memory else None))


# -- the presets --

def test_every_environment_the_trainer_lists_has_a_learning_preset():
    from reference_impls import registry

    listed = {impl.env for impl in registry.implementations()}
    assert set(lp.env_names()) == listed and len(listed) == 32  # 31 environments and the gymnasium adapter
    for env, preset in recipes.env_presets("learn").items():
        config = lp.stage_config(env, 0, "rl")
        assert config["impl"] == preset["impl"] and config["model"] == "smollm2-135m-instruct"


def test_control_differs_from_rl_only_in_learning_rate_and_skipped_update():
    rl, control = lp.stage_config("memory", 1, "rl"), lp.stage_config("memory", 1, "control")
    assert control["lr"] == lp.CONTROL_LR != rl["lr"]
    assert control["update"] is False and rl.get("update", True) is True  # --no-update: lr 0's episodes, no loss
    by_design = ("lr", "update")
    assert {k: v for k, v in control.items() if k not in by_design} == {k: v for k, v in rl.items() if k not in by_design}
    assert rl["seed"] == 1 and rl["checkpoint_every"] == rl["steps"]
    assert rl["sft_env"] == "memory-format"  # the memory preset's own settings apply


def test_a_stage_records_the_precision_it_runs_in():
    from reference_impls.common import native_bf16

    assert lp.stage_config("memory", 0, "rl")["precision"] == "fp32"  # a preset without it: the default
    here = "bf16" if native_bf16(torch.device("cpu")) else "fp32"
    assert lp.stage_config("memory", 0, "rl", overrides={"precision": "auto"})["precision"] == here
    assert recipes.env_presets("learn")["calculator"]["settings"]["precision"] == "auto"
    assert lp.stage_config("calculator", 0, "rl")["precision"] == here  # resolved here, where stages run


def test_stage_config_names_an_unknown_environment_and_a_bad_setting():
    with pytest.raises(SystemExit, match="--env nope: no learning preset"):
        lp.stage_config("nope", 0, "rl")
    with pytest.raises(SystemExit, match="invalid config.*group_size"):
        lp.stage_config("calculator", 0, "rl", overrides={"group_size": -3})
    with pytest.raises(SystemExit, match="expected KEY=VALUE"):
        lp.parse_overrides(["steps"])


def test_unmeasured_presets_keep_the_quick_demo_and_say_so():
    # zoom has not been measured by the benchmark; the calculator has, and learns
    assert recipes.measured("zoom")["status"] == recipes.NOT_MEASURED
    assert recipes.default_for("zoom") == "quick"
    status = recipes.learning_status("zoom")
    assert "has not been measured yet" in status["text"] and "tiny random model" in status["text"]
    assert recipes.default_for("calculator") == "learn"
    assert recipes.measured("calculator")["status"] == recipes.LEARNS


@pytest.fixture
def recipe_folder(tmp_path, monkeypatch):
    """A copy of lab/recipes to write measured blocks into, with the module's caches cleared around it."""
    import shutil

    folder = tmp_path / "recipes"
    shutil.copytree(recipes.FOLDER, folder, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    monkeypatch.setattr(recipes, "FOLDER", folder)
    recipes.load.cache_clear()
    recipes.env_presets.cache_clear()
    yield folder
    recipes.load.cache_clear()
    recipes.env_presets.cache_clear()


def test_default_for_follows_the_shipped_records(tmp_path, recipe_folder):
    out = tmp_path / "records"
    make_env(out, "zoom", [0, 1, 2], lambda s: [0.1, 0.5, 0.8, 0.9 + 0.01 * s], lambda s: [0.1, 0.1, 0.2, 0.1])
    make_env(out, "sql", [0, 1, 2], lambda s: [0.1, 0.1, 0.1, 0.1 + 0.1 * (s - 1)], lambda s: [0.1, 0.1, 0.1, 0.1])
    for env in ("zoom", "sql"):
        lp.ship(lp.env_report(out, env), recipe_folder / "learn")
    recipes.load.cache_clear()
    recipes.env_presets.cache_clear()
    assert recipes.measured("zoom")["status"] == recipes.LEARNS and recipes.default_for("zoom") == "learn"
    # measured not to learn: "Run this" opens the preset that states the figures, never the quick demo
    assert recipes.measured("sql")["status"] == recipes.DOES_NOT_LEARN and recipes.default_for("sql") == "learn"
    assert "did not learn" in recipes.note("learn", "sql") and "[" in recipes.note("learn", "sql")
    unmeasured = [e for e in recipes.env_presets("learn") if recipes.measured(e)["status"] == recipes.NOT_MEASURED]
    assert unmeasured and all(recipes.default_for(e) == "quick" for e in unmeasured)
    # the settings and comments above the block are kept
    text = (recipe_folder / "learn" / "zoom.yaml").read_text()
    assert text.startswith("# Learning preset for zoom") and "impl: zoom-grpo" in text
    assert yaml.safe_load(text)["measured"]["seeds"] == 3


def test_ship_refuses_fewer_than_three_seeds(tmp_path, recipe_folder):
    out = tmp_path / "records"
    make_env(out, "zoom", [0, 1], lambda s: [0.1, 0.9], lambda s: [0.1, 0.1])
    with pytest.raises(SystemExit, match="2 paired seeds recorded; the criterion needs 3"):
        lp.ship(lp.env_report(out, "zoom"), recipe_folder / "learn")


def test_a_bad_measured_status_is_named(recipe_folder):
    (recipe_folder / "learn" / "zoom.yaml").write_text("impl: zoom-grpo\nsettings: {}\nmeasured: {status: great}\n")
    with pytest.raises(ValueError, match="zoom.yaml: measured.status is 'great'"):
        recipes.env_presets("learn")


# -- the report --

def test_report_learns_with_three_positive_seed_differences(tmp_path):
    out = tmp_path / "records"
    make_env(out, "calculator", [0, 1, 2], lambda s: [0.2, 0.4, 0.6, 0.8 + 0.05 * s, 0.9],
             lambda s: [0.2, 0.2, 0.3, 0.2, 0.3 + 0.05 * s])
    line = lp.env_report(out, "calculator")
    assert line["seeds"] == 3 and line["steps"] == 5
    # the last quarter of 5 steps is the last 2
    assert line["reward_last"] == pytest.approx(((0.8 + 0.9) + (0.85 + 0.9) + (0.9 + 0.9)) / 6)
    assert line["control_last"] == pytest.approx(((0.2 + 0.3) + (0.2 + 0.35) + (0.2 + 0.4)) / 6)
    assert line["diff"] == pytest.approx(line["reward_last"] - line["control_last"])
    assert line["reward_first"] == pytest.approx(0.2)
    assert 0 < line["ci_low"] < line["diff"] < line["ci_high"]
    assert line["learns"] is True
    assert line["wall_s_median"] == 101.0
    assert line["heldout_before"]["mean"] == 0.25 and line["heldout_after"]["mean"] == 0.75
    assert line["heldout_before"]["low"] <= 0.25 <= line["heldout_before"]["high"]
    assert line["step_time"] == {"rollout_s": 2.0, "update_s": 1.0, "step_s": 3.0}
    for key in ("env", "preset", "seeds", "wall_s_median", "reward_first", "reward_last", "control_last", "diff",
                "ci_low", "ci_high", "heldout_before", "heldout_after", "learns"):
        assert key in line


def test_two_seeds_never_learn_and_a_straddling_interval_does_not_either(tmp_path):
    out = tmp_path / "two"
    make_env(out, "calculator", [0, 1], lambda s: [0.2, 0.9 + 0.01 * s], lambda s: [0.2, 0.2])
    line = lp.env_report(out, "calculator")
    assert line["ci_low"] > 0 and line["learns"] is False  # positive, but 2 seeds
    out = tmp_path / "mixed"
    make_env(out, "calculator", [0, 1, 2], lambda s: [0.2, [0.9, 0.1, 0.5][s]], lambda s: [0.2, 0.4])
    line = lp.env_report(out, "calculator")
    assert line["ci_low"] < 0 < line["ci_high"] and line["learns"] is False


def test_report_pairs_seeds_and_lists_an_unpaired_stage(tmp_path):
    out = tmp_path / "records"
    make_env(out, "calculator", [0, 1, 2], lambda s: [0.2, 0.9], lambda s: [0.2, 0.2])
    write(out, fake_record("calculator", "rl", 3, [0.2, 0.9], [1, 1, 1, 1]))
    line = lp.env_report(out, "calculator")
    assert line["seeds"] == 3 and line["unpaired_stages"] == ["rl-s3"]


def test_report_json_has_a_line_per_environment_including_unmeasured(tmp_path, capsys):
    out = tmp_path / "records"
    make_env(out, "calculator", [0, 1, 2], lambda s: [0.2, 0.9], lambda s: [0.2, 0.2])
    lp.main(["--report", "--json", "--dir", str(out)])
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["env"] for x in lines] == lp.env_names()
    by_env = {x["env"]: x for x in lines}
    assert by_env["calculator"]["learns"] is True and by_env["zoom"]["seeds"] == 0
    assert by_env["zoom"]["learns"] is False and by_env["zoom"]["diff"] is None


def test_memory_table_puts_rl_warm_start_and_add_only_side_by_side(tmp_path):
    out = tmp_path / "records"
    make_env(out, "memory", [0, 1, 2], lambda s: [0.0, 0.5], lambda s: [0.0, 0.0], memory=True)
    lp.add_only_path(out).write_text(json.dumps({"memory_r1": {"em_by_question": [1, 0, 0, 0, 1]}}))
    table = lp.env_report(out, "memory")["memory_r1"]
    assert table["questions"] == 5 and table["seeds"] == 3
    assert table["rl"]["mean"] == 0.8 and table["warm_start"]["mean"] == 0.4 and table["add_only"]["mean"] == 0.4
    assert table["rl_vs_warm_start"]["difference"] == pytest.approx(0.4)
    assert table["rl_vs_add_only"]["difference"] == pytest.approx(0.4)
    assert "exact match" in table["metric"]


# -- resuming --

def test_a_half_written_stage_is_redone_and_a_finished_one_is_not(tmp_path, monkeypatch):
    out = tmp_path / "records"
    write(out, fake_record("calculator", "rl", 0, [0.1, 0.2], [1, 0]))
    finished = lp.record_path(out, "calculator", "rl", 0).read_text()
    stale = out / "calculator" / ".work" / "control-s0"
    stale.mkdir(parents=True)
    (stale / "leftover.txt").write_text("a stopped attempt")
    launched = []

    def fake_run(cmd, cwd=None, **kwargs):
        work = Path(cmd[cmd.index("--work") + 1])
        spec = json.loads((work / "spec.json").read_text())
        launched.append((spec["arm"], spec["seed"], sorted(p.name for p in work.iterdir())))
        Path(spec["record"]).write_text(json.dumps(fake_record("calculator", spec["arm"], spec["seed"], [0.1], [0])))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(lp.subprocess, "run", fake_run)
    assert lp.run(out, ["calculator"], [0], model="tiny", overrides=lp.parse_overrides(TINY)) == 1
    assert launched == [("control", 0, ["spec.json"])]  # only the missing stage, in a fresh folder
    assert lp.record_path(out, "calculator", "rl", 0).read_text() == finished
    assert not stale.exists()  # cleaned once recorded
    assert lp.run(out, ["calculator"], [0], model="tiny") == 0


def test_a_failed_stage_stops_the_run_and_keeps_its_folder(tmp_path, monkeypatch):
    out = tmp_path / "records"
    monkeypatch.setattr(lp.subprocess, "run", lambda cmd, cwd=None, **kw: subprocess.CompletedProcess(cmd, 1))
    with pytest.raises(SystemExit, match="stage rl-s0 of calculator failed.*redone on the next run"):
        lp.run(out, ["calculator"], [0], model="tiny", overrides=lp.parse_overrides(TINY))
    assert (out / "calculator" / ".work" / "rl-s0" / "spec.json").is_file()
    assert not lp.record_path(out, "calculator", "rl", 0).exists()


# -- the band functions --

BLOCK = {"status": "learns", "seeds": 3, "wall_s_median": 240.0, "load_1min_max": 1.8, "cpu": "test cpu",
         "rewards": {"rl": [[0.2, 0.5, 0.8], [0.3, 0.6, 0.9], [0.1, 0.4, 0.7]],
                     "control": [[0.2, 0.2, 0.2], [0.3, 0.3, 0.3], [0.1, 0.1, 0.1]]}}


def test_band_is_mean_and_spread_over_seeds():
    band = learning.measured_band("zoom", BLOCK)
    assert [r["mean"] for r in band["rl"]] == pytest.approx([0.2, 0.5, 0.8])
    assert (band["rl"][2]["low"], band["rl"][2]["high"]) == (0.7, 0.9)
    assert band["control"][0] == {"step": 1, "mean": pytest.approx(0.2), "low": 0.1, "high": 0.3, "seeds": 3}
    assert "4.0 min" in band["time_text"] and "3 seeds" in band["time_text"] and "1.8" in band["time_text"]
    assert learning.measured_band("zoom", {"status": "not measured"}) is None
    assert learning.band_of([[0.1, None], [0.3, 0.5]]) == [
        {"step": 1, "mean": pytest.approx(0.2), "low": 0.1, "high": 0.3, "seeds": 2},
        {"step": 2, "mean": 0.5, "low": 0.5, "high": 0.5, "seeds": 1}]


def test_band_check_says_whether_a_live_run_is_within():
    band = learning.measured_band("zoom", BLOCK)
    within = learning.band_check([0.25, 0.45], band)
    assert within["state"] == "within" and within["inside"] == 2 and "Within the measured band" in within["text"]
    assert learning.band_check([0.0, 0.0], band)["state"] == "below"
    above = learning.band_check([0.9, 0.9, 1.0, 1.0], band)
    assert above["state"] == "above" and above["steps"] == 3 and "later steps are not compared" in above["text"]
    assert learning.band_check([], band)["state"] == "no steps"
    assert learning.band_check([0.5], None)["state"] == "no band"


def test_measured_curve_spec_draws_both_arms_and_the_live_run():
    band = learning.measured_band("zoom", BLOCK)
    spec = learning.measured_curve_spec("zoom", band, live_rewards=[0.3])
    arms = {row["arm"] for row in spec["data"]["values"]}
    assert arms == {"RL (learning preset)", "control (no update)", "this run"}
    assert len(spec["data"]["values"]) == 3 + 3 + 1
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["area", "line"]
    assert spec["layer"][0]["encoding"]["y2"] == {"field": "high"}
    unmeasured = next(e for e in recipes.env_presets("learn") if recipes.measured(e)["status"] == recipes.NOT_MEASURED)
    assert learning.measured_curve_spec(unmeasured) is None  # nothing measured there yet
    shipped = learning.measured_curve_spec("memory")  # the shipped records: 3 seeds, both arms
    assert {row["arm"] for row in shipped["data"]["values"]} == {"RL (learning preset)", "control (no update)"}


# -- the whole harness on the tiny model --

@pytest.mark.slow
def test_end_to_end_on_the_tiny_model(tmp_path):
    """Both arms of one seed on the calculator through the trainer's CLI, then the report; a second run redoes
    nothing. About 1-2 minutes on an idle 2-core machine (the tiny model: the harness, not a measurement)."""
    import sys

    out = tmp_path / "records"
    args = [sys.executable, "-m", "benchmarks.learn_presets", "run", "--env", "calculator", "--seeds", "0",
            "--model", "tiny", "--eval-n", "4", "--dir", str(out), *[x for s in TINY for x in ("--set", s)]]
    subprocess.run(args, cwd=lp.ROOT, check=True)
    rl = json.loads(lp.record_path(out, "calculator", "rl", 0).read_text())
    control = json.loads(lp.record_path(out, "calculator", "control", 0).read_text())
    assert rl["steps"] == 2 and len(rl["rewards"]) == 2 and len(rl["step_time"]) == 2
    assert {"rollout_s", "update_s", "step_s"} <= set(rl["step_time"][0])
    assert 0 < rl["warm_start_s"] < rl["train_wall_s"]  # TINY has a warm start; its time is part of the run's
    assert control["config"]["lr"] == lp.CONTROL_LR and rl["config"]["lr"] != lp.CONTROL_LR
    assert rl["config"]["seed"] == control["config"]["seed"] == 0
    assert len(rl["heldout"]["by_problem"]) == 4 and "greedy" in rl["heldout"]["metric"]
    prov = rl["provenance"]
    assert prov["commit"] and prov["versions"]["torch"] and set(prov["load_1min"]) == {"start", "end"}
    assert rl["train_wall_s"] > 0 and rl["wall_s"] >= rl["train_wall_s"]
    assert not (out / "calculator" / ".work" / "rl-s0").exists()
    line = lp.env_report(out, "calculator")
    assert line["seeds"] == 1 and line["learns"] is False and line["ci_low"] is None
    assert line["heldout_after"] is not None
    before = lp.record_path(out, "calculator", "rl", 0).stat().st_mtime
    assert lp.run(out, ["calculator"], [0], model="tiny", overrides=lp.parse_overrides(TINY)) == 0
    assert lp.record_path(out, "calculator", "rl", 0).stat().st_mtime == before


@pytest.mark.slow
def test_memory_stages_score_the_memory_r1_comparison_on_tiny(tmp_path):
    """The memory environment's stages on the tiny model (tiny Answer Agent too): each arm's record has the
    manager's exact match on held-out sessions, the add-only stage the baseline's, and the report the table."""
    out = tmp_path / "records"
    overrides = lp.parse_overrides([*TINY, "env_options.answer_model=tiny", "max_new_tokens_per_turn=8",
                                    "max_completion_tokens=8"])
    lp.run(out, ["memory"], [0], model="tiny", overrides=overrides, eval_n=4, memory_sessions=2)
    rl = json.loads(lp.record_path(out, "memory", "rl", 0).read_text())
    questions = len(rl["memory_r1"]["em_by_question"])
    assert questions > 0 and rl["memory_r1"]["answer_model"] == "tiny"
    add_only = json.loads(lp.add_only_path(out).read_text())
    assert len(add_only["memory_r1"]["em_by_question"]) == questions
    table = lp.env_report(out, "memory")["memory_r1"]
    assert set(table) >= {"rl", "warm_start", "add_only", "metric"} and table["questions"] == questions


def test_report_refuses_records_of_different_settings(tmp_path):
    out = tmp_path / "records"
    make_env(out, "calculator", [0, 1, 2], lambda s: [0.2, 0.9], lambda s: [0.2, 0.2])
    odd = fake_record("calculator", "rl", 1, [0.2, 0.9], [1, 1, 1, 1])
    odd["model"] = "smollm2-135m-instruct"
    write(out, odd)
    with pytest.raises(SystemExit, match="different settings"):
        lp.env_report(out, "calculator")


def test_a_record_from_before_an_option_reads_as_its_default(tmp_path):
    """Records written before ``precision`` existed ran in float32: they pair with fp32 records, not bf16 ones,
    and a bf16 report says so in its line and its table row."""
    out = tmp_path / "records"
    make_env(out, "calculator", [0, 1, 2], lambda s: [0.2, 0.9], lambda s: [0.2, 0.2])
    newer = fake_record("calculator", "rl", 1, [0.2, 0.9], [1, 1, 1, 1])
    newer["config"] = {"precision": "fp32"}
    write(out, newer)
    assert lp.env_report(out, "calculator")["precision"] == "fp32"
    newer["config"] = {"precision": "bf16"}
    write(out, newer)
    with pytest.raises(SystemExit, match="different settings"):
        lp.env_report(out, "calculator")
    for seed in (0, 1, 2):
        for arm in ("rl", "control"):
            record = json.loads(lp.record_path(out, "calculator", arm, seed).read_text())
            record["config"] = {"precision": "bf16"}
            write(out, record)
    line = lp.env_report(out, "calculator")
    assert line["precision"] == "bf16" and lp.measured_block(line)["precision"] == "bf16"
    assert "3.0 s: 2.0 + 1.0 (bf16)" in lp.markdown_table([line])


def test_settings_text_and_memory_rows():
    text = learning.settings_text("memory")
    settings = recipes.env_presets("learn")["memory"]["settings"]
    assert text.startswith(f"memory-grpo, smollm2-135m-instruct: {settings['sft_steps']} warm-start steps on "
                           f"memory-format, then {settings['steps']} RL")
    assert "levels [1]" in learning.settings_text("calculator")
    assert learning.settings_text("nope") == ""
    block = {"memory_r1": {"rl": {"mean": 0.5, "low": 0.4, "high": 0.6},
                           "warm_start": {"mean": 0.3, "low": 0.2, "high": 0.4},
                           "add_only": {"mean": 0.35, "low": 0.25, "high": 0.45},
                           "rl_vs_warm_start": {"difference": 0.2, "low": 0.1, "high": 0.3},
                           "rl_vs_add_only": {"difference": 0.15, "low": -0.05, "high": 0.35}}}
    rows = learning.memory_r1_rows(block)
    assert [r["manager"] for r in rows] == ["RL manager", "warm start (no RL)", "add-only baseline"]
    assert rows[1]["rl_minus_this"] == "+0.200 [+0.100, +0.300]" and "rl_minus_this" not in rows[0]
    assert learning.memory_r1_rows({}) == []


def test_a_small_validation_set_still_avoids_every_shipped_test_problem():
    """A tuning run that scores fewer validation problems than the shipped test set (--eval-n 20) must still keep
    clear of all ``EVAL_N`` test problems, not only the first 20."""
    from lab.compare.heldout import heldout_config
    from reference_impls.envs import get_env
    from reference_impls.measure.evaluate import problem_identity

    for env in ("calculator", "frozenlake", "sql"):
        options = lp.stage_config(env, 0, "rl", "tiny")["env_options"]
        val = lp.validation_set(env, options, 20)
        assert len(val) == 20
        test = get_env(env).problems("heldout", n=lp.EVAL_N, seed=lp.EVAL_SEED,
                                     config=heldout_config({"env": env, "env_options": options}))
        assert not {problem_identity(p) for p in val} & {problem_identity(p) for p in test}


def test_impl_settings_reach_only_the_measured_implementation():
    """FrozenLake's preset measured frozenlake-grpo with 4 minibatch updates per batch; PPO (its own minibatches)
    and DPO (offline) on the same environment take the preset's other settings without it."""
    from lab import catalog

    preset = recipes.env_presets("learn")["frozenlake"]
    assert preset["impl_settings"] == {"mini_batches": 4}
    measured = catalog.preset_config(catalog.get(preset["impl"]), "learn")
    assert measured["mini_batches"] == 4 and measured["sft_steps"] == 12
    for other in ("frozenlake-ppo", "frozenlake-dpo"):
        config = catalog.preset_config(catalog.get(other), "learn")
        assert config.get("mini_batches", 1) == 1 and config["sft_steps"] == 12


def test_the_markdown_table_has_a_row_per_environment_with_its_figures():
    measured = {"env": "calculator", "seeds": 3, "reward_last": 0.9, "control_last": 0.3, "diff": 0.6,
                "ci_low": 0.4, "ci_high": 0.8, "learns": True, "heldout_before": {"mean": 0.5},
                "heldout_after": {"mean": 0.75}, "wall_s_median": 176.4, "load_1min_max": 2.14,
                "step_time": {"step_s": 18.1, "rollout_s": 7.2, "update_s": 10.7}}
    short = {"env": "sql", "seeds": 1, "learns": False}
    rows = lp.markdown_table([measured, short]).splitlines()
    assert len(rows) == 4 and rows[0].count("|") == rows[2].count("|") == rows[3].count("|")
    cells = [c.strip() for c in rows[2].strip("|").split("|")]
    assert cells == ["calculator", "3", "0.900 / 0.300", "+0.600 [+0.400, +0.800]", "yes", "0.50 -> 0.75", "176 s",
                     "18.1 s: 7.2 + 10.7", "2.1"]
    assert rows[3].startswith("| sql | 1 | not measured")

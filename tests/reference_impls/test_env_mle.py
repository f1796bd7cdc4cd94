"""The mle env (reference_impls/envs/mle.py): data sets by family, level and split, the hidden labels kept out of
the sandbox, the reward on hand-computed predictions, trial runs scored on held-out training rows, bad programs
and bad output named in the observation, the code environment's hostile programs contained, and two training
steps through the CLI."""
from __future__ import annotations

import os

import pytest

from reference_impls.envs import get_env
from reference_impls.envs.mle import FAMILIES, SPLITS, read_predictions, score
from reference_impls.options import ConfigError

from episode_replay import play
from hostile_programs import HOSTILE_PROGRAMS

SPEC = get_env("mle")
FAST = {"wall_seconds": 3.0, "cpu_seconds": 1}


def _problem(family="regression", level=1, split="train"):
    return SPEC.problems(split, 1, families=(family,), levels=(level,))[0]


# -- data sets --

def test_data_sets_are_seeded_and_shaped_by_their_options():
    a = SPEC.problems("train", 12, seed=3)
    assert a == SPEC.problems("train", 12, seed=3) and a != SPEC.problems("train", 12, seed=4)
    assert {p.family for p in a} == set(FAMILIES)
    assert {len(p.columns) for p in SPEC.problems("train", 6, levels=(1,))} == {2}
    assert {len(p.columns) for p in SPEC.problems("train", 6, levels=(2,))} == {3, 4}
    p = SPEC.problems("train", 1, n_train=40, n_test=10)[0]
    assert len(p.train) == 40 and len(p.test) == len(p.test_labels) == 10
    assert all(len(row) == len(p.columns) for row in p.test)
    assert {lab for p in SPEC.problems("train", 6, families=("multiclass",)) for lab in p.test_labels} == {0, 1, 2}


def test_the_three_splits_hold_different_hidden_rules():
    rows = {split: {p.train[0] for s in (0, 1) for p in SPEC.problems(split, 60, seed=s)} for split in SPLITS}
    assert not rows["train"] & rows["heldout"] and not rows["train"] & rows["validation"]
    assert not rows["validation"] & rows["heldout"]
    with pytest.raises(ValueError, match="split must be one of"):
        SPEC.problems("test", 2)


@pytest.mark.parametrize("split", SPLITS)
def test_the_demonstration_trains_a_model_that_beats_the_baseline(split):
    for p in SPEC.problems(split, 6, seed=1):
        segments = SPEC.demonstrate(p)
        assert [role for role, _ in segments] == ["model", "env", "model"]
        assert segments[1][1].startswith("<result>validation ")
        result = play(SPEC.make(p), [text for role, text in segments if role == "model"])
        assert result.done and result.info["sandbox_status"] == "ok" and result.reward > 0.5, (p.family, result.info)


# -- the reward --

def test_the_score_by_hand():
    # R^2 = 1 - SSE/SST: labels 1, 2, 3 (mean 2, SST 2); predictions 1, 2, 4 (SSE 1) -> 0.5
    assert score([1.0, 2.0, 4.0], [1.0, 2.0, 3.0], classes=False) == (0.5, 0.5)
    metric, reward = score([3.0, 3.0, 3.0], [1.0, 2.0, 3.0], classes=False)
    assert metric < 0 and reward == 0.0  # a constant far off: negative R^2, no reward
    # accuracy 3/4, majority share 2/4 -> (0.75 - 0.5) / 0.5 = 0.5; guessing the majority earns 0
    assert score([1.0, 0.0, 1.0, 1.0], [1.0, 0.0, 0.0, 1.0], classes=True) == (0.75, 0.5)
    assert score([1.0] * 4, [1.0, 0.0, 0.0, 1.0], classes=True) == (0.5, 0.0)


def test_the_submission_is_scored_on_the_hidden_labels():
    p = _problem("binary")
    answers = "\\n".join(str(int(v)) for v in p.test_labels)  # the labels themselves, baked into a program
    result = play(SPEC.make(p), [f"<submit>print('{answers}')</submit>"])
    assert result.reward == 1.0 and result.info["metric"] == 1.0 and result.info["correct"]
    flipped = "\\n".join(str(1 - int(v)) for v in p.test_labels)
    result = play(SPEC.make(p), [f"<submit>print('{flipped}')</submit>"])
    assert result.reward == 0.0 and result.info["metric"] == 0.0 and not result.info["correct"]


def test_the_hidden_labels_never_enter_the_sandbox():
    p = _problem("regression")
    env = SPEC.make(p)
    env.reset()
    obs = env.step("<run>import os\nprint(sorted(os.listdir('.')))\nprint(open('test.csv').read())</run>").observation
    assert "'test.csv'" in obs and "'train.csv'" in obs
    header = obs.split("output: ")[1].splitlines()[1]
    assert header == ",".join(p.columns)  # no y column
    assert not any(f"{y:.3f}" in obs for y in p.test_labels)


def test_a_trial_is_scored_on_held_out_training_rows():
    p = _problem("regression")
    env = SPEC.make(p, validation_rows=10)
    env.reset()
    held = [f"{row[-1]:.3f}" for row in p.train[-10:]]
    obs = env.step("<run>print('" + "\\n".join(held) + "')</run>").observation
    assert obs == "<result>validation R^2 1.000 on 10 rows (reward 1.000)</result>"


@pytest.mark.parametrize("program, named", [
    ("print(1)", "expected 30 predictions (one a line, one per row of test.csv), got 1 lines"),
    ("for _ in range(30):\n    print('one')", "line 1 of the output is not a number: 'one'"),
    ("for _ in range(30):\n    print('nan')", "line 1 of the output is not a number"),
    ("raise ValueError('no model')", "did not finish cleanly (error): ValueError: no model"),
    ("", "the program is empty"),
])
def test_bad_programs_and_bad_output_are_named(program, named):
    p = _problem("regression")  # 30 test rows; a trial holds out as many training rows here
    env = SPEC.make(p, validation_rows=30)
    env.reset()
    assert named in env.step(f"<run>{program}</run>").observation
    result = play(SPEC.make(p), [f"<submit>{program}</submit>"])
    assert result.done and result.reward == 0.0 and named in result.info["error"]


def test_limits_runs_and_length():
    p = _problem()
    env = SPEC.make(p, max_runs=1, max_code_chars=100)
    env.reset()
    assert "at most 100" in env.step("<run>" + "x = 1\n" * 30 + "</run>").observation
    last = env.step("<run>print(1)</run>")
    assert last.done and last.info["truncated"] and "trial runs were used" in last.info["error"]
    result = play(SPEC.make(p), ["I would fit a line."])
    assert result.done and result.reward == 0.0 and "no <run> or <submit>" in result.info["error"]
    with pytest.raises(ConfigError, match="leaves no training rows"):
        SPEC.options({"n_train": 20, "validation_rows": 20})


def test_read_predictions_takes_numbers_only():
    assert read_predictions("1\n\n2.5\n-3e2\n", 3) == ([1.0, 2.5, -300.0], "")
    values, error = read_predictions("1\n__import__('os')\n2", 3)
    assert values is None and "line 2" in error


# -- the code environment's hostile programs, run as trials and as submissions --

@pytest.mark.parametrize("hostile", HOSTILE_PROGRAMS)
def test_hostile_programs_are_contained(hostile):
    p = _problem()
    env = SPEC.make(p, **FAST)
    env.reset()
    obs = env.step(f"<run>{hostile}</run>")
    assert not obs.done and obs.observation.startswith("<result>error: ")
    result = play(SPEC.make(p, **FAST), [f"<submit>{hostile}</submit>"])
    assert result.done and result.reward == 0.0 and not result.info["correct"] and os.getpid() > 0


def test_trains_two_steps_through_the_cli(tmp_path):
    from reference_impls import train

    out = tmp_path / "mle"
    rc = train.main(["--impl", "mle-grpo", "--model", "tiny", "--steps", "2", "--prompts-per-step", "2",
                     "--group-size", "2", "--max-new-tokens-per-turn", "16", "--max-completion-tokens", "48",
                     "--sft-steps", "1", "--sft-examples", "2", "--out", str(out)])
    assert rc in (0, None)
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2

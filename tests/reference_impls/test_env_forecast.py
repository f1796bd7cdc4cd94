"""The forecast env (reference_impls/envs/forecast.py): series by level and split, the numeric tools against
hand-computed values, bad calls named in the observation, the reward on hand-picked forecasts, the demonstration
forecasting within tolerance, the row on other-time-series, and two training steps through the CLI."""
from __future__ import annotations

import json
import math

import pytest

from reference_impls.envs import get_env
from reference_impls.envs.forecast import (SPLITS, ForecastConfig, ForecastEnv, Problem, cycle_fit, line_fit,
                                           parse_forecast, run_tool)
from reference_impls.options import ConfigError

from episode_replay import play

SPEC = get_env("forecast")


# -- series and splits --

def test_series_are_seeded_and_levels_pick_trend_and_cycle():
    a = SPEC.problems("train", 12, seed=3)
    assert a == SPEC.problems("train", 12, seed=3) and a != SPEC.problems("train", 12, seed=4)
    trend = SPEC.problems("train", 10, levels=(1,))
    assert all(p.period == 0 and p.amplitude == 0 and p.slope != 0 for p in trend)
    cycle = SPEC.problems("train", 10, levels=(2,))
    assert all(p.period in (4, 6, 7, 12) and p.amplitude > 0 and p.slope == 0 for p in cycle)
    both = SPEC.problems("train", 10, levels=(3,))
    assert all(p.period and p.amplitude and p.slope for p in both)
    long = SPEC.problems("train", 4, length=100, max_horizon=2)
    assert all(len(p.values) == 100 and 1 <= p.horizon <= 2 and p.target_step == 99 + p.horizon for p in long)


def test_noise_is_seeded_and_zero_noise_gives_the_expected_values():
    exact = SPEC.problems("train", 6, noise=0.0)
    assert all(v == round(p.expected(t), 2) for p in exact for t, v in enumerate(p.values))
    noisy = SPEC.problems("train", 6, noise=0.3)
    assert any(v != round(p.expected(t), 2) for p in noisy for t, v in enumerate(p.values))
    assert noisy == SPEC.problems("train", 6, noise=0.3)


def test_the_three_splits_hold_different_series():
    def params(p):
        return (p.difficulty, p.level, p.slope, p.period, p.amplitude, p.phase)

    drawn = {split: {params(p) for s in (0, 1) for p in SPEC.problems(split, 150, seed=s)} for split in SPLITS}
    assert all(len(v) > 100 for v in drawn.values())
    assert not drawn["train"] & drawn["heldout"]
    assert not drawn["train"] & drawn["validation"]
    assert not drawn["validation"] & drawn["heldout"]
    with pytest.raises(ValueError, match="split must be one of"):
        SPEC.problems("test", 3)


@pytest.mark.parametrize("split", SPLITS)
def test_the_demonstration_forecasts_within_tolerance(split):
    for p in SPEC.problems(split, 30, seed=1):
        segments = SPEC.demonstrate(p)
        call = segments[0][1]
        assert call == (f"<tool>cycle({p.period})</tool>" if p.period else f"<tool>trend({len(p.values)})</tool>")
        result = play(SPEC.make(p), [text for role, text in segments if role == "model"])
        assert result.done and result.reward == 1.0 and result.info["abs_error"] < 0.6, (p, result.info)


# -- the tools, by hand --

LINE = tuple(float(2 * t + 1) for t in range(10))  # y_t = 2t + 1, t = 0..9
PATTERN = (1.0, -1.0, 3.0, -3.0)  # a cycle of 4 summing to 0


def test_last_and_mean():
    assert run_tool("last(3)", LINE, 12) == "y_7..y_9: 15, 17, 19"
    assert run_tool("mean(4)", LINE, 12) == "mean of y_6..y_9: 16"
    assert run_tool(" LAST( 2 ) ", LINE, 12) == "y_8..y_9: 17, 19"
    long = tuple(float(t) for t in range(40))
    assert run_tool("last(30)", long, 41).startswith("y_16..y_39 (the last 24 of them): 16, 17")


def test_trend_extends_the_fitted_line_to_the_asked_step():
    assert line_fit(LINE[-4:], 3) == pytest.approx((2.0, 25.0))  # step 12 = 9 + 3: 2 * 12 + 1
    assert run_tool("trend(5)", LINE, 12) == "line through y_5..y_9: slope 2 per step; at t = 12: 25"


def test_cycle_separates_the_line_from_the_pattern():
    series = tuple(10 + 0.5 * t + PATTERN[t % 4] for t in range(16))
    line, offset = cycle_fit(series, 4, 18)
    assert line == pytest.approx(19.0) and offset == pytest.approx(PATTERN[18 % 4])  # 10 + 9, phase 2
    assert run_tool("cycle(4)", series, 18) == ("line + cycle of 4 fitted to y_0..y_15: line at t = 18: 19; "
                                                "cycle at t = 18: 3")
    plain, _ = line_fit(series, 0)
    assert plain != pytest.approx(0.5)  # a plain line through a cycle has a biased slope: what cycle() is for


@pytest.mark.parametrize("command, named", [
    ("last(0)", "last(k) needs k from 1 to 10 (the series has 10 values); got 0"),
    ("mean(11)", "mean(k) needs k from 1 to 10"),
    ("trend(1)", "trend(k) needs k from 2 to 10"),
    ("cycle(6)", "cycle(p) needs a cycle length p from 2 to 5; got 6"),
    ("last(2+2)", "last takes one whole number, e.g. last(6); got '2+2'"),
    ("last(-3)", "last takes one whole number"),
    ("mean(2.5)", "mean takes one whole number"),
    ("predict(3)", "unknown tool 'predict'; the tools are last, mean, trend, cycle"),
    ("__import__('os').system('ls')", "a call is name(k)"),
    ("last", "a call is name(k), e.g. last(6); got 'last'"),
])
def test_a_bad_call_is_named_in_the_observation_and_spends_the_call(command, named):
    problem = Problem(LINE, 3, 0, 1.0, 2.0, 0.0, 0.0, 1, "train", "hand")
    env = ForecastEnv(problem)
    env.reset()
    result = env.step(f"<tool>{command}</tool>")
    assert not result.done and result.observation.startswith("<result>error: ") and named in result.observation
    assert result.info["tool_calls"] == 1


# -- the reward --

HAND = Problem(LINE, 3, 0, 1.0, 2.0, 0.0, 0.0, 1, "train", "hand")  # forecast y_12 = 25


@pytest.mark.parametrize("answer, reward", [("25", 1.0), ("y_12 = 25.9", 1.0), ("24.01", 1.0), ("26.5", 0.0),
                                            ("-25", 0.0)])
def test_the_reward_is_one_within_tolerance_of_the_expected_value(answer, reward):
    result = ForecastEnv(HAND).step(f"<answer>{answer}</answer>")
    assert result.done and result.reward == reward and result.info["correct"] == (reward == 1.0)
    assert result.info["abs_error"] == pytest.approx(abs(float(answer.split("=")[-1]) - 25))


def test_the_tolerance_option_and_the_noise_free_target():
    assert ForecastEnv(HAND, ForecastConfig(tolerance=2.0)).step("<answer>26.5</answer>").reward == 1.0
    noisy = Problem(tuple(v + (0.4 if t % 2 else -0.4) for t, v in enumerate(LINE)), 3, 0, 1.0, 2.0, 0.0, 0.0, 1,
                    "train", "hand")
    assert ForecastEnv(noisy, ForecastConfig(tolerance=0.01)).step("<answer>25</answer>").reward == 1.0


@pytest.mark.parametrize("answer, named", [("about 25", "the forecast must be one number"),
                                           ("25 or 26", "the forecast must be one number"), ("", "got ''")])
def test_an_answer_that_is_not_one_number_earns_zero_and_says_why(answer, named):
    result = ForecastEnv(HAND).step(f"<answer>{answer}</answer>")
    assert result.done and result.reward == 0.0 and named in result.info["parse_error"]
    assert parse_forecast("1e9")[0] is None


def test_the_call_budget_and_a_turn_without_a_tag():
    env = ForecastEnv(HAND, ForecastConfig(max_tool_calls=1))
    env.reset()
    assert not env.step("<tool>last(2)</tool>").done
    end = env.step("<tool>last(2)</tool>")
    assert end.done and end.reward == 0.0 and end.info["truncated"] and "all 1 tool calls" in end.info["error"]
    assert play(ForecastEnv(HAND), ["about 25"]).reward == 0.0


def test_the_prompt_names_the_cycle_and_the_step_but_no_value():
    messages = ForecastEnv(HAND).reset()
    user = messages[1]["content"]
    assert "Forecast y_12 (3 steps after the last one)" in user and "It has no cycle." in user
    assert not any(str(int(v)) in user.split("Forecast")[0].replace("y_0 to y_9", "") for v in LINE[2:])
    cyclic = SPEC.problems("train", 1, levels=(2,))[0]
    assert f"a cycle of {cyclic.period} steps" in SPEC.make(cyclic).reset()[1]["content"]
    assert math.isfinite(cyclic.expected(cyclic.target_step))


def test_options_are_checked():
    with pytest.raises(ConfigError, match="--noise"):
        SPEC.options({"noise": -1.0})
    with pytest.raises(ConfigError, match="--levels"):
        SPEC.options({"levels": (4,)})


# -- the row and the trainer --

def test_the_row_serves_other_time_series(train_list_json):
    rows = {row["id"]: row for row in json.loads(train_list_json)}
    assert "other-time-series" in rows["forecast-grpo"]["nodes"] and rows["forecast-grpo"]["environment"] == "forecast"


def test_trains_two_steps_through_the_cli(tmp_path):
    from reference_impls import train

    out = tmp_path / "forecast"
    rc = train.main(["--impl", "forecast-grpo", "--model", "tiny", "--steps", "2", "--prompts-per-step", "2",
                     "--group-size", "2", "--max-new-tokens-per-turn", "16", "--max-completion-tokens", "48",
                     "--sft-steps", "1", "--sft-examples", "2", "--out", str(out)])
    assert rc in (0, None)
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2

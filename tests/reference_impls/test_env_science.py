"""The science env (reference_impls/envs/science.py): hidden laws by level and split, the reward on hand-computed
laws, the law parser on hostile input (it reads, never evaluates, model text), bad experiments named in the
observation, seeded noise, and two training steps through the CLI."""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from reference_impls.envs import get_env
from reference_impls.envs.science import (MAX_LAW_CHARS, SPLITS, LawError, Problem, ScienceEnv, ScienceConfig,
                                          evaluate, parse_law, parse_measure)
from reference_impls.options import ConfigError

from episode_replay import play

SPEC = get_env("science")


# -- problems and splits --

def test_problems_are_seeded_and_levels_pick_the_families():
    a = SPEC.problems("train", 30, seed=3)
    assert a == SPEC.problems("train", 30, seed=3) and len(a) == 30
    assert a != SPEC.problems("train", 30, seed=4)
    assert {p.family for p in SPEC.problems("train", 12, levels=(1,))} == {"linear"}
    assert {p.family for p in SPEC.problems("train", 12, levels=(2,))} == {"linear", "quadratic"}
    assert {p.family for p in SPEC.problems("train", 12, levels=(3,))} == {"linear", "quadratic", "exponential"}
    level1 = SPEC.problems("train", 20, levels=(1,))
    assert all(p.a == int(p.a) and p.b == int(p.b) and p.a != 0 for p in level1)
    assert all(len(p.eval_xs) == 7 for p in SPEC.problems("train", 5, eval_points=7))


def test_the_three_splits_hold_different_laws():
    laws = {split: {(p.family, p.a, p.b) for s in (0, 1) for p in SPEC.problems(split, 300, seed=s)}
            for split in SPLITS}
    assert all(laws.values())
    assert not laws["train"] & laws["heldout"]
    assert not laws["train"] & laws["validation"]
    assert not laws["validation"] & laws["heldout"]
    with pytest.raises(ValueError, match="split must be one of"):
        SPEC.problems("test", 3)


@pytest.mark.parametrize("split", SPLITS)
def test_the_demonstration_solves_its_problem(split):
    for p in SPEC.problems(split, 24, seed=1):
        segments = SPEC.demonstrate(p)
        assert segments[-1][0] == "model" and sum(role == "model" for role, _ in segments) == 4
        env = SPEC.make(p)
        result = play(env, [text for role, text in segments if role == "model"])
        assert result.done and result.reward == 1.0 and result.info["correct"], (p, result.info)
        # the readings it shows are the true law's values at x = 0, 1, 2
        assert segments[1][1] == f"<result>x = 0: y = {p.true_y(0):.6g}</result>"


# -- the reward --

LINE = Problem("linear", 2.0, 1.0, (0.0, 1.0, 2.0, 3.0), 1, "train", "hand")  # y = 2x + 1: 1, 3, 5, 7


@pytest.mark.parametrize("law, reward", [
    ("y = 2*x + 1", 1.0),
    ("f(x) = 1 + 2x", 1.0),               # implicit product, another order: the same law
    ("y = 2*(x + 0.5)", 1.0),
    ("y = x^2 + 1", 0.5),                 # 1, 2, 5, 10: right at x = 0 and x = 2
    ("y = 2*x + 1.3", 0.25),              # off by 0.3: within 5% of |y| only at x = 3 (|y| = 7)
    ("y = -2*x - 1", 0.0),
    ("y = 1/x", 0.0),                     # undefined at 0: wrong there, never an exception
    ("y = 2*x + 1 + 0*exp(100*x)", 0.25),  # overflows for x >= 1: wrong there; exact at x = 0
])
def test_the_reward_is_the_share_of_hidden_points_predicted(law, reward):
    result = ScienceEnv(LINE).step(f"<answer>{law}</answer>")
    assert result.done and result.reward == pytest.approx(reward)
    assert result.info["correct"] == (reward == 1.0) and result.info["hits"] == round(reward * 4)


def test_the_tolerance_option_moves_the_threshold():
    loose = ScienceEnv(LINE, ScienceConfig(tolerance=0.5)).step("<answer>y = 2*x + 1.3</answer>")
    assert loose.reward == 1.0


def test_an_unreadable_law_earns_zero_and_says_why():
    result = ScienceEnv(LINE).step("<answer>y = a*x + b</answer>")
    assert result.done and result.reward == 0.0
    assert "write the coefficient's value" in result.info["parse_error"]


# -- the parser --

@pytest.mark.parametrize("text, named", [
    ("__import__('os').system('rm -rf /')", "unexpected character \"'\" at position 11"),
    ("y = 3*x + 1; import os", "unexpected character ';' at position 11"),
    ("y = lambda", "unknown name 'lambda' at position 4"),
    ("y = sin(x)", "unknown name 'sin' at position 4"),
    ("x" * (MAX_LAW_CHARS + 1), f"at most {MAX_LAW_CHARS}"),
    ("(" * 10 + "x" + ")" * 10, "nests deeper than 8 levels"),
    ("exp(" * 20 + "x" + ")" * 20, "nests deeper than 8 levels"),
    ("+".join(["x"] * 60), "more than 80 tokens"),
    ("x^99", "a power must be a whole number"),
    ("x^x", "a power must be a whole number"),
    ("x^1.5", "a power must be a whole number"),
    ("9" * 30, "larger than 1e+06"),
    ("1e999", "larger than 1e+06"),
    ("y = 2 3", "unexpected '3' at position 6"),
    ("y = 2*", "expected a number, x, exp(...) or '(' at position 6, found the end of the law"),
    ("exp x", "expected '(' after exp at position 4"),
    ("(x + 1", "expected ')' at position 6"),
    ("y = x\x00", "unexpected character '\\x00'"),
    ("y = x²", "unexpected character '²'"),
    ("   ", "the answer is empty"),
])
def test_hostile_and_malformed_laws_are_refused_with_what_and_where(text, named):
    with pytest.raises(LawError) as caught:
        parse_law(text)
    assert named in str(caught.value)


def test_the_parser_reads_precedence_and_signs():
    assert evaluate(parse_law("-x^2"), 3.0) == -9.0
    assert evaluate(parse_law("2*x^2 - -3"), 2.0) == 11.0
    assert evaluate(parse_law("y = 1.5*exp(-0.5*x)"), 2.0) == pytest.approx(1.5 * math.exp(-1.0))
    assert evaluate(parse_law("6/2/3"), 0.0) == 1.0
    assert evaluate(parse_law("x**2"), 4.0) == 16.0
    assert math.isnan(evaluate(parse_law("x^-2"), 0.0))
    assert math.isnan(evaluate(parse_law("exp(exp(x))"), 5.0))  # exp(148): past the limit, not an exception


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("x0123456789.eE+-*/^()= expyf,;'\"_a")), max_size=60))
def test_the_parser_never_fails_but_with_a_law_error(text):
    try:
        tree = parse_law(text)
    except LawError as err:
        assert str(err)
        return
    for x in (-5.0, 0.0, 0.5, 5.0):
        value = evaluate(tree, x)
        assert isinstance(value, float) and (math.isnan(value) or math.isfinite(value))


# -- experiments --

@pytest.mark.parametrize("command, x", [("measure(2.5)", 2.5), ("measure 3", 3.0), ("MEASURE( x = -1 )", -1.0),
                                        ("measure(.5)", 0.5)])
def test_measure_reads_one_number(command, x):
    assert parse_measure(command) == (x, "")


@pytest.mark.parametrize("command, named", [
    ("measure(9)", "outside the range experiments can reach (-5 to 5)"),
    ("measure(abc)", "measure takes one number"),
    ("measure(1, 2)", "measure takes one number"),
    ("measure(2**2)", "measure takes one number"),
    ("weigh(2)", "unknown experiment 'weigh(2)'"),
    ("", "unknown experiment"),
])
def test_a_bad_experiment_is_named_in_the_observation_and_spends_the_call(command, named):
    env = ScienceEnv(LINE)
    env.reset()
    result = env.step(f"<tool>{command}</tool>")
    assert not result.done and named in result.observation and result.observation.startswith("<result>error: ")
    assert result.info["tool_calls"] == 1


def test_the_experiment_budget_ends_the_episode_and_says_so():
    env = ScienceEnv(LINE, ScienceConfig(max_measurements=2))
    env.reset()
    assert env.step("<tool>measure(1)</tool>").observation == "<result>x = 1: y = 3</result>"
    assert not env.step("<tool>measure(2)</tool>").done
    end = env.step("<tool>measure(3)</tool>")
    assert end.done and end.reward == 0.0 and end.info["truncated"] and "all 2 experiments" in end.info["error"]


def test_a_turn_without_a_tag_ends_with_zero():
    result = ScienceEnv(LINE).step("y is 2x + 1")
    assert result.done and result.reward == 0.0 and result.info["answer"] is None


def test_noise_is_seeded_per_problem_and_experiment():
    config = ScienceConfig(noise=0.1)
    readings = [play(ScienceEnv(LINE, config), ["<tool>measure(3)</tool>"]).observation for _ in range(2)]
    assert readings[0] == readings[1] != "<result>x = 3: y = 7</result>"  # the same episode replays the same
    env = ScienceEnv(LINE, config)
    env.reset()
    first, second = (env.step("<tool>measure(3)</tool>").observation for _ in range(2))
    assert first != second  # a repeated experiment is a new reading


def test_options_are_checked():
    with pytest.raises(ConfigError, match="noise"):
        SPEC.options({"noise": 2.0})
    with pytest.raises(ConfigError, match="levels"):
        SPEC.options({"levels": (4,)})


def test_trains_two_steps_through_the_cli(tmp_path):
    from reference_impls import train

    out = tmp_path / "science"
    rc = train.main(["--impl", "science-grpo", "--model", "tiny", "--steps", "2", "--prompts-per-step", "2",
                     "--group-size", "2", "--max-new-tokens-per-turn", "16", "--max-completion-tokens", "48",
                     "--sft-steps", "1", "--sft-examples", "2", "--out", str(out)])
    assert rc in (0, None)
    steps = (out / "metrics.jsonl").read_text().splitlines()
    assert len(steps) == 2

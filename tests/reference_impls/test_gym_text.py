"""The text environments as gymnasium environments (reference_impls/envs/gym_text.py): gymnasium's own environment
checker on every one, each environment's demonstration played through the wrapper to the reward the environment
gives it directly, seeded resets, bad actions named in the observation, and the other direction (the trainer
playing a gymnasium text environment, the fw-general-rl row)."""
import json
import warnings

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

from reference_impls.envs import ENVS, get_env
from reference_impls.envs.gym_text import (ACTION_MAX, OBSERVATION_MAX, SPEC, TextEnv, fit_observation, gym_id, main,
                                           register)
from reference_impls.options import ConfigError

#: every environment the trainer knows, but the adapter that plays gymnasium environments itself
WRAPPED = sorted(name for name, spec in ENVS.items() if spec is not SPEC)
#: options that keep a test off the 135M model (the memory environments' frozen Answer Agent)
TEST_OPTIONS = {"memory": {"answer_model": "tiny"}, "memory-format": {"answer_model": "tiny"}}


def make(name: str, **kwargs) -> gymnasium.Env:
    register()
    return gymnasium.make(gym_id(name), options=TEST_OPTIONS.get(name, {}), pool_size=16, **kwargs)


def test_every_environment_train_lists_is_wrapped():
    from reference_impls import registry

    listed = {row.env for row in registry.implementations()} - {SPEC.name}
    assert listed <= set(WRAPPED) and set(register()) == {gym_id(n) for n in WRAPPED}


@pytest.mark.parametrize("name", WRAPPED)
def test_gymnasiums_environment_checker_passes(name):
    env = make(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)  # spec set (gymnasium.make): the determinism, render and close checks run too
    complaints = [str(w.message) for w in caught if "WARN" in str(w.message)]
    assert not complaints, complaints


def _direct(spec, problem, config, actions):
    """The environment played without the wrapper: (observations after each non-final step, the last result)."""
    episode = spec.make(problem, config)
    episode.reset()
    observations, result = [], None
    for action in actions:
        result = episode.step(action)
        if result.done:
            break
        observations.append(result.observation)
    return observations, result


@pytest.mark.parametrize("name", WRAPPED)
def test_the_demonstration_reaches_the_environments_reward_through_the_wrapper(name):
    env = make(name)
    for seed in (0, 1):
        observation, info = env.reset(seed=seed)
        assert info["messages"] and observation.startswith(f"[{info['messages'][0]['role']}]")
        actions = [text for role, text in env.unwrapped.demonstration() if role == "model"]
        total, seen, terminated, truncated = 0.0, [], False, False
        for action in actions:
            observation, reward, terminated, truncated, step_info = env.step(action)
            total += reward
            if terminated or truncated:
                break
            seen.append(observation)
        expected_observations, end = _direct(get_env(name), env.unwrapped.problem, env.unwrapped.config, actions)
        assert terminated and not truncated and end.done
        assert total == end.reward and step_info == end.info  # the environment's own reward and info, unchanged
        assert seen == [fit_observation(o) for o in expected_observations]
        if "correct" in end.info:
            assert step_info["correct"] == end.info["correct"]


def test_most_demonstrations_are_rewarded():
    """The reward above is the environment's own; here it is also positive wherever the demonstration is a
    solved episode (the self-play proposer and the label-free memory format are rewarded 0 by design)."""
    unrewarded = []
    for name in WRAPPED:
        if name.startswith("memory"):
            continue  # the Answer Agent (a model) decides the reward; covered above
        env = make(name)
        env.reset(seed=0)
        total = sum(env.step(a)[1] for role, a in env.unwrapped.demonstration() if role == "model")
        if total <= 0:
            unrewarded.append(name)
    assert unrewarded == ["selfplay-arith"]


def test_a_seeded_reset_draws_the_same_problem_and_other_seeds_others():
    env = make("sokoban")
    first, info = env.reset(seed=7)
    again, info_again = env.reset(seed=7)
    assert first == again and info["problem"] == info_again["problem"]
    drawn = {env.reset(seed=s)[1]["problem"] for s in range(12)}
    assert len(drawn) > 3
    heldout, held_info = env.reset(seed=7, options={"split": "heldout", "problem": 2})
    assert held_info["split"] == "heldout" and held_info["problem"] == 2 and heldout != first


@pytest.mark.parametrize("action, named", [(123, "(a str), got int"), (["<calc>1+1</calc>"], "got list"),
                                           ("x" * (ACTION_MAX + 1), f"max_length {ACTION_MAX}")])
def test_an_action_that_is_not_a_turn_is_named_and_does_nothing(action, named):
    env = make("calculator")
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(action)
    assert observation.startswith("Bad action: ") and named in observation and info["bad_action"] in observation
    assert (reward, terminated, truncated) == (0.0, False, False)
    # the episode goes on: the demonstration still solves it
    for role, text in env.unwrapped.demonstration():
        if role == "model":
            observation, reward, terminated, truncated, info = env.step(text)
    assert terminated and reward == 1.0


def test_a_turn_with_no_tool_call_or_answer_is_named_when_it_ends_the_episode():
    env = make("calculator")
    env.reset(seed=0)
    observation, reward, terminated, _, info = env.step("the answer is 4")
    assert terminated and reward == 0.0
    assert observation == ("Bad action: the turn closed none of this environment's tags (</calc>, </answer>), so it "
                           "held no tool call and no answer. The episode is over: reward 0.")
    assert info["bad_action"] in observation
    env.reset(seed=0)
    observation, *_ = env.step("<answer>-1</answer>")  # a real answer, wrong: not a bad action
    assert observation == "The episode is over: reward 0."


def test_the_environments_own_error_is_in_the_observation():
    env = make("zoom")
    env.reset(seed=0)
    observation, _, terminated, _, info = env.step("<answer>no idea</answer>")
    assert terminated and info["parse_error"] in observation and observation.startswith("Bad action: ")


def test_stepping_an_ended_episode_asks_for_reset_and_max_steps_truncates():
    env = make("calculator", max_steps=2)
    with pytest.raises(gymnasium.error.ResetNeeded):
        env.step("<answer>1</answer>")
    env.reset(seed=0)
    assert env.step(0)[3] is False
    *_, truncated, _ = env.step(0)
    assert truncated is True
    with pytest.raises(gymnasium.error.ResetNeeded):
        env.step("<answer>1</answer>")


def test_bad_arguments_are_named():
    with pytest.raises(ConfigError, match="unknown environment 'nope'"):
        TextEnv("nope")
    with pytest.raises(ConfigError, match="levels"):
        TextEnv("calculator", options={"levels": [9]})
    with pytest.raises(ValueError, match="split must be one of train, heldout, got 'test'"):
        TextEnv("calculator", split="test")
    with pytest.raises(ValueError, match="pool_size must be an integer >= 1"):
        TextEnv("calculator", pool_size=0)
    env = TextEnv("calculator", pool_size=4)
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['level'\]"):
        env.reset(options={"level": 2})
    with pytest.raises(ValueError, match=r"'problem' must be an index in \[0, 4\), got 4"):
        env.reset(options={"problem": 4})


def test_observations_stay_in_the_space():
    space = TextEnv("calculator", pool_size=1).observation_space
    odd = "emoji \U0001F600 and CJK \u4e2d and a bell \x07"
    assert odd not in space and fit_observation(odd) in space
    assert fit_observation(odd) == "emoji \ufffd and CJK \ufffd and a bell \ufffd"
    long = fit_observation("a" * (OBSERVATION_MAX + 5))
    assert len(long) == OBSERVATION_MAX and long in space and long.endswith("over the observation space's 65536]")


def test_ansi_render_is_the_transcript():
    env = make("calculator", render_mode="ansi")
    observation, _ = env.reset(seed=0)
    end, *_ = env.step("<answer>-1</answer>")
    assert env.render() == "\n".join([observation, "<answer>-1</answer>", end])


# -- the other direction: the trainer plays a gymnasium text environment ------------------------------------

def test_the_trainer_plays_a_gymnasium_environment_as_the_direct_one():
    spec = get_env("gymnasium")
    config = spec.config_of({"gym_id": gym_id("frozenlake")})
    wrapped = gymnasium.make(gym_id("frozenlake"))  # as the adapter makes it (the default pool)
    for problem in spec.problems("train", 3, 0, config):
        episode = spec.make(problem, config)
        messages = episode.reset()
        _, info = wrapped.reset(seed=problem.seed, options={"split": problem.split})
        direct = get_env("frozenlake").make(wrapped.unwrapped.problem, wrapped.unwrapped.config)
        assert messages == direct.reset() and episode.stop_strings == direct.stop_strings
        segments = spec.demonstrate(problem, config)
        assert segments == wrapped.unwrapped.demonstration()
        result = None
        for role, text in segments:
            if role == "model":
                result = episode.step(text)
        assert result.done and result.reward == 1.0 and result.info["correct"]


def test_the_adapter_names_a_gym_id_it_cannot_play():
    spec = get_env("gymnasium")
    with pytest.raises(ConfigError, match="'nope/x-v0' is not a registered gymnasium environment") as err:
        spec.config_of({"gym_id": "nope/x-v0"})
    assert err.value.field == "env_options.gym_id"
    cartpole = spec.config_of({"gym_id": "CartPole-v1"})  # registered, but it reads vectors
    with pytest.raises(ConfigError, match="'CartPole-v1' has a Box observation_space"):
        spec.make(spec.problems("train", 1, 0, cartpole)[0], cartpole)
    assert gym_id("gymnasium") not in register()  # the adapter is not wrapped again


def test_the_command_line_prints_each_episodes_return(capsys):
    assert main(["--env", "sokoban", "--policy", "demonstration", "--episodes", "2", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["seed"] for r in rows] == [0, 1] and all(r["return"] == 1.0 and r["correct"] for r in rows)
    assert main(["--env", "sokoban", "--policy", "random", "--episodes", "1"]) == 0
    out = capsys.readouterr().out
    assert "episode 0 (seed 0): return 0 in 1 steps" in out and "atlas/sokoban-v0, random policy: mean return 0" in out
    with pytest.raises(SystemExit):
        main(["--env", "nope"])
    assert "unknown environment 'nope'" in capsys.readouterr().err


def test_the_general_rl_row_trains_through_gymnasium(tmp_path):
    from test_train_cli import train

    out = tmp_path / "run"
    r = train("--impl", "gymnasium-frozenlake-grpo", "--model", "tiny", "--steps", "1", "--prompts-per-step", "2",
              "--group-size", "2", "--max-new-tokens-per-turn", "8", "--max-completion-tokens", "40", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    config = json.loads((out / "config.json").read_text())
    assert config["env"] == "gymnasium" and config["env_options"]["gym_id"] == "atlas/frozenlake-v0"
    assert json.loads((out / "status.json").read_text())["state"] == "completed"

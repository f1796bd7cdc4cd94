"""The TextWorld text-game environment (issue 20): generated games, splits, walkthroughs, the parser, training.

Games are generated on first use into ``data_dir()/textgames`` (a few seconds each); the tests use a small
fixed sample so that a second run reads them from the cache."""
from __future__ import annotations

import json
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from reference_impls.envs import get_env  # noqa: E402
from reference_impls.envs import textgame  # noqa: E402

SPEC = get_env("textgame")


def _key(p):
    return (p.kind, p.level, p.game_seed)


def test_problem_lists_are_deterministic_and_seeded():
    a = SPEC.problems("train", n=12, seed=3, levels=(1, 2, 3))
    b = SPEC.problems("train", n=12, seed=3, levels=(1, 2, 3))
    c = SPEC.problems("train", n=12, seed=4, levels=(1, 2, 3))
    assert a == b
    assert [_key(p) for p in a] != [_key(p) for p in c]
    assert {(p.kind, p.level) for p in a} == {(k, lv) for k in textgame.KINDS for lv in (1, 2, 3)}
    assert len({p.uid for p in a}) == len(a)


def test_heldout_games_are_disjoint_from_train():
    train = {_key(p) for seed in (0, 1, 2) for p in SPEC.problems("train", n=60, seed=seed, levels=(1, 2, 3))}
    held = {_key(p) for seed in (0, 1) for p in SPEC.problems("heldout", n=60, seed=seed, levels=(1, 2, 3))}
    assert held and train and not (train & held)
    assert all(textgame.split_of(*k) == "heldout" for k in held)


def test_same_seed_generates_the_same_game(tmp_path):
    p = SPEC.problems("train", n=1, seed=0, levels=(1,), kinds=("adventure",))[0]
    _, meta = textgame.game_files(p)
    again = textgame._generate(p, tmp_path)  # a second generation from the same seed, elsewhere
    assert again == meta
    other = SPEC.problems("heldout", n=1, seed=0, levels=(1,), kinds=("adventure",))[0]  # another seed
    assert other.game_seed != p.game_seed
    other_meta = textgame.game_files(other)[1]
    assert (other_meta["walkthrough"], other_meta["objective"]) != (meta["walkthrough"], meta["objective"])


# one game per (kind, level) of the train split and the level-1 games of the held-out split; the level-3
# games (the slowest to generate, cooking with 6 rooms and two ingredients) run with `pytest -m slow`
SAMPLE = [*SPEC.problems("train", n=4, seed=0, levels=(1, 2)),
          *SPEC.problems("heldout", n=2, seed=0, levels=(1,))]
LEVEL3 = [pytest.param(p, marks=pytest.mark.slow) for p in SPEC.problems("train", n=2, seed=0, levels=(3,))]


@pytest.mark.parametrize("problem", [*SAMPLE, *LEVEL3], ids=lambda p: p.uid)
def test_walkthrough_wins_every_sampled_game(problem):
    demo = SPEC.demonstration(problem)
    assert demo and demo[0][0] == "model" and all(role in ("model", "env") for role, _ in demo)
    env = SPEC.make(problem)
    messages = env.reset()
    assert "Your task:" in messages[1]["content"] and "Available commands:" in messages[1]["content"]
    result = None
    for role, text in demo:
        if role == "model":
            result = env.step(text)
        else:
            assert result is not None and not result.done and result.observation == text
    assert result.done and result.info["correct"] and result.reward == 1.0
    assert result.info["score"] == result.info["max_score"] >= 1


def _walk(problem, k, **options):
    env = SPEC.make(problem, **options)
    first = env.reset()[1]["content"]
    walkthrough = textgame.game_files(problem)[1]["walkthrough"]
    results = [env.step(f"<action>{c}</action>") for c in walkthrough[:k]]
    return env, first, results


def test_score_reward_win_reward_and_admissible_switch():
    cooking = SPEC.problems("train", n=4, seed=0, levels=(1,))[1]
    assert cooking.kind == "cooking"
    meta = textgame.game_files(cooking)[1]
    assert meta["max_score"] >= 2
    # take the ingredient (one point of the recipe) and stop: partial score in score mode, 0 in win mode
    k = next(i for i, c in enumerate(meta["walkthrough"]) if c.startswith("take")) + 1
    env, first, results = _walk(cooking, k)
    assert results[-1].info["score"] >= 1
    end = env.step("<answer>done</answer>")
    assert end.done and not end.info["correct"]
    assert end.reward == pytest.approx(end.info["score"] / meta["max_score"]) and 0 < end.reward < 1
    env, first, _ = _walk(cooking, k, reward="win")
    assert env.step("<answer>done</answer>").reward == 0.0
    _, first, results = _walk(cooking, 1, admissible=False)
    assert "Available commands" not in first and "Available commands" not in results[0].observation


def test_meta_commands_never_reach_the_interpreter():
    p = SAMPLE[0]
    env = SPEC.make(p)
    env.reset()
    for text in ("quit", "restart", "save", "restore", "undo", "script", "y", "xyzzy"):
        result = env.step(f"<action>{text}</action>")
        assert not result.done and "does not know the verb" in result.observation
    for cmd in textgame.game_files(p)[1]["walkthrough"]:  # the game is still playable and winnable
        result = env.step(f"<action>{cmd}</action>")
    assert result.done and result.info["correct"]


def test_command_parser_examples():
    assert textgame.parse_command("  Take the KEY from Table!\nsecond line") == ("take the key from table", None)
    assert textgame.parse_command("open red-door") == ("open red-door", None)
    assert textgame.parse_command("")[0] is None and "no command" in textgame.parse_command("")[1]
    assert textgame.parse_command("go " + "north " * 40)[0] is None
    assert textgame.parse_command("import os; os.system('ls')")[0] is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=600))
def test_command_parser_fuzz(text):
    command, error = textgame.parse_command(text)
    assert (command is None) != (error is None)
    if command is not None:
        assert command.split()[0] in textgame.GAME_VERBS and len(command) <= textgame.MAX_COMMAND_CHARS
        assert all(ch.isascii() and (ch.isalnum() or ch in " '-") for ch in command)


_ENV = {}
texts = st.one_of(
    st.text(max_size=300),
    st.builds(lambda a, b: f"{a}<action>{b}</action>", st.text(max_size=40), st.text(max_size=200)),
    st.builds(lambda v, b: f"<action>{v} {b}</action>", st.sampled_from(sorted(textgame.GAME_VERBS)),
              st.text(max_size=60)),
    st.builds(lambda b: f"<answer>{b}</answer>", st.text(max_size=40)),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_fuzzed_actions_give_a_clear_observation_fast(text):
    env = _ENV.get("env")
    if env is None or env.done:
        env = _ENV["env"] = SPEC.make(SAMPLE[1])  # reset (loading the game) is not timed: the step is
    t = time.perf_counter()
    result = env.step(text)
    assert time.perf_counter() - t < 0.1
    assert isinstance(result.done, bool)
    if result.done:
        assert "correct" in result.info and 0.0 <= result.reward <= 1.0
    else:
        assert isinstance(result.observation, str) and result.observation.startswith("<obs>")
        assert len(result.observation) > len("<obs></obs>")


def test_trains_two_steps_through_the_cli_and_evaluates(tmp_path, capsys):
    from reference_impls import train
    from reference_impls.measure import evaluate

    out = tmp_path / "textgame"
    small = ["--env-option", "levels=1", "--env-option", "kinds=adventure"]
    rc = train.main(["--impl", "textgame-grpo", "--model", "tiny", "--steps", "2", "--prompts-per-step", "2",
                     "--group-size", "2", "--max-new-tokens-per-turn", "12", "--max-completion-tokens", "48",
                     "--sft-steps", "1", "--sft-examples", "2", "--train-pool", "2", *small, "--out", str(out)])
    assert rc in (0, None)
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert len([ln for ln in lines if '"step"' in ln]) >= 2
    capsys.readouterr()
    assert evaluate.main(["--run", str(out), "--n", "2", "--json", "--max-new-tokens-per-turn", "12",
                          "--max-completion-tokens", "48"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == 2 and 0.0 <= result["accuracy"] <= 1.0

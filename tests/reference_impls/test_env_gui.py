"""The gui env (reference_impls/envs/gui.py): tasks by level and split, the reward read from the saved state on
scripted episodes (targets, side effects, unsaved dialogs), bad actions named in the screen, the action parser on
hostile input (it reads, never evaluates, model text), limits, and two training steps through the CLI."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from reference_impls.envs import get_env
from reference_impls.envs.gui import (SPLITS, Dialog, GuiConfig, Problem, Setting, cancel_id, menu_id,
                                      parse_action, save_id, setting_id, split_of)
from reference_impls.options import ConfigError

from episode_replay import play

SPEC = get_env("gui")


def act(text: str) -> str:
    return f"<action>{text}</action>"


# -- problems and splits --

def test_problems_are_seeded_and_levels_shape_the_task():
    a = SPEC.problems("train", 30, seed=3)
    assert a == SPEC.problems("train", 30, seed=3) and len(a) == 30
    assert a != SPEC.problems("train", 30, seed=4)
    for p in SPEC.problems("train", 12, levels=(1,)):
        assert len(p.targets) == 1 and all(len(d.settings) == 3 for d in p.dialogs)
    for p in SPEC.problems("train", 12, levels=(2,)):
        assert len(p.targets) == 2 and len({d for d, _, _ in p.targets}) == 1
        assert all(len(d.settings) in (6, 7) for d in p.dialogs)
    for p in SPEC.problems("train", 12, levels=(3,)):
        assert len(p.targets) == 2 and len({d for d, _, _ in p.targets}) == 2
    for p in SPEC.problems("train", 30):
        for d, s, value in p.targets:  # a target always changes its setting, and the instruction names it
            setting = p.dialogs[d].settings[s]
            assert value != setting.value and setting.name.lower() in p.instruction


def test_the_three_splits_hold_different_tasks():
    def key(p):
        return (p.app,) + tuple((p.dialogs[d].name, p.dialogs[d].settings[s].name, v) for d, s, v in p.targets)

    tasks = {split: {key(p) for s in (0, 1) for p in SPEC.problems(split, 200, seed=s)} for split in SPLITS}
    assert all(tasks.values())
    assert not tasks["train"] & tasks["heldout"]
    assert not tasks["train"] & tasks["validation"]
    assert not tasks["validation"] & tasks["heldout"]
    for split in SPLITS:
        assert all(split_of(p.app, p.dialogs, p.targets) == split for p in SPEC.problems(split, 20))
    with pytest.raises(ValueError, match="split must be one of"):
        SPEC.problems("test", 3)


@pytest.mark.parametrize("view_rows", [2, 4, 10])
@pytest.mark.parametrize("split", SPLITS)
def test_the_demonstration_solves_its_task(split, view_rows):
    config = SPEC.options({"view_rows": view_rows, "max_actions": 20})
    for p in SPEC.problems(split, 24, seed=1):
        segments = SPEC.demonstrate(p, config)
        assert segments[-1] == ("model", act("done()"))
        result = play(SPEC.make(p, config), [text for role, text in segments if role == "model"])
        assert result.done and result.reward == 1.0 and result.info["correct"], (p.instruction, result.info)
    # with every setting in view no scrolling is needed; with two rows a level-2 task scrolls
    wide = SPEC.options({"view_rows": 10})
    assert not any("scroll" in t for p in SPEC.problems(split, 12) for _, t in SPEC.demonstrate(p, wide))
    narrow = SPEC.options({"view_rows": 2, "max_actions": 20})
    assert any("scroll" in t for p in SPEC.problems(split, 12, levels=(2,)) for _, t in SPEC.demonstrate(p, narrow))


# -- the reward, on a hand-built task --

FONT = Setting("Font size", "number", 12, 8, 72)
WRAP = Setting("Word wrap", "checkbox", False)
THEME = Setting("Theme", "choice", "light", choices=("light", "dark", "sepia"))
NAME = Setting("Display name", "text", "Ana")
TAB = Setting("Tab width", "number", 4, 1, 16)
PREFS = Dialog("Preferences", (FONT, WRAP, THEME, NAME, TAB))
ACCOUNT = Dialog("Account", (Setting("Notifications", "checkbox", True),))
TASK = Problem("Text editor", (PREFS, ACCOUNT), ((0, 0, 14), (0, 1, True)),
               "In Text editor, set the font size in Preferences to 14 and turn on word wrap in Preferences, then save.",
               2, "train", "hand")
OPEN, SAVE, CANCEL = act(f"click({menu_id(0)})"), act(f"click({save_id(0)})"), act(f"click({cancel_id(0)})")
FONT_ID, WRAP_ID, THEME_ID, NAME_ID, TAB_ID = (setting_id(0, s) for s in range(5))
DONE = act("done()")


def run(actions, **options):
    return play(SPEC.make(TASK, SPEC.options(options)), actions)


def test_both_targets_saved_earn_one():
    r = run([OPEN, act(f'type({FONT_ID}, "14")'), act(f"click({WRAP_ID})"), SAVE, DONE])
    assert r.reward == 1.0 and r.info["correct"] and r.info["targets_done"] == 2 and r.info["changed_other"] == []


def test_one_target_of_two_earns_half():
    r = run([OPEN, act(f'type({FONT_ID}, "14")'), SAVE, DONE])
    assert r.reward == 0.5 and not r.info["correct"] and r.info["targets_done"] == 1


def test_a_side_effect_earns_zero_whatever_the_targets():
    r = run([OPEN, act(f'type({FONT_ID}, "14")'), act(f"click({WRAP_ID})"), act(f'type({THEME_ID}, "dark")'), SAVE,
             DONE])
    assert r.reward == 0.0 and r.info["targets_done"] == 2 and r.info["changed_other"] == ["Theme"]


def test_only_the_saved_state_counts():
    unsaved = run([OPEN, act(f'type({FONT_ID}, "14")'), act(f"click({WRAP_ID})"), DONE])
    assert unsaved.reward == 0.0 and unsaved.info["dialog_open"]
    cancelled = run([OPEN, act(f'type({FONT_ID}, "14")'), act(f"click({WRAP_ID})"), CANCEL, DONE])
    assert cancelled.reward == 0.0 and not cancelled.info["dialog_open"]
    # a side effect typed and then undone before saving is no side effect
    undone = run([OPEN, act(f'type({FONT_ID}, "14")'), act(f"click({WRAP_ID})"), act(f'type({THEME_ID}, "dark")'),
                  act(f'type({THEME_ID}, "Light")'), SAVE, DONE])
    assert undone.reward == 1.0


def test_the_screen_shows_values_kinds_and_scroll_position():
    env = SPEC.make(TASK, SPEC.options({"view_rows": 2}))
    prompt = env.reset()[1]["content"]
    assert TASK.instruction in prompt and '[1] button "Preferences..."' in prompt and "[11]" not in prompt
    screen = env.step(OPEN).observation
    assert "[dialog] Preferences (settings 1-2 of 5; scroll(down) for more)" in screen
    assert '[11] field "Font size" = 12 (a whole number from 8 to 72)' in screen
    assert '[12] checkbox "Word wrap" = off' in screen and "[13]" not in screen
    assert '[18] button "Save"' in screen and '[19] button "Cancel"' in screen
    screen = env.step(act("scroll(down)")).observation
    assert "settings 3-4 of 5; scroll(up) or scroll(down) for more" in screen and "[13]" in screen
    assert '[14] field "Display name" = Ana' in screen and "[11]" not in screen
    screen = env.step(act("scroll(down)")).observation
    assert "settings 4-5 of 5; scroll(up) for more" in screen and "[15]" in screen


# -- bad actions: nothing changes, the screen says what was wrong, the action is spent --

@pytest.mark.parametrize("before, action, named", [
    ([], "click(11)", "element 11 is not on the screen"),
    ([], "scroll(down)", "no dialog is open"),
    ([OPEN], "click(1)", "behind the open dialog 'Preferences'; click its Save or Cancel first"),
    ([OPEN], f'type({WRAP_ID}, "on")', "is a checkbox; click it to toggle it"),
    ([OPEN], f"click({FONT_ID})", "is a field; write into it with type(11"),
    ([OPEN], f'type({FONT_ID}, "huge")', "'Font size' takes a whole number from 8 to 72; got 'huge'"),
    ([OPEN], f'type({FONT_ID}, "99")', "from 8 to 72; got 99"),
    ([OPEN], f'type({THEME_ID}, "neon")', "'Theme' takes one of light, dark, sepia"),
    ([OPEN], f'type({NAME_ID}, "")', "cannot be empty"),
    ([OPEN], f'type({NAME_ID}, "{"x" * 41}")', "at most 40 characters"),
    ([OPEN], f'type({save_id(0)}, "1")', "is a button; type goes into a field"),
    ([OPEN], f"click({TAB_ID})", "not in view; scroll(down) to reach it"),
    ([OPEN], "scroll(up)", "cannot scroll up any further"),
    ([OPEN], "drag(11, 12)", "unknown action 'drag'"),
    ([OPEN], "click 11", "unknown action 'click 11'"),
    ([OPEN], "click(eleven)", "click takes one element number"),
    ([OPEN], "type(11)", "type takes an element number and a text"),
    ([OPEN], "scroll(left)", "scroll takes down or up"),
    ([OPEN], "done(now)", "done takes nothing"),
])
def test_a_bad_action_is_named_on_the_screen_and_changes_nothing(before, action, named):
    env = SPEC.make(TASK, SPEC.options({"view_rows": 4}))
    env.reset()
    for text in before:
        env.step(text)
    screen_before = env.screen.render()
    result = env.step(act(action))
    assert not result.done and result.observation.startswith("<screen>error: ")
    assert named in result.observation, result.observation
    assert result.observation.endswith(f"\n{screen_before}</screen>")  # the same screen: nothing changed
    assert result.info["tool_calls"] == len(before) + 1


def test_the_action_budget_and_a_turn_without_an_action_end_the_episode():
    r = run([OPEN, CANCEL, OPEN], max_actions=2)
    assert r.done and r.reward == 0.0 and r.info["truncated"] and "all 2 actions were used" in r.info["error"]
    r = run(["I would click the preferences button."])
    assert r.done and r.reward == 0.0 and "no <action>" in r.info["error"]


@pytest.mark.parametrize("text, parsed", [
    ("click(3)", ("click", 3)),
    (" CLICK ( 12 ) ", ("click", 12)),
    ('type(11, "14")', ("type", 11, "14")),
    ("type(11, 'dark')", ("type", 11, "dark")),
    ("type(11, dark)", ("type", 11, "dark")),
    ('type(11, "a, b")', ("type", 11, "a, b")),
    ("scroll(down)", ("scroll", 1)),
    ("scroll('up')", ("scroll", -1)),
    ("done()", ("done",)),
])
def test_actions_are_read(text, parsed):
    assert parse_action(text) == (parsed, "")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_the_parser_never_raises_and_never_evaluates(text):
    action, error = parse_action(text)
    assert (action is None) == bool(error)
    if action is not None:
        assert action[0] in ("click", "type", "scroll", "done")


def test_hostile_text_is_a_string_not_code(monkeypatch):
    import builtins

    def refuse(*_):
        raise AssertionError("model text reached eval/exec")

    monkeypatch.setattr(builtins, "eval", refuse)
    monkeypatch.setattr(builtins, "exec", refuse)
    payload = "__import__('os').system('true')"
    env = SPEC.make(TASK)
    r = play(env, [OPEN, act(f'type({NAME_ID}, "{payload}")')])
    assert not r.done and f'"Display name" = {payload}' in r.observation  # kept as the field's text, verbatim
    assert env.screen.draft[3] == payload
    r = run([OPEN, act("click(__import__('os'))")])
    assert "click takes one element number" in r.observation


def test_options_are_checked():
    with pytest.raises(ConfigError, match="--view-rows"):
        SPEC.options({"view_rows": 1})
    with pytest.raises(ConfigError, match="levels"):
        SPEC.options({"levels": (4,)})
    with pytest.raises(ConfigError, match="--max-actions"):
        SPEC.options({"max_actions": 0})
    assert SPEC.options({"max_tool_calls": 7}).max_actions == 7


def test_trains_two_steps_through_the_cli(tmp_path):
    from reference_impls import train

    out = tmp_path / "gui"
    rc = train.main(["--impl", "gui-grpo", "--model", "tiny", "--steps", "2", "--prompts-per-step", "2",
                     "--group-size", "2", "--max-new-tokens-per-turn", "16", "--max-completion-tokens", "96",
                     "--sft-steps", "1", "--sft-examples", "2", "--out", str(out)])
    assert rc in (0, None)
    steps = (out / "metrics.jsonl").read_text().splitlines()
    assert len(steps) == 2

"""The swe env: generator determinism, held-out split and hand-written tasks, every task's failing check failing
before the reference fix and passing after it (in the sandbox), the tools, hostile edits, the tool parser fuzzed,
and two tiny training steps through the CLI."""
from __future__ import annotations

import json
import os
import sys

import pytest
from hypothesis import given, settings, strategies as st

from reference_impls import sandbox
from reference_impls.envs import get_env, swe

SPEC = get_env("swe")


def _task(split="train", **options):
    return SPEC.problems(split, 1, **options)[0]


def _run(env, calls):
    env.reset()
    r = None
    for c in calls:
        r = env.step(c)
    return r


# -- generator ----------------------------------------------------------------------------------------------

def test_generator_is_deterministic_and_filters():
    a, b = SPEC.problems("train", 40, seed=3), SPEC.problems("train", 40, seed=3)
    assert a == b
    assert SPEC.problems("train", 40, seed=4) != a
    assert {t.level for t in a} == {1, 2, 3} and {t.family for t in a} == set(swe.FAMILIES)
    assert {t.family for t in SPEC.problems("train", 20, levels=(1,))} == {"off_by_one", "wrong_operator"}
    assert {t.family for t in SPEC.problems("train", 12, families=("wrong_key",))} == {"wrong_key"}
    with pytest.raises(ValueError, match="no swe scenario"):
        swe.tasks("train", 3, levels=(1,), families=("wrong_key",))


def test_levels_set_the_number_of_files_and_whether_the_issue_names_the_file():
    for level, n_sources in ((1, 1), (2, 2), (3, 3)):
        for t in SPEC.problems("train", 12, seed=1, levels=(level,)):
            files = dict(t.files)
            tests = [p for p in files if p.startswith("tests/")]
            assert len(tests) == 1 and len(files) == n_sources + 1, (level, sorted(files))
            named = f"in `{t.fix[0]}`" in t.prompt
            assert named == (level < 3), t.prompt
            assert sum(not c.passes_before for c in t.checks) >= 1 and any(c.passes_before for c in t.checks)


def test_heldout_is_disjoint_and_lists_the_handwritten_tasks():
    train, held = SPEC.problems("train", 120), SPEC.problems("heldout", 120)
    assert not {t.prompt for t in train} & {t.prompt for t in held}
    assert not {t.uid for t in train} & {t.uid for t in held}
    hand = swe.handwritten_tasks()
    assert len(hand) >= 8 and len({t.uid for t in hand}) == len(hand)
    assert [t.uid for t in held[:len(hand)]] == [t.uid for t in hand]
    assert all(t.source == "generated" for t in train)
    only = SPEC.problems("heldout", 10, heldout_tasks="handwritten")
    assert {t.source for t in only} == {"handwritten"}
    assert all(t.source == "generated" for t in SPEC.problems("heldout", 10, heldout_tasks="generated"))
    assert {t.family for t in hand} == set(swe.FAMILIES) and {t.level for t in hand} == {1, 2, 3}


def test_module_names_never_shadow_the_standard_library():
    names = {m for sc in swe.SCENARIOS for m in sc.modules} | {c.module for c in swe.COMPANIONS}
    names |= {p[:-3] for t in swe.handwritten_tasks() for p, _ in t.files if "/" not in p}
    assert not names & set(sys.stdlib_module_names)


def test_handwritten_task_data_is_checked():
    good = json.loads(next(swe.resources.files("reference_impls.envs").joinpath("swe_tasks").iterdir()).read_text())
    with pytest.raises(ValueError, match="fix.old must occur exactly once"):
        swe.task_from_json({**good, "fix": {**good["fix"], "old": "no such text"}}, "bad.json")
    with pytest.raises(ValueError, match="field 'checks' must be a list"):
        swe.task_from_json({**good, "checks": None}, "bad.json")
    with pytest.raises(ValueError, match="family must be one of"):
        swe.task_from_json({**good, "family": "typo"}, "bad.json")
    with pytest.raises(ValueError, match="bad.json: check 1 needs module"):
        swe.task_from_json({**good, "checks": [{"module": "m"}]}, "bad.json")
    with pytest.raises(ValueError, match="level must be 1, 2 or 3"):
        swe.task_from_json({**good, "level": 7}, "bad.json")
    path, old = good["fix"]["path"], good["fix"]["old"]
    with pytest.raises(ValueError, match="whole lines"):
        swe.task_from_json({**good, "fix": {**good["fix"], "old": old.strip()}}, "bad.json")
    assert swe.task_from_json(good, "good.json").fix == (path, old, good["fix"]["new"])


# -- every task is solvable, and its issue is real (in the sandbox) -----------------------------------------

def _all_generated(split, levels=(1, 2, 3)):
    return [swe.make_task(sc, lv, split, 11, 0) for lv in levels for sc in swe.SCENARIOS
            if sc.family in swe.LEVEL_FAMILIES[lv]]


def _assert_before_and_after(task):
    before = swe.run_checks(dict(task.files), task.checks)
    assert before.status == "ok" and before.passed == [c.passes_before for c in task.checks], (task.uid, before)
    text = swe.run_unittests(dict(task.files))
    assert text.startswith("ran ") and ("1 failed, 0 errors" in text or "0 failed, 1 errors" in text), (task.uid, text)
    # the scripted solver: read, apply the known fix, run the tests, submit
    env = SPEC.make(task)
    env.reset()
    segs = SPEC.demonstration(task)
    assert [s[0] for s in segs] == ["model", "env"] * 3 + ["model"]
    r = None
    for role, text in segs:
        if role == "model":
            r = env.step(text)
        else:
            assert r.observation == text  # the demonstration shows the tools' real output
    assert "0 failed, 0 errors" in segs[5][1], (task.uid, segs[5][1])
    assert r.done and r.reward == 1.0 and r.info["correct"] and not r.info["broke_passing"], (task.uid, r.info)
    assert env.files == task.fixed_files()


@pytest.mark.parametrize("task", _all_generated("train"), ids=lambda t: t.uid)
def test_generated_train_task_fails_before_and_passes_after_the_reference_fix(task):
    _assert_before_and_after(task)


@pytest.mark.parametrize("task", _all_generated("heldout", levels=(2,)), ids=lambda t: t.uid)
def test_generated_heldout_task_fails_before_and_passes_after_the_reference_fix(task):
    _assert_before_and_after(task)


@pytest.mark.parametrize("task", swe.handwritten_tasks(), ids=lambda t: t.uid)
def test_handwritten_task_fails_before_and_passes_after_the_reference_fix(task):
    _assert_before_and_after(task)


def test_a_wider_sample_of_generated_tasks_matches_its_reference_behaviour():
    """Beyond one task per scenario: 40 more (other seeds, indices, levels, both splits), buggy and fixed."""
    sample = SPEC.problems("train", 30, seed=5) + SPEC.problems("heldout", 10, seed=6, heldout_tasks="generated")
    for task in sample:
        before = swe.run_checks(dict(task.files), task.checks)
        assert before.passed == [c.passes_before for c in task.checks], (task.uid, before)
        after = swe.run_checks(task.fixed_files(), task.checks)
        assert all(after.passed), (task.uid, after)


# -- reward ---------------------------------------------------------------------------------------------------

def _hand(uid):
    return next(t for t in swe.handwritten_tasks() if t.uid == uid)


def test_reward_fraction_all_pass_switch_and_broken_regressions():
    t = _hand("hand-fahrenheit")  # c_to_f has the bug; f_to_c's checks pass before
    untouched = _run(SPEC.make(t), ["<tool>submit</tool>"])
    assert untouched.reward == pytest.approx(2 / 6) and not untouched.info["correct"]
    assert _run(SPEC.make(t, all_pass_only=True), ["<tool>submit</tool>"]).reward == 0.0
    fix_and_break = ["<tool>edit convert.py<old>c * 9 / 5 - 32</old><new>c * 9 / 5 + 32</new></tool>",
                     "<tool>edit convert.py 11-11<new>    return 0</new></tool>", "<tool>submit</tool>"]
    r = _run(SPEC.make(t), fix_and_break)
    assert r.reward == 0.0 and r.info["broke_passing"] and r.info["passed"] == 4
    assert _run(SPEC.make(t, break_zero=False), fix_and_break).reward == pytest.approx(4 / 6)
    fixed = _run(SPEC.make(t, all_pass_only=True), fix_and_break[:1] + ["<tool>submit</tool>"])
    assert fixed.reward == 1.0 and fixed.info["edited"] == ["convert.py"]
    assert _run(SPEC.make(t), ["no tool call at all"]).reward == 0.0


def test_budget_and_submit():
    t = _task()
    env = SPEC.make(t, max_tool_calls=1)
    env.reset()
    assert not env.step("<tool>ls</tool>").done
    r = env.step("<tool>ls</tool>")
    assert r.done and r.reward == 0.0 and r.info["truncated"]
    assert _run(SPEC.make(t, max_tool_calls=1), ["<tool>ls</tool>", "<tool> SUBMIT </tool>"]).info["total"] > 0


# -- the tools ------------------------------------------------------------------------------------------------

def test_ls_read_pages_and_edits():
    t = _hand("hand-median-even")
    env = SPEC.make(t, page_lines=5, max_tool_calls=64)
    env.reset()
    step = lambda c: env.step(f"<tool>{c}</tool>").observation[len("<result>"):-len("</result>")]
    assert step("ls").splitlines() == ["rounding.py (6 lines)", "stats_tools.py (13 lines)",
                                       "tests/test_stats_tools.py (14 lines)"]
    page = step("read stats_tools.py")
    assert page.splitlines()[0] == '   1| """Statistics."""' and "read stats_tools.py 6 for more" in page
    assert step("read ./stats_tools.py 13").splitlines() == ["  13|     return max(xs) - min(xs)",
                                                             "(stats_tools.py: lines 13-13 of 13)"]
    assert step("read stats_tools.py 99") == "error: stats_tools.py has 13 lines"
    assert step("read stats_tools.py x").startswith("error: read's line must be a number")
    assert step("read").startswith("error: read needs a file")
    out = step("edit stats_tools.py 8-8<new>\n    if n % 2 == 0:\n        return (s[n // 2 - 1] + s[n // 2]) / 2\n"
               "    return s[n // 2]\n</new>")
    assert out.startswith("edited stats_tools.py; lines 6-12 now:") and "   9|         return (s[n" in out
    assert env.files == t.fixed_files()
    assert step("edit stats_tools.py<old>s = sorted(xs)</old><new>s = sorted(xs)  # ascending</new>").startswith("edited")
    assert "# ascending" in env.files["stats_tools.py"]
    assert "occurs 2 times" in step("edit stats_tools.py<old>n // 2]</old><new>x</new>")
    assert "occurs 0 times" in step("edit stats_tools.py<old>nothing like this</old><new>x</new>")
    assert step("edit stats_tools.py<old></old><new>x</new>") == "error: the <old> text is empty"
    assert "outside stats_tools.py" in step("edit stats_tools.py 20-30<new>x</new>")
    assert "outside stats_tools.py" in step("edit stats_tools.py 5-3<new>x</new>")
    assert step("edit stats_tools.py 3-4").startswith("error: edit needs the new text")
    assert "must look like 7-9" in step("edit stats_tools.py seven<new>x</new>")
    assert "line range" in step("edit stats_tools.py<new>x</new>")
    lines = len(env.files["stats_tools.py"].splitlines())
    step("edit stats_tools.py 1-1<new></new>")  # an empty <new> deletes the lines
    assert len(env.files["stats_tools.py"].splitlines()) == lines - 1
    assert step("frobnicate").startswith("error: unknown command 'frobnicate'")
    assert step("   ").startswith("error: empty command")


@pytest.mark.parametrize("path", ["../stats_tools.py", "../../etc/passwd", "/etc/passwd", "tests/../../x.py",
                                  "new_module.py", "tests", "", "rounding.py/../stats_tools.py"])
def test_paths_outside_the_repository_files_are_refused(path):
    t = _hand("hand-median-even")
    env = SPEC.make(t)
    env.reset()
    for call in (f"read {path}", f"edit {path} 1-1<new>x</new>", f"edit {path}<old>a</old><new>b</new>"):
        obs = env.step(f"<tool>{call}</tool>").observation
        assert obs.startswith("<result>error:"), (call, obs)
    assert env.files == dict(t.files)


def test_an_edit_that_breaks_the_syntax_is_refused_unless_switched_off():
    t = _hand("hand-median-even")
    broken = "<tool>edit stats_tools.py 8-8<new>    return s[n // 2</new></tool>"
    env = SPEC.make(t)
    env.reset()
    obs = env.step(broken).observation
    assert obs.startswith("<result>error: the edit was not applied: stats_tools.py would not parse (line 8:"), obs
    assert env.files == dict(t.files)
    assert "\x00" not in env.step("<tool>edit stats_tools.py 8-8<new>\x00</new></tool>").observation
    assert env.files == dict(t.files)
    loose = SPEC.make(t, syntax_check=False)
    loose.reset()
    assert loose.step(broken).observation.startswith("<result>edited stats_tools.py")
    r = loose.step("<tool>submit</tool>")  # the import fails in every check of the module: break_zero gives 0
    assert r.reward == 0.0 and "SyntaxError" in r.info["failures"][0]


def test_huge_edit_is_refused_and_leaves_the_file():
    t = _hand("hand-median-even")
    env = SPEC.make(t, max_file_chars=5000)
    env.reset()
    obs = env.step("<tool>edit stats_tools.py 1-1<new>" + "x = 1\n" * 2000 + "</new></tool>").observation
    assert "limit 5000" in obs and env.files == dict(t.files)


# -- hostile edits, run in the sandbox -----------------------------------------------------------------------

def _inject(task, code: str) -> list[str]:
    """Tool calls that put ``code`` at the top of the buggy module (which every check imports)."""
    path = task.fix[0]
    first = dict(task.files)[path].splitlines()[0]
    return [f"<tool>edit {path} 1-1<new>{code}\n{first}</new></tool>"]


def test_writing_outside_the_repository_is_contained(tmp_path):
    if not sandbox.protects_files(sandbox.active_layer()):
        pytest.skip(f"layer {sandbox.active_layer()} runs the code as our own uid here: it cannot protect files")
    t = _hand("hand-median-even")
    target = tmp_path / "escaped.txt"
    host_tmp = f"/tmp/atlas-swe-escape-{os.getpid()}-{tmp_path.name}.txt"
    code = ("import os\nfor p in ('../../escaped.txt', '../escaped.txt', '/escaped.txt', %r, %r):\n"
            "    try:\n        open(p, 'w').write('x')\n    except OSError:\n        pass\n") % (str(target), host_tmp)
    try:
        r = _run(SPEC.make(t), _inject(t, code) + ["<tool>submit</tool>"])
        assert r.done and r.info["sandbox_status"] == "ok"
        assert not target.exists() and not os.path.exists("/escaped.txt")
        if sandbox.active_layer() == "bwrap":  # a private /tmp; the fallback layers can write the host's /tmp
            assert not os.path.exists(host_tmp)
    finally:
        if os.path.exists(host_tmp):
            os.remove(host_tmp)


def test_huge_files_and_endless_loops_in_the_sandbox_score_zero():
    t = _hand("hand-median-even")
    big = "open('big.bin', 'wb').write(b'x' * 10 ** 7)"
    for code in (big, "while True:\n    pass"):
        r = _run(SPEC.make(t, wall_seconds=3.0, cpu_seconds=1), _inject(t, code) + ["<tool>submit</tool>"])
        # Python ignores SIGXFSZ: the 1 MiB file limit shows as OSError 'File too large' at import
        mod = t.fix[0][:-3]  # every check of the module fails (rounding.py's still pass: break_zero gives the 0)
        assert r.done and r.reward == 0.0 and r.info["passed"] <= sum(c.module != mod for c in t.checks), r.info
        assert r.info["sandbox_status"] != "ok" or "File too large" in r.info["failures"][0], r.info
        obs = _run(SPEC.make(t, wall_seconds=3.0, cpu_seconds=1), _inject(t, code) + ["<tool>test</tool>"]).observation
        assert "did not finish" in obs or "could not load" in obs, obs


FAKE_PASS = r'''
import glob, re, sys
_seen = ""
for _p in ("../main.py", "../stdin.txt", "/sandbox/main.py", "/sandbox/stdin.txt", *glob.glob("/tmp/*/stdin.txt")):
    try:
        _seen += open(_p).read()
    except OSError:
        pass
_nonce = re.findall(r"R[0-9a-f]{24}", _seen)
for _n in _nonce + ["R" + "0" * 24, ""]:
    for _ in range(12):
        print(_n + ' {"ok": true, "value": 2.5}')
        print(_n + ' {"run": 3, "failures": [], "errors": [], "load_errors": [], "log": "OK"}')
print("Ran 3 tests in 0.001s\n\nOK\nPASS test_even\nall tests passed")
sys.stdout.flush()
'''


def test_fake_pass_lines_cannot_fool_the_harness():
    t = _hand("hand-median-even")
    untouched = _run(SPEC.make(t), ["<tool>submit</tool>"])
    r = _run(SPEC.make(t), _inject(t, FAKE_PASS) + ["<tool>submit</tool>"])
    assert r.info["sandbox_status"] == "ok" and r.info["passed"] == untouched.info["passed"] < r.info["total"]
    assert r.reward == untouched.reward < 1.0
    obs = _run(SPEC.make(t), _inject(t, FAKE_PASS) + ["<tool>test</tool>"]).observation
    assert obs.startswith("<result>ran 3 tests: 2 passed, 1 failed, 0 errors"), obs


# -- the parser, fuzzed -----------------------------------------------------------------------------------------

_FUZZ_TASK = None


def _fuzz_env():
    global _FUZZ_TASK
    _FUZZ_TASK = _FUZZ_TASK or _hand("hand-median-even")
    env = SPEC.make(_FUZZ_TASK)
    env.reset()
    return env


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["", "ls", "read", "edit", "cat", "open", "READ", "edit stats_tools.py", "read stats_tools.py",
                        "edit rounding.py 2-3", "edit tests/test_stats_tools.py"]),
       st.text(max_size=200))
def test_fuzz_any_tool_text_gives_a_clear_observation(verb, rest):
    env = _fuzz_env()
    body = (verb + " " + rest).replace("</tool>", "")
    if body.strip().lower().startswith(("test", "submit")):
        body = "x" + body  # the sandboxed tools have their own tests
    r = env.step(f"<tool>{body}</tool>")
    assert not r.done and r.observation.startswith("<result>") and r.observation.endswith("</result>")
    assert len(r.observation) < 20000
    for path, text in env.files.items():
        assert isinstance(text, str) and len(text) <= env.config.max_file_chars
    assert set(env.files) == {p for p, _ in _FUZZ_TASK.files}


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["stats_tools.py", "rounding.py", "tests/test_stats_tools.py", "../rounding.py", "nope.py"]),
       st.integers(-3, 30), st.integers(-3, 30), st.text(max_size=80), st.text(max_size=80), st.booleans())
def test_fuzz_edits_keep_the_repository_consistent(path, a, b, old, new, by_range):
    env = _fuzz_env()
    old, new = old.replace("</tool>", ""), new.replace("</tool>", "")
    call = f"edit {path} {a}-{b}<new>{new}</new>" if by_range else f"edit {path}<old>{old}</old><new>{new}</new>"
    r = env.step(f"<tool>{call}</tool>")
    assert not r.done and r.observation.startswith("<result>") and r.observation.endswith("</result>")
    changed = {p for p, t in env.files.items() if t != dict(_FUZZ_TASK.files)[p]}
    if r.observation.startswith("<result>error"):
        assert not changed
    else:
        assert r.observation.startswith(f"<result>edited {path}") and changed <= {path}
        assert swe._syntax_error(env.files[path]) is None  # the guard kept the module parsable


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_fuzz_text_without_a_complete_call_ends_the_episode(text):
    env = _fuzz_env()
    r = env.step(text.replace("</tool>", ""))
    assert r.done and r.reward == 0.0


# -- training through the CLI ----------------------------------------------------------------------------------

def test_trains_two_steps_through_the_cli_and_evaluates(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from reference_impls import train
    from reference_impls.measure import evaluate

    out = tmp_path / "run"
    assert train.main(["--impl", "swe-grpo", "--model", "tiny", "--steps", "2", "--prompts-per-step", "2",
                       "--group-size", "2", "--max-new-tokens-per-turn", "16", "--max-completion-tokens", "48",
                       "--sft-steps", "2", "--sft-examples", "4", "--train-pool", "64", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert json.loads((out / "config.json").read_text())["env"] == "swe"
    capsys.readouterr()
    evaluate.main(["--run", str(out), "--n", "2", "--json", "--max-new-tokens-per-turn", "16",
                   "--max-completion-tokens", "48"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == 2 and 0.0 <= result["accuracy"] <= 1.0


def test_the_swe_nodes_offer_the_implementation_and_the_preset_is_valid():
    from lab import catalog as lab

    for node in ("code-swe", "env-swe-interactive", "env-coding-swe"):
        assert [i.id for i in lab.for_node(node)] == ["swe-grpo"]
    impl = lab.get("swe-grpo")
    config = lab.preset_config(impl, "smollm2")
    assert config["max_new_tokens_per_turn"] == 96 and config["max_completion_tokens"] == 512
    assert lab.validate(impl, config) == {}

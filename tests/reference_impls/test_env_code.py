"""Code envs ("code", "code-refine"): generator, held-out split, solvability, reward, sandboxing of the
submission, parser fuzzing, and a 2-step training + evaluation of each of this issue's envs (sql too)."""
from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings, strategies as st

from reference_impls.envs import code, get_env

from hostile_programs import HOSTILE_PROGRAMS

SPEC, REFINE = get_env("code"), get_env("code-refine")


def test_deterministic_levels_and_families():
    a, b = SPEC.problems("train", 24, seed=2), SPEC.problems("train", 24, seed=2)
    assert a == b and {p.level for p in a} == {1, 2, 3}
    assert SPEC.problems("train", 24, seed=3) != a
    assert {p.family for p in SPEC.problems("train", 8, families=("rle", "fizz"))} == {"rle", "fizz"}
    assert all(len(p.hidden) == 3 for p in SPEC.problems("train", 5, n_hidden=3))


def test_heldout_is_disjoint():
    train, held = SPEC.problems("train", 120), SPEC.problems("heldout", 120)
    assert not {p.prompt for p in train} & {p.prompt for p in held}
    for f in code.FAMILIES:
        assert not set(f.train_phrasings) & set(f.heldout_phrasings)
        assert len(f.inputs.__code__.co_varnames) >= 2


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_reference_solutions_pass_all_hidden_tests(split):
    for p in SPEC.problems(split, len(code.FAMILIES), seed=5):
        r = SPEC.make(p).step(SPEC.demonstration(p)[0][1])
        assert r.done and r.reward == 1.0 and r.info["correct"], (p.family, r.info)


def test_partial_credit_and_all_pass_switch():
    p = next(p for p in SPEC.problems("train", 12) if p.family == "clamp")
    last = json.loads(p.hidden[-1][0])[0]  # right except on the last hidden input
    half = f"{p.solution}\n_ref = clamp\ndef clamp(x):\n    return _ref(x) if x != {last} else None"
    r = SPEC.make(p).step(f"<code>{half}</code>")
    assert 0.0 < r.reward < 1.0 and not r.info["correct"]
    assert SPEC.make(p, all_pass_only=True).step(f"<code>{half}</code>").reward == 0.0
    assert SPEC.make(p).step("no tag at all").reward == 0.0
    fenced = f"<code>\n```python\n{p.solution}\n```\n</code>"
    assert SPEC.make(p).step(fenced).reward == 1.0


def test_printing_fake_results_cannot_pass():
    p = SPEC.problems("train", 1)[0]
    cheat = ("import sys, re\nsrc = open('main.py').read()\nnonce = re.search(r\"NONCE, NAME, TESTS = '(\\w+)'\", src)\n"
             "for _ in range(20):\n    print((nonce.group(1) if nonce else 'R') + ' {\"ok\": true, \"value\": 0}')\n"
             f"def {p.name}(*a):\n    return 'nope'")
    r = SPEC.make(p).step(f"<code>{cheat}</code>")
    assert r.reward == 0.0


@pytest.mark.parametrize("hostile", HOSTILE_PROGRAMS)
def test_hostile_submissions_score_zero_and_leave_us_alive(hostile):
    p = SPEC.problems("train", 1)[0]
    r = SPEC.make(p, wall_seconds=3.0, cpu_seconds=1).step(f"<code>{hostile}</code>")
    assert r.done and r.reward == 0.0 and os.getpid() > 0


def test_refine_tool_reports_failures_then_submission():
    p = next(p for p in REFINE.problems("train", 12) if p.family == "add_const")
    env = REFINE.make(p, max_tool_calls=2)
    env.reset()
    obs = env.step("<run>def add_const(x):\n    return x</run>").observation
    assert obs.startswith("<result>0/2 visible tests passed") and "expected" in obs
    obs = env.step(f"<run>{p.solution}</run>").observation
    assert obs == "<result>2/2 visible tests passed</result>"
    r = env.step(f"<code>{p.solution}</code>")
    assert r.done and r.reward == 1.0 and r.info["tool_calls"] == 2
    env = REFINE.make(p, max_tool_calls=0)
    assert env.step("<run>x</run>").info["truncated"]


def test_refine_demonstration_is_correct():
    for p in REFINE.problems("train", 3, seed=7):
        env = REFINE.make(p)
        env.reset()
        segs = REFINE.demonstration(p)
        assert [s[0] for s in segs] == ["model", "env", "model"]
        assert env.step(segs[0][1]).observation == segs[1][1]
        assert env.step(segs[2][1]).reward == 1.0


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_fuzz_clean_code_and_steps_without_tags(text):
    assert isinstance(code.clean_code(text), str)
    p = SPEC.problems("train", 1)[0]
    text = text.replace("</code>", "").replace("</run>", "")
    assert SPEC.make(p).step(text).done
    r = REFINE.make(p).step(text)
    assert r.done and r.reward == 0.0


@settings(max_examples=15, deadline=None)
@given(st.text(max_size=120), st.sampled_from(["<code>", "<run>"]), st.sampled_from(["</code>", "</run>"]))
def test_fuzz_any_submission_gives_a_clear_result(body, head, tail):
    p = SPEC.problems("train", 1)[0]
    r = REFINE.make(p).step(head + body + tail)
    assert isinstance(r.reward, float)
    assert r.done or (r.observation.startswith("<result>") and r.observation.endswith("</result>"))


@pytest.mark.parametrize("env", ["sql", "code", "code-refine"])
def test_trains_two_steps_and_evaluates(env, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from reference_impls import train
    from reference_impls.measure import evaluate

    out = tmp_path / "run"
    train.main(["--env", env, "--model", "tiny", "--steps", "2", "--prompts-per-step", "2", "--group-size", "2",
                "--max-new-tokens-per-turn", "16", "--max-completion-tokens", "48", "--sft-steps", "2",
                "--sft-examples", "2", "--out", str(out)])  # two short SFT batches: the warm start runs, cheaply
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    capsys.readouterr()
    evaluate.main(["--run", str(out), "--n", "4", "--json", "--max-new-tokens-per-turn", "16",
                   "--max-completion-tokens", "48"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == 4 and 0.0 <= result["accuracy"] <= 1.0

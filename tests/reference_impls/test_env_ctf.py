"""The ctf env (reference_impls/envs/ctf.py): challenges by family, level and split, the flag stored in the form
the family says (decoded here independently), the reward on scripted answers, programs run inside the challenge
directory in the sandbox, bad actions named, the code environment's hostile programs contained, and two training
steps through the CLI."""
from __future__ import annotations

import base64
import os
import re

import pytest

from reference_impls.envs import get_env
from reference_impls.envs.ctf import FAMILIES, FLAG_FORM, SPLITS, caesar
from reference_impls.options import ConfigError

from episode_replay import play
from hostile_programs import HOSTILE_PROGRAMS

SPEC = get_env("ctf")
FAST = {"wall_seconds": 3.0, "cpu_seconds": 1}


def _problem(family="find", level=1, split="train"):
    return SPEC.problems(split, 1, families=(family,), levels=(level,))[0]


def _stored_line(p):
    text = dict(p.files)[p.holder]
    [line] = [ln for ln in text.splitlines() if ln.startswith(("blob: ", "message: ")) or "FLAG{" in ln
              and FLAG_FORM.search(ln.split()[-1])]
    return line.split()[-1]


# -- challenges --

def test_challenges_are_seeded_and_shaped_by_their_options():
    a = SPEC.problems("train", 12, seed=3)
    assert a == SPEC.problems("train", 12, seed=3) and a != SPEC.problems("train", 12, seed=4)
    assert {p.family for p in a} == set(FAMILIES) and all(FLAG_FORM.match(p.flag) for p in a)
    small, large = SPEC.problems("train", 6, levels=(1,)), SPEC.problems("train", 6, levels=(2,))
    assert all(6 <= len(p.files) <= 8 for p in small) and all(14 <= len(p.files) <= 20 for p in large)
    assert any(name.split("/")[-1].startswith(".") for p in large for name, _ in p.files)


def test_the_three_splits_hold_different_flags():
    flags = {split: {p.flag for s in (0, 1) for p in SPEC.problems(split, 60, seed=s)} for split in SPLITS}
    assert not flags["train"] & flags["heldout"] and not flags["train"] & flags["validation"]
    assert not flags["validation"] & flags["heldout"]
    with pytest.raises(ValueError, match="split must be one of"):
        SPEC.problems("test", 2)


def test_exactly_one_file_holds_the_flag_in_its_familys_form():
    for p in SPEC.problems("train", 24, seed=2):
        plain = [name for name, text in p.files if p.flag in text]
        stored = _stored_line(p)
        if p.family == "find":
            assert plain == [p.holder] and stored == p.flag
            continue
        assert plain == []  # only encoded or encrypted
        if p.family == "encoded":
            decodings = {stored[::-1]}
            if re.fullmatch(r"[0-9a-f]+", stored):
                decodings.add(bytes.fromhex(stored).decode("latin-1"))
            if re.fullmatch(r"[A-Za-z0-9+/=]+", stored) and len(stored) % 4 == 0:
                decodings.add(base64.b64decode(stored).decode("latin-1"))
            assert p.flag in decodings
        elif p.level == 1:
            assert p.flag in {caesar(stored, k) for k in range(26)}
        else:
            data = bytes.fromhex(stored)
            assert p.flag in {bytes(b ^ k for b in data).decode("latin-1") for k in range(256)}
    decoys = [text for p in SPEC.problems("train", 6, levels=(2,)) for _, text in p.files]
    assert any("FLAG{not_the_flag}" in t for t in decoys)


@pytest.mark.parametrize("split", SPLITS)
def test_the_demonstration_finds_the_flag_in_the_sandbox(split):
    for p in SPEC.problems(split, 6, seed=1):
        segments = SPEC.demonstrate(p)
        assert segments[1][1] == f"<result>./{p.holder} {p.flag}</result>"  # the solver's own sandboxed output
        result = play(SPEC.make(p), [text for role, text in segments if role == "model"])
        assert result.done and result.reward == 1.0 and result.info["correct"]


# -- the reward and the tools --

def test_only_the_exact_flag_is_rewarded():
    p = _problem()
    assert play(SPEC.make(p), [f"<answer>{p.flag}</answer>"]).reward == 1.0
    other = "FLAG{" + ("0" * 10 if p.flag != "FLAG{0000000000}" else "1" * 10) + "}"
    result = play(SPEC.make(p), [f"<answer>{other}</answer>"])
    assert result.reward == 0.0 and not result.info["correct"] and "parse_error" not in result.info
    result = play(SPEC.make(p), [f"<answer>{p.flag.lower()}</answer>"])
    assert result.reward == 0.0 and "not of the form FLAG{ten lowercase hex digits}" in result.info["parse_error"]
    result = play(SPEC.make(p), ["the flag must be somewhere"])
    assert result.done and result.reward == 0.0 and "no <run> program or <answer>" in result.info["parse_error"]


def test_programs_run_inside_the_challenge_directory_without_the_tree_file():
    p = _problem("find", 2)
    env = SPEC.make(p)
    env.reset()
    program = ("import os\nprint(sorted(os.listdir('.')))\nprint(sorted(os.listdir('..')))\n"
               f"print(open({p.holder!r}).read())")
    obs = env.step(f"<run>{program}</run>").observation
    top = sorted({name.split("/")[0] for name, _ in p.files})
    assert obs.startswith(f"<result>{top}") and "tree.json" not in obs and p.flag in obs


@pytest.mark.parametrize("program, named", [
    ("raise KeyError('nothing here')", "did not finish cleanly (error): KeyError: 'nothing here'"),
    ("", "error: the program is empty"),
    ("pass", "(the program printed nothing)"),
    ("print('x' * 2000)", "... [1200 more characters]"),
])
def test_a_bad_or_silent_program_is_named(program, named):
    env = SPEC.make(_problem())
    env.reset()
    result = env.step(f"<run>{program}</run>")
    assert not result.done and named in result.observation


def test_runs_and_program_length_are_limited():
    env = SPEC.make(_problem(), max_runs=1, max_code_chars=100)
    env.reset()
    assert "at most 100" in env.step("<run>" + "x = 1\n" * 30 + "</run>").observation
    last = env.step("<run>print(1)</run>")
    assert last.done and last.info["truncated"] and "runs were used" in last.info["error"]
    with pytest.raises(ConfigError, match="choose at least one"):
        SPEC.options({"families": []})


# -- the code environment's hostile programs --

@pytest.mark.parametrize("hostile", HOSTILE_PROGRAMS)
def test_hostile_programs_are_contained(hostile):
    p = _problem()
    env = SPEC.make(p, **FAST)
    env.reset()
    result = env.step(f"<run>{hostile}</run>")
    assert not result.done and result.observation.startswith("<result>") and p.flag not in result.observation
    assert len(result.observation) < 1200  # the output flood is cut
    end = env.step("<answer>FLAG{0123456789}</answer>")
    assert end.done and os.getpid() > 0


def test_trains_two_steps_through_the_cli(tmp_path):
    from reference_impls import train

    out = tmp_path / "ctf"
    rc = train.main(["--impl", "ctf-grpo", "--model", "tiny", "--steps", "2", "--prompts-per-step", "2",
                     "--group-size", "2", "--max-new-tokens-per-turn", "16", "--max-completion-tokens", "48",
                     "--sft-steps", "1", "--sft-examples", "2", "--out", str(out)])
    assert rc in (0, None)
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2

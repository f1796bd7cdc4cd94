"""The perception-proxy env (reference_impls/envs/perception_proxy.py): each family's problems against what their
observation shows (recounted here from the text), disjoint splits, the reward on scripted answers, the sketch
checked before an answer, bad actions named in the observation, the answer parser fuzzed, the rows saying they
are text proxies, and two training steps through the CLI."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

from reference_impls.envs import get_env
from reference_impls.envs.perception_proxy import (FAMILIES, SPLITS, IMPLEMENTATIONS, Problem, check_sketch,
                                                   parse_answer)
from reference_impls.options import ConfigError

from episode_replay import play

SPEC = get_env("perception-proxy")


def _grid(lines):
    """Rows of a rendered grid (``r: cells``) back as strings."""
    return [line.split(": ", 1)[1] for line in lines if re.match(r"^\s*\d+: ", line)]


def _components(rows, mark):
    """4-connected components of ``mark`` cells, each as a set of cells (an independent recount)."""
    cells = {(r, c) for r, row in enumerate(rows) for c, ch in enumerate(row) if ch == mark}
    seen, parts = set(), []
    for start in sorted(cells):
        if start in seen:
            continue
        stack, part = [start], set()
        while stack:
            cell = stack.pop()
            if cell in seen:
                continue
            seen.add(cell)
            part.add(cell)
            r, c = cell
            stack += [n for n in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)) if n in cells]
        parts.append(part)
    return parts


# -- problems: the gold answer is what the observation shows --

def test_problems_are_seeded_and_options_pick_families_and_levels():
    a = SPEC.problems("train", 20, seed=3)
    assert a == SPEC.problems("train", 20, seed=3) and a != SPEC.problems("train", 20, seed=4)
    assert {p.family for p in a} == set(FAMILIES) and {p.level for p in a} == {1, 2}
    assert {p.family for p in SPEC.problems("train", 6, families=("video",))} == {"video"}
    with pytest.raises(ConfigError, match="choose at least one"):
        SPEC.problems("train", 3, families=())
    with pytest.raises(ValueError, match="split must be one of"):
        SPEC.problems("test", 3)


def test_the_three_splits_hold_different_inputs():
    scenes = {split: {p.scene for s in (0, 1) for p in SPEC.problems(split, 100, seed=s)} for split in SPLITS}
    assert all(len(v) > 50 for v in scenes.values())
    assert not scenes["train"] & scenes["heldout"] and not scenes["train"] & scenes["validation"]
    assert not scenes["validation"] & scenes["heldout"]


def test_image_answers_count_and_locate_what_the_grid_shows():
    for p in SPEC.problems("train", 30, families=("image",)):
        rows = _grid(p.scene.splitlines())
        shapes = _components(rows, "#")
        if p.kind == "int":
            assert p.answer == str(len(shapes))
        else:
            largest = max(shapes, key=len)
            assert p.answer == "{},{}".format(*min(largest))
            assert sum(len(s) == len(largest) for s in shapes) == 1


def test_video_answers_name_the_object_that_moved_and_its_direction():
    for p in SPEC.problems("train", 20, families=("video",)):
        frames = [_grid(block.splitlines()) for block in p.scene.split("frame ")[1:]]
        where = [{ch: (r, c) for r, row in enumerate(f) for c, ch in enumerate(row) if ch != "."} for f in frames]
        moved = [ch for ch in where[0] if where[0][ch] != where[-1][ch]]
        assert len(moved) == 1
        (r0, c0), (r1, c1) = where[0][moved[0]], where[-1][moved[0]]
        direction = "down" if r1 > r0 else "up" if r1 < r0 else "right" if c1 > c0 else "left"
        assert p.answer == f"{moved[0]} {direction}"


def test_voxel_answers_are_the_nearest_object_in_the_same_column():
    for p in SPEC.problems("train", 20, families=("voxel",)):
        slices = [_grid(block.splitlines()) for block in p.scene.split("height ")[1:]]
        where = {ch: (z, r, c) for z, s in enumerate(slices) for r, row in enumerate(s) for c, ch in enumerate(row)
                 if ch != "."}
        asked = re.search(r"directly (above|below) ([A-Z])", p.question)
        z, r, c = where[asked.group(2)]
        column = sorted((oz, ch) for ch, (oz, orow, ocol) in where.items() if (orow, ocol) == (r, c))
        higher = [ch for oz, ch in column if oz > z]
        lower = [ch for oz, ch in column if oz < z]
        assert p.answer == (higher[0] if asked.group(1) == "above" else lower[-1])


def test_sketch_truth_and_answer_follow_the_description():
    for p in SPEC.problems("train", 20, families=("sketch",)):
        a, b = [tuple(map(int, m)) for m in re.findall(r"rows (\d+)-(\d+) and columns (\d+)-(\d+)", p.scene)]
        both = sum(a[0] <= r <= a[1] and a[2] <= c <= a[3] and b[0] <= r <= b[1] and b[2] <= c <= b[3]
                   for r in range(len(p.sketch)) for c in range(len(p.sketch[0])))
        area = (a[1] - a[0] + 1) * (a[3] - a[2] + 1) + (b[1] - b[0] + 1) * (b[3] - b[2] + 1)
        assert "".join(p.sketch).count("X") == both
        assert p.answer == str(both if "both" in p.question else area - 2 * both)


def test_audio_answers_are_the_period_or_the_beat_interval():
    for p in SPEC.problems("train", 20, families=("audio",), levels=(1,)):
        samples = [int(v) for v in p.scene.splitlines()[-1].split()]
        k = int(p.answer)
        if "tone" in p.question:  # exact at level 1: the clip repeats after k samples and after no fewer
            assert all(samples[t] == samples[t + k] for t in range(len(samples) - k))
            assert not any(all(samples[t] == samples[t + j] for t in range(len(samples) - j)) for j in range(1, k))
        else:
            beats = [t for t, v in enumerate(samples) if v > 4]
            assert {b - a for a, b in zip(beats, beats[1:])} == {k}


@pytest.mark.parametrize("split", SPLITS)
def test_the_demonstration_earns_the_full_reward(split):
    for p in SPEC.problems(split, 20, seed=1):
        segments = SPEC.demonstrate(p)
        result = play(SPEC.make(p), [text for role, text in segments if role == "model"])
        assert result.done and result.reward == 1.0 and result.info["correct"], (p.family, result.info)
        assert len(segments) == (3 if p.family == "sketch" else 1)


# -- the reward, scripted --

VIDEO = Problem("video", 1, "which moved?", "frames", "B left", "motion")
SKETCH = Problem("sketch", 1, "how many both?", "scene", "2", "int", ("AAX.", "..BB"))


@pytest.mark.parametrize("answer, reward", [("B left", 1.0), ("b LEFT.", 1.0), ("B moves left", 1.0),
                                            ("B right", 0.0), ("A left", 0.0)])
def test_a_video_answer_is_right_only_with_the_object_and_the_direction(answer, reward):
    assert play(SPEC.make(VIDEO), [f"<answer>{answer}</answer>"]).reward == reward


def test_an_unreadable_answer_earns_zero_and_says_the_form():
    result = play(SPEC.make(VIDEO), ["<answer>the letter B went to the left</answer>"])
    assert result.done and result.reward == 0.0 and "LETTER DIRECTION" in result.info["parse_error"]
    result = play(SPEC.make(VIDEO), ["I think B moved."])
    assert result.done and result.reward == 0.0 and "no answer" in result.info["parse_error"]


def test_the_sketch_is_checked_before_the_answer_and_both_are_paid():
    env = SPEC.make(SKETCH)
    env.reset()
    early = env.step("<answer>2</answer>")
    assert not early.done and "draw the sketch first" in early.observation
    wrong = env.step("<sketch>\nAAX.\n..B.\n</sketch>")
    assert not wrong.done and wrong.observation == "<check>7 of 8 cells match the description; rows 1 differ from it</check>"
    right = env.step("<sketch>0: AAX.\n1: ..BB</sketch>")
    assert "all 8 cells right" in right.observation and right.info["sketch_ok"]
    end = env.step("<answer>2</answer>")
    assert end.done and end.reward == 1.0 and end.info["correct"]
    # a wrong sketch and a right answer: the answer's weight only
    assert play(SPEC.make(SKETCH), ["<sketch>....\n....</sketch>", "<answer>2</answer>"]).reward == 0.5
    assert play(SPEC.make(SKETCH, sketch_weight=0.2, answer_weight=0.8),
                ["<sketch>AAX.\n..BB</sketch>", "<answer>3</answer>"]).reward == pytest.approx(0.2)


@pytest.mark.parametrize("sketch, named", [("AAX.", "has 1 rows; the grid has 2"),
                                           ("AAX.\n..BZ", "row 1 uses 'Z'"),
                                           ("AAX\n..BB", "row 0 has 3 cells; the grid has 4 columns"),
                                           ("A" * 3000, "at most 2000")])
def test_a_bad_sketch_is_named(sketch, named):
    right, text = check_sketch(sketch, SKETCH.sketch)
    assert right == 0 and named in text


def test_sketches_are_limited_and_other_families_have_no_sketch_step():
    env = SPEC.make(SKETCH, max_sketches=1)
    env.reset()
    assert "1 of 8" not in env.step("<sketch>....\n....</sketch>").observation
    assert "all 1 sketches were checked" in env.step("<sketch>AAX.\n..BB</sketch>").observation
    assert env.step("<sketch>AAX.\n..BB</sketch>").info["truncated"]
    env = SPEC.make(VIDEO)
    env.reset()
    refused = env.step("<sketch>..</sketch>")
    assert not refused.done and "has no sketch step" in refused.observation
    assert env.step("<sketch>..</sketch>").info["truncated"]


def test_options_are_checked():
    with pytest.raises(ConfigError, match="both are 0"):
        SPEC.options({"sketch_weight": 0, "answer_weight": 0})
    with pytest.raises(ConfigError):
        SPEC.options({"families": ["smell"]})


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80), st.sampled_from(["int", "cell", "letter", "motion"]))
def test_fuzz_the_answer_parser_never_raises(text, kind):
    answer, error = parse_answer(text, kind)
    assert (answer is None) != (error == "")


# -- the rows say what they are --

def test_each_row_serves_its_node_and_says_it_is_a_text_proxy():
    nodes = {n: impl for impl in IMPLEMENTATIONS for n in impl.nodes}
    assert set(nodes) == {"vision", "vision-image", "vision-video", "vision-3d", "perception-generation-driven",
                          "perception-audio"}
    for impl in IMPLEMENTATIONS:
        assert impl.changes.startswith("A TEXT PROXY, not "), impl.id
        for family in impl.env_options["families"]:
            assert family in FAMILIES
    assert nodes["perception-audio"].env_options["families"] == ("audio",)


def test_trains_two_steps_through_the_cli(tmp_path):
    from reference_impls import train

    out = tmp_path / "perception"
    rc = train.main(["--impl", "perception-proxy-sketch-grpo", "--model", "tiny", "--steps", "2",
                     "--prompts-per-step", "2", "--group-size", "2", "--max-new-tokens-per-turn", "16",
                     "--max-completion-tokens", "48", "--sft-steps", "1", "--sft-examples", "2", "--out", str(out)])
    assert rc in (0, None)
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2

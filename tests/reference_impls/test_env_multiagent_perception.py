"""Issue 22: the solver-verifier env with role-credit GRPO (multi-agent) and the zoom env (active perception
as a text proxy)."""
from __future__ import annotations

import json
import os
import time

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from reference_impls.envs import get_env  # noqa: E402
from reference_impls.envs import solver_verifier as sv  # noqa: E402
from reference_impls.envs import zoom  # noqa: E402
from reference_impls.options import ConfigError  # noqa: E402

NAMES = ("solver-verifier", "zoom")


def _key(p):
    return p.expression if hasattr(p, "expression") else (p.family, p.target, p.answer)


# ----------------------------------------------------------------------------------------------------
# generators, splits, demonstrations

@pytest.mark.parametrize("name", NAMES)
def test_generator_is_seeded_with_levels_and_a_disjoint_heldout_split(name):
    spec = get_env(name)
    a, b = spec.problems("train", n=30, seed=3), spec.problems("train", n=30, seed=3)
    assert a == b and a != spec.problems("train", n=30, seed=4)
    assert {p.level for p in a} == {1, 2, 3}
    assert {p.level for p in spec.problems("train", n=6, seed=0, levels=(2,))} == {2}
    train = {_key(p) for p in spec.problems("train", n=300, seed=0)}
    heldout = {_key(p) for p in spec.problems("heldout", n=100, seed=0)}
    assert train and heldout and not train & heldout
    assert all(p.split == "heldout" for p in spec.problems("heldout", n=10, seed=0))


@pytest.mark.parametrize("name", NAMES)
def test_every_demonstration_solves_its_problem(name):
    spec = get_env(name)
    for p in spec.problems("train", n=60, seed=1):
        env = spec.make(p)
        env.reset()
        segments = spec.demonstration(p)
        assert segments[-1][0] == "model"
        result = None
        for role, text in segments:
            if role == "model" or text.startswith("I think it is"):  # a planted draft is env text
                result = env.step(text)
        assert result.done and result.reward == 1.0 and result.info["correct"], p.uid


def test_planted_drafts_carry_no_loss_and_show_a_rejection():
    problems = get_env("solver-verifier").problems("train", n=60, seed=0)
    planted = [p for p in problems if p.planted is not None]
    assert 10 < len(planted) < 35  # about one in three
    segments = sv.demonstration(planted[0])
    assert segments[0] == ("env", f"I think it is {planted[0].planted}. <answer>{planted[0].planted}</answer>")
    assert segments[2][0] == "model" and segments[2][1].startswith("<verdict>reject:")
    assert all(planted[0].planted not in text for role, text in segments if role == "model" and "answer>" in text)


# ----------------------------------------------------------------------------------------------------
# solver-verifier: rewards by hand

PROBLEM = sv.Problem("7 + 6 * 4", "31", ("6 * 4 = 24", "7 + 24 = 31"), 2, "level-2", "train", "hand", None)


def _play(turns, **options):
    env = sv.SolverVerifierEnv(PROBLEM, sv.SolverVerifierConfig(**options))
    env.reset()
    result = None
    for text in turns:
        assert result is None or not result.done
        result = env.step(text)
    return result


@pytest.mark.parametrize("turns, solver, verifier, correct", [
    (["<answer>31</answer>", "<verdict>accept</verdict>"], 1.0, 1.0, True),
    (["<answer>30</answer>", "<verdict>accept</verdict>"], 0.0, 0.0, False),  # accepted a wrong answer
    (["<answer>30</answer>", "<verdict>reject: 6*4 is 24</verdict>", "<answer>31</answer>",
      "<verdict>accept</verdict>"], 1.0, 1.0, True),
    # a wrong rejection of a right answer, then the same answer accepted: verdicts right 1 of 2
    (["<answer>31</answer>", "<verdict>reject</verdict>", "<answer>31</answer>", "<verdict>accept</verdict>"],
     1.0, 0.5 * 1.0 + 0.5 * 0.5, True),
    # two right rejections of wrong answers: the rounds run out, the last proposal stands
    (["<answer>30</answer>", "<verdict>reject</verdict>", "<answer>29</answer>", "<verdict>reject</verdict>"],
     0.0, 0.5 * 0.0 + 0.5 * 1.0, False),
    # no answer; an unreadable verdict counts as a wrong verdict and a rejection
    (["I do not know", "<verdict>maybe</verdict>", "<answer>31</answer>", "<verdict>accept</verdict>"],
     1.0, 0.5 * 1.0 + 0.5 * 0.5, True),
])
def test_role_rewards_by_hand(turns, solver, verifier, correct):
    result = _play(turns)
    assert result.done and result.info["correct"] is correct and result.reward == float(correct)
    assert result.info["role_rewards"] == pytest.approx({"solver": solver, "verifier": verifier})
    assert result.info["turn_roles"] == ["solver", "verifier"] * (len(turns) // 2)


def test_verdict_weight_and_rounds_options():
    turns = ["<answer>30</answer>", "<verdict>reject</verdict>"]
    one = _play(turns, max_rounds=1, verdict_weight=1.0)
    assert one.done and one.info["role_rewards"] == {"solver": 0.0, "verifier": 1.0}
    assert not _play(turns, max_rounds=2).done  # the solver revises
    with pytest.raises(ConfigError, match="--train-roles"):
        get_env("solver-verifier").options({"train_roles": ("judge",)})
    with pytest.raises(ConfigError, match="at least one role"):
        get_env("solver-verifier").options({"train_roles": ()})


def test_reject_reason_reaches_the_solver():
    env = sv.SolverVerifierEnv(PROBLEM)
    env.reset()
    obs = env.step("<answer>30</answer>").observation
    assert "answered 30" in obs and obs.startswith("<turn>VERIFIER")
    obs = env.step("<verdict>Reject: 6 * 4 is 24, not 23</verdict>").observation
    assert obs.startswith("<turn>SOLVER") and "6 * 4 is 24, not 23" in obs
    assert sv.parse_verdict("<verdict> accept </verdict>") == ("accept", "")
    assert sv.parse_verdict("<verdict>acceptable</verdict>")[0] is None
    assert sv.parse_proposal("<answer>1,204</answer>") == 1204 and sv.parse_proposal("<answer>x</answer>") is None


# ----------------------------------------------------------------------------------------------------
# role credit (role-grpo)

class _S:
    def __init__(self, spans, rewards, mask_len):
        self.turn_spans, self.info, self.loss_mask = spans, {"role_rewards": rewards}, [1] * mask_len


def test_role_advantages_by_hand():
    from reference_impls.algorithms.agentic.role_grpo import role_token_advantages

    role = sv.SolverVerifierEnv.role_of_turn
    samples = [_S([(0, 3), (5, 7)], {"solver": 1.0, "verifier": 0.5}, 7),
               _S([(0, 2), (4, 6), (8, 9)], {"solver": 0.0, "verifier": 1.0}, 9),
               _S([(0, 2)], {"solver": 1.0, "verifier": 1.0}, 2),  # a second group, all equal: exactly 0
               _S([(0, 1)], {"solver": 1.0, "verifier": 1.0}, 1)]
    adv, per_role = role_token_advantages(samples, role, sv.ROLES, group_size=2, width=9, scale_rewards=False)
    assert per_role["solver"].tolist() == [0.5, -0.5, 0.0, 0.0]
    assert per_role["verifier"].tolist() == [-0.25, 0.25, 0.0, 0.0]
    expected = torch.zeros(4, 9)
    expected[0, 0:3], expected[0, 5:7] = 0.5, -0.25
    expected[1, 0:2], expected[1, 4:6], expected[1, 8:9] = -0.5, 0.25, -0.5  # the third turn is the solver's again
    assert torch.equal(adv, expected)
    scaled, _ = role_token_advantages(samples, role, sv.ROLES, 2, 9, scale_rewards=True)
    std = torch.tensor([1.0, 0.0]).std()
    assert scaled[0, 0] == pytest.approx(0.5 / (float(std) + 1e-4)) and scaled[2].abs().sum() == 0


def test_untrained_role_tokens_are_masked_and_get_zero_gradient():
    from reference_impls.algorithms.grpo import grpo
    from reference_impls.algorithms.agentic.role_grpo import mask_untrained_turns, role_token_advantages

    role = sv.SolverVerifierEnv.role_of_turn
    samples = [_S([(0, 3), (3, 5)], {"solver": 1.0, "verifier": 0.0}, 5),
               _S([(0, 2), (2, 5)], {"solver": 0.0, "verifier": 1.0}, 5)]
    masked = mask_untrained_turns(samples, role, trained=("verifier",))
    assert masked == [(0, 0, 3), (1, 0, 2)]
    assert samples[0].loss_mask == [0, 0, 0, 1, 1] and samples[1].loss_mask == [0, 0, 1, 1, 1]
    adv, _ = role_token_advantages(samples, role, sv.ROLES, 2, 5, scale_rewards=False)
    mask = torch.tensor([s.loss_mask for s in samples], dtype=torch.float32)
    logps = torch.full((2, 5), -1.0, requires_grad=True)
    loss, _ = grpo.grpo_loss(logps, logps.detach(), adv, mask, grpo.Config())
    loss.backward()
    assert torch.all(logps.grad[mask == 0] == 0) and torch.all(logps.grad[mask == 1] != 0)
    # the verifier's tokens move in the direction of the verifier's advantage only
    assert torch.all(logps.grad[0, 3:] > 0) and torch.all(logps.grad[1, 2:] < 0)


def test_role_grpo_refuses_an_env_without_roles():
    from reference_impls.run_config import TrainConfig, resolve

    with pytest.raises(ConfigError, match="multi-role"):
        resolve(TrainConfig(algo="role-grpo", env="calculator", out="x"))
    for switch, flag in (({"dynamic_sampling": True}, "dynamic-sampling"), ({"overlong_buffer": 8}, "overlong-buffer")):
        with pytest.raises(ConfigError, match=flag):
            resolve(TrainConfig(algo="role-grpo", env="solver-verifier", algo_config=switch, out="x"))
    resolve(TrainConfig(algo="role-grpo", env="solver-verifier", out="x"))


# ----------------------------------------------------------------------------------------------------
# zoom: the tool against hand grids, grounding, budget

GRID = ("....", ".a..", "..Q.", "#...")


def test_crop_thumbnail_and_zoom_parser_on_a_hand_grid():
    assert zoom.crop(GRID, 1, 1, 2, 3).splitlines()[1:] == ["1 a..", "2 .Q."]
    assert zoom.thumbnail(GRID, 2) == ["1.", "**"]  # top-left: one dim mark; bottom: '#' and 'Q' are bright
    assert zoom.parse_zoom("1,1,2,3", 4, 4) == ((1, 1, 2, 3), "")
    assert zoom.parse_zoom(" (1, 1) (2, 3) ", 4, 4)[0] == (1, 1, 2, 3)
    assert "outside the image" in zoom.parse_zoom("0,0,4,1", 4, 4)[1]
    assert "too large" in zoom.parse_zoom("0,0,3,3", 4, 2)[1]
    assert "below and right" in zoom.parse_zoom("2,2,1,1", 4, 4)[1]
    assert "four numbers" in zoom.parse_zoom("1,2,3", 4, 4)[1]
    assert "other characters" in zoom.parse_zoom("__import__('os')", 4, 4)[1]


def _hand_problem(**kw):
    p = dict(rows=GRID, block=2, question="q", answer="Q", target=(2, 2), bright_blocks=((1, 0), (1, 1)), level=1,
             family="odd-letter", split="train", uid="hand")
    return zoom.Problem(**{**p, **kw})


@pytest.mark.parametrize("answer, reward, correct", [
    ("Q at 2,2", 1.0, True), ("Q at (2, 2)", 1.0, True), ("Q at 2,1", 0.5, False), ("a at 2,2", 0.5, False),
    ("a at 1,1", 0.0, False), ("Q", 0.0, False), ("2,2", 0.0, False),
])
def test_answer_and_grounding_rewards(answer, reward, correct):
    env = zoom.ZoomEnv(_hand_problem())
    env.reset()
    result = env.step(f"<answer>{answer}</answer>")
    assert result.done and result.reward == reward and result.info["correct"] is correct


def test_perception_report_by_hand():
    """Answer and grounding scored apart, the answered share, zooms and levels, on hand-played episodes."""
    from types import SimpleNamespace

    problems = [_hand_problem(), _hand_problem(level=2)]
    episodes = [(0, ["<zoom>2,2,2,2</zoom>", "<answer>Q at 2,2</answer>"]),  # right and grounded, 1 zoom
                (0, ["<answer>Q at 2,1</answer>"]),                          # right symbol, wrong cell
                (1, ["<answer>a at 2,2</answer>"]),                          # right cell, wrong symbol
                (1, ["<answer>Q</answer>"])]                                 # unreadable: no cell
    samples = []
    for group, turns in episodes:
        env = zoom.ZoomEnv(problems[group])
        env.reset()
        for text in turns:
            result = env.step(text)
        samples.append(SimpleNamespace(group=group, info=result.info, truncated=False))
    samples.append(SimpleNamespace(group=1, info={"truncated": True}, truncated=True))  # cut off by the token cap
    report = zoom.perception_report(samples, problems)
    assert report == {"n": 5, "correct": 0.2, "answer_ok": 0.4, "grounding_ok": 0.4, "answered": 0.6,
                      "mean_zooms": 0.2, "truncated": 0.2, "by_level": {"1": 0.5, "2": 0.0}}


def test_reward_weights_are_options():
    env = zoom.ZoomEnv(_hand_problem(), zoom.ZoomConfig(answer_weight=0.0, grounding_weight=1.0))
    env.reset()
    result = env.step("<answer>a at 2,2</answer>")  # wrong symbol, right cell: grounding only counts
    assert result.reward == 1.0 and result.info["correct"] and not result.info["answer_ok"]


def test_zoom_options_that_cannot_work_are_refused():
    spec = get_env("zoom")
    with pytest.raises(ConfigError, match="both are 0"):
        spec.options({"answer_weight": 0.0, "grounding_weight": 0.0})
    with pytest.raises(ConfigError, match="at least one"):
        spec.options({"families": ()})
    with pytest.raises(ConfigError, match="--max-crop"):
        spec.options({"max_crop": 0})


def test_zoom_budget_and_passive_mode():
    env = zoom.ZoomEnv(_hand_problem(), zoom.ZoomConfig(max_zooms=1, max_crop=4))
    env.reset()
    first = env.step("<zoom>2,2,2,2</zoom>")
    assert first.observation == "<view>rows 2-2, cols 2-2 (each line: the row number, then the cells of cols 2-2)\n2 Q</view>"
    assert "no zooms left" in env.step("<zoom>0,0,1,1</zoom>").observation
    assert env.step("<zoom>0,0,1,1</zoom>").done
    passive = zoom.ZoomEnv(_hand_problem(), zoom.ZoomConfig(max_zooms=0))
    assert "No zooms are allowed" in passive.reset()[1]["content"]
    assert "no zooms left" in passive.step("<zoom>0,0,1,1</zoom>").observation


def test_problems_have_one_target_and_a_faithful_thumbnail():
    for p in get_env("zoom").problems("train", n=30, seed=2):
        flat = "".join(p.rows)
        n = len(p.rows)
        assert len(p.rows) == zoom.SIZE[p.level] and all(len(r) == n for r in p.rows)
        r, c = p.target
        if p.family == "odd-letter":
            assert sum(ch.isupper() for ch in flat) == 1 and p.rows[r][c] == p.answer
        else:
            assert flat.count("@") == 1 and p.rows[r][c] == "@" and p.rows[r][c + 1] == p.answer
        stars = [(i, j) for i, line in enumerate(zoom.thumbnail(p.rows, p.block)) for j, ch in enumerate(line)
                 if ch == "*"]
        assert stars == list(p.bright_blocks) and (r // p.block, c // p.block) in stars
        assert len(stars) == 1 + zoom.BRIGHT_DISTRACTORS[p.level]


# ----------------------------------------------------------------------------------------------------
# fuzzed parsers: any text gives a clear observation, never an exception, fast

texts = st.one_of(
    st.text(max_size=300),
    st.builds(lambda b: f"<zoom>{b}</zoom>", st.text(max_size=60)),
    st.builds(lambda b: f"<answer>{b}</answer>", st.text(max_size=60)),
    st.builds(lambda b: f"<verdict>{b}</verdict>", st.text(max_size=60)),
)
_PROBLEMS = {n: get_env(n).problems("train", n=1, seed=0, levels=(3,))[0] for n in NAMES}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(NAMES), st.lists(texts, min_size=1, max_size=4))
def test_fuzzed_turns_never_raise_and_are_fast(name, turns):
    env = get_env(name).make(_PROBLEMS[name])
    env.reset()
    for text in turns:
        t = time.perf_counter()
        result = env.step(text)
        assert time.perf_counter() - t < 0.1
        if result.done:
            assert "correct" in result.info and 0.0 <= result.reward <= 1.0
            break
        assert isinstance(result.observation, str) and result.observation.startswith("<")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_parser_fuzz(text):
    box, error = zoom.parse_zoom(text, 40, 8)
    assert (box is None) == bool(error)
    if box is not None:
        r0, c0, r1, c1 = box
        assert 0 <= r0 <= r1 < 40 and 0 <= c0 <= c1 < 40 and r1 - r0 < 8 and c1 - c0 < 8
    parsed = zoom.parse_answer(text)
    assert parsed is None or (len(parsed[0]) == 1 and all(v >= 0 for v in parsed[1]))
    verdict, reason = sv.parse_verdict(text)
    assert verdict in (None, "accept", "reject") and isinstance(reason, str)


# ----------------------------------------------------------------------------------------------------
# the RL-free pipeline and training through the CLI (tiny model)

def test_rl_free_pipeline_runs_on_heldout_problems():
    from reference_impls.measure import mas_pipeline
    from reference_impls.models import load_policy

    model, tokenizer = load_policy("tiny")
    result = mas_pipeline.run_pipeline(model, tokenizer, n=3, max_new_tokens_per_turn=8, max_completion_tokens=40)
    assert result["n"] == 3 and 0.0 <= result["accuracy"] <= 1.0 and result["env"] == "solver-verifier"
    assert set(result) >= {"solo_accuracy", "verdict_accuracy", "accept_rate", "rounds", "role_rewards", "by_family"}


def test_rollout_turns_line_up_with_the_env_roles(tiny):
    """role-grpo reads a turn's role from its index: the rollout's turn spans must be the env's turns."""
    from scripted_policies import nudged_tiny

    from reference_impls.algorithms.agentic.role_grpo import mask_untrained_turns
    from reference_impls.rollout import RolloutConfig, rollout

    tokenizer = tiny[1]
    model = nudged_tiny(tiny[0], tokenizer, ("<answer>31</answer>", "<verdict>reject</verdict>",
                                             "<verdict>accept</verdict>"))
    spec = get_env("solver-verifier")
    cfg = RolloutConfig(group_size=3, max_new_tokens_per_turn=12, max_completion_tokens=400)
    samples, _ = rollout(model, tokenizer, spec, spec.problems("train", n=2, seed=0), cfg)
    finished = [s for s in samples if not s.truncated]
    assert finished and all(len(s.turn_spans) == len(s.info["turn_roles"]) >= 2 for s in finished)
    before = [list(s.loss_mask) for s in samples]
    mask_untrained_turns(samples, sv.SolverVerifierEnv.role_of_turn, ("solver",))
    for s, old in zip(samples, before):
        for k, (a, b) in enumerate(s.turn_spans):
            assert s.loss_mask[a:b] == (old[a:b] if k % 2 == 0 else [0] * (b - a))


class _Done:
    def __init__(self, info, truncated=False):
        self.info, self.truncated = info, truncated


def test_pipeline_summary_by_hand():
    from reference_impls.measure.mas_pipeline import summarize

    samples = [_Done({"correct": True, "first_correct": False, "verdict_accuracy": 1.0, "accepted": True,
                      "rounds": 2, "role_rewards": {"solver": 1.0, "verifier": 1.0}}),
               _Done({"correct": False, "first_correct": False, "verdict_accuracy": 0.0, "accepted": True,
                      "rounds": 1, "role_rewards": {"solver": 0.0, "verifier": 0.0}}),
               _Done({"correct": False, "truncated": True}, truncated=True)]
    out = summarize(samples)
    assert out["accuracy"] == round(1 / 3, 4) and out["solo_accuracy"] == 0.0 and out["rounds"] == 1.5
    assert out["role_rewards"] == {"solver": round(1 / 3, 4), "verifier": round(1 / 3, 4)}
    assert out["truncated"] == round(1 / 3, 4)


@pytest.mark.parametrize("impl", ["solver-verifier-role-grpo", "solver-verifier-train-verifier", "zoom-grpo"])
def test_trains_two_steps_through_the_cli(impl, tmp_path, capsys):
    from reference_impls import train
    from reference_impls.measure import evaluate, mas_pipeline

    out = tmp_path / impl
    rc = train.main(["--impl", impl, "--model", "tiny", "--steps", "2", "--prompts-per-step", "2", "--group-size",
                     "2", "--max-new-tokens-per-turn", "16", "--max-completion-tokens", "64", "--sft-steps", "1",
                     "--sft-examples", "2", "--out", str(out)])
    assert rc in (0, None)
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert len([x for x in lines if "loss" in x]) >= 2
    if impl.startswith("solver-verifier"):
        assert "reward_verifier" in lines[-1] and "reward_solver" in lines[-1]
    capsys.readouterr()
    assert evaluate.main(["--run", str(out), "--n", "2", "--json", "--max-new-tokens-per-turn", "8",
                          "--max-completion-tokens", "40"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["n"] == 2
    if impl == "solver-verifier-role-grpo":
        assert mas_pipeline.main(["--run", str(out), "--n", "2", "--json", "--max-new-tokens-per-turn", "8",
                                  "--max-completion-tokens", "40"]) == 0
        assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["n"] == 2

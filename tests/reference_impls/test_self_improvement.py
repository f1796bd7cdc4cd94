"""Self-improvement (issue 22): the self-correction env's feedback modes and SCoRe-style reward, the measurement of
first vs second attempts, the self-play verifier (fuzzed), AZR's learnability reward, the self-play collect hook,
and each implementation training two steps through the CLI."""
import json
import math
import random
from fractions import Fraction
from types import SimpleNamespace

import pytest
import torch

from reference_impls.algorithms.agentic import absolute_zero
from reference_impls.envs import get_env
from reference_impls.envs import selfcorrect as sc
from reference_impls.envs import selfplay as sp
from reference_impls.options import ConfigError, build
from reference_impls.rollout import RolloutConfig, Sample


# ---- (a) feedback modes ---------------------------------------------------------------------------------
def _problem(**options):
    task = get_env("self-correct")
    return task, task.problems("train", n=1, seed=0, **options)[0]


def _gold(problem):
    return str(problem.answer.numerator) if problem.answer.denominator == 1 else str(float(problem.answer))


def test_self_feedback_never_reveals_whether_attempt_one_was_right():
    task, problem = _problem(levels=(1,))
    gold = _gold(problem)
    right, wrong, none = (task.make(problem, feedback="self") for _ in range(3))
    for env in (right, wrong, none):
        env.reset()
    obs = [right.step(f"<answer>{gold}</answer>"), wrong.step(f"<answer>{int(gold) + 3}</answer>"),
           none.step("I am not sure")]
    assert all(not o.done for o in obs)
    assert obs[0].observation == obs[1].observation == obs[2].observation == sc.SELF_FEEDBACK
    assert obs[0].info == obs[1].info == {}  # nothing about correctness travels with the observation either


def test_external_feedback_ends_a_right_attempt_and_hints_a_wrong_one():
    task, problem = _problem(levels=(1,))
    gold = int(_gold(problem))
    env = task.make(problem, feedback="external", hint="direction")
    env.reset()
    done = env.step(f"<answer>{gold}</answer>")
    assert done.done and done.reward == 1.0 and done.info["flip"] == "right->right"
    env = task.make(problem, feedback="external", hint="direction")
    env.reset()
    low = env.step(f"<answer>{gold - 5}</answer>")
    assert not low.done and "is incorrect" in low.observation and "larger" in low.observation
    assert str(gold) not in low.observation  # the hint gives a direction, never the answer
    final = env.step(f"<check>recomputed</check><answer>{gold}</answer>")
    assert final.done and final.reward == 1.0 and final.info["flip"] == "wrong->right" and final.info["checked"]
    plain = task.make(problem, feedback="external")
    plain.reset()
    high = plain.step(f"<answer>{gold + 5}</answer>")
    assert "larger" not in high.observation and "smaller" not in high.observation


# ---- (b) SCoRe-style reward -----------------------------------------------------------------------------
@pytest.mark.parametrize("first, second, credit_first, alpha, expected", [
    (False, True, False, 0.0, 1.0), (True, False, False, 0.0, 0.0),      # plain second-attempt reward
    (False, True, True, 1.0, 0.0 + 1.0 + 1.0), (True, False, True, 1.0, 1.0 + 0.0 - 1.0),  # SCoRe stage II + bonus
    (True, True, True, 2.5, 2.0), (False, False, True, 2.5, 0.0), (False, True, False, 0.5, 1.5),
])
def test_self_correction_reward_by_hand(first, second, credit_first, alpha, expected):
    assert sc.self_correction_reward(first, second, credit_first, alpha) == pytest.approx(expected)


def test_score_reward_in_full_episodes():
    task, problem = _problem(levels=(1,))
    gold = int(_gold(problem))
    options = {"feedback": "self", "credit_first": True, "flip_bonus": 1.0}
    env = task.make(problem, **options)
    env.reset()
    env.step(f"<answer>{gold + 1}</answer>")
    end = env.step(f"<answer>{gold}</answer>")
    assert end.reward == 2.0 and end.info["correct"] and not end.info["first_correct"]
    env = task.make(problem, **options)
    env.reset()
    env.step(f"<answer>{gold}</answer>")
    end = env.step("<answer>not a number</answer>")
    assert end.reward == 0.0 and end.info["flip"] == "right->wrong" and not end.info["correct"]


def test_demonstrations_replay_to_a_correct_second_attempt():
    task = get_env("self-correct")
    problems = task.problems("train", n=40, seed=0, levels=(1, 2, 3))
    slips = 0
    for problem in problems:
        env = task.make(problem)
        env.reset()
        segments = task.demonstration(problem)
        assert env.step(segments[0][1]).observation == segments[1][1]
        end = env.step(segments[2][1])
        assert end.done and end.info["correct"] and end.info["checked"]
        slips += not end.info["first_correct"]
    assert 0 < slips < len(problems)  # some demonstrations fix a slip, most keep a right answer
    clean = task.problems("train", n=20, seed=0, demo_slip_rate=0.0)
    assert all(p.demo_first == _gold(p) for p in clean)


def test_train_and_heldout_problems_are_disjoint():
    task = get_env("self-correct")
    train = {p.question for p in task.problems("train", n=200, seed=0)}
    heldout = {p.question for p in task.problems("heldout", n=200, seed=0)}
    assert not train & heldout


def test_summarize_counts_attempts_and_flips():
    from reference_impls.measure.self_correction import summarize

    def s(first, second, truncated=False):
        info = {} if truncated else {"first_correct": first, "second_correct": second, "flip": sc.flip_name(first, second)}
        return Sample(prompt_ids=[1], info=info, truncated=truncated)

    out = summarize([s(False, True), s(True, True), s(True, False), s(False, False), s(False, False, truncated=True)])
    assert out["n"] == 5 and out["first_accuracy"] == pytest.approx(2 / 5) and out["second_accuracy"] == pytest.approx(2 / 5)
    assert out["flips"] == {"wrong->right": 1, "right->wrong": 1, "right->right": 1, "wrong->wrong": 2}
    assert out["truncated"] == 1 and out["delta"] == 0.0


def test_measure_runs_both_modes_on_the_same_problems(tiny):
    from reference_impls.measure.self_correction import measure

    model, tok = tiny
    problems = get_env("self-correct").problems("heldout", n=2, seed=0)
    out = measure(model, tok, problems, {"levels": (1, 2)}, max_new_tokens_per_turn=4, max_completion_tokens=40)
    assert set(out) == {"external", "self"}
    for mode in out.values():
        assert mode["n"] == 2 and sum(mode["flips"].values()) == 2 and 0.0 <= mode["second_accuracy"] <= 1.0


def test_self_correction_cli_refuses_bad_options():
    from reference_impls.measure.self_correction import main

    assert main(["--modes", "external,oracle", "--n", "1"]) == 2
    assert main(["--levels", "one", "--n", "1"]) == 2


def test_self_correction_cli_prints_both_modes(capsys):
    from reference_impls.measure.self_correction import main

    assert main(["--model", "tiny", "--n", "2", "--levels", "1", "--hint", "direction", "--json",
                 "--max-new-tokens-per-turn", "4", "--max-completion-tokens", "40"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["model"] == "tiny" and result["options"] == {"levels": [1], "hint": "direction"}
    assert result["external"]["n"] == result["self"]["n"] == 2


# ---- (c) self-play: the verifier ------------------------------------------------------------------------
@pytest.mark.parametrize("text, ops, top, answer", [
    ("<problem>12+7*3</problem>", 2, 50, 33), ("<problem> (37-4) * 8 </problem>", 2, 50, 264),
    ("sure: <problem>5-9</problem> done", 1, 20, -4), ("<problem>3*(2+4)-10</problem>", 3, 99, 8),
])
def test_verifier_accepts_and_computes(text, ops, top, answer):
    verdict = sp.parse_proposal(text, ops, top)
    assert verdict.valid and verdict.answer == Fraction(answer) and not verdict.error


@pytest.mark.parametrize("text, ops, top, formatted, message", [
    ("12+7", 1, 50, False, "no complete <problem>"), ("<problem>12+7", 1, 50, False, "no complete <problem>"),
    ("<problem></problem>", 1, 50, True, "empty"), ("<problem>12/4</problem>", 1, 50, True, "'/' at position 2"),
    ("<problem>__import__('os')</problem>", 1, 50, True, "'_' at position 0"),
    ("<problem>-3+4</problem>", 1, 50, True, "'-' at position 0 has no left operand"),
    ("<problem>2**3</problem>", 1, 50, True, "'*' at position 2 has no left operand"),
    ("<problem>1+2+3</problem>", 1, 50, True, "2 operations; the task asks for 1"),
    ("<problem>51+2</problem>", 1, 50, True, "integer 51 at position 0 is larger than 50"),
    ("<problem>(1+2</problem>", 1, 50, True, "not a valid expression"),
    ("<problem>1.5+2</problem>", 1, 50, True, "'.' at position 1"),
])
def test_verifier_rejects_with_a_clear_message(text, ops, top, formatted, message):
    verdict = sp.parse_proposal(text, ops, top)
    assert not verdict.valid and verdict.formatted == formatted and message in verdict.error


def test_verifier_fuzzed_never_raises():
    rng = random.Random(0)
    alphabet = "0123456789+-*/()<>problem answer_.,'\"\n\t é∑"
    for i in range(3000):
        body = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        text = f"<problem>{body}</problem>" if i % 2 else body
        verdict = sp.parse_proposal(text, rng.randint(1, 3), rng.choice((20, 50, 99)))
        assert isinstance(verdict, sp.Verdict) and (verdict.valid or verdict.error)
        if verdict.valid:
            assert verdict.answer == sp.evaluate(verdict.expression)
    assert not sp.parse_proposal("<problem>" + "(" * 300 + "1" + ")" * 300 + "</problem>", 0, 9).valid
    assert not sp.parse_proposal(None, 1, 9).valid


def test_selfplay_episode_rewards_and_demonstrations():
    task = get_env("selfplay-arith")
    problems = task.problems("train", n=12, seed=0, roles=("propose", "solve"), levels=(1, 2, 3))
    for problem in problems:
        end = task.make(problem).step(task.demonstration(problem)[0][1])
        if problem.role == "propose":
            assert end.info["valid"] and end.reward == 0.0 and end.info["proposed_problem"].answer == sp.evaluate(problem.demo)
        else:
            assert end.info["correct"] and end.reward == 1.0
    propose = next(p for p in problems if p.role == "propose")
    solve = next(p for p in problems if p.role == "solve")
    assert task.make(propose).step("no tag").reward == -1.0
    assert task.make(propose).step("<problem>9/3</problem>").reward == -0.5
    assert task.make(propose, format_penalty=False).step("no tag").reward == 0.0
    assert task.make(solve).step("<answer>-12345</answer>").reward == 0.0
    assert task.make(solve).step("no answer").reward == -1.0
    with pytest.raises(ValueError, match="roles"):
        task.problems("train", n=2, seed=0, roles=())
    train = {p.question for p in task.problems("train", n=50, seed=0, examples=3)}
    heldout = {p.question for p in task.problems("heldout", n=50, seed=0, examples=3)}
    assert not train & heldout


def test_selfplay_heldout_measures_the_solver(monkeypatch):
    """Held-out success of a self-play run is the solver's on seeded expressions: the training pool holds
    proposals, which have no right answer, so evaluating them would score every model 0."""
    import lab.compare.heldout
    import reference_impls.measure.evaluate as ev
    import reference_impls.models

    task = get_env("selfplay-arith")
    assert task.heldout_env_options({})["roles"] == ("solve",)
    assert task.heldout_env_options({"roles": ("propose",)})["roles"] == ("solve",)  # a run's pool does not win
    assert task.heldout_env_options({}, {"roles": ("propose",)})["roles"] == ("propose",)  # an explicit flag does
    assert get_env("calculator").heldout_env_options({"levels": (1,)}) == {"levels": (1,)}
    seen = []

    def fake_evaluate(model, tokenizer, task, problems, *args, **kwargs):
        seen.append(problems)
        return ({"accuracy": 0.0, "n": len(problems)}, []) if kwargs.get("return_samples") else {"accuracy": 0.0}

    monkeypatch.setattr(ev, "evaluate", fake_evaluate)
    monkeypatch.setattr(ev, "load_policy", lambda name: (None, None))
    monkeypatch.setattr(reference_impls.models, "load_policy", lambda name: (None, None))
    assert ev.main(["--model", "m", "--env", "selfplay-arith", "--n", "4", "--json"]) == 0
    assert ev.main(["--model", "m", "--env", "selfplay-arith", "--n", "4", "--roles", "propose", "--json"]) == 0
    assert lab.compare.heldout.evaluate_heldout("m", "selfplay-arith", {}, 4, 0, 8, 8) == [0, 0, 0, 0]
    assert [{p.role for p in problems} for problems in seen] == [{"solve"}, {"propose"}, {"solve"}]


# ---- (c) self-play: learnability and the collect hook ---------------------------------------------------
@pytest.mark.parametrize("outcomes, expected", [
    ([0, 0, 0, 0], 0.0), ([1, 1, 1, 1], 0.0), ([1, 0, 0, 0], 0.75), ([1, 1, 1, 0], 0.25), ([1, 0], 0.5),
])
def test_learnability_reward_by_hand(outcomes, expected):
    assert absolute_zero.learnability_reward(outcomes) == pytest.approx(expected)


def test_learnability_needs_attempts():
    with pytest.raises(ValueError):
        absolute_zero.learnability_reward([])


def _selfplay_ctx(group_size=2, **config):
    task = get_env("selfplay-arith")
    cfg = build(absolute_zero.Config, config, "test")
    pool = list(task.problems("train", n=4, seed=0, levels=(1,)))
    train = SimpleNamespace(group_size=group_size, max_completion_tokens=48, temperature=1.0, share_prompts=False,
                            micro_batch_size=8, seed=0, prompts_per_step=2)
    return SimpleNamespace(config=cfg, pool=pool, task=task, tokenizer=SimpleNamespace(pad_token_id=0),
                           device=torch.device("cpu"), ref=None, train=train, policy=None, step=0,
                           rollout_config=RolloutConfig(group_size=group_size))


def _scripted_rollout(proposals, solver_correct):
    """Rollout stand-in: proposer g, sample k writes proposals[g][k]; the solver's n-th attempt at an expression
    is right when solver_correct[expression][n]. Episodes are stepped through the real env."""
    def rollout(model, tokenizer, task, problems, config):
        out = []
        for g, problem in enumerate(problems):
            for k in range(config.group_size):
                env = task.make(problem)
                env.reset()
                if problem.role == "propose":
                    text = proposals[g][k]
                else:
                    right = solver_correct[problem.expression][k]
                    text = f"<answer>{problem.answer if right else problem.answer + 1}</answer>"
                res = env.step(text)
                out.append(Sample(prompt_ids=[1, 2], completion_ids=[5, 6], loss_mask=[1, 1],
                                  old_logprobs=[-1.0, -1.0], reward=res.reward, done=True, group=g, info=res.info))
        return out, {"rollout_s": 0.0, "generated_tokens": 2 * len(out)}
    return rollout


def test_collect_rewards_proposals_by_learnability(monkeypatch):
    import reference_impls.rollout as rollout_module

    ctx = _selfplay_ctx(group_size=2, solver_samples=4)
    problems = ctx.pool[:2]  # level 1: one operation, integers up to 20
    proposals = [["<problem>3+4</problem>", "<problem>3+4</problem>"],  # the same problem twice: solved once
                 ["<problem>9*9</problem>", "nothing"]]
    solver = {"3+4": [1, 0, 0, 0], "9*9": [1, 1, 1, 1]}
    monkeypatch.setattr(rollout_module, "rollout", _scripted_rollout(proposals, solver))
    algo = absolute_zero.AbsoluteZero(ctx)
    batch, stats = algo.collect(ctx, problems)
    assert len(batch.samples) == 4 + 2 * 4  # 4 proposals, 2 distinct valid problems x 4 attempts
    assert batch.rewards[:4].tolist() == [0.75, 0.75, 0.0, -1.0]  # 1 - 1/4; always solved: 0; no tag: -1
    assert batch.rewards[4:].tolist() == [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    assert [s.group for s in batch.samples] == [0] * 4 + [1] * 8  # one baseline per role
    assert algo.last["proposal_validity"] == pytest.approx(3 / 4)
    assert algo.last["proposer_reward"] == pytest.approx((0.75 + 0.75 + 0.0) / 3)
    assert algo.last["solve_rate"] == pytest.approx((0.25 + 1.0) / 2)
    assert algo.last["learnable_share"] == 0.5 and algo.last["proposed_problems"] == 2
    assert stats["generated_tokens"] == 2 * 12
    adv, keep = algo.advantages(ctx, batch)
    proposer = batch.rewards[:4]
    expected = (proposer - proposer.mean()) / (proposer.std() + 1e-4)
    assert adv[:4].tolist() == pytest.approx(expected.tolist(), rel=1e-5) and keep.all()
    solver_r = batch.rewards[4:]
    assert adv[4:].tolist() == pytest.approx(((solver_r - solver_r.mean()) / (solver_r.std() + 1e-4)).tolist(), rel=1e-5)


def test_collect_with_group_baselines_and_no_valid_proposal(monkeypatch):
    import reference_impls.rollout as rollout_module

    ctx = _selfplay_ctx(group_size=2, solver_samples=2, baseline="group")
    problems = ctx.pool[:2]
    monkeypatch.setattr(rollout_module, "rollout", _scripted_rollout(
        [["<problem>1+1</problem>", "x"], ["y", "z"]], {"1+1": [1, 0]}))
    algo = absolute_zero.AbsoluteZero(ctx)
    batch, _ = algo.collect(ctx, problems)
    assert [s.group for s in batch.samples] == [0, 0, 1, 1, 2, 2]  # per prompt, then per proposed problem
    assert batch.rewards.tolist() == [0.5, -1.0, -1.0, -1.0, 1.0, 0.0]
    monkeypatch.setattr(rollout_module, "rollout", _scripted_rollout([["x", "x"], ["y", "z"]], {}))
    batch, _ = algo.collect(ctx, problems)
    assert len(batch.samples) == 4 and algo.last["proposal_validity"] == 0.0 and algo.last["solver_episodes"] == 0


def test_collect_with_a_real_rollout_solves_every_valid_proposal(tiny):
    """The nudged tiny model writes some valid proposals: each distinct one gets N solver episodes of the same
    policy, and each valid proposal's reward is the learnability of exactly those episodes."""
    from scripted_policies import nudged_tiny

    model, tok = tiny
    policy = nudged_tiny(model, tok, ("<problem>3+4</problem>", "<problem>12-5</problem>", "<answer>7</answer>"))
    ctx = _selfplay_ctx(group_size=4, solver_samples=3)
    ctx.policy, ctx.tokenizer = policy, tok
    ctx.rollout_config = RolloutConfig(group_size=4, max_new_tokens_per_turn=12, max_completion_tokens=24)
    torch.manual_seed(0)
    algo = absolute_zero.AbsoluteZero(ctx)
    batch, _ = algo.collect(ctx, ctx.pool[:2])
    proposers, solvers = batch.samples[:8], batch.samples[8:]
    valid = [s for s in proposers if s.info["valid"]]
    distinct = {s.info["proposal"] for s in valid}
    assert valid and len(solvers) == 3 * len(distinct) == algo.last["solver_episodes"]
    for s in valid:
        mine = [float(t.info["correct"]) for t in solvers if f"Compute {s.info['proposal']}." in t.segments[0]["text"]]
        assert len(mine) == 3 and s.reward == absolute_zero.learnability_reward(mine)
    assert all(s.reward in (-1.0, -0.5) for s in proposers if not s.info["valid"])
    assert algo.last["proposal_validity"] == pytest.approx(len(valid) / 8)


def test_absolute_zero_refuses_a_pool_without_propose_tasks():
    ctx = _selfplay_ctx()
    ctx.pool = list(get_env("calculator").problems("train", n=3, seed=0))
    ctx.task = get_env("calculator")
    with pytest.raises(ConfigError, match="propose"):
        absolute_zero.AbsoluteZero(ctx)


# ---- every implementation trains two steps through the CLI ----------------------------------------------
@pytest.mark.parametrize("impl", ["self-refine-grpo", "self-correct-score", "selfplay-absolute-zero"])
def test_cli_two_steps(tmp_path, impl):
    from reference_impls.train import main

    rc = main(["--impl", impl, "--model", "tiny", "--steps", "2", "--out", str(tmp_path / "run"), "--overwrite",
               "--prompts-per-step", "2", "--group-size", "2", "--max-new-tokens-per-turn", "8",
               "--max-completion-tokens", "48"])
    assert rc == 0
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and all(math.isfinite(r["loss"]) for r in rows)
    if impl == "selfplay-absolute-zero":
        assert {"proposal_validity", "proposer_reward", "solve_rate"} <= set(rows[0])


def test_every_self_improvement_node_has_a_run_this():
    from lab import catalog as lab

    runs = {node: [i.id for i in lab.for_node(node)] for node in (
        "self-improvement", "self-improvement-verbal", "self-improvement-internalizing",
        "self-improvement-iterative-self-training")}
    assert runs["self-improvement-verbal"] == ["self-refine-grpo"]
    assert runs["self-improvement-internalizing"] == ["self-correct-score"]
    assert runs["self-improvement-iterative-self-training"] == ["selfplay-absolute-zero"]
    assert len(runs["self-improvement"]) == 3
    for impl_id in ("self-refine-grpo", "self-correct-score", "selfplay-absolute-zero"):
        impl = lab.get(impl_id)
        assert impl.changes and impl.paper and lab.equation(impl)

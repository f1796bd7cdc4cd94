"""GRPO family variants, part a (issue 19): each objective against numbers computed by hand (and GMPO
against TRL's), zero gradient on masked tokens, the draw-hook filters, state round trips, and 2 CLI steps."""
import json
import math
import random
from collections import defaultdict
from math import comb
from types import SimpleNamespace

import pytest
import torch
import trl.experimental.gmpo.gmpo_trainer as trl_gmpo  # pinned: a moved module fails here, it does not skip

from reference_impls import train
from reference_impls.algorithms.grpo import grpo
from reference_impls.envs import calculator
from reference_impls.algorithms.grpo import (edge_grpo, gmpo, greso, ktae, pass_at_k, posterior_grpo, prorl, srpo,
                                          step_grpo)

# the tensors of test_losses: ratios pi/pi_old row 0 = [1.5, 0.9], row 1 = [1.1, (masked: 7.0)], A = [+1, -1]
MASK = torch.tensor([[1.0, 1.0], [1.0, 0.0]]).double()
OLD = torch.log(torch.tensor([[0.2, 0.5], [0.4, 0.1]])).double()
RATIOS = torch.tensor([[1.5, 0.9], [1.1, 7.0]]).double()
LOGPS = OLD + torch.log(RATIOS)
ADV = torch.tensor([1.0, -1.0]).double()


def masked_grad_is_zero(loss_fn, advantages=ADV):
    logps = LOGPS.clone().requires_grad_(True)
    loss, _ = loss_fn(logps, OLD, advantages, MASK)
    loss.backward()
    assert logps.grad[1, 1] == 0.0 and logps.grad[0, 1] != 0.0  # (0, 1) is a model token inside the clip range
    return logps.grad


# --- GMPO ------------------------------------------------------------------------------------------------
def gmpo_loss(logps=LOGPS, adv=ADV, **kw):
    cfg = gmpo.Config(**{"epsilon_low": 0.4, "epsilon_high": 0.4, **kw})
    return gmpo.gmpo_loss(logps, OLD, adv, MASK, cfg)


def test_gmpo_by_hand():
    # row 0 (A>0): log ratios [ln 1.5 = 0.405, ln 0.9]; ln 1.5 > 0.4 is clipped to 0.4 -> w0 = exp((0.4 + ln 0.9)/2)
    # row 1 (A<0): one model token, ln 1.1 inside the range -> w1 = 1.1.  L = (-w0 * 1 + w1 * 1) / 2
    w0 = math.exp((0.4 + math.log(0.9)) / 2)
    value, metrics = gmpo_loss()
    assert float(value) == pytest.approx((-w0 + 1.1) / 2, abs=1e-7)  # RATIOS are float32 values
    assert metrics["clip_frac"] == pytest.approx(1 / 3)


def test_gmpo_is_not_grpo():
    # the arithmetic mean of the same clipped terms gives another number
    grpo_value, _ = grpo.grpo_loss(LOGPS, OLD, ADV, MASK, grpo.Config(epsilon_low=0.4, epsilon_high=0.4))
    assert abs(float(gmpo_loss()[0]) - float(grpo_value)) > 1e-3


def test_gmpo_negative_advantage_clip_is_pessimistic():
    # A < 0 with a ratio below e^-0.4: the log ratio is *not* raised to -0.4 (that would help the objective)
    # for a ratio above e^0.4 it is kept too (the min of two surrogates); only ratios below e^-0.4 are capped
    logps = OLD + torch.log(torch.tensor([[1.0, 1.0], [0.5, 1.0]])).double()
    value, _ = gmpo_loss(logps)
    # row 0: w = 1, A = 1 -> -1; row 1: ln 0.5 = -0.693 < -0.4 -> max(-0.693, -0.4) = -0.4 -> w = e^-0.4, A = -1
    assert float(value) == pytest.approx((-1.0 + math.exp(-0.4)) / 2, abs=1e-12)


def test_gmpo_masked_tokens_get_no_gradient():
    cfg = gmpo.Config()
    masked_grad_is_zero(lambda *a: gmpo.gmpo_loss(*a, cfg))


def test_gmpo_arithmetic_mean_by_hand():
    # issue 61's ablation: the same clipped token ratios averaged arithmetically. Row 0 (A>0): clipped log ratios
    # [0.4, ln 0.9] -> w0 = (e^0.4 + 0.9) / 2; row 1 (A<0): w1 = 1.1.  L = (-w0 + w1) / 2
    w0 = (math.exp(0.4) + 0.9) / 2
    value, metrics = gmpo_loss(token_mean="arithmetic")
    assert float(value) == pytest.approx((-w0 + 1.1) / 2, abs=1e-7)
    assert metrics["clip_frac"] == pytest.approx(1 / 3)  # the clip is the same in both means
    assert metrics["ratio_mean"] == pytest.approx((w0 + 1.1) / 2, abs=1e-7)


def test_gmpo_default_is_the_geometric_mean():
    assert gmpo.Config().token_mean == "geometric"
    assert float(gmpo_loss(token_mean="geometric")[0]) == float(gmpo_loss()[0])


def test_gmpo_token_gradient_weights_by_hand():
    # d L / d logp of token (0, 1) (A = +1, ratio 0.9, inside the clip; token (0, 0) is clipped, no gradient):
    # geometric: -(1/B) * w0 * (1/|o_0|) with w0 = exp((0.4 + ln 0.9) / 2), the sequence's geometric mean;
    # arithmetic: -(1/B) * (1/|o_0|) * 0.9, the token's own ratio
    for mean, weight in (("geometric", math.exp((0.4 + math.log(0.9)) / 2)), ("arithmetic", 0.9)):
        logps = LOGPS.clone().requires_grad_(True)
        gmpo.gmpo_loss(logps, OLD, ADV, MASK, gmpo.Config(token_mean=mean))[0].backward()
        assert float(logps.grad[0, 1]) == pytest.approx(-weight / 4, abs=1e-7)
        assert float(logps.grad[0, 0]) == 0.0 and float(logps.grad[1, 1]) == 0.0


def test_gmpo_arithmetic_mean_is_grpo_with_the_log_space_clip():
    # GRPO's per-sequence token mean with its ratio bounds set to (e^-0.4, e^0.4) is the same objective
    logps = OLD + torch.log(torch.tensor([[1.5, 0.6], [0.5, 2.0]])).double()
    mask = torch.ones_like(MASK)
    ours, _ = gmpo.gmpo_loss(logps, OLD, ADV, mask, gmpo.Config(token_mean="arithmetic"))
    grpo_cfg = grpo.Config(epsilon_low=1 - math.exp(-0.4), epsilon_high=math.exp(0.4) - 1, scale_rewards=False)
    expected, _ = grpo.grpo_loss(logps, OLD, ADV, mask, grpo_cfg)
    assert float(ours) == pytest.approx(float(expected), abs=1e-12)
    geometric, _ = gmpo.gmpo_loss(logps, OLD, ADV, mask, gmpo.Config())
    assert abs(float(geometric) - float(ours)) > 1e-2


def test_gmpo_token_mean_refuses_other_values():
    from reference_impls.options import ConfigError, coerce, spec_map
    with pytest.raises(ConfigError, match="token_mean"):
        coerce(spec_map(gmpo.Config)["token_mean"], "harmonic", "token_mean")


class _Accelerator:
    num_processes = 1

    def reduce(self, x, reduction="sum"):
        return x

    def gather(self, x):
        return x


def trl_gmpo_loss(beta, logps, old, ref, mask, adv, eps_low, eps_high):
    B, T = logps.shape
    stub = SimpleNamespace(
        top_entropy_quantile=1.0, epsilon_low=eps_low, epsilon_high=eps_high, beta=beta,
        model=SimpleNamespace(training=True), current_gradient_accumulation_steps=1, accelerator=_Accelerator(),
        _metrics={"train": defaultdict(list)},
        _get_per_token_logps_and_entropies=lambda *a, **k: (logps, torch.zeros_like(logps), None))
    inputs = {"prompt_ids": torch.zeros(B, 2, dtype=torch.long), "prompt_mask": torch.ones(B, 2, dtype=torch.long),
              "completion_ids": torch.zeros(B, T, dtype=torch.long),
              "completion_mask": torch.ones(B, T, dtype=torch.long), "tool_mask": mask, "advantages": adv,
              "old_per_token_logps": old, "ref_per_token_logps": ref}
    return trl_gmpo.GMPOTrainer._compute_loss(stub, None, inputs), stub._metrics["train"]


@pytest.mark.parametrize("beta", [0.0, 0.04])
@pytest.mark.parametrize("eps", [(0.4, 0.4), (0.2, 0.3)])
def test_gmpo_matches_trl(beta, eps):
    g = torch.Generator().manual_seed(0)
    B, T = 6, 7
    logps = (-torch.rand(B, T, generator=g) * 3).double()
    old = logps + 0.5 * torch.randn(B, T, generator=g).double()  # far enough from 1 to clip
    ref = logps + 0.2 * torch.randn(B, T, generator=g).double()
    mask = (torch.rand(B, T, generator=g) > 0.3).double()
    mask[:, 0] = 1.0
    adv = torch.randn(B, generator=g).double()
    expected, trl_metrics = trl_gmpo_loss(beta, logps, old, ref, mask, adv, *eps)
    cfg = gmpo.Config(beta=beta, epsilon_low=eps[0], epsilon_high=eps[1])
    ours, metrics = gmpo.gmpo_loss(logps, old, adv, mask, cfg, ref_logps=ref)
    assert abs(float(ours) - float(expected)) < 1e-6, (float(ours), float(expected))
    assert abs(metrics["clip_frac"] - trl_metrics["clip_ratio/region_mean"][0]) < 1e-6
    assert trl_metrics["clip_ratio/region_mean"][0] > 0  # the comparison covers clipped tokens
    if beta:
        assert abs(metrics["kl"] - trl_metrics["kl"][0]) < 1e-6


# --- Pass@k Training -----------------------------------------------------------------------------------
def test_pass_at_k_by_hand():
    # G = 4, k = 2, one correct: R = 1 - C(3,2)/C(4,2) = 1 - 3/6 = 0.5, s = 0.5
    # A_pos = 0.5/0.5 = 1; A_neg = (0.5 - C(2,1)/C(3,1)) / 0.5 = (0.5 - 2/3) / 0.5 = -1/3
    correct = torch.tensor([True, False, False, False])
    adv = pass_at_k.pass_at_k_advantages(correct, 4, 2)
    assert adv.tolist() == pytest.approx([1.0, -1 / 3, -1 / 3, -1 / 3])


def test_pass_at_k_two_correct_and_edge_groups():
    # G = 4, k = 3, two correct: R = 1 - C(2,3)/C(4,3) = 1 - 0 = 1 -> s = 0: every 3-set holds a success
    # (no signal); second group k = 3 with three wrong: R = 1 - C(3,3)/C(4,3) = 3/4, s = sqrt(3)/4,
    # A_pos = (1/4)/s = 1/sqrt(3), A_neg = (1/4 - C(2,2)/C(3,2)) / s = (1/4 - 1/3) * 4/sqrt(3) = -1/(3 sqrt(3))
    # last two groups: all right / all wrong -> 0
    correct = torch.tensor([True, True, False, False, True, False, False, False] + [True] * 4 + [False] * 4)
    adv = pass_at_k.pass_at_k_advantages(correct, 4, 3)
    r3 = math.sqrt(3)
    assert adv.tolist() == pytest.approx([0.0] * 4 + [1 / r3] + [-1 / (3 * r3)] * 3 + [0.0] * 8)


def test_pass_at_1_is_grpo_on_binary_rewards():
    correct = torch.tensor([True, False, True, True, False, False, True, False])
    rewards = correct.float().view(-1, 4)
    # population std (k = 1 is the std of a Bernoulli(R))
    expected = ((rewards - rewards.mean(1, keepdim=True)) / rewards.std(1, unbiased=False, keepdim=True)).flatten()
    assert pass_at_k.pass_at_k_advantages(correct, 4, 1).tolist() == pytest.approx(expected.tolist())


def test_pass_at_k_advantage_is_the_expected_set_reward():
    # brute force over every k-subset containing sample i: A_i * s = E[max reward of the set] - R
    correct = [True, False, False, True, False, False]
    n, k = 6, 3
    import itertools
    subsets = list(itertools.combinations(range(n), k))
    mean = sum(any(correct[j] for j in s) for s in subsets) / len(subsets)
    std = math.sqrt(mean * (1 - mean))
    adv = pass_at_k.pass_at_k_advantages(torch.tensor(correct), n, k)
    for i in range(n):
        mine = [any(correct[j] for j in s) for s in subsets if i in s]
        assert float(adv[i]) == pytest.approx((sum(mine) / len(mine) - mean) / std)
    assert comb(n, k) == len(subsets)


def test_pass_at_k_rejects_k_above_group_size():
    from reference_impls.options import ConfigError
    with pytest.raises(ConfigError, match="pass-at-k"):
        pass_at_k.PassAtK.check(pass_at_k.Config(pass_at_k=5), SimpleNamespace(group_size=4), calculator.SPEC)


# --- SRPO: history resampling ----------------------------------------------------------------------------
def fake_ctx(n=6, prompts_per_step=2, levels=None, config=None, step=0):
    pool = [SimpleNamespace(uid=i, level=(levels[i] if levels else 3)) for i in range(n)]
    return SimpleNamespace(pool=pool, train=SimpleNamespace(prompts_per_step=prompts_per_step), step=step,
                           config=config, rank=0, world=1)


def uids(problems):
    return [p.uid for p in problems]


def test_srpo_drops_exactly_the_prompts_every_sample_solved():
    ctx = fake_ctx(config=srpo.Config())
    algo = srpo.SRPO(ctx)
    rng = random.Random(0)
    epoch_one = []
    solved = set()
    for _ in range(3):  # 6 prompts, 2 per step: one epoch
        drawn = uids(algo.draw(ctx, rng))
        epoch_one += drawn
        algo.record([drawn[0] % 2 == 0, False])  # the first prompt of a step is solved by all when even
        solved |= {drawn[0]} if drawn[0] % 2 == 0 else set()
    assert sorted(epoch_one) == list(range(6)) and algo.epoch == 1 and solved
    epoch_two = uids(algo.draw(ctx, rng))
    assert algo.epoch == 2 and algo.active == set(range(6)) - solved
    while len(algo.order):
        epoch_two += uids(algo.draw(ctx, rng))
    assert sorted(epoch_two) == sorted(set(range(6)) - solved)  # all-wrong and mixed prompts stay


def test_srpo_stage_one_draws_only_hard_levels():
    ctx = fake_ctx(levels=[1, 3, 2, 3, 1, 3], config=srpo.Config(srpo_stage_one_steps=2))
    algo = srpo.SRPO(ctx)
    rng = random.Random(1)
    assert set(uids(algo.draw(ctx, rng)) + uids(algo.draw(ctx, rng))) <= {1, 3, 5} and algo.stage == 1
    ctx.step = 2
    seen = uids(algo.draw(ctx, rng)) + uids(algo.draw(ctx, rng)) + uids(algo.draw(ctx, rng))
    assert algo.stage == 2 and sorted(seen) == list(range(6))


def test_srpo_state_round_trip():
    ctx = fake_ctx(n=7, config=srpo.Config())
    a = srpo.SRPO(ctx)
    rng = random.Random(3)
    for _ in range(5):
        a.draw(ctx, rng)
        a.record([True, False])
    b = srpo.SRPO(ctx)
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    assert b.state_dict() == a.state_dict()
    for seed in range(4):
        assert uids(a.draw(ctx, random.Random(seed))) == uids(b.draw(ctx, random.Random(seed)))


# --- GRESO: pre-rollout filtering ------------------------------------------------------------------------
class FixedRng:
    """randrange walks 0, 1, 2, ...; random() always returns ``u``: filter decisions become exact."""

    def __init__(self, u):
        self.u, self.next_index, self.random_calls = u, 0, 0

    def randrange(self, n):
        self.next_index += 1
        return (self.next_index - 1) % n

    def random(self):
        self.random_calls += 1
        return self.u


def test_greso_skip_probability():
    assert greso.skip_probability(0, 0.5) == 0.0
    assert greso.skip_probability(1, 0.5) == pytest.approx(0.5)
    assert greso.skip_probability(2, 0.5) == pytest.approx(0.75)
    assert greso.skip_probability(20, 0.5) == pytest.approx(0.99)  # p^z floored at 0.01: always re-tried


def test_greso_skips_exactly_the_predicted_zero_variance_prompts():
    ctx = fake_ctx(n=4, prompts_per_step=4, config=greso.Config(greso_p_init=0.5, greso_p_step=0.0))
    algo = greso.GRESO(ctx)
    algo.drawn = [0, 1, 2, 3]
    # prompt 0 all correct twice, 1 all wrong once, 2 mixed, 3 all correct once then mixed
    algo.record([True, False, False, True], [False, True, False, False])
    algo.record([True, False, False, False], [False, True, False, False])
    assert algo.easy_streak == {0: 2, 1: 0, 2: 0, 3: 0} and algo.hard_streak == {0: 0, 1: 2, 2: 0, 3: 0}
    algo.drawn = [1]
    algo.record([False], [False])  # prompt 1 turned mixed: its hard streak resets
    assert algo.hard_streak[1] == 0
    # u = 0.6: skip iff p_skip > 0.6; prompt 0 has p_skip = 0.75 (streak 2), the others 0 (no streak)
    rng = FixedRng(0.6)
    drawn = uids(algo.draw(ctx, rng))
    # candidates 0 1 2 3 0 1: prompt 0 is skipped both times, only its decisions use the rng
    assert drawn == [1, 2, 3, 1] and algo.skipped == 2 and rng.random_calls == 2
    # u = 0.8 > 0.75: prompt 0 is re-tried
    assert uids(algo.draw(ctx, FixedRng(0.8)))[0] == 0


def test_greso_exploration_probability_adapts():
    cfg = greso.Config(greso_p_init=0.5, greso_target_zero_variance=0.3)  # targets: easy 0.1, hard 0.2
    algo = greso.GRESO(fake_ctx(config=cfg))
    algo.drawn = list(range(10))
    algo.step_epoch = 1  # p adapts from the second epoch on (test_faithful_round2 checks the first)
    # 2/10 easy >= 0.1 -> p_easy falls; 1/10 hard < 0.2 -> p_hard rises
    algo.record([True, True] + [False] * 8, [False, False, True] + [False] * 7)
    assert algo.p_easy == pytest.approx(0.49) and algo.p_hard == pytest.approx(0.51)
    algo.p_easy = 0.05
    algo.record([True] * 10, [False] * 10)
    assert algo.p_easy == pytest.approx(0.05)  # bounded below by greso_p_min


def test_greso_state_round_trip():
    ctx = fake_ctx(n=5, prompts_per_step=3, config=greso.Config())
    a = greso.GRESO(ctx)
    rng = random.Random(0)
    for _ in range(4):
        a.draw(ctx, rng)
        a.record([True, False, False], [False, False, True])
    b = greso.GRESO(ctx)
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    assert b.state_dict() == a.state_dict()
    for seed in range(4):
        assert uids(a.draw(ctx, random.Random(seed))) == uids(b.draw(ctx, random.Random(seed)))


# --- the calculator's per-step record (process rewards) --------------------------------------------------
def test_calculator_records_each_tool_step():
    problem = calculator.make_problem(calculator.FAMILY_BY_NAME["add_sub"], "train", 0, 0)
    a_plus_b = calculator.evaluate(problem.steps[0])
    env = calculator.CalculatorEnv(problem)
    env.reset()
    env.step(f"<calc>{problem.steps[0]}</calc>")  # a correct step
    env.step("<calc>1+1</calc>")  # valid but not a step of a solution
    env.step("<calc>3*/2</calc>")  # does not evaluate
    end = env.step(f"<answer>{calculator.format_number(a_plus_b)}</answer>")  # wrong answer (the first step's value)
    assert end.info["tool_steps"] == [{"valid": True, "correct": True}, {"valid": True, "correct": False},
                                      {"valid": False, "correct": False}]
    assert end.info["reference_steps_matched"] == 1 and end.info["reference_steps"] == 2
    assert end.info["correct"] is False and end.info["tool_calls"] == 3  # the old keys are unchanged


def fake_batch(rewards, infos, group_size):
    samples = [SimpleNamespace(reward=r, info=i) for r, i in zip(rewards, infos)]
    return SimpleNamespace(samples=samples, rewards=torch.tensor(rewards, dtype=torch.float32),
                           lengths=torch.full((len(rewards),), 4.0), group_size=group_size)


def calc_ctx(config):
    return SimpleNamespace(config=config, train=SimpleNamespace(max_completion_tokens=48), pool=[], ref=None)


def steps(*flags):
    return [{"valid": v, "correct": c} for v, c in flags]


# --- Posterior-GRPO ----------------------------------------------------------------------------------------
def test_posterior_grpo_rewards_process_only_when_correct():
    # process (share of correct steps) = [1, 1/2, 1, 0]; weight 0.5: r' = [1 + 0.5, 1 + 0.25, 0 + 0 (wrong), 0]
    infos = [{"correct": True, "tool_steps": steps((True, True))},
             {"correct": True, "tool_steps": steps((True, True), (True, False))},
             {"correct": False, "tool_steps": steps((True, True))},  # a perfect process with a wrong answer: nothing
             {"correct": False, "tool_steps": []}]
    cfg = posterior_grpo.Config(process_weight=0.5)  # an ablation weight: the default is the paper's 1
    algo = posterior_grpo.PosteriorGRPO(calc_ctx(cfg))
    adv, keep = algo.advantages(calc_ctx(cfg), fake_batch([1.0, 1.0, 0.0, 0.0], infos, 4))
    expected = grpo.group_advantages(torch.tensor([1.5, 1.25, 0.0, 0.0]), 4)
    assert adv.tolist() == pytest.approx(expected.tolist()) and keep.all()
    assert adv[2] == adv[3]  # the wrong episode's good process earned it nothing


# --- StepGRPO -----------------------------------------------------------------------------------------------
def test_step_grpo_rewards_by_hand():
    # alpha = 0.1. ep 0: correct, 1 of 2 key steps, valid -> 1 + 0.05 + 1 = 2.05
    #              ep 1: wrong, 2 of 2 key steps, a call that fails -> 0 + 0.1 + 0 = 0.1
    #              ep 2: wrong, no calls, answered -> 0 + 0 + 0 (no steps: not valid)
    #              ep 3: wrong, 1 of 2, valid calls, no answer -> 0.05 + 0
    infos = [{"correct": True, "answer": "5", "tool_steps": steps((True, True)), "reference_steps_matched": 1,
              "reference_steps": 2},
             {"correct": False, "answer": "7", "tool_steps": steps((True, True), (False, False)),
              "reference_steps_matched": 2, "reference_steps": 2},
             {"correct": False, "answer": "1", "tool_steps": [], "reference_steps_matched": 0, "reference_steps": 2},
             {"correct": False, "answer": None, "tool_steps": steps((True, True)), "reference_steps_matched": 1,
              "reference_steps": 2}]
    cfg = step_grpo.Config(step_accuracy_weight=0.1)
    batch = fake_batch([1.0, 0.0, 0.0, 0.0], infos, 4)
    adv, _ = step_grpo.StepGRPO(calc_ctx(cfg)).advantages(calc_ctx(cfg), batch)
    expected = grpo.group_advantages(torch.tensor([2.05, 0.1, 0.0, 0.05]), 4)
    assert adv.tolist() == pytest.approx(expected.tolist())
    no_validity = step_grpo.Config(step_accuracy_weight=0.1, step_validity=False)
    adv, _ = step_grpo.StepGRPO(calc_ctx(no_validity)).advantages(calc_ctx(no_validity), batch)
    assert adv.tolist() == pytest.approx(grpo.group_advantages(torch.tensor([1.05, 0.1, 0.0, 0.05]), 4).tolist())


@pytest.mark.parametrize("module,cls", [(posterior_grpo, "PosteriorGRPO"), (step_grpo, "StepGRPO"),
                                        (pass_at_k, "PassAtK"), (prorl, "ProRL"), (edge_grpo, "EDGEGRPO"),
                                        (ktae, "KTAE")])
def test_reward_variants_use_grpos_loss_masked_tokens_get_no_gradient(module, cls):
    algo = getattr(module, cls)(calc_ctx(module.Config()))
    loss_fn = algo.loss_fn(calc_ctx(module.Config()))
    assert loss_fn.func is grpo.grpo_loss
    masked_grad_is_zero(lambda *a: loss_fn(*a, ref_logps=LOGPS.detach()))


# --- ProRL --------------------------------------------------------------------------------------------------
def test_prorl_resets_reference_and_optimizer_on_schedule(monkeypatch):
    torch.manual_seed(0)
    policy, ref = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(policy.parameters())
    policy(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    assert optimizer.state
    ctx = SimpleNamespace(policy=policy, ref=ref, optimizer=optimizer, step=1, config=prorl.Config(prorl_reset_every=2))
    algo = prorl.ProRL(ctx)
    monkeypatch.setattr(grpo.GRPO, "collect", lambda self, ctx, problems: ("batch", {}))
    algo.collect(ctx, [])  # step 1: no reset
    assert not torch.equal(ref.weight, policy.weight) and optimizer.state
    ctx.step = 2
    algo.collect(ctx, [])
    assert torch.equal(ref.weight, policy.weight) and torch.equal(ref.bias, policy.bias) and not optimizer.state
    assert algo.modules() == {"prorl_reference": ref}  # checkpointed, so a resume keeps the reset reference


def test_prorl_needs_a_kl_term():
    from reference_impls.options import ConfigError
    with pytest.raises(ConfigError, match="beta"):
        prorl.ProRL.check(prorl.Config(beta=0.0), SimpleNamespace(group_size=4), calculator.SPEC)


# --- EDGE-GRPO ----------------------------------------------------------------------------------------------
def test_edge_entropy_driven_advantage_by_hand():
    # group entropies [1, 3, 1, 3]: mean 2, relative [0.5, 1.5, 0.5, 1.5]; A / relative:
    # confident right 1/0.5 = 2, hesitant right 1/1.5 = 2/3, confident wrong -2, hesitant wrong -2/3
    # second group: all entropies 0 -> advantages unchanged
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0, 0.5, -0.5, 0.5, -0.5])
    entropy = torch.tensor([1.0, 3.0, 1.0, 3.0, 0.0, 0.0, 0.0, 0.0])
    out = edge_grpo.entropy_scaled(adv, entropy, 4)
    assert out.tolist() == pytest.approx([2.0, 2 / 3, -2.0, -2 / 3, 0.5, -0.5, 0.5, -0.5])


def _edge_ctx(model, tok):
    from reference_impls.rollout import RolloutConfig

    return SimpleNamespace(tokenizer=tok, task=calculator.SPEC, policy=model, device=torch.device("cpu"),
                           train=SimpleNamespace(temperature=1.0),
                           rollout_config=RolloutConfig(max_new_tokens_per_turn=6))


def _wrong_answer(tok, problem):
    from reference_impls.rollout import Sample, render_prompt

    prompt = render_prompt(tok, calculator.SPEC.make(problem).reset())
    wrong_ids = tok("<answer>1</answer>" + tok.eos_token, add_special_tokens=False)["input_ids"]
    return Sample(prompt_ids=prompt, completion_ids=wrong_ids, loss_mask=[1] * len(wrong_ids),
                  old_logprobs=[-1.0] * len(wrong_ids), reward=0.0, info={"correct": False}, group=3, turns=1,
                  turn_spans=[(0, len(wrong_ids))])


def test_edge_corrections_split_as_the_authors_code():
    # half regenerate after the cue, a quarter the cue and the answer, a quarter the reference solution
    assert [edge_grpo.gec_kind(u) for u in (0.0, 0.49, 0.5, 0.74, 0.75, 0.999)] == \
        ["regenerate", "regenerate", "answer", "answer", "reference", "reference"]
    assert edge_grpo.Config().gec_prob == 1.0  # every wrong response is corrected


@pytest.mark.parametrize("kind", ["answer", "reference"])
def test_edge_guided_correction(tiny, kind):
    from reference_impls.common import collate, completion_logprobs

    model, tok = tiny
    problem = calculator.make_problem(calculator.FAMILY_BY_NAME["add_sub"], "train", 0, 0)
    wrong = _wrong_answer(tok, problem)
    new = edge_grpo.corrected_sample(_edge_ctx(model, tok), wrong, problem, kind)
    answer = calculator.format_number(problem.answer)
    text = tok.decode(new.completion_ids)
    # scored again by the environment (not set to 1): the right answer after the cue is judged correct
    assert f"<answer>{answer}</answer>" in text and new.reward == 1.0 and new.info["correct"] and new.group == 3
    assert new.info["guided_correction"] == kind
    assert len(new.loss_mask) == len(new.completion_ids) == len(new.old_logprobs)
    if kind == "reference":  # the reference tool calls, with the calculator's results masked as env tokens
        assert "<calc>" in text and 0 in new.loss_mask
    else:  # the wrong response, then the reflection cue and the right answer
        assert text.startswith("<answer>1</answer>") and "Wait! Something is wrong here." in text
        assert all(new.loss_mask) and text.count(tok.eos_token) == 1
        assert new.turn_spans == [(0, len(new.completion_ids))]
    with torch.no_grad():  # old log-probs are the policy's own, not the placeholders
        logps, _ = completion_logprobs(model, collate([new], tok.pad_token_id))
    assert new.old_logprobs == pytest.approx(logps[0].tolist(), abs=1e-5)


def test_edge_regenerated_correction_is_scored_by_the_environment(tiny):
    """A continuation after the cue is judged by what it answers: a wrong one scores 0, a right one the env's
    reward; the policy's own continuation (sampled) is kept token for token after the response and the cue."""
    model, tok = tiny
    ctx = _edge_ctx(model, tok)
    problem = calculator.make_problem(calculator.FAMILY_BY_NAME["add_sub"], "train", 0, 0)
    wrong = _wrong_answer(tok, problem)
    right = tok(f"<answer>{calculator.format_number(problem.answer)}</answer>", add_special_tokens=False)["input_ids"]
    still_wrong = tok("<answer>1</answer>", add_special_tokens=False)["input_ids"]
    assert edge_grpo.corrected_sample(ctx, wrong, problem, "regenerate", right).reward == 1.0
    again = edge_grpo.corrected_sample(ctx, wrong, problem, "regenerate", still_wrong)
    assert again.reward == 0.0 and not again.info["correct"]
    torch.manual_seed(0)
    [new] = edge_grpo.corrections(ctx, [wrong], [None, None, None, problem], [(0, "regenerate")])
    cue = tok(edge_grpo.REFLECTION, add_special_tokens=False)["input_ids"]
    kept = wrong.completion_ids[:-1]  # without the EOS
    assert new.completion_ids[:len(kept) + len(cue)] == kept + cue
    tail = new.completion_ids[len(kept) + len(cue):]
    assert 0 < len(tail) <= 6  # one sampled turn, at most max_new_tokens_per_turn
    expected, _ = edge_grpo.rescore(ctx, problem, wrong, tok.decode(tail, skip_special_tokens=True))
    assert new.reward == expected


# --- KTAE ---------------------------------------------------------------------------------------------------
def test_ktae_fisher_and_information_gain_by_hand():
    # table [[3, 1], [0, 4]]: margins row 4, col 3, n 8; P(k) = C(3,k) C(5,4-k) / C(8,4):
    # k = 0..3 -> 5, 30, 30, 5 (/70); observed k = 3 (5/70): p = (5 + 5) / 70 = 1/7
    assert ktae.fisher_p_value(3, 1, 0, 4) == pytest.approx(1 / 7)
    assert ktae.fisher_p_value(2, 2, 1, 3) == pytest.approx(1.0)
    # IG: H(Y) with 3 correct / 5 wrong minus (4/8) H(3,1) - (4/8) H(0,4)
    h = lambda *p: -sum(x * math.log2(x) for x in p if x)
    assert ktae.information_gain(3, 1, 0, 4) == pytest.approx(h(3 / 8, 5 / 8) - 0.5 * h(3 / 4, 1 / 4))
    import scipy.stats as scipy_stats  # pinned (requirements.txt): missing is an error, not a skip
    for table in [(3, 1, 0, 4), (4, 1, 1, 2), (0, 3, 5, 1), (2, 5, 6, 1)]:
        a, b, c, d = table
        assert ktae.fisher_p_value(*table) == pytest.approx(scipy_stats.fisher_exact([[a, b], [c, d]]).pvalue)


def test_ktae_key_values_and_token_advantages():
    # 2 correct rollouts [7, 5], [7, 5, 5]; 2 wrong [9, 5], [9, 9] (token 0: padding, masked); equal weights
    cfg = ktae.Config(ktae_ig_weight=1.0)
    token_ids = torch.tensor([[7, 5, 0], [7, 5, 5], [9, 5, 0], [9, 9, 0]])
    mask = torch.tensor([[1.0, 1, 0], [1, 1, 1], [1, 1, 0], [1, 1, 0]])
    correct = torch.tensor([True, True, False, False])
    keys = ktae.key_token_values([[7, 5], [7, 5, 5], [9, 5], [9, 9]], correct.tolist(), cfg)

    def key_by_hand(a, b, f_true, f_false):  # |T| = |F| = 2; model tokens: 5 in correct, 4 in wrong
        lt, lf = 5, 4
        mean = (lt + lf) / 2
        tf = lambda f, l: f * 3 / (f + 2 * (0.5 + 0.5 * l / mean))
        t1, t0 = tf(f_true / lt, lt), tf(f_false / lf, lf)
        x = math.asin(math.sqrt(a / 2)) - math.asin(math.sqrt(b / 2)) + t1 / (t0 + 1e-5) - t0 / (t1 + 1e-5)
        p = ktae.fisher_p_value(a, b, 2 - a, 2 - b)
        fisher = math.exp(-2 * p) if p < 1 else 0.0
        score = (fisher + ktae.information_gain(a, b, 2 - a, 2 - b)) * x / 2
        return 1 / (1 + math.exp(-score)) * 2 - 1 if score > -700 else -1.0  # 2 sigmoid(score) - 1

    # token 7: in both correct, no wrong (IG = 1 bit, Fisher p = 1/3); 9: the reverse; 5: in 2 correct + 1 wrong
    assert keys[7] == pytest.approx(key_by_hand(2, 0, 2, 0)) and keys[7] > 0.9
    assert keys[9] == pytest.approx(key_by_hand(0, 2, 0, 3)) and keys[9] < -0.9
    assert keys[5] == pytest.approx(key_by_hand(2, 1, 3, 1))
    adv = ktae.ktae_advantages(correct.float(), correct, token_ids, mask, 4, cfg)
    base = 1 / torch.tensor([1.0, 1, 0, 0]).std().item()  # (1 - 0.5) / std = 0.5 / 0.577
    assert adv[0, 0] == pytest.approx(0.5 * base + keys[7], abs=1e-5)
    assert adv[2, 1] == pytest.approx(-0.5 * base + keys[5], abs=1e-5)
    assert adv[0, 2] == 0 and adv[2, 2] == 0  # masked positions
    # a group that is all right gets no key values: its advantages are 0
    all_right = ktae.ktae_advantages(torch.ones(4), torch.ones(4, dtype=torch.bool), token_ids, mask, 4, cfg)
    assert all_right.abs().sum() == 0


def test_ktae_token_advantages_reach_the_loss():
    # grpo_loss with (B, K) advantages: the (1, 0) token's term uses its own advantage
    adv = torch.tensor([[1.0, 1.0], [-1.0, 5.0]]).double()  # the 5.0 sits on a masked token: no effect
    value, _ = grpo.grpo_loss(LOGPS, OLD, adv, MASK, grpo.Config())
    same, _ = grpo.grpo_loss(LOGPS, OLD, ADV, MASK, grpo.Config())
    assert float(value) == pytest.approx(float(same))
    adv2 = torch.tensor([[2.0, 1.0], [-1.0, 0.0]]).double()
    # row 0 t0: -min(1.5 * 2, 1.2 * 2) = -2.4 instead of -1.2 -> the mean over row 0 falls by 0.6, the loss by 0.3
    assert float(grpo.grpo_loss(LOGPS, OLD, adv2, MASK, grpo.Config())[0]) == pytest.approx(float(same) - 0.3)


# --- every implementation trains 2 steps through the CLI; draw-hook state survives a resume ---------------
IMPLS = ["calculator-gmpo", "calculator-pass-at-k", "calculator-srpo", "calculator-greso",
         "calculator-posterior-grpo", "calculator-step-grpo", "calculator-prorl", "calculator-edge-grpo",
         "calculator-ktae"]
FAST = ["--model", "tiny", "--prompts-per-step", "2", "--group-size", "4", "--max-new-tokens-per-turn", "16",
        "--max-completion-tokens", "48"]


@pytest.mark.parametrize("impl", IMPLS)
def test_two_cli_steps(tmp_path, impl):
    out = tmp_path / "run"
    extra = ["--prorl-reset-every", "1"] if impl == "calculator-prorl" else []  # a reset happens within 2 steps
    assert train.main(["--impl", impl, *FAST, *extra, "--steps", "2", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and all(math.isfinite(r["loss"]) for r in rows)


@pytest.mark.parametrize("impl", ["calculator-srpo", "calculator-greso"])
def test_draw_state_survives_resume(tmp_path, impl):
    small = ["--model", "tiny", "--prompts-per-step", "2", "--group-size", "2", "--max-new-tokens-per-turn", "6",
             "--max-completion-tokens", "10", "--train-pool", "3", "--checkpoint-every", "1"]
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert train.main(["--impl", impl, *small, "--steps", "3", "--out", str(straight)]) == 0
    assert train.main(["--impl", impl, *small, "--steps", "2", "--out", str(resumed)]) == 0
    assert train.main(["--resume", str(resumed), "--steps", "3"]) == 0

    def state(run):
        return json.loads((run / "checkpoints" / "step_000003" / "trainer_state.json").read_text())["algorithm_state"]

    assert state(resumed) == state(straight) and state(straight)


def test_prorl_reference_survives_resume(tmp_path, fresh_tiny):
    # a reset before the third step (ctx.step = 2), none in the fourth: the resumed fourth step must use the
    # reference saved with step 3's checkpoint, not a fresh copy of the starting model
    small = ["--impl", "calculator-prorl", "--prorl-reset-every", "2", "--model", "tiny", "--prompts-per-step", "2",
             "--group-size", "2", "--max-new-tokens-per-turn", "6", "--max-completion-tokens", "10",
             "--checkpoint-every", "1", "--no-dynamic-sampling", "--lr", "0.01",
             "--weight-decay", "0.5"]  # the random tiny model earns no reward: decay makes the weights move
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert train.main([*small, "--steps", "4", "--out", str(straight)]) == 0
    assert train.main([*small, "--steps", "3", "--out", str(resumed)]) == 0
    assert train.main(["--resume", str(resumed), "--steps", "4"]) == 0

    def reference(run, step):
        return torch.load(run / "checkpoints" / f"step_{step:06d}" / "prorl_reference.pt", weights_only=True)

    a, b = reference(straight, 4), reference(resumed, 4)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    start = fresh_tiny()[0].state_dict()
    assert any(not torch.equal(a[k], start[k]) for k in a)  # it is the reset reference, not the start model

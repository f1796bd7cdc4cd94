"""PPO family variants (issue 18): LitePPO, PF-PPO, VinePPO, VAPO, PSGPO.

Hand-computed values from each paper's equations on tiny tensors, zero gradient on masked tokens, and a
2-step CLI run of every implementation on the tiny model."""
import math
from types import SimpleNamespace

import pytest
import torch

from reference_impls.algorithms.ppo import liteppo, pfppo, vineppo
from reference_impls.rollout import RolloutConfig, Sample, rollout, run_episodes

PPO_FAMILY_IMPLS = ["calculator-liteppo", "calculator-pf-ppo", "calculator-vineppo", "calculator-vapo",
                    "calculator-psgpo"]


# ---- LitePPO ----------------------------------------------------------------------------------------

def test_liteppo_advantage_is_group_mean_over_batch_std():
    r = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0])  # two groups of 4
    A = liteppo.lite_advantages(r, 4, "batch")
    # group means 0.25 and 0.75; batch mean 0.5, unbiased batch variance = 8 * 0.25 / 7 = 2/7
    std = (2 / 7) ** 0.5
    expected = torch.tensor([0.75, -0.25, -0.25, -0.25, 0.25, 0.25, 0.25, -0.75]) / (std + 1e-4)
    assert torch.allclose(A, expected, atol=1e-6)
    # GRPO's group std would scale each group by its own std (0.5 here): a different number
    assert not torch.allclose(A, liteppo.lite_advantages(r, 4, "group"))


def test_liteppo_constant_group_gets_exactly_zero_and_matches_trl_batch_scaling():
    from trl.trainer.utils import nanstd

    r = torch.tensor([2 / 3, 2 / 3, 2 / 3, 0.0, 1.0, 0.5])
    A = liteppo.lite_advantages(r, 3, "batch")
    assert torch.equal(A[:3], torch.zeros(3))
    # TRL's scale_rewards="batch" (the LitePPO setting): (r - group mean) / (nanstd(all rewards) + 1e-4)
    mean = r.view(-1, 3).mean(1).repeat_interleave(3)
    trl = (r - mean) / (nanstd(r) + 1e-4)
    assert torch.allclose(A[3:], trl[3:], atol=1e-6)


def test_liteppo_defaults_are_token_level_loss_without_kl():
    cfg = liteppo.Config()
    assert cfg.loss_type == "dapo" and cfg.advantage_std == "batch" and cfg.beta == 0.0


def test_liteppo_token_level_loss_hand_values_and_masked_tokens_get_no_gradient():
    from reference_impls.algorithms.grpo.grpo import grpo_loss

    cfg = liteppo.Config()
    logps = torch.zeros(2, 3, requires_grad=True)  # w = 1 everywhere: loss = -(1/sum m) sum m A
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    A = torch.tensor([1.0, -2.0])
    loss, _ = grpo_loss(logps, torch.zeros(2, 3), A, mask, cfg)
    # token-level: -(3 * 1 + 1 * -2) / 4 = -0.25 (a per-sequence mean would give -(1 - 2) / 2 = 0.5)
    assert float(loss.detach()) == pytest.approx(-0.25)
    loss.backward()
    assert torch.equal(logps.grad[1, 1:], torch.zeros(2))
    assert logps.grad[0, 0] == pytest.approx(-0.25) and logps.grad[1, 0] == pytest.approx(0.5)


# ---- PF-PPO -----------------------------------------------------------------------------------------

def test_pf_ppo_filters_keep_best_and_worst():
    r = torch.tensor([0.2, 0.9, 0.1, 0.5,   # best 1, worst 2
                      1.0, 1.0, 0.0, 0.0,   # ties: first max (4), last min (7)
                      0.3, 0.3, 0.3, 0.3])  # constant: first (8) and last (11)
    assert pfppo.filter_indices(r, 4, "best_worst") == [1, 2, 4, 7, 8, 11]
    assert pfppo.filter_indices(r, 4, "best_of_n") == [1, 4, 8]
    g = torch.Generator().manual_seed(0)
    kept = pfppo.filter_indices(r, 4, "best_random", generator=g)
    assert len(kept) == 6 and {1, 4, 8} <= set(kept)
    for group in range(3):  # one other, never the best twice
        pair = [k for k in kept if k // 4 == group]
        assert len(set(pair)) == 2


def test_pf_ppo_best_random_draws_every_other_sample_uniformly():
    r = torch.tensor([0.0, 1.0, 0.0, 0.0])
    g = torch.Generator().manual_seed(0)
    counts = {0: 0, 2: 0, 3: 0}
    for _ in range(3000):
        other = [k for k in pfppo.filter_indices(r, 4, "best_random", generator=g) if k != 1]
        counts[other[0]] += 1
    assert all(abs(c / 3000 - 1 / 3) < 0.04 for c in counts.values()), counts


def test_pf_ppo_subset_keeps_rows_and_widths():
    from reference_impls.algorithm import RolloutBatch

    full = {"loss_mask": torch.arange(12.0).view(4, 3), "old_logprobs": -torch.arange(12.0).view(4, 3),
            "input_ids": torch.arange(20).view(4, 5), "logits_to_keep": 3}
    batch = RolloutBatch(samples=list("abcd"), rewards=torch.tensor([0.0, 1.0, 2.0, 3.0]),
                         lengths=torch.ones(4), full=full, ref_logps=torch.arange(12.0).view(4, 3), group_size=4)
    sub = pfppo.subset(batch, [1, 3])
    assert sub.samples == ["b", "d"] and sub.rewards.tolist() == [1.0, 3.0]
    assert torch.equal(sub.full["loss_mask"], full["loss_mask"][[1, 3]]) and sub.full["logits_to_keep"] == 3
    assert torch.equal(sub.ref_logps, batch.ref_logps[[1, 3]])


# ---- VinePPO ----------------------------------------------------------------------------------------

def _episode(spans, reward, length):
    mask = [0] * length
    for a, b in spans:
        mask[a:b] = [1] * (b - a)
    return Sample(prompt_ids=[1], completion_ids=list(range(length)), loss_mask=mask,
                  old_logprobs=[0.0] * length, reward=reward, turn_spans=list(spans))


def test_vineppo_advantage_is_next_state_value_minus_state_value():
    # three turns: tokens 0-2, (env 3-4), 5-7, (env 8-9), 10-11; MC values of s_0, s_1, s_2
    s = _episode([(0, 3), (5, 8), (10, 12)], reward=1.0, length=12)
    A = vineppo.token_advantages(s, [0.25, 0.5, 0.75], width=14)
    expected = torch.zeros(14)
    expected[0:3] = 0.5 - 0.25       # V(s_1) - V(s_0)
    expected[5:8] = 0.75 - 0.5       # V(s_2) - V(s_1)
    expected[10:12] = 1.0 - 0.75     # R - V(s_2): the terminal state's value is the episode's reward
    assert torch.allclose(A, expected)
    assert vineppo.state_prefixes(s) == [0, 5, 10]
    # a failed (or truncated) episode: the last turn gets -V(s_2)
    s.reward = 0.0
    assert torch.allclose(vineppo.token_advantages(s, [0.25, 0.5, 0.75], 14)[10:12], torch.full((2,), -0.75))


def test_vineppo_prompt_states_only_by_hand():
    # the ablation of the vines: a's and b's s_0 (shared) and c's s_0 are kept; every later state takes its s_0
    a = _episode([(0, 3), (5, 8)], 1.0, 8)
    b = _episode([(0, 3), (5, 6)], 0.0, 6)
    c = _episode([(0, 2)], 0.0, 2)
    c.group = 1
    starts, state_of = vineppo.prompt_states_only(*vineppo.distinct_states([a, b, c]))
    assert starts == [(0, 0), (2, 0)]
    assert state_of == [[0, 0], [0, 0], [1]]
    # so a's advantages: 0 on the first turn (V(s_0) - V(s_0)), R - V(s_0) on the last
    A = vineppo.token_advantages(a, [0.25, 0.25], width=8)
    assert A[0:3].tolist() == [0.0, 0.0, 0.0] and A[5:8].tolist() == [0.75, 0.75, 0.75]
    assert vineppo.Config().intermediate_states is True


def test_vineppo_values_explained_variance_by_hand():
    # a: turns (0, 2) and (3, 4), R = 1, V_hat(s_0) = 0.5, V_hat(s_1) = 1; b: one turn (0, 2), R = 0, V_hat = 0.5.
    # Model tokens: R = [1, 1, 1, 0, 0] (mean 0.6, Var 0.24); R - V = [0.5, 0.5, 0, -0.5, -0.5] (Var 0.2)
    # -> 1 - 0.2 / 0.24 = 1/6
    from reference_impls.algorithms.ppo.ppo import explained_variance

    a, b = _episode([(0, 2), (3, 4)], 1.0, 4), _episode([(0, 2)], 0.0, 2)
    values = torch.stack([vineppo.token_values(a, [0.5, 1.0], 4), vineppo.token_values(b, [0.5], 4)])
    assert values.tolist() == [[0.5, 0.5, 0.0, 1.0], [0.5, 0.5, 0.0, 0.0]]
    mask = torch.tensor([a.loss_mask, b.loss_mask + [0, 0]], dtype=torch.float32)
    returns = torch.tensor([[1.0] * 4, [0.0] * 4])
    assert explained_variance(values, returns, mask) == pytest.approx(1 / 6, abs=1e-6)


def test_vineppo_states_are_shared_by_identical_prefixes():
    a = _episode([(0, 3), (5, 8)], 1.0, 8)
    b = _episode([(0, 3), (5, 6)], 0.0, 6)  # same first turn and tool result as a
    c = _episode([(0, 2)], 0.0, 2)
    c.group = 1
    starts, state_of = vineppo.distinct_states([a, b, c])
    assert starts == [(0, 0), (0, 1), (2, 0)]  # a's s_0 (shared by b), a's s_1 (shared by b), c's s_0
    assert state_of == [[0, 1], [0, 1], [2]]


def test_vineppo_loss_hand_values_and_masked_tokens_get_no_gradient():
    cfg = vineppo.Config(epsilon=0.2, beta=0.0)
    logps = torch.log(torch.tensor([[0.5, 0.5, 0.3]])).requires_grad_(True)
    old = torch.log(torch.tensor([[0.25, 0.5, 0.3]]))
    A = torch.tensor([[1.0, -2.0, 5.0, 9.0]])  # wider than the micro-batch: sliced to T
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    loss, m = vineppo.vine_loss(logps, old, A, mask, cfg)
    # token 0: w = 2, A = 1 -> -min(2, 1.2) = -1.2 ; token 1: w = 1, A = -2 -> 2 ; token 2 masked
    assert float(loss.detach()) == pytest.approx((-1.2 + 2.0) / 2)
    loss.backward()
    assert logps.grad[0, 2] == 0.0 and logps.grad[0, 0] == 0.0  # token 0 is clipped in A's direction
    assert logps.grad[0, 1] == pytest.approx(2.0 / 2)  # d(-A w)/dlogp = -A w = 2, over 2 tokens
    assert m["clip_frac"] == pytest.approx(0.5)


def test_vineppo_kl_is_a_clipped_k3_loss_summed_over_tokens_and_averaged_over_sequences():
    """The authors' klLoss (ppo_trainer.py): beta * mean_i sum_t clip(m k3, 0, 10), k3 = e^(ref-logp) - (ref-logp) - 1,
    added to the token-mean surrogate; with A = 0 the loss is the KL term alone."""
    cfg = vineppo.Config(beta=1e-4)
    logps = torch.tensor([[-1.0, -2.0, -0.5], [-1.5, -0.2, -3.0]], requires_grad=True)
    ref = torch.tensor([[-1.5, -2.0, 20.0], [-0.5, -14.0, -3.0]])  # a 20.5 log-ratio: k3 far above 10
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    A = torch.zeros(2, 3)
    loss, m = vineppo.vine_loss(logps, logps.detach(), A, mask, cfg, ref_logps=ref)
    k3 = lambda d: math.exp(d) - d - 1  # noqa: E731
    seq0 = k3(-0.5) + k3(0.0) + 10.0  # the third token's k3 (about 8e8) is clipped to 10
    seq1 = k3(1.0) + min(k3(-13.8), 10.0)  # the masked third token adds nothing
    assert float(loss.detach()) == pytest.approx(1e-4 * (seq0 + seq1) / 2, rel=1e-6)
    assert m["kl"] == pytest.approx((seq0 + seq1) / 5, rel=1e-6)
    loss.backward()
    assert logps.grad[0, 2] == 0.0 and logps.grad[1, 2] == 0.0  # clipped and masked tokens: no gradient
    # d/dlogp of beta/B * k3 = beta/B * (1 - e^(ref - logp))
    assert float(logps.grad[0, 0]) == pytest.approx(1e-4 / 2 * (1 - math.exp(-0.5)), rel=1e-5)
    # beta = 0: no reference needed, the surrogate alone
    loss0, m0 = vineppo.vine_loss(logps, logps.detach(), A, mask, vineppo.Config(beta=0.0))
    assert float(loss0.detach()) == 0.0 and m0["kl"] == 0.0


def _vineppo_batch(tmp_path, fresh_tiny, reward=None, beta=0.5):
    """One collected VinePPO batch on the toy task (``reward``: every episode and continuation gets it)."""
    from reference_impls.envs import EnvSpec, NoOptions, StepResult
    from reference_impls.run_config import TrainConfig
    from reference_impls.trainer import Trainer
    from toy_env import HalfVocabEnv, make_task

    class ConstantRewardEnv(HalfVocabEnv):
        def step(self, text):
            return StepResult(None, True, reward, {"correct": bool(reward)})

    model, tok = fresh_tiny()
    task = make_task(model, tok)
    if reward is not None:
        task = EnvSpec("half_vocab", NoOptions, task.list_problems,
                       lambda p, config: ConstantRewardEnv(p, tok, set()), task.demonstration)
    cfg = TrainConfig(algo="vineppo", env="half_vocab", model="tiny", out=str(tmp_path), lr=1e-2, prompts_per_step=2,
                      group_size=4, max_new_tokens_per_turn=1, max_completion_tokens=1, micro_batch_size=8,
                      train_pool=8, algo_config={"mc_rollouts": 3, "beta": beta})
    trainer = Trainer(cfg, task=task, model=model, tokenizer=tok)
    with torch.no_grad():  # a reference that differs from the policy, so the KL is not 0
        for p in trainer.ctx.ref.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return trainer.collect()


def test_vineppo_collect_shares_the_prompt_value_and_keeps_the_kl_out_of_the_advantages(tmp_path, fresh_tiny):
    """Toy task (one turn): every sample's only state is its prompt, so within a group A_i - A_j = R_i - R_j
    and A_i = R_i - V_hat(s_0) with V_hat(s_0) a mean of K rewards in [0, 1]; the trained advantages are the
    whitened A, with no KL in them (the KL is a loss term)."""
    from reference_impls.algorithms.ppo.ppo import masked_whiten

    batch, stats = _vineppo_batch(tmp_path, fresh_tiny)
    assert stats["mc_states"] == 2  # one state per prompt, shared by its group
    step = batch.step_advantages[:, 0]
    values = batch.rewards - step
    assert torch.allclose(values.view(2, 4), values.view(2, 4)[:, :1].expand(2, 4))
    assert all(float(v * 3) == pytest.approx(round(float(v * 3)), abs=1e-5) for v in values)  # k/3
    mask = batch.full["loss_mask"]
    assert ((batch.full["old_logprobs"] - batch.ref_logps) * mask).abs().sum() > 0  # the KL is not 0 ...
    assert torch.allclose(batch.advantages, masked_whiten(batch.step_advantages, mask), atol=1e-6)  # ... nor in A
    # the values' explained variance over model tokens (one turn: V_hat = R - A on every model token)
    returns = batch.rewards.unsqueeze(1).expand_as(mask)
    n = mask.sum()
    var = lambda x: float((((x - (x * mask).sum() / n) * mask) ** 2).sum() / n)  # noqa: E731
    expected = 1 - var(batch.step_advantages[:, :mask.shape[1]]) / var(returns) if var(returns) else 0.0
    assert batch.values_explained_variance == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("reward", [0.0, 1.0])
def test_vineppo_batch_with_equal_rewards_has_zero_advantages(tmp_path, fresh_tiny, reward):
    """No task signal, no policy gradient: whatever the KL to the reference, the trained advantages are 0."""
    batch, _ = _vineppo_batch(tmp_path, fresh_tiny, reward=reward)
    assert bool((batch.rewards == reward).all())
    assert float(batch.advantages.abs().max()) == 0.0


@pytest.fixture(scope="module")
def calc_policy(tiny):
    from scripted_policies import nudged_tiny

    return nudged_tiny(tiny[0], tiny[1], ("<calc>7+8</calc>", "<calc>12*3</calc>"))


@pytest.mark.parametrize("budget", [96, 24])  # 24: the second turn is cut by the episode's token budget
def test_vineppo_greedy_continuations_replay_the_episode(calc_policy, tiny, budget):
    """From every intermediate state of a multi-turn episode, a greedy continuation in the replayed env
    writes exactly what the episode wrote from there, and gets its reward: the env was rebuilt at the same
    state, the prefix is conditioned on, and the remaining token budget is the episode's."""
    from reference_impls.envs import get_env

    tok = tiny[1]
    task = get_env("calculator")
    problems = task.problems("train", n=4, seed=2)
    cfg = RolloutConfig(greedy=True, max_new_tokens_per_turn=16, max_completion_tokens=budget)
    samples, _ = rollout(calc_policy, tok, task, problems, cfg)
    assert max(s.turns for s in samples) > 1
    assert any(len(s.completion_ids) == budget for s in samples) == (budget == 24)
    for s in samples:
        assert len(s.turn_spans) == s.turns and sum(b - a for a, b in s.turn_spans) == sum(s.loss_mask)
    ctx = SimpleNamespace(policy=calc_policy, tokenizer=tok, task=task, rollout_config=cfg)
    starts, _ = vineppo.distinct_states(samples)
    assert len(starts) > len(problems)  # states after tool results, not only the prompts
    envs, conts, budgets = vineppo.continuations(ctx, problems, samples, starts, K=1)
    run_episodes(calc_policy, tok, envs, conts, cfg, budgets)
    for (i, j), c in zip(starts, conts):
        s, cut = samples[i], samples[i].turn_spans[j][0]
        assert c.completion_ids == s.completion_ids[cut:] and c.loss_mask == s.loss_mask[cut:]
        assert (c.reward, c.truncated) == (s.reward, s.truncated)
    # the ablation estimates the prompts only (one state per group), and every state of a sample takes its s_0's
    values, mc = vineppo.mc_values(ctx, problems, samples, K=1, intermediate_states=False)
    assert mc["states"] == len(problems)
    for s, row in zip(samples, values):
        assert len(row) == s.turns and len(set(row)) == 1


# ---- VAPO (switches of ppo.py) ------------------------------------------------------------------------

def test_vapo_length_adaptive_lambda_hand_values():
    from reference_impls.algorithms.ppo.ppo import length_adaptive_lambda

    lam = length_adaptive_lambda(torch.tensor([100.0, 40.0, 20.0, 10.0]), alpha=0.05)
    # 1 - 1/(0.05 * 100) = 0.8 ; 1 - 1/2 = 0.5 ; 1 - 1/1 = 0 ; 1 - 1/0.5 = -1 -> floored at 0
    assert torch.allclose(lam, torch.tensor([0.8, 0.5, 0.0, 0.0]))


def test_vapo_per_row_lambda_gae_equals_gae_row_by_row():
    from reference_impls.algorithms.ppo.ppo import gae

    g = torch.Generator().manual_seed(0)
    r, v = torch.randn(3, 6, generator=g), torch.randn(3, 6, generator=g)
    mask = torch.tensor([[1, 1, 0, 0, 1, 1], [1, 1, 1, 1, 1, 0], [0, 1, 1, 0, 1, 1]], dtype=torch.float32)
    lam = torch.tensor([0.0, 0.5, 0.9])
    adv, _ = gae(r, v * mask, mask, 1.0, lam)
    for i in range(3):
        row, _ = gae(r[i:i + 1], (v * mask)[i:i + 1], mask[i:i + 1], 1.0, float(lam[i]))
        assert torch.allclose(adv[i:i + 1], row, atol=1e-6)


def test_vapo_decoupled_gae_hand_values():
    """Three model tokens, V = (0.2, 0.5, 0.6), reward 1 on the last, gamma 1.
    lambda_critic = 1: R_t = reward-to-go = 1 on every token (unbiased, ignores V).
    lambda_policy = 0.5: deltas d = (0.5 - 0.2, 0.6 - 0.5, 1 - 0.6) = (0.3, 0.1, 0.4);
    A_3 = 0.4, A_2 = 0.1 + 0.5 * 0.4 = 0.3, A_1 = 0.3 + 0.5 * 0.3 = 0.45."""
    from reference_impls.algorithms.ppo.ppo import gae

    mask = torch.ones(1, 3)
    v = torch.tensor([[0.2, 0.5, 0.6]])
    r = torch.tensor([[0.0, 0.0, 1.0]])
    _, returns = gae(r, v, mask, 1.0, 1.0)
    adv, _ = gae(r, v, mask, 1.0, 0.5)
    assert torch.allclose(returns, torch.ones(1, 3))
    assert torch.allclose(adv, torch.tensor([[0.45, 0.3, 0.4]]))


def test_vapo_clip_higher_hand_values_and_masked_tokens_get_no_gradient():
    from reference_impls.algorithms.ppo.ppo import policy_loss

    logps = torch.log(torch.tensor([[0.5, 0.5, 0.9]])).requires_grad_(True)
    old = torch.log(torch.tensor([[0.25, 0.5, 0.3]]))
    A = torch.tensor([[1.0, 1.0, 1.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    # w = (2, 1, 3): token 0 clipped at 1 + 0.28 (not 1.2), token 1 unclipped, token 2 masked
    loss, _ = policy_loss(logps, old, A, mask, epsilon=0.2, epsilon_high=0.28)
    assert float(loss.detach()) == pytest.approx(-(1.28 + 1.0) / 2)
    loss.backward()
    assert logps.grad[0, 2] == 0.0 and logps.grad[0, 0] == 0.0 and logps.grad[0, 1] == pytest.approx(-0.5)


def test_vapo_positive_lm_loss_is_the_nll_of_the_correct_episodes(tmp_path, fresh_tiny):
    """On the first minibatch pi_theta = pi_old, so the logged NLL equals the mean of -old log-prob over the
    model tokens of the correct episodes (the toy task's reward-1 replies) and ignores the others."""
    from reference_impls.run_config import TrainConfig
    from reference_impls.trainer import Trainer
    from toy_env import make_task

    model, tok = fresh_tiny()
    cfg = TrainConfig(algo="ppo", env="half_vocab", model="tiny", out=str(tmp_path), lr=1e-2, prompts_per_step=2,
                      group_size=4, max_new_tokens_per_turn=1, max_completion_tokens=1, micro_batch_size=8,
                      train_pool=8, algo_config={"beta": 0.0, "num_iterations": 1, "num_mini_batches": 1,
                                                 "shared_backbone": True, "positive_lm_coef": 0.1})
    trainer = Trainer(cfg, task=make_task(model, tok), model=model, tokenizer=tok)
    batch, _ = trainer.collect()
    correct = [s for s in batch.samples if s.info["correct"]]
    assert 0 < len(correct) < len(batch.samples)
    expected = -sum(lp for s in correct for lp in s.old_logprobs) / sum(len(s.old_logprobs) for s in correct)
    metrics = trainer.algo.update(trainer.ctx, batch)
    assert metrics["positive_lm_loss"] == pytest.approx(expected, abs=1e-4)


# ---- PSGPO ------------------------------------------------------------------------------------------

def test_psgpo_step_verdicts_check_calls_against_the_solution_path():
    from reference_impls.envs import get_env

    problem = SimpleNamespace(steps=("12+30", "42*2"))  # solution path: 42, then 84
    turns = ["<calc>30+12</calc>",   # 42: on the path, new            -> +1
             "<calc>42</calc>",      # 42 again: recomputed            ->  0
             "<calc>7*7</calc>",     # 49: off the path                -> -1
             "<calc>1/0</calc>",     # fails to evaluate               -> -1
             "<calc>42*2</calc>",    # 84: on the path, new            -> +1
             "<answer>84</answer>"]  # not a call: the outcome reward  ->  0
    assert get_env("calculator").steps.verdicts(problem, turns) == [1, 0, -1, -1, 1, 0]


def test_psgpo_token_rewards_put_steps_on_each_calls_last_token():
    from reference_impls.algorithms.ppo import psgpo
    from reference_impls.algorithm import RolloutBatch

    s = _episode([(0, 3), (5, 8), (10, 12)], reward=1.0, length=12)
    s.info["step_verdicts"] = [1, -1, 0]
    mask = torch.tensor([s.loss_mask + [0, 0]], dtype=torch.float32)  # width 14
    batch = RolloutBatch(samples=[s], rewards=torch.tensor([1.0]), lengths=torch.tensor([12.0]), full={},
                         ref_logps=None, group_size=1)
    algo = psgpo.PSGPO.__new__(psgpo.PSGPO)
    algo.cfg = psgpo.Config(step_reward=0.2, beta=0.0)
    r = algo.token_rewards(None, batch, mask, None)
    expected = torch.zeros(1, 14)
    expected[0, 2] = 0.2      # turn 0 correct: +c on token 2
    expected[0, 7] = -0.2     # turn 1 wrong: -c on token 7
    expected[0, 11] = 1.0     # turn 2 (the answer): the outcome reward R on the last model token
    assert torch.allclose(r, expected)
    # GAE with lambda = gamma = 1 and V = 0: every model token's advantage is its reward-to-go
    from reference_impls.algorithms.ppo.ppo import gae

    adv, _ = gae(r, torch.zeros_like(r), mask, 1.0, 1.0)
    assert adv[0, 0] == pytest.approx(1.0) and adv[0, 5] == pytest.approx(0.8) and adv[0, 10] == pytest.approx(1.0)


def test_psgpo_collect_and_update_on_multi_turn_calculator_episodes(calc_policy, tiny, tmp_path):
    """Real episodes with tool calls (the nudged policy): each model turn gets a verdict from its own text,
    and the update runs with the step rewards in PPO's per-token rewards."""
    import copy

    from reference_impls.run_config import TrainConfig
    from reference_impls.trainer import Trainer

    tok = tiny[1]
    cfg = TrainConfig(algo="psgpo", env="calculator", model="tiny", out=str(tmp_path), lr=1e-3, prompts_per_step=2,
                      group_size=2, max_new_tokens_per_turn=16, max_completion_tokens=64, micro_batch_size=8,
                      train_pool=8, algo_config={"beta": 0.0, "num_iterations": 1, "num_mini_batches": 1})
    trainer = Trainer(cfg, model=copy.deepcopy(calc_policy), tokenizer=tok)
    batch, _ = trainer.collect()
    assert max(s.turns for s in batch.samples) > 1
    for s in batch.samples:
        texts = [tok.decode(s.completion_ids[a:b], skip_special_tokens=True) for a, b in s.turn_spans]
        assert len(s.info["step_verdicts"]) == s.turns and any("<calc>" in t for t in texts)
    assert any(v != 0 for s in batch.samples for v in s.info["step_verdicts"])
    metrics = trainer.algo.update(trainer.ctx, batch)
    assert metrics["steps_per_episode"] > 0 and 0.0 <= metrics["step_correct_frac"] <= 1.0


def test_psgpo_refuses_envs_without_a_step_checker():
    from reference_impls.algorithms.ppo import psgpo
    from reference_impls.envs import get_env
    from reference_impls.options import ConfigError

    # the message says what is missing and names the environments that have it
    with pytest.raises(ConfigError, match=r"checked steps; 'search' has none .*calculator"):
        psgpo.PSGPO.check(psgpo.Config(), SimpleNamespace(group_size=4), get_env("search"))
    psgpo.PSGPO.check(psgpo.Config(), SimpleNamespace(group_size=4), get_env("calculator"))


# ---- every implementation trains through the CLI ------------------------------------------------------

@pytest.mark.parametrize("impl", PPO_FAMILY_IMPLS)
def test_cli_two_steps(tmp_path, impl):
    import json

    from reference_impls.train import main

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        main(["--impl", impl, "--model", "tiny", "--steps", "2", "--out", str(tmp_path / "run"), "--overwrite",
              "--prompts-per-step", "2", "--group-size", "4", "--max-new-tokens-per-turn", "16",
              "--max-completion-tokens", "48"])
    finally:
        torch.set_num_threads(threads)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and all("loss" in r for r in rows)
    if impl == "calculator-pf-ppo":  # best and worst of each group of 4
        assert all(r["groups_kept_frac"] == 0.5 for r in rows)

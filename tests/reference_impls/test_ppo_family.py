"""PPO family variants (issue 18): LitePPO, PF-PPO, VinePPO, VAPO, PSGPO.

Hand-computed values from each paper's equations on tiny tensors, zero gradient on masked tokens, and a
2-step CLI run of every implementation on the tiny model."""
from types import SimpleNamespace

import pytest
import torch

from reference_impls import liteppo, pfppo, vineppo
from reference_impls.rollout import RolloutConfig, Sample, rollout, run_episodes

PPO_FAMILY_IMPLS = ["calculator-liteppo", "calculator-pf-ppo", "calculator-vineppo"]


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


def test_vineppo_states_are_shared_by_identical_prefixes():
    a = _episode([(0, 3), (5, 8)], 1.0, 8)
    b = _episode([(0, 3), (5, 6)], 0.0, 6)  # same first turn and tool result as a
    c = _episode([(0, 2)], 0.0, 2)
    c.group = 1
    starts, state_of = vineppo.distinct_states([a, b, c])
    assert starts == [(0, 0), (0, 1), (2, 0)]  # a's s_0 (shared by b), a's s_1 (shared by b), c's s_0
    assert state_of == [[0, 1], [0, 1], [2]]


def test_vineppo_loss_hand_values_and_masked_tokens_get_no_gradient():
    cfg = vineppo.Config(epsilon=0.2)
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

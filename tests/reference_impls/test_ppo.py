"""PPO: GAE (with masked tool tokens), rewards with KL, losses and diagnostics against hand-computed values."""
import math

import pytest
import torch

from reference_impls.algorithms.ppo import ppo


def test_gae_hand_computed_with_masked_positions():
    # model tokens at 0, 1, 4; tokens 2-3 are tool output (their values must be ignored)
    mask = torch.tensor([[1., 1., 0., 0., 1.], [1., 1., 1., 0., 0.]])
    values = torch.tensor([[0.5, 0.2, 9.0, 9.0, 0.4], [0.1, 0.3, 0.2, 7.0, 7.0]])
    rewards = torch.tensor([[0., 0., 0., 0., 1.], [0., 0., 2., 0., 0.]])
    adv, ret = ppo.gae(rewards, values, mask, gamma=0.9, lam=0.8)
    # row 0 by hand: t4: d = 1 - 0.4 = 0.6 ; t1: d = 0.9*0.4 - 0.2 = 0.16, A = 0.16 + 0.72*0.6 = 0.592
    #                t0: d = 0.9*0.2 - 0.5 = -0.32, A = -0.32 + 0.72*0.592 = 0.10624
    # row 1 by hand: t2: d = 2 - 0.2 = 1.8 ; t1: d = 0.9*0.2 - 0.3 = -0.12, A = -0.12 + 0.72*1.8 = 1.176
    #                t0: d = 0.9*0.3 - 0.1 = 0.17, A = 0.17 + 0.72*1.176 = 1.01672
    expected = torch.tensor([[0.10624, 0.592, 0., 0., 0.6], [1.01672, 1.176, 1.8, 0., 0.]])
    assert torch.allclose(adv, expected, atol=1e-6)
    assert torch.allclose(ret, (expected + values) * mask, atol=1e-6)


def test_gae_skipping_equals_gae_on_the_model_tokens_alone():
    g = torch.Generator().manual_seed(0)
    mask = (torch.rand(3, 12, generator=g) > 0.4).float()
    values, rewards = torch.randn(3, 12, generator=g), torch.randn(3, 12, generator=g) * mask
    adv, _ = ppo.gae(rewards, values, mask, 0.95, 0.9)
    for b in range(3):
        keep = mask[b] > 0
        a_small, _ = ppo.gae(rewards[b, keep][None], values[b, keep][None], torch.ones(1, int(keep.sum())), 0.95, 0.9)
        assert torch.allclose(adv[b, keep], a_small[0], atol=1e-6)
        assert torch.all(adv[b, ~keep] == 0)


def test_lambda_one_gamma_one_gives_reward_to_go_minus_value():
    mask = torch.tensor([[1., 0., 1., 1.]])
    values = torch.tensor([[0.3, 5.0, -0.2, 0.1]])
    rewards = torch.tensor([[0.1, 0.0, 0.0, 1.0]])
    adv, ret = ppo.gae(rewards, values, mask, 1.0, 1.0)
    assert torch.allclose(ret, torch.tensor([[1.1, 0.0, 1.0, 1.0]]), atol=1e-6)
    assert torch.allclose(adv, ret - values * mask, atol=1e-6)


def test_token_rewards_kl_in_reward_and_final_reward_on_last_model_token():
    mask = torch.tensor([[1., 1., 0., 1., 0.], [1., 0., 0., 0., 0.]])
    old = torch.log(torch.tensor([[0.5, 0.4, 1.0, 0.2, 1.0], [0.9, 1.0, 1.0, 1.0, 1.0]]))
    ref = torch.log(torch.tensor([[0.25, 0.4, 1.0, 0.1, 1.0], [0.3, 1.0, 1.0, 1.0, 1.0]]))
    kl1 = ppo.kl_penalty(old, ref, "k1") * mask
    assert torch.allclose(kl1[0], torch.tensor([math.log(2), 0., 0., math.log(2), 0.]), atol=1e-6)
    kl3 = ppo.kl_penalty(old, ref, "k3")
    # k3 with ref/old = 1/2: 0.5 - log(0.5) - 1
    assert abs(float(kl3[0, 0]) - (0.5 + math.log(2) - 1)) < 1e-6 and torch.all(kl3 >= 0)
    r = ppo.token_rewards(torch.tensor([1.0, -1.0]), mask, kl1, beta=0.1)
    assert torch.allclose(r[0], torch.tensor([-0.1 * math.log(2), 0., 0., 1 - 0.1 * math.log(2), 0.]), atol=1e-6)
    assert abs(float(r[1, 0]) - (-1 - 0.1 * math.log(3))) < 1e-6 and float(r[1, 1:].abs().sum()) == 0


def test_policy_loss_hand_values():
    logps = torch.log(torch.tensor([[0.6, 0.2, 0.5]]))
    old = torch.log(torch.tensor([[0.4, 0.4, 0.5]]))  # ratios 1.5, 0.5, (masked)
    adv = torch.tensor([[1.0, -2.0, 7.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    loss, m = ppo.policy_loss(logps, old, adv, mask, epsilon=0.2)
    # token 0: max(-1.5, -1.2) = -1.2 ; token 1: max(2*0.5, 2*0.8) = 1.6 ; mean = 0.2
    assert abs(float(loss) - 0.2) < 1e-6
    assert m["clip_frac"] == pytest.approx(1.0)
    # approx_kl = mean (w - 1) - log w
    assert m["approx_kl"] == pytest.approx(((0.5 - math.log(1.5)) + (-0.5 - math.log(0.5))) / 2, abs=1e-6)


def test_policy_loss_gradient_is_zero_when_clipped_in_the_advantage_direction():
    logps = torch.log(torch.tensor([[0.6, 0.42]])).requires_grad_()
    old = torch.log(torch.tensor([[0.4, 0.4]]))  # ratio 1.5 (clipped, A>0) and 1.05 (inside)
    loss, _ = ppo.policy_loss(logps, old, torch.tensor([[1.0, 1.0]]), torch.ones(1, 2))
    loss.backward()
    assert logps.grad[0, 0] == 0 and logps.grad[0, 1] == pytest.approx(-1.05 / 2, abs=1e-6)


def test_value_loss_hand_values():
    values = torch.tensor([[1.0, 0.0, 3.0]])
    old = torch.tensor([[0.5, 0.5, 0.0]])
    returns = torch.tensor([[2.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    loss, m = ppo.value_loss(values, old, returns, mask, cliprange_value=0.2)
    # clipped V = 0.7, 0.3 ; errors (1, 0) vs clipped (1.69, 0.09) -> 0.5 * (1.69 + 0.09) / 2
    assert abs(float(loss) - 0.445) < 1e-6 and m["vf_clip_frac"] == pytest.approx(1.0)


def test_whiten_and_explained_variance():
    x = torch.tensor([[1.0, 2.0, 100.0], [3.0, 4.0, 5.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    w = ppo.masked_whiten(x, mask)
    assert w[0, 2] == 0
    n = mask.sum()
    assert abs(float((w * mask).sum() / n)) < 1e-6 and abs(float((w ** 2 * mask).sum() / n) - 1) < 1e-5
    r = torch.tensor([[1.0, 2.0, 0.0]])
    m = torch.tensor([[1.0, 1.0, 0.0]])
    assert ppo.explained_variance(r, r, m) == pytest.approx(1.0)
    assert ppo.explained_variance(torch.full_like(r, 1.5), r, m) == pytest.approx(0.0)


def test_ppo_loss_combines_policy_and_value():
    g = torch.Generator().manual_seed(1)
    logps, old = -torch.rand(2, 4, generator=g), -torch.rand(2, 4, generator=g)
    adv, mask = torch.randn(2, 4, generator=g), torch.ones(2, 4)
    v, ov, ret = torch.randn(2, 4, generator=g), torch.randn(2, 4, generator=g), torch.randn(2, 4, generator=g)
    cfg = ppo.Config(vf_coef=0.3)
    total, m = ppo.ppo_loss(logps, old, adv, mask, cfg, values=v, old_values=ov, returns=ret)
    pl, _ = ppo.policy_loss(logps, old, adv, mask, cfg.epsilon)
    vl, _ = ppo.value_loss(v, ov, ret, mask, cfg.cliprange_value)
    assert abs(float(total) - float(pl + 0.3 * vl)) < 1e-6 and m["value_loss"] == pytest.approx(float(vl))


@pytest.mark.parametrize("shared", [False, True])
def test_value_model_aligns_with_logprobs(tiny, shared):
    """forward() returns the same log-probs as the shared scorer, and values of the same shape; the
    separate critic's backbone is a copy (changing it leaves the policy untouched)."""
    from reference_impls.common import collate, completion_logprobs
    from reference_impls.rollout import Sample

    model, tok = tiny
    cfg = ppo.Config(shared_backbone=shared)
    critic = ppo.make_critic(model, cfg)
    samples = [Sample(prompt_ids=[1, 2, 3], completion_ids=[4, 5, 6, 7], loss_mask=[1, 0, 1, 1], old_logprobs=[0.0] * 4),
               Sample(prompt_ids=[9, 8], completion_ids=[4, 5], loss_mask=[1, 1], old_logprobs=[0.0] * 2)]
    batch = collate(samples, tok.pad_token_id)
    logps, _, values = ppo.forward(model, critic, batch, cfg)
    ref, _ = completion_logprobs(model, batch)
    assert torch.allclose(logps, ref, atol=1e-5) and values.shape == logps.shape
    assert torch.all(values == 0)  # zero-initialised head
    if not shared:
        assert all(p.data_ptr() != q.data_ptr() for p, q in zip(critic.backbone.parameters(), model.model.parameters()))


# ----------------------------------------------------------------------------------------------------
# through the trainer (the hooks setup() and update()) and the CLI

def test_ppo_reward_rises_on_toy_task(tmp_path, fresh_tiny):
    import time

    from reference_impls.run_config import TrainConfig
    from reference_impls.trainer import Trainer
    from toy_env import make_task

    model, tok = fresh_tiny()
    # the shared-backbone critic keeps this fast (one forward); the separate critic is exercised by the CLI test
    cfg = TrainConfig(algo="ppo", env="half_vocab", model="tiny", out=str(tmp_path), lr=3e-2, prompts_per_step=4,
                      group_size=4, max_new_tokens_per_turn=1, max_completion_tokens=1, micro_batch_size=32,
                      train_pool=8, algo_config={"beta": 0.0, "num_iterations": 2, "num_mini_batches": 1,
                                                 "shared_backbone": True, "vf_coef": 0.5})
    trainer = Trainer(cfg, task=make_task(model, tok), model=model, tokenizer=tok)
    trainer.t_start = time.time()
    rewards = []
    while len(rewards) < 25:  # a step budget, not a time budget (PPO's step does several passes)
        metrics, _ = trainer.train_step()
        rewards.append(metrics["reward_mean"])
        if len(rewards) >= 8 and sum(rewards[-3:]) / 3 >= 0.9:
            break
    assert {"value_loss", "approx_kl", "clip_frac", "explained_variance"} <= set(metrics)
    first, last = sum(rewards[:3]) / 3, sum(rewards[-3:]) / 3
    assert last >= 0.85 and last > first + 0.2, rewards


def test_ppo_cli_writes_the_run_files_and_the_critic(tmp_path):
    import json

    from test_train_cli import FAST, metric_rows, train

    args = [a if a != "grpo" else "ppo" for a in FAST] + ["--beta", "0.05", "--kl-estimator", "k3"]
    r = train(*args, "--steps", "1", "--out", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "run" / "checkpoints" / "step_000001" / "critic.pt").exists()
    assert json.loads((tmp_path / "run" / "config.json").read_text())["algo_config"] == {"beta": 0.05, "kl_estimator": "k3"}
    row = metric_rows(tmp_path / "run")[0]
    assert {"loss", "value_loss", "approx_kl", "clip_frac", "explained_variance", "kl", "entropy"} <= set(row)


def test_ppo_resume_restores_critic_and_optimizer_exactly(tmp_path, fresh_tiny):
    """Straight 2 steps == 1 step, checkpoint, a fresh trainer resumed from it, 1 step (toy task, where
    rewards vary, so the critic and the policy really move at step 1)."""
    import time

    from reference_impls.run_config import TrainConfig
    from reference_impls.trainer import Trainer
    from toy_env import make_task

    def trainer(out, resume=False):
        model, tok = fresh_tiny()
        cfg = TrainConfig(algo="ppo", env="half_vocab", model="tiny", out=str(out), lr=1e-2, prompts_per_step=2,
                          group_size=4, max_new_tokens_per_turn=1, max_completion_tokens=1, micro_batch_size=8,
                          train_pool=8, algo_config={"beta": 0.05, "num_iterations": 2, "num_mini_batches": 2})
        t = Trainer(cfg, task=make_task(model, tok), model=model, tokenizer=tok, resume=resume)
        t.t_start = time.time()
        return t

    straight = trainer(tmp_path / "a")
    rows = [straight.train_step()[0] for _ in range(2)]
    first = trainer(tmp_path / "b")
    first.train_step()
    first.checkpoint()
    assert (tmp_path / "b" / "checkpoints" / "step_000001" / "critic.pt").exists()
    resumed = trainer(tmp_path / "b", resume=True)
    assert resumed.step == 1
    row = resumed.train_step()[0]
    assert rows[1]["values_mean"] != 0.0  # the critic learned something at step 1
    for key in ("loss", "value_loss", "values_mean", "entropy", "kl", "approx_kl"):
        assert row[key] == pytest.approx(rows[1][key], rel=1e-5, abs=1e-7), key


def test_critic_warmup_trains_only_the_critic(tmp_path, fresh_tiny):
    import time

    from reference_impls.run_config import TrainConfig
    from reference_impls.trainer import Trainer
    from toy_env import make_task

    model, tok = fresh_tiny()
    cfg = TrainConfig(algo="ppo", env="half_vocab", model="tiny", out=str(tmp_path), lr=1e-2, prompts_per_step=2,
                      group_size=4, max_new_tokens_per_turn=1, max_completion_tokens=1, micro_batch_size=8,
                      train_pool=8, algo_config={"beta": 0.0, "critic_warmup_steps": 1})
    trainer = Trainer(cfg, task=make_task(model, tok), model=model, tokenizer=tok)
    trainer.t_start = time.time()
    policy0 = [p.detach().clone() for p in trainer.policy.parameters()]
    critic0 = [p.detach().clone() for p in trainer.algo.critic.parameters()]
    metrics, _ = trainer.train_step()  # step 1: warm-up
    assert metrics["critic_warmup"] == 1.0
    assert all(torch.equal(a, b) for a, b in zip(policy0, trainer.policy.parameters()))
    assert not all(torch.equal(a, b) for a, b in zip(critic0, trainer.algo.critic.parameters()))
    metrics, _ = trainer.train_step()  # step 2: both learn
    assert metrics["critic_warmup"] == 0.0
    assert not all(torch.equal(a, b) for a, b in zip(policy0, trainer.policy.parameters()))

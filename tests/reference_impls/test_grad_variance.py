"""The gradient-variance diagnostic of the shared policy-gradient update (``grad_var``, issue 61's RLOO claim) and
RLOO's two baselines, against numbers computed by hand."""
from types import SimpleNamespace

import pytest
import torch

from reference_impls.algorithms.reinforce import rloo
from reference_impls.policy_gradient import GroupGradients, policy_gradient_update, split_at_groups


def test_group_gradients_by_hand():
    # two groups with gradients g_1 = (1, 0), g_2 = (0, 1): g_hat = (1, 1); P g_p = (2, 0), (0, 2) deviate from
    # g_hat by (1, -1) and (-1, 1): s^2 = (2 + 2) / 1 = 4, grad_var = s^2 / P = 2 = (2 * 2 - 2) / 1
    w = torch.nn.Parameter(torch.zeros(2))
    est = GroupGradients(torch.nn.ParameterList([w]))
    est.start()
    est.enter_group(0)
    (w * torch.tensor([1.0, 0.0])).sum().backward()
    est.enter_group(1)
    (w * torch.tensor([0.0, 1.0])).sum().backward()
    assert est.finish() == pytest.approx(2.0)


def test_group_gradients_three_groups_one_split_by_hand():
    # group 0 backed in two micro-batches: g_0 = (1, 1) + (1, 0) = (2, 1); g_1 = (0, 0); g_2 = (-2, 2)
    # g_hat = (0, 3), ||g_hat||^2 = 9; sum ||g_p||^2 = 5 + 0 + 8 = 13; grad_var = (3 * 13 - 9) / 2 = 15
    w = torch.nn.Parameter(torch.zeros(2))
    est = GroupGradients(torch.nn.ParameterList([w]))
    est.start()
    for group, grad in ((0, (1.0, 1.0)), (0, (1.0, 0.0)), (1, (0.0, 0.0)), (2, (-2.0, 2.0))):
        est.enter_group(group)
        (w * torch.tensor(grad)).sum().backward()
    assert est.finish() == pytest.approx(15.0)
    est.start()  # one group: no estimate
    est.enter_group(0)
    (w * torch.tensor([1.0, 1.0])).sum().backward()
    assert est.finish() is None


def test_split_at_groups_cuts_only_at_group_changes():
    samples = [SimpleNamespace(group=g) for g in (0, 0, 0, 1, 1, 2)]
    assert split_at_groups(samples, [[0, 1], [2, 3, 4], [5]]) == [[0, 1], [2], [3, 4], [5]]


def test_grad_var_of_the_update_matches_per_group_gradients(tiny):
    """``policy_gradient_update(grad_variance=True)`` against each group's gradient taken on its own (the loss
    normalised by the minibatch's sequence count), with micro-batches that straddle groups."""
    from reference_impls.algorithm import Context, batch_from_samples
    from reference_impls.rollout import Sample

    model, tok = tiny
    train = SimpleNamespace(mini_batches=1, micro_batch_size=3, temperature=1.0, share_prompts=False,
                            max_grad_norm=1e9, seed=0)
    cfg = rloo.Config(grad_variance=True)
    ctx = Context(policy=model, model=model, ref=None, optimizer=torch.optim.SGD(model.parameters(), lr=0.0),
                  tokenizer=tok, device=torch.device("cpu"), train=train, config=cfg, task=None,
                  env_config=None, pool=[], rollout_config=None, out=None)
    rewards = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    samples = [Sample(prompt_ids=[5, 6 + i // 2], completion_ids=[7 + i, 8], loss_mask=[1, 1],
                      old_logprobs=[-1.0, -1.0], reward=rewards[i], done=True, group=i // 2) for i in range(6)]
    batch = batch_from_samples(ctx, samples, 2)
    advantages, keep, _ = rloo.prepare_batch(torch.tensor(rewards), 2, cfg)
    from functools import partial
    metrics = policy_gradient_update(ctx, batch, advantages, keep, partial(rloo.rloo_loss, cfg=cfg),
                                     grad_variance=True).reduce()

    from reference_impls.common import collate, completion_logprobs
    params = [p for p in model.parameters() if p.requires_grad]
    group_grads = []
    for g in range(3):
        model.zero_grad(set_to_none=True)
        idx = [2 * g, 2 * g + 1]
        mb = collate([samples[i] for i in idx], tok.pad_token_id, torch.device("cpu"))
        logps, _ = completion_logprobs(model, mb, 1.0, with_entropy=True, share_prompts=False)
        loss, _ = rloo.rloo_loss(logps, mb["old_logprobs"], advantages[idx], mb["loss_mask"], cfg, seq_normalizer=6.0)
        loss.backward()
        group_grads.append(torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1).double()
                                      for p in params]))
    total = sum(group_grads)
    expected = (3 * sum(float((g * g).sum()) for g in group_grads) - float((total * total).sum())) / 2
    assert float(group_grads[2].abs().sum()) == 0.0  # the group of equal rewards: A = 0, no gradient
    assert expected > 0
    assert metrics["grad_var"] == pytest.approx(expected, rel=1e-4)


def test_grad_var_is_not_recorded_unless_asked(tiny):
    from functools import partial

    from reference_impls.algorithm import Context, batch_from_samples
    from reference_impls.rollout import Sample

    model, tok = tiny
    train = SimpleNamespace(mini_batches=1, micro_batch_size=8, temperature=1.0, share_prompts=False,
                            max_grad_norm=1.0, seed=0)
    ctx = Context(policy=model, model=model, ref=None, optimizer=torch.optim.SGD(model.parameters(), lr=0.0),
                  tokenizer=tok, device=torch.device("cpu"), train=train, config=rloo.Config(), task=None,
                  env_config=None, pool=[], rollout_config=None, out=None)
    samples = [Sample(prompt_ids=[5, 6], completion_ids=[7, 8], loss_mask=[1, 1], old_logprobs=[-1.0, -1.0],
                      reward=float(i % 2), done=True, group=i // 2) for i in range(4)]
    batch = batch_from_samples(ctx, samples, 2)
    metrics = policy_gradient_update(ctx, batch, torch.tensor([0.5, -0.5, 0.5, -0.5]), torch.ones(4, dtype=torch.bool),
                                     partial(rloo.rloo_loss, cfg=rloo.Config())).reduce()
    assert "grad_var" not in metrics


def test_rloo_batch_baseline_by_hand():
    r = torch.tensor([1.0, 0.0, 0.0, 3.0, 1.0, 1.0])
    # the batch's sum is 6: A_i = r_i - (6 - r_i) / 5
    expected = [1 - 1.0, 0 - 1.2, 0 - 1.2, 3 - 0.6, 1 - 1.0, 1 - 1.0]
    assert rloo.batch_leave_one_out_advantages(r).tolist() == pytest.approx(expected)
    adv, keep, _ = rloo.prepare_batch(r, 3, rloo.Config(baseline="batch"))
    assert adv.tolist() == pytest.approx(expected) and bool(keep.all())
    # the group baseline (default): group (1, 1) has A = 0; group (1, 0, 0) is 1, -0.5, -0.5
    adv, _, _ = rloo.prepare_batch(r, 3, rloo.Config())
    assert adv.tolist() == pytest.approx([1, -0.5, -0.5, 2, -1, -1])


def test_rloo_batch_baseline_is_not_a_rescaling():
    # a rescaling would give A_batch = c * A_group for every sample; a group of equal rewards has A_group = 0 and
    # A_batch = 1 - (3 - 1) / 3 = 1/3 (the group mean including the sample would be the rescaling, (G-1)/G)
    r = torch.tensor([1.0, 1.0, 0.0, 1.0])
    group = rloo.leave_one_out_advantages(r, 2)
    batch = rloo.batch_leave_one_out_advantages(r)
    assert group[:2].tolist() == [0.0, 0.0] and batch[:2].tolist() == pytest.approx([1 / 3, 1 / 3])


def test_rloo_options_refuse_other_values():
    from reference_impls.options import ConfigError, coerce, spec_map
    with pytest.raises(ConfigError, match="baseline"):
        coerce(spec_map(rloo.Config)["baseline"], "moving_average", "baseline")

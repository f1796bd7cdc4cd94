"""Every advantage and loss variant against numbers computed by hand, and zero gradient on masked tokens."""
import math

import pytest
import torch

from reference_impls.algorithms.grpo import grpo
from reference_impls.algorithms.reinforce import rloo
from reference_impls.common import masked_mean, selective_log_softmax

# Two sequences, two completion tokens; the second token of row 1 is an environment token (mask 0).
# Ratios pi/pi_old: row 0 = [1.5, 0.9], row 1 = [1.1, (masked: 7.0)]. Advantages A = [+1, -1].
MASK = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
OLD = torch.log(torch.tensor([[0.2, 0.5], [0.4, 0.1]])).double()
RATIOS = torch.tensor([[1.5, 0.9], [1.1, 7.0]]).double()
LOGPS = OLD + torch.log(RATIOS)
ADV = torch.tensor([1.0, -1.0]).double()


def loss(ref=None, **kw):
    cfg = grpo.Config(**{"epsilon_low": 0.2, "epsilon_high": 0.2, **kw})
    return grpo.grpo_loss(LOGPS, OLD, ADV, MASK.double(), cfg, ref_logps=ref, max_completion_length=4)


# per-token losses by hand (eps 0.2): row0 t0: -min(1.5*1, 1.2*1) = -1.2; row0 t1: -min(0.9, 0.9) = -0.9;
# row1 t0: -min(1.1*-1, 1.1*-1) = +1.1 (1.1 is inside [0.8, 1.2])
def test_grpo_aggregation():
    value, m = loss(loss_type="grpo")
    assert float(value) == pytest.approx(((-1.2 - 0.9) / 2 + 1.1) / 2)  # 0.025
    assert m["clip_frac"] == pytest.approx(1 / 3)  # only row0 t0 is clipped


def test_dapo_token_mean():
    assert float(loss(loss_type="dapo")[0]) == pytest.approx((-1.2 - 0.9 + 1.1) / 3)


def test_dr_grpo_constant_normaliser():
    assert float(loss(loss_type="dr_grpo")[0]) == pytest.approx((-1.2 - 0.9 + 1.1) / (2 * 4))


def test_clip_higher():
    # eps_high 0.6: row0 t0 is no longer clipped -> -1.5
    value, m = loss(loss_type="grpo", epsilon_high=0.6)
    assert float(value) == pytest.approx(((-1.5 - 0.9) / 2 + 1.1) / 2)
    assert m["clip_frac"] == 0.0


def test_clip_low_only_binds_negative_advantages():
    # eps_low 0.05: row0 t1 ratio 0.9 < 0.95 but A > 0, so min(0.9, 0.95) = 0.9 is still taken: unchanged
    assert float(loss(loss_type="grpo", epsilon_low=0.05)[0]) == pytest.approx(0.025)


def test_gspo_sequence_ratio():
    # row0: w = exp((ln 1.5 + ln 0.9)/2) = sqrt(1.35), inside the clip range; row1: w = 1.1 (one token)
    w0 = math.sqrt(1.35)
    value, _ = loss(loss_type="grpo", importance_sampling_level="sequence")
    assert float(value) == pytest.approx((-w0 + 1.1) / 2)
    value, _ = loss(loss_type="dapo", importance_sampling_level="sequence")
    assert float(value) == pytest.approx((-w0 * 2 + 1.1) / 3)


def test_k3_kl():
    # the reference is 2x more likely than the policy on row1 t0: KL = e^{ln 2} - ln 2 - 1 = 1 - ln 2
    ref = LOGPS.clone()
    ref[1, 0] += math.log(2.0)
    value, m = loss(loss_type="grpo", beta=0.1, ref=ref)
    assert float(value) == pytest.approx(((-1.2 - 0.9) / 2 + 1.1 + 0.1 * (1 - math.log(2))) / 2)
    assert m["kl"] == pytest.approx((1 - math.log(2)) / 3)


def test_group_advantages():
    r = torch.tensor([1.0, 0.0, 0.0, 2.0, 2.0, 2.0])
    # group 1: mean 1/3, Bessel std sqrt(((2/3)^2 + 2*(1/3)^2)/2) = sqrt(1/3); group 2: all equal -> 0
    s = math.sqrt(1 / 3) + 1e-4
    expected = [(2 / 3) / s, (-1 / 3) / s, (-1 / 3) / s, 0, 0, 0]
    assert grpo.group_advantages(r, 3).tolist() == pytest.approx(expected)
    assert grpo.group_advantages(r, 3, scale_rewards=False).tolist() == pytest.approx([2 / 3, -1 / 3, -1 / 3, 0, 0, 0])


def test_rloo_advantages():
    r = torch.tensor([1.0, 0.0, 0.0, 3.0, 1.0, 2.0])
    # A_i = r_i - mean of the other two
    assert rloo.leave_one_out_advantages(r, 3).tolist() == pytest.approx([1, -0.5, -0.5, 1.5, -1.5, 0])


def test_rloo_loss():
    same = LOGPS.clone()  # one pass: ratio 1, plain REINFORCE on the sequence log-prob
    value, _ = rloo.rloo_loss(same, same.detach(), torch.tensor([1.0, -0.5]).double(), MASK.double(), rloo.Config())
    assert float(value) == pytest.approx((-2 + 0.5) / 2)
    value, _ = rloo.rloo_loss(same, same.detach(), torch.tensor([1.0, -0.5]).double(), MASK.double(),
                              rloo.Config(normalize_by_length=True))
    assert float(value) == pytest.approx((-1 + 0.5) / 2)


def test_rloo_kl_in_reward():
    adv, _, shaped = rloo.prepare_batch(torch.tensor([1.0, 0.0]), 2, rloo.Config(beta=0.5),
                                        seq_kl=torch.tensor([0.4, 0.0]))
    assert shaped.tolist() == pytest.approx([0.8, 0.0])
    assert adv.tolist() == pytest.approx([0.8, -0.8])


def test_overlong_shaping():
    lengths = torch.tensor([5, 6, 8, 10, 12])
    # L_max 10, L_cache 4: free up to 6, then linear to -1 at 10, -1 beyond
    assert grpo.overlong_reward(lengths, 10, 4).tolist() == pytest.approx([0, 0, -0.5, -1.0, -1.0])
    assert grpo.overlong_reward(lengths, 10, 0).tolist() == [0, 0, 0, 0, 0]


def test_dynamic_sampling():
    r = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    assert grpo.nonzero_variance_groups(r, 2).tolist() == [False, False, True, True, False, False]
    _, keep, _ = grpo.prepare_batch(r, torch.ones(6), 2, grpo.Config(dynamic_sampling=True), 10)
    assert keep.tolist() == [False, False, True, True, False, False]


LOSS_CONFIGS = [
    (grpo.grpo_loss, grpo.Config(loss_type=lt, importance_sampling_level=lvl, beta=beta))
    for lt in ("grpo", "dr_grpo", "dapo") for lvl in ("token", "sequence") for beta in (0.0, 0.1)
] + [(rloo.rloo_loss, rloo.Config()), (rloo.rloo_loss, rloo.Config(normalize_by_length=True))]


@pytest.mark.parametrize("loss_fn,cfg", LOSS_CONFIGS)
def test_masked_tokens_get_zero_gradient(loss_fn, cfg):
    torch.manual_seed(0)
    B, T, V = 3, 6, 11
    logits = torch.randn(B, T, V, requires_grad=True)
    ids = torch.randint(0, V, (B, T))
    mask = torch.tensor([[1, 1, 0, 0, 1, 0], [1, 0, 0, 1, 1, 1], [0, 0, 1, 1, 0, 0]], dtype=torch.float32)
    logps = selective_log_softmax(logits, ids)
    old = (logps + 0.3 * torch.randn(B, T)).detach()  # ratios != 1 so clipping is exercised
    ref = (logps + 0.2 * torch.randn(B, T)).detach()
    value, _ = loss_fn(logps, old, torch.tensor([1.0, -0.5, 0.7]), mask, cfg, ref_logps=ref,
                       max_completion_length=T)
    value.backward()
    grad_norm_per_pos = logits.grad.abs().sum(-1)
    assert torch.all(grad_norm_per_pos[mask == 0] == 0)  # exactly zero, not merely small
    assert grad_norm_per_pos[mask == 1].sum() > 0  # (clipped tokens may get 0 too; model tokens overall do not)


def test_sft_loss_ignores_env_tokens():
    logits = torch.randn(2, 4, 7, requires_grad=True)
    mask = torch.tensor([[1.0, 0, 1, 0], [0, 1, 1, 0]])
    (-masked_mean(selective_log_softmax(logits, torch.randint(0, 7, (2, 4))), mask)).backward()
    assert torch.all(logits.grad.abs().sum(-1)[mask == 0] == 0)


def test_fused_adamw_matches_the_reference_implementation():
    # the trainer's optimizer (common.adamw, fused where available) takes the same steps as plain AdamW
    from reference_impls.common import adamw

    torch.manual_seed(0)
    a = [torch.nn.Parameter(torch.randn(7, 5)), torch.nn.Parameter(torch.randn(3))]
    b = [torch.nn.Parameter(p.detach().clone()) for p in a]
    fused = adamw(a, lr=1e-2, weight_decay=0.1)
    plain = torch.optim.AdamW(b, lr=1e-2, betas=(0.9, 0.99), weight_decay=0.1, foreach=False)
    assert fused.defaults.get("fused") is True  # CPU float32 has a fused kernel in torch 2.13
    for step in range(5):
        for p, q in zip(a, b):
            g = torch.randn_like(p)
            p.grad, q.grad = g.clone(), g.clone()
        fused.step()
        plain.step()
    for p, q in zip(a, b):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-6)


def test_shared_prompt_forward_gives_the_same_logprobs_and_gradients(fresh_tiny):
    # a group's samples share one prompt forward in the trainer; it must not change the numbers
    from types import SimpleNamespace

    from reference_impls.common import collate, completion_logprobs

    model, tok = fresh_tiny()
    model.train()

    def sample(prompt, completion, env_tokens=0):
        mask = [1] * (len(completion) - env_tokens) + [0] * env_tokens
        return SimpleNamespace(prompt_ids=prompt, completion_ids=completion, loss_mask=mask,
                               old_logprobs=[0.0] * len(completion))

    long_prompt, short_prompt = list(range(100, 117)), list(range(300, 309))  # different left padding
    samples = [sample(long_prompt, [5, 6, 7, 8], 1), sample(long_prompt, [9, 10]),
               sample(long_prompt, [11, 12, 13, 14, 15, 16], 2), sample(short_prompt, [1, 2, 3]),
               sample(short_prompt, [4]), sample(short_prompt, [7, 8, 9, 10, 11]), sample([400, 401], [3, 4])]
    batch = collate(samples, tok.pad_token_id)
    results, calls = [], []
    # the rows each forward pass sees: the shared path must really run the 3 distinct prompts once
    # (a silent fallback to the plain forward would pass the equality checks below on its own)
    hook = model.register_forward_pre_hook(lambda mod, args, kwargs: calls[-1].append(kwargs["input_ids"].shape),
                                           with_kwargs=True)
    for share in (False, True):
        calls.append([])
        model.zero_grad()
        logps, entropy = completion_logprobs(model, batch, with_entropy=True, share_prompts=share)
        (logps * batch["loss_mask"]).sum().backward()
        results.append((logps.detach(), entropy, [p.grad.clone() for p in model.parameters()]))
    hook.remove()
    width = batch["input_ids"].shape[1]
    K = batch["logits_to_keep"]
    assert calls[0] == [torch.Size([7, width])]
    assert calls[1] == [torch.Size([3, width - K]), torch.Size([7, K])]
    (lp0, ent0, g0), (lp1, ent1, g1) = results
    mask = batch["attention_mask"][:, -batch["logits_to_keep"]:].bool()
    torch.testing.assert_close(lp1[mask], lp0[mask], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ent1[mask], ent0[mask], rtol=1e-5, atol=1e-5)
    for a, b in zip(g1, g0):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)

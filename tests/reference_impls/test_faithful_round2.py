"""The sixteen algorithms of the second faithfulness audit (issue 62) against their papers and the authors'
released code: SRPO's carried-forward history, PAPO's bounded, one-branch perception term per minibatch,
DARS's schedules and filter, GRESO on dynamic sampling with p adapting from the second epoch, and the
defaults the authors' code settles (Posterior-GRPO's lambda, StarPO-S's group count, beta-DPO's spread)."""
import math
import random
from types import SimpleNamespace

import pytest
import torch

from reference_impls.algorithms.dpo import dpo_variants, lcpo
from reference_impls.algorithms.grpo import dars, grpo, greso, ktae, papo, posterior_grpo, srpo, starpo, step_grpo
from reference_impls.algorithms.ppo import vineppo
from reference_impls.options import build
from reference_impls.registry import get_implementation as implementation


def cfg_of(module, **values):
    return build(module.Config, values, "test")


# ---- 1. SRPO: the active set is carried forward -----------------------------------------------------------
def pool_ctx(n, prompts_per_step, config, step=0):
    pool = [SimpleNamespace(uid=i, level=3) for i in range(n)]
    return SimpleNamespace(pool=pool, train=SimpleNamespace(prompts_per_step=prompts_per_step), step=step,
                           config=config, rank=0, world=1)


def run_srpo(n, prompts_per_step, always_solved, steps, seed=0):
    """Drive draw/record as the trainer does; returns every step's drawn uids and the algorithm."""
    ctx = pool_ctx(n, prompts_per_step, srpo.Config())
    algo = srpo.SRPO(ctx)
    rng = random.Random(seed)
    history = []
    for _ in range(steps):
        drawn = [p.uid for p in algo.draw(ctx, rng)]
        history.append(drawn)
        algo.record([uid in always_solved for uid in drawn])
    return history, algo


def test_srpo_always_solved_prompts_leave_for_the_rest_of_the_stage():
    """Issue 62's case: 4 always-solved prompts in a pool of 10. Epoch 1 sees each once; from then on they
    stay out (the old code rebuilt every epoch from the whole pool, so they came back every other epoch:
    30 re-draws in 30 steps)."""
    solved = {0, 1, 2, 3}
    history, algo = run_srpo(10, 2, solved, 30)
    draws = [uid for step in history for uid in step]
    assert sorted(draws[:10]) == list(range(10))  # epoch 1: the whole pool
    assert [uid for uid in draws[10:] if uid in solved] == []  # never again
    # epochs 2..: exactly the 6 mixed or all-wrong prompts, each once per epoch
    rest = draws[10:]
    for e in range(len(rest) // 6):
        assert sorted(rest[6 * e:6 * e + 6]) == [4, 5, 6, 7, 8, 9]
    assert algo.dropped == 4 and algo.active == {4, 5, 6, 7, 8, 9}


@pytest.mark.parametrize("seed", [0, 5])  # 5: the prompt closing epoch 1 also opens epoch 2 in the same step
def test_srpo_outcome_counts_for_the_epoch_the_prompt_was_drawn_in(seed):
    """3 prompts per step over a pool of 10: epoch 1 ends inside step 4's draw (its last prompt and the
    first two of epoch 2 share the step). The epoch-1 prompt's "all correct" arrives after epoch 2 was built,
    so it leaves epoch 2 then (what is left of its order) and epoch 3, and is not an epoch-2 outcome."""
    ctx = pool_ctx(10, 3, srpo.Config())
    algo = srpo.SRPO(ctx)
    rng = random.Random(seed)
    for _ in range(3):
        algo.draw(ctx, rng)
        algo.record([False, False, False])
    algo.draw(ctx, rng)
    (last_of_one, e1), *first_of_two = algo.drawn
    assert e1 == 1 and [e for _, e in first_of_two] == [2, 2] and algo.epoch == 2
    algo.record([True, False, False])  # only the epoch-1 draw was solved by every sample
    assert last_of_one not in algo.active and last_of_one not in algo.order
    assert algo.solved_this_epoch == set()  # nothing recorded against epoch 2
    opened = [uid for uid, _ in first_of_two]
    rest, epoch_three = [], []
    for _ in range(5):
        algo.draw(ctx, rng)
        rest += [uid for uid, e in algo.drawn if e == 2]
        epoch_three += [uid for uid, e in algo.drawn if e == 3]
        algo.record([False] * 3)
    assert last_of_one not in rest and last_of_one not in epoch_three
    # epoch 2 is the pool less the late-solved prompt, except where it had been drawn before the outcome came
    assert sorted(opened + rest) == sorted(set(range(10)) - ({last_of_one} - set(opened)))
    assert epoch_three and set(epoch_three) <= set(range(10)) - {last_of_one}


def test_srpo_stage_switch_resets_the_active_set():
    ctx = pool_ctx(6, 2, srpo.Config(srpo_stage_one_steps=6))
    algo = srpo.SRPO(ctx)
    rng = random.Random(2)
    for _ in range(6):
        drawn = [p.uid for p in algo.draw(ctx, rng)]
        algo.record([uid == 0 for uid in drawn])
    assert 0 not in algo.active
    ctx.step = 6  # stage 2: a fresh epoch over its full data
    algo.draw(ctx, rng)
    assert algo.stage == 2 and algo.active == set(range(6))


def test_srpo_setting_names_the_carried_set():
    assert r"\mathcal{D}_{e+1}=\{q\in\mathcal{D}_e" in srpo.SRPO.SETTING


# ---- 2. PAPO: bounded, masked branch without gradient, per minibatch ------------------------------------
def papo_loss(cfg, logps, masked, mask, token_normalizer=None):
    algo = papo.PAPO(SimpleNamespace(config=cfg))
    fn = algo.loss_fn(SimpleNamespace(train=SimpleNamespace(max_completion_tokens=8)))
    algo.perception_total = algo.perception_weight = 0.0
    old = logps.detach().clone()
    adv = torch.zeros(logps.shape[0], dtype=logps.dtype)
    ref = logps.detach().clone()
    return fn(logps, old, adv, mask, ref_logps=ref, masked_logps=masked, token_normalizer=token_normalizer)[0]


def test_papo_defaults_are_the_authors_papo_g():
    cfg = cfg_of(papo)
    assert (cfg.perception_gamma, cfg.beta, cfg.epsilon_low, cfg.epsilon_high) == (0.02, 0.01, 0.2, 0.3)
    assert cfg.perception_kl_clip == 10.0 and cfg.perception_masked_grad is False


def test_papo_term_is_bounded_at_large_log_ratios():
    """With A = 0 and pi = pi_ref the loss is -gamma times the perception term alone. At a log-ratio of 30
    the unbounded k3 is e^30 - 31 per token; the authors' (and the default) caps it at 10."""
    cfg = cfg_of(papo, beta=0.0)
    logps = torch.tensor([[-31.0, -1.0]], dtype=torch.float64, requires_grad=True)
    masked = torch.tensor([[-1.0, -1.0]], dtype=torch.float64)
    mask = torch.ones(1, 2, dtype=torch.float64)
    loss = papo_loss(cfg, logps, masked, mask)
    assert float(loss.detach()) == pytest.approx(-0.02 * (10.0 + 0.0) / 2)
    unbounded = papo_loss(cfg_of(papo, beta=0.0, perception_kl_clip=0.0), logps, masked, mask)
    assert float(unbounded.detach()) == pytest.approx(-0.02 * (math.exp(30.0) - 31.0) / 2)  # the paper's k3: no bound


def test_papo_unbounded_option_is_the_papers_k3():
    logps = torch.tensor([[-2.0, -1.0]], dtype=torch.float64)
    masked = torch.tensor([[-1.0, -1.5]], dtype=torch.float64)
    mask = torch.ones(1, 2, dtype=torch.float64)
    x = [math.exp(1.0), math.exp(-0.5)]  # k3 = 0.72 and 0.11: below the bound of 10
    expected = -0.02 * sum(v - math.log(v) - 1 for v in x) / 2
    assert float(papo_loss(cfg_of(papo, beta=0.0, perception_kl_clip=0.0), logps, masked, mask)) == pytest.approx(expected)
    # at moderate log-ratios the bound does not act: the default gives the same number
    assert float(papo_loss(cfg_of(papo, beta=0.0), logps, masked, mask)) == pytest.approx(expected)


def test_papo_masked_branch_gets_no_gradient_by_default():
    logps = torch.tensor([[-2.0, -1.0]], dtype=torch.float64, requires_grad=True)
    masked = torch.tensor([[-1.0, -1.5]], dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    papo_loss(cfg_of(papo, beta=0.0), logps, masked, mask).backward()
    assert masked.grad is None
    # d(-gamma k3(x))/d full with x = pi_mask / pi_full = e: -gamma (1 - x); the masked-out token: 0
    assert logps.grad[0].tolist() == pytest.approx([-0.02 * (1 - math.e), 0.0])


def test_auxiliary_gets_each_optimiser_steps_own_minibatch(tiny):
    """``policy_gradient_update`` hands ``auxiliary`` the minibatch of each step (the masked-gradient PAPO
    term covers those rows only, so its weight does not grow with --mini-batches)."""
    from reference_impls.algorithm import Context, batch_from_samples
    from reference_impls.policy_gradient import policy_gradient_update
    from reference_impls.rollout import Sample

    model, tok = tiny
    train = SimpleNamespace(mini_batches=2, micro_batch_size=8, temperature=1.0, share_prompts=False,
                            max_grad_norm=1.0, seed=0)
    ctx = Context(policy=model, model=model, ref=None, optimizer=torch.optim.SGD(model.parameters(), lr=0.0),
                  tokenizer=tok, device=torch.device("cpu"), train=train, config=grpo.Config(), task=None,
                  env_config=None, pool=[], rollout_config=None, out=None)
    samples = [Sample(prompt_ids=[5, 6], completion_ids=[7, 8], loss_mask=[1, 1], old_logprobs=[-1.0, -1.0],
                      reward=float(i % 2), done=True, group=i // 2) for i in range(4)]
    batch = batch_from_samples(ctx, samples, 2)
    parts = []
    policy_gradient_update(ctx, batch, torch.zeros(4), torch.ones(4, dtype=torch.bool),
                           grpo.GRPO(SimpleNamespace(config=grpo.Config())).loss_fn(
                               SimpleNamespace(train=SimpleNamespace(max_completion_tokens=8))),
                           auxiliary=lambda part: parts.append(list(part)) or {})
    assert parts == [[0, 1], [2, 3]]


# ---- 3. DARS: the authors' schedules --------------------------------------------------------------------
@pytest.mark.parametrize("accuracy,equal,hardness", [
    (0.0, 24, 56),  # a = 0 counts as 1/(2N) = 1/16: ET ceil(26.13) = 27 capped at 32 - 8; HW 8 (8 - 1) = 56
    (1 / 8, 11, 24),  # ET 8 (16/7 - 1) = 10.29 -> 11; HW 8 (4 - 1) = 24
    (0.5, 0, 0),
    (0.75, 0, 0),
])
def test_dars_schedule_counts_as_the_authors(accuracy, equal, hardness):
    # the authors' scripts: N = 8, N_max = 32 (ET) and 64 (HW), no std scaling
    assert dars.extra_count(accuracy, 8, 32, "equal") == equal
    assert dars.extra_count(accuracy, 8, 64, "hardness") == hardness


def test_dars_schedule_with_std_scaling_uses_the_std_spread():
    # S = 2 sqrt(a (1 - a)), targets N and 2 (1 - a) N; a = 1/8, N = 8: S = sqrt(7)/4
    S = 2 * math.sqrt(1 / 8 * 7 / 8)
    assert dars.extra_count(1 / 8, 8, 1000, "equal", scale_rewards=True) == math.ceil(8 / S - 8)
    assert dars.extra_count(1 / 8, 8, 1000, "hardness", scale_rewards=True) == math.ceil(8 * 2 * 7 / 8 / S - 8)


def test_dars_defaults_and_filter():
    cfg = cfg_of(dars)
    assert cfg.scale_rewards is False and cfg.drop_constant_groups is True and cfg.schedule == "hardness"
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    assert dars.varied_groups(rewards, [0, 0, 0, 1, 1, 1, 2]).tolist() == [True] * 3 + [False] * 4


def test_dars_equation_follows_the_schedule():
    equal = dars.DARS.setting_latex(cfg_of(dars, schedule="equal"))
    hardness = dars.DARS.setting_latex(cfg_of(dars, schedule="hardness"))
    assert r"2(1-a_j)" in hardness and r"2(1-a_j)" not in equal and equal != hardness


# ---- 4. GRESO: on dynamic sampling, p adapts from the second epoch --------------------------------------
def test_greso_runs_on_dynamic_sampling():
    cfg = cfg_of(greso)
    assert cfg.dynamic_sampling is True
    algo = greso.GRESO(SimpleNamespace(config=cfg))
    batch = SimpleNamespace(rewards=torch.tensor([1.0, 1.0, 1.0, 0.0]), lengths=torch.full((4,), 3.0), group_size=2)
    _, keep = algo.advantages(SimpleNamespace(train=SimpleNamespace(max_completion_tokens=8)), batch)
    assert keep.tolist() == [False, False, True, True]  # the all-correct group slipped past: dropped


def test_greso_p_stays_in_the_first_epoch_and_adapts_from_the_second():
    ctx = pool_ctx(4, 2, cfg_of(greso, greso_target_zero_variance=0.3))
    algo = greso.GRESO(ctx)
    rng = random.Random(0)
    for _ in range(2):  # 4 candidates: the first epoch (nothing has a history, nothing is skipped)
        algo.draw(ctx, rng)
        algo.record([True, True], [False, False])
    assert (algo.p_easy, algo.p_hard) == (0.5, 0.5)
    algo.draw(ctx, rng)  # epoch 2
    algo.record([True, False], [False, False])  # easy 1/2 >= 0.1: p_easy falls; hard 0 < 0.2: p_hard rises
    assert algo.p_easy == pytest.approx(0.49) and algo.p_hard == pytest.approx(0.51)


# ---- 5. Posterior-GRPO: lambda 1 ------------------------------------------------------------------------
def test_posterior_grpo_default_is_the_papers_reward():
    cfg = cfg_of(posterior_grpo)
    assert cfg.process_weight == 1.0
    # R = R_f + R_o + R_o R_t with (R_f + R_o) the env reward: correct with R_t = 0.5 -> 1.5; wrong -> its reward
    r = posterior_grpo.posterior_rewards(torch.tensor([1.0, 0.0]), torch.tensor([True, False]),
                                         torch.tensor([0.5, 1.0]), cfg.process_weight)
    assert r.tolist() == [1.5, 0.0]


# ---- 6. StepGRPO: the authors' beta is one option away and stated -------------------------------------
def test_step_grpo_states_the_authors_beta():
    row = implementation("calculator-step-grpo")
    assert cfg_of(step_grpo).beta == 0.0 and cfg_of(step_grpo).step_accuracy_weight == 0.1
    assert "--beta 0.04" in row.changes and "0.04" in step_grpo.__doc__


# ---- 8. defaults the authors' code settles --------------------------------------------------------------
def test_ktae_weights_are_the_authors_scripts():
    cfg = cfg_of(ktae)
    assert (cfg.ktae_fisher_weight, cfg.ktae_ig_weight, cfg.ktae_scale) == (1.0, 2.0, 1.0)
    assert "xiaolizh1/KTAE" in implementation("calculator-ktae").changes


def test_ghpo_row_names_the_authors_schedule():
    assert "hkgc-1/GHPO" in implementation("calculator-ghpo").changes
    assert "not checked" not in implementation("calculator-ghpo").changes


# ---- 7. the smaller items ---------------------------------------------------------------------------------
def test_beta_dpo_running_spread_uses_the_unbiased_std(monkeypatch):
    margins = [0.0, 1.0, 3.0]
    algo = dpo_variants.BetaDPO.__new__(dpo_variants.BetaDPO)
    algo.cfg, algo.margin_mean, algo.margin_std = dpo_variants.BetaDPOConfig(filter_ratio=0.0), None, None
    pairs = [SimpleNamespace(chosen=m, rejected=0.0, ref_chosen=0.0, ref_rejected=0.0) for m in margins]
    monkeypatch.setattr(dpo_variants.DPO, "step_pairs", lambda self, ctx: pairs)
    monkeypatch.setattr(dpo_variants, "sequence_logps",
                        lambda model, seqs, pad, device, temperature: torch.tensor(seqs, dtype=torch.float64))
    ctx = SimpleNamespace(train=SimpleNamespace(micro_batch_size=8, temperature=1.0, seed=0), step=0,
                          tokenizer=SimpleNamespace(pad_token_id=0), model=None, device="cpu")
    algo.step_pairs(ctx)
    assert algo.margin_std == pytest.approx(math.sqrt(((0 - 4 / 3) ** 2 + (1 - 4 / 3) ** 2 + (3 - 4 / 3) ** 2) / 2))


def test_beta_dpo_equation_means_the_kept_pairs():
    assert r"\mathrm{mean}_{i\in\mathrm{kept}}" in dpo_variants.BetaDPO.objective(dpo_variants.BetaDPOConfig())


@pytest.mark.parametrize("P,kept", [(4, 1), (5, 1), (6, 1), (7, 1), (8, 2), (10, 2), (2, 1)])
def test_starpo_keeps_int_p_P_groups_as_ragen(P, kept):
    rewards = torch.tensor([[1.0, 0.0] if g % 2 else [1.0, 1.0] for g in range(P)]).flatten()
    keep = starpo.variance_filter(rewards, 2, 0.25)
    assert int(keep.sum()) // 2 == kept


@pytest.mark.parametrize("split", ["easy", "medium", "difficult", "unfiltered", "solved"])
def test_lcpo_equation_names_the_splits_pairs(split):
    shown = lcpo.LCPO.objective(cfg_of(lcpo, split=split))
    assert ("correct episode" in shown) == (split == "solved")
    assert lcpo.SPLIT_PAIRS_LATEX[split] in shown


def test_vineppo_states_where_it_whitens():
    assert "each training step" in implementation("calculator-vineppo").changes
    assert "inside each training step" in vineppo.__doc__

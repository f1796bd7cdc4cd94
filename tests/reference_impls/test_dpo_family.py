"""The DPO-family variants (issue 18): SimPO, ORPO, beta-DPO (dpo_variants.py), KTO (kto.py), Step-DPO
(step_dpo.py).

SimPO, ORPO and KTO are checked against TRL 1.16's own loss code on identical tensors:
``CPOTrainer.cpo_loss`` with ``loss_type="simpo"``, ``ORPOTrainer.odds_ratio_loss`` and
``KTOTrainer._compute_loss``, each called unbound with a stub ``self`` holding only the attributes it reads.
TRL has no beta-DPO or Step-DPO, so those are checked against arithmetic done by hand from the papers'
formulas, and Step-DPO's step checks and pairs against a hand-made calculator problem. Every loss must give
zero gradient to masked (tool) tokens, and each variant trains two steps through the CLI on the tiny model.
Learning tests: test_dpo_family_learning.py."""
import json
import math
from collections import defaultdict
from fractions import Fraction
from types import SimpleNamespace

import pytest
import torch
# TRL is pinned (requirements.txt): a moved module must fail here, not skip the parity tests
import trl.experimental.cpo.cpo_trainer as trl_cpo
import trl.experimental.orpo.orpo_trainer as trl_orpo
import trl.trainer.kto_trainer as trl_kto

from reference_impls.algorithms.dpo import dpo, dpo_variants, kto, step_dpo
from reference_impls.envs.calculator import STEPS, Problem

N, L = 5, 9  # pairs, completion positions


def _tensors(seed=0):
    """Per-token log-probs (masked, as TRL's batch log-probs are) and a loss mask for N chosen + N rejected."""
    g = torch.Generator().manual_seed(seed)
    mask = (torch.rand(2 * N, L, generator=g) > 0.3).double()
    mask[:, 0] = 1.0
    per_token = (-torch.rand(2 * N, L, generator=g) * 2).double() * mask
    return per_token, mask


def _split(per_token, mask):
    seq, lengths = per_token.sum(1), mask.sum(1)
    return seq[:N], seq[N:], lengths[:N], lengths[N:]


class _Accelerator:
    device = torch.device("cpu")


# ----------------------------------------------------------------------------------------------------
# SimPO against TRL's CPO trainer (loss_type="simpo"; cpo_alpha = 0 adds no NLL term)

def trl_simpo(beta, gamma, chosen_avg, rejected_avg):
    stub = SimpleNamespace(alpha=0.0, beta=beta, loss_type="simpo", simpo_gamma=gamma, label_smoothing=0.0,
                           accelerator=_Accelerator())
    losses, chosen_rewards, rejected_rewards = trl_cpo.CPOTrainer.cpo_loss(stub, chosen_avg, rejected_avg)
    return losses.mean(), chosen_rewards, rejected_rewards


@pytest.mark.parametrize("beta,gamma", [(2.0, 1.0), (2.5, 0.5), (0.7, 0.0)])
def test_simpo_matches_trl(beta, gamma):
    c, r, lc, lr = _split(*_tensors())
    # TRL's CPO trainer averages the log-probs over completion tokens (average_log_prob=True for simpo)
    expected, rc, rr = trl_simpo(beta, gamma, c / lc, r / lr)
    ours, metrics = dpo_variants.simpo_loss(c, r, lc, lr, beta, gamma)
    assert abs(float(ours) - float(expected)) < 1e-6, (float(ours), float(expected))
    assert metrics["rewards/chosen"] == pytest.approx(float(rc.mean()), abs=1e-6)
    assert metrics["rewards/margins"] == pytest.approx(float((rc - rr).mean()), abs=1e-6)
    assert metrics["rewards/accuracies"] == pytest.approx(float((rc > rr).double().mean()), abs=1e-6)


def test_simpo_by_hand_and_not_vacuous():
    # one pair: chosen 3 model tokens with log pi = -3 (avg -1), rejected 2 tokens with log pi = -4 (avg -2)
    # beta = 2, gamma = 1: logit = 2 * (-1 - (-2)) - 1 = 1, loss = -log sigmoid(1) = log(1 + e^-1) = 0.31326
    loss, _ = dpo_variants.simpo_loss(torch.tensor([-3.0]), torch.tensor([-4.0]), torch.tensor([3.0]),
                                      torch.tensor([2.0]), beta=2.0, gamma=1.0)
    assert float(loss) == pytest.approx(math.log(1 + math.exp(-1)), abs=1e-6)
    # the length normalisation matters: on sums (lengths 1) the same pair gives 2 * 1 - 1 = 1 as well, so
    # pick lengths that change the sign: chosen avg -3/3 = -1 vs rejected -4/8 = -0.5 -> logit = -2
    loss2, _ = dpo_variants.simpo_loss(torch.tensor([-3.0]), torch.tensor([-4.0]), torch.tensor([3.0]),
                                       torch.tensor([8.0]), beta=2.0, gamma=1.0)
    assert float(loss2) == pytest.approx(math.log(1 + math.exp(2)), abs=1e-6)


# ----------------------------------------------------------------------------------------------------
# ORPO against TRL's ORPO trainer's odds-ratio loss

def trl_odds_ratio(beta, chosen_avg, rejected_avg):
    stub = SimpleNamespace(beta=beta, accelerator=_Accelerator())
    return trl_orpo.ORPOTrainer.odds_ratio_loss(stub, chosen_avg, rejected_avg)


@pytest.mark.parametrize("lam", [0.1, 0.5])
def test_orpo_matches_trl(lam):
    c, r, lc, lr = _split(*_tensors(1))
    # TRL's ORPO uses the per-token average log-probs for the odds (average_log_prob=True)
    losses, rc, rr, mean_ratio, mean_log_odds = trl_odds_ratio(lam, c / lc, r / lr)
    ours, metrics = dpo_variants.orpo_loss(c, r, lc, lr, lam)
    # TRL's total is nll - losses.mean() with losses = lam * log sigmoid(log odds); its nll is a token mean over
    # the whole batch, the paper's L_SFT (eq. 2) a per-episode mean, which is ours: add that by hand
    nll = float((-(c / lc)).mean())
    assert abs(float(ours) - (nll - float(losses.mean()))) < 1e-6
    assert metrics["log_odds_ratio"] == pytest.approx(float(mean_ratio), abs=1e-6)
    assert metrics["log_odds_chosen"] == pytest.approx(float(mean_log_odds), abs=1e-6)
    assert metrics["rewards/chosen"] == pytest.approx(float(rc.mean()), abs=1e-6)
    assert metrics["nll_loss"] == pytest.approx(nll, abs=1e-9)


def test_orpo_by_hand():
    # P(y_w) = 0.4 (avg log-prob log 0.4), P(y_l) = 0.2: log odds ratio = log(0.4/0.6) - log(0.2/0.8) = 0.98083
    # L = -log 0.4 + lam * -log sigmoid(0.98083) = 0.91629 + 0.5 * 0.31854
    c, r = torch.tensor([2 * math.log(0.4)]), torch.tensor([3 * math.log(0.2)])
    loss, m = dpo_variants.orpo_loss(c, r, torch.tensor([2.0]), torch.tensor([3.0]), lam=0.5)
    log_or = math.log(0.4 / 0.6) - math.log(0.2 / 0.8)
    assert m["log_odds_chosen"] == pytest.approx(log_or, abs=1e-6)
    assert float(loss) == pytest.approx(-math.log(0.4) + 0.5 * math.log(1 + math.exp(-log_or)), abs=1e-6)


def test_log1mexp_is_accurate_on_both_branches():
    x = torch.tensor([-1e-6, -0.5, -0.7, -3.0, -40.0], dtype=torch.float64)
    assert torch.allclose(dpo_variants.log1mexp(x), torch.log(1 - torch.exp(x)), rtol=1e-6)


# ----------------------------------------------------------------------------------------------------
# beta-DPO by hand

def test_beta_dpo_beta_follows_the_batch_margin():
    # margins M = [1, 2, 3], running threshold M_0 = 1.5, spread 10 (the filter keeps everyone when rho = 0)
    # beta_batch = 0.1 * (1 + 0.5 * (mean(M) - 1.5)) = 0.1 * (1 + 0.5 * 0.5) = 0.125
    kept, beta = dpo_variants.beta_dpo_select(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), 1.5, 10.0,
                                              beta0=0.1, alpha=0.5, rho=0.0)
    assert kept.tolist() == [0, 1, 2] and beta == pytest.approx(0.125)
    # a batch of close pairs (mean margin below the threshold) gets a smaller beta: 0.1 * (1 + 0.5 * -1) = 0.05
    _, beta_low = dpo_variants.beta_dpo_select(torch.tensor([0.5, 0.5], dtype=torch.float64), 1.5, 10.0, 0.1, 0.5, 0.0)
    assert beta_low == pytest.approx(0.05)
    # never below 1e-3
    _, beta_min = dpo_variants.beta_dpo_select(torch.tensor([-50.0]), 0.0, 10.0, 0.1, 1.0, 0.0)
    assert beta_min == pytest.approx(1e-3)


def test_beta_dpo_filter_drops_the_outlier():
    # weights exp(-(M - M_0)^2 / (2 sigma^2)) with M_0 = 0, sigma = 1: the margin 40 has weight e^-800 = 0,
    # so keeping (1 - 0.25) * 4 = 3 of 4 pairs must drop it, whatever the draw
    margins = torch.tensor([0.1, -0.2, 40.0, 0.3], dtype=torch.float64)
    for seed in range(5):
        kept, beta = dpo_variants.beta_dpo_select(margins, 0.0, 1.0, 0.1, 0.5, 0.25, torch.Generator().manual_seed(seed))
        assert kept.tolist() == [0, 1, 3]
        assert beta == pytest.approx(0.1 * (1 + 0.5 * (0.2 / 3)))


def test_beta_dpo_loss_uses_the_batch_beta():
    algo = dpo_variants.BetaDPO.__new__(dpo_variants.BetaDPO)
    algo.cfg, algo.step_beta = dpo_variants.BetaDPOConfig(beta=0.1), 0.3
    c, r = torch.tensor([-2.0, -3.0]), torch.tensor([-4.0, -2.5])
    ref_c, ref_r = torch.tensor([-2.5, -3.0]), torch.tensor([-3.0, -3.0])
    # h = (c - ref_c) - (r - ref_r) = [0.5 + 1.0, 0 - 0.5] = [1.5, -0.5]
    loss, m = algo.pair_loss(c, r, ref_c, ref_r, torch.ones(2), torch.ones(2))
    expected = (math.log(1 + math.exp(-0.3 * 1.5)) + math.log(1 + math.exp(0.3 * 0.5))) / 2
    assert float(loss) == pytest.approx(expected, abs=1e-6)
    assert m["rewards/margins"] == pytest.approx(0.1 * (1.5 - 0.5) / 2, abs=1e-6)  # logged with beta_0


# ----------------------------------------------------------------------------------------------------
# gradients

def _variant_losses():
    bdpo = dpo_variants.BetaDPO.__new__(dpo_variants.BetaDPO)
    bdpo.cfg, bdpo.step_beta = dpo_variants.BetaDPOConfig(), 0.2
    return {
        "simpo": lambda c, r, rc, rr, lc, lr: dpo_variants.simpo_loss(c, r, lc, lr, 2.0, 1.0),
        "orpo": lambda c, r, rc, rr, lc, lr: dpo_variants.orpo_loss(c, r, lc, lr, 0.1),
        "beta-dpo": bdpo.pair_loss,
    }


@pytest.mark.parametrize("name", ["simpo", "orpo", "beta-dpo"])
def test_masked_tokens_get_zero_gradient_and_direction(name):
    per_token, mask = _tensors(2)
    per_token = per_token.clone().requires_grad_(True)
    seq = (per_token * mask).sum(1)
    lengths = mask.sum(1)
    ref = seq.detach() + 0.3
    loss, _ = _variant_losses()[name](seq[:N], seq[N:], ref[:N], ref[N:], lengths[:N], lengths[N:])
    loss.backward()
    grad = per_token.grad
    assert (grad[mask == 0] == 0).all()
    assert (grad[:N][mask[:N] == 1] < 0).all()  # descending the loss raises every chosen model token
    assert (grad[N:][mask[N:] == 1] > 0).all()  # and lowers every rejected one


# ----------------------------------------------------------------------------------------------------
# through the CLI on the tiny model (a hand-written pairs file: the random tiny model is never right on the
# calculator, so it could not build pairs itself)

def _sample(group, correct, ids):
    from reference_impls.rollout import Sample
    return Sample(prompt_ids=[1, 2], completion_ids=ids, loss_mask=[1, 0, 1][:len(ids)], old_logprobs=[0.0] * len(ids),
                  reward=float(correct), done=True, group=group, info={"correct": correct},
                  segments=[{"role": "model", "text": "x"}])


@pytest.mark.parametrize("impl", ["calculator-simpo", "calculator-orpo", "calculator-beta-dpo", "calculator-lcpo"])
def test_trains_two_steps_through_the_cli(tmp_path, impl):
    from reference_impls import train

    pairs = [dpo.Pair(str(i), _sample(i, True, [10 + i, 11, 12]), _sample(i, False, [20 + i, 21])) for i in range(4)]
    dpo.save_pairs(tmp_path / "pairs.jsonl", pairs)
    out = tmp_path / "run"
    rc = train.main(["--impl", impl, "--model", "tiny", "--steps", "2", "--out", str(out), "--prompts-per-step", "2",
                     "--group-size", "4", "--max-new-tokens-per-turn", "16", "--max-completion-tokens", "48",
                     "--pairs-file", str(tmp_path / "pairs.jsonl"), "--pairs-per-step", "4", "--lr", "1e-3"])
    assert rc in (0, None)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    assert all(math.isfinite(row["loss"]) for row in rows)
    assert {"rewards/margins", "rewards/accuracies", "logps/chosen"} <= set(rows[0])
    if impl == "calculator-beta-dpo":
        assert rows[0]["kept_fraction"] == pytest.approx(0.75) and rows[0]["beta_batch"] > 0


# ----------------------------------------------------------------------------------------------------
# KTO against TRL 1.16's real KTOTrainer._compute_loss: the stub model returns our fixed per-token
# log-probs (masked), the KL completions' log-probs are returned by the stubbed _compute_kl_logps, and the
# reference log-probs are passed precomputed, so the reference point, the loss and the logged rewards are
# TRL's own code.

class _GatherAccelerator(_Accelerator):
    def gather_for_metrics(self, x):
        return x


def trl_kto_loss(beta, wd, wu, per_token, mask, labels, ref_seq, kl_policy, kl_ref):
    B = per_token.shape[0]
    outputs = SimpleNamespace(log_probs=per_token, entropy=torch.zeros_like(per_token),
                              mean_logits=torch.zeros_like(per_token))
    stub = SimpleNamespace(
        model=SimpleNamespace(training=True), accelerator=_GatherAccelerator(), calculate_KL=True, aux_loss_enabled=False,
        precompute_ref_logps=True, loss_type="kto", beta=beta, desirable_weight=wd, undesirable_weight=wu,
        _metrics={"train": defaultdict(list)}, _total_train_tokens=0, _tp_size=1,
        _compute_kl_logps=lambda model, batch: kl_policy)
    inputs = {"input_ids": torch.zeros(B, L + 1, dtype=torch.long), "attention_mask": torch.ones(B, L + 1, dtype=torch.long),
              "completion_mask": torch.cat([torch.zeros(B, 1, dtype=torch.long), mask.long()], dim=1),
              "label": labels, "ref_logps": ref_seq, "ref_KL_logps": kl_ref}
    loss = trl_kto.KTOTrainer._compute_loss(stub, lambda **kw: outputs, inputs, return_outputs=False)
    return loss, {k: v[0] for k, v in stub._metrics["train"].items()}


def _kto_tensors(seed=3, kl_shift=0.4):
    g = torch.Generator().manual_seed(seed)
    per_token, mask = _tensors(seed)
    seq = per_token.sum(1)
    ref_seq = seq + torch.randn(2 * N, generator=g).double()
    labels = torch.tensor([True, False, True, True, False, False, True, False, False, True])
    kl_policy = -torch.rand(2 * N, generator=g).double() * 20
    kl_ref = kl_policy - kl_shift + 0.5 * torch.randn(2 * N, generator=g).double()
    return per_token, mask, seq, ref_seq, labels, kl_policy, kl_ref


@pytest.mark.parametrize("beta,wd,wu", [(0.1, 1.0, 1.0), (0.5, 1.0, 1.33), (2.0, 0.8, 1.0)])
@pytest.mark.parametrize("kl_shift", [0.4, -5.0])  # a positive KL estimate, and a negative one clamped to 0
def test_kto_matches_trl(beta, wd, wu, kl_shift):
    per_token, mask, seq, ref_seq, labels, kl_policy, kl_ref = _kto_tensors(kl_shift=kl_shift)
    expected, trl_metrics = trl_kto_loss(beta, wd, wu, per_token, mask, labels, ref_seq, kl_policy, kl_ref)
    z0 = (kl_policy - kl_ref).mean().clamp(min=0)
    assert (float(z0) > 0) == (kl_shift > 0)
    ours, metrics = kto.kto_loss(seq, ref_seq, labels, z0, beta, wd, wu)
    assert abs(float(ours) - float(expected)) < 1e-6, (float(ours), float(expected))
    for key in ("kl", "rewards/chosen", "rewards/rejected", "rewards/margins", "logps/chosen", "logps/rejected"):
        assert abs(metrics[key] - trl_metrics[key]) < 1e-6, key


def test_kto_by_hand():
    # desirable: r = -1 - (-2) = 1; undesirable: r = -3 - (-3.5) = 0.5; z_0 = 0.2, beta = 1, lambda_D = 1,
    # lambda_U = 2: L = mean(1 - sigmoid(1 - 0.2), 2 * (1 - sigmoid(0.2 - 0.5)))
    loss, m = kto.kto_loss(torch.tensor([-1.0, -3.0]), torch.tensor([-2.0, -3.5]), torch.tensor([True, False]),
                           0.2, beta=1.0, desirable_weight=1.0, undesirable_weight=2.0)
    sig = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
    assert float(loss) == pytest.approx(((1 - sig(0.8)) + 2 * (1 - sig(-0.3))) / 2, abs=1e-6)
    assert m["accuracy"] == pytest.approx(0.5)  # the desirable one is above z_0, the undesirable one too


def test_kto_reference_point_pairs_each_prompt_with_another_completion():
    from reference_impls.rollout import Sample
    samples = [Sample(prompt_ids=[i], completion_ids=[10 * i, 10 * i + 1], loss_mask=[1, i % 2]) for i in range(3)]
    swapped = kto.mismatched(samples)
    assert [(s.prompt_ids, s.completion_ids, s.loss_mask) for s in swapped] == \
           [([0], [10, 11], [1, 1]), ([1], [20, 21], [1, 0]), ([2], [0, 1], [1, 0])]


def test_kto_masked_tokens_get_zero_gradient_and_direction():
    per_token, mask = _tensors(4)
    per_token = per_token.clone().requires_grad_(True)
    seq = (per_token * mask).sum(1)
    labels = torch.arange(2 * N) % 2 == 0
    loss, _ = kto.kto_loss(seq, seq.detach() + 0.1, labels, 0.3, beta=0.5)
    loss.backward()
    grad = per_token.grad
    assert (grad[mask == 0] == 0).all()
    assert (grad[labels][mask[labels] == 1] < 0).all() and (grad[~labels][mask[~labels] == 1] > 0).all()


def test_kto_trains_two_steps_through_the_cli(tmp_path):
    """The tiny random model is never right on the calculator, so every episode is undesirable: KTO, unlike
    DPO, still has data (it builds its own here, from 2 prompts)."""
    from reference_impls import train

    out = tmp_path / "run"
    rc = train.main(["--impl", "calculator-kto", "--model", "tiny", "--steps", "2", "--out", str(out),
                     "--prompts-per-step", "2", "--group-size", "4", "--max-new-tokens-per-turn", "16",
                     "--max-completion-tokens", "48", "--sample-prompts", "2", "--samples-per-step", "4"])
    assert rc in (0, None)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2] and all(math.isfinite(row["loss"]) for row in rows)
    assert (out / "samples.jsonl").exists() and {"kl", "rewards/rejected", "desirable_fraction"} <= set(rows[0])
    # the labelled episodes have their own file: the trainer's per-step transcripts (samples.jsonl) never mix in,
    # so a resume reloads exactly the episodes it trained on
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert "stats" in episodes[0] and all("uid" in e and "sample" in e for e in episodes[1:])
    assert train.main(["--resume", str(out), "--steps", "3"]) in (0, None)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3]


# ----------------------------------------------------------------------------------------------------
# Step-DPO: steps are calculator turns, checked against the problem's reference solution

PROBLEM = Problem("What is (3+5)*9?", Fraction(72), ("3+5", "8*9"), "test", 0, 2, "train", "p0")


def test_model_turns_are_the_runs_of_model_tokens():
    assert step_dpo.model_turns([1, 1, 0, 0, 1, 0, 1, 1]) == [(0, 2), (4, 5), (6, 8)]
    assert step_dpo.model_turns([]) == [] and step_dpo.model_turns([0, 1]) == [(1, 2)]


@pytest.mark.parametrize("text,correct", [
    ("<calc>3+5</calc>", True), ("<calc>5+3</calc>", True), ("<calc>8*9</calc>", True),  # any order of the values
    ("<calc>3*5</calc>", False), ("<calc>72</calc>", False),  # a value the solution never needs; a bare number
    ("<calc>1/0</calc>", False), ("<answer>72</answer>", True), ("<answer>72.0</answer>", True),
    ("<answer>70</answer>", False), ("I think it is 72", False)])
def test_step_is_checked_against_the_reference_solution(text, correct):
    assert STEPS.is_correct(PROBLEM, text) == correct


def test_first_wrong_step_and_the_reference_next_step():
    texts = ["<calc>3+5</calc>", "<calc>8+9</calc>", "<answer>17</answer>"]
    assert step_dpo.first_wrong_step(texts, PROBLEM, STEPS) == 1
    assert step_dpo.first_wrong_step(texts[:1], PROBLEM, STEPS) is None
    assert STEPS.next_step(PROBLEM, []) == "<calc>3+5</calc>"
    assert STEPS.next_step(PROBLEM, texts[:1]) == "<calc>8*9</calc>"
    assert STEPS.next_step(PROBLEM, ["<calc>3+5</calc>", "<calc>8*9</calc>"]) == "<answer>72</answer>"


def test_step_pairs_share_a_correct_prefix_and_differ_at_the_first_wrong_step(tiny):
    """A policy nudged towards a few calculator replies (scripted_policies.py) writes some correct and some
    wrong steps; every pair must prefer a correct step to the episode's first wrong one, after the same
    prefix, and some chosen steps must be the model's own (sampled from the prefix), not the reference's."""
    from reference_impls.envs import get_env
    from reference_impls.rollout import RolloutConfig
    from scripted_policies import nudged_tiny

    model, tok = tiny
    policy = nudged_tiny(model, tok, ("<calc>3+5</calc>", "<calc>8+9</calc>", "<calc>8*9</calc>", "<answer>72</answer>"))
    algo = step_dpo.StepDPO.__new__(step_dpo.StepDPO)
    algo.cfg = step_dpo.Config(step_samples=4)
    ctx = SimpleNamespace(policy=policy, tokenizer=tok, task=get_env("calculator"))
    pairs, stats = algo.build_pairs(ctx, [PROBLEM] * 2, RolloutConfig(group_size=8, max_new_tokens_per_turn=16,
                                                                      max_completion_tokens=64), seed=0)
    assert pairs and stats["chosen_sampled"] > 0 and stats["chosen_reference"] > 0
    with_prefix = 0
    for p in pairs:
        assert p.chosen.prompt_ids == p.rejected.prompt_ids
        assert STEPS.is_correct(PROBLEM, tok.decode(p.chosen.completion_ids, skip_special_tokens=True))
        assert not STEPS.is_correct(PROBLEM, tok.decode(p.rejected.completion_ids, skip_special_tokens=True))
        assert p.chosen.loss_mask == [1] * len(p.chosen.completion_ids)
        with_prefix += "<result>" in tok.decode(p.chosen.prompt_ids).split("assistant")[-1]
    assert with_prefix > 0  # some pairs sit after a correct tool call and its result


def test_step_dpo_loss_is_dpo_on_the_step_by_hand():
    # step log-likelihoods: chosen -2 (ref -3), rejected -1 (ref -1.5); beta 0.5:
    # h = (-2 + 3) - (-1 + 1.5) = 0.5, L = -log sigmoid(0.25) = log(1 + e^-0.25)
    algo = step_dpo.StepDPO.__new__(step_dpo.StepDPO)
    algo.cfg = step_dpo.Config(beta=0.5)
    loss, _ = algo.pair_loss(torch.tensor([-2.0]), torch.tensor([-1.0]), torch.tensor([-3.0]), torch.tensor([-1.5]),
                             torch.ones(1), torch.ones(1))
    assert float(loss) == pytest.approx(math.log(1 + math.exp(-0.25)), abs=1e-6)


def test_step_dpo_trains_two_steps_through_the_cli(tmp_path):
    """The tiny random model never writes a correct step, so its chosen steps come from the reference solution."""
    from reference_impls import train

    out = tmp_path / "run"
    rc = train.main(["--impl", "calculator-step-dpo", "--model", "tiny", "--steps", "2", "--out", str(out),
                     "--prompts-per-step", "2", "--group-size", "4", "--max-new-tokens-per-turn", "16",
                     "--max-completion-tokens", "48", "--pair-prompts", "2", "--pairs-per-step", "4",
                     "--step-samples", "1"])
    assert rc in (0, None)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2] and all(math.isfinite(row["loss"]) for row in rows)
    stats = json.loads((out / "pairs.jsonl").read_text().splitlines()[0])["stats"]
    assert stats["pairs"] > 0 and stats["chosen_reference"] == stats["pairs"]


def test_step_dpo_needs_the_calculator():
    from reference_impls import train
    from reference_impls.options import ConfigError

    with pytest.raises(ConfigError, match="calculator"):
        train.parse(["--algo", "step-dpo", "--env", "search", "--out", "/tmp/unused"])


def test_beta_dpo_resume_continues_exactly(tmp_path):
    """The running threshold and spread are saved with the checkpoint, and the filter's draw is seeded by
    (seed, step): a run stopped after 2 steps and resumed gives the same step 3 as an uninterrupted run."""
    from reference_impls import train

    pairs = [dpo.Pair(str(i), _sample(i, True, [10 + i, 11, 12]), _sample(i, False, [20 + i, 21])) for i in range(6)]
    dpo.save_pairs(tmp_path / "pairs.jsonl", pairs)
    common = ["--impl", "calculator-beta-dpo", "--model", "tiny", "--pairs-file", str(tmp_path / "pairs.jsonl"),
              "--pairs-per-step", "4", "--lr", "1e-2", "--checkpoint-every", "1", "--micro-batch-size", "4"]
    assert train.main([*common, "--steps", "3", "--out", str(tmp_path / "straight")]) in (0, None)
    assert train.main([*common, "--steps", "2", "--out", str(tmp_path / "resumed")]) in (0, None)
    assert train.main(["--resume", str(tmp_path / "resumed"), "--steps", "3"]) in (0, None)
    rows = {name: [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]
            for name in ("straight", "resumed")}
    assert [r["step"] for r in rows["resumed"]] == [1, 2, 3]
    a, b = rows["straight"][2], rows["resumed"][2]
    assert a["margin_threshold"] != rows["straight"][0]["margin_threshold"]  # the state did move
    for key in ("loss", "beta_batch", "margin_threshold"):
        assert a[key] == pytest.approx(b[key], abs=1e-7), key

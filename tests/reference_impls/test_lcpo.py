"""LCPO (issue 18, lcpo.py): the loss by hand and against TRL 1.16, zero gradient on masked tokens, the
length pairs of the paper's recipe, a clear error when no pair can be built, and learning on a toy task
whose correct episodes differ only in length.

TRL 1.16 has no LCPO. None of DPOTrainer's loss_type options is the same loss: every one of them compares
log-ratios against a reference model, and LCPO has none. The term LCPO keeps is ORPO's odds-ratio
Bradley-Terry term, so the check runs TRL's ``ORPOTrainer.odds_ratio_loss`` (with its beta = 1, and without
ORPO's NLL term, which TRL adds outside that function) on identical tensors. The CLI run of LCPO sits with
the other DPO-family variants in test_dpo_family.py (test_trains_two_steps_through_the_cli)."""
import json
import math
import time
from types import SimpleNamespace

import pytest
import torch

from reference_impls import train
from reference_impls.algorithms.dpo import lcpo
from reference_impls.rollout import Sample

N, L = 5, 9


def _tensors(seed=0):
    g = torch.Generator().manual_seed(seed)
    mask = (torch.rand(2 * N, L, generator=g) > 0.3).double()
    mask[:, 0] = 1.0
    per_token = (-torch.rand(2 * N, L, generator=g) * 2).double() * mask
    return per_token, mask


def test_lcpo_by_hand():
    # length-normalised likelihoods p(y_w) = 0.4 (2 tokens), p(y_l) = 0.2 (3 tokens):
    # r_w = log(0.4/0.6) = -0.405465, r_l = log(0.2/0.8) = -1.386294, margin 0.980829
    c, r = torch.tensor([2 * math.log(0.4)]), torch.tensor([3 * math.log(0.2)])
    lc, lr = torch.tensor([2.0]), torch.tensor([3.0])
    loss, m = lcpo.lcpo_loss(c, r, lc, lr)
    margin = math.log(0.4 / 0.6) - math.log(0.2 / 0.8)
    assert m["rewards/chosen"] == pytest.approx(math.log(0.4 / 0.6), abs=1e-6)
    assert m["rewards/margins"] == pytest.approx(margin, abs=1e-6)
    assert float(loss) == pytest.approx(math.log(1 + math.exp(-margin)), abs=1e-6)  # 0.318536
    assert m["length/chosen"] == 2.0 and m["length/rejected"] == 3.0
    # lambda scales the margin inside the sigmoid: lambda = 2 gives log(1 + e^(-1.961658)) = 0.131605
    loss2, _ = lcpo.lcpo_loss(c, r, lc, lr, lam=2.0)
    assert float(loss2) == pytest.approx(math.log(1 + math.exp(-2 * margin)), abs=1e-6)
    # no NLL term: unlike ORPO, the loss is not -log p(y_w) + ...
    from reference_impls.algorithms.dpo import dpo_variants
    orpo, _ = dpo_variants.orpo_loss(c, r, lc, lr, lam=1.0)
    assert float(orpo) - float(loss) == pytest.approx(-math.log(0.4), abs=1e-6)


def test_lcpo_matches_trl_odds_ratio_term():
    import trl.experimental.orpo.orpo_trainer as trl_orpo  # TRL is pinned: a moved module fails, it does not skip

    per_token, mask = _tensors(1)
    seq, lengths = per_token.sum(1), mask.sum(1)
    c, r, lc, lr = seq[:N], seq[N:], lengths[:N], lengths[N:]
    stub = SimpleNamespace(beta=1.0, accelerator=SimpleNamespace(device=torch.device("cpu")))
    # TRL takes the per-token average log-probs (average_log_prob=True for ORPO); its losses are
    # beta * log sigmoid(log odds ratio), which TRL's total subtracts
    losses, chosen_rewards, rejected_rewards, mean_ratio, mean_log_odds = \
        trl_orpo.ORPOTrainer.odds_ratio_loss(stub, c / lc, r / lr)
    ours, metrics = lcpo.lcpo_loss(c, r, lc, lr, lam=1.0)
    assert abs(float(ours) - float(-losses.mean())) < 1e-6  # TRL works in float32
    assert metrics["rewards/margins"] == pytest.approx(float(mean_log_odds), abs=1e-6)


def test_masked_tokens_get_zero_gradient_and_direction():
    per_token, mask = _tensors(2)
    per_token = per_token.clone().requires_grad_(True)
    seq = (per_token * mask).sum(1)
    lengths = mask.sum(1)
    loss, _ = lcpo.lcpo_loss(seq[:N], seq[N:], lengths[:N], lengths[N:], lam=1.5)
    loss.backward()
    grad = per_token.grad
    assert (grad[mask == 0] == 0).all()
    assert (grad[:N][mask[:N] == 1] < 0).all()  # descending the loss raises every chosen model token
    assert (grad[N:][mask[N:] == 1] > 0).all()  # and lowers every rejected one


# ----------------------------------------------------------------------------------------------------
# the pairs: shortest vs longest, by model tokens, on the problems the split keeps

def _s(group, correct, mask):
    return Sample(prompt_ids=[1], completion_ids=list(range(len(mask))), loss_mask=mask, group=group,
                  info={"correct": correct})


def _groups():
    return [
        # group 0: all correct (easy); model tokens 3, 1 (+2 tool tokens, which do not count), 4
        _s(0, True, [1, 1, 1]), _s(0, True, [1, 0, 0]), _s(0, True, [1, 1, 1, 1]),
        # group 1: one wrong (medium); correct ones have 2 and 5 model tokens, the wrong one 1
        _s(1, True, [1, 1]), _s(1, False, [1]), _s(1, True, [1, 1, 1, 1, 1]),
        # group 2: all correct but all of length 2: no pair
        _s(2, True, [1, 1]), _s(2, True, [0, 1, 1]),
        # group 3: all wrong (difficult); lengths 1 and 3
        _s(3, False, [1]), _s(3, False, [1, 1, 1]),
    ]


def test_length_pairs_follow_the_split():
    samples, uids = _groups(), ["a", "b", "c", "d"]
    easy = lcpo.length_pairs(samples, uids, "easy")
    assert [(p.uid, lcpo.length(p.chosen), lcpo.length(p.rejected)) for p in easy] == [("a", 1, 4)]
    solved = lcpo.length_pairs(samples, uids, "solved")
    assert [(p.uid, lcpo.length(p.chosen), lcpo.length(p.rejected)) for p in solved] == [("a", 1, 4), ("b", 2, 5)]
    assert all(p.chosen.info["correct"] and p.rejected.info["correct"] for p in solved)
    unfiltered = lcpo.length_pairs(samples, uids, "unfiltered")
    assert [(p.uid, lcpo.length(p.chosen), lcpo.length(p.rejected)) for p in unfiltered] == \
           [("a", 1, 4), ("b", 1, 5), ("d", 1, 3)]
    # the paper's ablations: medium (some correct) and difficult (none correct) problems, shortest vs
    # longest whatever their correctness
    medium = lcpo.length_pairs(samples, uids, "medium")
    assert [(p.uid, lcpo.length(p.chosen), lcpo.length(p.rejected)) for p in medium] == [("b", 1, 5)]
    assert not medium[0].chosen.info["correct"] and medium[0].rejected.info["correct"]
    difficult = lcpo.length_pairs(samples, uids, "difficult")
    assert [(p.uid, lcpo.length(p.chosen), lcpo.length(p.rejected)) for p in difficult] == [("d", 1, 3)]
    with pytest.raises(ValueError, match="split"):
        lcpo.length_pairs(samples, uids, "hard")


def test_no_pairs_is_a_clear_error(tmp_path):
    """The tiny random model never solves a calculator problem, so the easy split keeps nothing."""
    with pytest.raises(RuntimeError, match="different lengths"):
        train.main(["--algo", "lcpo", "--env", "calculator", "--model", "tiny", "--steps", "1",
                    "--out", str(tmp_path / "run"), "--group-size", "2", "--max-new-tokens-per-turn", "4",
                    "--max-completion-tokens", "8", "--pair-prompts", "2"])


# ----------------------------------------------------------------------------------------------------
# learning: every episode is correct (toy_env.StopHalfEnv), and LCPO must make them shorter

def _mean_length(model, tok, task, n=64) -> float:
    from reference_impls.rollout import RolloutConfig, rollout
    torch.manual_seed(321)
    samples, _ = rollout(model, tok, task, task.problems("train", 4, 0),
                         RolloutConfig(group_size=n // 4, max_new_tokens_per_turn=1, max_completion_tokens=16))
    assert all(s.info.get("correct") for s in samples)
    return sum(lcpo.length(s) for s in samples) / len(samples)


def test_lcpo_learns_to_stop_early(tmp_path, fresh_tiny):
    """The random tiny model stops after ~1.9 one-token turns (of at most 4); a dozen LCPO steps on its own
    shortest-vs-longest pairs must raise the implicit-reward margin and shorten its sampled episodes."""
    from reference_impls.run_config import TrainConfig
    from reference_impls.trainer import Trainer
    from toy_env import make_length_task

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # see test_learning.py: oversubscribed threads on a shared machine are much slower
    try:
        model, tok = fresh_tiny()
        task = make_length_task(model, tok)
        cfg = TrainConfig(algo="lcpo", env="stop_half", model="tiny", out=str(tmp_path), lr=3e-2, group_size=8,
                          max_new_tokens_per_turn=1, max_completion_tokens=16, micro_batch_size=32, train_pool=8,
                          algo_config={"pair_prompts": 32, "pairs_per_step": 16})
        trainer = Trainer(cfg, task=task, model=model, tokenizer=tok)
        before = _mean_length(model, tok, task)
        trainer.t_start = time.time()
        rows = [trainer.train_step()[0] for _ in range(12)]
        after = _mean_length(model, tok, task)
    finally:
        torch.set_num_threads(threads)
    stats = json.loads((tmp_path / "pairs.jsonl").read_text().splitlines()[0])["stats"]
    assert stats["pairs"] >= 16 and stats["sample_accuracy"] == 1.0
    assert stats["chosen_length"] < stats["rejected_length"]
    margins = [r["rewards/margins"] for r in rows]
    assert margins[-1] > margins[0] + 2.0, margins
    assert rows[-1]["rewards/accuracies"] == 1.0
    gap = [r["logps/chosen"] - r["logps/rejected"] for r in rows]  # per-token log-likelihoods
    assert gap[-1] > gap[0] + 1.0, gap
    # the policy's own episodes get shorter (measured 1.95 -> 1.28 model tokens)
    assert before > 1.7 and after < before - 0.4, (before, after)

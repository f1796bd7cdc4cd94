"""The DPO-family variants learn: the tiny random model on the toy half-vocabulary task (toy_env.py), where a
reply is correct when its first token lies in a fixed half of the vocabulary. The starting model builds the
data itself (correct vs incorrect one-token replies), and a dozen offline steps must separate the
preferred from the dispreferred replies: the implicit-reward margin rises and the chosen replies gain
likelihood relative to the rejected ones."""
import time

import pytest
import torch

from reference_impls.run_config import TrainConfig
from reference_impls.trainer import Trainer
from toy_env import make_task

CASES = {
    "simpo": {"pair_prompts": 16, "pairs_per_step": 8},
    "orpo": {"pair_prompts": 16, "pairs_per_step": 8},
    "beta-dpo": {"pair_prompts": 16, "pairs_per_step": 8},
    "kto": {"sample_prompts": 16, "samples_per_step": 16},
}


@pytest.mark.parametrize("algo", list(CASES))
def test_preferences_are_learned(tmp_path, algo, fresh_tiny):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # see test_learning.py: oversubscribed threads on a shared machine are much slower
    try:
        rows = _train(tmp_path, algo, CASES[algo], *fresh_tiny())
    finally:
        torch.set_num_threads(threads)
    first, last = rows[0], rows[-1]
    gap = lambda row: row["logps/chosen"] - row["logps/rejected"]  # noqa: E731
    assert last["rewards/margins"] > first["rewards/margins"] + 0.1, [r["rewards/margins"] for r in rows]
    assert gap(last) > gap(first) + 1.0, [gap(r) for r in rows]
    if algo != "kto":
        assert last["rewards/accuracies"] == 1.0
    else:
        # KTO has no pairs: the undesirable episodes' implicit reward is pushed below the reference point
        assert last["rewards/rejected"] < min(-0.3, first["rewards/rejected"] - 0.3)


def test_orpo_raises_the_sampled_reward(tmp_path, fresh_tiny):
    """ORPO's SFT term moves the whole policy towards the correct replies (the pure preference losses above
    mostly reorder the replies seen in the pairs within a dozen steps): the sampled reward rises from ~0.5."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _, before, after = _train(tmp_path, "orpo", CASES["orpo"], *fresh_tiny(), with_reward=True)
    finally:
        torch.set_num_threads(threads)
    assert before < 0.6 and after > before + 0.25, (before, after)


def _sampled_reward(model, tok, task) -> float:
    from reference_impls.rollout import RolloutConfig, rollout
    torch.manual_seed(123)
    samples, _ = rollout(model, tok, task, task.problems("train", 4, 0),
                         RolloutConfig(group_size=64, max_new_tokens_per_turn=1, max_completion_tokens=1))
    return sum(s.reward for s in samples) / len(samples)


def _train(tmp_path, algo, algo_config, model, tok, steps=12, with_reward=False):
    cfg = TrainConfig(algo=algo, env="half_vocab", model="tiny", out=str(tmp_path), lr=1e-2, group_size=4,
                      max_new_tokens_per_turn=1, max_completion_tokens=1, micro_batch_size=32, train_pool=8,
                      algo_config=algo_config)
    task = make_task(model, tok)
    trainer = Trainer(cfg, task=task, model=model, tokenizer=tok)
    before = _sampled_reward(model, tok, task) if with_reward else None
    trainer.t_start = time.time()
    rows = [trainer.train_step()[0] for _ in range(steps)]
    if with_reward:
        return rows, before, _sampled_reward(model, tok, task)
    return rows

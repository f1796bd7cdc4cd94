"""GMPO and Pass@k Training learn (and so do the draw-hook, entropy-scaled and KL-reset variants): the tiny
random model on the half-vocabulary reward (toy_env.py), as test_learning.py does for GRPO. KTAE too."""
import time

import pytest
import torch

from reference_impls.run_config import TrainConfig
from reference_impls.trainer import Trainer
from toy_env import make_task


@pytest.mark.parametrize("algo,algo_config", [
    ("gmpo", {}), ("pass-at-k", {"pass_at_k": 2}), ("pass-at-k", {"pass_at_k": 4}), ("srpo", {}), ("greso", {}),
    ("edge-grpo", {"gec_prob": 0.0}),  # corrections would count as reward here; this checks the entropy scaling
    ("prorl", {"beta": 0.01, "prorl_reset_every": 5}), ("ktae", {})])
def test_reward_rises_within_60s(tmp_path, algo, algo_config, fresh_tiny):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a shared 2-core machine: oversubscribed threads make tiny steps far slower
    try:
        model, tok = fresh_tiny()
        cfg = TrainConfig(algo=algo, env="half_vocab", model="tiny", out=str(tmp_path), lr=3e-2, prompts_per_step=4,
                          group_size=8, max_new_tokens_per_turn=1, max_completion_tokens=1, micro_batch_size=32,
                          train_pool=8, algo_config=algo_config)
        trainer = Trainer(cfg, task=make_task(model, tok), model=model, tokenizer=tok)
        trainer.t_start = time.time()
        rewards = []
        while len(rewards) < 40:  # a step budget, not a wall-clock one: the outcome must not depend on machine load
            metrics, _ = trainer.train_step()
            rewards.append(metrics["reward_mean"])
            if len(rewards) >= 8 and sum(rewards[-3:]) / 3 >= 0.9:
                break
    finally:
        torch.set_num_threads(threads)
    first, last = sum(rewards[:3]) / 3, sum(rewards[-3:]) / 3
    assert last >= 0.85 and last > first + 0.2, rewards

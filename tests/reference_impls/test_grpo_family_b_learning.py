"""CHORD and LUFFY learn: the tiny random model on the half-vocabulary task (toy_env.py), with a
demonstration that writes one token of the rewarded half (what their expert data would be)."""
import dataclasses
import time

import pytest
import torch

from reference_impls.run_config import TrainConfig
from reference_impls.trainer import Trainer
from toy_env import make_task


def _task_with_demonstration(model, tok):
    task = make_task(model, tok)
    good = task.build(task.list_problems("train", 1, 0, None)[0], None).good_ids
    for token_id in sorted(good):  # a rewarded token whose text tokenises back to itself
        text = tok.decode([token_id])
        if text.strip() and tok(text, add_special_tokens=False)["input_ids"] == [token_id]:
            return dataclasses.replace(task, demonstration=lambda p, text=text: [("model", text)])
    raise AssertionError("no round-tripping rewarded token")


@pytest.mark.parametrize("algo,algo_config", [
    ("chord", {"mu_peak": 0.5, "mu_valley": 0.1, "mu_decay_steps": 30}),
    ("chord", {"mu_peak": 0.5, "mu_valley": 0.5, "token_weighting": "phi"}),
    ("luffy", {"loss_type": "dapo"}),
])
def test_reward_rises_within_60s(tmp_path, algo, algo_config, fresh_tiny):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # shared CPU: oversubscribed intra-op threads make tiny steps far slower
    try:
        model, tok = fresh_tiny()
        cfg = TrainConfig(algo=algo, env="half_vocab", model="tiny", out=str(tmp_path), lr=3e-2, prompts_per_step=4,
                          group_size=8, max_new_tokens_per_turn=1, max_completion_tokens=1, micro_batch_size=32,
                          train_pool=8, algo_config=algo_config)
        trainer = Trainer(cfg, task=_task_with_demonstration(model, tok), model=model, tokenizer=tok)
        trainer.t_start = time.time()
        rewards = []
        while len(rewards) < 40:  # a step budget, not a wall-clock one: the outcome must not depend on machine load
            metrics, samples = trainer.train_step()
            # LUFFY's groups hold one demonstration (reward 1): measure the policy's own rollouts only
            own = [s.reward for s in samples if not s.info.get("off_policy")]
            rewards.append(sum(own) / len(own))
            if len(rewards) >= 8 and sum(rewards[-3:]) / 3 >= 0.9:
                break
        first, last = sum(rewards[:3]) / 3, sum(rewards[-3:]) / 3
        assert last >= 0.85 and last > first + 0.2, rewards
    finally:
        torch.set_num_threads(threads)


def _one_token_task(tok, word=" seven"):
    """Reward 1 only when the reply's first token is ``word``'s: 1 in ~49k for the random policy, so GRPO's
    own samples never see a reward; the demonstration writes exactly that token."""
    from reference_impls.envs import EnvSpec, NoOptions, StepResult
    from toy_env import TOOL, Prompt

    (target,) = tok(word, add_special_tokens=False)["input_ids"]

    class OneTokenEnv:
        tool, stop_strings = TOOL, ("</answer>",)

        def __init__(self, problem):
            self.problem = problem

        def reset(self):
            return [{"role": "user", "content": self.problem.question}]

        def step(self, text):
            ids = tok(text, add_special_tokens=False)["input_ids"]
            ok = bool(ids) and ids[0] == target
            return StepResult(None, True, float(ok), {"correct": ok})

    return EnvSpec("one_token", NoOptions, lambda split, n, seed, config: [Prompt("Say seven.")] * n,
                   lambda p, config: OneTokenEnv(p), lambda p: [("model", word)])


def _rewards(tmp_path, algo, model, tok, steps=20):
    cfg = TrainConfig(algo=algo, env="one_token", model="tiny", out=str(tmp_path / algo), lr=3e-2, prompts_per_step=4,
                      group_size=8, max_new_tokens_per_turn=1, max_completion_tokens=1, micro_batch_size=32,
                      train_pool=8, algo_config={})
    trainer = Trainer(cfg, task=_one_token_task(tok), model=model, tokenizer=tok)
    trainer.t_start = time.time()
    return [trainer.train_step()[0]["reward_mean"] for _ in range(steps)]


def test_chord_learns_what_grpo_never_samples(tmp_path, fresh_tiny):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert max(_rewards(tmp_path, "grpo", *fresh_tiny(), steps=10)) == 0.0  # the control: no reward, no gradient
        rewards = _rewards(tmp_path, "chord", *fresh_tiny())
        assert sum(rewards[-3:]) / 3 >= 0.85, rewards  # the SFT term alone teaches the rewarded token
    finally:
        torch.set_num_threads(threads)

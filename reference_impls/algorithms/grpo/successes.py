"""Small helpers the GRPO variants share."""
from __future__ import annotations

import torch


def successes(batch) -> torch.Tensor:
    """(N,) bool: which episodes solved their problem (the env's ``info["correct"]``; a reward of at least
    1 where an env records no correctness)."""
    return torch.tensor([bool(s.info["correct"]) if "correct" in s.info else s.reward >= 1.0 for s in batch.samples])


def tool_step_accuracy(sample) -> float:
    """Fraction of an episode's tool calls that were correct steps (``info["tool_steps"]``, recorded by the
    calculator: a call is correct when its value is an intermediate value of a correct solution); 0 without
    calls."""
    steps = sample.info.get("tool_steps") or []
    return sum(bool(s.get("correct")) for s in steps) / len(steps) if steps else 0.0


def reshaped_advantages(ctx, batch, rewards: torch.Tensor, cfg):
    """GRPO's advantages and keep mask (``grpo.prepare_batch``) computed on ``rewards`` instead of the env's."""
    from . import grpo

    advantages, keep, _ = grpo.prepare_batch(rewards, batch.lengths, batch.group_size, cfg,
                                             ctx.train.max_completion_tokens)
    return advantages, keep

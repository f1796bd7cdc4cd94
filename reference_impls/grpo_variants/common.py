"""Small helpers the GRPO variants share."""
from __future__ import annotations

import torch


def successes(batch) -> torch.Tensor:
    """(N,) bool: which episodes solved their problem (the env's ``info["correct"]``; a reward of at least
    1 where an env records no correctness)."""
    return torch.tensor([bool(s.info["correct"]) if "correct" in s.info else s.reward >= 1.0 for s in batch.samples])

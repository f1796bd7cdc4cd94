r"""A user's algorithm, kept outside the package: the trainer loads it with ``--algo-module
tests/reference_impls/user_algo.py --algo mean-baseline``. REINFORCE with the group's mean reward as the
baseline, on the shared policy-gradient update (one pass, so the ratio is 1)::

    A_i = r_i - (1/G) sum_j r_j,        L = -(1/B) sum_i A_i sum_t m_{i,t} log pi_theta(o_{i,t})

It has an option of its own (``advantage_scale``), typed and validated like a built-in algorithm's.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch

from reference_impls.algorithm import Algorithm, Context, RolloutBatch
from reference_impls.options import Options, option
from reference_impls.policy_gradient import policy_gradient_update


@dataclass
class Config(Options):
    advantage_scale: float = option(1.0, "Multiplies every advantage.", low=0.0, high=10.0)


def mean_baseline_loss(logps, old_logps, advantages, mask, cfg: Config, ref_logps=None, max_completion_length=None,
                       seq_normalizer=None, token_normalizer=None):
    ratio = torch.exp((logps - old_logps) * mask)
    per_seq = (-(ratio * advantages.unsqueeze(1)) * mask).sum(-1)
    return per_seq.sum() / (seq_normalizer or logps.shape[0]), {"kl": 0.0, "clip_frac": 0.0}


class MeanBaseline(Algorithm):
    name = "mean-baseline"
    Config = Config
    min_group_size = 2

    @classmethod
    def objective(cls, cfg: Config) -> str:
        return r"\mathcal{L}=-\frac{1}{B}\sum_i \hat A_i\sum_t m_{i,t}\log\pi_\theta(o_{i,t}),\ \hat A_i=r_i-\bar r"

    def update(self, ctx: Context, batch: RolloutBatch):
        grouped = batch.rewards.view(-1, batch.group_size)
        advantages = (self.cfg.advantage_scale * (grouped - grouped.mean(dim=1, keepdim=True))).reshape(-1)
        keep = torch.ones_like(advantages, dtype=torch.bool)
        return policy_gradient_update(ctx, batch, advantages, keep, partial(mean_baseline_loss, cfg=self.cfg), 1)

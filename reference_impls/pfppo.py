r"""PF-PPO: PPO trained only on the samples whose rewards are reliable ("Policy Filtration for RLHF to
Mitigate Noise in Reward Models", Zhang et al. 2024, arXiv 2409.06957).

The paper's observation: a reward model is more trustworthy at the extremes of the reward range than in
the middle, so a policy update from every sample carries much reward noise. PF-PPO samples N responses per
prompt, keeps a subset chosen by reward rank, and runs ordinary PPO (critic, GAE, clipped losses: see
``ppo.py``) on that subset only. The filtered set is what the paper calls the filtered policy's samples;
it picks the filter whose kept rewards best predict the true score (R^2 between reward and actual score).

Filters over one prompt's N = G samples with rewards r_1..r_N (``policy_filter``; the strategies of the
paper's method section; equation numbers not verified: paper text not available here)::

    best_worst   keep argmax_i r_i and argmin_i r_i                     (BW: the paper's strongest in code)
    best_random  keep argmax_i r_i and one other sample drawn uniformly (BR)
    best_of_n    keep argmax_i r_i only                                 (BoN)

Ties: the best is the first index of the maximum, the worst the last index of the minimum, so a group
whose rewards are all equal still keeps two different samples under ``best_worst``.

Here the reward is the environment's exact verdict, not a learned reward model, so there is no reward
noise to filter; what the filter still changes is which samples the update sees (a contrastive pair per
prompt instead of all N), and the switch lets the two be compared on the same task.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .algorithm import Context, RolloutBatch
from .options import option
from .ppo import PPO
from .ppo import Config as PPOConfig


@dataclass
class Config(PPOConfig):
    """PPO's switches plus the sample filter."""

    policy_filter: str = option("best_worst", "Which samples of each prompt PPO trains on: best_worst (highest and "
                                "lowest reward), best_random (highest and one random other) or best_of_n (highest).",
                                choices=("best_worst", "best_random", "best_of_n"))


def filter_indices(rewards: torch.Tensor, group_size: int, rule: str, generator=None) -> list[int]:
    """Row indices kept by the filter, group by group, in increasing order within each group."""
    grouped = rewards.view(-1, group_size)
    kept = []
    for g, row in enumerate(grouped):
        best = int(torch.argmax(row))  # first index of the maximum
        chosen = {best}
        if rule == "best_worst" and group_size > 1:
            worst = group_size - 1 - int(torch.argmin(row.flip(0)))  # last index of the minimum
            chosen.add(worst if worst != best else (best + 1) % group_size)
        elif rule == "best_random" and group_size > 1:
            other = int(torch.randint(0, group_size - 1, (1,), generator=generator))
            chosen.add(other if other < best else other + 1)  # uniform over the G - 1 others
        elif rule not in ("best_worst", "best_random", "best_of_n"):
            raise ValueError(f"policy_filter must be best_worst, best_random or best_of_n, not {rule!r}")
        kept += [g * group_size + i for i in sorted(chosen)]
    return kept


def subset(batch: RolloutBatch, rows: list[int]) -> RolloutBatch:
    """The batch restricted to ``rows`` (tensors keep their width: completions share a common start)."""
    index = torch.tensor(rows, dtype=torch.long)
    full = {k: (v[index.to(v.device)] if torch.is_tensor(v) else v) for k, v in batch.full.items()}
    ref = batch.ref_logps[index.to(batch.ref_logps.device)] if batch.ref_logps is not None else None
    return RolloutBatch(samples=[batch.samples[i] for i in rows], rewards=batch.rewards[index],
                        lengths=batch.lengths[index], full=full, ref_logps=ref, group_size=1)


class PFPPO(PPO):
    """PPO on the filtered samples (module docstring)."""

    Config = Config
    min_group_size = 2

    def update(self, ctx: Context, batch: RolloutBatch) -> dict:
        rows = filter_indices(batch.rewards, batch.group_size, self.cfg.policy_filter)
        metrics = super().update(ctx, subset(batch, rows))
        kept = batch.rewards[rows]
        metrics.update(groups_kept_frac=len(rows) / max(len(batch.samples), 1),
                       filtered_reward_mean=float(kept.mean()) if len(rows) else 0.0)
        return metrics

r"""Pass@k Training (Chen et al. 2025, arXiv 2508.10751), with the paper's analytic advantage.

Pass@1 training rewards each sample alone, which pushes the policy to its single most likely answer.
Pass@k training rewards a *set* of k samples by whether any of them is right, so a sample that is wrong
costs nothing when another sample of the set is right, and the policy keeps exploring. Instead of
drawing sets (the paper's full and bootstrap sampling), the paper takes the expectation over every
k-subset of the group analytically. With a group of N = G samples of which N_neg are wrong (binary
correctness):

    mean group reward  R = 1 - C(N_neg, k) / C(N, k)                   eq. 11 (chance a random k-set holds a success)
    std                s = sqrt( R (1 - R) )                             eq. 12
    A_pos = (1 - R) / s                                                  eq. 14 (every correct sample)
    A_neg = (1 - R - C(N_neg - 1, k - 1) / C(N - 1, k - 1)) / s          eq. 15 (every wrong sample)

(the paper's analytical derivation, Sec. 2.4, eqs. 7-15 of arXiv 2508.10751, checked against its text; C(n, r)
= 0 when r > n). The paper trains with DAPO's clip-higher and token-level loss (Sec. 2.1), which are GRPO
switches here. A wrong
sample is penalised only by the share of k-sets in which it is joined solely by other wrong samples, so
for k = 1 this is GRPO's advantage on binary rewards, and larger k penalises wrong samples less. A group
with all samples wrong, or with fewer than k wrong ones (every k-set then succeeds), has s = 0 and
advantage 0 (no signal). The loss is GRPO's (``grpo.grpo_loss``).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import comb, sqrt

import torch

from . import grpo
from ...algorithm import Context, RolloutBatch
from ...options import ConfigError, option
from .successes import successes


@dataclass
class Config(grpo.Config):
    """GRPO's switches plus k."""

    pass_at_k: int = option(2, "k of the pass@k reward: a k-subset of a group succeeds if any sample in it is "
                            "correct (k = 1 is GRPO on binary rewards). At most --group-size.", low=1, high=1024)


def pass_at_k_advantages(correct: torch.Tensor, group_size: int, k: int) -> torch.Tensor:
    """Per-sample pass@k advantages (module docstring) for (N,) bool correctness laid out group by group."""
    if not 1 <= k <= group_size:
        raise ValueError(f"k must be in 1..group_size ({group_size}), not {k}")
    out = torch.zeros(correct.shape[0], dtype=torch.float32)
    n = group_size
    for g, group in enumerate(correct.view(-1, group_size).tolist()):
        n_neg = n - sum(group)
        if n_neg in (0, n):  # every sample right, or every sample wrong: no signal
            continue
        mean = 1.0 - comb(n_neg, k) / comb(n, k)
        std = sqrt(mean * (1.0 - mean))
        if std == 0.0:  # fewer than k wrong samples: every k-set holds a success, no signal either
            continue
        a_pos = (1.0 - mean) / std
        a_neg = (1.0 - mean - comb(n_neg - 1, k - 1) / comb(n - 1, k - 1)) / std
        out[g * n:(g + 1) * n] = torch.tensor([a_pos if c else a_neg for c in group])
    return out


class PassAtK(grpo.GRPO):
    """GRPO with pass@k advantages computed analytically over the group (Pass@k Training)."""

    name = "pass-at-k"

    Config = Config
    ADVANTAGE = (r"\hat A_{i}=\begin{cases}\frac{1-\bar R}{\sigma}&o_i\ \text{correct}\\"
                 r"\frac{1-\bar R-\binom{N_{neg}-1}{k-1}/\binom{N-1}{k-1}}{\sigma}&\text{otherwise}\end{cases},\ "
                 r"\bar R=1-\tfrac{\binom{N_{neg}}{k}}{\binom{N}{k}},\ \sigma=\sqrt{\bar R(1-\bar R)}")

    @classmethod
    def check(cls, cfg: Config, train, env_spec) -> None:
        super().check(cfg, train, env_spec)
        if cfg.pass_at_k > train.group_size:
            raise ConfigError(f"--pass-at-k: {cfg.pass_at_k} must be at most --group-size ({train.group_size})",
                              field="pass_at_k")

    def advantages(self, ctx: Context, batch: RolloutBatch):
        advantages = pass_at_k_advantages(successes(batch), batch.group_size, self.cfg.pass_at_k)
        return advantages, torch.ones_like(advantages, dtype=torch.bool)


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "calculator-pass-at-k", "Pass@k Training tool agent (calculator)", "pass-at-k", "calculator",
        "GRPO whose advantages are those of the pass@k reward of the group, computed analytically over all k-subsets.",
        {"loss_type": "dapo", "epsilon_high": 0.28},
        nodes=("alg-pass-at-k-training",),
        changes="Instead of rewarding each sample alone (pass@1), a k-subset of the group is rewarded if any sample "
                "in it is correct, and each sample's advantage is the expectation of that set reward over every "
                "k-subset containing it, in closed form. Correct samples keep a positive advantage, while a wrong "
                "sample is penalised only as often as it sits in an all-wrong subset, so the policy is punished "
                "less for exploring. k = 1 recovers GRPO on binary rewards. As the paper (Sec. 2.1), the row "
                "trains with DAPO's clip-higher (0.2 below, 0.28 above) and token-level loss. k defaults to 2 of "
                "the run's group size; the paper's k and group sizes were not checked here.",
        paper="Pass@k Training for Adaptively Balancing Exploration and Exploitation of Large Reasoning Models "
              "(Chen et al., 2025), arXiv 2508.10751"),
)

r"""LitePPO: critic-free PPO with the two techniques "Tricks or Traps? A Deep Dive into RL for LLM
Reasoning" (Liu et al. 2025, arXiv 2508.08221) found sufficient: group-mean / batch-std advantage
normalisation and token-level loss aggregation, on the vanilla clipped PPO surrogate.

Why here, on the GRPO path: LitePPO has no critic. Its advantage is an outcome reward normalised over
samples, broadcast to every model token, which is exactly the per-sample advantage the shared
``policy_gradient_update`` consumes; only the normaliser differs from GRPO. So this is GRPO's update with
one new advantage function and the token-level (``dapo``) aggregation as its default.

Numbers from a copy of the paper's text (its arXiv version not stated; docs/algorithms_dpo_ppo_families.md):
PPO's objective is Eq. (1), GRPO's group-normalised advantage Eq. (2) and objective Eq. (3), DAPO's
token-level objective Eq. (4); in the normalisation study (Section 4.1) the group-level advantage is
Eq. (5), A_k = (r_k - mean_group r) / std_group r, the batch-level one Eq. (6), the same with mean and std
over all N*K responses of the rollout batch, the mean-only one Eq. (7), and clip-higher Eq. (8). The
combination LitePPO uses (Section 4.1.2, "Takeaway 3") is stated in words without its own number: the
mean at the group level, the standard deviation at the batch level. Section 5 ("A simple combination:
Lite PPO") joins it with token-level loss aggregation (Section 4.3, whose two objectives are not numbered
in that copy) on "the vanilla PPO loss without the critic"; the common setup (Section 3.1) computes the
advantages "using the REINFORCE algorithm", 8 responses per prompt, 128 prompts per rollout batch, learning rate 1e-6.

Advantage (group mean of Eq. (5), batch std of Eq. (6))::

    A_i = (r_i - mean_{j in group(i)} r_j) / (std_{j in batch} r_j + 1e-4)

    (The paper gives neither a stabilising epsilon nor the std's degrees of freedom: we use Bessel's
    correction and the 1e-4 of TRL's ``scale_rewards="batch"``; a group whose rewards are all equal gets
    exactly 0, as in GRPO.) Group-level std (GRPO) over-amplifies groups that are
    nearly all right or all wrong (tiny std); the batch std keeps the group-centred signal but scales every
    group alike, which the paper finds stable across reward scales.

Loss (vanilla PPO clip, token-level mean over all model tokens of the batch, the ``dapo`` aggregation: the
paper's token-level objective, Eq. (4)'s normaliser with symmetric clipping)::

    L = (1 / sum_i |o_i|) sum_i sum_t m_{i,t} * -min( w_{i,t} A_i, clip(w_{i,t}, 1-eps, 1+eps) A_i )

No KL term by default (beta = 0) and symmetric clipping (the paper's LitePPO adds neither clip-higher,
overlong filtering nor dynamic sampling; Section 5 lists them among DAPO's extra parts). Every other GRPO
switch stays available.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch

from ...algorithm import Context, RolloutBatch
from ..grpo.grpo import GRPO, constant_groups, dynamic_sampling_keep, grpo_loss, overlong_reward
from ..grpo.grpo import Config as GRPOConfig
from ...options import option
from ...policy_gradient import policy_gradient_update


@dataclass
class Config(GRPOConfig):
    """GRPO's switches with LitePPO's defaults: token-level aggregation, batch-level std."""

    loss_type: str = option("dapo", "How token losses are averaged: dapo (token mean, LitePPO), grpo (per sequence, "
                            "then mean) or dr_grpo (sum / constant).", choices=("grpo", "dr_grpo", "dapo"))
    advantage_std: str = option("batch", "Std that divides the group-centred reward: batch (LitePPO), group (GRPO) "
                                "or none (Dr.GRPO).", choices=("batch", "group", "none"))


def lite_advantages(rewards: torch.Tensor, group_size: int, std: str = "batch") -> torch.Tensor:
    """A_i = (r_i - group mean) / (std + 1e-4), std over the batch, the group or none; exactly 0 in a group
    whose rewards are all equal."""
    grouped = rewards.view(-1, group_size)
    centred = grouped - grouped.mean(dim=1, keepdim=True)
    if std == "batch":
        scale = rewards.std() if rewards.numel() > 1 else torch.zeros(())
        centred = centred / (scale + 1e-4)
    elif std == "group":
        scale = grouped.std(dim=1, keepdim=True) if group_size > 1 else torch.zeros_like(centred[:, :1])
        centred = centred / (scale + 1e-4)
    elif std != "none":
        raise ValueError(f"advantage_std must be batch, group or none, not {std!r}")
    centred = torch.where(constant_groups(grouped), torch.zeros_like(centred), centred)
    return centred.reshape(-1)


class LitePPO(GRPO):
    """GRPO's update with LitePPO's advantage (module docstring)."""

    name = "liteppo"

    Config = Config

    @classmethod
    def advantage_latex(cls, cfg: Config) -> str:
        scale = {"batch": r"\mathrm{std}_{\mathrm{batch}}r", "group": r"\mathrm{std}_{g(i)}r"}.get(cfg.advantage_std)
        centred = r"r_i-\mathrm{mean}_{g(i)}r"
        return rf"\hat A_i=\frac{{{centred}}}{{{scale}}}" if scale else rf"\hat A_i={centred}"

    def update(self, ctx: Context, batch: RolloutBatch):
        cfg = self.cfg
        shaped = batch.rewards + overlong_reward(batch.lengths, ctx.train.max_completion_tokens,
                                                 cfg.overlong_buffer, cfg.overlong_penalty)
        advantages = lite_advantages(shaped, batch.group_size, cfg.advantage_std)
        keep = dynamic_sampling_keep(batch.rewards, batch.group_size, cfg.dynamic_sampling)
        loss_fn = partial(grpo_loss, cfg=cfg, max_completion_length=ctx.train.max_completion_tokens)
        metrics = policy_gradient_update(ctx, batch, advantages, keep, loss_fn, cfg.num_iterations)
        metrics.add("advantage_abs_mean", float(advantages.abs().mean()))
        return metrics


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-liteppo", "LitePPO tool agent (calculator)", "liteppo", "calculator", "Critic-free PPO clip loss with group-mean / batch-std advantages and a token-level loss.",
                   nodes=("alg-liteppo",),
                   changes="Keeps GRPO's critic-free, outcome-reward update but divides the group-centred reward by "
                           "the standard deviation of the whole batch instead of the group's, and averages the loss "
                           "over all model tokens of the batch. A group that is nearly all right or all wrong no "
                           "longer gets its tiny spread blown up into large advantages, and long episodes weigh "
                           "by their token count. It runs on the shared policy-gradient path because it has no critic."
                           " Defaults as the paper's LitePPO: token-level loss, batch-level std, clip "
                           "0.2, no KL.",
                   paper="Part I: Tricks or Traps? A Deep Dive into RL for LLM Reasoning (Liu et al. 2025, arXiv 2508.08221)"),
)

r"""RLOO: REINFORCE with a leave-one-out baseline (Kool et al. 2019; Ahmadian et al. 2024).

For a group of G completions of one prompt with rewards r_1..r_G, each sample's baseline is the mean
reward of the *other* G-1 samples, which keeps the estimator unbiased (the baseline does not depend on
o_i)::

    A_i = r_i - (1/(G-1)) sum_{j != i} r_j  =  G/(G-1) * (r_i - mean_j r_j)

The ablation of the leave-one-out baseline (``baseline: batch``, issue 61's claim ``rloo-leave-one-out``): the
same leave-one-out form over the whole rollout batch instead of the group, so the baseline no longer depends on
the prompt (B: the batch's samples; the batch of this process under DDP)::

    group (RLOO, default):  A_i = r_i - (1/(G-1)) sum_{j in group(i), j != i} r_j
    batch (ablation):       A_i = r_i - (1/(B-1)) sum_{j != i} r_j

Both baselines leave out the sample itself, so both gradients are unbiased (Kool et al. 2019: a baseline
independent of o_i) and they estimate the same gradient; what differs is its variance, which the per-prompt
baseline is meant to lower. This is the paper's contrast: Ahmadian et al. 2024 set RLOO against REINFORCE
with a baseline shared by all prompts, a moving average of the rewards over training; the batch's own rewards
stand in for that average here (a moving average would be state carried across steps). Not a rescaling, as
the group mean including the sample would be (that is (G-1)/G times the leave-one-out advantage). A group of
equal rewards has A = 0 under the group baseline, not under the batch one. ``grad_variance`` records the
variance estimate of each optimiser step's gradient over its groups (``policy_gradient``'s module docstring,
``grad_var``) to test the claim on.

KL to the reference enters the *reward* (as in the RLOO paper and TRL's RLOOTrainer), per sequence::

    r_i <- r_i - beta * sum_t m_{i,t} (log pi_old - log pi_ref)(o_{i,t})

The policy term is REINFORCE on the sequence log-probability, written as a PPO-clipped surrogate so
that ``num_iterations`` > 1 stays safe (with one pass the ratio is 1 and it is plain REINFORCE)::

    l_{i,t} = -min( w_{i,t} A_i, clip(w_{i,t}, 1 - eps, 1 + eps) A_i ),  w = pi_theta / pi_old
    L = (1/G) sum_i sum_t m_{i,t} l_{i,t}               sequence sum (the REINFORCE gradient of log pi(o_i))
    L = (1/G) sum_i (1/|o_i|) sum_t m_{i,t} l_{i,t}     if normalize_by_length (a common variance reducer)
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch

from ...algorithm import Algorithm, Context, RolloutBatch
from ..grpo.grpo import constant_groups
from ...options import Options, option
from ...policy_gradient import policy_gradient_update


@dataclass
class Config(Options):
    """RLOO switches."""

    epsilon: float = option(0.2, "Clip range of the importance ratio (only active when num_iterations > 1).",
                            low=0.0, high=10.0)
    beta: float = option(0.0, "Weight of the KL-in-reward term; 0 skips the reference model.", low=0.0, high=10.0)
    normalize_by_length: bool = option(False, "Average token log-probs per sequence instead of summing them.")
    num_iterations: int = option(1, "Optimisation passes over each rollout batch.", low=1, high=16)
    baseline: str = option("group", "Leave-one-out baseline over the sample's group (RLOO) or over the whole rollout "
                                    "batch (the ablation: a baseline shared by all prompts).", choices=("group", "batch"))
    grad_variance: bool = option(False, "Record grad_var, the estimated variance of each optimiser step's gradient "
                                        "over its groups (costs one copy of the gradient).")


def leave_one_out_advantages(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """A_i = r_i - mean of the other G-1 rewards of its group; exactly 0 in a group of equal rewards."""
    if group_size < 2:
        raise ValueError("RLOO needs group_size >= 2")
    grouped = rewards.view(-1, group_size)
    baseline = (grouped.sum(dim=1, keepdim=True) - grouped) / (group_size - 1)
    advantages = torch.where(constant_groups(grouped), torch.zeros_like(grouped), grouped - baseline)
    return advantages.reshape(-1)


def batch_leave_one_out_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """The ablation: A_i = r_i - mean of the other B-1 rewards of the whole batch, whatever their prompt."""
    B = rewards.numel()
    if B < 2:
        raise ValueError("RLOO's batch baseline needs at least 2 samples in the rollout batch")
    return rewards - (rewards.sum() - rewards) / (B - 1)


def prepare_batch(rewards: torch.Tensor, group_size: int, cfg: Config, seq_kl: torch.Tensor | None = None):
    """Rewards (minus beta * sequence KL when given) -> (advantages, keep mask, shaped rewards)."""
    shaped = rewards - cfg.beta * seq_kl if (cfg.beta and seq_kl is not None) else rewards.clone()
    if cfg.baseline == "batch":
        advantages = batch_leave_one_out_advantages(shaped)
    else:
        advantages = leave_one_out_advantages(shaped, group_size)
    return advantages, torch.ones_like(shaped, dtype=torch.bool), shaped


def rloo_loss(logps, old_logps, advantages, mask, cfg: Config, ref_logps=None, max_completion_length=None,
              seq_normalizer=None, token_normalizer=None):
    """The RLOO objective on (B, T) tensors; returns (loss, metrics). ``ref_logps`` is unused (KL is in
    the reward)."""
    A = advantages.unsqueeze(1)
    ratio = torch.exp((logps - old_logps) * mask)
    clipped = torch.clamp(ratio, 1 - cfg.epsilon, 1 + cfg.epsilon)
    per_token = -torch.min(ratio * A, clipped * A) * mask
    per_seq = per_token.sum(-1)
    if cfg.normalize_by_length:
        per_seq = per_seq / mask.sum(-1).clamp(min=1.0)
    loss = per_seq.sum() / (seq_normalizer or logps.shape[0])
    with torch.no_grad():
        n = mask.sum().clamp(min=1.0)
        is_clipped = ((ratio < 1 - cfg.epsilon) & (A < 0)) | ((ratio > 1 + cfg.epsilon) & (A > 0))
        metrics = {"clip_frac": float((is_clipped.float() * mask).sum() / n),
                   "ratio_mean": float((ratio * mask).sum() / n), "kl": 0.0}
    return loss, metrics


class RLOO(Algorithm):
    """REINFORCE with a leave-one-out baseline on the shared policy-gradient update."""

    name = "rloo"

    Config = Config

    @classmethod
    def objective(cls, cfg: Config) -> str:
        """rloo_loss under ``cfg`` and the leave-one-out advantage (KL in the reward when beta)."""
        from ...implementations import join_equations, latex_number as n

        length = r"\frac{1}{|o_i|}" if cfg.normalize_by_length else ""
        reward = (rf",\ r_i=R_i-{n(cfg.beta)}\sum_t m_{{i,t}}\log\tfrac{{\pi_{{old}}}}{{\pi_{{ref}}}}(o_{{i,t}})"
                  if cfg.beta else "")
        return join_equations(
            rf"\mathcal{{L}}=-\frac{{1}}{{B}}\sum_{{i=1}}^{{B}}{length}\sum_t m_{{i,t}}\min\big(w_{{i,t}}\hat A_i,"
            rf"\mathrm{{clip}}(w_{{i,t}},1-{n(cfg.epsilon)},1+{n(cfg.epsilon)})\hat A_i\big)",
            (r"\hat A_i=r_i-\frac{1}{B-1}\sum_{j\ne i}^{B}r_j" if cfg.baseline == "batch"
             else r"\hat A_i=r_i-\frac{1}{G-1}\sum_{j\ne i}r_j") + reward)
    min_group_size = 2

    def update(self, ctx: Context, batch: RolloutBatch):
        full = batch.full
        seq_kl = None if batch.ref_logps is None else \
            ((full["old_logprobs"] - batch.ref_logps) * full["loss_mask"]).sum(-1).cpu()
        advantages, keep, _ = prepare_batch(batch.rewards, batch.group_size, self.cfg, seq_kl)
        return policy_gradient_update(ctx, batch, advantages, keep, partial(rloo_loss, cfg=self.cfg),
                                      self.cfg.num_iterations, grad_variance=self.cfg.grad_variance)


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-rloo", "RLOO tool agent (calculator)", "rloo", "calculator", "REINFORCE with a leave-one-out baseline over the group.", nodes=("alg-reinforce",),
                   changes=(
                           "Defaults against the paper: beta 0 (no KL; the paper keeps a KL penalty "
                           "in the reward, its weight not checked here) and a sequence sum of token "
                           "log-probs, as the paper.")),
)

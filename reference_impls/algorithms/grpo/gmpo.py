r"""GMPO: Geometric-Mean Policy Optimization (Zhao et al. 2025, arXiv 2507.20673).

GRPO maximises the *arithmetic* mean over a sequence's tokens of the clipped importance-weighted advantage,
so one token with an extreme ratio pi_theta / pi_old can dominate an update. GMPO maximises the *geometric*
mean of the same token terms instead (the paper's eq. 3, and with PPO's clip applied per token its full
objective, eq. 4; numbers checked against arXiv 2507.20673v3, Sec. 3)::

    J(theta) = E[ (1/G) sum_i  sgn(A_i) *
                  prod_t | min( rho_{i,t} A_i, clip(rho_{i,t}, e^{-eps_low}, e^{eps_high}) A_i ) |^{1/|o_i|} ]

which, since A_i is constant over a sequence, is computed in log space (numerically stable; the paper's
Algorithm 1 does the same: sgn(A) * log-ratio, clamped to [-eps, eps], the min of the two, times sgn(A))::

    l_{i,t}  = log rho_{i,t} = log pi_theta - log pi_old                        (model tokens only)
    l'_{i,t} = min(l, clip(l, -eps_low, eps_high))   if A_i > 0                  (sign-aware clip: the PPO
             = max(l, clip(l, -eps_low, eps_high))   if A_i <= 0                  "min" written in log space)
    w_i      = exp( (1/|o_i|) sum_t m_{i,t} l'_{i,t} )                           geometric mean of the ratios
    L        = (1/G) sum_i ( -w_i A_i + beta * (1/|o_i|) sum_t m_{i,t} KL_{i,t} )

The clip range is in log space: (e^{-0.4}, e^{0.4}) by default, the paper's choice (its Fig. 3 and
Algorithm 1, epsilon = 0.4), much wider than GRPO's (0.8, 1.2) because the geometric mean already damps
outlier ratios. The paper drops the KL term (following Dr.GRPO, its eq. 1 note); here it is optional (beta,
default 0), added as a per-sequence mean of k3 outside the geometric mean.
Advantages are GRPO's. TRL 1.16 ships the same loss (``trl.experimental.gmpo``);
``tests/reference_impls/test_grpo_family_a.py`` checks ours against it on identical tensors.

The ablation of the geometric mean (``token_mean: arithmetic``, issue 61's claim ``gmpo-geometric-mean``):
the same sign-aware token terms, the same log-space clip range, averaged arithmetically, which is GRPO's
aggregation (a per-sequence token mean) with GMPO's clip range::

    geometric (GMPO, default):  w_i = ( prod_t exp(l'_{i,t})^{m_{i,t}} )^{1/|o_i|} = exp( (1/|o_i|) sum_t m_{i,t} l'_{i,t} )
    arithmetic (ablation):      w_i = (1/|o_i|) sum_t m_{i,t} exp(l'_{i,t})

In both, -w_i A_i is the sequence's policy term: since A_i is constant over the sequence,
min(rho A, clip(rho) A) = A exp(l') per token, so the arithmetic form is exactly
(1/|o_i|) sum_t min(rho_{i,t} A_i, clip(rho_{i,t}, e^{-eps_low}, e^{eps_high}) A_i). Only the mean changes: the
ratio that one outlier token reaches weighs 1/|o_i| of the sequence's term arithmetically, and only
exp(l'/|o_i|) geometrically (the paper's gradient analysis: under the geometric mean each token's gradient
is weighted by the sequence's geometric mean, under the arithmetic one by its own ratio).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import ClassVar

import torch

from . import grpo
from ...algorithm import Context
from ...options import option


@dataclass
class Config(grpo.Config):
    """GRPO's switches; the clip range is in log space (GMPO). ``loss_type`` and ``importance_sampling_level``
    do not apply (GMPO has its own aggregation)."""

    clip_in_log_space: ClassVar[bool] = True  # for diagnostics.clip_bounds: the ratio lies in (e^-eps, e^eps)
    epsilon_low: float = option(0.4, "Clip range below 0 of the log importance ratio (ratio >= e^-eps).", low=0.0,
                                high=10.0, aliases=("epsilon",))
    epsilon_high: float = option(0.4, "Clip range above 0 of the log importance ratio (ratio <= e^eps).", low=0.0,
                                 high=10.0)
    token_mean: str = option("geometric", "How a sequence's clipped token ratios are averaged: geometric (GMPO) or "
                                          "arithmetic (the ablation: GRPO's mean with GMPO's log-space clip).",
                             choices=("geometric", "arithmetic"))


def gmpo_loss(logps, old_logps, advantages, mask, cfg: Config, ref_logps=None, max_completion_length=None,
              seq_normalizer=None, token_normalizer=None):
    """The GMPO objective on (B, T) tensors with (B,) advantages; returns (loss, metrics). ``cfg.token_mean``
    arithmetic: the ablation (module docstring)."""
    A = advantages.unsqueeze(1)
    log_ratio = (logps - old_logps) * mask
    bounded = torch.clamp(log_ratio, -cfg.epsilon_low, cfg.epsilon_high)
    # pessimistic side of the clip: a positive advantage may not profit from a ratio above e^eps_high,
    # a negative one not from a ratio below e^-eps_low
    clipped = torch.where(A > 0, torch.minimum(log_ratio, bounded), torch.maximum(log_ratio, bounded))
    n_tokens = mask.sum(-1).clamp(min=1.0)
    if cfg.token_mean == "arithmetic":  # the ablation: the arithmetic mean of the same clipped token ratios
        weight = (torch.exp(clipped) * mask).sum(-1) / n_tokens
    else:
        weight = torch.exp((clipped * mask).sum(-1) / n_tokens)  # (B,) geometric mean of the token ratios
    per_seq = -weight * advantages
    kl = None
    if cfg.beta != 0.0:
        delta = ref_logps - logps
        kl = torch.exp(delta) - delta - 1
        per_seq = per_seq + cfg.beta * (kl * mask).sum(-1) / n_tokens
    loss = per_seq.sum() / (seq_normalizer or logps.shape[0])
    with torch.no_grad():
        n = mask.sum().clamp(min=1.0)
        is_clipped = ((log_ratio < -cfg.epsilon_low) & (A < 0)) | ((log_ratio > cfg.epsilon_high) & (A > 0))
        metrics = {"clip_frac": float((is_clipped.float() * mask).sum() / n),
                   "ratio_mean": float(weight.mean()),
                   "kl": float((kl * mask).sum() / n) if kl is not None else 0.0}
    return loss, metrics


class GMPO(grpo.GRPO):
    """GRPO with the geometric mean of token ratios (GMPO)."""

    name = "gmpo"

    Config = Config

    @classmethod
    def objective(cls, cfg: Config) -> str:
        """gmpo_loss under ``cfg``: the sign-aware clipped geometric mean of token ratios (arithmetic under the
        ablation), per-sequence k3 if beta."""
        kl = (rf"+{grpo.latex_number(cfg.beta)}\,\frac{{1}}{{|o_i|}}\sum_t m_{{i,t}}\mathbb{{D}}^{{k3}}_{{i,t}}"
              if cfg.beta else "")
        low, high = grpo.latex_number(cfg.epsilon_low), grpo.latex_number(cfg.epsilon_high)
        if cfg.token_mean == "arithmetic":
            return grpo.join_equations(
                rf"\mathcal{{L}}=\frac{{1}}{{B}}\sum_{{i=1}}^{{B}}\Big[-\frac{{1}}{{|o_i|}}\sum_t m_{{i,t}}\min\big("
                rf"\rho_{{i,t}}\hat A_i,\,\mathrm{{clip}}(\rho_{{i,t}},e^{{-{low}}},e^{{{high}}})\hat A_i\big)"
                rf"{kl}\Big]",
                grpo.advantage_definition(cfg))
        return grpo.join_equations(
            rf"\mathcal{{L}}=\frac{{1}}{{B}}\sum_{{i=1}}^{{B}}\Big[-\mathrm{{sgn}}(\hat A_i)\prod_t\big|\min\big("
            rf"\rho_{{i,t}}\hat A_i,\,\mathrm{{clip}}(\rho_{{i,t}},e^{{-{low}}},e^{{{high}}})\hat A_i\big)\big|^{{1/|o_i|}}"
            rf"{kl}\Big]",
            grpo.advantage_definition(cfg))

    def loss_fn(self, ctx: Context, batch=None):
        return partial(gmpo_loss, cfg=self.cfg, max_completion_length=ctx.train.max_completion_tokens)


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "calculator-gmpo", "GMPO tool agent (calculator)", "gmpo", "calculator", "GRPO that maximises the geometric mean of token-level importance ratios instead of the arithmetic mean.",
        nodes=("alg-gmpo",),
        changes="GRPO averages each token's clipped ratio-times-advantage arithmetically, so a single token whose "
                "probability moved a lot can dominate the update. GMPO multiplies the clipped token ratios and takes "
                "the |o|-th root (a mean in log space), which barely reacts to one outlier; that lets it use a much "
                "wider clip range, e^-0.4 to e^0.4, here the default. Advantages are GRPO's."
                " Defaults as the paper: clip e^-0.4..e^0.4, no KL term (beta 0).",
        paper="Geometric-Mean Policy Optimization (Zhao et al., 2025), arXiv 2507.20673",
        survey_vs_paper="The survey's table lists a margin-based reward; the paper trains on the same rule-based "
                        "answer-correctness reward as GRPO, normalised within the group."),
)

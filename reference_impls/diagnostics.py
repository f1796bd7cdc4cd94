"""Mechanism diagnostics of a training step: what lets a reader see an algorithm's mechanism act, not only its
final score (issue 41, item 3). Computed every step for every algorithm and written to metrics.jsonl.

From the episodes of an online step (``episode_diagnostics``, called by the trainer)::

    episodes                     episodes sampled this step (all ranks)
    len_correct / len_incorrect  mean completion length (model + env tokens) of the correct / incorrect episodes
                                 (0 when the step has none of that kind: read it with ``accuracy``)
    zero_advantage_groups_frac   groups whose rewards are all equal: a group-relative advantage is exactly 0
                                 there, so the group carries no signal (what DAPO's dynamic sampling drops)

From the importance ratio of each optimiser step (``ratio_diagnostics``, called by the shared policy-gradient
update; PPO computes its own)::

    ratio_mean / ratio_max       of w = pi_theta / pi_old over model tokens (GSPO: of the sequence ratio)
    clip_frac_low / high         tokens whose clipped surrogate is the active one below the lower bound (A < 0) /
                                 above the upper bound (A > 0), ``clip_bounds``; 0 for an objective without a
                                 clip range
"""
from __future__ import annotations

import math

import torch

from . import distributed
from .algorithm import Metrics


def episode_diagnostics(samples: list, lengths: torch.Tensor) -> Metrics:
    """The per-episode diagnostics (module docstring) of one step's samples, as weighted means; every name is
    present on every rank (DDP reduces by name)."""
    m = Metrics()
    correct = [bool(s.info.get("correct", False)) for s in samples]
    for name, want in (("len_correct", True), ("len_incorrect", False)):
        picked = [float(lengths[i]) for i, c in enumerate(correct) if c == want]
        m.add_total(name, sum(picked), float(len(picked)))
    groups: dict[int, list[float]] = {}
    for s in samples:
        groups.setdefault(s.group, []).append(float(s.reward))
    constant = [float(max(r) == min(r)) for r in groups.values()]
    m.add_total("zero_advantage_groups_frac", sum(constant), float(len(constant)))
    m.add("episodes", distributed.all_reduce([float(len(samples))])[0])
    return m


def clip_bounds(cfg) -> tuple[float, float] | None:
    """The ratio bounds (lower, upper) of an algorithm's clipped objective, from its Config: ``epsilon_low`` /
    ``epsilon_high`` (GRPO family: 1 - eps_low, 1 + eps_high; a Config with ``clip_in_log_space``, GMPO:
    e^-eps_low, e^eps_high), ``epsilon`` (RLOO; PPO with its ``epsilon_high`` when set), or None (no clip)."""
    if hasattr(cfg, "epsilon_low"):
        low, high = float(cfg.epsilon_low), float(getattr(cfg, "epsilon_high", cfg.epsilon_low))
    elif hasattr(cfg, "epsilon"):  # PPO's epsilon_high = 0 means "the same as epsilon"
        low, high = float(cfg.epsilon), float(getattr(cfg, "epsilon_high", 0.0) or cfg.epsilon)
    else:
        return None
    if getattr(cfg, "clip_in_log_space", False):
        return math.exp(-low), math.exp(high)
    return 1.0 - low, 1.0 + high


@torch.no_grad()
def ratio_diagnostics(logps: torch.Tensor, old_logps: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
                      cfg) -> dict[str, float]:
    """Token sums of the ratio and of the clip indicators over ``mask`` (divide by its sum), and the max
    ratio, for one micro-batch. ``advantages``: (B,) per sample or (B, K) per token."""
    A = advantages.unsqueeze(1) if advantages.dim() == 1 else advantages[:, :logps.shape[1]]
    log_ratio = (logps.detach() - old_logps) * mask
    if getattr(cfg, "importance_sampling_level", "token") == "sequence":
        log_ratio = log_ratio.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1.0)
    ratio = torch.exp(log_ratio).expand_as(mask)
    A = A.expand_as(mask)
    on = mask > 0
    out = {"ratio_sum": float((ratio * mask).sum()), "ratio_max": float(ratio[on].max()) if on.any() else 1.0,
           "clip_low_sum": 0.0, "clip_high_sum": 0.0}
    bounds = clip_bounds(cfg)
    if bounds is not None:
        out["clip_low_sum"] = float((((ratio < bounds[0]) & (A < 0)).float() * mask).sum())
        out["clip_high_sum"] = float((((ratio > bounds[1]) & (A > 0)).float() * mask).sum())
    return out

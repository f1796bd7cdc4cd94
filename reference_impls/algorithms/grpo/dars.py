r"""DARS: difficulty-adaptive rollout sampling (Yang et al. 2025, "Depth-Breadth Synergy in RLVR: Unlocking
LLM Reasoning Gains with Adaptive Exploration", arXiv 2508.13755).

The paper's observation: with group-normalised advantages, a group's cumulative advantage is largest at
accuracy 1/2 and small for the hardest problems, so GRPO under-weights exactly the low-accuracy problems
that push the reasoning boundary. DARS gives those problems more samples in extra rollout stages::

    stage 1   G samples of each of the step's P problems; accuracy a_j = mean reward of group j
    stage 2   every problem with a_j < hard_threshold gets dn_j extra samples:
                  equal     (Equal-Treatment)    dn_j = extra_rollouts
                  hardness  (Hardness-Weighted)  dn_j = ceil(extra_rollouts * (hard_threshold - a_j) / hard_threshold)
    update    group j now has G + dn_j samples; advantages are normalised within each group, whatever its
              size (``grouped_advantages``):  A_i = (r_i - mean_{g(i)}) / (std_{g(i)} + 1e-4), 0 in a
              constant group

The schedules here keep the paper's idea (a uniform and a difficulty-proportional top-up of the hard
problems) in a simplified form: the paper derives its per-problem counts from the cumulative-advantage
formula. Equation numbers: not verified: paper text not available here (issue 19's check,
docs/algorithms_grpo_family.md).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch

from ...algorithm import Context, RolloutBatch, batch_from_samples, collect_batch
from .grpo import GRPO, overlong_reward
from .grpo import Config as GRPOConfig
from ...options import ConfigError, option


@dataclass
class Config(GRPOConfig):
    """GRPO's switches plus DARS's second rollout stage."""

    schedule: str = option("hardness", "How many extra samples a hard problem gets: equal (the same for all) or "
                           "hardness (more the lower its accuracy).", choices=("equal", "hardness"))
    extra_rollouts: int = option(4, "Most extra samples per hard problem in the second stage.", low=0, high=1024)
    hard_threshold: float = option(0.5, "A problem is hard when its first-stage mean reward is below this.",
                                   low=0.0, high=1.0)


def extra_counts(accuracy: list[float], schedule: str, extra: int, threshold: float) -> list[int]:
    """Extra samples per problem from its first-stage accuracy (module docstring)."""
    counts = []
    for a in accuracy:
        if a >= threshold or threshold <= 0:
            counts.append(0)
        elif schedule == "equal":
            counts.append(extra)
        elif schedule == "hardness":
            counts.append(math.ceil(extra * (threshold - a) / threshold))
        else:
            raise ValueError(f"schedule must be equal or hardness, not {schedule!r}")
    return counts


def grouped_advantages(rewards: torch.Tensor, groups: list[int], scale_rewards: bool = True) -> torch.Tensor:
    """Group-relative advantages for groups of any size (``groups[i]`` = sample i's group): GRPO's
    (r - mean) / (std + 1e-4) with Bessel's std, exactly 0 in a group whose rewards are all equal."""
    out = torch.zeros_like(rewards)
    index = torch.tensor(groups)
    for g in sorted(set(groups)):
        rows = index == g
        r = rewards[rows]
        if r.numel() < 2 or bool(r.max() == r.min()):
            continue
        centred = r - r.mean()
        out[rows] = centred / (r.std() + 1e-4) if scale_rewards else centred
    return out


class DARS(GRPO):
    """GRPO with a second rollout stage for the hardest problems of the step."""

    name = "dars"

    Config = Config
    SETTING = (r"|g_j|=G+\Delta n_j,\ \Delta n_j=\lceil N\,(\tau-a_j)/\tau\rceil\ \text{if }a_j<\tau")

    @classmethod
    def check(cls, cfg: Config, train, env_spec) -> None:
        super().check(cfg, train, env_spec)
        if cfg.dynamic_sampling:
            raise ConfigError("DARS tops up hard groups instead of dropping constant ones: leave --dynamic-sampling off",
                              field="dynamic_sampling")

    def collect(self, ctx: Context, problems: list):
        from ...rollout import rollout

        first, stats = collect_batch(ctx, problems)
        G = first.group_size
        accuracy = first.rewards.view(-1, G).mean(dim=1).tolist()
        counts = extra_counts(accuracy, self.cfg.schedule, self.cfg.extra_rollouts, self.cfg.hard_threshold)
        self.extra_total = sum(counts)
        if not self.extra_total:
            return first, stats
        repeated = [g for g, n in enumerate(counts) for _ in range(n)]
        extra, stats2 = rollout(ctx.policy, ctx.tokenizer, ctx.task, [problems[g] for g in repeated],
                                dataclasses.replace(ctx.rollout_config, group_size=1))
        for s, g in zip(extra, repeated):
            s.group = g  # back to the problem's own group
        samples = []
        for g in range(len(problems)):
            samples += first.samples[g * G:(g + 1) * G] + [s for s in extra if s.group == g]
        stats = {**stats, "rollout_s": stats["rollout_s"] + stats2["rollout_s"],
                 "generated_tokens": stats["generated_tokens"] + stats2["generated_tokens"]}
        return batch_from_samples(ctx, samples, G), stats

    def advantages(self, ctx: Context, batch: RolloutBatch):
        shaped = batch.rewards + overlong_reward(batch.lengths, ctx.train.max_completion_tokens,
                                                 self.cfg.overlong_buffer, self.cfg.overlong_penalty)
        advantages = grouped_advantages(shaped, [s.group for s in batch.samples], self.cfg.scale_rewards)
        return advantages, torch.ones_like(advantages, dtype=torch.bool)

    def update(self, ctx: Context, batch: RolloutBatch):
        metrics = super().update(ctx, batch)
        metrics.add("extra_rollouts", float(getattr(self, "extra_total", 0)))
        return metrics


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-dars", "DARS tool agent (calculator)", "dars", "calculator", "GRPO with a second rollout stage that gives the step's hardest problems extra samples.",
                   nodes=("alg-dars",),
                   changes="After the usual G rollouts, every problem whose mean reward is below a threshold gets "
                           "extra rollouts (the same number for all, or more the lower its accuracy), so hard "
                           "problems contribute more positive samples and more advantage mass. Groups then differ "
                           "in size and advantages are normalised within each group."
                           " Defaults against the paper: up to 4 extra rollouts for a problem below "
                           "accuracy 0.5, scaled by hardness; the paper derives its per-problem "
                           "counts from its cumulative-advantage formula, and its values were not "
                           "checked here (no copy of its text).",
                   paper="Depth-Breadth Synergy in RLVR: Unlocking LLM Reasoning Gains with Adaptive Exploration "
                         "(arXiv 2508.13755)"),
)

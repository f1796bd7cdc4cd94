r"""DARS: difficulty-adaptive rollout sampling (Yang et al. 2025, "Depth-Breadth Synergy in RLVR: Unlocking
LLM Reasoning Gains with Adaptive Exploration", arXiv 2508.13755).

The paper's observation: with group-normalised advantages, a group's cumulative advantage is largest at
accuracy 1/2 and small for the hardest problems, so GRPO under-weights exactly the low-accuracy problems
that push the reasoning boundary. DARS gives those problems more samples in a second rollout stage, as many
as lift their cumulative advantage to a target::

    stage 1   N = G samples of each of the step's P problems; accuracy a_j = mean reward of group j
    stage 2   every problem with a_j < 1/2 gets dn_j extra samples (a_j = 0 counts as a_j = 1/(2N)):
                  S(a) = 2 a (1 - a)                      cumulative |advantage| per sample, no std scaling
                  equal     (Equal-Treatment)   dn_j = ceil( N (1 / (4 a_j (1 - a_j)) - 1) )
                  hardness  (Hardness-Weighted) dn_j = ceil( N (1 / (2 a_j) - 1) )
              capped at N_max - N; with std scaling (``scale_rewards``) S(a) = 2 sqrt(a (1 - a)) and the
              targets become N (equal) and 2 (1 - a) N (hardness): dn = ceil(N / S - N), ceil(N 2 (1 - a) / S - N)
    filter    only groups whose rewards are not all equal (0 < accuracy < 1 for 0/1 rewards) are trained on
              (``drop_constant_groups``)
    update    group j now has N + dn_j samples; advantages are taken within each group, whatever its size
              (``grouped_advantages``):  A_i = r_i - mean_{g(i)}  (no std scaling, the authors' scripts), or
              (r_i - mean_{g(i)}) / (std_{g(i)} + 1e-4) with ``scale_rewards``; 0 in a constant group

(Equal-Treatment lifts every hard group's cumulative advantage N S(a) to the peak N S(1/2) = N/2;
Hardness-Weighted to 2 (1 - a) times it.)

Checked against the authors' released code (github.com/yangzhch6/DARS): ``schedule_ET`` / ``schedule_HW`` and
the filter ``0 < acc < upper_threshold = 1`` in ``verl/verl/trainer/ppo/ray_dars_trainer.py``, and the
training scripts ``experiments/DARS-1.5B-{ET,HW}-Breadth.sh`` (N = 8, N_max = 32 for ET and 64 for HW,
``grpo_use_std=False``). At accuracy 0 with N = 8 these give 24 (ET, 27 capped at 32 - 8) and 56 (HW)
extra samples. Deliberate difference: ``max_rollouts`` defaults to 16 (a CPU-sized cap; with G = 4 the
hardness schedule's 12 extra samples at accuracy 0 still fit); ``--max-rollouts 32`` (equal) or ``64``
(hardness) with ``--group-size 8`` is the authors' setting. Equation numbers: not verified (the paper's text
is not available here; docs/algorithms_grpo_family.md).
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
    """GRPO's switches (DARS: no std scaling) plus DARS's second rollout stage."""

    scale_rewards: bool = option(False, "Divide advantages by the group's reward std; off as the DARS authors' "
                                 "scripts (grpo_use_std=False), which also picks the schedule's S(a).")
    schedule: str = option("hardness", "How many extra samples a problem below accuracy 1/2 gets: equal "
                           "(Equal-Treatment: every hard group's cumulative advantage up to the peak's) or hardness "
                           "(Hardness-Weighted: more the lower its accuracy).", choices=("equal", "hardness"))
    max_rollouts: int = option(16, "N_max: most samples of one problem after the second stage (G + extra); the "
                               "authors: 32 (equal) or 64 (hardness) with G = 8.", low=1, high=4096)
    drop_constant_groups: bool = option(True, "Train only on groups whose rewards are not all equal after the "
                                        "second stage (the authors' 0 < accuracy < 1 filter).")


def extra_count(accuracy: float, group_size: int, max_rollouts: int, schedule: str,
                scale_rewards: bool = False) -> int:
    """Extra samples for one problem of first-stage ``accuracy`` (module docstring; the authors' schedule)."""
    if schedule not in ("equal", "hardness"):
        raise ValueError(f"schedule must be equal or hardness, not {schedule!r}")
    N = group_size
    a = 0.5 / N if accuracy <= 1e-6 else accuracy
    if a >= 0.5:
        return 0
    if scale_rewards:
        spread, peak = 2 * math.sqrt(a * (1 - a)), float(N)
    else:
        spread, peak = 2 * a * (1 - a), 0.5 * N
    target = peak if schedule == "equal" else 2 * (1 - a) * peak
    return max(0, min(math.ceil((target - N * spread) / spread), max_rollouts - N))


def extra_counts(accuracy: list[float], schedule: str, group_size: int, max_rollouts: int,
                 scale_rewards: bool = False) -> list[int]:
    """Extra samples per problem from its first-stage accuracy."""
    return [extra_count(a, group_size, max_rollouts, schedule, scale_rewards) for a in accuracy]


def varied_groups(rewards: torch.Tensor, groups: list[int]) -> torch.Tensor:
    """Per-sample bool: True when the sample's group (``groups[i]``) has rewards that are not all equal."""
    keep = torch.zeros(len(groups), dtype=torch.bool)
    index = torch.tensor(groups)
    for g in sorted(set(groups)):
        rows = index == g
        keep[rows] = bool(rewards[rows].max() > rewards[rows].min())
    return keep


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

    @classmethod
    def setting_latex(cls, cfg: Config) -> str:
        """The second stage's count under ``cfg.schedule`` and ``cfg.scale_rewards`` (module docstring)."""
        spread = r"2\sqrt{a_j(1-a_j)}" if cfg.scale_rewards else r"2a_j(1-a_j)"
        peak = "G" if cfg.scale_rewards else r"\tfrac{G}{2}"
        target = peak if cfg.schedule == "equal" else rf"2(1-a_j)\,{peak}"
        kept = r",\ \text{only groups with }0<\bar r_g<1" if cfg.drop_constant_groups else ""
        return (rf"|g_j|=G+\Delta n_j,\ \Delta n_j=\min\Big(\Big\lceil\frac{{{target}-G\,S(a_j)}}{{S(a_j)}}\Big\rceil,"
                rf"\,{cfg.max_rollouts}-G\Big)\ \text{{if }}a_j<\tfrac12,\ S(a)={spread.replace('a_j', 'a')}{kept}")

    @classmethod
    def check(cls, cfg: Config, train, env_spec) -> None:
        super().check(cfg, train, env_spec)
        if cfg.dynamic_sampling:
            raise ConfigError("--dynamic-sampling: DARS drops constant groups itself, after its second stage "
                              "(--drop-constant-groups): leave --dynamic-sampling off", field="dynamic_sampling")

    def collect(self, ctx: Context, problems: list):
        from ...rollout import rollout

        first, stats = collect_batch(ctx, problems)
        G = first.group_size
        accuracy = first.rewards.view(-1, G).mean(dim=1).tolist()
        counts = extra_counts(accuracy, self.cfg.schedule, G, self.cfg.max_rollouts, self.cfg.scale_rewards)
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
        groups = [s.group for s in batch.samples]
        advantages = grouped_advantages(shaped, groups, self.cfg.scale_rewards)
        if self.cfg.drop_constant_groups:  # on the unshaped rewards, as DAPO's filter
            return advantages, varied_groups(batch.rewards, groups)
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
                   changes="After the usual G rollouts, every problem whose accuracy is below 1/2 gets extra "
                           "rollouts, as many as lift its group's cumulative advantage to a target (Equal-Treatment: "
                           "the peak's; Hardness-Weighted: more the lower its accuracy), so hard problems contribute "
                           "more positive samples and more advantage mass. Groups then differ in size, advantages "
                           "are centred within each group without std scaling, and groups whose rewards are all "
                           "equal are dropped, as in the authors' scripts. Defaults as the authors' code "
                           "(ray_dars_trainer.py, experiments/DARS-1.5B-*-Breadth.sh): the hardness schedule "
                           "N(1/(2a) - 1), no std scaling, the 0 < accuracy < 1 filter; deliberately smaller: at "
                           "most 16 samples per problem (--max-rollouts; the authors: 32 equal, 64 hardness, "
                           "with G = 8).",
                   paper="Depth-Breadth Synergy in RLVR: Unlocking LLM Reasoning Gains with Adaptive Exploration "
                         "(arXiv 2508.13755)"),
)

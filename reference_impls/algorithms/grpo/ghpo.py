r"""GHPO: difficulty-aware guidance by partial reference solutions in the prompt (Liu et al. 2025, "GHPO:
Adaptive Guidance for Stable and Efficient LLM Reinforcement Learning", arXiv 2507.10628).

A problem whose G rollouts all fail gives GRPO no gradient (all advantages 0). GHPO detects such problems
during the rollout and refines their prompt with the beginning of the reference solution, raising the
share of the solution shown stage by stage until the group earns some reward::

    stage 0   G rollouts of prompt q (plain GRPO)
    stage k   for every group whose rewards are all <= 0: replace the group by G rollouts of
              q_k = q + "the beginning of a solution: " + h(omega_k),  omega_k = k * hint_ratio_step
    update    GRPO on the final groups (a hinted group is trained on its hinted prompt)

h(omega) is the first omega-share of the reference solution. Here the reference solution is the
environment's demonstration (tool calls and their results, then the answer); the hint is the text of its
first floor(omega * n) segments, n = segments before the final answer (at least one model segment), so a
hint never contains the final answer tag. The paper's objective is GRPO's (its eq. for the hybrid
objective only changes the prompt per difficulty). Equation numbers: not verified: paper text not available
here (issue 19's check, docs/algorithms_grpo_family.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ...algorithm import Context, batch_from_samples, collect_batch
from .grpo import GRPO
from .grpo import Config as GRPOConfig
from ...options import option

HINT_INTRO = "\nThe beginning of a solution (continue from it): "


@dataclass
class Config(GRPOConfig):
    """GRPO's switches plus GHPO's hint stages."""

    hint_stages: int = option(3, "Hint stages for groups that stay all wrong (0 = plain GRPO).", low=0, high=16)
    hint_ratio_step: float = option(0.25, "Share of the reference solution added per stage: stage k shows "
                                    "k * step (0.25, 0.5, 0.75 by default).", low=0.0, high=1.0)

    def hint_ratios(self) -> list[float]:
        return [min(1.0, k * self.hint_ratio_step) for k in range(1, self.hint_stages + 1)]


def hint_text(segments: list[tuple[str, str]], ratio: float) -> str:
    """The first ``ratio`` share of a demonstration's segments before its final answer (module docstring)."""
    body = segments[:-1]  # the last model segment writes the answer: never shown
    if not body or ratio <= 0:
        return ""
    k = max(1, math.floor(ratio * len(body)))
    return "".join(text for _, text in body[:k])


@dataclass(frozen=True)
class HintedProblem:
    problem: object
    hint: str


class _HintedEnv:
    """The problem's own env, with the hint appended to the user's message."""

    def __init__(self, env, hint: str):
        self._env, self._hint = env, hint

    def __getattr__(self, name):
        return getattr(self._env, name)

    def reset(self):
        messages = [dict(m) for m in self._env.reset()]
        messages[-1]["content"] += HINT_INTRO + self._hint
        return messages

    def step(self, text):
        return self._env.step(text)


class HintedTask:
    """An EnvSpec stand-in whose problems are ``HintedProblem``s (what ``rollout`` needs: ``make``)."""

    def __init__(self, task):
        self.task = task

    def config_of(self, config=None, **options):
        return self.task.config_of(config, **options)

    def make(self, hinted: HintedProblem, config=None, **options):
        return _HintedEnv(self.task.make(hinted.problem, config, **options), hinted.hint)


class GHPO(GRPO):
    """GRPO that re-rolls all-wrong groups with a growing hint from the reference solution."""

    name = "ghpo"

    Config = Config
    SETTING = (r"q_k=q\oplus h(\omega_k)\ \text{while}\ \max_i r_i=0,\ \omega_k=k\,\Delta\omega,\ "
               r"\text{the loss on the groups of }q_k")

    def collect(self, ctx: Context, problems: list):
        from ...rollout import rollout

        batch, stats = collect_batch(ctx, problems)
        G, samples = batch.group_size, list(batch.samples)
        hinted_groups = 0
        ratios = self.cfg.hint_ratios()
        for ratio in ratios:
            failed = [g for g in range(len(problems)) if max(s.reward for s in samples[g * G:(g + 1) * G]) <= 0]
            env_config = ctx.rollout_config.env_config
            hints = {g: hint_text(ctx.task.demonstrate(problems[g], env_config), ratio) for g in failed}
            failed = [g for g in failed if hints[g]]
            if not failed:
                break
            redo, st = rollout(ctx.policy, ctx.tokenizer, HintedTask(ctx.task),
                               [HintedProblem(problems[g], hints[g]) for g in failed], ctx.rollout_config)
            for k, g in enumerate(failed):
                for j, s in enumerate(redo[k * G:(k + 1) * G]):
                    s.group, s.info = g, {**s.info, "hint_ratio": ratio}
                    samples[g * G + j] = s
            hinted_groups += len(failed) if ratio == ratios[0] else 0
            stats = {**stats, "rollout_s": stats["rollout_s"] + st["rollout_s"],
                     "generated_tokens": stats["generated_tokens"] + st["generated_tokens"]}
        self.hinted_frac = hinted_groups / max(len(problems), 1)
        return batch_from_samples(ctx, samples, G), stats

    def update(self, ctx, batch):
        metrics = super().update(ctx, batch)
        metrics.add("hinted_groups_frac", getattr(self, "hinted_frac", 0.0))
        return metrics


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-ghpo", "GHPO tool agent (calculator)", "ghpo", "calculator", "GRPO that re-rolls all-wrong groups with a growing hint from the reference solution.",
                   nodes=("alg-ghpo",),
                   changes="A group whose rollouts all fail carries no gradient, so it is rolled out again with the "
                           "beginning of the reference solution (the calculator demonstration's first tool calls "
                           "and results) appended to the problem, showing a larger share at each stage until some "
                           "sample succeeds. Problems the policy can solve stay plain on-policy RL."
                           " Defaults as the authors' code (hkgc-1/GHPO, src/ghpo/ghpo_trainer.py: hints of 25%, "
                           "50% and 75% of the solution, tried in turn on the groups still all wrong): 3 hint "
                           "stages of a quarter of the reference solution each.",
                   paper="GHPO: Adaptive Guidance for Stable and Efficient LLM Reinforcement Learning "
                         "(arXiv 2507.10628)",
                   survey_vs_paper="The survey's table lists the objective as a policy gradient with a plain reward; "
                                   "the paper optimises GRPO's clipped group-relative objective on the refined prompts."),
)

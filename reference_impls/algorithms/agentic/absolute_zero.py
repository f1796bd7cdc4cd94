r"""Absolute Zero self-play (Zhao et al. 2025, "Absolute Zero: Reinforced Self-play Reasoning with Zero Data",
arXiv 2505.03335) on our GRPO update: one policy proposes problems and solves them.

One step (``collect``)::

    1. propose  the step's P propose tasks, G samples each (the run's group size); the env's verifier turns each
                proposal into a solve task or rejects it (info["proposed_problem"], None when invalid)
    2. solve    every distinct valid proposal is attempted ``solver_samples`` (N) times by the same policy;
                r_solve = 1[answer == the verifier's value]
    3. rewards  a valid proposal's reward becomes its learnability (AZR Eq. 4)::

                    rbar = (1/N) sum_{n=1}^{N} r_solve^(n)
                    r_propose = 0           if rbar = 0 or rbar = 1      (unsolvable or trivial: no signal)
                                1 - rbar    otherwise                     (hard but learnable scores highest)

                invalid proposals keep the env's format-aware penalty (AZR Eq. 6: -0.5 tagged but invalid, -1 no
                tag); solver episodes keep r_solve (Eq. 5)
    4. update   proposer and solver episodes in one batch, one GRPO clipped-surrogate update. Baselines:
                ``baseline="role"`` (default, AZR's Task-Relative REINFORCE++, Eq. 8, with one task type): each role is
                normalised over the batch, A = (r - mean_role) / (std_role + 1e-4); ``baseline="group"``: GRPO's
                groups, the G proposals of one prompt and the N attempts of one proposed problem

The joint objective is AZR's Eq. 3 with lambda = 1: E[r_propose + E_solver[r_solve]] (both roles' episodes weigh the
same in the loss). What is simplified: one task type (evaluate an arithmetic expression: AZR's deduction on
programs reduced to arithmetic) instead of deduction/abduction/induction over Python programs; the proposer's
reference examples are seeded by the env, not drawn from a buffer of past valid proposals; the update is our
GRPO's clipped surrogate (with its optional KL) rather than REINFORCE++. The self-play contract is the env's:
proposer episodes end with ``info["proposed_problem"]`` (a problem the same env builds, with a ``uid``; None when
invalid) and the train pool holds problems with ``role == "propose"``; no environment is named here.
Equation numbers are those of the arXiv paper as read for this implementation (the search tool returned only
its opening page, so they were not re-checked against the full text).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from ...algorithm import Context, RolloutBatch, batch_from_samples
from ..grpo.dars import grouped_advantages
from ..grpo.grpo import GRPO, overlong_reward
from ..grpo.grpo import Config as GRPOConfig
from ...options import ConfigError, option


def learnability_reward(successes: list[float]) -> float:
    """AZR's proposer reward (Eq. 4) from the solver's N outcomes on one proposed problem."""
    if not successes:
        raise ValueError("learnability needs at least one solver attempt")
    rate = sum(float(s) for s in successes) / len(successes)
    return 0.0 if rate <= 0.0 or rate >= 1.0 else 1.0 - rate


@dataclass
class Config(GRPOConfig):
    """GRPO's switches plus the self-play loop's."""

    solver_samples: int = option(4, "N: solver attempts per proposed problem (the learnability estimate's "
                                 "sample size).", low=2, high=256)
    baseline: str = option("role", "Advantage baseline: role (AZR's task-relative: each role normalised over the "
                           "batch) or group (GRPO's per-prompt / per-problem groups).", choices=("role", "group"))


class AbsoluteZero(GRPO):
    """Propose, verify, solve, reward learnability; one shared policy (module docstring)."""

    name = "absolute-zero"

    Config = Config
    SETTING = (r"r_{propose}=\begin{cases}0 & \bar r_{solve}\in\{0,1\}\\ 1-\bar r_{solve} & \text{otherwise}"
               r"\end{cases},\ \bar r_{solve}=\tfrac1N\sum_{n=1}^{N} r_{solve}^{(n)}")

    @classmethod
    def advantage_latex(cls, cfg: Config) -> str:
        if cfg.baseline == "role":
            return r"\hat A_i=\frac{r_i-\mathrm{mean}_{\mathrm{role}(i)}r}{\mathrm{std}_{\mathrm{role}(i)}r}"
        return ""

    @classmethod
    def check(cls, cfg: Config, train, env_spec) -> None:
        super().check(cfg, train, env_spec)
        if cfg.dynamic_sampling:
            raise ConfigError("--algo absolute-zero sets its own groups (roles): leave --dynamic-sampling off",
                              field="dynamic_sampling")

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        if not any(getattr(p, "role", None) == "propose" for p in ctx.pool):
            raise ConfigError(f"--algo absolute-zero needs an environment whose train problems propose tasks "
                              f"(role 'propose'); --env {ctx.task.name}'s have none", field="env")
        self.last: dict[str, float] = {}

    def collect(self, ctx: Context, problems: list):
        from ...rollout import rollout

        samples, stats = rollout(ctx.policy, ctx.tokenizer, ctx.task, problems, ctx.rollout_config)
        proposers = [s for s in samples if "proposed_problem" in s.info]
        tasks = {}
        for s in proposers:
            problem = s.info["proposed_problem"]
            if problem is not None:
                tasks.setdefault(problem.uid, problem)
        solved, successes = [], {}
        if tasks:
            N = self.cfg.solver_samples
            solved, stats2 = rollout(ctx.policy, ctx.tokenizer, ctx.task, list(tasks.values()),
                                     dataclasses.replace(ctx.rollout_config, group_size=N))
            stats = {**stats, "rollout_s": stats["rollout_s"] + stats2["rollout_s"],
                     "generated_tokens": stats["generated_tokens"] + stats2["generated_tokens"]}
            for uid, j in zip(tasks, range(len(tasks))):
                successes[uid] = [float(bool(s.info.get("correct"))) for s in solved[j * N:(j + 1) * N]]
        rewards = []
        for s in proposers:
            problem = s.info["proposed_problem"]
            if problem is not None:
                s.reward = learnability_reward(successes[problem.uid])
                rewards.append(s.reward)
        n_groups = len(problems)
        for j, s in enumerate(solved):
            s.group = n_groups + j // self.cfg.solver_samples
        if self.cfg.baseline == "role":
            for s in samples + solved:
                s.group = 0 if "proposed_problem" in s.info else 1
        rates = [sum(v) / len(v) for v in successes.values()]
        self.last = {
            "proposal_validity": len(rewards) / len(proposers) if proposers else 0.0,
            "proposer_reward": sum(rewards) / len(rewards) if rewards else 0.0,
            "solve_rate": sum(rates) / len(rates) if rates else 0.0,
            "learnable_share": sum(0.0 < r < 1.0 for r in rates) / len(rates) if rates else 0.0,
            "proposed_problems": float(len(tasks)), "solver_episodes": float(len(solved))}
        return batch_from_samples(ctx, samples + solved, ctx.train.group_size), stats

    def advantages(self, ctx: Context, batch: RolloutBatch):
        shaped = batch.rewards + overlong_reward(batch.lengths, ctx.train.max_completion_tokens,
                                                 self.cfg.overlong_buffer, self.cfg.overlong_penalty)
        advantages = grouped_advantages(shaped, [s.group for s in batch.samples], self.cfg.scale_rewards)
        return advantages, torch.ones_like(advantages, dtype=torch.bool)

    def update(self, ctx: Context, batch: RolloutBatch):
        metrics = super().update(ctx, batch)
        for name, value in self.last.items():
            metrics.add(name, value)
        return metrics


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "selfplay-absolute-zero", "Absolute-Zero self-play: propose and solve arithmetic", "absolute-zero",
        "selfplay-arith", "One policy proposes arithmetic problems, a verifier checks and computes them, the same policy solves "
        "each several times; the proposer is rewarded for problems solved sometimes but not always.",
        nodes=("self-improvement", "self-improvement-iterative-self-training"),
        changes="Keeps Absolute Zero's loop: no human problems in the RL pool, a proposer role and a solver role "
                "played by one policy, a verifier that rejects malformed proposals (format-aware penalties) and "
                "computes the gold answer, the learnability reward 1 - mean solve rate for problems that are "
                "neither always nor never solved (0 otherwise), the solver rewarded by exact match, both roles in "
                "one update with one baseline per role (task-relative advantages). Simplifies: one task type "
                "(evaluate an expression with + - * on bounded integers) instead of deduction/abduction/induction "
                "over Python programs, a parser instead of a code executor, seeded reference examples instead of "
                "a buffer of past proposals, and GRPO's clipped surrogate instead of REINFORCE++.",
        paper="Absolute Zero: Reinforced Self-play Reasoning with Zero Data (Zhao et al.; arXiv 2505.03335)"),
)

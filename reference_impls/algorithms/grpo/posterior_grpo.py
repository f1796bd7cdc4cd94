r"""Posterior-GRPO (Fan et al. 2025, arXiv 2508.05170): a process reward that only successful episodes get.

Rewarding the reasoning process directly invites reward hacking: the policy learns to produce processes
the process scorer likes without getting more answers right. Posterior-GRPO (P-GRPO) therefore adds the
process reward *only to episodes whose outcome is correct* (the paper's posterior reward rule), so among
correct answers the better-reasoned ones are preferred, and a wrong answer cannot earn anything from its
process:

    r'_i = r_i + lambda * 1[o_i correct] * r^proc_i                 then GRPO's group advantages on r'
    A_i  = (r'_i - mean_j r'_j) / (std_j r'_j + 1e-4)

With lambda = 1 (the default) this is the paper's reward R = R_f + R_o + R_o * R_t with a binary outcome
R_o (the process reward R_t enters with weight 1, gated by the outcome); the calculator's reward r_i plays
R_f + R_o (it has no separate format term). ``process_weight`` scales R_t for ablations.

The paper's process reward is a learned model scoring the thinking of code solutions. Here the process is
the calculator's tool calls and r^proc is the fraction of them that were correct steps (a call whose value is
an intermediate value of a correct solution, ``info["tool_steps"]`` recorded by the calculator). The loss
is GRPO's (``grpo.grpo_loss``).

Checked against the paper's reward R = R_f + R_o + R_o R_t as issue 62's audit quotes it (arXiv 2508.05170);
no training code by the authors was found in the code index, and a third-party reimplementation states the
same formula. Equation numbers: not verified: paper text not available here (docs/algorithms_grpo_family.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from . import grpo
from ...algorithm import Context, RolloutBatch
from ...options import option
from .successes import reshaped_advantages, successes, tool_step_accuracy


@dataclass
class Config(grpo.Config):
    """GRPO's switches plus the process-reward weight."""

    process_weight: float = option(1.0, "lambda: weight of the process reward (fraction of correct tool steps), "
                                   "added only to correct episodes (1 = the paper's R_f + R_o + R_o R_t).",
                                   low=0.0, high=10.0)


def posterior_rewards(rewards: torch.Tensor, correct: torch.Tensor, process: torch.Tensor, weight: float):
    """r + weight * 1[correct] * process (all (N,))."""
    return rewards + weight * correct.float() * process


class PosteriorGRPO(grpo.GRPO):
    """GRPO with a process reward gated on outcome success (Posterior-GRPO)."""

    name = "posterior-grpo"

    Config = Config
    SETTING = r"r_i=r^{\mathrm{out}}_i+\lambda\,\mathbb{1}[o_i\ \text{correct}]\,r^{\mathrm{proc}}_i"

    def advantages(self, ctx: Context, batch: RolloutBatch):
        process = torch.tensor([tool_step_accuracy(s) for s in batch.samples], dtype=torch.float32)
        rewards = posterior_rewards(batch.rewards, successes(batch), process, self.cfg.process_weight)
        return reshaped_advantages(ctx, batch, rewards, self.cfg)


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "calculator-posterior-grpo", "Posterior-GRPO tool agent (calculator)", "posterior-grpo", "calculator",
        "GRPO plus a process reward (share of correct tool steps) that only episodes with a correct answer receive.",
        nodes=("alg-posterior-grpo",),
        changes="A process reward added to every episode can be farmed without getting answers right. Posterior-GRPO "
                "adds it only when the outcome is correct, so it ranks correct episodes by the quality of their "
                "process and never rewards a wrong one. The paper scores code reasoning with a learned reward "
                "model; here the process is the calculator calls and its score is the fraction of calls that "
                "computed an intermediate value of a correct solution."
                " Defaults as the paper: lambda 1, its reward R_f + R_o + R_o R_t (as issue 62's audit quotes it; "
                "no authors' code found).",
        paper="Posterior-GRPO: Rewarding Reasoning Processes in Code Generation (Fan et al., 2025), arXiv 2508.05170"),
)

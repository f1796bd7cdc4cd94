r"""Role-credit GRPO: one shared policy plays several roles of a multi-agent episode, and each role's tokens
are credited with that role's own group-relative advantage.

Setting (ReMA, Wan et al. 2025, "ReMA: Learning to Meta-think for LLMs with Multi-Agent Reinforcement
Learning", arXiv 2503.09501: one LLM with shared parameters plays two agents, told apart by their role
prompts, each trained on its own reward): an episode is a sequence of model turns k = 0, 1, ..., each
written by a role rho(k) that the environment's fixed protocol names (``env.role_of_turn(k)``), and at the
end the environment reports one reward per role, r^rho_i (``info["role_rewards"]``; 0 for every role when
the episode was cut off by the token budget).

Advantage: GRPO's outcome-reward group normalisation (Shao et al. 2024, "DeepSeekMath", arXiv 2402.03300;
the same formula as ``grpo.group_advantages``), done separately for each role over the G episodes of one
problem::

    A^rho_i = (r^rho_i - mean_j r^rho_j) / (std_j r^rho_j + 1e-4)      (scale_rewards=False: no division;
                                                                      exactly 0 in a constant group)
    A_{i,t} = A^{rho(k)}_i   for every model token t of turn k of episode i

and the loss is GRPO's clipped surrogate with these per-token advantages (``grpo.grpo_loss``, the same
aggregation switches). So the verifier's "accept" is pushed up when accepting paid off *for the verifier*
in this group, independently of how the solver's tokens are credited. Roles not listed in the env's
``train_roles`` option get loss mask 0 on their turns (zero gradient, outside every normaliser): they are
still played by the policy, but frozen in what they learn from.

What is simplified relative to ReMA: one shared transcript for both roles (ReMA's agents see each other's
outputs too, but with their own system prompts), no turn-level importance ratio (the ratio is GRPO's per
token), and ReMA's equation numbers were not checked against its text here.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...algorithm import Context, RolloutBatch, collect_batch
from ..grpo.grpo import GRPO, group_advantages
from ..grpo.grpo import Config as GRPOConfig
from ...options import ConfigError


@dataclass
class Config(GRPOConfig):
    """GRPO's switches; the roles and which of them learn are the environment's (``train_roles``)."""


def roles_of(ctx: Context, problem):
    """(role_of_turn, roles, trained roles) of the task's episodes, asked from one built episode."""
    env = ctx.task.make(problem, ctx.env_config)
    return env.role_of_turn, tuple(env.roles), tuple(getattr(env, "trained_roles", env.roles))


def mask_untrained_turns(samples, role_of_turn, trained) -> list[tuple[int, int, int]]:
    """Set the loss mask of every turn written by a role outside ``trained`` to 0, in place; returns the
    (sample index, start, end) spans that were masked."""
    masked = []
    for i, s in enumerate(samples):
        for k, (a, b) in enumerate(s.turn_spans):
            if role_of_turn(k) not in trained:
                s.loss_mask[a:b] = [0] * (b - a)
                masked.append((i, a, b))
    return masked


def role_token_advantages(samples, role_of_turn, roles, group_size: int, width: int,
                          scale_rewards: bool = True) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """(N, width) per-token advantages A^{rho(k)}_i on each turn's tokens (0 elsewhere) and the per-role
    (N,) advantages they were taken from."""
    per_role = {}
    for role in roles:
        rewards = torch.tensor([float((s.info.get("role_rewards") or {}).get(role, 0.0)) for s in samples],
                               dtype=torch.float32)
        per_role[role] = group_advantages(rewards, group_size, scale_rewards)
    adv = torch.zeros((len(samples), width), dtype=torch.float32)
    for i, s in enumerate(samples):
        for k, (a, b) in enumerate(s.turn_spans):
            adv[i, a:min(b, width)] = per_role[role_of_turn(k)][i]
    return adv, per_role


class RoleGRPO(GRPO):
    """GRPO with per-role advantages for one policy playing every role of a multi-agent episode."""

    name = "role-grpo"

    Config = Config
    ADVANTAGE = (r"\hat A_{i,t}=A^{\rho(k(t))}_i,\ A^{\rho}_i=\frac{r^{\rho}_i-\mathrm{mean}_{g(i)} r^{\rho}}"
                 r"{\mathrm{std}_{g(i)} r^{\rho}}")

    @classmethod
    def check(cls, cfg: Config, train, env_spec) -> None:
        super().check(cfg, train, env_spec)
        if cfg.dynamic_sampling:
            raise ConfigError("role-grpo's advantages are per role: leave --dynamic-sampling off",
                              field="dynamic_sampling")
        if cfg.overlong_buffer:
            raise ConfigError("--overlong-buffer: role-grpo does not shape role rewards by length; leave it 0",
                              field="overlong_buffer")
        if not hasattr(env_spec.build, "role_of_turn"):
            raise ConfigError(f"--algo role-grpo needs a multi-role environment (an env class with role_of_turn and "
                              f"roles, reporting info['role_rewards']); --env {env_spec.name} has no roles",
                              field="env")

    def collect(self, ctx: Context, problems: list):
        batch, stats = collect_batch(ctx, problems)
        role_of_turn, _, trained = roles_of(ctx, problems[0])
        for i, a, b in mask_untrained_turns(batch.samples, role_of_turn, trained):
            batch.full["loss_mask"][i, a:b] = 0.0
        return batch, stats

    def advantages(self, ctx: Context, batch: RolloutBatch):
        role_of_turn, roles, _ = roles_of(ctx, ctx.pool[0])
        width = batch.full["loss_mask"].shape[1]
        adv, _ = role_token_advantages(batch.samples, role_of_turn, roles, batch.group_size, width,
                                       self.cfg.scale_rewards)
        return adv, torch.ones(len(batch.samples), dtype=torch.bool)

    def update(self, ctx: Context, batch: RolloutBatch):
        metrics = super().update(ctx, batch)
        role_of_turn, roles, _ = roles_of(ctx, ctx.pool[0])
        for role in roles:  # each role's mean reward in this batch, beside the team reward the trainer logs
            values = [float((s.info.get("role_rewards") or {}).get(role, 0.0)) for s in batch.samples]
            metrics.add(f"reward_{role}", sum(values) / max(len(values), 1), float(len(values)))
        return metrics


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("solver-verifier-role-grpo", "Solver and verifier played by one policy (role-credit GRPO)",
                   "role-grpo", "solver-verifier", "Two roles in one episode on arithmetic: a solver proposes an answer with its work, a verifier "
                   "accepts or rejects it with a reason, the solver revises after a rejection; one shared policy "
                   "plays both and each role's tokens get that role's own group-relative advantage.",
                   nodes=("multi-agent", "mas-rl-based"),
                   changes="Keeps what RL-trained multi-agent LLM systems (ReMA-style shared-parameter role play, "
                           "solver/verifier and debate pipelines) have in common: several roles with their own "
                           "rewards acting in turn on one task, a fixed interaction protocol, and per-role credit "
                           "(the solver is paid for the final answer; the verifier for the final answer and for "
                           "each right accept/reject, weights an option). The train_roles option freezes one role "
                           "(its turns are loss-masked) while the policy still plays it. Simplifies: both roles "
                           "share one transcript and one set of weights (no separate agents or contexts), two "
                           "roles, integer arithmetic in three levels, at most a few revision rounds, and no "
                           "negotiation or persuasion. The RL-free baseline is the same pipeline untrained: "
                           "python -m reference_impls.measure.mas_pipeline on the same held-out problems.",
                   paper="ReMA: Learning to Meta-think for LLMs with Multi-Agent Reinforcement Learning (Wan et al.; "
                         "arXiv 2503.09501) for shared-parameter role play; the advantage is GRPO's, per role"),
    Implementation("solver-verifier-train-verifier", "Train only the verifier (solver frozen in what it learns)",
                   "role-grpo", "solver-verifier", "The solver-verifier pipeline with only the verifier's turns trained; the same policy still "
                   "writes the solver's turns, with no loss on them.",
                   env_options={"train_roles": ("verifier",)},
                   changes="train_roles=verifier: the solver's tokens get loss mask 0, so only accept/reject "
                           "decisions (and their reasons) are reinforced, by the verifier's own reward.",
                   equation=r"m_{i,t}=0\ \text{on solver turns}"),
)

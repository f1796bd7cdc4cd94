r"""ProRL: Prolonged RL (Liu et al. 2025, arXiv 2505.24864): KL control with periodic reference resets.

Long RL runs need a KL penalty to the reference policy to stay stable (entropy collapse, drift), but a KL
term anchored to the *initial* model grows to dominate the loss and stalls learning. ProRL keeps the KL
term of GRPO's objective (the k3 estimator, weight beta; the paper's eq. 4, Sec. 2.3.1, on GRPO's eq. 1-2 with
DAPO's decoupled clip, eq. 3; numbers checked against arXiv 2505.24864v1)::

    J(theta) = J_GRPO-clip(theta) - beta * D_KL(pi_theta || pi_ref)      (minimised here as L = -J)

and every ``prorl_reset_every`` steps hard-resets the reference to the current policy, pi_ref <- pi_theta,
and re-initialises the optimizer's moment estimates (the paper's reference policy reset, Sec. 2.3.1). The
paper resets when a validation score stagnates or degrades (Sec. 3.3), not on a fixed schedule; a fixed
period is what a run without a validation set can do, and is the one difference from the paper. Its other
stabilisers are DAPO's, available as GRPO's switches and set by the implementation: decoupled clipping
(eps_low 0.2, eps_high 0.4) and dynamic sampling (groups with equal rewards are dropped).

The reset happens in ``collect``, before the step's reference log-probs are computed, so step k's KL is
against the policy at the latest reset. The reference is returned by ``modules()``, so checkpoints save it
and a resumed run continues against the same reference.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import torch

from . import grpo
from ...algorithm import Context
from ...options import ConfigError, option


@dataclass
class Config(grpo.Config):
    """GRPO's switches (beta > 0 required) plus the reset period."""

    beta: float = option(0.0001, "Weight of the k3 KL penalty to the reference (ProRL needs it > 0).", low=0.0,
                         high=10.0)
    prorl_reset_every: int = option(100, "Steps between reference-policy resets (pi_ref <- pi_theta, optimizer "
                                    "state cleared).", low=1, high=1_000_000)


def reset_reference(ctx: Context) -> None:
    """pi_ref <- pi_theta, and AdamW's moments start afresh."""
    with torch.no_grad():
        ctx.ref.load_state_dict(ctx.policy.state_dict())
    ctx.optimizer.state = defaultdict(dict)


class ProRL(grpo.GRPO):
    """GRPO with a KL penalty whose reference is reset to the policy every few steps (ProRL)."""

    name = "prorl"

    Config = Config
    SETTING = r"\pi_{\mathrm{ref}}\leftarrow\pi_\theta\ \text{(and the optimizer's moments reset) every}\ N\ \text{steps}"

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.ref = ctx.ref

    @classmethod
    def check(cls, cfg: Config, train, env_spec) -> None:
        super().check(cfg, train, env_spec)
        if cfg.beta <= 0:
            raise ConfigError("--beta: ProRL resets the reference of its KL penalty; it needs --beta > 0", field="beta")

    def modules(self) -> dict[str, torch.nn.Module]:
        return {"prorl_reference": self.ref}

    def collect(self, ctx: Context, problems: list):
        if ctx.step > 0 and ctx.step % self.cfg.prorl_reset_every == 0:
            reset_reference(ctx)
        return super().collect(ctx, problems)

    def update(self, ctx: Context, batch):
        metrics = super().update(ctx, batch)
        metrics.add("prorl_resets", ctx.step // self.cfg.prorl_reset_every)
        return metrics


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "calculator-prorl", "ProRL tool agent (calculator)", "prorl", "calculator", "GRPO with a KL penalty whose reference policy is reset to the current policy every N steps, plus DAPO's "
        "decoupled clipping and dynamic sampling.",
        {"beta": 0.0001, "prorl_reset_every": 100, "epsilon_high": 0.4, "dynamic_sampling": True},
        nodes=("alg-prorl",),
        changes="A KL penalty keeps long runs stable, but anchored to the starting model it grows until it blocks "
                "progress. ProRL keeps the KL term and periodically replaces the reference with the current policy "
                "(clearing the optimizer's moments), so the penalty limits each stretch of training rather than "
                "all of it. Its other stabilisers are DAPO's clip-higher (0.2/0.4) and dynamic sampling. The paper "
                "resets whenever a validation score stalls or drops; here resets come every N steps."
                " Defaults: KL weight 1e-4, clip 0.2/0.4 and dynamic sampling as the paper's recipe; "
                "resets every 100 steps instead of on a validation stall.",
        paper="ProRL: Prolonged Reinforcement Learning Expands Reasoning Boundaries in Large Language Models "
              "(Liu et al., 2025), arXiv 2505.24864"),
)

r"""StarPO / StarPO-S: trajectory-level optimisation of multi-turn agents (Wang et al. 2025, "RAGEN:
Understanding Self-Evolution in LLM Agents via Multi-Turn Reinforcement Learning", arXiv 2504.20073).

StarPO (State-Thinking-Actions-Reward Policy Optimisation) treats a whole multi-turn interaction
tau = (s_0, a_0, r_0, s_1, ..., s_K) as one sample: the agent reasons before each action, the environment
answers, and one trajectory-level objective covers every model token of every turn (env tokens are
masked). With the critic-free GRPO estimator (the paper's StarPO-GRPO variant)::

    J(theta) = E_tau [ (1/|tau|) sum_t m_t min(w_t A(tau), clip(w_t, 1 - eps_low, 1 + eps_high) A(tau)) ]
    A(tau_i) = (R(tau_i) - mean_group R) / std_group R,   R(tau) = sum of the trajectory's rewards

StarPO-S adds three stabilisers against the "echo trap" collapse the paper reports (Sec. 4.2):

    trajectory filtering   keep only the top int(``keep_fraction`` * P) groups (at least one) by the std of
                           their rewards
                           (uncertainty-based filtering, U(pi, M, s_0) = Std_{tau ~ pi(.|s_0)} R(tau): low-variance
                           groups teach little and drive collapse; the paper's default keeps 25%)
    critic incorporation   the paper's StarPO-S runs PPO with a critic; this class is the critic-free GRPO
                           instantiation (which the paper also trains under StarPO-S, Fig. 5); PPO with a
                           value head is ppo.py
    gradient shaping       decoupled clip range, eps_high > eps_low (DAPO's clip-higher), and no KL term
                           (beta = 0)

On the calculator each turn is "free text, then one <calc> call" with the result as the next state, so the
model may reason before each action; no separate <think> tag is enforced.

Checked (issue 19, docs/algorithms_grpo_family.md) against a full-text copy of arXiv 2504.20073v2 (26 May
2025): Sec. 2.2 (J_StarPO = E_tau[R(tau)]), Sec. 2.2.3 (the GRPO instantiation: trajectory-level normalised
advantage and the per-trajectory token mean, (1/G) sum_i (1/|tau_i|) sum_t), Sec. 4.2 (StarPO-S: uncertainty
filter, keep 25%, KL removal and clip-higher). The paper's equations are unnumbered, so none is cited by number.
It agrees with the code above except: the paper's StarPO-S also incorporates a critic (see above), and its
training adds an entropy bonus (0.001) and a format penalty (-0.1) (Sec. 3.2) that this class does not.
The number of groups kept follows the authors' code (github.com/RAGEN-AI/RAGEN, ``ragen/trainer/agent_trainer.py``:
int(p P), rounded down; it differs from ceil(p P) at P = 5, 6, 7 and 10 with p = 0.25), kept at one or more.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...algorithm import Context, RolloutBatch
from .grpo import GRPO
from .grpo import Config as GRPOConfig
from ...options import option


@dataclass
class Config(GRPOConfig):
    """GRPO's switches (StarPO-S defaults: clip-higher 0.28, beta 0) plus uncertainty filtering."""

    epsilon_high: float = option(0.28, "Clip range above 1 (StarPO-S clip-higher).", low=0.0, high=10.0)
    keep_fraction: float = option(0.25, "StarPO-S trajectory filtering: share of groups kept, those with the "
                                  "largest reward std (1 = keep all).", low=0.0, high=1.0)


def variance_filter(rewards: torch.Tensor, group_size: int, keep_fraction: float) -> torch.Tensor:
    """Per-sample keep mask: the int(keep_fraction * P) groups with the largest reward std, rounded down as
    RAGEN's ``agent_trainer.py`` (``topk(int(rollout_filter_ratio * num_groups))``), but at least one group
    (RAGEN asserts its batch keeps enough; here a step always trains); ties: earlier group first."""
    grouped = rewards.view(-1, group_size)
    P = grouped.shape[0]
    n_keep = max(1, min(P, int(keep_fraction * P + 1e-9)))  # + 1e-9: 0.3 * 10 is 2.9999999999999996
    std = grouped.std(dim=1) if group_size > 1 else torch.zeros(P)
    order = sorted(range(P), key=lambda g: (-float(std[g]), g))
    keep_groups = torch.zeros(P, dtype=torch.bool)
    keep_groups[order[:n_keep]] = True
    return keep_groups.repeat_interleave(group_size)


class StarPO(GRPO):
    """GRPO on whole multi-turn trajectories with StarPO-S's variance filtering and clip-higher."""

    name = "starpo"

    Config = Config
    SETTING = r"\text{groups kept: the top }p\text{ by }\mathrm{std}_g(r)"

    def advantages(self, ctx: Context, batch: RolloutBatch):
        advantages, keep = super().advantages(ctx, batch)
        return advantages, keep & variance_filter(batch.rewards, batch.group_size, self.cfg.keep_fraction)


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-starpo", "StarPO-S tool agent (calculator)", "starpo", "calculator", "Trajectory-level GRPO on multi-turn episodes with variance filtering and clip-higher.",
                   nodes=("alg-starpo",),
                   changes="The whole multi-turn episode (reasoning text and a tool call per turn, tool results "
                           "masked) is one trajectory with one group-relative advantage. StarPO-S's stabilisers are "
                           "on: only the quarter of groups with the largest reward spread are trained on, the clip "
                           "range is asymmetric (0.2 / 0.28) and there is no KL term or critic. The paper's StarPO-S "
                           "also brings in a critic (PPO) as its third stabiliser; this row is the critic-free GRPO "
                           "form the paper trains as well, without its entropy bonus and format penalty."
                           " Defaults as the paper's StarPO-S: keep the top 25% of groups by reward "
                           "spread (int(0.25 P), at least one, rounded down as RAGEN's agent_trainer.py), clip "
                           "0.2/0.28, no KL.",
                   paper="RAGEN: Understanding Self-Evolution in LLM Agents via Multi-Turn Reinforcement Learning "
                         "(arXiv 2504.20073)"),
)

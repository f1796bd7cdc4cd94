r"""PF-PPO: PPO trained only on the samples whose rewards are reliable (Zhang, Shen et al., arXiv 2409.06957;
the copy read here is titled "Policy Filtration in RLHF to Fine-Tune LLM for Code Generation", while the
Implementation row cites the title "Policy Filtration for RLHF to Mitigate Noise in Reward Models").

The paper's observation: a reward model is more trustworthy where it gives high or low rewards than in the
middle, so a policy update from every sample carries much reward noise. PF-PPO wraps the policy pi_theta in
a filtered policy mu_theta and runs ordinary PPO (critic, GAE, clipped losses, KL-in-reward: see ``ppo.py``)
on mu_theta's samples only.

The paper's definitions (numbers as in the text read, see docs/algorithms_dpo_ppo_families.md)::

    PPO's per-episode reward                                                           (Eq. (4))
        r_phi(y|c) - sum_t beta * ( log pi_theta(y_t|c, y_<t) - log pi_SFT(y_t|c, y_<t) )
    filtered policy mu_theta (Section 4, unnumbered): sample N responses from pi_theta, rank them
        by reward r(y_1) >= ... >= r(y_N), draw one index with probabilities w:
        w_BoN = (1, 0, ..., 0)
        w_BR  = (1/2, 1/(2(N-1)), ..., 1/(2(N-1)))
        w_BW  = (1/2, 0, ..., 0, 1/2)
    objective                                                                          (Eq. (5))
        max_theta E_c E_{y ~ mu_theta(.|c)} [ r_phi(y|c) - beta KL( mu_theta(.|c) || pi_SFT(.|c) ) ]
    Algorithm 2: fill the buffer with mu_theta's samples, update pi_theta with PPO on Eq. (4)'s reward.

The weights are picked by the R^2 between reward and true score on the filtered samples (the paper's
Table 1: BW highest, then BR; BoN below no filter). In its code results (Table 2) BR and BW are the best
two variants (BR on HumanEval and LeetCode, BW on MBPP) and BoN is worse than unfiltered PPO.

Filters over one prompt's N = G samples with rewards r_1..r_N (``policy_filter``)::

    best_worst   keep argmax_i r_i and argmin_i r_i                     (w_BW)
    best_random  keep argmax_i r_i and one other sample drawn uniformly (w_BR)
    best_of_n    keep argmax_i r_i only                                 (w_BoN)

Where we differ: the paper draws one index per mu_theta sample from the categorical w; we keep both
outcomes of w_BW (best and worst, once each), and for w_BR the best plus one uniformly drawn other, so
the kept set has w's proportions (1/2 best, 1/2 spread over the rest) without a second random draw per
sample. The paper's cost table (Table 4) has N = 5 responses per query, of which PF-PPO (BR / BW) trains
on 2 on average: the two per prompt we keep. Ties (the paper does not discuss them): the best is the
first index of the maximum, the worst the last index of the minimum, so a group whose rewards are all
equal still keeps two different samples under ``best_worst``.

Here the reward is the environment's exact verdict, not a learned reward model, so there is no reward
noise to filter; what the filter still changes is which samples the update sees (a contrastive pair per
prompt instead of all N), and the switch lets the two be compared on the same task.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...algorithm import Context, RolloutBatch
from ...options import option
from .ppo import PPO
from .ppo import Config as PPOConfig


@dataclass
class Config(PPOConfig):
    """PPO's switches plus the sample filter."""

    policy_filter: str = option("best_worst", "Which samples of each prompt PPO trains on: best_worst (highest and "
                                "lowest reward), best_random (highest and one random other) or best_of_n (highest).",
                                choices=("best_worst", "best_random", "best_of_n"))


def filter_indices(rewards: torch.Tensor, group_size: int, rule: str, generator=None) -> list[int]:
    """Row indices kept by the filter, group by group, in increasing order within each group."""
    grouped = rewards.view(-1, group_size)
    kept = []
    for g, row in enumerate(grouped):
        best = int(torch.argmax(row))  # first index of the maximum
        chosen = {best}
        if rule == "best_worst" and group_size > 1:
            worst = group_size - 1 - int(torch.argmin(row.flip(0)))  # last index of the minimum
            chosen.add(worst if worst != best else (best + 1) % group_size)
        elif rule == "best_random" and group_size > 1:
            other = int(torch.randint(0, group_size - 1, (1,), generator=generator))
            chosen.add(other if other < best else other + 1)  # uniform over the G - 1 others
        elif rule not in ("best_worst", "best_random", "best_of_n"):
            raise ValueError(f"policy_filter must be best_worst, best_random or best_of_n, not {rule!r}")
        kept += [g * group_size + i for i in sorted(chosen)]
    return kept


def subset(batch: RolloutBatch, rows: list[int]) -> RolloutBatch:
    """The batch restricted to ``rows`` (tensors keep their width: completions share a common start)."""
    index = torch.tensor(rows, dtype=torch.long)
    full = {k: (v[index.to(v.device)] if torch.is_tensor(v) else v) for k, v in batch.full.items()}
    ref = batch.ref_logps[index.to(batch.ref_logps.device)] if batch.ref_logps is not None else None
    return RolloutBatch(samples=[batch.samples[i] for i in rows], rewards=batch.rewards[index],
                        lengths=batch.lengths[index], full=full, ref_logps=ref, group_size=1)


class PFPPO(PPO):
    """PPO on the filtered samples (module docstring)."""

    name = "pf-ppo"

    Config = Config
    SETTING = r"\text{trained on }\{o_{\arg\max_i r_i},\,o_{\arg\min_i r_i}\}\text{ of each group}"

    @classmethod
    def setting_latex(cls, cfg: Config) -> str:
        kept = {"best_worst": r"o_{\arg\max_i r_i},\,o_{\arg\min_i r_i}",
                "best_random": r"o_{\arg\max_i r_i},\,o_{j\sim U(\text{others})}",
                "best_of_n": r"o_{\arg\max_i r_i}"}[cfg.policy_filter]
        return rf"\text{{trained on }}\{{{kept}\}}\text{{ of each group}}"
    min_group_size = 2

    def update(self, ctx: Context, batch: RolloutBatch) -> dict:
        rows = filter_indices(batch.rewards, batch.group_size, self.cfg.policy_filter)
        metrics = super().update(ctx, subset(batch, rows))
        kept = batch.rewards[rows]
        metrics.update(groups_kept_frac=len(rows) / max(len(batch.samples), 1),
                       filtered_reward_mean=float(kept.mean()) if len(rows) else 0.0)
        return metrics


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-pf-ppo", "PF-PPO tool agent (calculator)", "pf-ppo", "calculator", "PPO with a critic, trained only on each prompt's highest- and lowest-reward samples.",
                   {"policy_filter": "best_worst"}, nodes=("alg-pf-ppo",),
                   changes="Samples G responses per prompt as usual, then keeps only the best and the worst by reward "
                           "(or best and a random one, or only the best) and runs unchanged PPO with its critic on "
                           "that subset. The paper does this because a learned reward model is most reliable at the "
                           "extremes; our calculator reward is exact, so here the filter only changes which samples "
                           "the update sees. The paper draws each training sample from a filtered policy (best or "
                           "worst with probability 1/2 each; or best with 1/2 and any other with the rest); we keep "
                           "the best and the worst (or the best and one random other) once each, the same "
                           "proportions without a random draw."
                           " Defaults against the paper: N is the run's group size (the paper: 5 "
                           "responses per query) and the PPO settings are ppo.py's, not the paper's.",
                   paper="Policy Filtration for RLHF to Mitigate Noise in Reward Models (Zhang et al. 2024, arXiv 2409.06957)"),
)

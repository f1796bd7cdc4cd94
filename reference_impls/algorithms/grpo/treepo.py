r"""TreePO: tree-structured sampling with shared prefixes and tree-based advantages (Li et al. 2025, "TreePO:
Bridging the Gap of Policy Optimization and Efficacy and Inference Efficiency with Heuristic Tree-based
Modeling", arXiv 2508.17445).

Instead of G independent samples, a group is a tree: samples share prefixes and branch at segment
boundaries, so shared segments are generated (and prefilled) once. Here the segments are the turns of the
multi-turn episode (a model turn and the tool's answer), so branches start right after a tool result::

    level 0   G / b root samples of the prompt, run to the end
    level 1   each root with a turn boundary branches b - 1 times at its first boundary (after the first
              tool result) and the branches run to the end; a root that answered in one turn (no boundary)
              gets b - 1 fresh samples instead. The group has G leaves.

Advantages are computed per tree node and averaged over the nodes a leaf belongs to (the paper's
tree-based/segment-level advantage estimation, in its simple average form)::

    A_i = (1 / |N(i)|) sum_{n in N(i)} (r_i - mean_{j in n} r_j) / (std_{j in n} r_j + 1e-4)

N(i) = the root (all G leaves) and, when i shares a prefix with siblings, that subtree (0 in a constant
node). The shared prefix is trained once per leaf that contains it, so its tokens receive the summed credit
of the subtree. The paper's segments are fixed token windows with heuristic (probability-guided) branching
and early stopping; here they are tool turns with a fixed branch factor.

Checked against arXiv 2508.17445 (Sec. 2.2-2.3): the objective is its eq. 1 (GRPO with DAPO's clip-higher,
dynamic sampling and token-level loss, all GRPO switches here), ratio and flat advantage eq. 2, segments eq. 3,
nested sub-groups eq. 4, and the tree advantage eq. 5. Our advantage differs from eq. 5: the paper subtracts
each sub-group's mean reward without dividing by that sub-group's std, mean-pools these over the sub-groups
and then divides by one std of the sub-group advantages ("global variance normalization" after
REINFORCE++); we normalise each node by its own std before averaging (above). Both use the sub-groups'
mean rewards as baselines; they scale a leaf's advantage differently when sub-groups differ in spread.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...algorithm import Context, RolloutBatch, batch_from_samples, collect_batch
from .branching import branch, continue_branches, group_normalised, turn_boundaries
from .grpo import GRPO
from .grpo import Config as GRPOConfig
from ...options import ConfigError, option


@dataclass
class Config(GRPOConfig):
    """GRPO's switches plus the tree's branch factor."""

    branch_factor: int = option(2, "Leaves per level-1 subtree: each root branches into this many samples.", low=2,
                                high=64)


def tree_advantages(rewards: list[float], groups: list[int], subtrees: list[int | None],
                    scale: bool = True) -> list[float]:
    """Average over a leaf's tree nodes (its group, and its subtree when not None) of the node-normalised reward."""
    per_node: dict[tuple, list[int]] = {}
    for i, (g, sub) in enumerate(zip(groups, subtrees)):
        per_node.setdefault(("group", g), []).append(i)
        if sub is not None:
            per_node.setdefault(("subtree", g, sub), []).append(i)
    total, count = [0.0] * len(rewards), [0] * len(rewards)
    for members in per_node.values():
        for i, a in zip(members, group_normalised([rewards[i] for i in members], scale)):
            total[i] += a
            count[i] += 1
    return [t / c for t, c in zip(total, count)]


class TreePO(GRPO):
    """GRPO on tree-sampled groups (shared prefixes, branches after tool results) with tree advantages."""

    name = "treepo"

    Config = Config

    @classmethod
    def check(cls, cfg: Config, train, env_spec) -> None:
        super().check(cfg, train, env_spec)
        if train.group_size % cfg.branch_factor:
            raise ConfigError(f"--group-size ({train.group_size}) must be a multiple of --branch-factor "
                              f"({cfg.branch_factor}): each tree has group_size / branch_factor roots")
        if cfg.dynamic_sampling:
            raise ConfigError("TreePO's advantages are per tree node: leave --dynamic-sampling off")

    def collect(self, ctx: Context, problems: list):
        b, G = self.cfg.branch_factor, ctx.train.group_size
        roots, stats = collect_batch(ctx, problems, group_size=G // b)
        envs, children, fresh = [], [], []
        for r, root in enumerate(roots.samples):
            root.info = {**root.info, "subtree": r}
            cuts = turn_boundaries(root)
            if not cuts:
                fresh += [root.group] * (b - 1)
                root.info["subtree"] = None
                continue
            for _ in range(b - 1):
                env, child = branch(ctx.tokenizer, ctx.task, problems[root.group], root, cuts[0],
                                    ctx.rollout_config.env_config)
                child.info = {"subtree": r, "branch_at": cuts[0]}
                envs.append(env)
                children.append(child)
        extra_tokens, extra_s = 0, 0.0
        if children:
            children, st = continue_branches(ctx.policy, ctx.tokenizer, envs, children, ctx.rollout_config)
            for c in children:
                c.info.setdefault("subtree", None)
            extra_tokens, extra_s = st["generated_tokens"], st["rollout_s"]
        if fresh:
            more, st = collect_batch(ctx, [problems[g] for g in fresh], group_size=1)
            for s, g in zip(more.samples, fresh):
                s.group, s.info = g, {**s.info, "subtree": None}
            children += more.samples
            extra_tokens, extra_s = extra_tokens + st["generated_tokens"], extra_s + st["rollout_s"]
        samples = []
        for g in range(len(problems)):
            samples += [s for s in roots.samples if s.group == g] + [s for s in children if s.group == g]
        stats = {**stats, "generated_tokens": stats["generated_tokens"] + extra_tokens,
                 "rollout_s": stats["rollout_s"] + extra_s}
        return batch_from_samples(ctx, samples, G), stats

    def advantages(self, ctx: Context, batch: RolloutBatch):
        subtrees = [s.info.get("subtree") for s in batch.samples]
        adv = tree_advantages(batch.rewards.tolist(), [s.group for s in batch.samples], subtrees,
                              self.cfg.scale_rewards)
        advantages = torch.tensor(adv, dtype=torch.float32)
        return advantages, torch.ones_like(advantages, dtype=torch.bool)


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-treepo", "TreePO tool agent (calculator)", "treepo", "calculator", "Tree-sampled groups: samples share their first tool turn and branch after it; tree advantages.",
                   nodes=("alg-treepo",),
                   changes="A group is sampled as a tree: a few root episodes run to the end, then each branches "
                           "after its first tool result into siblings that share that prefix, so the shared turn is "
                           "generated and prefilled once. Each leaf's advantage averages its reward normalised "
                           "within the whole group and within its subtree. The paper branches at fixed token "
                           "windows with heuristic choices; here segments are tool turns and the branch factor is "
                           "fixed. The paper's eq. 5 subtracts sub-group means, averages and divides by one global "
                           "std; here each sub-group is normalised by its own std before averaging.",
                   paper="TreePO: Bridging the Gap of Policy Optimization and Efficacy and Inference Efficiency with "
                         "Heuristic Tree-based Modeling (arXiv 2508.17445), eqs. 1-5",
                   equation=r"A_i=\frac{1}{|N(i)|}\sum_{n\in N(i)}\frac{r_i-\mathrm{mean}_{j\in n}r_j}{\mathrm{std}_{j\in n}r_j},\quad \mathcal{L}=\mathcal{L}_{\mathrm{GRPO}}(A)"),
)

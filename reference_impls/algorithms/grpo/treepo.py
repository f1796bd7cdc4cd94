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

Advantages (the paper's eq. 5, as the authors' ``compute_tree_reinforce_plus_plus_baseline_outcome_advantage`` in
``verl/trainer/ppo/core_algos.py`` of multimodal-art-projection/TreePO computes it, with
``adv_weight_strategy="average"`` as ``recipe/treepo/run_treepo_train.sh`` sets it): a leaf's reward minus the
mean reward of each tree node it belongs to, averaged over those nodes, then whitened once over the batch's
model tokens (REINFORCE++'s global normalisation; every token of a leaf carries the leaf's value)::

    a_i = (1 / |N(i)|) sum_{n in N(i)} (r_i - mean_{j in n} r_j)
    A_i = (a_i - mean_tok a) / sqrt(var_tok a + 1e-8)      mean and (Bessel) variance over the batch's model tokens

N(i) = the root (all G leaves) and, when i shares a prefix with siblings, that subtree (a node of one leaf
is left out, as in the authors' code). ``tree_advantage = subtree_std`` is the earlier variant kept as an
option: each node normalised by its own std (``(r_i - mean_n) / (std_n + 1e-4)``, 0 in a constant node), then
averaged, with no global step. The shared prefix is trained once per leaf that contains it, so its tokens
receive the summed credit of the subtree. The paper's segments are fixed token windows with heuristic
(probability-guided) branching and early stopping; here they are tool turns with a fixed branch factor.

Checked against arXiv 2508.17445 (Sec. 2.2-2.3): the objective is its eq. 1 (GRPO with DAPO's clip-higher,
dynamic sampling and token-level loss, all GRPO switches here), ratio and flat advantage eq. 2, segments eq. 3,
nested sub-groups eq. 4, and the tree advantage eq. 5. The authors' whitening also subtracts the batch's token
mean, so a constant group inside a varied batch gets a small non-zero advantage there, and here.
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
    tree_advantage: str = option("global_std", "global_std: subtract each tree node's mean reward, average over "
                                 "the leaf's nodes, whiten once over the batch's tokens (eq. 5, the authors' "
                                 "code); subtree_std: normalise each node by its own std, then average.",
                                 choices=("global_std", "subtree_std"))


def tree_advantages(rewards: list[float], groups: list[int], subtrees: list[int | None],
                    scale: bool = True) -> list[float]:
    """Average over a leaf's tree nodes (its group, and its subtree when not None) of the node-centred reward,
    divided by the node's std when ``scale`` (the subtree_std variant; unscaled it is eq. 5's a_i)."""
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


def token_whiten(values: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """(N,) per-leaf values whitened over the batch's model tokens, leaf i counted ``tokens[i]`` times: mean and
    Bessel variance over the tokens, (v - mean) / sqrt(var + 1e-8) (eq. 5's global normalisation)."""
    tokens = tokens.to(torch.float64)
    v = values.to(torch.float64)
    n = tokens.sum()
    if n < 2:
        raise ValueError(f"TreePO's global normalisation needs at least 2 model tokens in the batch, got {int(n)}")
    mean = (v * tokens).sum() / n
    var = ((v - mean) ** 2 * tokens).sum() / (n - 1)
    return ((v - mean) / torch.sqrt(var + 1e-8)).to(values.dtype)


def eq5_advantages(rewards: list[float], groups: list[int], subtrees: list[int | None],
                   tokens: torch.Tensor) -> torch.Tensor:
    """TreePO eq. 5: node-centred rewards averaged over a leaf's nodes, whitened once over the batch's tokens."""
    return token_whiten(torch.tensor(tree_advantages(rewards, groups, subtrees, scale=False)), tokens)


class TreePO(GRPO):
    """GRPO on tree-sampled groups (shared prefixes, branches after tool results) with tree advantages."""

    name = "treepo"

    Config = Config

    @classmethod
    def advantage_latex(cls, cfg: Config) -> str:
        if cfg.tree_advantage == "global_std":
            return (r"\hat A_i=\frac{a_i-\mathrm{mean}_{tok}a}{\mathrm{std}_{tok}a},\ a_i=\frac{1}{|N(i)|}"
                    r"\sum_{n\in N(i)}\big(r_i-\mathrm{mean}_{j\in n}r_j\big)")
        return (r"\hat A_i=\frac{1}{|N(i)|}\sum_{n\in N(i)}\frac{r_i-\mathrm{mean}_{j\in n}r_j}"
                r"{\mathrm{std}_{j\in n}r_j}")

    @classmethod
    def check(cls, cfg: Config, train, env_spec) -> None:
        super().check(cfg, train, env_spec)
        if train.group_size % cfg.branch_factor:
            raise ConfigError(f"--group-size ({train.group_size}) must be a multiple of --branch-factor "
                              f"({cfg.branch_factor}): each tree has group_size / branch_factor roots",
                              field="group_size")
        if cfg.dynamic_sampling:
            raise ConfigError("TreePO's advantages are per tree node: leave --dynamic-sampling off",
                              field="dynamic_sampling")

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
        rewards, groups = batch.rewards.tolist(), [s.group for s in batch.samples]
        if self.cfg.tree_advantage == "global_std":
            tokens = batch.full["loss_mask"].sum(dim=1).cpu()
            advantages = eq5_advantages(rewards, groups, subtrees, tokens).float()
        else:
            advantages = torch.tensor(tree_advantages(rewards, groups, subtrees, self.cfg.scale_rewards),
                                      dtype=torch.float32)
        return advantages, torch.ones_like(advantages, dtype=torch.bool)


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-treepo", "TreePO tool agent (calculator)", "treepo", "calculator", "Tree-sampled groups: samples share their first tool turn and branch after it; tree advantages.",
                   {"loss_type": "dapo", "epsilon_high": 0.28}, nodes=("alg-treepo",),
                   changes="A group is sampled as a tree: a few root episodes run to the end, then each branches "
                           "after its first tool result into siblings that share that prefix, so the shared turn is "
                           "generated and prefilled once. Each leaf's advantage is its reward minus the mean reward "
                           "of the whole group and of its subtree, averaged, then whitened once over the batch's "
                           "tokens (eq. 5, as the authors' code; normalising each subtree by its own std is an "
                           "option). As the authors' training script: clip 0.2 below / 0.28 above, token-level "
                           "loss, no KL. Differences from the paper: segments are tool turns, not token windows "
                           "with probability-guided branching and early stopping; the branch factor is fixed (2; "
                           "the script's trees grow from 2 to 8 first branches); no dynamic sampling (the script "
                           "filters groups on accuracy and resamples) and no overlong shaping (the script: a "
                           "512-token buffer); 16 leaves per prompt in the script, the run's group size here.",
                   paper="TreePO: Bridging the Gap of Policy Optimization and Efficacy and Inference Efficiency with "
                         "Heuristic Tree-based Modeling (arXiv 2508.17445), eqs. 1-5"),
)

r"""ARPO: entropy-based adaptive branching after tool calls, with advantage attribution over shared tokens
(Dong et al. 2025, "Agentic Reinforced Policy Optimization", arXiv 2507.19849).

The paper observes that the policy's token entropy rises right after a tool result comes back: those are
the uncertain steps where extra exploration pays. ARPO spends part of the group's sampling budget there::

    global    N = round(global_fraction * G) full samples per problem; H_0 = mean entropy of a sample's first
              k model tokens (its first turn)
    branch    after each tool result t of each global sample: H_t = mean entropy of the first k model tokens
              after it, dH_t = (H_t - H_0) / log|V| (normalised by the largest possible entropy), and
              P_t = alpha + beta * dH_t. With probability clip(P_t, 0, 1) the sample branches
              ``branches_per_step`` times at that point (the branch shares the prefix, continues from the tool
              result), while the budget lasts (``branch_rule = threshold``: whenever P_t > branch_threshold)
    fill      budget left over (G minus global minus branches) is filled with fresh full samples

Advantage attribution (``attribution``)::

    soft   A_i per sample as GRPO (shared prefix tokens are trained once per sample containing them, with
           each sample's own advantage)
    hard   a token shared by a set S of samples (a parent and the branches cut after it) gets
           mean_{j in S} A_j; a token after the branch point gets the sample's own A_i

Objective: GRPO's clipped surrogate with these (token-level) advantages. Entropies come from one no-grad
forward of the global samples under the current policy (the paper reads them from the sampling pass).
Branches happen only at tool-result boundaries of the calculator (its steps).

Checked against arXiv 2507.19849 (Sec. 3.1-3.2): token entropy is its eq. 3, the entropy change its eq. 4,
the branching rule P_t = alpha + beta * dH_t > tau its eq. 5, the objective GRPO's (its eq. 6) with ratios
shared on shared prefixes (eq. 7); hard and soft attribution are Sec. 3.2 (unnumbered) and the budget refill
is step (4) of Sec. 3.1. The authors' rollout (dongguanting/ARPO,
``ARPO/verl_arpo_entropy/verl/workers/rollout/vllm_rollout/vllm_rollout_with_tools.py``; the scripts under
``ARPO/scripts/``) decides each branch at random: it draws u uniform, and branches when
clip(u - entropy_weight * dH, 0, 1) <= branch_probability, i.e. with probability clip(0.5 + 0.2 dH, 0, 1)
with their settings (branch_probability 0.5, entropy_weight 0.2): our ``branch_rule = random`` with alpha 0.5,
beta 0.2. Their entropy is normalised by log|V| as here. Differences that remain: their H sums the entropy
over the top log-probs of up to 20 generated tokens after each tool result, ours is the mean full-distribution
entropy of the first k = 8 model tokens; their H_0 is a sample's entropy at its first generation round, as
ours. The paper defaults to soft attribution (its Fig. 5); the option defaults to soft too, and the calculator
row runs hard, the variant that changes the update (soft is plain GRPO on the branched samples). The paper's
reward (eq. 8: format, accuracy and a multi-tool bonus) is the environment's own reward here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import torch

from ...algorithm import Context, RolloutBatch, batch_from_samples, collect_batch
from .branching import branch, continue_branches, model_runs, token_advantage_loss, turn_boundaries
from ...common import collate, completion_logprobs
from .grpo import GRPO
from .grpo import Config as GRPOConfig
from ...options import ConfigError, option


@dataclass
class Config(GRPOConfig):
    """GRPO's switches plus ARPO's entropy-guided branching."""

    global_fraction: float = option(0.5, "Share of each group's budget spent on full (global) samples.", low=0.0,
                                    high=1.0)
    entropy_tokens: int = option(8, "k: model tokens whose mean entropy measures a step's uncertainty.", low=1,
                                 high=1024)
    branch_alpha: float = option(0.5, "alpha: base branching score (the authors' branch_probability 0.5).", low=0.0,
                                 high=10.0)
    branch_beta: float = option(0.2, "beta: weight of the normalised entropy rise dH in the score (the authors' "
                                "entropy_weight 0.2).", low=0.0, high=100.0)
    branch_rule: str = option("random", "random: branch with probability clip(alpha + beta * dH, 0, 1), as the "
                              "authors' rollout code; threshold: branch when alpha + beta * dH exceeds "
                              "branch_threshold.", choices=("random", "threshold"))
    branch_threshold: float = option(0.5, "With branch_rule threshold: branch when alpha + beta * dH exceeds this.",
                                     low=0.0, high=10.0)
    branches_per_step: int = option(1, "Branches started at each selected tool-result boundary.", low=1, high=64)
    attribution: str = option("soft", "Advantage of shared tokens: soft (each sample's own, GRPO) or hard (mean "
                              "over the samples sharing the token).", choices=("soft", "hard"))


def branch_score(entropy: list[float], runs: list[tuple[int, int]], k: int, vocab: int, alpha: float,
                 beta: float) -> list[float]:
    """alpha + beta * (H_t - H_0) / log|V| for each model run after the first (a tool-result boundary)."""
    def head(start, end):
        window = entropy[start:min(end, start + k)]
        return sum(window) / max(len(window), 1)

    h0 = head(*runs[0])
    return [alpha + beta * (head(s, e) - h0) / math.log(vocab) for s, e in runs[1:]]


def branch_decisions(scores: list[float], rule: str, threshold: float, uniforms: list[float]) -> list[bool]:
    """Whether each boundary branches: with probability clip(score, 0, 1) (``random``: u < score for a uniform
    draw u per boundary) or when score > threshold (``threshold``)."""
    if rule == "random":
        return [u < min(max(score, 0.0), 1.0) for score, u in zip(scores, uniforms)]
    if rule == "threshold":
        return [score > threshold for score in scores]
    raise ValueError(f"branch_rule must be random or threshold, not {rule!r}")


def hard_token_advantages(samples: list, advantages: list[float], width: int) -> torch.Tensor:
    """(N, width) advantages: a parent's prefix tokens shared with its branches get the mean advantage of the
    samples that contain them; every other token gets its sample's own advantage."""
    out = torch.tensor(advantages, dtype=torch.float32).unsqueeze(1).repeat(1, width)
    row_of = {s.info["node"]: i for i, s in enumerate(samples) if "node" in s.info}
    children: dict[int, list[tuple[int, int]]] = {}
    for i, s in enumerate(samples):
        if "parent" in s.info:
            children.setdefault(row_of[s.info["parent"]], []).append((i, s.info["branch_at"]))
    for p, kids in children.items():
        for t in range(max(cut for _, cut in kids)):
            sharing = [p] + [i for i, cut in kids if cut > t]
            mean = sum(advantages[j] for j in sharing) / len(sharing)
            for j in sharing:
                out[j, t] = mean
    return out


class ARPO(GRPO):
    """GRPO with entropy-guided branching after tool results and optional hard advantage attribution."""

    name = "arpo"

    Config = Config
    SETTING = (r"\text{branch after tool result }t\text{ w.p. }\mathrm{clip}\big(\alpha+\beta\,\tfrac{H_t-H_0}{\log|V|},"
               r"0,1\big)")

    @classmethod
    def setting_latex(cls, cfg: Config) -> str:
        if cfg.branch_rule == "threshold":
            return r"\text{branch after tool result }t\text{ if }\alpha+\beta\,\tfrac{H_t-H_0}{\log|V|}>\tau"
        return cls.SETTING

    @classmethod
    def advantage_latex(cls, cfg: Config) -> str:
        if cfg.attribution == "hard":
            return (r"\hat A_{i,t}=\begin{cases}\mathrm{mean}_{j\in S_t}\hat A_j & t\ \text{shared by}\ S_t\\"
                    r" \hat A_i & \text{otherwise}\end{cases},\ \hat A_i=\frac{r_i-\mathrm{mean}_{g(i)}r}"
                    r"{\mathrm{std}_{g(i)}r}")
        return ""

    @classmethod
    def check(cls, cfg: Config, train, env_spec) -> None:
        super().check(cfg, train, env_spec)
        if cfg.importance_sampling_level != "token":
            raise ConfigError("ARPO's attribution is per token: --importance-sampling-level must be token",
                              field="importance_sampling_level")
        if cfg.dynamic_sampling:
            raise ConfigError("ARPO fills its budget with branches: leave --dynamic-sampling off",
                              field="dynamic_sampling")

    def collect(self, ctx: Context, problems: list):
        c, G = self.cfg, ctx.train.group_size
        n_global = min(G, max(1, round(c.global_fraction * G)))
        first, stats = collect_batch(ctx, problems, group_size=n_global)
        with torch.no_grad():
            full = collate(first.samples, ctx.tokenizer.pad_token_id, ctx.device)
            _, entropy = completion_logprobs(ctx.policy, full, ctx.train.temperature, with_entropy=True)
        vocab = int(ctx.policy.get_input_embeddings().weight.shape[0])
        budget = {g: G - n_global for g in range(len(problems))}
        envs, children = [], []
        for node, s in enumerate(first.samples):
            s.info = {**s.info, "node": node}
            runs, cuts = model_runs(s.loss_mask), turn_boundaries(s)
            if not cuts:
                continue
            scores = branch_score(entropy[node].tolist(), runs, c.entropy_tokens, vocab, c.branch_alpha, c.branch_beta)
            chosen = branch_decisions(scores, c.branch_rule, c.branch_threshold, torch.rand(len(scores)).tolist())
            for cut, go in zip(cuts, chosen):
                for _ in range(c.branches_per_step if go else 0):
                    if budget[s.group] <= 0:
                        break
                    env, child = branch(ctx.tokenizer, ctx.task, problems[s.group], s, cut,
                                        ctx.rollout_config.env_config)
                    child.info = {"parent": node, "branch_at": cut}
                    envs.append(env)
                    children.append(child)
                    budget[s.group] -= 1
        self.branched = len(children)
        if children:
            children, st = continue_branches(ctx.policy, ctx.tokenizer, envs, children, ctx.rollout_config)
            stats = {**stats, "generated_tokens": stats["generated_tokens"] + st["generated_tokens"],
                     "rollout_s": stats["rollout_s"] + st["rollout_s"]}
        fill = [g for g, left in budget.items() for _ in range(left)]
        if fill:
            more, st = collect_batch(ctx, [problems[g] for g in fill], group_size=1)
            for s, g in zip(more.samples, fill):
                s.group = g
            children += more.samples
            stats = {**stats, "generated_tokens": stats["generated_tokens"] + st["generated_tokens"],
                     "rollout_s": stats["rollout_s"] + st["rollout_s"]}
        samples = []
        for g in range(len(problems)):
            samples += [s for s in first.samples if s.group == g] + [s for s in children if s.group == g]
        return batch_from_samples(ctx, samples, G), stats

    def sample_inputs(self, ctx: Context, batch: RolloutBatch):
        if self.cfg.attribution == "soft":
            return None
        advantages, _ = self.advantages(ctx, batch)
        width = batch.full["loss_mask"].shape[1]
        return {"token_advantages": hard_token_advantages(batch.samples, advantages.tolist(), width)}

    def loss_fn(self, ctx: Context, batch: RolloutBatch):
        return partial(token_advantage_loss, cfg=self.cfg, max_completion_length=ctx.train.max_completion_tokens)

    def update(self, ctx: Context, batch: RolloutBatch):
        metrics = super().update(ctx, batch)
        metrics.add("branched_frac", getattr(self, "branched", 0) / max(len(batch.samples), 1))
        return metrics


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-arpo", "ARPO tool agent (calculator)", "arpo", "calculator", "Entropy-guided branching after tool results, with hard advantage attribution on shared tokens.",
                   {"attribution": "hard"}, nodes=("alg-arpo",),
                   changes="Half of each group's budget goes to full episodes; after every tool result whose next "
                           "tokens are more uncertain (higher entropy) than the episode's first turn, the episode "
                           "branches from there, and any budget left is filled with fresh episodes. Tokens shared by "
                           "a parent and its branches get the mean of their advantages, tokens after the branch "
                           "point their own. The calculator's tool turns are the steps. As in the authors' code, "
                           "the entropy change is divided by log|V| and each boundary branches at random with "
                           "probability 0.5 + 0.2 dH (clipped to [0, 1]). Differences: the entropy is the mean "
                           "over the first 8 model tokens after a tool result (the authors' code: top log-probs "
                           "of up to 20 tokens); this row runs hard attribution (the paper's default is soft); "
                           "the group's budget is the run's group size with half global samples (the authors' "
                           "scripts: 16 with 8 initial).",
                   paper="Agentic Reinforced Policy Optimization (arXiv 2507.19849), Sec. 3.1-3.2, eqs. 3-7"),
)

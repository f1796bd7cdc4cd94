r"""KTAE: Key-token Advantage Estimation (Sun et al. 2025, arXiv 2505.16826).

GRPO gives every token of a response the same advantage. KTAE adds to it a per-token value that says how
strongly the token's presence goes with correct rather than wrong rollouts of the same prompt, computed
from the group's own samples (no extra model). For a token v and a group with correct set T and wrong set
F, count the rollouts containing it::

    a = |{o in T : v in o}|   b = |{o in F : v in o}|   c = |T| - a   d = |F| - b        (2 x 2 table)

    Fisher  p  = two-sided p-value of Fisher's exact test on the table (sum of the hypergeometric
                 probabilities of the tables with the same margins that are at most as likely)
            F  = exp(-2 p), and 0 when p = 1 (no evidence either way)
    IG         = H(Y) - H(Y | v present or absent)              information gain on correctness, in bits
    direction  x = asin(sqrt(a/|T|)) - asin(sqrt(b/|F|))       (Cohen's h: + for tokens of correct rollouts)
                   + tf_T / tf_F - tf_F / tf_T                 (frequency contrast, below)
    key(v)     = tau * (2 sigmoid( (alpha F + beta IG) x / (alpha + beta) ) - 1)         in (-tau, tau)

and the token-level advantage is GRPO's plus the key value of the token::

    A_{i,t} = (r_i - mean_j r_j) / (std_j r_j + 1e-6) + key(o_{i,t})          (model tokens only)

The frequency contrast follows the released code: tf_S(v) = f (k1 + 1) / (f + k1 (1 - b + b L_S / L)),
f = share of v among the model tokens of set S, L_S their number, L = (L_T + L_F) / 2, k1 = 2, b = 0.5 (a
BM25-style saturation); 1e-5 guards the ratios. A group with no correct or no wrong rollout has no key
values (the contrast is undefined) and keeps GRPO's advantages; the end-of-sequence token gets none
either. The loss is GRPO's (``grpo.grpo_loss``) with these (N, K) advantages.

Checked against the authors' released code (github.com/xiaolizh1/KTAE): ``verl/workers/actor/compute_key_tokens.py``
(the combination (alpha F + beta IG) x / (alpha + beta), then 2 tau (sigmoid - 1/2)) and every training script
(``examples/grpo_trainer/run_qwen2.5_*.sh``, ``recipe/dapo/run_dapo_qwen2.5_*.sh``: alpha = 1, beta_ig = 2,
top = tau = 1), whose values are the defaults here. Equation numbers: not verified: paper text not available
here (docs/algorithms_grpo_family.md).
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import torch

from . import grpo
from ...algorithm import Context, RolloutBatch
from ...options import option
from .successes import successes

BM25_K1, BM25_B = 2.0, 0.5


@dataclass
class Config(grpo.Config):
    """GRPO's switches plus KTAE's weights."""

    ktae_fisher_weight: float = option(1.0, "alpha: weight of the Fisher-test association.", low=0.0, high=100.0)
    ktae_ig_weight: float = option(2.0, "beta: weight of the information gain (the authors' scripts: 2).", low=0.0,
                                   high=100.0)
    ktae_scale: float = option(1.0, "tau: largest key-token value added to a token's advantage.", low=0.0, high=100.0)


def fisher_p_value(a: int, b: int, c: int, d: int) -> float:
    """Two-sided Fisher exact test p-value of [[a, b], [c, d]]."""
    row, col, n = a + b, a + c, a + b + c + d

    def prob(k: int) -> float:  # hypergeometric P(top-left = k | margins)
        return math.comb(col, k) * math.comb(n - col, row - k) / math.comb(n, row)

    observed = prob(a)
    ks = range(max(0, row + col - n), min(row, col) + 1)
    return min(1.0, sum(p for p in map(prob, ks) if p <= observed * (1 + 1e-9)))


def information_gain(a: int, b: int, c: int, d: int) -> float:
    def h(*counts):
        total = sum(counts)
        return -sum(x / total * math.log2(x / total) for x in counts if x) if total else 0.0

    n = a + b + c + d
    return h(a + c, b + d) - ((a + b) / n * h(a, b) + (c + d) / n * h(c, d))


def key_token_values(tokens: list[list[int]], correct: list[bool], cfg: Config, ignore=()) -> dict[int, float]:
    """key(v) for every token v in a group's model tokens (``tokens[i]``: rollout i's model-token ids)."""
    n_true, n_false = sum(correct), len(correct) - sum(correct)
    if n_true == 0 or n_false == 0:
        return {}
    present = [Counter(), Counter()]  # rollouts containing v, per set (0 = correct, 1 = wrong)
    freq = [Counter(), Counter()]  # occurrences of v, per set
    for ids, ok in zip(tokens, correct):
        present[0 if ok else 1].update(set(ids))
        freq[0 if ok else 1].update(ids)
    lengths = [sum(freq[0].values()), sum(freq[1].values())]
    mean_length = (lengths[0] + lengths[1]) / 2

    def tf(v: int, s: int) -> float:
        f = freq[s][v] / max(lengths[s], 1)
        return f * (BM25_K1 + 1) / (f + BM25_K1 * (1 - BM25_B + BM25_B * lengths[s] / mean_length))

    alpha, beta = cfg.ktae_fisher_weight, cfg.ktae_ig_weight
    values = {}
    for v in set(freq[0]) | set(freq[1]):
        if v in ignore:
            continue
        a, b = present[0][v], present[1][v]
        c, d = n_true - a, n_false - b
        p = fisher_p_value(a, b, c, d)
        fisher = math.exp(-2 * p) if p < 1.0 else 0.0
        direction = math.asin(math.sqrt(a / n_true)) - math.asin(math.sqrt(b / n_false))
        tf_true, tf_false = tf(v, 0), tf(v, 1)
        direction += tf_true / (tf_false + 1e-5) - tf_false / (tf_true + 1e-5)
        score = (alpha * fisher + beta * information_gain(a, b, c, d)) * direction / max(alpha + beta, 1e-12)
        values[v] = cfg.ktae_scale * math.tanh(score / 2)  # = 2 sigmoid(score) - 1, without overflow
    return values


def ktae_advantages(rewards: torch.Tensor, correct: torch.Tensor, token_ids: torch.Tensor, mask: torch.Tensor,
                    group_size: int, cfg: Config, ignore=()) -> torch.Tensor:
    """(N, K) token advantages: the group-normalised reward plus each model token's key value."""
    grouped = rewards.view(-1, group_size)
    base = (grouped - grouped.mean(1, keepdim=True)) / (grouped.std(1, keepdim=True) + 1e-6)
    advantages = base.reshape(-1, 1).expand(-1, token_ids.shape[1]).clone()
    for g in range(grouped.shape[0]):
        rows = range(g * group_size, (g + 1) * group_size)
        tokens = [token_ids[i][mask[i] > 0].tolist() for i in rows]
        keys = key_token_values(tokens, correct[g * group_size:(g + 1) * group_size].tolist(), cfg, ignore)
        for i in rows:
            for t in torch.nonzero(mask[i] > 0).flatten().tolist():
                advantages[i, t] += keys.get(int(token_ids[i, t]), 0.0)
    return advantages * mask


class KTAE(grpo.GRPO):
    """GRPO with key-token advantages from the group's token statistics (KTAE)."""

    name = "ktae"

    Config = Config
    ADVANTAGE = (r"\hat A_{i,t}=\frac{r_i-\mathrm{mean}_{g(i)}r}{\mathrm{std}_{g(i)}r}+\tau\Big(2\sigma\big(\tfrac{(\alpha F"
                 r"+\beta\,\mathrm{IG})\,x}{\alpha+\beta}\big)-1\Big)(o_{i,t})")

    def advantages(self, ctx: Context, batch: RolloutBatch):
        full = batch.full
        K = full["logits_to_keep"]
        token_ids, mask = full["input_ids"][:, -K:].cpu(), full["loss_mask"].cpu()
        advantages = ktae_advantages(batch.rewards, successes(batch), token_ids, mask, batch.group_size, self.cfg,
                                     ignore={ctx.tokenizer.eos_token_id, ctx.tokenizer.pad_token_id})
        return advantages, torch.ones(len(batch.samples), dtype=torch.bool)


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "calculator-ktae", "KTAE tool agent (calculator)", "ktae", "calculator", "GRPO with token-level advantages: each token adds a key value from how it splits correct and wrong rollouts.",
        nodes=("alg-ktae",),
        changes="GRPO credits every token of a response equally. KTAE adds to each token's advantage a bounded value "
                "measuring how strongly that token's presence goes with correct rather than wrong rollouts of the same "
                "prompt: a Fisher exact test and the information gain on a 2x2 presence table set its strength, and a "
                "frequency contrast between correct and wrong rollouts its sign. No extra model is trained; groups "
                "that are all right or all wrong keep GRPO's advantages."
                " Defaults as the authors' training scripts (xiaolizh1/KTAE, run_qwen2.5_*.sh): alpha 1, "
                "beta 2 (information gain), tau 1.",
        paper="KTAE: A Model-Free Algorithm to Key-Tokens Advantage Estimation in Mathematical Reasoning (Sun et al., "
              "2025), arXiv 2505.16826"),
)

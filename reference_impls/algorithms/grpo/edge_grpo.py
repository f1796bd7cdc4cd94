r"""EDGE-GRPO (Zhang et al. 2025, arXiv 2507.21848): entropy-driven advantage and guided error correction.

GRPO's advantages collapse when a group's rewards are (nearly) all equal: every sample then gets the same,
often zero, advantage. EDGE-GRPO attacks this from two sides.

Entropy-driven advantage (EDA). Each sample's advantage is divided by its normalised entropy, the mean
token entropy of the response relative to its group's mean::

    P_i     = (1/|o_i|) sum_t m_{i,t} H(pi_theta(. | q, o_{i,<t}))           mean policy entropy of response i
    P^_i    = P_i / ( (1/G) sum_j P_j )
    A^EDA_i = A_i / P^_i

so a confident (low-entropy) correct answer is pushed up more than an uncertain one, and a confident
wrong answer is pushed down more than an uncertain, exploring one: samples with equal rewards no longer
get equal advantages. The entropies are the sampling policy's (no gradient flows through them).

Guided error correction (GEC). Before advantages are computed, some wrong responses are replaced by
corrected ones, so that a group that failed everywhere still contains a rewarded sample. Of the paper's
corrections (a reflection cue followed by a re-generation, the reflection cue followed by the right
answer, or the reference solution), the two that need no further generation are used here: with
probability ``gec_prob`` a wrong response becomes, with equal chance, either the response followed by
"Wait! Something is wrong here." and the correct final answer, or the environment's demonstration of a
correct solution (on the calculator: the reference tool calls and the answer). A corrected episode scores
reward 1 and its old log-probs are recomputed under the sampling policy (it was not sampled from it).
The loss is GRPO's (``grpo.grpo_loss``).

Equation numbers: not verified: paper text not available here (issue 19's check,
docs/algorithms_grpo_family.md).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from . import grpo
from ...algorithm import Context, RolloutBatch, batch_from_samples, collect_batch
from ...common import collate, completion_logprobs
from ...options import option
from ...rollout import Sample
from .successes import successes

REFLECTION = " Wait! Something is wrong here. "


@dataclass
class Config(grpo.Config):
    """GRPO's switches plus EDGE's two mechanisms."""

    entropy_advantage: bool = option(True, "Divide each advantage by the response's entropy relative to its group "
                                     "(EDA).")
    gec_prob: float = option(0.5, "Probability that a wrong response is replaced by a guided correction (GEC); "
                             "0 = off.", low=0.0, high=1.0)


def entropy_scaled(advantages: torch.Tensor, entropy: torch.Tensor, group_size: int) -> torch.Tensor:
    """A_i / (P_i / mean_group P) for (N,) advantages and mean response entropies; a group whose entropies
    are all 0 keeps its advantages."""
    grouped = entropy.view(-1, group_size)
    mean = grouped.mean(dim=1, keepdim=True)
    relative = torch.where(mean > 0, grouped / mean.clamp(min=1e-12), torch.ones_like(grouped))
    return advantages / relative.clamp(min=1e-6).reshape(-1)


def response_entropy(ctx: Context, samples: list) -> torch.Tensor:
    """(N,) mean token entropy of each response's model tokens under the current policy (no gradient)."""
    out = []
    with torch.no_grad():
        for start in range(0, len(samples), ctx.train.micro_batch_size):
            mb = collate(samples[start:start + ctx.train.micro_batch_size], ctx.tokenizer.pad_token_id, ctx.device)
            _, entropy = completion_logprobs(ctx.policy, mb, ctx.train.temperature, with_entropy=True)
            mask = mb["loss_mask"]
            out.append(((entropy * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).cpu())
    return torch.cat(out)


def corrected_sample(ctx: Context, sample: Sample, problem, use_demonstration: bool) -> Sample:
    """A guided correction of a wrong ``sample`` (module docstring), rewarded 1, old log-probs rescored."""
    from ...sft import demonstration_sample

    tok = ctx.tokenizer
    if use_demonstration:
        new = demonstration_sample(tok, ctx.task, problem, ctx.rollout_config.env_config)
    else:
        # the demonstration's final model turn: the answer
        answer = ctx.task.demonstrate(problem, ctx.rollout_config.env_config)[-1][1]
        ids, mask = list(sample.completion_ids), list(sample.loss_mask)
        while ids and ids[-1] == tok.eos_token_id:  # the correction continues the turn the response ended
            ids.pop(), mask.pop()
        extra = tok(REFLECTION + answer + tok.eos_token, add_special_tokens=False)["input_ids"]
        new = Sample(prompt_ids=list(sample.prompt_ids), completion_ids=ids + extra, loss_mask=mask + [1] * len(extra),
                     segments=list(sample.segments) + [{"role": "model", "text": REFLECTION + answer}])
    new.group, new.turns, new.done = sample.group, sample.turns, True
    new.reward, new.info = 1.0, {"correct": True, "guided_correction": True}
    new.old_logprobs = [0.0] * len(new.completion_ids)  # placeholders for collate; rescored just below
    with torch.no_grad():
        mb = collate([new], tok.pad_token_id, ctx.device)
        logps, _ = completion_logprobs(ctx.policy, mb, ctx.train.temperature)
    new.old_logprobs = logps[0, :len(new.completion_ids)].tolist()
    return new


class EDGEGRPO(grpo.GRPO):
    """GRPO with entropy-driven advantages and guided error correction (EDGE-GRPO)."""

    name = "edge-grpo"

    Config = Config

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.corrected = 0

    def collect(self, ctx: Context, problems: list):
        batch, stats = collect_batch(ctx, problems)
        self.corrected = 0
        if self.cfg.gec_prob <= 0:
            return batch, stats
        rng = random.Random(ctx.train.seed * 7919 + ctx.step)  # a function of (seed, step): resumable
        samples, G, corrected = list(batch.samples), batch.group_size, 0
        for i, ok in enumerate(successes(batch).tolist()):
            if not ok and rng.random() < self.cfg.gec_prob:
                samples[i] = corrected_sample(ctx, samples[i], problems[i // G], use_demonstration=rng.random() < 0.5)
                corrected += 1
        if corrected:
            batch = batch_from_samples(ctx, samples, G)
        self.corrected = corrected
        return batch, stats

    def advantages(self, ctx: Context, batch: RolloutBatch):
        advantages, keep = super().advantages(ctx, batch)
        if self.cfg.entropy_advantage:
            advantages = entropy_scaled(advantages, response_entropy(ctx, batch.samples), batch.group_size)
        return advantages, keep

    def update(self, ctx: Context, batch: RolloutBatch):
        metrics = super().update(ctx, batch)
        # the step's reward_mean / accuracy include the corrected episodes; this says how many there were
        metrics.add("gec_corrected", self.corrected)
        return metrics


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "calculator-edge-grpo", "EDGE-GRPO tool agent (calculator)", "edge-grpo", "calculator",
        "GRPO with entropy-scaled advantages and guided corrections of wrong responses, against advantage collapse.",
        nodes=("alg-edge-grpo",),
        changes="When a group's rewards are all equal GRPO's advantages vanish. EDGE-GRPO divides each advantage by "
                "the response's entropy relative to its group, so confident answers move further than hesitant "
                "ones, and replaces some wrong responses by corrected ones so that failing groups still hold a "
                "rewarded sample. Of the paper's corrections, the two that need no re-generation are used: the "
                "response plus a reflection cue and the right answer, or the calculator's reference solution.",
        paper="EDGE-GRPO: Entropy-Driven GRPO with Guided Error Correction for Advantage Diversity (Zhang et al., "
              "2025), arXiv 2507.21848",
        equation=r"\hat A^{\mathrm{EDA}}_i=\frac{\hat A_i}{\hat P_i},\quad \hat P_i=\frac{P_i}{\frac1G\sum_j P_j},"
                 r"\quad P_i=\frac{1}{|o_i|}\sum_t \mathcal{H}\big(\pi_\theta(\cdot\mid q,o_{i,<t})\big)"),
)

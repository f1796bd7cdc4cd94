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

Guided error correction (GEC), as the authors' code does it (ZhangXJ199/EDGE-GRPO,
``trl_edge/trainer/grpo_aha_trainer.py``): every wrong response is corrected (``gec_prob`` = 1) before
advantages are computed, so that a group that failed everywhere can still hold a rewarded sample. Each
correction is drawn at random: with probability 1/2 the response is followed by the reflection cue "Wait!
Something is wrong here." and the policy writes a continuation from there (one turn, no tool is run, as the
authors' plain re-generation); with probability 1/4 the cue is followed by the right answer; with probability
1/4 the response is replaced by the reference solution (here the environment's demonstration, on the
calculator its tool calls and the answer). Every corrected episode is then scored again by the environment
(a fresh episode replays the response's earlier turns, then the text after the cue as its last turn, so the
answer given after the cue is the one judged, as the authors' verifier reads the last answer; the reference
solution is played back whole), and its old log-probs are recomputed under the sampling policy (it was not
sampled from it). The loss is GRPO's (``grpo.grpo_loss``). Differences from the authors' code: they correct
responses whose reward is below the maximum of accuracy plus format (2), here those the environment marks not
correct; their cue for the answer says "After verification, the correct answer is" before it; their
re-generation may write up to 256 tokens, here ``max_new_tokens_per_turn``.

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
from ...envs import step_all
from ...options import option
from ...rollout import Sample, _as_list
from .luffy import demonstration_with_reward
from .successes import successes

REFLECTION = " Wait! Something is wrong here. "
#: the authors' split of the corrections: (kind, probability)
GEC_KINDS = (("regenerate", 0.5), ("answer", 0.25), ("reference", 0.25))


@dataclass
class Config(grpo.Config):
    """GRPO's switches plus EDGE's two mechanisms."""

    entropy_advantage: bool = option(True, "Divide each advantage by the response's entropy relative to its group "
                                     "(EDA).")
    gec_prob: float = option(1.0, "Probability that a wrong response is replaced by a guided correction (GEC); "
                             "1 = every one, as the authors' code; 0 = off.", low=0.0, high=1.0)


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


def gec_kind(u: float) -> str:
    """The correction a uniform draw ``u`` picks: regenerate after the cue (1/2), the cue and the right answer
    (1/4), the reference solution (1/4)."""
    edge = 0.0
    for kind, p in GEC_KINDS:
        edge += p
        if u < edge:
            return kind
    return GEC_KINDS[-1][0]


def rescore(ctx: Context, problem, sample: Sample, final_text: str) -> tuple[float, dict]:
    """The environment's reward and info for a corrected response: a fresh episode replays the response's
    model turns before its last, then ``final_text`` (what follows the cue) as the last turn; a last turn that
    does not end the episode (no answer) scores 0."""
    env = ctx.task.make(problem, ctx.rollout_config.env_config)
    env.reset()
    for start, end in sample.turn_spans[:-1]:
        result = step_all([env], [ctx.tokenizer.decode(sample.completion_ids[start:end], skip_special_tokens=True)])[0]
        if result.done:
            return float(result.reward), dict(result.info)
    result = step_all([env], [final_text])[0]
    return (float(result.reward), dict(result.info)) if result.done else (0.0, {"correct": False})


def continuations(ctx: Context, prefixes: list[list[int]], stop_strings) -> list[list[int]]:
    """One sampled turn of the policy after each token prefix (prompt, response, cue)."""
    from ...generate_engine import GenerateTurns  # transformers: imported when a continuation is sampled

    if not prefixes:
        return []
    model, tok = ctx.policy, ctx.tokenizer
    eos_ids = {tok.eos_token_id} | set(_as_list(model.generation_config.eos_token_id))
    turns = GenerateTurns(model, tok, stop_strings, eos_ids, ctx.rollout_config)
    rows = [Sample(prompt_ids=list(p), completion_ids=[]) for p in prefixes]
    was = model.training
    model.eval()
    with torch.no_grad():
        outs = turns(rows, list(range(len(rows))), [ctx.rollout_config.max_new_tokens_per_turn] * len(rows))
    model.train(was)
    return [list(o.tokens) for o in outs]


def without_eos(sample: Sample, eos_id: int) -> tuple[list[int], list[int]]:
    """The response's ids and loss mask without its trailing EOS (the correction continues that turn)."""
    ids, mask = list(sample.completion_ids), list(sample.loss_mask)
    while ids and ids[-1] == eos_id:
        ids.pop(), mask.pop()
    return ids, mask


def corrected_sample(ctx: Context, sample: Sample, problem, kind: str, continuation: list[int] | None = None) -> Sample:
    """A guided correction of a wrong ``sample`` (module docstring), scored again by the environment, old
    log-probs rescored. ``continuation``: the policy's tokens after the cue (kind ``regenerate``)."""
    tok = ctx.tokenizer
    if kind == "reference":
        new = demonstration_with_reward(tok, ctx.task, problem, ctx.rollout_config.env_config)
        reward, info = new.reward, dict(new.info)
    else:
        ids, mask = without_eos(sample, tok.eos_token_id)
        cue = tok(REFLECTION, add_special_tokens=False)["input_ids"]
        if kind == "answer":  # the demonstration's final model turn: the answer
            tail_text = ctx.task.demonstrate(problem, ctx.rollout_config.env_config)[-1][1]
            tail = tok(tail_text + tok.eos_token, add_special_tokens=False)["input_ids"]
        elif kind == "regenerate":
            tail = list(continuation or [])
            tail_text = tok.decode(tail, skip_special_tokens=True)
        else:
            raise ValueError(f"a guided correction is regenerate, answer or reference, not {kind!r}")
        extra = cue + tail
        spans = list(sample.turn_spans) or [(len(ids), len(ids))]
        spans[-1] = (spans[-1][0], len(ids) + len(extra))  # the cue and what follows close the last turn
        new = Sample(prompt_ids=list(sample.prompt_ids), completion_ids=ids + extra, loss_mask=mask + [1] * len(extra),
                     turn_spans=spans,
                     segments=list(sample.segments) + [{"role": "model", "text": REFLECTION + tail_text}])
        reward, info = rescore(ctx, problem, sample, tail_text)
    new.group, new.turns, new.done = sample.group, sample.turns, True
    new.reward, new.info = reward, {**info, "guided_correction": kind}
    new.old_logprobs = [0.0] * len(new.completion_ids)  # placeholders for collate; rescored just below
    with torch.no_grad():
        mb = collate([new], tok.pad_token_id, ctx.device)
        logps, _ = completion_logprobs(ctx.policy, mb, ctx.train.temperature)
    new.old_logprobs = logps[0, :len(new.completion_ids)].tolist()
    return new


def corrections(ctx: Context, samples: list[Sample], problems: list, picks: list[tuple[int, str]]) -> list[Sample]:
    """The corrected samples for ``picks`` = [(row, kind)], re-generations sampled in one batch."""
    tok = ctx.tokenizer
    cue = tok(REFLECTION, add_special_tokens=False)["input_ids"]
    regen = [i for i, kind in picks if kind == "regenerate"]
    stop = ctx.task.make(problems[samples[regen[0]].group], ctx.rollout_config.env_config).stop_strings if regen else ()
    tails = dict(zip(regen, continuations(
        ctx, [samples[i].prompt_ids + without_eos(samples[i], tok.eos_token_id)[0] + cue for i in regen], stop)))
    return [corrected_sample(ctx, samples[i], problems[samples[i].group], kind, tails.get(i)) for i, kind in picks]


class EDGEGRPO(grpo.GRPO):
    """GRPO with entropy-driven advantages and guided error correction (EDGE-GRPO)."""

    name = "edge-grpo"

    Config = Config

    @classmethod
    def advantage_latex(cls, cfg: Config) -> str:
        if not cfg.entropy_advantage:
            return ""
        return (r"\hat A_i=\frac{r_i-\mathrm{mean}_{g(i)}r}{\mathrm{std}_{g(i)}r}\Big/\frac{P_i}{\mathrm{mean}_{g(i)}P},"
                r"\ P_i=\frac{1}{|o_i|}\sum_t \mathcal{H}\big(\pi_\theta(\cdot\mid q,o_{i,<t})\big)")

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.corrected = 0

    def collect(self, ctx: Context, problems: list):
        batch, stats = collect_batch(ctx, problems)
        self.corrected = 0
        if self.cfg.gec_prob <= 0:
            return batch, stats
        rng = random.Random(ctx.train.seed * 7919 + ctx.step)  # a function of (seed, step): resumable
        samples, G = list(batch.samples), batch.group_size
        picks = [(i, gec_kind(rng.random())) for i, ok in enumerate(successes(batch).tolist())
                 if not ok and rng.random() < self.cfg.gec_prob]
        for (i, _), new in zip(picks, corrections(ctx, samples, problems, picks)):
            samples[i] = new
        if picks:
            batch = batch_from_samples(ctx, samples, G)
        self.corrected = len(picks)
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
                "ones, and corrects every wrong response so that failing groups can still hold a rewarded sample, "
                "as the authors' code: half continue after a reflection cue ('Wait! Something is wrong here.') "
                "with the policy writing on, a quarter get the cue and the right answer, a quarter are replaced "
                "by the reference solution (the calculator's demonstration); each correction is scored again by "
                "the environment, the answer after the cue being the one judged. Differences: a response counts "
                "as wrong when the environment says so (the authors: below the full accuracy-plus-format "
                "reward); the re-generation writes one turn of at most max_new_tokens_per_turn tokens (the "
                "authors: up to 256) and runs no tool.",
        paper="EDGE-GRPO: Entropy-Driven GRPO with Guided Error Correction for Advantage Diversity (Zhang et al., "
              "2025), arXiv 2507.21848"),
)

r"""Skywork R1V2's Selective Sample Buffer on GRPO (Skywork AI 2025, "Skywork R1V2: Multimodal Hybrid
Reinforcement Learning for Reasoning", arXiv 2504.16656).

The "vanishing advantages" problem: when every sample of a group gets the same reward, GRPO's advantages
are all 0 and the group contributes no gradient; as the policy improves more and more groups are constant
and the effective batch shrinks. The Selective Sample Buffer (SSB) caches samples that did carry signal
(A != 0) and puts them back into batches that lost samples to constant groups::

    after each rollout     push every sample with A_i != 0 into the buffer (its token ids, loss mask,
                           sampling log-probs and A_i); the buffer keeps the newest ``buffer_size``
    in the update          n = samples of constant groups; replace them by n buffered samples drawn
                           without replacement with probability proportional to |A| (high-|A| first)
    objective              GRPO's clipped surrogate on fresh and replayed samples alike; a replayed sample
                           keeps its stored advantage and its stored pi_old (the policy that sampled it),
                           so the ratio corrects for its age and the clip bounds the step

The buffer is the algorithm's state (``state_dict``: JSON lists of token ids), saved in checkpoints so a
resumed run continues with the same buffer. The paper pairs SSB with MPO (preference optimisation) and a
hybrid reward model; only the buffer (Table 2's "selective sample buffer") is implemented here.

Checked (issue 19, docs/algorithms_grpo_family.md) against the paper's PDF, arXiv 2504.16656v3 (4 June 2025,
from the authors' repository SkyworkAI/Skywork-R1V): Sec. 3.3.1 eq. 6 (group-normalised advantage), eq. 7
(hybrid reward r = r_rule + r_theta + r_format), eq. 8 (GRPO's clipped surrogate, written without a KL term);
Sec. 3.3.2 describes SSB in words only (no equation): cache samples with non-zero advantage, weight them by
|A|, reintroduce them during policy updates. Agrees with eqs. 6 and 8. The paper does not say how many
buffered samples enter a batch, which samples they displace, how large the buffer is or which pi_old a
replayed sample uses: replacing the constant groups' places one for one, the newest ``buffer_size`` entries
and the stored sampling log-probs are this implementation's choices. Its reward is the environment's, not
eq. 7's hybrid.

Data parallel (torchrun): the buffer is one buffer, the same on every rank. Each step the ranks exchange
what they push (``distributed.all_gather_object``, appended in rank order), and the replay draw is made
once from the shared buffer with a rank-independent random stream: it draws the sum of the ranks'
missing samples and rank r takes its consecutive share. So every rank holds identical state, rank 0's
checkpoint is every rank's, and a resumed run continues exactly; one process draws and pushes exactly as
before.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from ... import distributed
from ...algorithm import Context, RolloutBatch, batch_from_samples
from .grpo import GRPO, constant_groups
from .grpo import Config as GRPOConfig
from ...options import option
from ...policy_gradient import policy_gradient_update
from ...rollout import Sample


@dataclass
class Config(GRPOConfig):
    """GRPO's switches plus the selective sample buffer."""

    buffer_size: int = option(256, "Samples with non-zero advantage kept for replay (newest first).", low=1,
                              high=1_000_000)


def to_entry(sample: Sample, advantage: float) -> dict:
    return {"prompt_ids": list(sample.prompt_ids), "completion_ids": list(sample.completion_ids),
            "loss_mask": list(sample.loss_mask), "old_logprobs": [float(x) for x in sample.old_logprobs],
            "reward": float(sample.reward), "advantage": float(advantage)}


def from_entry(entry: dict, group: int) -> Sample:
    return Sample(prompt_ids=list(entry["prompt_ids"]), completion_ids=list(entry["completion_ids"]),
                  loss_mask=list(entry["loss_mask"]), old_logprobs=list(entry["old_logprobs"]),
                  reward=entry["reward"], done=True, group=group,
                  info={"replayed": True, "advantage": entry["advantage"]})


def draw_by_advantage(buffer: list[dict], n: int, rng: random.Random) -> list[int]:
    """Indices of ``n`` entries drawn without replacement, each draw with probability proportional to |A|."""
    pool = list(range(len(buffer)))
    chosen = []
    for _ in range(min(n, len(pool))):
        weights = [abs(buffer[i]["advantage"]) for i in pool]
        k = rng.choices(range(len(pool)), weights=weights)[0]
        chosen.append(pool.pop(k))
    return chosen


class SkyworkSSB(GRPO):
    """GRPO whose constant groups are replaced by replayed high-|advantage| samples."""

    name = "skywork-ssb"

    Config = Config
    SETTING = (r"\mathcal{B}\leftarrow\mathcal{B}\cup\{o_i:\hat A_i\neq0\},\ o\sim\mathcal{B}\ \text{w.p.}\propto|\hat A_o|"
               r"\ \text{replaces constant groups}")

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.buffer: list[dict] = []

    def state_dict(self) -> dict:
        return {"buffer": self.buffer}

    def load_state_dict(self, state: dict) -> None:
        self.buffer = list(state.get("buffer", []))

    def update(self, ctx: Context, batch: RolloutBatch):
        advantages, keep = self.advantages(ctx, batch)
        G = batch.group_size
        constant = constant_groups(batch.rewards.view(-1, G)).repeat_interleave(G, dim=0).view(-1)
        # draw before pushing this batch: a replayed sample is never one of this step's own
        # one draw for all ranks (same buffer, same stream), each rank takes its consecutive share
        missing = [int(n) for n in distributed.all_gather_object(int(constant.sum()))]
        rng = random.Random(ctx.train.seed * 7_919 + ctx.step)
        drawn = draw_by_advantage(self.buffer, sum(missing), rng)
        start = sum(missing[:ctx.rank])
        replay = [self.buffer[i] for i in drawn[start:start + missing[ctx.rank]]]
        pushed = [to_entry(s, float(advantages[i])) for i, s in enumerate(batch.samples) if float(advantages[i]) != 0.0]
        for entries in distributed.all_gather_object(pushed):  # rank order: the same buffer everywhere
            self.buffer.extend(entries)
        self.buffer = self.buffer[-self.cfg.buffer_size:]
        if replay:
            fresh = [i for i in range(len(batch.samples)) if not constant[i] and keep[i]]
            n_groups = int(batch.rewards.numel() // G)
            samples = [batch.samples[i] for i in fresh] + [from_entry(e, n_groups + k) for k, e in enumerate(replay)]
            advantages = torch.cat([advantages[fresh], torch.tensor([e["advantage"] for e in replay])])
            batch = batch_from_samples(ctx, samples, G)
            keep = torch.ones(len(samples), dtype=torch.bool)
        metrics = policy_gradient_update(ctx, batch, advantages, keep, self.loss_fn(ctx, batch),
                                         self.cfg.num_iterations)
        metrics.add("replayed_frac", len(replay) / max(len(batch.samples), 1))
        metrics.add("buffer_size", float(len(self.buffer)))
        return metrics


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-skywork-r1v2", "Skywork R1V2 selective sample buffer (calculator)", "skywork-ssb",
                   "calculator", "GRPO whose constant-reward groups are replaced by replayed high-|advantage| samples.",
                   nodes=("alg-skywork-r1v2",),
                   changes="Samples that carried a non-zero advantage are cached; when groups come back with equal "
                           "rewards (zero advantages), their places in the batch are filled by cached samples drawn "
                           "in proportion to |A|, keeping their advantage and sampling log-probs. This keeps the "
                           "effective batch from shrinking as the policy improves; the paper's MPO stage and hybrid "
                           "reward model are not part of this implementation."
                           " Defaults against the paper: a buffer of 256 samples; the paper gives no "
                           "size.",
                   paper="Skywork R1V2: Multimodal Hybrid Reinforcement Learning for Reasoning (arXiv 2504.16656)"),
)

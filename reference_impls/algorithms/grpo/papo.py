r"""PAPO: GRPO plus an implicit perception loss (Wang et al. 2025, "Perception-Aware Policy Optimization for
Multimodal Reasoning", arXiv 2507.06448), transposed from images to the numbers of a text problem.

PAPO asks the policy's answer to *depend on the input it must perceive*: it maximises the KL divergence
between the policy given the full input and the policy given a corrupted input, on the sampled completion::

    J_PAPO = J_GRPO - gamma * (-KL_prcp)    i.e.  L = L_GRPO - gamma * KL_prcp
    KL_prcp = (1/|o|) sum_t m_t k3( pi_theta(o_t | q, I_mask, o_<t) / pi_theta(o_t | q, I, o_<t) )
    k3(x)   = x - log x - 1   (the same estimator as GRPO's KL term, >= 0)

Both log-probabilities carry gradient. Here I is the problem statement and I_mask the same statement with
every digit replaced by ``mask_char`` (the numbers are what the policy must "perceive"); the system prompt
and the completion are unchanged. The token mean is over all model tokens of the kept samples. The paper's
own setting masks image patches of a vision-language model, and it adds entropy regularisers against
over-optimising this KL (its "KL hacking"); neither images nor those regularisers are here.

Checked against arXiv 2507.06448 (Sec. 2.1, 3.2): GRPO is its eq. 1 and the full PAPO_G objective its eq. 2,
J = J_GRPO + gamma * D_KL[pi_theta || pi_theta^mask] - eta_1 H[pi_theta] - eta_2 H[pi_theta^mask]; this file
keeps the first two terms (eta_1 = eta_2 = 0). One difference: the paper writes the KL term as
r - log r - 1 with r = pi_theta(o | q, I) / pi_theta(o | q, I_mask); we take k3 of the inverse ratio,
pi_mask / pi_full, which is Schulman's k3 estimator of D_KL[pi_theta || pi_mask] on samples drawn from
pi_theta (the full-input policy that sampled them). Both are >= 0 and 0 when masking changes nothing; they
differ beyond second order in the log-ratio.

Data parallel (torchrun): the full and the masked rows of a micro-batch go through the policy in *one*
forward (stacked into one batch; the completions are the same, only the prompts differ, and the
padding-aware positions make each row's log-probs those of its own forward up to float round-off, so
a single process now also runs one forward where it ran two), so DDP sees one forward
per backward, as it requires. The token mean divides by the global model-token count over the world
size (DDP averages gradients), and every rank runs as many micro-batches (a rank with fewer runs a
zero-weight pass), so no rank waits in an all-reduce the others never start.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import torch

from ... import distributed
from ...algorithm import Context, RolloutBatch
from ...common import collate, completion_logprobs
from .grpo import GRPO
from .grpo import Config as GRPOConfig
from ...options import option
from ...rollout import Sample, render_prompt


@dataclass
class Config(GRPOConfig):
    """GRPO's switches plus the implicit perception loss."""

    perception_gamma: float = option(0.01, "Weight gamma of the implicit perception loss (KL to be maximised).",
                                     low=0.0, high=10.0)
    mask_char: str = option("_", "What replaces each digit of the problem in the masked input.")


def mask_numbers(text: str, mask_char: str = "_") -> str:
    return re.sub(r"[0-9]", mask_char, text)


def perception_kl(full_logps: torch.Tensor, masked_logps: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-token k3 of pi_mask / pi_full on the sampled tokens, (B, T), 0 where masked."""
    delta = (masked_logps - full_logps) * mask
    return (torch.exp(delta) - delta - 1) * mask


class PAPO(GRPO):
    """GRPO + gamma-weighted maximisation of KL(policy | full problem  ||  policy | numbers masked)."""

    name = "papo"

    Config = Config

    def collect(self, ctx: Context, problems: list):
        batch, stats = super().collect(ctx, problems)
        masked_prompts = []
        for problem in problems:
            messages = [dict(m) for m in ctx.task.make(problem, ctx.rollout_config.env_config).reset()]
            messages[-1]["content"] = mask_numbers(messages[-1]["content"], self.cfg.mask_char)
            masked_prompts.append(render_prompt(ctx.tokenizer, messages))
        self.masked = [Sample(prompt_ids=masked_prompts[s.group], completion_ids=s.completion_ids,
                              loss_mask=s.loss_mask, old_logprobs=s.old_logprobs) for s in batch.samples]
        return batch, stats

    def auxiliary(self, ctx: Context, batch: RolloutBatch):
        gamma, mbs, pad = self.cfg.perception_gamma, ctx.train.micro_batch_size, ctx.tokenizer.pad_token_id
        n = len(batch.samples)
        local_tokens = float(sum(sum(s.loss_mask) for s in batch.samples))
        # global token count / world: DDP averages the ranks' gradients into the mean over all tokens
        n_tokens = max(1.0, distributed.all_reduce([local_tokens])[0]) / ctx.world
        n_micro = int(distributed.all_reduce([float(math.ceil(n / mbs))], op="max")[0])

        def perception_term() -> dict:
            total = 0.0
            for m in range(n_micro):
                rows, weight = list(range(m * mbs, min(n, (m + 1) * mbs))), 1.0
                if not rows:  # this rank has no samples left: a zero-weight pass keeps DDP in step
                    rows, weight = [0], 0.0
                k = len(rows)
                # full and masked rows in one forward: DDP allows one forward per backward
                both = collate([batch.samples[i] for i in rows] + [self.masked[i] for i in rows], pad, ctx.device)
                logps, _ = completion_logprobs(ctx.model, both, ctx.train.temperature)
                kl = perception_kl(logps[:k], logps[k:], both["loss_mask"][:k]).sum() / n_tokens
                (-gamma * kl * weight).backward()
                total += float(kl.detach()) * weight
            return {"perception_kl": total}
        return perception_term


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-papo", "PAPO tool agent (calculator, numbers masked)", "papo", "calculator",
                   "GRPO plus a KL term that rewards depending on the problem's numbers.",
                   nodes=("alg-papo",),
                   changes="GRPO's loss subtracts gamma times the KL between the policy reading the full problem "
                           "and the policy reading it with every digit masked, on the sampled completion, so answers "
                           "that ignore the numbers are discouraged. The paper masks image patches of a multimodal "
                           "model; here the input to perceive is the text problem's numbers, and the paper's entropy "
                           "regularisers against over-optimising the KL are left out. The paper's eq. 2 writes the "
                           "KL as k3 of pi_full/pi_mask; here it is k3 of pi_mask/pi_full, the standard k3 estimate "
                           "of KL(pi_full || pi_mask) on samples from pi_full.",
                   paper="Perception-Aware Policy Optimization for Multimodal Reasoning (arXiv 2507.06448), eqs. 1-2",
                   equation=r"\mathcal{L}=\mathcal{L}_{\mathrm{GRPO}}-\gamma\,\frac{1}{\sum m}\sum_{i,t}m_{i,t}\,\mathrm{k3}\Big(\frac{\pi_\theta(o_{i,t}\mid q_{\mathrm{mask}},o_{i,<t})}{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}\Big)"),
)

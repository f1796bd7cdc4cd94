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
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from .algorithm import Context, RolloutBatch
from .common import collate, completion_logprobs
from .grpo import GRPO
from .grpo import Config as GRPOConfig
from .options import option
from .rollout import Sample, render_prompt


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

    Config = Config
    distributed_ok = False  # two forwards (full and masked input) before one backward: not under DDP

    def collect(self, ctx: Context, problems: list):
        batch, stats = super().collect(ctx, problems)
        masked_prompts = []
        for problem in problems:
            messages = [dict(m) for m in ctx.task.make(problem, **ctx.rollout_config.env_options).reset()]
            messages[-1]["content"] = mask_numbers(messages[-1]["content"], self.cfg.mask_char)
            masked_prompts.append(render_prompt(ctx.tokenizer, messages))
        self.masked = [Sample(prompt_ids=masked_prompts[s.group], completion_ids=s.completion_ids,
                              loss_mask=s.loss_mask, old_logprobs=s.old_logprobs) for s in batch.samples]
        return batch, stats

    def auxiliary(self, ctx: Context, batch: RolloutBatch):
        gamma, mbs, pad = self.cfg.perception_gamma, ctx.train.micro_batch_size, ctx.tokenizer.pad_token_id
        n_tokens = max(1.0, float(sum(sum(s.loss_mask) for s in batch.samples)))

        def perception_term() -> dict:
            total = 0.0
            for start in range(0, len(batch.samples), mbs):
                full = collate(batch.samples[start:start + mbs], pad, ctx.device)
                masked = collate(self.masked[start:start + mbs], pad, ctx.device)
                full_logps, _ = completion_logprobs(ctx.model, full, ctx.train.temperature)
                masked_logps, _ = completion_logprobs(ctx.model, masked, ctx.train.temperature)
                kl = perception_kl(full_logps, masked_logps, full["loss_mask"]).sum() / n_tokens
                (-gamma * kl).backward()
                total += float(kl.detach())
            return {"perception_kl": total}
        return perception_term

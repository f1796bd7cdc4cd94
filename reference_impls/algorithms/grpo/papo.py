r"""PAPO: GRPO plus an implicit perception loss (Wang et al. 2025, "Perception-Aware Policy Optimization for
Multimodal Reasoning", arXiv 2507.06448), transposed from images to the numbers of a text problem.

PAPO asks the policy's answer to *depend on the input it must perceive*: it maximises the KL divergence
between the policy given the full input and the policy given a corrupted input, on the sampled completion::

    J_PAPO = J_GRPO - gamma * (-KL_prcp)    i.e.  L = L_GRPO - gamma * KL_prcp
    KL_prcp = (1/sum m) sum_{i,t} m_{i,t} min( k3( pi_mask(o_{i,t}) / pi_theta(o_{i,t}) ), c )
    pi_theta(o_{i,t}) = pi_theta(o_{i,t} | q, I, o_{i,<t}),   pi_mask(o_{i,t}) = pi_theta(o_{i,t} | q, I_mask, o_{i,<t})
    k3(x)   = x - log x - 1   (the same estimator as GRPO's KL term, >= 0)

Here I is the problem statement and I_mask the same statement with every digit replaced by ``mask_char``
(the numbers are what the policy must "perceive"); the system prompt and the completion are unchanged. The
sums run over the model tokens of the kept samples of each *minibatch*: the term is part of every
optimiser step's loss over that step's own samples (as the authors' actor adds it to each micro-batch's
policy loss), so its weight does not grow with ``--mini-batches``. The paper's own setting masks image
patches of a vision-language model, and it adds entropy regularisers against over-optimising this KL (its
"KL hacking"); neither images nor those regularisers are here.

Two choices follow the authors' released code (github.com/MikeWangWZHL/PAPO; ``verl/workers/actor/dp_actor.py``
and ``compute_kl`` with ``low_var_kl`` in ``verl/trainer/core_algos.py``), because the maximised term is
otherwise unbounded in exactly the direction the paper calls KL hacking:

    - the per-token k3 is clipped: the log-ratio to [-20, 20], the k3 to [-10, 10] (k3 >= 0, so to
      [0, c] with c = ``perception_kl_clip`` = 10); ``--perception-kl-clip 0`` leaves it unbounded as the
      paper's eq. 2 writes it;
    - no gradient flows through the masked branch: pi_mask's log-probs are computed once per rollout batch,
      without gradient, by the policy that sampled it (the authors' default, ``RECOMPUTE_AUG_LOG_PROBS =
      False``); ``--perception-masked-grad`` instead runs the masked input through the current policy on
      every optimiser step and back-propagates through both branches, as eq. 2 reads.

Checked against arXiv 2507.06448 (Sec. 2.1, 3.2): GRPO is its eq. 1 and the full PAPO_G objective its eq. 2,
J = J_GRPO + gamma * D_KL[pi_theta || pi_theta^mask] - eta_1 H[pi_theta] - eta_2 H[pi_theta^mask]; this file
keeps the first two terms (eta_1 = eta_2 = 0). One difference: the paper writes the KL term as
r - log r - 1 with r = pi_theta(o | q, I) / pi_theta(o | q, I_mask); we take k3 of the inverse ratio,
pi_mask / pi_full, which is Schulman's k3 estimator of D_KL[pi_theta || pi_mask] on samples drawn from
pi_theta (the full-input policy that sampled them), and which is also what the authors' code computes
(``compute_kl(log_probs, ref_log_probs=aug_log_probs, "low_var_kl")``). Both are >= 0 and 0 when masking
changes nothing; they differ beyond second order in the log-ratio.

Defaults as the authors' PAPO_G scripts and configs (``examples/papo_grpo/qwen2_5_vl_3b_grpo_papo.sh``,
``examples/configs/config_grpo_papo.yaml``, ``verl/workers/actor/config.py``): gamma 0.02, a k3 KL to the
reference with beta 0.01, clip range 0.2 / 0.3.

Data parallel (torchrun): the masked log-probs of the default are per-sample inputs of the loss, sliced per
micro-batch like the reference's. With ``--perception-masked-grad`` the full and the masked rows of a
micro-batch go through the policy in *one* forward (stacked into one batch; the completions are the same,
only the prompts differ, and the padding-aware positions make each row's log-probs those of its own forward
up to float round-off), so DDP sees one forward per backward, as it requires; the token mean divides by the
minibatch's global model-token count over the world size (DDP averages gradients), and every rank runs as
many micro-batches (a rank with fewer runs a zero-weight pass), so no rank waits in an all-reduce the others
never start.
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

#: the log-ratio is clamped to this before exp (the authors' low_var_kl), so exp cannot overflow
LOG_RATIO_CLAMP = 20.0


@dataclass
class Config(GRPOConfig):
    """GRPO's switches (PAPO_G defaults: beta 0.01, clip 0.2 / 0.3) plus the implicit perception loss."""

    epsilon_high: float = option(0.3, "Clip range above 1 (the PAPO authors' actor default, 0.3).", low=0.0,
                                 high=10.0)
    beta: float = option(0.01, "Weight of the k3 KL penalty to the frozen reference (PAPO_G: 0.01); 0 skips the "
                         "reference model.", low=0.0, high=10.0)
    perception_gamma: float = option(0.02, "Weight gamma of the implicit perception loss (KL to be maximised; the "
                                     "authors' PAPO_G scripts: 0.02).", low=0.0, high=10.0)
    perception_kl_clip: float = option(10.0, "Upper bound c of each token's k3 in the perception loss (the authors' "
                                       "code: 10); 0 = unbounded, as the paper's eq. 2.", low=0.0, high=1e6)
    perception_masked_grad: bool = option(False, "Back-propagate through the masked-input branch too (the paper's "
                                          "eq. 2); off = the authors' default, masked log-probs without gradient "
                                          "from the sampling policy.")
    mask_char: str = option("_", "What replaces each digit of the problem in the masked input.")


def mask_numbers(text: str, mask_char: str = "_") -> str:
    return re.sub(r"[0-9]", mask_char, text)


def perception_kl(full_logps: torch.Tensor, masked_logps: torch.Tensor, mask: torch.Tensor,
                  clip: float = 0.0) -> torch.Tensor:
    """Per-token k3 of pi_mask / pi_full on the sampled tokens, (B, T), 0 where masked; with ``clip`` > 0 the
    log-ratio is clamped to [-20, 20] and the k3 to [0, clip] (the authors' bound)."""
    delta = (masked_logps - full_logps) * mask
    if clip > 0:
        delta = delta.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    k3 = torch.exp(delta) - delta - 1
    if clip > 0:
        k3 = k3.clamp(0.0, clip)
    return k3 * mask


class PAPO(GRPO):
    """GRPO + gamma-weighted maximisation of KL(policy | full problem  ||  policy | numbers masked)."""

    name = "papo"

    Config = Config

    @classmethod
    def objective(cls, cfg: Config) -> str:
        """GRPO's loss under ``cfg`` minus gamma times the token-mean (clipped) k3 of the masked-input ratio."""
        from .grpo import grpo_objective, join_equations, latex_number

        ratio = (r"\frac{\pi_\theta(o_{i,t}\mid q_{\mathrm{mask}},o_{i,<t})}{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}"
                 if cfg.perception_masked_grad else
                 r"\frac{\mathrm{sg}[\pi_{old}(o_{i,t}\mid q_{\mathrm{mask}},o_{i,<t})]}{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}")
        term = (rf"\min\Big(\mathrm{{k3}}\Big({ratio}\Big),{latex_number(cfg.perception_kl_clip)}\Big)"
                if cfg.perception_kl_clip else rf"\mathrm{{k3}}\Big({ratio}\Big)")
        return join_equations(
            rf"\mathcal{{L}}=\mathcal{{L}}_{{\mathrm{{GRPO}}}}-{latex_number(cfg.perception_gamma)}\,\frac{{1}}{{\sum m}}"
            rf"\sum_{{i,t}}m_{{i,t}}\,{term}",
            grpo_objective(cfg, lhs=r"\mathcal{L}_{\mathrm{GRPO}}"))

    def collect(self, ctx: Context, problems: list):
        batch, stats = super().collect(ctx, problems)
        masked_prompts = []
        for problem in problems:
            messages = [dict(m) for m in ctx.task.make(problem, ctx.rollout_config.env_config).reset()]
            messages[-1]["content"] = mask_numbers(messages[-1]["content"], self.cfg.mask_char)
            masked_prompts.append(render_prompt(ctx.tokenizer, messages))
        self.masked = [Sample(prompt_ids=masked_prompts[s.group], completion_ids=s.completion_ids,
                              loss_mask=s.loss_mask, old_logprobs=s.old_logprobs) for s in batch.samples]
        self.masked_logps = None if self.cfg.perception_masked_grad else self.sampling_masked_logps(ctx)
        return batch, stats

    def sampling_masked_logps(self, ctx: Context) -> torch.Tensor:
        """(N, K) log-probs of the completions given the masked prompts, by the policy that sampled them, without
        gradient (the authors' default), micro-batch by micro-batch."""
        mbs, pad = ctx.train.micro_batch_size, ctx.tokenizer.pad_token_id
        width = max(1, max(len(s.completion_ids) for s in self.masked))
        out = torch.zeros(len(self.masked), width)
        with torch.no_grad():
            for start in range(0, len(self.masked), mbs):
                mb = collate(self.masked[start:start + mbs], pad, ctx.device)
                logps, _ = completion_logprobs(ctx.policy, mb, ctx.train.temperature)
                out[start:start + logps.shape[0], :logps.shape[1]] = logps.float().cpu()
        return out

    def update(self, ctx: Context, batch: RolloutBatch):
        self.perception_total, self.perception_weight = 0.0, 0.0
        metrics = super().update(ctx, batch)
        if not self.cfg.perception_masked_grad:  # with the masked gradient, auxiliary reports it
            metrics.add_total("perception_kl", self.perception_total, self.perception_weight)
        return metrics

    def sample_inputs(self, ctx: Context, batch: RolloutBatch) -> dict | None:
        return None if self.cfg.perception_masked_grad else {"masked_logps": self.masked_logps}

    def loss_fn(self, ctx: Context, batch: RolloutBatch | None = None):
        grpo_part = super().loss_fn(ctx, batch)
        if self.cfg.perception_masked_grad:
            return grpo_part
        gamma, clip = self.cfg.perception_gamma, self.cfg.perception_kl_clip

        def with_perception(logps, old_logps, advantages, mask, masked_logps=None, token_normalizer=None, **kw):
            loss, metrics = grpo_part(logps, old_logps, advantages, mask, token_normalizer=token_normalizer, **kw)
            masked = masked_logps[:, :logps.shape[1]].detach().to(logps.dtype)  # no gradient: the authors' default
            kl = perception_kl(logps, masked, mask, clip).sum() / (token_normalizer or mask.sum().clamp(min=1.0))
            self.perception_total += float(kl.detach()) * float(mask.sum())
            self.perception_weight += float(mask.sum())
            return loss - gamma * kl, metrics
        return with_perception

    def auxiliary(self, ctx: Context, batch: RolloutBatch):
        if not self.cfg.perception_masked_grad:
            return None
        gamma, clip = self.cfg.perception_gamma, self.cfg.perception_kl_clip
        mbs, pad = ctx.train.micro_batch_size, ctx.tokenizer.pad_token_id

        def perception_term(part: list[int]) -> dict:
            """The perception term over this optimiser step's minibatch ``part`` (its own rows, its own token
            mean), with gradient through the full and the masked branch."""
            local_tokens = float(sum(sum(batch.samples[i].loss_mask) for i in part))
            # global token count / world: DDP averages the ranks' gradients into the mean over all tokens
            n_tokens = max(1.0, distributed.all_reduce([local_tokens])[0]) / ctx.world
            n_micro = int(distributed.all_reduce([float(math.ceil(len(part) / mbs))], op="max")[0])
            total = 0.0
            for m in range(n_micro):
                rows, weight = part[m * mbs:(m + 1) * mbs], 1.0
                if not rows:  # this rank has no samples left: a zero-weight pass keeps DDP in step
                    rows, weight = [0], 0.0
                k = len(rows)
                # full and masked rows in one forward: DDP allows one forward per backward
                both = collate([batch.samples[i] for i in rows] + [self.masked[i] for i in rows], pad, ctx.device)
                logps, _ = completion_logprobs(ctx.model, both, ctx.train.temperature)
                kl = perception_kl(logps[:k], logps[k:], both["loss_mask"][:k], clip).sum() / n_tokens
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
                           "regularisers against over-optimising the KL are left out. The KL is k3 of "
                           "pi_mask/pi_full per token, the standard k3 estimate of KL(pi_full || pi_mask) on samples "
                           "from pi_full (the paper's eq. 2 writes the inverse ratio; the authors' code computes "
                           "this one). As the authors' code: each token's k3 is capped at 10 and the masked branch "
                           "carries no gradient (its log-probs come from the sampling policy); "
                           "--perception-kl-clip 0 and --perception-masked-grad give the paper's unbounded, "
                           "two-branch eq. 2. The term is part of each optimiser step's loss over that minibatch."
                           " Defaults as the authors' PAPO_G scripts: gamma 0.02, KL to the reference 0.01, clip "
                           "0.2 / 0.3; no entropy regularisers (the paper's PAPO_G adds two, eq. 2).",
                   paper="Perception-Aware Policy Optimization for Multimodal Reasoning (arXiv 2507.06448), eqs. 1-2"),
)

"""The policy-gradient update every group-relative algorithm shares (GRPO family, RLOO).

Given one rollout batch and per-sample advantages, run ``num_iterations`` passes; in each, split the kept
samples into micro-batches, score them with the current policy, add up the algorithm's loss
(gradient accumulation) and take one clipped AdamW step::

    for each pass:
        zero grad
        for each micro-batch:  logps <- policy(batch);  loss <- loss_fn(logps, old, A, mask, ...);  backward
        clip grad norm;  optimizer step

Normalisers are global: DDP averages gradients over ranks, so each rank divides by (global count / world);
every rank runs the same number of backward passes (a rank out of samples runs a zero-weight pass).
"""
from __future__ import annotations

import math
from typing import Callable

import torch

from . import distributed
from .algorithm import Context, Metrics, RolloutBatch
from .common import collate, completion_logprobs

# loss_fn(logps, old_logps, advantages, mask, ref_logps, seq_normalizer, token_normalizer) -> (loss, metrics)
LossFn = Callable[..., tuple[torch.Tensor, dict]]


def policy_gradient_update(ctx: Context, batch: RolloutBatch, advantages: torch.Tensor, keep: torch.Tensor,
                           loss_fn: LossFn, num_iterations: int = 1, sample_inputs: dict | None = None,
                           auxiliary: Callable[[], dict] | None = None) -> Metrics:
    """Returns ``loss`` (mean micro-batch loss per pass), token-weighted ``kl``, ``clip_frac`` and
    ``entropy``, ``grad_norm`` and ``groups_kept_frac``.

    ``sample_inputs``: per-sample tensors passed to ``loss_fn`` as keyword arguments, sliced to the
    micro-batch's rows. ``auxiliary()``: run once per pass after the micro-batches and before the clip and
    step; it calls backward on an extra loss itself and returns metrics (reported as pass means)."""
    train, samples = ctx.train, batch.samples
    kept = [i for i in range(len(samples)) if keep[i]]
    n_tokens_local = float(sum(sum(samples[i].loss_mask) for i in kept))
    n_seq, n_tok = distributed.all_reduce([float(len(kept)), n_tokens_local])
    n_micro = int(distributed.all_reduce([math.ceil(len(kept) / train.micro_batch_size)], op="max")[0])
    seq_norm, tok_norm = max(n_seq, 1.0) / ctx.world, max(n_tok, 1.0) / ctx.world

    losses, grad_norm = [], 0.0
    weighted = Metrics()  # kl, clip_frac, entropy: weighted by model tokens
    if n_seq > 0:
        for _ in range(num_iterations):
            ctx.optimizer.zero_grad(set_to_none=True)
            for m in range(n_micro):
                idx = kept[m * train.micro_batch_size:(m + 1) * train.micro_batch_size]
                weight = 1.0
                if not idx:  # this rank ran out of samples: a zero-weight pass keeps DDP's all-reduce in step
                    idx, weight = [0], 0.0
                mb = collate([samples[i] for i in idx], ctx.tokenizer.pad_token_id, ctx.device)
                # a group's G samples share one prompt forward (exact; not under DDP: see completion_logits)
                logps, entropy = completion_logprobs(ctx.model, mb, train.temperature, with_entropy=True,
                                                     share_prompts=train.share_prompts and ctx.world == 1)
                # completions are right-padded from a common start, so the full-batch reference
                # log-probs slice straight into this micro-batch's width
                ref = None if batch.ref_logps is None else batch.ref_logps[idx, :mb["logits_to_keep"]]
                extra = {k: v[idx].to(ctx.device) for k, v in (sample_inputs or {}).items()}
                loss, metrics = loss_fn(logps, mb["old_logprobs"], advantages[idx].to(ctx.device), mb["loss_mask"],
                                        ref_logps=ref, seq_normalizer=seq_norm, token_normalizer=tok_norm, **extra)
                (loss * weight).backward()
                if weight:
                    losses.append(float(loss.detach()))
                    mask = mb["loss_mask"]
                    n = float(mask.sum())
                    weighted.add("kl", metrics["kl"], n)
                    weighted.add("clip_frac", metrics["clip_frac"], n)
                    weighted.add_total("entropy", float((entropy * mask).sum()), n)
            if auxiliary is not None:
                weighted.update(auxiliary(), 1.0 / num_iterations)
            grad_norm = float(torch.nn.utils.clip_grad_norm_(ctx.policy.parameters(), train.max_grad_norm))
            ctx.optimizer.step()
    for name in ("kl", "clip_frac", "entropy"):  # every rank reports every name, even with no tokens
        weighted.add_total(name, 0.0, 0.0)
    weighted.add("loss", sum(losses) / max(1, num_iterations))
    weighted.add("grad_norm", grad_norm)
    weighted.add("groups_kept_frac", len(kept) / max(len(samples), 1), float(len(samples)))
    return weighted

"""The policy-gradient update every group-relative algorithm shares (GRPO family, RLOO).

Given one rollout batch and per-sample advantages, run ``num_iterations`` passes; in each, split the kept
samples into ``mu`` minibatches (the run's ``--mini-batches``, in group order), and for each minibatch split
it into micro-batches (``common.micro_batches``: at most ``--micro-batch-size`` samples and ``--micro-batch-tokens``
padded tokens each; memory only), score them with the current policy, add up the algorithm's loss (gradient
accumulation) and take one clipped AdamW step::

    for each pass:                                   num_iterations
        for each minibatch:                          mu: one optimiser step each
            zero grad
            for each micro-batch:  logps <- policy(batch);  loss <- loss_fn(logps, old, A, mask, ...);  backward
            clip grad norm;  optimizer step

So a rollout batch gets ``num_iterations x mu`` policy updates. With one update per batch the importance
ratio is exactly 1 (pi_theta = pi_old when the only step's gradient is taken), so clipping, GSPO's sequence
ratio and GMPO's geometric mean never act; from the second minibatch on the policy has moved and they do.
The papers take several minibatch updates per batch (GSPO 4, GMPO 8, DAPO 16: docs/compare.md).

Normalisers are those of the minibatch (each optimiser step's loss is its own minibatch's mean, as verl and
TRL compute it) and global over ranks: DDP averages gradients, so each rank divides by (global count /
world); every rank runs the same number of minibatches and backward passes (the most micro-batches any rank
cut its minibatch into; a rank out of micro-batches runs a zero-weight pass).
"""
from __future__ import annotations

from typing import Callable

import torch

from . import distributed
from .algorithm import Context, Metrics, RolloutBatch
from .common import collate, completion_logprobs, micro_batches
from .diagnostics import ratio_diagnostics

# loss_fn(logps, old_logps, advantages, mask, ref_logps, seq_normalizer, token_normalizer) -> (loss, metrics)
LossFn = Callable[..., tuple[torch.Tensor, dict]]


def split_minibatches(rows: list[int], n: int) -> list[list[int]]:
    """``rows`` cut into ``n`` contiguous parts whose sizes differ by at most one (the first ones larger);
    contiguous so that a group's samples stay together and share one prompt forward."""
    size, extra = divmod(len(rows), n)
    parts, start = [], 0
    for k in range(n):
        end = start + size + (1 if k < extra else 0)
        parts.append(rows[start:end])
        start = end
    return parts


def policy_gradient_update(ctx: Context, batch: RolloutBatch, advantages: torch.Tensor, keep: torch.Tensor,
                           loss_fn: LossFn, num_iterations: int = 1, sample_inputs: dict | None = None,
                           auxiliary: Callable[[list[int]], dict] | None = None) -> Metrics:
    """Returns ``loss`` (mean loss per optimiser step), token-weighted ``kl``, ``clip_frac`` and ``entropy``,
    the ratio diagnostics (``diagnostics.ratio_diagnostics``: ``ratio_mean``, ``ratio_max``,
    ``clip_frac_low``, ``clip_frac_high``), ``grad_norm`` and ``grad_norm_max`` (the mean and the largest pre-clip
    gradient norm over the step's optimiser steps: the last one alone hid the others), ``policy_updates`` (optimiser
    steps taken) and ``groups_kept_frac``.

    ``sample_inputs``: per-sample tensors passed to ``loss_fn`` as keyword arguments, sliced to the
    micro-batch's rows. ``auxiliary(part)``: run once per optimiser step after the micro-batches and before the
    clip and step, with that step's minibatch (this rank's sample indices, so a per-sample term covers the
    step's own samples and its weight does not grow with the number of minibatches); it calls backward on an
    extra loss itself and returns metrics (reported as step means)."""
    train, samples = ctx.train, batch.samples
    kept = [i for i in range(len(samples)) if keep[i]]
    mu = getattr(train, "mini_batches", 1)
    # never more minibatches than the largest rank has samples: a minibatch empty on every rank would be an
    # AdamW step on zero gradients, which still moves the weights by the optimiser's momentum
    n_parts = int(distributed.all_reduce([float(min(mu, len(kept)))], op="max")[0])
    parts = split_minibatches(kept, n_parts) if n_parts else []
    n_steps = num_iterations * len(parts)

    losses, grad_norms, ratio_max = [], [], 1.0
    weighted = Metrics()  # kl, clip_frac, entropy, ratio and clip diagnostics: weighted by model tokens
    for _ in range(num_iterations):
        for part in parts:
            n_tokens_local = float(sum(sum(samples[i].loss_mask) for i in part))
            n_seq, n_tok = distributed.all_reduce([float(len(part)), n_tokens_local])
            chunks = micro_batches(samples, part, train.micro_batch_size, getattr(train, "micro_batch_tokens", 0))
            n_micro = int(distributed.all_reduce([float(len(chunks))], op="max")[0])
            seq_norm, tok_norm = max(n_seq, 1.0) / ctx.world, max(n_tok, 1.0) / ctx.world
            ctx.optimizer.zero_grad(set_to_none=True)
            for m in range(n_micro):
                idx = chunks[m] if m < len(chunks) else []
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
                adv = advantages[idx].to(ctx.device)
                loss, metrics = loss_fn(logps, mb["old_logprobs"], adv, mb["loss_mask"],
                                        ref_logps=ref, seq_normalizer=seq_norm, token_normalizer=tok_norm, **extra)
                (loss * weight).backward()
                if weight:
                    losses.append(float(loss.detach()))
                    mask = mb["loss_mask"]
                    n = float(mask.sum())
                    weighted.add("kl", metrics["kl"], n)
                    weighted.add("clip_frac", metrics["clip_frac"], n)
                    weighted.add_total("entropy", float((entropy * mask).sum()), n)
                    ratio = ratio_diagnostics(logps, mb["old_logprobs"], adv, mask, ctx.config)
                    weighted.add_total("ratio_mean", ratio["ratio_sum"], n)
                    weighted.add_total("clip_frac_low", ratio["clip_low_sum"], n)
                    weighted.add_total("clip_frac_high", ratio["clip_high_sum"], n)
                    ratio_max = max(ratio_max, ratio["ratio_max"])
            if auxiliary is not None:
                weighted.update(auxiliary(part), 1.0 / n_steps)
            grad_norms.append(float(torch.nn.utils.clip_grad_norm_(ctx.policy.parameters(), train.max_grad_norm)))
            ctx.optimizer.step()
    # every rank reports every name, even with no tokens
    for name in ("kl", "clip_frac", "entropy", "ratio_mean", "clip_frac_low", "clip_frac_high"):
        weighted.add_total(name, 0.0, 0.0)
    weighted.add("loss", sum(losses) / max(1, n_steps))
    weighted.add("grad_norm", sum(grad_norms) / len(grad_norms) if grad_norms else 0.0)
    weighted.add("grad_norm_max", max(grad_norms, default=0.0))
    weighted.add("ratio_max", ratio_max)  # under DDP: the mean of the ranks' maxima
    weighted.add("policy_updates", float(n_steps))
    weighted.add("groups_kept_frac", len(kept) / max(len(samples), 1), float(len(samples)))
    return weighted

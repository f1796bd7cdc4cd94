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

The gradient's variance (``grad_variance=True``; ``grad_var`` in the step's metrics; issue 61's RLOO claim). The
groups (prompts) are the independent draws of a step: each group's samples share a prompt and, through a
group baseline, their advantages. A minibatch's gradient is the sum of its P groups' parts,
g_hat = sum_p g_p, g_p = (1/n) sum_{i in p} grad l_i (n: the minibatch's sequences, the loss's normaliser), so
P g_p are P draws whose mean is g_hat, and the unbiased estimate of the trace of g_hat's covariance is::

    s^2 = (1/(P-1)) sum_p || P g_p - g_hat ||^2                       (the draws' sample variance)
    grad_var = s^2 / P = ( P sum_p ||g_p||^2 - ||g_hat||^2 ) / (P - 1)   (of their mean, g_hat), P >= 2

the pre-clip gradients over all the policy's parameters, averaged over the step's optimiser steps (a minibatch
of one group has no estimate and is left out). Each g_p is read as the change of the accumulated gradient over
the group's micro-batches (which are then cut at group boundaries: memory only, the gradient is the same), so
it costs one copy of the gradient. On one process only: under DDP the accumulated gradient is already the
ranks' mean, so no rank's own parts can be read from it (``grad_var`` is then not recorded).
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


def split_at_groups(samples: list, chunks: list[list[int]]) -> list[list[int]]:
    """``chunks`` (micro-batches of sample indices) cut further wherever the group changes, so that no
    micro-batch holds two groups (``GroupGradients`` reads each group's gradient between micro-batches)."""
    out = []
    for chunk in chunks:
        current = []
        for i in chunk:
            if current and samples[i].group != samples[current[-1]].group:
                out.append(current)
                current = []
            current.append(i)
        if current:
            out.append(current)
    return out


class GroupGradients:
    """The variance estimate of one optimiser step's gradient over its groups (module docstring): ``start``
    after zero_grad, ``enter_group(g)`` before each micro-batch's backward, ``finish`` before the clip; each
    group's gradient is the change of the accumulated gradient while it was the current group."""

    def __init__(self, model: torch.nn.Module):
        self.params = [p for p in model.parameters() if p.requires_grad]

    def _flat(self) -> torch.Tensor:
        return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).detach().reshape(-1)
                          for p in self.params])

    @staticmethod
    def _sq(x: torch.Tensor) -> float:
        return float(torch.sum(x * x, dtype=torch.float64))

    def start(self) -> None:
        self.group, self.at_start, self.sum_sq, self.n_groups = None, None, 0.0, 0

    def enter_group(self, group) -> None:
        if group == self.group:
            return
        now = self._flat()
        if self.group is not None:
            self.sum_sq += self._sq(now - self.at_start)
            self.n_groups += 1
        self.group, self.at_start = group, now

    def finish(self) -> float | None:
        """(P sum_p ||g_p||^2 - ||g_hat||^2) / (P - 1), or None for a minibatch of fewer than 2 groups."""
        if self.group is None:
            return None
        total = self._flat()
        sum_sq = self.sum_sq + self._sq(total - self.at_start)
        n = self.n_groups + 1
        self.group, self.at_start = None, None
        if n < 2:
            return None
        return (n * sum_sq - self._sq(total)) / (n - 1)


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
                           auxiliary: Callable[[list[int]], dict] | None = None,
                           grad_variance: bool = False) -> Metrics:
    """Returns ``loss`` (mean loss per optimiser step), token-weighted ``kl``, ``clip_frac`` and ``entropy``,
    the ratio diagnostics (``diagnostics.ratio_diagnostics``: ``ratio_mean``, ``ratio_max``,
    ``clip_frac_low``, ``clip_frac_high``), ``grad_norm`` and ``grad_norm_max`` (the mean and the largest pre-clip
    gradient norm over the step's optimiser steps: the last one alone hid the others), ``policy_updates`` (optimiser
    steps taken) and ``groups_kept_frac``.

    ``sample_inputs``: per-sample tensors passed to ``loss_fn`` as keyword arguments, sliced to the
    micro-batch's rows. ``auxiliary(part)``: run once per optimiser step after the micro-batches and before the
    clip and step, with that step's minibatch (this rank's sample indices, so a per-sample term covers the
    step's own samples and its weight does not grow with the number of minibatches); it calls backward on an
    extra loss itself and returns metrics (reported as step means). ``grad_variance``: also ``grad_var``, the
    estimated variance of each optimiser step's gradient over the minibatch's groups (module docstring; one
    process only)."""
    train, samples = ctx.train, batch.samples
    kept = [i for i in range(len(samples)) if keep[i]]
    mu = getattr(train, "mini_batches", 1)
    # never more minibatches than the largest rank has samples: a minibatch empty on every rank would be an
    # AdamW step on zero gradients, which still moves the weights by the optimiser's momentum
    n_parts = int(distributed.all_reduce([float(min(mu, len(kept)))], op="max")[0])
    parts = split_minibatches(kept, n_parts) if n_parts else []
    n_steps = num_iterations * len(parts)

    losses, grad_norms, ratio_max = [], [], 1.0
    variance = GroupGradients(ctx.policy) if grad_variance and ctx.world == 1 else None
    grad_vars = []
    weighted = Metrics()  # kl, clip_frac, entropy, ratio and clip diagnostics: weighted by model tokens
    for _ in range(num_iterations):
        for part in parts:
            n_tokens_local = float(sum(sum(samples[i].loss_mask) for i in part))
            n_seq, n_tok = distributed.all_reduce([float(len(part)), n_tokens_local])
            chunks = micro_batches(samples, part, train.micro_batch_size, getattr(train, "micro_batch_tokens", 0))
            if variance is not None:
                chunks = split_at_groups(samples, chunks)
                variance.start()
            n_micro = int(distributed.all_reduce([float(len(chunks))], op="max")[0])
            seq_norm, tok_norm = max(n_seq, 1.0) / ctx.world, max(n_tok, 1.0) / ctx.world
            ctx.optimizer.zero_grad(set_to_none=True)
            for m in range(n_micro):
                idx = chunks[m] if m < len(chunks) else []
                if variance is not None and idx:
                    variance.enter_group(samples[idx[0]].group)
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
            if variance is not None:
                estimate = variance.finish()  # before the auxiliary loss: the variance is of the policy gradient
                if estimate is not None:
                    grad_vars.append(estimate)
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
    if grad_vars:
        weighted.add("grad_var", sum(grad_vars) / len(grad_vars))
    weighted.add("policy_updates", float(n_steps))
    weighted.add("groups_kept_frac", len(kept) / max(len(samples), 1), float(len(samples)))
    return weighted

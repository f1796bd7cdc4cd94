"""Shared tensor plumbing: batching samples, per-token log-probs and entropies, seeding.

Every algorithm trains on the same batch layout (as in TRL)::

    input_ids       [pad pad p p p p | c c c c c pad]     prompt left-padded, completion right-padded
    attention_mask  [ 0   0  1 1 1 1 | 1 1 1 1 1  0 ]
    loss_mask                        [ 1 1 0 0 1  0 ]     1 = model token, 0 = env token or padding
    old_logprobs                     [ . . 0 0 .  0 ]     log pi_old of the sampled token (0 where masked)

``logits_to_keep`` = completion width, so only completion positions are scored.
"""
from __future__ import annotations

import random

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def position_ids_from_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions that skip left padding (what ``generate`` uses), so scoring matches sampling."""
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


def collate(samples, pad_id: int, device=None) -> dict[str, torch.Tensor]:
    """Pack rollout samples (objects with ``prompt_ids``, ``completion_ids``, ``loss_mask``,
    ``old_logprobs``) into the layout above."""
    prompt_len = max(len(s.prompt_ids) for s in samples)
    completion_len = max(1, max(len(s.completion_ids) for s in samples))
    B = len(samples)
    input_ids = torch.full((B, prompt_len + completion_len), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((B, prompt_len + completion_len), dtype=torch.long)
    loss_mask = torch.zeros((B, completion_len), dtype=torch.float32)
    old_logprobs = torch.zeros((B, completion_len), dtype=torch.float32)
    for i, s in enumerate(samples):
        p, c = len(s.prompt_ids), len(s.completion_ids)
        input_ids[i, prompt_len - p:prompt_len] = torch.tensor(s.prompt_ids)
        attention_mask[i, prompt_len - p:prompt_len] = 1
        if c:
            input_ids[i, prompt_len:prompt_len + c] = torch.tensor(s.completion_ids)
            attention_mask[i, prompt_len:prompt_len + c] = 1
            loss_mask[i, :c] = torch.tensor(s.loss_mask, dtype=torch.float32)
            old_logprobs[i, :c] = torch.tensor(s.old_logprobs, dtype=torch.float32)
    batch = dict(input_ids=input_ids, attention_mask=attention_mask, loss_mask=loss_mask,
                 old_logprobs=old_logprobs)
    if device is not None:
        batch = {k: v.to(device) for k, v in batch.items()}
    batch["logits_to_keep"] = completion_len
    return batch


def selective_log_softmax(logits: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``log softmax(logits)[index]`` without materialising the full log-softmax twice."""
    picked = torch.gather(logits, -1, index.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """H = logsumexp(z) - sum softmax(z) * z, per position."""
    probs = torch.softmax(logits, dim=-1)
    return torch.logsumexp(logits, dim=-1) - (probs * logits).sum(-1)


def completion_logits(model, input_ids, attention_mask, logits_to_keep: int) -> torch.Tensor:
    """Logits predicting each completion token: positions ``-K-1 .. -2`` of the sequence."""
    out = model(input_ids=input_ids, attention_mask=attention_mask,
                position_ids=position_ids_from_mask(attention_mask), logits_to_keep=logits_to_keep + 1)
    return out.logits[:, :-1, :]


def completion_logprobs(model, batch: dict, temperature: float = 1.0, with_entropy: bool = False):
    """Per-token log pi(c_t | prefix) over the completion, shape (B, K), and (optionally, without grad)
    the per-token entropy. ``temperature`` must match the sampling temperature."""
    K = batch["logits_to_keep"]
    logits = completion_logits(model, batch["input_ids"], batch["attention_mask"], K) / temperature
    logps = selective_log_softmax(logits, batch["input_ids"][:, -K:])
    entropy = None
    if with_entropy:
        with torch.no_grad():
            entropy = entropy_from_logits(logits.detach())
    return logps, entropy


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum() / mask.sum().clamp(min=1.0)

"""Rollouts that branch: continue an episode from a prefix of another (TreePO's trees, ARPO's branches).

A branch is a new :class:`Sample` whose completion starts as a copy of its parent's first ``k`` tokens, with
the parent's loss mask and old log-probs for them, and whose environment is rebuilt by replaying the
parent's model turns in that prefix (environments are deterministic functions of what the model wrote).
``rollout.run_episodes`` then continues all branches together; the cached engine prefills each distinct
prefix once. Branch points are *turn boundaries*: right after an environment observation, where the next
model turn begins, so a branch never splits a model turn.

Why the old log-probs stay exact: the prefix's log-probs were computed by the same weights when the parent
was sampled (no update happens inside a rollout), and the continuation's come from the logits it is sampled
from, with the prefix in the key/value cache at its true positions: both equal a fresh scoring of the full
sequence up to float round-off (tests/reference_impls/test_grpo_family_b.py checks it).
"""
from __future__ import annotations

import torch

from .grpo import grpo_loss
from ...rollout import Sample, run_episodes


def model_runs(loss_mask: list[int]) -> list[tuple[int, int]]:
    """(start, end) of each maximal run of model tokens (loss mask 1)."""
    runs, start = [], None
    for t, m in enumerate(loss_mask + [0]):
        if m and start is None:
            start = t
        elif not m and start is not None:
            runs.append((start, t))
            start = None
    return runs


def turn_boundaries(sample: Sample) -> list[int]:
    """Completion offsets where a model turn begins after an environment observation (branch points)."""
    runs = model_runs(sample.loss_mask)
    return [start for start, _ in runs[1:]]


def branch(tokenizer, task, problem, parent: Sample, cut: int, env_config=None):
    """A new episode sharing ``parent``'s first ``cut`` completion tokens, and its env replayed to there."""
    env = task.make(problem, env_config)
    env.reset()
    turns = 0
    for start, end in model_runs(parent.loss_mask[:cut]):
        result = env.step(tokenizer.decode(parent.completion_ids[start:end], skip_special_tokens=True))
        turns += 1
        if result.done:
            raise ValueError(f"the environment ended the episode before offset {cut}: not a branch point")
    child = Sample(prompt_ids=list(parent.prompt_ids), completion_ids=list(parent.completion_ids[:cut]),
                   loss_mask=list(parent.loss_mask[:cut]), old_logprobs=list(parent.old_logprobs[:cut]),
                   turns=turns, segments=[dict(s) for s in parent.segments[:1 + 2 * turns]], group=parent.group,
                   turn_spans=list(parent.turn_spans[:turns]))
    return env, child


def continue_branches(model, tokenizer, envs, children, config):
    """Run the branches to the end of their episodes (``rollout.run_episodes``); each keeps the ``info`` it
    was given (its place in the tree) on top of the environment's verdict."""
    tags = [dict(c.info) for c in children]
    stats = run_episodes(model, tokenizer, envs, children, config)  # fills the children in place
    for child, tag in zip(children, tags):
        child.info = {**child.info, **tag}
    return children, stats


def token_advantage_loss(logps, old_logps, advantages, mask, cfg, token_advantages=None, ref_logps=None,
                         max_completion_length=None, seq_normalizer=None, token_normalizer=None):
    """GRPO's clipped surrogate (``grpo.grpo_loss``) with a per-token advantage (B, T) when
    ``token_advantages`` is given (segment/step-level credit), else the per-sequence one broadcast."""
    A = advantages if token_advantages is None else token_advantages.to(logps.dtype)
    return grpo_loss(logps, old_logps, A, mask, cfg, ref_logps=ref_logps, max_completion_length=max_completion_length,
                     seq_normalizer=seq_normalizer, token_normalizer=token_normalizer)


def group_normalised(values: list[float], scale: bool = True) -> list[float]:
    """(v - mean) / (std + 1e-4) with Bessel's std; all 0 for a constant or single-member set."""
    if len(values) < 2 or max(values) == min(values):
        return [0.0] * len(values)
    t = torch.tensor(values, dtype=torch.float64)
    out = t - t.mean()
    if scale:
        out = out / (t.std() + 1e-4)
    return out.tolist()

"""The one interface every algorithm implements, and what the trainer hands it.

The trainer (``train.py``) owns the loop: seeding, drawing problems, rollouts, the reference model's
log-probs, step counting, timing, logging, checkpoints and reducing metrics across ranks by name. An
algorithm owns only its update::

    class GRPO(Algorithm):
        Config = Config                     # its options (fields declared with options.option)
        def update(self, ctx, batch):       # one optimisation phase on one rollout batch
            ...
            return metrics                  # {name: value} or a Metrics of weighted means

The trainer calls, in order: ``algo = Cls(ctx)`` once (build what lives for the whole run: PPO's
critic, DPO's pairs); ``algo.modules()`` (extra modules checkpointed beside the policy); then each
step ``algo.update(ctx, batch)`` with ``batch`` a :class:`RolloutBatch` (``None`` for an offline
algorithm, ``online = False``, which draws its own data). Algorithms never write the trainer's state:
``ctx.step`` is the number of completed steps, set by the trainer.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch

from . import distributed
from .options import ConfigError


@dataclass
class Context:
    """Everything an algorithm may use; built and owned by the trainer."""

    policy: torch.nn.Module  # the model being trained
    model: torch.nn.Module  # what to run forward passes on (the DDP wrapper when world > 1)
    ref: torch.nn.Module | None  # frozen reference; None when the algorithm asked for none
    optimizer: torch.optim.Optimizer
    tokenizer: Any
    device: torch.device
    train: Any  # the run's TrainConfig
    config: Any  # the algorithm's Config
    task: Any  # the environment's EnvSpec
    env_options: dict  # validated options of the environment
    pool: list  # the train problems steps draw from
    rollout_config: Any  # rollout.RolloutConfig
    out: Path  # the run directory
    rank: int = 0
    world: int = 1
    step: int = 0  # completed optimisation steps (the trainer's; read-only here)


@dataclass
class RolloutBatch:
    """One step's episodes: ``samples`` grouped by prompt (rows g*G .. g*G+G-1 answer prompt g)."""

    samples: list
    rewards: torch.Tensor  # (N,) float32 episode rewards
    lengths: torch.Tensor  # (N,) completion tokens (model + env)
    full: dict  # common.collate of every sample: input_ids, attention_mask, loss_mask, old_logprobs
    ref_logps: torch.Tensor | None  # (N, K) reference log-probs of the completions, when ctx.ref exists
    group_size: int


class Metrics:
    """Named weighted means. Across DDP ranks each name is reduced as sum(value * weight) / sum(weight)."""

    def __init__(self):
        self._sum: dict[str, float] = {}
        self._weight: dict[str, float] = {}

    def add(self, name: str, value: float, weight: float = 1.0) -> None:
        self._sum[name] = self._sum.get(name, 0.0) + float(value) * weight
        self._weight[name] = self._weight.get(name, 0.0) + weight

    def add_total(self, name: str, total: float, weight: float) -> None:
        """Add an already weighted sum (e.g. a sum over tokens with the token count as weight)."""
        self._sum[name] = self._sum.get(name, 0.0) + float(total)
        self._weight[name] = self._weight.get(name, 0.0) + weight

    def update(self, values: dict, weight: float = 1.0) -> "Metrics":
        for k, v in values.items():
            self.add(k, v, weight)
        return self

    def reduce(self) -> dict[str, float]:
        """The means, over every rank (every rank must call this with the same names)."""
        names = sorted(self._sum)
        totals = distributed.all_reduce([self._sum[n] for n in names] + [self._weight[n] for n in names])
        k = len(names)
        return {n: totals[i] / totals[k + i] if totals[k + i] else 0.0 for i, n in enumerate(names)}


class Algorithm:
    """Base of every algorithm (see the module docstring)."""

    Config: ClassVar[type]
    online: ClassVar[bool] = True  # False: no per-step rollout (DPO trains on stored preference pairs)
    min_group_size: ClassVar[int] = 1  # group-relative methods need >= 2 samples per prompt
    distributed_ok: ClassVar[bool] = True

    def __init__(self, ctx: Context):
        self.cfg = ctx.config

    @classmethod
    def uses_reference(cls, cfg) -> bool:
        """Whether the trainer must keep a frozen reference model (a KL term). Default: ``beta != 0``."""
        return bool(getattr(cfg, "beta", 0.0))

    @classmethod
    def check(cls, cfg, train) -> None:
        """Cross-option checks against the run's TrainConfig, before any model is loaded (ConfigError)."""
        if train.group_size < cls.min_group_size:
            raise ConfigError(f"--group-size: {train.group_size} is too small for this algorithm: group-relative "
                              f"methods need at least {cls.min_group_size} samples per problem")

    def modules(self) -> dict[str, torch.nn.Module]:
        """Extra modules optimised and checkpointed with the policy (PPO's critic)."""
        return {}

    def update(self, ctx: Context, batch: RolloutBatch | None) -> dict | Metrics:
        raise NotImplementedError

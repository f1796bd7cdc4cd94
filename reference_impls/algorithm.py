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

Two optional hooks shape the data of an online step (the defaults are plain GRPO/PPO sampling)::

    problems = algo.draw(ctx, rng)           # which problems this step rolls out (filtering, resampling,
                                             # hints: SRPO, GRESO, GHPO); default P uniform draws
    batch, stats = algo.collect(ctx, problems)   # how they are rolled out (extra samples, branches,
                                             # off-policy demonstrations: DARS, TreePO, LUFFY); default
                                             # collect_batch(ctx, problems): G samples each

State an algorithm keeps across steps (a reward history, a buffer) goes in ``state_dict`` /
``load_state_dict`` (JSON-serialisable), which the trainer saves with every checkpoint so that a resumed
run continues exactly; tensors that are modules go in ``modules()``.
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
    env_config: Any  # the environment's typed config (resolved once by the trainer)
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


def step_seed(seed: int, step: int, rank: int = 0) -> int:
    """The seed of one step's randomness on one rank (the trainer seeds every step with it)."""
    return seed * 1_000_003 + step * 1009 + rank


def shared_rng(ctx: Context, rng):
    """The step's random stream as rank 0 has it, for decisions every rank must make identically (which
    problems the whole world draws from a history every rank shares). In one process: ``rng`` itself."""
    import random

    return rng if ctx.world == 1 else random.Random(step_seed(ctx.train.seed, ctx.step, 0))


class Algorithm:
    """Base of every algorithm (see the module docstring)."""

    Config: ClassVar[type]
    online: ClassVar[bool] = True  # False: no per-step rollout (DPO trains on stored preference pairs)
    min_group_size: ClassVar[int] = 1  # group-relative methods need >= 2 samples per prompt

    def __init__(self, ctx: Context):
        self.cfg = ctx.config

    @classmethod
    def uses_reference(cls, cfg) -> bool:
        """Whether the trainer must keep a frozen reference model (a KL term). Default: ``beta != 0``."""
        return bool(getattr(cfg, "beta", 0.0))

    @classmethod
    def check(cls, cfg, train, env_spec) -> None:
        """Cross-option checks against the run's TrainConfig and the environment's resolved ``EnvSpec`` (test
        what the env offers, e.g. ``env_spec.steps``, never its name), before any model is loaded
        (ConfigError)."""
        if train.group_size < cls.min_group_size:
            raise ConfigError(f"--group-size: {train.group_size} is too small for this algorithm: group-relative "
                              f"methods need at least {cls.min_group_size} samples per problem", field="group_size")

    def modules(self) -> dict[str, torch.nn.Module]:
        """Extra modules optimised and checkpointed with the policy (PPO's critic)."""
        return {}

    def draw(self, ctx: Context, rng) -> list:
        """This step's problems: ``prompts_per_step`` uniform draws from the train pool (``rng`` is the
        step's own ``random.Random``, so a resumed run draws the same)."""
        return [ctx.pool[rng.randrange(len(ctx.pool))] for _ in range(ctx.train.prompts_per_step)]

    def collect(self, ctx: Context, problems: list) -> tuple["RolloutBatch", dict]:
        """Roll out ``problems`` into a batch (default: ``group_size`` samples each)."""
        return collect_batch(ctx, problems)

    def state_dict(self) -> dict:
        """JSON-serialisable state kept across steps (saved in every checkpoint)."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore what ``state_dict`` returned (on resume)."""

    def update(self, ctx: Context, batch: RolloutBatch | None) -> dict | Metrics:
        raise NotImplementedError


def collect_batch(ctx: Context, problems: list, group_size: int | None = None, rollout_config=None
                  ) -> tuple[RolloutBatch, dict]:
    """The standard rollout of a step: ``group_size`` samples of each problem (the run's G unless given),
    collated, with the reference's log-probs of the completions when there is a reference. Returns the
    batch and the rollout's statistics (``generated_tokens``, ``rollout_s``, ...)."""
    import dataclasses

    from .rollout import rollout

    cfg = rollout_config or ctx.rollout_config
    if group_size is not None and group_size != cfg.group_size:
        cfg = dataclasses.replace(cfg, group_size=group_size)
    samples, stats = rollout(ctx.policy, ctx.tokenizer, ctx.task, problems, cfg)
    return batch_from_samples(ctx, samples, cfg.group_size), stats


def batch_from_samples(ctx: Context, samples: list, group_size: int) -> RolloutBatch:
    """A :class:`RolloutBatch` of already generated samples (laid out group by group)."""
    from .common import collate, completion_logprobs

    full = collate(samples, ctx.tokenizer.pad_token_id, ctx.device)
    ref_logps = None
    if ctx.ref is not None:
        with torch.no_grad():
            ref_logps, _ = completion_logprobs(ctx.ref, full, ctx.train.temperature,
                                               share_prompts=ctx.train.share_prompts)
    return RolloutBatch(samples=samples, rewards=torch.tensor([s.reward for s in samples], dtype=torch.float32),
                        lengths=torch.tensor([len(s.completion_ids) for s in samples], dtype=torch.float32),
                        full=full, ref_logps=ref_logps, group_size=group_size)

"""What every offline algorithm of this family shares: its training data (preference pairs, labelled
episodes) is built once, before the first step, from the starting policy's own rollouts, or copied from a
file the user gives.

:class:`OfflineAlgorithm` owns that skeleton, so DPO, its variants, Step-DPO, LCPO and KTO write only what
their data is:

- the rollouts use the run's ``ctx.rollout_config`` (group size, turn and episode lengths, temperature,
  environment options and rollout engine), never a hand-built copy of it;
- the prompts are ``n`` draws from the train pool with their own random stream, a function of the run's seed
  only (``seed + OFFLINE_SEED_OFFSET``), so the data does not depend on how many steps run;
- under torchrun, rank 0 builds and writes the file and every rank then reads the same file.
"""
from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Callable, ClassVar

from ... import distributed
from ...algorithm import Algorithm, Context
from ...options import ConfigError
from ...rundir import RunDir

#: the offline data's own seed: the run's seed plus this (a prime, far from any step seed)
OFFLINE_SEED_OFFSET = 104729


def epoch_indices(n: int, per_step: int, seed: int, step: int) -> list[int]:
    """Which of ``n`` stored items step ``step`` trains on: ``per_step`` items in epoch order, pass e over the
    items being a fixed permutation of (seed, e), so every item is seen once per pass and a resumed run draws
    the same items."""
    idx = []
    for j in range(step * per_step, (step + 1) * per_step):
        epoch, pos = divmod(j, n)
        perm = list(range(n))
        random.Random(seed * 7919 + epoch).shuffle(perm)
        idx.append(perm[pos])
    return idx


class OfflineAlgorithm(Algorithm):
    """Base of the algorithms that train on data built once (``online = False``: no rollout per step).

    ``data_file_option``: the Config field naming a file of ready-made data (copied instead of built); it must
    exist when given. The frozen reference is kept by default (reference-free variants say otherwise)."""

    online = False
    data_file_option: ClassVar[str] = ""

    @classmethod
    def uses_reference(cls, cfg) -> bool:
        return True

    @classmethod
    def check(cls, cfg, train, env_spec) -> None:
        super().check(cfg, train, env_spec)
        given = getattr(cfg, cls.data_file_option, "") if cls.data_file_option else ""
        if given and not Path(given).is_file():
            raise ConfigError(f"--{cls.data_file_option.replace('_', '-')}: no such file {given!r}",
                              field=cls.data_file_option)

    @staticmethod
    def offline_seed(ctx: Context) -> int:
        return ctx.train.seed + OFFLINE_SEED_OFFSET

    def offline_prompts(self, ctx: Context, n: int) -> list:
        """``n`` problems drawn from the train pool with the offline data's own random stream."""
        rng = random.Random(self.offline_seed(ctx))
        return [ctx.pool[rng.randrange(len(ctx.pool))] for _ in range(n)]

    def run_dir(self, ctx: Context) -> RunDir:
        run_dir = RunDir(Path(ctx.out))
        run_dir.path.mkdir(parents=True, exist_ok=True)
        return run_dir

    def build_once(self, ctx: Context, path: Path, copy_from: str, build: Callable[[Path], None]) -> None:
        """Make ``path`` exist on every rank: rank 0 copies ``copy_from`` (when given) or calls ``build(path)``
        unless the file is already there (a resumed run keeps its data); every rank then waits for it."""
        if ctx.rank == 0 and not path.exists():
            if copy_from:
                shutil.copyfile(copy_from, path)
            else:
                build(path)
        distributed.barrier()

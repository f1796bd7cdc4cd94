"""Data-parallel plumbing (torchrun / DDP); every helper is a no-op in a single process."""
from __future__ import annotations

import os

import torch
import torch.distributed as dist


def setup() -> tuple[int, int]:
    """(rank, world size); initialises the process group when launched by torchrun with WORLD_SIZE > 1."""
    if "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def all_reduce(values: list[float], op: str = "sum") -> list[float]:
    """Element-wise sum (or max) of ``values`` over ranks."""
    if not dist.is_initialized():
        return list(values)
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM)
    return t.tolist()


def barrier() -> None:
    if dist.is_initialized():
        dist.barrier()


def shutdown() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()

"""Data-parallel plumbing (torchrun / DDP); every helper is a no-op in a single process.

The collectives here run on gloo (CPU) and on NCCL (CUDA): NCCL only moves CUDA tensors, so every tensor
a helper sends lives on ``comm_device()`` (the rank's GPU under NCCL, the CPU under gloo).
"""
from __future__ import annotations

import hashlib
import os

import torch
import torch.distributed as dist


def setup() -> tuple[int, int]:
    """(rank, world size); initialises the process group when launched by torchrun with WORLD_SIZE > 1."""
    if "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1 and not dist.is_initialized():
        if torch.cuda.is_available():
            # NCCL's collectives (and all_gather_object) use the current device: one GPU per local rank
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def comm_device() -> torch.device:
    """Where tensors handed to a collective must live: the current GPU under NCCL, else the CPU."""
    if dist.is_initialized() and dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def all_reduce(values: list[float], op: str = "sum") -> list[float]:
    """Element-wise sum (or max) of ``values`` over ranks."""
    if not dist.is_initialized():
        return list(values)
    t = torch.tensor(values, dtype=torch.float64, device=comm_device())
    dist.all_reduce(t, op=dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM)
    return t.cpu().tolist()


def all_gather_object(obj) -> list:
    """``[obj of rank 0, obj of rank 1, ...]`` (picklable objects); ``[obj]`` in a single process."""
    if not dist.is_initialized():
        return [obj]
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def broadcast_module(module: torch.nn.Module, src: int = 0) -> None:
    """Copy rank ``src``'s parameters and buffers into every rank's ``module`` (identical replicas)."""
    if not dist.is_initialized():
        return
    with torch.no_grad():
        for t in list(module.parameters()) + list(module.buffers()):
            moved = t.data.to(comm_device())
            dist.broadcast(moved, src)
            if moved.data_ptr() != t.data.data_ptr():
                t.data.copy_(moved)


def sum_gradients(params: list[torch.nn.Parameter]) -> None:
    """Replace each parameter's gradient by its sum over ranks, in one flat all-reduce per dtype.

    A parameter without a gradient counts as zeros and gets a zero gradient, so after the call every rank
    holds the same gradient for every parameter (an optimizer then steps identically everywhere: AdamW
    treats "no gradient" and "zero gradient" differently)."""
    if not dist.is_initialized():
        return
    device = comm_device()
    by_dtype: dict[torch.dtype, list[torch.nn.Parameter]] = {}
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        by_dtype.setdefault(p.grad.dtype, []).append(p)
    for group in by_dtype.values():
        flat = torch.cat([p.grad.reshape(-1).to(device) for p in group])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        offset = 0
        for p in group:
            n = p.grad.numel()
            p.grad.copy_(flat[offset:offset + n].view_as(p.grad))
            offset += n


def state_digest(state: dict[str, torch.Tensor]) -> str:
    """SHA-256 of a state dict's names, shapes, dtypes and exact bytes (sorted by name): two replicas hold
    identical weights exactly when their digests agree."""
    h = hashlib.sha256()
    for name in sorted(state):
        t = state[name].detach().cpu().contiguous()
        h.update(f"{name}|{tuple(t.shape)}|{t.dtype}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def barrier() -> None:
    if dist.is_initialized():
        dist.barrier()


def shutdown() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()

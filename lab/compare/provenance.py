"""What a cell record stores so that it can be reproduced and its times read: the code, the packages and the
host it ran on (issue 41, item 7), with the CPU's model and vector instruction sets (``cpu_info``).

``Host`` samples the machine when a cell starts and when it ends: ``provenance(start)`` then gives the git
commit (and whether the tree had uncommitted changes), the versions of torch, transformers and trl, the thread
counts, the 1-minute load average at both ends and the share of CPU time the hypervisor stole from this machine
over the cell (``/proc/stat``'s steal column; None where the file is missing, as on macOS). Time, tokens and
memory in a record depend on these; the budget (work) does not.
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("torch", "transformers", "trl")


def cpu_times(stat: str | None = None) -> tuple[float, float] | None:
    """(steal, total) jiffies of all CPUs from ``/proc/stat``'s ``cpu`` line (``stat``: its text, for tests);
    None where there is no such file or line."""
    if stat is None:
        try:
            stat = Path("/proc/stat").read_text()
        except OSError:
            return None
    for line in stat.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            values = [float(v) for v in fields[1:]]
            # user nice system idle iowait irq softirq steal [guest guest_nice: already counted in user/nice]
            return (values[7] if len(values) > 7 else 0.0), sum(values[:8])
    return None


def steal_fraction(start: tuple[float, float] | None, end: tuple[float, float] | None) -> float | None:
    """The share of CPU time stolen between two ``cpu_times`` samples (None if either is missing)."""
    if start is None or end is None or end[1] <= start[1]:
        return None
    return round((end[0] - start[0]) / (end[1] - start[1]), 4)


def load_1min() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


#: records that grids write while they run, tracked so that a grid can span sessions (results/grid-runs: a cell's
#: pass@k counts go into a committed partial file) or shipped (results), and their load logs: data, not the
#: code a record is about, so changes there do not make a checkout "dirty"
RECORD_PATHS = ("results",)  # lab.shipped.RESULTS, grids in progress (results/grid-runs) included


def git_state(root: Path = ROOT) -> dict:
    """{"commit": sha or None, "dirty": bool or None} of the checkout the code runs from (None outside git).
    ``dirty``: tracked files changed and not committed, outside the grids' own records (``RECORD_PATHS``)."""
    def git(*args):
        try:
            out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                 *(f":(exclude){p}" for p in RECORD_PATHS)) if commit else None
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def versions() -> dict:
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


#: the vector instruction sets that decide which kernels torch's CPU build runs, so the bits a float op gives
#: (a warm start trained again on a CPU without AVX-512 got other weights, with SFT losses equal to ~1e-6)
ISA_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile")


def cpu_info(cpuinfo: str | None = None) -> dict | None:
    """{"model": the CPU's model name, "isa": which of ``ISA_FLAGS`` it has} from ``/proc/cpuinfo``
    (``cpuinfo``: its text, for tests); None where there is no such file."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return None
    model, flags = None, set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and model is None:
            model = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    return {"model": model, "isa": [f for f in ISA_FLAGS if f in flags]}


@dataclass(frozen=True)
class Host:
    """The host's counters at one moment (a cell's start)."""

    cpu: tuple[float, float] | None
    load_1min: float | None

    @classmethod
    def sample(cls) -> "Host":
        return cls(cpu_times(), load_1min())


def provenance(start: Host) -> dict:
    """The record's ``provenance``: code, packages, threads and the host's load and steal from ``start`` to now."""
    import torch

    end = Host.sample()
    return {**git_state(), "versions": versions(), "platform": sys.platform, "cpu": cpu_info(),
            "threads": {"torch": torch.get_num_threads(), "cpu_count": os.cpu_count(),
                        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")},
            "load_1min": {"start": start.load_1min, "end": end.load_1min},
            "steal_frac": steal_fraction(start.cpu, end.cpu)}

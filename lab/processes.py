"""Processes of the run manager's runs, by pid and start time: a pid alone can be reused by another process,
so every record pairs it with the kernel's start time of the process (``process_start_token``), and nothing
is signalled or killed unless both still match. Through psutil (Linux, macOS, Windows); on Linux the start
time is read from /proc.
"""
from __future__ import annotations

import os
import signal
from pathlib import Path

import psutil


def process_start_token(pid: int | None) -> str | None:
    """The kernel's start time of ``pid`` (None if no such live process). Zombies count as dead.
    Read from /proc where it exists (Linux); elsewhere (macOS) from psutil's creation time."""
    if not pid:
        return None
    stat_file = Path(f"/proc/{pid}/stat")
    if Path("/proc/self/stat").exists():
        try:
            stat = stat_file.read_text()
        except OSError:
            return None
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] == "Z":
            try:  # reap it if it is our child (the worker's parent may be this process)
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            return None
        return fields[19]  # field 22 of /proc/pid/stat: starttime
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return repr(proc.create_time())
    except psutil.Error:
        return None


def is_alive(pid: int | None, token: str | None) -> bool:
    current = process_start_token(pid)
    return current is not None and (token is None or current == token)


def signal_process(pid: int, token: str | None, sig: int = signal.SIGTERM) -> bool:
    """Send ``sig`` to the process if it is still the one recorded (same creation time)."""
    if not is_alive(pid, token):
        return False
    try:
        psutil.Process(pid).send_signal(sig)
        return True
    except psutil.Error:
        return False


def kill_tree(pid: int, token: str | None) -> None:
    """Kill a recorded process and every process it started."""
    if not is_alive(pid, token):
        return
    try:
        proc = psutil.Process(pid)
        for p in [*proc.children(recursive=True), proc]:
            try:
                p.kill()
            except psutil.Error:
                pass
    except psutil.Error:
        pass

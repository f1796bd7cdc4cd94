"""A run's worker: the process ``python -m lab.runs worker RUN_ID`` (started by ``RunManager.schedule`` in a
session of its own), the parent of the run's trainer. It starts the trainer on the run's folder, waits for it,
passes a stop on, records how the run ended in the registry and starts the next queued run.

The trainer is ``python -m reference_impls.train --prepared RUN`` (``--resume RUN`` for a resumed run): it
reads the run's config.json, written validated by ``RunManager.submit``, as the whole config.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from typing import TYPE_CHECKING

from reference_impls.rundir import RunDir, RunDirError

from .processes import kill_tree

if TYPE_CHECKING:
    from .runs import RunManager

#: seconds a stop before the first RL step is left to the trainer before the worker kills it (``_wait_trainer``)
STOP_GRACE_S = 3.0
STOPPED_BEFORE_RL = "stopped before the first RL step (model load or warm start): nothing to checkpoint"


def run(manager: RunManager, run_id: str) -> int:
    """Train ``run_id`` in a child process, record the outcome, schedule the next run; 0."""
    from .runs import PROJECT_ROOT

    row = manager.row(run_id)
    files = RunDir(manager.run_dir(run_id))
    files.path.mkdir(parents=True, exist_ok=True)
    if row["resume"]:
        argv = ["--resume", str(files.path)]
    else:
        # a run resumed without a checkpoint (stopped or failed before its first one) starts again: the
        # previous attempt's files go, or the trainer would refuse a folder holding another run's files
        clear_attempt(files)
        argv = ["--prepared", str(files.path)]
    started = float(row["started"] or 0.0)
    with open(files.log_path, "ab", buffering=0) as log:
        log.write(f"$ python -m reference_impls.train {' '.join(argv)}\n".encode())
        proc = subprocess.Popen(
            [manager.python, "-m", "reference_impls.train", *argv], cwd=PROJECT_ROOT,
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        if manager.record_trainer(run_id, proc.pid):
            proc.send_signal(signal.SIGTERM)
        # a stop arriving while we wait goes straight to the trainer (it holds the pid)
        signal.signal(signal.SIGTERM, lambda *_: proc.send_signal(signal.SIGTERM))
        rc = _wait_trainer(manager, proc, run_id, files, started)
    # a stop that ended the trainer before it began RL (killed below, or by the signal itself before the
    # trainer's handler existed) is a stop, not a failure
    cut_short = rc != 0 and manager.row(run_id)["stop_requested"] and before_rl(files, started)
    if cut_short:
        files.write_status("stopped", 0, _planned_steps(files), note=STOPPED_BEFORE_RL)
    status, metrics = manager.outcome(files.path)
    error = None
    if cut_short:
        status = "stopped"
    elif rc != 0 or status not in ("finished", "stopped"):
        status = "failed"
        error = f"killed by signal {-rc}" if rc < 0 else f"trainer exited with code {rc}; see log.txt"
    manager.record_outcome(run_id, status, metrics, error)
    manager.schedule()
    return 0


def _planned_steps(files: RunDir) -> int:
    try:
        return int(files.read_config().get("steps", 0))
    except (RunDirError, TypeError, ValueError):
        return 0


def _wait_trainer(manager: RunManager, proc: subprocess.Popen, run_id: str, files: RunDir, started: float) -> int:
    """Wait for the trainer; its exit code. The trainer acts on a stop after its current step; before its first
    RL step (model load or conversion, warm start) there is nothing to checkpoint, so a stop still pending
    ``STOP_GRACE_S`` seconds later kills it instead of waiting up to a minute for the load or an SFT step to end."""
    stop_seen = None
    while True:
        try:
            return proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
        if stop_seen is None and manager.row(run_id)["stop_requested"]:
            stop_seen = time.time()
        if stop_seen is not None and time.time() - stop_seen > STOP_GRACE_S and before_rl(files, started):
            kill_tree(proc.pid, None)
            return proc.wait()


def clear_attempt(files: RunDir) -> list[str]:
    """Remove what an earlier attempt of a run wrote in its folder (the run layout's entries only, never another
    file), keeping config.json and log.txt (the worker appends each attempt's log); returns the removed names."""
    removed = []
    for entry in sorted(files.path.iterdir()) if files.path.is_dir() else ():
        if entry.name in ("config.json", "log.txt") or not RunDir.owns(entry.name):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
        removed.append(entry.name)
    return removed


def before_rl(files: RunDir, started: float) -> bool:
    """Whether the trainer of a run (re)started at ``started`` has not begun RL: it has written no status since
    (loading the model) or is in its warm start."""
    status = files.read_status()
    return float(status.get("updated", 0.0)) < started or status.get("phase") == "warm-start"

"""The run manager: training runs as separate processes, tracked in a SQLite registry.

    python -m lab.runs list
    python -m lab.runs show RUN_ID
    python -m lab.runs stop RUN_ID      # SIGTERM -> the trainer checkpoints -> exits
    python -m lab.runs resume RUN_ID    # queued again; continues from its last checkpoint
    python -m lab.runs delete RUN_ID

``submit`` validates the config with the trainer's own typed configs (``train.resolve``) and writes
``RUN/config.json`` once; each run is then started as ``python -m lab.runs worker RUN_ID`` in a new
session. The worker starts the trainer (``python -m reference_impls.train --config RUN/config.json``)
as its child, waits for it, records how it ended, and starts the next queued run, so the queue moves
even when no UI is open. The app never trains in its own process: a crashing run cannot take it down.

Run ids match ``RUN_ID_PATTERN`` and always resolve inside the runs folder, so no command can write or
delete outside it. Processes are handled through psutil (liveness by pid and creation time, signals,
process groups), which works on Linux, macOS and Windows.

Statuses: queued -> running -> finished | failed | stopped; stopped and failed runs can be resumed. A stop
request is recorded at once (``stop_requested``, shown as "stopping" by ``Run.shown_status``) and the final
state when the trainer has exited.

A run is named by the implementation it runs (``calculator-dapo``: ``Run.name``), recorded at submit: the
Lab passes the one it launched; otherwise it is the registry's implementation whose switches the config
matches most specifically (``implementation_for``).
At most ``max_running`` runs train at once (default 1: one CPU run); others wait queued. Scheduling
takes SQLite's write lock (BEGIN IMMEDIATE), so two sessions pressing Run at once both register and
exactly one starts. A run whose processes vanished (kill -9, reboot) is marked failed on the next look.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from atlas_data import data_dir
from reference_impls.rundir import RunDir, read_jsonl  # noqa: F401  (read_jsonl: part of this module's face)

PROJECT_ROOT = Path(__file__).resolve().parents[1]
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
STATUSES = ("queued", "running", "finished", "failed", "stopped")
TRAINER_STATE_TO_STATUS = {"completed": "finished", "stopped": "stopped", "failed": "failed"}

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    implementation TEXT NOT NULL,
    env TEXT NOT NULL,
    model TEXT NOT NULL,
    config TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('queued','running','finished','failed','stopped')),
    pid INTEGER,
    worker_pid INTEGER,
    pid_start TEXT,
    worker_start TEXT,
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    final_metrics TEXT,
    run_dir TEXT NOT NULL,
    resume INTEGER NOT NULL DEFAULT 0,
    stop_requested INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    impl_id TEXT,
    preset TEXT
);
"""
#: columns added after the first release of the registry: (name, SQL type), added to an older file on open
ADDED_COLUMNS = (("impl_id", "TEXT"), ("preset", "TEXT"))


@dataclass
class Run:
    id: str
    implementation: str
    env: str
    model: str
    config: dict
    status: str
    run_dir: Path
    created: float
    started: float | None = None
    finished: float | None = None
    pid: int | None = None
    worker_pid: int | None = None
    final_metrics: dict = field(default_factory=dict)
    error: str | None = None
    resume: bool = False
    impl_id: str | None = None
    stop_requested: bool = False
    preset: str | None = None  # the Lab preset it was launched with (None: from the command line)

    @property
    def name(self) -> str:
        """What the run runs, as the Lab and the Runs page name it: its implementation's id
        (``calculator-dapo``), or ``ENV-ALGO`` for a run recorded without one."""
        return self.impl_id or f"{self.env}-{self.implementation}"

    @property
    def shown_status(self) -> str:
        """The status, with "stopping" for a running run whose stop was requested and has not ended yet."""
        return "stopping" if self.status == "running" and self.stop_requested else self.status

    @property
    def files(self) -> RunDir:
        return RunDir(self.run_dir)

    @property
    def log_path(self) -> Path:
        return self.files.log_path

    @property
    def metrics_path(self) -> Path:
        return self.files.metrics_path

    @property
    def samples_path(self) -> Path:
        return self.files.samples_path


def _row_to_run(row: sqlite3.Row) -> Run:
    return Run(
        id=row["id"], implementation=row["implementation"], env=row["env"], model=row["model"],
        config=json.loads(row["config"]), status=row["status"], run_dir=Path(row["run_dir"]),
        created=row["created"], started=row["started"], finished=row["finished"], pid=row["pid"],
        worker_pid=row["worker_pid"], final_metrics=json.loads(row["final_metrics"] or "{}"),
        error=row["error"], resume=bool(row["resume"]), impl_id=row["impl_id"],
        stop_requested=bool(row["stop_requested"]), preset=row["preset"],
    )


def implementation_for(config: dict) -> str | None:
    """The id of the registered implementation a run config runs: among those with the config's algorithm and
    environment whose switches (algorithm and environment options) all hold in it, the one with the most
    switches (``calculator-dapo`` over ``calculator-grpo`` for GRPO with DAPO's loss); None when none matches."""
    from reference_impls import registry
    from reference_impls.envs import get_env
    from reference_impls.options import specs

    algorithm, env = registry.algorithms().get(config.get("algo")), config.get("env")
    if algorithm is None:
        return None
    # an option the config leaves out has its default (a CLI run may give only --loss-type)
    algo_config = {s.name: s.default for s in specs(algorithm.Config)}
    algo_config.update({k: v for k, v in config.items() if k in algo_config})
    algo_config.update(config.get("algo_config") or {})
    try:
        env_options = {s.name: s.default for s in get_env(env).option_specs()}
    except (KeyError, ValueError):
        env_options = {}
    env_options.update(config.get("env_options") or {})

    def same(a, b) -> bool:
        return list(a) == list(b) if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) else a == b

    best, best_size = None, -1
    for impl in registry.implementations():
        if (impl.algo, impl.env) != (config.get("algo"), env):
            continue
        switches = [(algo_config, impl.algo_options), (env_options, impl.env_options)]
        if all(k in have and same(have[k], v) for have, wanted in switches for k, v in wanted.items()):
            size = len(impl.algo_options) + len(impl.env_options)
            if size > best_size:
                best, best_size = impl.id, size
    return best


# -- process identity (a pid alone can be reused by another process) --------------------------------
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


def check_run_id(run_id: str) -> str:
    if not isinstance(run_id, str) or not RUN_ID_PATTERN.fullmatch(run_id):
        raise ValueError(f"invalid run id {run_id!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a "
                         "letter or digit")
    return run_id


def config_to_argv(config: dict) -> list[str]:
    """A run config as ``reference_impls.train`` flags (bools as --x / --no-x); for showing a run's command."""
    argv: list[str] = []
    for key, value in config.items():
        if value is None:
            continue
        if key in ("env_options", "algo_config"):
            if key == "env_options":
                argv += [f"--env-option={k}={','.join(map(str, v)) if isinstance(v, list) else v}"
                         for k, v in value.items()]
            else:
                argv += config_to_argv(value)
            continue
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            argv.append(flag if value else "--no-" + key.replace("_", "-"))
        else:
            argv += [flag, str(value)]
    return argv


class RunManager:
    def __init__(self, root: Path | None = None, max_running: int = 1, python: str | None = None):
        self.root = Path(root or data_dir() / "runs")
        self.root.mkdir(parents=True, exist_ok=True)
        self.db_path = self.root / "registry.sqlite"
        self.max_running = max_running
        self.python = python or sys.executable
        with self._db() as db:
            db.executescript(SCHEMA)
            have = {r["name"] for r in db.execute("PRAGMA table_info(runs)")}
            for name, kind in ADDED_COLUMNS:
                if name not in have:
                    db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")

    @contextmanager
    def _db(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.db_path, timeout=30, isolation_level=None)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA journal_mode=WAL")
        try:
            if write:
                db.execute("BEGIN IMMEDIATE")  # one writer at a time: scheduling is atomic
            yield db
            if write:
                db.execute("COMMIT")
        except BaseException:
            if write and db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    # -- queries ---------------------------------------------------------------------------
    def get(self, run_id: str) -> Run:
        check_run_id(run_id)
        with self._db() as db:
            row = db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise KeyError(f"unknown run '{run_id}'")
        return _row_to_run(row)

    def list(self) -> list[Run]:
        with self._db() as db:
            rows = db.execute("SELECT * FROM runs ORDER BY created DESC, id DESC").fetchall()
        return [_row_to_run(r) for r in rows]

    # -- lifecycle -------------------------------------------------------------------------
    def run_dir(self, run_id: str) -> Path:
        """The folder of ``run_id``: always a direct child of the runs folder."""
        path = (self.root / check_run_id(run_id)).resolve()
        if path.parent != self.root.resolve():
            raise ValueError(f"invalid run id {run_id!r}: it would leave the runs folder")
        return path

    def submit(self, config: dict, run_id: str | None = None, impl_id: str | None = None,
               preset: str | None = None) -> Run:
        """Validate ``config`` (TrainConfig data: run options, algorithm options flat or under
        ``algo_config``, ``env_options``) with the trainer's typed configs, write ``RUN/config.json``,
        register the run (queued) and start it if a slot is free. Raises ConfigError before anything is
        written when an option is invalid. ``impl_id`` names the implementation launched (the Lab's choice);
        without it, the one the config matches (``implementation_for``); ``preset``, the Lab preset used."""
        from reference_impls.train import config_from_dict, resolve

        for required in ("algo", "env", "model", "steps"):
            if required not in config:
                raise ValueError(f"run config needs '{required}'")
        run_id = run_id or time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
        run_dir = self.run_dir(run_id)
        if run_dir.exists() and any(run_dir.iterdir()):
            raise ValueError(f"run folder {run_dir} already exists and is not empty")
        cfg = config_from_dict({**config, "out": str(run_dir)})
        resolve(cfg)  # ConfigError names the option, the value and what is allowed
        resolved = dataclasses.asdict(cfg)
        if impl_id is not None:
            from reference_impls import registry

            if impl_id not in registry.by_id():
                raise ValueError(f"unknown implementation {impl_id!r} (python -m reference_impls.train --list)")
        impl_id = impl_id or implementation_for(resolved)
        with self._db(write=True) as db:
            db.execute(
                "INSERT INTO runs (id, implementation, env, model, config, status, created, run_dir, impl_id, preset) "
                "VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?)",
                (run_id, cfg.algo, cfg.env, cfg.model, json.dumps(resolved), time.time(), str(run_dir), impl_id,
                 preset),
            )
        RunDir(run_dir).write_config(resolved)
        self.schedule()
        return self.get(run_id)

    def schedule(self) -> list[str]:
        """Start queued runs (oldest first) while fewer than ``max_running`` are running."""
        started = []
        with self._db(write=True) as db:
            running = db.execute("SELECT COUNT(*) FROM runs WHERE status = 'running'").fetchone()[0]
            queued = db.execute("SELECT id FROM runs WHERE status = 'queued' ORDER BY created, id").fetchall()
            for row in queued[: max(0, self.max_running - running)]:
                proc = subprocess.Popen(
                    [self.python, "-m", "lab.runs", "--root", str(self.root), "worker", row["id"]],
                    cwd=PROJECT_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, start_new_session=True,
                )
                db.execute(
                    "UPDATE runs SET status='running', worker_pid=?, worker_start=?, pid=NULL, pid_start=NULL, "
                    "started=?, finished=NULL, error=NULL, stop_requested=0 WHERE id=?",
                    (proc.pid, process_start_token(proc.pid), time.time(), row["id"]),
                )
                started.append(row["id"])
        return started

    def refresh(self) -> list[Run]:
        """Mark runs whose processes vanished as failed (or as what their status file says), then schedule."""
        with self._db(write=True) as db:
            for row in db.execute("SELECT * FROM runs WHERE status = 'running'").fetchall():
                if is_alive(row["worker_pid"], row["worker_start"]) or is_alive(row["pid"], row["pid_start"]):
                    continue
                status, metrics = self._outcome(Path(row["run_dir"]))
                if status == "running":
                    status = "failed"
                db.execute(
                    "UPDATE runs SET status=?, finished=?, final_metrics=?, error=COALESCE(error, ?) WHERE id=?",
                    (status, time.time(), json.dumps(metrics), None if status != "failed" else "the run's process vanished", row["id"]),
                )
        self.schedule()
        return self.list()

    def stop(self, run_id: str) -> Run:
        """Queued: stopped at once. Running: SIGTERM; the trainer checkpoints and exits as 'stopped'."""
        run = self.get(run_id)
        with self._db(write=True) as db:
            if run.status == "queued":
                db.execute("UPDATE runs SET status='stopped', finished=? WHERE id=?", (time.time(), run_id))
            elif run.status == "running":
                db.execute("UPDATE runs SET stop_requested=1 WHERE id=?", (run_id,))
        if run.status == "running":
            row = self._row(run_id)
            if row["pid"]:
                signal_process(row["pid"], row["pid_start"], signal.SIGTERM)
            # else: the worker sees stop_requested before it starts the trainer
        return self.get(run_id)

    def resume(self, run_id: str) -> Run:
        run = self.get(run_id)
        if run.status not in ("stopped", "failed"):
            raise ValueError(f"run '{run_id}' is {run.status}; only stopped or failed runs can be resumed")
        files = RunDir(run.run_dir)
        resumable = files.config_path.exists() and files.latest_checkpoint() is not None
        with self._db(write=True) as db:
            db.execute(
                "UPDATE runs SET status='queued', resume=?, finished=NULL, error=NULL, created=created WHERE id=?",
                (int(resumable), run_id),
            )
        self.schedule()
        return self.get(run_id)

    def delete(self, run_id: str) -> None:
        """Forget a run: kill its processes if any, remove its folder and its registry row."""
        row = self._row(run_id)
        run_dir = self.run_dir(run_id)  # never a folder outside the runs folder, whatever the row says
        for pid, token in ((row["worker_pid"], row["worker_start"]), (row["pid"], row["pid_start"])):
            kill_tree(pid, token)
        with self._db(write=True) as db:
            db.execute("DELETE FROM runs WHERE id=?", (run_id,))
        shutil.rmtree(run_dir, ignore_errors=True)
        self.schedule()

    def wait(self, run_id: str, timeout: float = 600, poll: float = 0.5) -> Run:
        """Block until the run leaves queued/running (tests and scripts)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.refresh()
            run = self.get(run_id)
            if run.status not in ("queued", "running"):
                return run
            time.sleep(poll)
        raise TimeoutError(f"run '{run_id}' still {self.get(run_id).status} after {timeout}s")

    # -- worker side ------------------------------------------------------------------------
    def _row(self, run_id: str) -> sqlite3.Row:
        check_run_id(run_id)
        with self._db() as db:
            row = db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise KeyError(f"unknown run '{run_id}'")
        return row

    @staticmethod
    def _outcome(run_dir: Path) -> tuple[str, dict]:
        """(status from the trainer's status.json, last metrics line)."""
        files = RunDir(run_dir)
        state = files.read_status().get("state", "failed")
        rows = files.metrics(last=1)
        return TRAINER_STATE_TO_STATUS.get(state, state), rows[-1] if rows else {}

    def _wait_trainer(self, proc: subprocess.Popen, run_id: str, files: RunDir, started: float) -> int:
        """Wait for the trainer; its exit code. The trainer acts on a stop after its
        current step; before its first RL step (model load or conversion, warm start) there is nothing to
        checkpoint, so a stop still pending ``STOP_GRACE_S`` seconds later kills it instead of waiting up to a
        minute for the load or an SFT step to end."""
        stop_seen = None
        while True:
            try:
                return proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                pass
            if stop_seen is None and self._row(run_id)["stop_requested"]:
                stop_seen = time.time()
            if stop_seen is not None and time.time() - stop_seen > STOP_GRACE_S and before_rl(files, started):
                kill_tree(proc.pid, None)
                return proc.wait()

    def run_worker(self, run_id: str) -> int:
        """Body of ``runs worker RUN_ID``: train in a child process, record the outcome, schedule next."""
        row = self._row(run_id)
        files = RunDir(self.run_dir(run_id))
        files.path.mkdir(parents=True, exist_ok=True)
        config = json.loads(row["config"])
        if row["resume"]:
            argv = ["--resume", str(files.path), "--steps", str(config["steps"])]
        else:
            # a run resumed without a checkpoint (stopped or failed before its first one) starts again: the
            # previous attempt's files go, or the trainer would refuse a folder holding another run's files
            clear_attempt(files)
            if not files.config_path.exists():  # registered before config.json was written by submit
                files.write_config(config)
            argv = ["--config", str(files.config_path), "--out", str(files.path)]
        with open(files.log_path, "ab", buffering=0) as log:
            log.write(f"$ python -m reference_impls.train {' '.join(argv)}\n".encode())
            proc = subprocess.Popen(
                [self.python, "-m", "reference_impls.train", *argv], cwd=PROJECT_ROOT,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
            with self._db(write=True) as db:
                db.execute("UPDATE runs SET pid=?, pid_start=? WHERE id=?", (proc.pid, process_start_token(proc.pid), run_id))
                stop_now = db.execute("SELECT stop_requested FROM runs WHERE id=?", (run_id,)).fetchone()[0]
            if stop_now:
                proc.send_signal(signal.SIGTERM)
            # a stop arriving while we wait goes straight to the trainer (it holds the pid)
            signal.signal(signal.SIGTERM, lambda *_: proc.send_signal(signal.SIGTERM))
            rc = self._wait_trainer(proc, run_id, files, float(row["started"] or 0.0))
        # a stop that ended the trainer before it began RL (killed below, or by the signal itself before the
        # trainer's handler existed) is a stop, not a failure
        cut_short = rc != 0 and self._row(run_id)["stop_requested"] and before_rl(files, float(row["started"] or 0.0))
        if cut_short:
            files.write_status("stopped", 0, int(config["steps"]), note=STOPPED_BEFORE_RL)
        status, metrics = self._outcome(files.path)
        error = None
        if cut_short:
            status = "stopped"
        elif rc != 0 or status not in ("finished", "stopped"):
            status = "failed"
            error = f"killed by signal {-rc}" if rc < 0 else f"trainer exited with code {rc}; see log.txt"
        with self._db(write=True) as db:
            db.execute(
                "UPDATE runs SET status=?, finished=?, final_metrics=?, error=? WHERE id=? AND status='running'",
                (status, time.time(), json.dumps(metrics), error, run_id),
            )
        self.schedule()
        return 0


#: seconds a stop before the first RL step is left to the trainer before the worker kills it (RunManager._wait_trainer)
STOP_GRACE_S = 3.0
STOPPED_BEFORE_RL = "stopped before the first RL step (model load or warm start): nothing to checkpoint"


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


# -- reading a run's files (for the Lab and Runs pages; tolerant of a line being written) -----------
def progress(run: Run, metrics: list[dict]) -> tuple[int, int, float | None]:
    """(steps done, total steps, ETA in seconds or None) from the metrics written so far."""
    total = int(run.config.get("steps", 0))
    if not metrics:
        return 0, total, None
    done = int(metrics[-1].get("step", len(metrics)))
    first = metrics[0]
    steps_timed = done - int(first.get("step", 1)) + 1
    wall = float(metrics[-1].get("wall_s", 0.0)) - float(first.get("wall_s", 0.0)) + float(first.get("step_s", 0.0))
    per_step = wall / steps_timed if steps_timed > 0 and wall > 0 else None
    eta = per_step * max(0, total - done) if per_step else None
    return done, total, eta


def warm_start_progress(run: Run) -> dict | None:
    """The SFT warm start's progress (``--sft-steps``), or None when the run has none (yet)."""
    rows = run.files.warm_start()
    if not rows:
        return None
    last = rows[-1]
    return {"step": int(last["step"]), "steps": int(last["steps"]), "losses": [r["loss"] for r in rows],
            "done": int(last["step"]) >= int(last["steps"])}


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


@dataclass(frozen=True)
class Stage:
    """Where a run is, for the Lab's progress bar: ``kind`` is one of queued, converting, loading, warm-start,
    rl, ended; ``text`` says it with its counts; ``fraction`` is how far the stage is (0-1); ``eta_s`` is
    the time left, from the step times measured so far (None before one step of the stage has ended)."""

    kind: str
    text: str
    fraction: float
    eta_s: float | None = None


def converted_model_missing(model: str) -> bool:
    """Whether loading ``model`` starts by converting it (SmolLM2's first load: reference_impls.models)."""
    from reference_impls import models

    return model == "smollm2-135m-instruct" and not (models.models_dir() / model / "config.json").exists()


def run_stage(run: Run, metrics: list[dict] | None = None, status: dict | None = None,
              warm: list[dict] | None = None) -> Stage:
    """The stage of ``run`` from its files: the trainer's status.json (written from the warm start on), the
    warm start's and the RL steps' lines. A running run whose trainer has written nothing since the run
    (re)started is loading its model, or converting it on SmolLM2's first use."""
    metrics = read_jsonl(run.metrics_path) if metrics is None else metrics
    status = run.files.read_status() if status is None else status
    warm = run.files.warm_start() if warm is None else warm
    done, total, eta = progress(run, metrics)
    rl_text = f"RL step {done}/{total}"
    if run.status == "queued":
        return Stage("queued", "queued: starts when the running run ends", 0.0)
    if run.status != "running":
        return Stage("ended", f"{rl_text} · {run.status}", done / total if total else 0.0)
    fresh = float(status.get("updated", 0.0)) >= float(run.started or 0.0)
    if metrics and fresh:
        left = f" · about {_minutes(eta)} left (measured step times)" if eta is not None else ""
        running = f" · step {done + 1} running" if done < total else ""
        return Stage("rl", rl_text + running + left, done / total if total else 0.0, eta)
    steps = int(status.get("sft_steps") or (warm[-1]["steps"] if warm else 0)) or 1
    step = int(warm[-1]["step"]) if warm else 0
    if fresh and status.get("phase") == "warm-start" and step < steps:
        if step == 0:
            return Stage("warm-start", f"warm start (SFT on demonstrations): step 1/{steps} running", 0.0)
        # from the second step on, the rate between steps: the first step's time includes building the
        # demonstrations
        first = warm[0]
        timed = step - int(first["step"])
        per_step = ((float(warm[-1].get("wall_s", 0.0)) - float(first.get("wall_s", 0.0))) / timed if timed > 0
                    else float(warm[-1].get("wall_s", 0.0)) / step)
        eta_warm = per_step * (steps - step) if per_step > 0 else None
        left = f" · about {_minutes(eta_warm)} left in the warm start" if eta_warm else ""
        return Stage("warm-start", f"warm start (SFT on demonstrations): step {step}/{steps} done · loss "
                     f"{float(warm[-1]['loss']):.3f}" + left, step / steps, eta_warm)
    if fresh:  # the trainer is in RL before its first step's line (or between the warm start and RL)
        return Stage("rl", ("warm start done · " if warm else "") + f"{rl_text} · step {done + 1} running (time "
                     "left known after it)", 0.0)
    if converted_model_missing(run.model):
        return Stage("converting", "converting the model: SmolLM2's GGUF file into a PyTorch model (first "
                     "SmolLM2 run only)", 0.0)
    return Stage("loading", f"starting: loading the model ({run.model}) and preparing the run", 0.0)


def metrics_csv(runs: list[Run]) -> str:
    """All metrics of ``runs`` as one CSV (a run column first)."""
    import csv
    import io

    rows = [{"run": r.id, **m} for r in runs for m in read_jsonl(r.metrics_path)]
    fields = ["run"] + sorted({k for row in rows for k in row if k != "run"}, key=lambda k: (k != "step", k))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _format_run(run: Run) -> str:
    metrics = ", ".join(f"{k}={v:.3g}" for k, v in run.final_metrics.items() if isinstance(v, float) and k in ("reward_mean", "accuracy", "loss"))
    return f"{run.id:<26} {run.shown_status:<9} {run.name:<28} {run.model:<22} {metrics}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.runs", description="Manage training runs.")
    ap.add_argument("--root", type=Path, help="runs folder (default: the data dir's runs/)")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="all runs, newest first")
    for name, help_text in (("show", "one run's record, as JSON"), ("stop", "stop a run (it checkpoints)"),
                            ("resume", "resume a stopped or failed run"), ("delete", "delete a run and its files"),
                            ("worker", "internal: run one training process")):
        sub.add_parser(name, help=help_text).add_argument("run_id")
    args = ap.parse_args(argv)
    manager = RunManager(args.root)
    try:
        if args.command == "worker":
            return manager.run_worker(args.run_id)
        if args.command == "list":
            runs = manager.refresh()
            print(f"{'id':<26} {'status':<9} {'implementation':<28} {'model':<22} final metrics")
            for run in runs:
                print(_format_run(run))
            return 0
        manager.refresh()
        if args.command == "show":
            run = manager.get(args.run_id)
            print(json.dumps({**run.__dict__, "run_dir": str(run.run_dir)}, indent=1, default=str))
        elif args.command == "stop":
            print(_format_run(manager.stop(args.run_id)))
        elif args.command == "resume":
            print(_format_run(manager.resume(args.run_id)))
        elif args.command == "delete":
            manager.delete(args.run_id)
            print(f"deleted {args.run_id}")
        return 0
    except (KeyError, ValueError) as e:  # ConfigError is a ValueError
        message = e.args[0] if e.args else str(e)  # KeyError's str() adds quotes around the message
        print(f"error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

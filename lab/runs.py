"""The run manager: training runs as separate processes, tracked in a SQLite registry.

    python -m lab.runs list
    python -m lab.runs show RUN_ID
    python -m lab.runs stop RUN_ID      # SIGTERM -> the trainer checkpoints -> exits
    python -m lab.runs resume RUN_ID    # queued again; continues from its last checkpoint
    python -m lab.runs delete RUN_ID

``submit`` takes a config validated already (the Lab's form: ``lab.catalog.check`` gives a
``run_config.Resolved``) or validates a plain one itself (scripts, tests: ``run_config.resolve``), writes
``RUN/config.json``, the run's one stored config, and registers the run; its registry row holds what
is derived from that file (algorithm, environment, model) and the run's state, never a second copy of the
config (``Run.config`` is read from the file). Each run is then started as ``python -m lab.runs worker
RUN_ID`` in a new session. The worker starts the trainer (``python -m reference_impls.train --prepared
RUN``, or ``--resume RUN``: the trainer reads config.json as validated, checking only its integrity) as its
child, waits for it, records how it ended, and starts the next queued run, so the queue moves even when
no UI is open. The app never trains in its own process: a crashing run cannot take it down.

Run ids match ``RUN_ID_PATTERN`` and always resolve inside the runs folder, so no command can write or
delete outside it. Processes are handled by ``lab.processes`` (liveness by pid and start time, signals,
process trees). What the pages show of a run (its stage, progress, the metrics as CSV) is
``app.presentation``'s.

Statuses: queued -> running -> finished | failed | stopped; stopped and failed runs can be resumed. A stop
request is recorded at once (``stop_requested``, shown as "stopping" by ``Run.shown_status``) and the final
state when the trainer has exited.

A run is named by the implementation it runs (``calculator-dapo``: ``Run.name``), recorded at submit: the
Lab passes the one it launched; otherwise it is the registry's implementation whose switches the config
matches most specifically (``catalog.implementation_for``).
At most ``max_running`` runs train at once (default 1: one CPU run); others wait queued. Scheduling
takes SQLite's write lock (BEGIN IMMEDIATE), so two sessions pressing Run at once both register and
exactly one starts. A run whose processes vanished (kill -9, reboot) is marked failed on the next look.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
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
from typing import TYPE_CHECKING

from atlas_data import data_dir
from reference_impls.rundir import RunDir, RunDirError

from .processes import is_alive, kill_tree, process_start_token, signal_process

if TYPE_CHECKING:  # the trainer's modules import torch: submit imports them when it runs
    from reference_impls.run_config import Resolved

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
#: a column an older registry has and this one does not: its copy of each run's config (config.json is the one)
DROPPED_CONFIG_COLUMN = "config"


@dataclass
class Run:
    id: str
    implementation: str
    env: str
    model: str
    config: dict  # the run's config.json ({} when the file is gone)
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


def _stored_config(run_dir: Path) -> dict:
    """A run's one stored config, its config.json ({} when missing or unreadable)."""
    try:
        return RunDir(run_dir).read_config()
    except RunDirError:
        return {}


def _row_to_run(row: sqlite3.Row) -> Run:
    return Run(
        id=row["id"], implementation=row["implementation"], env=row["env"], model=row["model"],
        config=_stored_config(Path(row["run_dir"])), status=row["status"], run_dir=Path(row["run_dir"]),
        created=row["created"], started=row["started"], finished=row["finished"], pid=row["pid"],
        worker_pid=row["worker_pid"], final_metrics=json.loads(row["final_metrics"] or "{}"),
        error=row["error"], resume=bool(row["resume"]), impl_id=row["impl_id"],
        stop_requested=bool(row["stop_requested"]), preset=row["preset"],
    )


def check_run_id(run_id: str) -> str:
    if not isinstance(run_id, str) or not RUN_ID_PATTERN.fullmatch(run_id):
        raise ValueError(f"invalid run id {run_id!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a "
                         "letter or digit")
    return run_id


class RunManager:
    def __init__(self, root: Path | None = None, max_running: int = 1, python: str | None = None):
        self.root = Path(root or data_dir() / "runs")
        self.root.mkdir(parents=True, exist_ok=True)
        self.db_path = self.root / "registry.sqlite"
        self.max_running = max_running
        self.python = python or sys.executable
        with self._db() as db:
            db.executescript(SCHEMA)
        with self._db(write=True) as db:
            have = {r["name"] for r in db.execute("PRAGMA table_info(runs)")}
            for name, kind in ADDED_COLUMNS:
                if name not in have:
                    db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
            if DROPPED_CONFIG_COLUMN in have:
                self._move_configs_to_files(db)

    @staticmethod
    def _move_configs_to_files(db: sqlite3.Connection) -> None:
        """An older registry kept a copy of each run's config: a run folder without its config.json (a run
        registered before the file was written) gets it from that copy, then the column goes."""
        for row in db.execute(f"SELECT run_dir, {DROPPED_CONFIG_COLUMN} FROM runs").fetchall():
            files = RunDir(row["run_dir"])
            if files.path.is_dir() and not files.config_path.exists():
                files.write_config(json.loads(row[DROPPED_CONFIG_COLUMN]))
        db.execute(f"ALTER TABLE runs DROP COLUMN {DROPPED_CONFIG_COLUMN}")

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
        return _row_to_run(self.row(run_id))

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

    def submit(self, config: Resolved | dict, run_id: str | None = None, impl_id: str | None = None,
               preset: str | None = None) -> Run:
        """Write ``RUN/config.json`` (the run's one stored config), register the run (queued; its row is derived
        from that file) and start it if a slot is free. ``config`` is either validated already (a ``Resolved``:
        the Lab's form, ``lab.catalog.check``), used as it is, or TrainConfig data (run options, algorithm
        options flat or under ``algo_config``, ``env_options``: a script's or a test's), validated here once;
        an invalid option raises ConfigError before anything is written. ``impl_id`` names the implementation
        launched (the Lab's choice); without it, the one the config matches (``catalog.implementation_for``);
        ``preset``, the Lab preset used."""
        from reference_impls.run_config import Resolved, config_from_dict, resolve, stored

        from .catalog import implementation_for

        if not isinstance(config, Resolved):
            for required in ("algo", "env", "model", "steps"):
                if required not in config:
                    raise ValueError(f"run config needs '{required}'")
        run_id = run_id or time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
        run_dir = self.run_dir(run_id)
        if run_dir.exists() and any(run_dir.iterdir()):
            raise ValueError(f"run folder {run_dir} already exists and is not empty")
        if isinstance(config, Resolved):
            cfg = dataclasses.replace(config.cfg, out=str(run_dir))  # where it runs is no option of the form
        else:
            cfg = resolve(config_from_dict({**config, "out": str(run_dir)})).cfg  # ConfigError names the option
        if impl_id is not None:
            from reference_impls import registry

            if impl_id not in registry.by_id():
                raise ValueError(f"unknown implementation {impl_id!r} (python -m reference_impls.train --list)")
        impl_id = impl_id or implementation_for(stored(cfg))
        files = RunDir(run_dir)
        files.write_config(stored(cfg))  # first: a worker started by any session finds the file
        try:
            with self._db(write=True) as db:
                db.execute(
                    "INSERT INTO runs (id, implementation, env, model, status, created, run_dir, impl_id, preset) "
                    "VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?)",
                    (run_id, cfg.algo, cfg.env, cfg.model, time.time(), str(run_dir), impl_id, preset),
                )
        except BaseException:
            files.config_path.unlink(missing_ok=True)  # not registered: leave the folder as it was
            raise
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
                status, metrics = self.outcome(Path(row["run_dir"]))
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
            row = self.row(run_id)
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
        row = self.row(run_id)
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

    # -- the worker's side (lab.worker) ------------------------------------------------------
    def row(self, run_id: str) -> sqlite3.Row:
        """The registry's record of ``run_id`` as it is (the processes' pids and start times included)."""
        check_run_id(run_id)
        with self._db() as db:
            row = db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise KeyError(f"unknown run '{run_id}'")
        return row

    @staticmethod
    def outcome(run_dir: Path) -> tuple[str, dict]:
        """(status from the trainer's status.json, last metrics line)."""
        files = RunDir(run_dir)
        state = files.read_status().get("state", "failed")
        rows = files.metrics(last=1)
        return TRAINER_STATE_TO_STATUS.get(state, state), rows[-1] if rows else {}

    def run_worker(self, run_id: str) -> int:
        """Body of ``runs worker RUN_ID`` (``lab.worker.run``): train in a child process, record the outcome,
        schedule the next."""
        from .worker import run

        return run(self, run_id)

    def record_trainer(self, run_id: str, pid: int) -> bool:
        """Record the trainer process of a running run; whether a stop was asked for meanwhile."""
        with self._db(write=True) as db:
            db.execute("UPDATE runs SET pid=?, pid_start=? WHERE id=?", (pid, process_start_token(pid), run_id))
            return bool(db.execute("SELECT stop_requested FROM runs WHERE id=?", (run_id,)).fetchone()[0])

    def record_outcome(self, run_id: str, status: str, metrics: dict, error: str | None) -> None:
        """Record how a running run ended (a run deleted or marked meanwhile keeps its record)."""
        with self._db(write=True) as db:
            db.execute(
                "UPDATE runs SET status=?, finished=?, final_metrics=?, error=? WHERE id=? AND status='running'",
                (status, time.time(), json.dumps(metrics), error, run_id),
            )


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

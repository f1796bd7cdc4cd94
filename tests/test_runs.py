"""Run manager: real training processes (tiny model), a real SQLite registry."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app.presentation.lab import warm_start_progress
from lab.processes import is_alive
from lab.runs import RunManager

from inprocess import run_main

ROOT = Path(__file__).resolve().parents[1]
QUICK = {"algo": "grpo", "env": "calculator", "model": "tiny", "steps": 2, "prompts_per_step": 2,
         "group_size": 2, "max_new_tokens_per_turn": 16, "max_completion_tokens": 32}


@pytest.fixture
def manager(tmp_path, monkeypatch):
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path / "data"))
    m = RunManager(tmp_path / "runs")
    yield m
    for run in m.list():  # never leave training processes behind
        if run.status in ("running", "queued"):
            m.delete(run.id)


@pytest.fixture(scope="module")
def finished_quick_run(tmp_path_factory):
    """(manager, the run as submitted, the run when done): one QUICK run to its end, shared by the tests that only
    read it (a trainer process costs ~10 s of imports and model building on the 2-core machine)."""
    root = tmp_path_factory.mktemp("finished-run")
    m = RunManager(root / "runs")
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("ATLAS_DATA_DIR", str(root / "data"))
            run = m.submit(QUICK)
        yield m, run, m.wait(run.id, timeout=180)
    finally:
        for left in m.list():  # a run that timed out: never leave its processes behind
            if left.status in ("running", "queued"):
                m.delete(left.id)


def metric_steps(run):
    return [json.loads(line)["step"] for line in run.metrics_path.read_text().splitlines()]


def wait_for(predicate, timeout=120, poll=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(poll)
    raise AssertionError("condition not met in time")


@pytest.mark.xdist_group("test_runs-finished-run")  # with the CLI test: one worker runs the shared run
def test_run_finishes_and_is_recorded(finished_quick_run):
    manager, run, done = finished_quick_run
    assert run.status == "running"
    assert done.status == "finished", (done.error, done.log_path.read_text()[-2000:])
    assert done.final_metrics["step"] == 2 and "reward_mean" in done.final_metrics
    assert metric_steps(done) == [1, 2]
    assert (done.run_dir / "tb").is_dir() and (done.run_dir / "config.json").exists()
    # the registry is a real SQLite file other processes can read
    with sqlite3.connect(manager.db_path) as db:
        assert db.execute("SELECT status FROM runs WHERE id=?", (run.id,)).fetchone()[0] == "finished"


def test_queue_moves_without_a_caller(manager):
    first = manager.submit(QUICK)
    second = manager.submit(QUICK)
    assert (manager.get(first.id).status, manager.get(second.id).status) == ("running", "queued")
    # nobody calls refresh/schedule: the first run's worker starts the second when it ends
    wait_for(lambda: manager.row(second.id)["status"] in ("finished", "failed"), timeout=240)
    assert manager.get(first.id).status == "finished"
    assert manager.get(second.id).status == "finished"


def test_two_sessions_press_run_at_once(manager):
    results = []

    def press():
        results.append(RunManager(manager.root).submit(QUICK).id)

    threads = [threading.Thread(target=press) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    runs = {r.id: r.status for r in manager.list()}
    assert len(runs) == 2 and set(results) == set(runs)
    assert sorted(runs.values()) == ["queued", "running"]


def test_stop_during_the_warm_start(manager):
    run = manager.submit({**QUICK, "sft_steps": 5000, "sft_examples": 16})
    wait_for(lambda: (warm_start_progress(manager.get(run.id)) or {}).get("step", 0) >= 1, timeout=120)
    progress = warm_start_progress(manager.get(run.id))
    assert progress["steps"] == 5000 and not progress["done"] and len(progress["losses"]) == progress["step"]
    manager.stop(run.id)
    done = manager.wait(run.id, timeout=60)
    assert done.status == "stopped", (done.error, done.log_path.read_text()[-2000:])
    assert not (done.run_dir / "metrics.jsonl").exists() or metric_steps(done) == []


def test_stop_checkpoints_then_resume_continues(manager):
    run = manager.submit({**QUICK, "steps": 6, "checkpoint_every": 100})
    wait_for(lambda: run.metrics_path.exists() and metric_steps(run))
    manager.stop(run.id)
    stopped = manager.wait(run.id, timeout=120)
    assert stopped.status == "stopped"
    ckpts = sorted((run.run_dir / "checkpoints").glob("step_*"))
    assert ckpts, "stop must write a checkpoint"
    at_stop = metric_steps(stopped)
    assert at_stop == list(range(1, len(at_stop) + 1)) and len(at_stop) < 6
    manager.resume(run.id)
    done = manager.wait(run.id, timeout=240)
    assert done.status == "finished", done.log_path.read_text()[-2000:]
    assert metric_steps(done) == [1, 2, 3, 4, 5, 6]


def test_kill_9_marks_failed_keeps_metrics_and_resumes(manager):
    run = manager.submit({**QUICK, "steps": 8, "checkpoint_every": 1})
    wait_for(lambda: any((run.run_dir / "checkpoints").glob("step_*")) and len(metric_steps(run)) >= 2)
    pid = manager.row(run.id)["pid"]
    os.kill(pid, signal.SIGKILL)
    failed = manager.wait(run.id, timeout=60)
    assert failed.status == "failed" and "signal 9" in failed.error
    lines = failed.metrics_path.read_text().splitlines()
    steps = [json.loads(line)["step"] for line in lines]  # every line written is intact JSON
    assert steps == list(range(1, len(steps) + 1))
    manager.resume(run.id)
    done = manager.wait(run.id, timeout=240)
    assert done.status == "finished"
    assert metric_steps(done) == list(range(1, 9))


def test_vanished_processes_marked_failed_on_next_look(manager):
    run = manager.submit({**QUICK, "steps": 50})
    wait_for(lambda: manager.row(run.id)["pid"] is not None)
    row = manager.row(run.id)
    os.killpg(os.getpgid(row["worker_pid"]), signal.SIGKILL)  # worker and trainer gone at once
    # a killed process can take a moment to exit (a large trainer unmaps GBs): wait for both
    wait_for(lambda: not is_alive(row["worker_pid"], row["worker_start"])
             and not is_alive(row["pid"], row["pid_start"]), timeout=60)
    assert manager.row(run.id)["status"] == "running"  # nothing noticed yet
    manager.refresh()
    assert manager.get(run.id).status == "failed"


def test_crashing_trainer_is_failed_not_fatal(manager, tmp_path):
    broken = tmp_path / "no-such-model"  # passes validation (a folder with config.json), fails to load
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    run = manager.submit({**QUICK, "model": str(broken)})
    done = manager.wait(run.id, timeout=120)
    assert done.status == "failed" and "exited with code" in done.error
    assert "no-such-model" in done.log_path.read_text()


def test_stop_queued_and_delete(manager):
    first = manager.submit({**QUICK, "steps": 50})
    second = manager.submit(QUICK)
    assert manager.stop(second.id).status == "stopped"
    manager.delete(first.id)
    assert not first.run_dir.exists()
    assert [r.id for r in manager.list()] == [second.id]
    with pytest.raises(KeyError):
        manager.get(first.id)


@pytest.mark.xdist_group("test_runs-finished-run")
def test_cli_list_show_and_errors(finished_quick_run):
    manager, run, _ = finished_quick_run
    from lab.runs import main

    def cli(*args):  # `python -m lab.runs --root ROOT ARGS`, in this process
        return run_main(main, ["--root", manager.root, *args], cwd=ROOT, prog="python -m lab.runs")

    out = cli("list")
    assert out.returncode == 0 and run.id in out.stdout and "finished" in out.stdout
    shown = cli("show", run.id)
    assert json.loads(shown.stdout)["status"] == "finished"
    bad = cli("resume", run.id)
    assert bad.returncode == 2 and "only stopped or failed" in bad.stderr
    missing = cli("stop", "nope")
    assert missing.returncode == 2 and "unknown run 'nope'" in missing.stderr


@pytest.mark.parametrize("bad", ["../../x", "../escape", "a/b", ".hidden", "x" * 65, "run id"])
def test_run_ids_never_leave_the_runs_folder(manager, tmp_path, bad):
    outside = tmp_path / "x"
    outside.mkdir(exist_ok=True)
    (outside / "keep.txt").write_text("user file")
    with pytest.raises(ValueError, match="invalid run id"):
        manager.submit(QUICK, run_id=bad)
    for command in (manager.get, manager.stop, manager.resume, manager.delete):
        with pytest.raises(ValueError, match="invalid run id"):
            command(bad)
    assert (outside / "keep.txt").read_text() == "user file"
    assert manager.list() == []


def test_cli_errors_keep_their_quotes_and_bad_configs_start_nothing(manager):
    # end to end: `python -m lab.runs` exits 2 with the message as written
    r = subprocess.run([sys.executable, "-m", "lab.runs", "--root", str(manager.root), "show", "nope"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.strip() == "error: unknown run 'nope'"
    from reference_impls.options import ConfigError

    for bad in ({"steps": -5}, {"group_size": 0}, {"kl_estimator": "k9", "algo": "ppo"}):
        with pytest.raises(ConfigError):
            manager.submit({**QUICK, **bad})
    assert manager.list() == [] and not any(p.is_dir() for p in manager.root.iterdir())

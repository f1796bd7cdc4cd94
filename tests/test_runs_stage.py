"""The run manager's naming, stop bookkeeping and stage reading (lab.runs), on run records and files written
here: no training process, except the one test that stops a run during its model load."""
import json
import sqlite3
import time

import pytest

from app.presentation.lab import run_stage
from lab.catalog import implementation_for
from lab.runs import Run, RunManager
from lab.worker import STOPPED_BEFORE_RL, before_rl
from reference_impls.rundir import RunDir

QUICK = {"algo": "grpo", "env": "calculator", "model": "tiny", "steps": 2, "prompts_per_step": 2,
         "group_size": 2, "max_new_tokens_per_turn": 16, "max_completion_tokens": 32}


def make_run(tmp_path, status="running", model="tiny", steps=8, started=None, **extra) -> Run:
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    return Run(id="r1", implementation="grpo", env="calculator", model=model, config={"steps": steps},
               status=status, run_dir=run_dir, created=time.time() - 60,
               started=time.time() - 30 if started is None else started, **extra)


def test_a_run_is_named_by_its_implementation():
    dapo = {"algo": "grpo", "env": "calculator", "algo_config": {"loss_type": "dapo", "epsilon_high": 0.28,
                                                                 "dynamic_sampling": True, "overlong_buffer": 32}}
    assert implementation_for(dapo) == "calculator-dapo"
    # the most specific match wins; the plain algorithm on its environment is the base row
    assert implementation_for({"algo": "grpo", "env": "calculator"}) == "calculator-grpo"
    assert implementation_for({"algo": "no-such-algo", "env": "calculator"}) is None


def test_names_and_shown_status(tmp_path):
    run = make_run(tmp_path, impl_id="calculator-dapo")
    assert run.name == "calculator-dapo" and run.shown_status == "running"
    assert make_run(tmp_path).name == "calculator-grpo"  # recorded without an implementation: ENV-ALGO
    assert make_run(tmp_path, stop_requested=True).shown_status == "stopping"
    assert make_run(tmp_path, status="stopped", stop_requested=True).shown_status == "stopped"


def test_submit_records_the_implementation_and_an_older_registry_gains_the_columns_and_loses_the_config(tmp_path, monkeypatch):
    monkeypatch.setattr(RunManager, "schedule", lambda self: [])  # register only: no training process
    root = tmp_path / "runs"
    root.mkdir()
    with sqlite3.connect(root / "registry.sqlite") as db:  # the registry as written before impl_id existed
        db.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, implementation TEXT NOT NULL, env TEXT NOT NULL, "
                   "model TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL, pid INTEGER, worker_pid "
                   "INTEGER, pid_start TEXT, worker_start TEXT, created REAL NOT NULL, started REAL, finished REAL, "
                   "final_metrics TEXT, run_dir TEXT NOT NULL, resume INTEGER NOT NULL DEFAULT 0, stop_requested "
                   "INTEGER NOT NULL DEFAULT 0, error TEXT)")
        db.execute("INSERT INTO runs (id, implementation, env, model, config, status, created, run_dir) VALUES "
                   "('old', 'grpo', 'memory', 'tiny', '{\"steps\": 7}', 'finished', 1, ?)", (str(root / "old"),))
    (root / "old").mkdir()  # a run registered before its config.json was written
    manager = RunManager(root)
    assert manager.get("old").name == "memory-grpo"
    # the registry's copy of the config moved to the run's config.json, the one stored config
    assert manager.get("old").config == {"steps": 7} == RunDir(root / "old").read_config()
    with sqlite3.connect(root / "registry.sqlite") as db:
        assert "config" not in {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    dapo = manager.submit({**QUICK, "max_completion_tokens": 48, "loss_type": "dapo", "epsilon_high": 0.28,
                           "dynamic_sampling": True, "overlong_buffer": 32})
    assert manager.get(dapo.id).name == "calculator-dapo"
    chosen = manager.submit(QUICK, impl_id="calculator-dr-grpo", preset="quick")
    assert (manager.get(chosen.id).name, manager.get(chosen.id).preset) == ("calculator-dr-grpo", "quick")
    assert manager.get(dapo.id).preset is None
    with pytest.raises(ValueError, match="unknown implementation 'nope'"):
        manager.submit(QUICK, impl_id="nope")


def test_stop_is_recorded_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(RunManager, "schedule", lambda self: [])
    manager = RunManager(tmp_path / "runs")
    run = manager.submit(QUICK)
    with manager._db(write=True) as db:  # as schedule() marks it, without a process
        db.execute("UPDATE runs SET status='running', started=? WHERE id=?", (time.time(), run.id))
    assert manager.stop(run.id).shown_status == "stopping"
    assert manager.get(run.id).stop_requested


def test_stage_loading_converting_warm_start_rl_and_ended(tmp_path, monkeypatch):
    run = make_run(tmp_path)
    files = RunDir(run.run_dir)
    assert run_stage(run).kind == "loading" and "tiny" in run_stage(run).text
    smollm2 = make_run(tmp_path, model="smollm2-135m-instruct")
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path / "empty-data"))  # no converted SmolLM2 there
    assert run_stage(smollm2).kind == "converting" and "converting the model" in run_stage(smollm2).text
    # a status.json older than the run's start is a previous attempt's: still loading
    files.write_status("stopped", 3, 8)
    assert run_stage(make_run(tmp_path, started=time.time() + 5)).kind == "loading"
    files.write_status("running", 0, 8, phase="warm-start", sft_step=0, sft_steps=3)
    stage = run_stage(run)
    assert (stage.kind, stage.text) == ("warm-start", "warm start (SFT on demonstrations): step 1/3 running")
    files.warm_start_path.write_text(json.dumps({"step": 1, "steps": 3, "loss": 2.5, "wall_s": 10.0}) + "\n")
    stage = run_stage(run)
    assert stage.kind == "warm-start" and "step 1/3 done" in stage.text and "loss 2.500" in stage.text
    assert stage.eta_s == pytest.approx(20.0) and stage.fraction == pytest.approx(1 / 3)
    with open(files.warm_start_path, "a") as f:  # 10 s for step 1 (with the demonstrations), 4 s a step after
        f.write(json.dumps({"step": 2, "steps": 3, "loss": 2.0, "wall_s": 14.0}) + "\n")
    assert run_stage(run).eta_s == pytest.approx(4.0)
    with open(files.warm_start_path, "a") as f:
        f.write(json.dumps({"step": 3, "steps": 3, "loss": 2.0, "wall_s": 18.0}) + "\n")
    files.write_status("running", 0, 8, phase="warm-start", sft_step=3, sft_steps=3)
    stage = run_stage(run)
    assert stage.kind == "rl" and stage.text.startswith("warm start done · RL step 0/8 · step 1 running")
    assert stage.eta_s is None
    files.write_status("running", 2, 8)
    metrics = [{"step": 1, "wall_s": 20.0, "step_s": 20.0}, {"step": 2, "wall_s": 40.0, "step_s": 20.0}]
    stage = run_stage(run, metrics=metrics)
    assert stage.kind == "rl" and stage.text.startswith("RL step 2/8 · step 3 running")
    assert stage.eta_s == pytest.approx(120.0) and "about 2.0 min left" in stage.text
    assert stage.fraction == pytest.approx(0.25)
    ended = run_stage(make_run(tmp_path, status="stopped"), metrics=metrics)
    assert (ended.kind, ended.text) == ("ended", "RL step 2/8 · stopped")
    assert run_stage(make_run(tmp_path, status="queued")).kind == "queued"


def test_before_rl(tmp_path):
    files = RunDir(tmp_path)
    started = time.time()
    assert before_rl(files, started)  # nothing written yet: loading
    files.write_status("running", 0, 8, phase="warm-start", sft_step=1, sft_steps=3)
    assert before_rl(files, started)
    files.write_status("running", 0, 8)
    assert not before_rl(files, started)


def test_stop_during_the_model_load_ends_within_seconds(tmp_path, monkeypatch):
    """A stop before the trainer's first RL step does not wait for the load or an SFT step to end."""
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path / "data"))
    manager = RunManager(tmp_path / "runs")
    run = manager.submit({**QUICK, "sft_steps": 5000, "sft_examples": 16})
    try:
        manager.stop(run.id)
        assert manager.get(run.id).shown_status == "stopping"
        t0 = time.time()
        done = manager.wait(run.id, timeout=60, poll=0.1)
        assert done.status == "stopped", (done.error, done.log_path.read_text()[-2000:])
        assert done.files.read_status().get("note") == STOPPED_BEFORE_RL
        assert time.time() - t0 < 30
    finally:
        if manager.get(run.id).status in ("running", "queued"):
            manager.delete(run.id)


def test_a_trainer_deaf_to_the_stop_before_rl_is_killed_after_the_grace(tmp_path, monkeypatch):
    """The worker kills a trainer that has not begun RL and ignores the stop (a long model load or SFT step)."""
    import sys

    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path / "data"))
    python = tmp_path / "python"  # the real interpreter, except that the trainer ignores SIGTERM and hangs
    python.write_text(f'#!/bin/sh\nif [ "$2" = "reference_impls.train" ]; then trap "" TERM; exec sleep 120; fi\n'
                      f'exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    manager = RunManager(tmp_path / "runs", python=str(python))
    run = manager.submit(QUICK)
    try:
        for _ in range(100):  # until the worker has started the trainer
            if manager.row(run.id)["pid"]:
                break
            time.sleep(0.1)
        manager.stop(run.id)
        t0 = time.time()
        done = manager.wait(run.id, timeout=60, poll=0.1)
        assert done.status == "stopped" and done.files.read_status().get("note") == STOPPED_BEFORE_RL
        assert time.time() - t0 < 20
    finally:
        if manager.get(run.id).status in ("running", "queued"):
            manager.delete(run.id)


def test_a_run_stopped_before_its_first_checkpoint_resumes_from_the_start(tmp_path, monkeypatch):
    """Resume of a run with no checkpoint starts it again in the same folder (the earlier attempt's files are
    cleared; the trainer would refuse them), and finishes."""
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path / "data"))
    manager = RunManager(tmp_path / "runs")
    run = manager.submit({**QUICK, "sft_steps": 5000, "sft_examples": 16})
    try:
        for _ in range(600):
            if manager.get(run.id).files.warm_start():
                break
            time.sleep(0.2)
        manager.stop(run.id)
        assert manager.wait(run.id, timeout=60).status == "stopped"
        # the same run, now with a short warm start: config.json is the run's one stored config
        RunDir(run.run_dir).write_config({**RunDir(run.run_dir).read_config(), "sft_steps": 1})
        assert manager.get(run.id).config["sft_steps"] == 1
        manager.resume(run.id)
        done = manager.wait(run.id, timeout=180)
        assert done.status == "finished", (done.error, done.log_path.read_text()[-2000:])
        assert [w["steps"] for w in done.files.warm_start()] == [1]
        assert done.log_path.read_text().count("$ python -m reference_impls.train") == 2
    finally:
        if manager.get(run.id).status in ("running", "queued"):
            manager.delete(run.id)


def test_clear_attempt_removes_only_the_run_layout(tmp_path):
    from lab.worker import clear_attempt

    files = RunDir(tmp_path)
    files.write_config({"algo": "grpo", "env": "calculator"})
    files.write_status("stopped", 0, 8)
    (tmp_path / "log.txt").write_text("log")
    (tmp_path / "warm_start.jsonl").write_text("{}\n")
    (tmp_path / "tb").mkdir()
    (tmp_path / "mine.csv").write_text("keep")
    assert clear_attempt(files) == ["status.json", "tb", "warm_start.jsonl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "log.txt", "mine.csv"]

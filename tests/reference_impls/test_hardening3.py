"""Regression tests for issue 47 (hardening, round 3): nothing a user owns is deleted, nothing in a run
folder executes, every sandbox limit holds inside the trainer.

Each test failed on the code before its fix (the commit that adds it says so)."""
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--algo", "grpo", "--env", "calculator", "--model", "tiny", "--steps", "1"]


# -- 1. train --overwrite only removes what the run layout owns, and only in a run folder -----------------

def _users_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "mine"
    (folder / "thesis").mkdir(parents=True)
    (folder / "thesis" / "chapter1.tex").write_text("years of work")
    (folder / "passwords.txt").write_text("hunter2")
    return folder


@pytest.mark.parametrize("flags", [[], ["--overwrite"]])
def test_overwrite_refuses_a_folder_that_is_not_a_run(tmp_path, capsys, flags):
    from reference_impls.train import main

    folder = _users_folder(tmp_path)
    assert main([*FAST, "--out", str(folder), *flags]) == 2
    err = capsys.readouterr().err
    assert "is not a run folder" in err and "passwords.txt" in err and "thesis" in err
    assert "another run" not in err and "--overwrite" not in err and "Traceback" not in err
    assert (folder / "thesis" / "chapter1.tex").read_text() == "years of work"
    assert (folder / "passwords.txt").read_text() == "hunter2"


def test_overwrite_removes_only_the_runs_own_entries(tmp_path, capsys):
    from reference_impls.run_config import config_from_dict
    from reference_impls.train import _prepare_out

    run = tmp_path / "run"
    (run / "checkpoints" / "step_000001").mkdir(parents=True)
    (run / "tb").mkdir()
    (run / "config.json").write_text(json.dumps({"algo": "grpo", "env": "calculator", "lr": 1.0}))
    for name in ("status.json", "metrics.jsonl", "samples.jsonl", "status.json.tmp", "pairs.tmp"):
        (run / name).write_text("{}")
    (run / "notes.txt").write_text("mine")
    (run / "analysis").mkdir()
    (run / "analysis" / "plot.py").write_text("mine")
    _prepare_out(config_from_dict({"algo": "grpo", "env": "calculator", "model": "tiny", "out": str(run)}), True)
    assert sorted(p.name for p in run.iterdir()) == ["analysis", "notes.txt"]
    assert (run / "analysis" / "plot.py").read_text() == "mine"
    assert "kept analysis, notes.txt" in capsys.readouterr().err


def test_a_run_folder_without_overwrite_still_points_at_resume(tmp_path, capsys):
    from reference_impls.train import main

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"algo": "grpo", "env": "calculator", "lr": 1.0}))
    (run / "metrics.jsonl").write_text("")
    assert main([*FAST, "--out", str(run)]) == 2
    err = capsys.readouterr().err
    assert "already holds files of another run" in err and "--resume" in err and "--overwrite" in err
    assert (run / "metrics.jsonl").exists()


def test_out_at_a_file_is_an_error_line_even_with_overwrite(tmp_path, capsys):
    from reference_impls.train import main

    target = tmp_path / "report.txt"
    target.write_text("mine")
    assert main([*FAST, "--out", str(target), "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "is a file, not a folder" in err and "Traceback" not in err
    assert target.read_text() == "mine"


# -- 2. no torch.load runs a pickle ------------------------------------------------------------------------

def _project_py_files():
    skip = {".venv", "node_modules", ".git", "build", "dist"}
    for path in sorted(ROOT.rglob("*.py")):
        if not skip & set(path.relative_to(ROOT).parts):
            yield path


def test_every_torch_load_uses_weights_only_true():
    import ast

    offenders, seen = [], 0
    for path in _project_py_files():
        try:
            tree = ast.parse(path.read_text(), str(path))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "load"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"):
                seen += 1
                kw = {k.arg: k.value for k in node.keywords}
                value = kw.get("weights_only")
                if not (isinstance(value, ast.Constant) and value.value is True):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert seen >= 3  # the scan sees the trainer's loads
    assert not offenders, "torch.load without weights_only=True: " + ", ".join(offenders)


def test_nothing_unpickles_a_file():
    """JSON (or safetensors, or torch.load with weights_only=True) for everything the project reads back: a
    pickle from the data or run folder would run code."""
    import ast

    offenders = []
    for path in _project_py_files():
        try:
            tree = ast.parse(path.read_text(), str(path))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("load", "loads", "Unpickler") and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in ("pickle", "cPickle", "dill")):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, "unpickling: " + ", ".join(offenders)


class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os

        return os.system, (f"touch {self.marker}",)


def test_resume_does_not_run_a_pickle_planted_in_rng_state(tmp_path):
    import torch

    from test_train_cli import FAST as TRAIN_FAST, train

    out, marker = tmp_path / "run", tmp_path / "pwned"
    r = train(*TRAIN_FAST, "--steps", "2", "--keep-checkpoints", "2", "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    torch.save({"python": _Payload(marker), "torch": torch.get_rng_state()},
               out / "checkpoints" / "step_000002" / "rng_rank0.pt")
    r = train("--resume", str(out), "--steps", "3")
    assert not marker.exists(), "the pickle in rng_rank0.pt ran"
    assert r.returncode == 0, r.stderr[-3000:]
    assert "resumed from step_000001" in r.stderr and "never unpickled" in r.stderr
    assert "weights_only` set to `False`" not in r.stderr  # torch's own advice would be the unsafe one
    status = json.loads((out / "status.json").read_text())
    assert status["state"] == "completed" and "step_000002: cannot be read" in status["note"]


# -- 3. one expensive SQL expression is bound in memory and time ------------------------------------------

REPRO_SQL = "SELECT " + ", ".join(["replace(printf('%.*c', 2000, 'x'), 'x', printf('%.*c', 100000, 'y'))"] * 5)


def test_sql_one_expensive_expression_fails_fast_with_a_clear_message():
    import time

    from reference_impls.envs import get_env

    spec = get_env("sql")
    problem = spec.problems("train", 1)[0]
    t0 = time.monotonic()
    obs = spec.make(problem).step(f"<tool>query {REPRO_SQL}</tool>").observation
    answer = spec.make(problem).step(f"<answer>{REPRO_SQL}</answer>")
    assert time.monotonic() - t0 < 5.0  # a correctness bound, not a benchmark (it was 4-15 s and 3 GB)
    assert "10000 bytes" in obs, obs[:500]
    assert answer.done and answer.reward == 0.0 and "10000 bytes" in answer.info["error"]
    # a string built over the limit by an operator is SQLite's error, named
    obs = spec.make(problem).step(
        "<tool>query SELECT replace(printf('%.*c', 2000, 'x'), 'x', printf('%.*c', 100, 'y'))</tool>").observation
    assert "error: string or blob too big" in obs and "at most 10000 bytes" in obs


def test_sql_result_bytes_are_bounded():
    from reference_impls.envs import sql
    from reference_impls.envs import get_env

    problem = get_env("sql").problems("train", 1)[0]
    con = sql.connect_readonly(problem.db_path)
    wide = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 1000) "
            "SELECT printf('%.*c', 9000, 'y') FROM c")
    with pytest.raises(sql.QueryError, match="result too large"):
        sql.run_query(con, wide, max_rows=10000)
    # the connection still answers an ordinary query afterwards (no stale interrupt, no open statement)
    assert sql.run_query(con, "SELECT 1")[1] == [(1,)]


# -- 4. the rlimits layer: the hook cannot be switched off, no process outlives the run, refused by default -

def _sbx_limits():
    from reference_impls import sandbox

    return sandbox.Limits(cpu_seconds=2, wall_seconds=4.0, memory_bytes=256 * 2**20, nprocs=8, max_output_bytes=4096)


def test_rlimits_hook_cannot_be_switched_off_from_inside():
    import socket

    from reference_impls import sandbox

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    code = ("import sys\n"
            "try:\n    sys.modules['__main__']._hook.__defaults__ = ((), 0, ())\n"
            "except Exception as e:\n    print('switch-off failed:', type(e).__name__)\n"
            "import socket\n"
            "try:\n    socket.create_connection(('127.0.0.1', %d), timeout=1); print('CONNECTED')\n"
            "except Exception as e:\n    print('socket refused:', e)\n"
            "try:\n    import subprocess\n"
            "    print('ID', subprocess.run(['id'], capture_output=True, text=True).stdout)\n"
            "except Exception as e:\n    print('id refused:', e)\n" % port)
    r = sandbox.run_python(code, limits=_sbx_limits(), layer="rlimits")
    try:
        conn, _ = listener.accept()
        conn.close()
        connected = True
    except OSError:
        connected = False
    listener.close()
    assert not connected and "CONNECTED" not in r.stdout and "uid=" not in r.stdout, r.stdout + r.stderr
    assert "switch-off failed: AttributeError" in r.stdout
    assert "socket refused: sandbox" in r.stdout and "id refused: sandbox" in r.stdout
    # the other doors to the hook's function object are closed too
    r = sandbox.run_python("import gc\ngc.get_objects()", limits=_sbx_limits(), layer="rlimits")
    assert r.status == "error" and "gc.get_objects is not allowed" in r.stderr


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return False


@pytest.mark.parametrize("layer", ["rlimits"])
def test_rlimits_setsid_grandchild_does_not_outlive_the_run_and_a_clean_exit_is_ok(layer):
    import time

    from reference_impls import sandbox

    code = ("import os, sys, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        print('grandchild', os.getpid(), flush=True)\n"
            "        time.sleep(60)\n"
            "    os._exit(0)\n"
            "os.wait()\n"
            "time.sleep(0.3)\n"
            "print('main done', flush=True)\n")
    t0 = time.monotonic()
    r = sandbox.run_python(code, limits=_sbx_limits(), layer=layer)
    assert r.status == "ok" and r.returncode == 0, (r.status, r.stdout, r.stderr)
    assert "main done" in r.stdout and time.monotonic() - t0 < 3.5  # not held to the wall clock
    pid = int(r.stdout.split("grandchild", 1)[1].split()[0])
    time.sleep(0.2)
    assert not _alive(pid), f"the setsid grandchild {pid} outlived the run"


def test_rlimits_layer_refuses_model_code_unless_asked_for(monkeypatch):
    from reference_impls import sandbox

    monkeypatch.delenv("ATLAS_SANDBOX_LAYER", raising=False)
    monkeypatch.setattr(sandbox, "_probe", lambda: ("rlimits", {"bwrap": "not installed", "unshare": "no userns"}))
    r = sandbox.run_python("print('ran')", limits=_sbx_limits())
    assert r.status == "sandbox_error" and "ran" not in r.stdout
    assert "not a security boundary" in r.stderr and "bwrap: not installed" in r.stderr
    assert "ATLAS_SANDBOX_LAYER=rlimits" in r.stderr and "bubblewrap" in r.stderr
    monkeypatch.setenv("ATLAS_SANDBOX_LAYER", "rlimits")  # the user's opt-in
    assert sandbox.run_python("print('ran')", limits=_sbx_limits()).stdout.strip() == "ran"


# -- Also: a lone surrogate in model text ---------------------------------------------------------------

def test_a_lone_surrogate_is_an_outcome_not_an_exception():
    from reference_impls import sandbox
    from reference_impls.envs import get_env

    r = sandbox.run_python('print("a\ud800b".encode("utf-8", "surrogatepass").hex())', limits=_sbx_limits())
    assert r.status == "ok" and r.stdout.strip() == "61eda080" + "62"  # the character reached the program intact
    r = sandbox.run_python("x = 1\ud800", limits=_sbx_limits())
    assert r.status == "error" and "SyntaxError" in r.stderr
    for name, text in (("code", '<code>def f():\n    return "\ud800"</code>'), ("code-refine", "<run>print(1)\ud800</run>")):
        spec = get_env(name)
        env = spec.make(spec.problems("train", 1)[0])
        env.reset()
        result = env.step(text)  # raised UnicodeEncodeError before
        assert result.reward == 0.0


# -- Also: unclosed tool tags are matched in linear time ------------------------------------------------

def test_unclosed_tool_tags_are_matched_in_linear_time():
    import random
    import re
    import time

    from reference_impls.envs import ToolSpec

    tool = ToolSpec("t", "d", "<tool>", "</tool>", "<r>", "</r>")
    hostile = "<tool>" * 20_000 + "<answer>" * 5_000  # 160 KB of openings, none closed
    t0 = time.monotonic()
    assert tool.first_action(hostile) is None
    assert time.monotonic() - t0 < 2.0  # a correctness bound (it took over 20 s), not a benchmark
    # the same first match as the regular expression, on random texts of tags and words
    rng = random.Random(0)
    pieces = ["<tool>", "</tool>", "<answer>", "</answer>", "x", " ", "<tool", "</answer", "\n"]
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        for mine, ref in ((tool.find_call(text), re.search(r"<tool>(.*?)</tool>", text, re.S)),
                          (tool.find_answer(text), re.search(r"<answer>(.*?)</answer>", text, re.S))):
            assert (mine and (mine.span(), mine.group(1))) == (ref and (ref.span(), ref.group(1))), text


# -- Also: export refuses to overwrite or to write into the run; error lines, not tracebacks -----------

def _fake_run(tmp_path):
    import dataclasses

    from reference_impls.run_config import TrainConfig

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(dataclasses.asdict(TrainConfig(out=str(run)))))
    return run


@pytest.mark.parametrize("where", ["readme", "export_json", "run", "checkpoints", "file"])
def test_export_refuses_to_overwrite_or_write_into_the_run(tmp_path, capsys, where):
    from reference_impls import export

    run = _fake_run(tmp_path)
    out = {"run": run, "checkpoints": run / "checkpoints", "file": tmp_path / "notes.txt"}.get(where, tmp_path / "out")
    if where in ("readme", "export_json"):
        out.mkdir()
        (out / ("README.md" if where == "readme" else "export.json")).write_text("mine")
    if where == "file":
        out.write_text("mine")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert export.main(["--run", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out ") and "Traceback" not in err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before  # nothing written or replaced
    assert export.main(["--run", str(run), "--out", str(tmp_path / "fresh")]) == 0  # a new folder works


def test_train_errors_are_lines_not_tracebacks(tmp_path, capsys):
    from reference_impls.train import main

    assert main([*FAST, "--out", "/proc/self/atlas-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out /proc/self/atlas-run: cannot create the folder") and "Traceback" not in err
    bad = tmp_path / "bad_env.py"
    bad.write_text("def broken(:\n")
    assert main(["--env-module", str(bad), *FAST, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --env-module") and "syntax error at" in err and "bad_env.py:1" in err
    raising = tmp_path / "raising_env.py"
    raising.write_text("x = 1\nraise RuntimeError('no GPU here')\n")
    assert main(["--env-module", str(raising), *FAST, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "importing it raised RuntimeError: no GPU here" in err and "raising_env.py:2" in err
    assert not (tmp_path / "r").exists()


# -- Also: damaged but readable checkpoint files are skipped like truncated ones -------------------------

def test_resume_skips_checkpoints_with_garbage_in_readable_files(tmp_path):
    import os

    from test_train_cli import FAST as TRAIN_FAST, metric_rows, train

    out = tmp_path / "run"
    r = train(*TRAIN_FAST, "--steps", "3", "--keep-checkpoints", "3", "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    (out / "checkpoints" / "step_000003" / "optimizer.pt").write_bytes(os.urandom(4096))
    state = out / "checkpoints" / "step_000002" / "trainer_state.json"
    state.write_text(json.dumps({**json.loads(state.read_text()), "step": "abc"}))
    r = train("--resume", str(out), "--steps", "4")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert "resumed from step_000001" in r.stderr
    status = json.loads((out / "status.json").read_text())
    assert status["state"] == "completed" and status["step"] == 4
    assert "step_000003: cannot be read" in status["note"] and "step_000002: unreadable trainer_state.json" in status["note"]
    assert [row["step"] for row in metric_rows(out)] == [1, 2, 3, 4]


# -- Also: a forced or mislocated bubblewrap is a sandbox_error that stops the run -----------------------

@pytest.fixture
def fresh_probe():
    from reference_impls import sandbox, sandbox_layers

    sandbox._probe.cache_clear()
    sandbox_layers._fallback_interpreter.cache_clear()
    yield sandbox
    sandbox._probe.cache_clear()
    sandbox_layers._fallback_interpreter.cache_clear()


def _bin_without(tmp_path, *names):
    """A PATH holding only links to prlimit, setpriv and unshare (no bwrap unless named)."""
    import os
    import shutil

    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("prlimit", "setpriv", "unshare", *names):
        if shutil.which(name):
            os.symlink(shutil.which(name), folder / name)
    return str(folder)


def test_a_layer_program_is_looked_up_on_the_users_path(tmp_path, monkeypatch, fresh_probe):
    import shutil

    if not shutil.which("bwrap"):
        pytest.skip("needs bubblewrap")
    monkeypatch.setenv("PATH", _bin_without(tmp_path, "bwrap"))
    argv = fresh_probe._command("bwrap", str(tmp_path))[0]
    assert argv[0] == str(tmp_path / "bin" / "bwrap")  # not a bare name resolved in the code's PATH=/usr/bin:/bin


def test_a_forced_layer_that_cannot_work_stops_the_code_env(tmp_path, monkeypatch, fresh_probe):
    from reference_impls.envs import get_env

    monkeypatch.setenv("PATH", _bin_without(tmp_path))
    monkeypatch.setenv("ATLAS_SANDBOX_LAYER", "bwrap")
    r = fresh_probe.run_python("print('ok')")
    assert r.status == "sandbox_error" and "ATLAS_SANDBOX_LAYER=bwrap" in r.stderr and "bwrap is not installed" in r.stderr
    spec = get_env("code")
    env = spec.make(spec.problems("train", 1)[0])
    env.reset()
    with pytest.raises(fresh_probe.SandboxUnavailable, match="cannot run code here"):
        env.step("<code>def f():\n    return 1</code>")  # was: reward 0, status 'error', training went on


def test_training_stops_with_an_error_line_when_the_sandbox_is_unavailable(tmp_path, capsys, monkeypatch):
    from reference_impls import sandbox, train

    def unavailable(self):
        raise sandbox.SandboxUnavailable("the bwrap sandbox layer cannot run code here: bwrap is not installed")

    monkeypatch.setattr(train.Trainer, "run", unavailable)
    out = tmp_path / "run"
    assert train.main([*FAST, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "error: the bwrap sandbox layer cannot run code here" in err and "Traceback" not in err
    status = json.loads((out / "status.json").read_text())
    assert status["state"] == "failed" and "bwrap is not installed" in status["note"]


# -- Also: a run of a sandboxed environment checks the sandbox first and records its layer ---------------

def test_a_sandboxed_run_checks_the_sandbox_first_and_records_its_layer(tmp_path, capsys, monkeypatch):
    from reference_impls import sandbox, train, trainer

    code_run = ["--algo", "grpo", "--env", "code", "--model", "tiny", "--steps", "1", "--prompts-per-step", "2",
                "--group-size", "2", "--max-new-tokens-per-turn", "8", "--max-completion-tokens", "16"]
    with monkeypatch.context() as m:  # a machine where only the rlimits layer works, no opt-in
        m.delenv("ATLAS_SANDBOX_LAYER", raising=False)
        m.setattr(sandbox, "_probe", lambda: ("rlimits", {"bwrap": "not installed", "unshare": "no user namespaces"}))
        m.setattr(trainer, "load_policy", lambda *a, **k: pytest.fail("the model was loaded"))
        assert train.main([*code_run, "--out", str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err
    assert "error: the rlimits sandbox layer cannot run code here" in err and "bubblewrap" in err
    status = json.loads((tmp_path / "refused" / "status.json").read_text())
    assert status["state"] == "failed" and "not a security boundary" in status["note"]
    out = tmp_path / "ok"
    assert train.main([*code_run, "--out", str(out)]) == 0
    assert json.loads((out / "status.json").read_text())["sandbox_layer"] == sandbox.active_layer()


def test_rlimits_hook_does_not_trust_what_model_code_can_replace():
    from reference_impls import sandbox

    code = ("import builtins, os\nbuiltins.isinstance = lambda *a: False\nos.fsdecode = lambda p: 'harmless'\n"
            "open('/proc/self/mem', 'rb')\nprint('OPENED')")
    r = sandbox.run_python(code, limits=_sbx_limits(), layer="rlimits")
    assert "OPENED" not in r.stdout and "opening /proc/self/mem is not allowed" in r.stderr

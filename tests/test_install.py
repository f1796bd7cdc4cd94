"""The project is an installed package: its commands run from any directory, with no PYTHONPATH and
no sys.path tricks anywhere in the code."""
import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def elsewhere_env() -> dict:
    """The environment of a user's shell: no PYTHONPATH pointing at the checkout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}


def run(args: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=elsewhere_env(), capture_output=True, text=True,
                          timeout=timeout)


def test_papers_cli_runs_from_another_directory(tmp_path):
    r = run(["-m", "papers", "stats", "--json"], tmp_path)
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)
    with open(ROOT / "papers" / "data" / "works.csv", newline="") as f:
        shipped = sum(1 for _ in csv.DictReader(f))
    assert stats["works"] >= shipped > 0 and stats["nodes"] == 140  # the shipped data files were found
    r = run(["-m", "papers", "show", "search-r1"], tmp_path)
    assert r.returncode == 0 and "Search-R1" in r.stdout, r.stderr


def test_train_runs_from_another_directory_and_writes_under_it(tmp_path):
    r = run(["-m", "reference_impls.train", "--algo", "grpo", "--env", "calculator", "--model", "tiny",
             "--steps", "1", "--prompts-per-step", "2", "--group-size", "2", "--max-new-tokens-per-turn", "6",
             "--max-completion-tokens", "10", "--out", "run"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()  # a relative --out is the caller's
    assert len(rows) == 1 and json.loads(rows[0])["step"] == 1


def test_imports_resolve_to_this_checkout_from_another_directory(tmp_path):
    modules = ["app.testing", "atlas_data", "benchmarks.stages", "papers", "reference_impls", "taxonomy"]
    code = f"import importlib; print('\\n'.join(importlib.import_module(m).__file__ for m in {modules!r}))"
    r = run(["-c", code], tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == len(modules)
    for line in r.stdout.splitlines():
        assert Path(line).resolve().is_relative_to(ROOT), line


def test_no_sys_path_manipulation_in_the_project():
    pattern = re.compile(r"sys\.path\s*(\.insert|\.append|\.extend|\[|\+=|=)")
    offenders = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "runs")]
        for name in files:
            path = Path(folder, name)
            if not name.endswith(".py") or path == Path(__file__).resolve():
                continue
            for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if pattern.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{no}: {line.strip()}")
    assert not offenders, "\n".join(offenders)

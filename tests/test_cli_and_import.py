import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from papers import parse_bibtex

from inprocess import papers_cli

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT.parent / "shared" / "seed-data"


def run(*args):
    return papers_cli(*args, cwd=ROOT)


def run_subprocess(*args):
    """``python -m papers`` as a real process: the exit code and stderr of the entry point itself."""
    return subprocess.run([sys.executable, "-m", "papers", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_stats_json(catalog):
    r = run("stats", "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    expected = catalog.stats()
    assert {k: s[k] for k in expected} == expected  # the CLI prints the catalog's own counts
    assert (s["nodes_without_description"], s["works_without_node"]) == (0, 0)


def test_list_bibtex_all_works_reparses(catalog):
    r = run("list", "--format", "bibtex")
    assert r.returncode == 0, r.stderr
    entries, failed = parse_bibtex(r.stdout)
    assert not failed
    got = {e["key"]: (e["title"], e.get("year")) for e in entries}
    assert got == {w.key: (w.title, str(w.year) if w.year else None) for w in catalog}


def test_list_filters_and_formats():
    r = run("list", "--node", "math-formal", "--kind", "method", "--year-from", "2025", "--format", "json")
    data = json.loads(r.stdout)
    assert data and all(d["year"] >= 2025 and d["kind"] == "method" for d in data)
    r = run("list", "--node", "math-formal", "--format", "csv")
    assert r.stdout.startswith("key,")


@pytest.mark.parametrize("args,hint", [(("show", "serch-r1"), "search-r1"), (("list", "--node", "memroy"), "memory"), (("list", "--kind", "benchmarks"), "benchmark")])
def test_unknown_values_exit_2_with_suggestion(args, hint):
    r = run_subprocess(*args)  # end to end: `python -m papers` exits 2 with one line on stderr
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and hint in r.stderr and r.stderr.startswith("error: unknown")


def test_show():
    r = run("show", "Search-R1")
    assert r.returncode == 0 and "Search-R1: Training LLMs" in r.stdout and "Search & research agent > " in r.stdout


@pytest.mark.skipif(not SEED.exists(), reason="seed data not beside the checkout")
def test_import_is_deterministic(tmp_path):
    def digest(root):
        files = sorted([*(root / "papers" / "data").rglob("*"), *(root / "taxonomy" / "data").rglob("*")])
        return {str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files if f.is_file()}

    # a real process: the script imports its sibling modules from its own folder (on sys.path as a script)
    r = subprocess.run([sys.executable, "scripts/import_seed.py", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    fresh = digest(tmp_path)
    shipped = {k: v for k, v in digest(ROOT).items() if k in fresh}
    assert fresh and fresh == shipped

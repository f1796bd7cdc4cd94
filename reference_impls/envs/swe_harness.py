"""The swe env's sandboxed harnesses: our code that runs a task's hidden checks, or the repository's own
``tests/``, on a repository in :mod:`reference_impls.sandbox`. The repository arrives as ``repo.json``, a
per-run nonce on stdin tags the harness's JSON lines, and expected values never enter the sandbox: they are
compared here (:func:`run_checks`)."""
from __future__ import annotations

import json
import math
import re
import secrets
from dataclasses import dataclass

from .. import sandbox
from .code import _short

_PRELUDE = r'''
import copy, importlib.machinery, importlib.util, io, json, os, sys, traceback, unittest
NONCE = sys.stdin.readline().strip()
JOB = json.loads(sys.stdin.read())
for _own in ("main.py", "stdin.txt"):  # the repository's code must not find the nonce
    try:
        os.remove(_own)
    except OSError:
        pass
def emit(d):
    try:
        line = json.dumps(d)
    except (TypeError, ValueError):
        line = json.dumps({"ok": False, "error": "result is not JSON-serialisable"})
    sys.__stdout__.write(NONCE + " " + line + "\n")
    sys.__stdout__.flush()
REPO = os.path.abspath("repo")
with open("repo.json", encoding="utf-8") as f:
    FILES = json.load(f)
os.remove("repo.json")
for rel, text in FILES.items():
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise SystemExit("bad path " + repr(rel))
    path = os.path.join(REPO, *parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
os.chdir(REPO)
class RepoFinder:
    """Top-level modules of the repository are importable by name (after the standard library)."""
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if path is not None:
            return None
        return importlib.machinery.PathFinder.find_spec(name, [REPO])
sys.meta_path.append(RepoFinder)
'''

_CHECKS = _PRELUDE + r'''
for module, function, args in JOB["checks"]:
    try:
        fn = getattr(importlib.import_module(module), function)
        emit({"ok": True, "value": fn(*copy.deepcopy(args))})
    except BaseException as e:
        emit({"ok": False, "error": (type(e).__name__ + ": " + str(e))[:200]})
'''

_UNITTEST = _PRELUDE + r'''
stream = io.StringIO()
suite = unittest.TestSuite()
failed_load = []
for rel in sorted(FILES):
    if not (rel.startswith("tests/") and rel.rsplit("/", 1)[-1].startswith("test") and rel.endswith(".py")):
        continue
    name = "tests." + rel[len("tests/"):-3].replace("/", ".")
    try:
        spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, rel))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        suite.addTests(unittest.defaultTestLoader.loadTestsFromModule(mod))
    except BaseException as e:
        failed_load.append(rel + ": " + "".join(traceback.format_exception_only(type(e), e)).strip()[:300])
result = unittest.TextTestRunner(stream=stream, verbosity=1).run(suite)
def short(items):
    return [[t.id(), tb.strip().splitlines()[-1][:200] if tb.strip() else ""] for t, tb in items]
emit({"run": result.testsRun, "failures": short(result.failures), "errors": short(result.errors),
      "load_errors": failed_load, "log": stream.getvalue()[-4000:]})
'''


def _run(harness: str, files: dict[str, str], job: dict, limits: sandbox.Limits, layer: str | None = None):
    """Run one of our harnesses on a repository in the sandbox; the nonce-tagged JSON lines it printed."""
    nonce = "R" + secrets.token_hex(12)
    res = sandbox.check(sandbox.run_python(harness, stdin=nonce + "\n" + json.dumps(job), limits=limits, layer=layer,
                                           files={"repo.json": json.dumps(files)}))
    outs = []
    for line in res.stdout.splitlines():
        if line.startswith(nonce + " "):
            try:
                outs.append(json.loads(line[len(nonce) + 1:]))
            except ValueError:
                continue
    return res, outs


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


@dataclass
class SuiteReport:
    passed: list[bool]  # per check
    failures: list[str]
    status: str
    wall_s: float

    @property
    def fraction(self) -> float:
        return sum(self.passed) / len(self.passed) if self.passed else 0.0


def run_checks(files: dict[str, str], checks, limits: sandbox.Limits | None = None) -> SuiteReport:
    """Run the hidden checks on a repository in the sandbox; values are compared here."""
    res, outs = _run(_CHECKS, files, {"checks": [[c.module, c.function, json.loads(c.args)] for c in checks]},
                     limits or sandbox.Limits())
    passed, failures = [], []
    for i, c in enumerate(checks):
        if i >= len(outs) or "ok" not in outs[i]:
            passed.append(False)
            failures.append(f"{c.call()}: no result ({res.status})")
        elif not outs[i]["ok"]:
            passed.append(False)
            failures.append(f"{c.call()} raised {outs[i].get('error')}")
        else:
            same = _same(outs[i].get("value"), json.loads(c.expected))
            passed.append(same)
            if not same:
                failures.append(f"{c.call()} returned {_short(repr(outs[i].get('value')))}")
    return SuiteReport(passed, failures, res.status, res.wall_s)


def run_unittests(files: dict[str, str], limits: sandbox.Limits | None = None, max_chars: int = 1200) -> str:
    """The ``test`` tool's text: a summary from the nonce-tagged result, then the runner's log (cut)."""
    res, outs = _run(_UNITTEST, files, {}, limits or sandbox.Limits())
    rep = next((o for o in outs if "run" in o), None)
    if rep is None:
        tail = res.stderr.strip().splitlines()[-1][:200] if res.stderr.strip() else ""
        return f"the tests did not finish ({res.status}){': ' + tail if tail else ''}"
    bad = len(rep["failures"]) + len(rep["errors"])
    lines = [f"ran {rep['run']} tests: {rep['run'] - bad} passed, {len(rep['failures'])} failed, "
             f"{len(rep['errors'])} errors"]
    lines += [f"could not load {e}" for e in rep["load_errors"]]
    lines += [f"FAIL {t}: {msg}" for t, msg in rep["failures"]] + [f"ERROR {t}: {msg}" for t, msg in rep["errors"]]
    text = "\n".join(lines)
    # the runner's log (tracebacks with line numbers) only when something failed; its timing is dropped so
    # that the same repository always gives the same text (demonstrations are training data)
    log = re.sub(r"(Ran \d+ tests?) in [0-9.]+s", r"\1", str(rep.get("log", "")))
    if (bad or rep["load_errors"]) and len(text) < max_chars and log.strip():
        text += "\n--- log ---\n" + log[-(max_chars - len(text)):]
    return text[:max_chars]

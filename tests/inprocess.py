"""Run a command line's ``main(argv)`` inside the test process, as ``python -m ...`` would run it.

A subprocess per CLI call cost the suite seconds of interpreter start and imports (torch, transformers)
each time; calling ``main`` directly costs none of that. What a subprocess gave for free is restored here:

- the result is a ``subprocess.CompletedProcess`` (returncode, stdout, stderr as text), so the checks that
  read it are unchanged; ``SystemExit`` (argparse errors, ``sys.exit``) becomes the return code;
- stdout and stderr are captured from ``sys.stdout``/``sys.stderr``, from the logging handlers that write to
  them, and from the warnings a plain interpreter would print; stdin is the given text (or empty);
- process state a command may change is put back afterwards: environment variables, working directory,
  signal handlers (``reference_impls.train`` installs SIGTERM/SIGINT handlers), torch's thread count
  (``threads=1`` stands for the ``OMP_NUM_THREADS=1`` the subprocess tests set), the global random
  streams (random, numpy, torch), the root logger's handlers and level, warning filters, ``sys.argv``, and
  the environment registry plus any user environment module that ``--env-module`` imported, and the
  algorithms a user's module (``--algo-module``) added.

Tests that need a real process keep one: signals, torchrun, a fresh interpreter (``sys.modules``,
``PYTHONHASHSEED``), running from another directory, and one exit-code check per ``python -m`` entry point.
"""
from __future__ import annotations

import contextlib
import io
import logging
import os
import random
import signal
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Callable, Iterable

_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)


@contextlib.contextmanager
def isolated_process_state(threads: int | None = None):
    """Snapshot the process-global state a CLI may change, and put it back on exit."""
    environ = dict(os.environ)
    cwd = os.getcwd()
    argv = list(sys.argv)
    handlers = {s: signal.getsignal(s) for s in _SIGNALS}
    root = logging.getLogger()
    log_handlers, log_level = list(root.handlers), root.level
    py_state = random.getstate()
    np_state = torch_state = torch_threads = envs = None
    if "numpy" in sys.modules:
        import numpy as np

        np_state = np.random.get_state()
    if "torch" in sys.modules:
        import torch

        torch_state, torch_threads = torch.random.get_rng_state(), torch.get_num_threads()
        if threads is not None:
            torch.set_num_threads(threads)
    if "reference_impls.envs" in sys.modules:
        envs = dict(sys.modules["reference_impls.envs"].ENVS)
    algorithms = dict(sys.modules["reference_impls.registry"].algorithms()) if "reference_impls.registry" in sys.modules else None
    modules = set(sys.modules)
    try:
        yield
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
        sys.argv[:] = argv
        for s, h in handlers.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        root.handlers[:] = log_handlers
        root.setLevel(log_level)
        random.setstate(py_state)
        if np_state is not None:
            import numpy as np

            np.random.set_state(np_state)
        if "torch" in sys.modules:
            import torch

            if torch_state is not None:
                torch.random.set_rng_state(torch_state)
                torch.set_num_threads(torch_threads)
        if "reference_impls.envs" in sys.modules:
            # forget the environments a user module (--env-module FILE.py) registered, and the module, as a
            # process exit would; environments registered by package modules stay (their modules stay imported)
            from reference_impls.envs import ENVS

            for name, spec in list(ENVS.items()):
                if (envs or {}).get(name) is not spec and _from_user_module(spec):
                    if envs is not None and name in envs:
                        ENVS[name] = envs[name]
                    else:
                        del ENVS[name]
        if "reference_impls.registry" in sys.modules:
            # forget the algorithms a user module (--algo-module) added, as a process exit would
            registered = sys.modules["reference_impls.registry"].algorithms()
            for name, cls in list(registered.items()):
                if cls.__module__.startswith(USER_ALGO_PREFIX) and (algorithms or {}).get(name) is not cls:
                    del registered[name]
        for name in set(sys.modules) - modules:
            if name.startswith((USER_ENV_PREFIX, USER_ALGO_PREFIX)):
                del sys.modules[name]


USER_ENV_PREFIX = "atlas_user_env_"  # reference_impls.envs.load_env_module's name for a module loaded from a file
USER_ALGO_PREFIX = "atlas_user_algo_"  # reference_impls.registry.load_algo_module's, likewise


def _from_user_module(spec) -> bool:
    return any(getattr(getattr(spec, attr, None), "__module__", "").startswith(USER_ENV_PREFIX)
               for attr in ("build", "config", "list_problems"))


# the warning filters of a plain ``python -m ...`` (no -W, no PYTHONWARNINGS), in order
_INTERPRETER_WARNING_FILTERS = [("default", DeprecationWarning, "__main__"), ("ignore", DeprecationWarning, ""),
                                ("ignore", PendingDeprecationWarning, ""), ("ignore", ImportWarning, ""),
                                ("ignore", ResourceWarning, "")]


@contextlib.contextmanager
def _capture(out: io.StringIO, err: io.StringIO):
    """Send what the process would print to its stdout/stderr into ``out``/``err``: ``sys.stdout`` and
    ``sys.stderr``, the logging handlers already writing to them (created before the redirection: a library's
    own handler), and the warnings a plain interpreter would print (pytest would otherwise record them)."""
    streams = {id(sys.stdout): out, id(sys.__stdout__): out, id(sys.stderr): err, id(sys.__stderr__): err}
    loggers = [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values()
                                      if isinstance(lg, logging.Logger))]
    swapped = []
    for handler in {h for lg in loggers for h in lg.handlers}:
        stream = handler.__dict__.get("stream")  # (logging's last-resort handler reads sys.stderr itself)
        if isinstance(handler, logging.StreamHandler) and stream is not None and id(stream) in streams:
            swapped.append((handler, stream))
            handler.stream = streams[id(stream)]
    try:
        with warnings.catch_warnings(record=True) as caught, \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            warnings.resetwarnings()
            for action, category, module in _INTERPRETER_WARNING_FILTERS:
                warnings.filterwarnings(action, category=category, module=module, append=True)
            try:
                yield
            finally:
                for w in caught:
                    err.write(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line))
    finally:
        for handler, stream in swapped:
            handler.stream = stream


def run_main(main: Callable[[list[str]], int | None], args: Iterable, *, env: dict | None = None,
             cwd: str | Path | None = None, stdin: str | None = None, threads: int | None = None,
             prog: str = "main") -> subprocess.CompletedProcess:
    """``main(args)`` in this process; returns what ``subprocess.run(..., capture_output=True, text=True)``
    returns for the same command. ``env`` replaces the environment (like ``subprocess.run(env=...)``).

    An exception that ``main`` does not handle propagates (the test fails), where a subprocess would have
    printed a traceback and exited 1."""
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with isolated_process_state(threads=threads):
        if env is not None:
            os.environ.clear()
            os.environ.update({k: str(v) for k, v in env.items()})
        if cwd is not None:
            os.chdir(cwd)
        sys.argv[:] = [prog, *argv]
        stdin_was = sys.stdin
        sys.stdin = io.StringIO(stdin or "")
        try:
            with _capture(out, err):
                try:
                    code = main(argv)
                except SystemExit as e:
                    code = e.code
                    if code is not None and not isinstance(code, int):  # sys.exit("message")
                        print(code, file=sys.stderr)
                        code = 1
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
        finally:
            sys.stdin = stdin_was
    return subprocess.CompletedProcess([prog, *argv], code or 0, out.getvalue(), err.getvalue())


def papers_cli(*args, data_dir: str | Path | None = None, stdin: str | None = None,
               cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """``python -m papers ARGS`` in this process, with ``ATLAS_DATA_DIR=data_dir`` when given."""
    from papers.cli import main

    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if data_dir is not None:
        env["ATLAS_DATA_DIR"] = str(data_dir)
    return run_main(main, args, env=env, stdin=stdin, cwd=cwd, prog="python -m papers")


def compare_stages_in_process(monkeypatch, record: Callable[[list[str]], object] = lambda args: args[0]) -> list:
    """Run every stage the comparison's driver starts (``python -m lab.compare _STAGE ...``, its
    ``stage_process``) in this process instead: each stage's own interpreter and torch import would cost
    seconds. The stage's output goes to its log as the real one's does (the file holds this stage's output
    only); the exit code is returned as the driver reads it. Returns the list to which ``record(args)`` is
    appended for each stage started (by default the stage's name). A stage's own process is tested where
    the process matters (tests/test_compare.py, the runner's resume after a kill)."""
    from lab.compare.cli import main

    calls: list = []

    def in_process(args: list[str], log: Path) -> int:
        calls.append(record(args))
        out = run_main(main, args, env=dict(os.environ, HF_HUB_OFFLINE="1"), prog="python -m lab.compare")
        log.write_text(out.stdout + out.stderr)
        return out.returncode

    monkeypatch.setattr("lab.compare.driver.stage_process", in_process)
    return calls


def dotted_paths(config: dict, prefix: str = "") -> dict:
    """A cell config flattened to dotted paths (``env_options.families``, ...), for comparing two of them."""
    out = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out.update(dotted_paths(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out

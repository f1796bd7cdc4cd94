"""The one ``main`` of the measurement commands: argv, the check before any model is loaded, the error line,
the output and the exit status. Each command module keeps only its flags and its measurement::

    build_parser(argv)   -> argparse parser with the command's flags (argv is given for flags that depend on
                            other flags: evaluate adds the options of the --env it is given)
    Command.check(args)  -> everything that can be refused before a model is loaded (--run, options, --levels);
                            it returns what ``run`` needs. A ConfigError or RunDirError raised here (or while
                            building the parser) prints ``error: MESSAGE`` on stderr and exits 2
    Command.run(args, checked) -> the output: loads the policy and measures. A dict or list is printed as
                            JSON (one line with ``--json``, indented without it or when the command has no
                            ``--json``), a string as it is; ``Exit(output, code)`` also sets the exit status.
                            Exceptions listed in ``Command.errors`` are reported as ``error: MESSAGE`` (exit 2)
                            here too; anything else propagates (a traceback, as before the commands shared this)

A command with subcommands (report, value_search) gives ``main`` one Command per subcommand, keyed by name;
its subparsers' ``dest`` is ``"command"``.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..options import ConfigError
from ..rundir import RunDir, RunDirError

#: refusals found before a model is loaded: printed as ``error: MESSAGE``, exit status 2
USAGE_ERRORS = (ConfigError, RunDirError)


@dataclass(frozen=True)
class Command:
    run: Callable[[argparse.Namespace, Any], Any]
    check: Callable[[argparse.Namespace], Any] | None = None
    errors: tuple[type[BaseException], ...] = ()  # exceptions of ``run`` reported as an error line (exit 2)


@dataclass(frozen=True)
class Exit:
    """An output with a non-zero exit status (report hacking: 1 when it flags)."""

    output: Any
    code: int


def new_parser(module: str, doc: str | None) -> argparse.ArgumentParser:
    """The parser of ``python -m MODULE``, described by the first line of its docstring."""
    return argparse.ArgumentParser(prog=f"python -m {module}", description=(doc or "").split("\n")[0])


def run_config(run: str | None) -> dict:
    """``config.json`` of a run folder (``{}`` without ``--run``); RunDirError when it is not a run."""
    return RunDir(run).read_config() if run else {}


def heldout_options(task, env: str, run_cfg: dict, given: dict) -> dict:
    """The env options a held-out measurement runs with, validated (before a model is loaded): the run's own
    options apply only when measuring on the run's own environment, and the flags ``given`` override them."""
    base = run_cfg.get("env_options", {}) if run_cfg.get("env", env) == env else {}
    options = task.heldout_env_options(base, given)
    task.options(options)
    return options


def error(err) -> int:
    print(f"error: {err}", file=sys.stderr)
    return 2


def show(output, args: argparse.Namespace) -> None:
    if output is None:
        return
    if isinstance(output, str):
        print(output)
    else:
        print(json.dumps(output) if getattr(args, "json", False) else json.dumps(output, indent=2))


def main(build_parser: Callable[[list[str]], argparse.ArgumentParser], commands: Command | Mapping[str, Command],
         argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser(argv).parse_args(argv)
        command = commands[args.command] if isinstance(commands, Mapping) else commands
        checked = command.check(args) if command.check else None
    except USAGE_ERRORS as err:
        return error(err)
    try:
        output = command.run(args, checked)
    except command.errors as err:
        return error(err)
    code = 0
    if isinstance(output, Exit):
        output, code = output.output, output.code
    show(output, args)
    return code

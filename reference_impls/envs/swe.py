"""A mini software-engineering environment (SWE-bench style): fix a seeded bug in a small generated repository.

An episode is one task: a repository of 2-4 Python files (a module with a bug of a known *family*, at
higher levels other modules beside it, and ``tests/test_*.py``: unittest cases of which one fails) and an
issue text that describes the symptom (a call, what it returns or raises, what was expected), not the fix.
Tools, one per turn, inside ``<tool>...</tool>``; answers come back in ``<result>...</result>``::

    <tool>ls</tool>                                the files and their line counts
    <tool>read pager.py 1</tool>                   a page of numbered lines from line 1 (``page_lines``)
    <tool>edit pager.py 7-8<new>    ...</new></tool>          replace lines 7..8 (inclusive) with the text
    <tool>edit pager.py<old>x < hi</old><new>x <= hi</new></tool>  replace a string that occurs exactly once
    <tool>test</tool>                              run the repository's tests/ in the sandbox
    <tool>submit</tool>                            end the episode; the final repository is scored

Commands are parsed from the text (a verb, a path that must be one of the repository's files, a line range,
``<old>`` / ``<new>`` tags); nothing the model writes is evaluated in this process. Only existing files can
be edited (no new files, so a ``../`` path or a file that shadows a module is refused); an edit that makes
a file longer than ``max_file_chars``, or (``syntax_check``) leaves a ``.py`` file that ``ast.parse`` rejects,
is refused with the reason.

Problems
    A *scenario* is a small function with a correct and a buggy version (one or two lines differ) of one bug
    family: ``off_by_one``, ``wrong_operator``, ``wrong_default``, ``missing_edge_case``, ``wrong_key``.
    Seeded per task: the module's name, the function's constants (a default, a threshold), the test inputs.
    Levels: 1 = ``off_by_one`` / ``wrong_operator``, one source file, the issue names the file; 2 = every
    family, two source files, the issue names the file; 3 = every family, three source files, the issue names
    only the function. Every generated task's expected values come from Python reference functions of the
    fixed and the buggy behaviour; tests/reference_impls/test_env_swe.py checks in the sandbox that the
    generated source behaves as they say (the failing checks fail before the reference fix and pass after).
Splits
    ``train`` and ``heldout`` draw from disjoint random streams (the split is in every seed) and phrase the
    issue differently. The held-out split also lists hand-written tasks (``swe_tasks/*.json``, package data;
    option ``heldout_tasks``), written as small repositories of their own.
Reward (on ``submit``)
    The hidden suite: the issue's failing call, more inputs of the buggy function (some fail on the buggy code,
    some pass) and regression checks of the other modules' functions. Each check calls a function of the final
    repository in the sandbox (:mod:`reference_impls.sandbox`: the repository is copied into the sandbox's
    fresh temp dir) and prints the *returned value*, tagged with a per-run nonce that is passed on stdin (the
    harness deletes its own files before importing the repository, so the repository's code cannot read it);
    expected values never enter the sandbox and are compared here. Printing fake ``PASS``/``OK`` lines changes
    nothing. Reward = fraction of checks passed (``all_pass_only``: 1 only when all pass); with
    ``break_zero`` (default) it is 0 when any check that passed on the buggy repository fails on the final one.
    Note that the untouched repository scores the fraction of checks that already pass.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .. import sandbox
from ..options import Options, option
from . import EnvSpec, StepResult, ToolSpec, replay_calls
from .code import _short
from .swe_harness import run_checks, run_unittests
# the tasks' names that callers (tests, benchmarks) import from the env's module
from .swe_repos import (COMPANIONS, FAMILIES, LEVEL_FAMILIES, SCENARIOS, Task,  # noqa: F401
                        handwritten_tasks, make_task, resources, task_from_json, tasks)

TOOL = ToolSpec(
    name="repo",
    description="Repository tools: ls, read PATH [LINE], edit PATH A-B <new>..</new> or <old>..</old><new>..</new>, "
                "test, submit.",
    call_open="<tool>",
    call_close="</tool>",
    result_open="<result>",
    result_close="</result>",
)

SYSTEM_PROMPT = (
    "You fix a bug in a small Python repository. One tool call per turn, inside <tool>...</tool>; the answer "
    "comes back in <result>...</result>. Tools: <tool>ls</tool> lists the files; <tool>read PATH LINE</tool> "
    "shows numbered lines from LINE; <tool>edit PATH A-B<new>text</new></tool> replaces lines A to B with the "
    "text; <tool>edit PATH<old>text</old><new>text</new></tool> replaces a text that occurs once; "
    "<tool>test</tool> runs the tests in tests/; <tool>submit</tool> ends the task with the repository as it is."
)


# ----------------------------------------------------------------------------------------------------
# parsing the tools (never evaluated: a verb, a path, a range, tags)

_EDIT_RANGE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")
_NEW = re.compile(r"<new>(.*?)</new>", re.S)
_OLD = re.compile(r"<old>(.*?)</old>", re.S)


def _tag_text(m: re.Match) -> str:
    """A tag's text without one leading and one trailing newline (so the text may start on its own line)."""
    s = m.group(1)
    if s.startswith("\n"):
        s = s[1:]
    return s[:-1] if s.endswith("\n") else s


def _syntax_error(source: str) -> str | None:
    """Why ``source`` is not valid Python, or None. ``ast.parse`` only parses: nothing is executed."""
    try:
        ast.parse(source)
    except SyntaxError as e:
        return f"line {e.lineno}: {e.msg}"
    except (ValueError, RecursionError, MemoryError) as e:  # null bytes, absurd nesting
        return type(e).__name__
    return None


@dataclass
class SweConfig(Options):
    """The swe env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option((1, 2, 3), "Levels: 1 = off-by-one / wrong-operator bugs, one source file; "
                                     "2 = all five bug families, two files; 3 = three files, the issue does not "
                                     "name the file.", choices=(1, 2, 3))
    families: tuple[str, ...] = option((), "Bug families to draw from; empty = all of the levels'.", choices=FAMILIES)
    n_hidden: int = option(6, "Hidden checks of the buggy function per task (regression checks of other modules "
                           "come on top).", low=2, high=10)
    heldout_tasks: str = option("both", "What the held-out split lists: hand-written tasks first then generated "
                                "ones, only one kind.", choices=("both", "generated", "handwritten"))
    all_pass_only: bool = option(False, "Reward 1 only when every hidden check passes (else the fraction passed).")
    break_zero: bool = option(True, "Reward 0 when a check that passed on the buggy repository fails at the end.")
    max_tool_calls: int = option(10, "Tool calls allowed; one more ends the episode with reward 0.", low=1, high=64,
                                 aliases=("max_turns",))
    page_lines: int = option(40, "Lines shown by one read.", low=5, high=400)
    syntax_check: bool = option(True, "Refuse an edit that leaves a .py file unparsable (SWE-agent's lint guard).")
    max_file_chars: int = option(20000, "An edit that makes a file longer is refused.", low=1000, high=1000000)
    max_output_chars: int = option(1200, "The test tool's output is cut to this many characters.", low=200,
                                   high=20000)
    cpu_seconds: int = option(2, "CPU seconds for one sandboxed run (all tests together).", low=1, high=60)
    wall_seconds: float = option(8.0, "Wall-clock seconds for one sandboxed run.", low=0.5, high=120.0)


class SweEnv:
    """One episode on one :class:`Task`; see the module docstring for the protocol."""

    tool = TOOL
    stop_strings = (TOOL.call_close,)

    def __init__(self, task: Task, config: SweConfig | None = None):
        self.task = task
        self.config = config or SweConfig()
        self.files = dict(task.files)
        self.tool_calls = 0

    def reset(self) -> list[dict[str, str]]:
        self.files = dict(self.task.files)
        self.tool_calls = 0
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": self.task.prompt}]

    def _limits(self) -> sandbox.Limits:
        return sandbox.Limits(cpu_seconds=self.config.cpu_seconds, wall_seconds=self.config.wall_seconds)

    # -- tools -----------------------------------------------------------------------------------------
    def _path(self, word: str) -> str | None:
        p = word.strip().strip("`'\"")
        while p.startswith("./"):
            p = p[2:]
        return p if p in self.files else None

    def _no_file(self, word: str) -> str:
        return f"error: no file {_short(word, 60)!r} in the repository; files: {', '.join(sorted(self.files))}"

    def ls(self) -> str:
        return "\n".join(f"{p} ({len(t.splitlines())} lines)" for p, t in sorted(self.files.items()))

    def read(self, rest: str) -> str:
        words = rest.split()
        if not words:
            return "error: read needs a file: read PATH [LINE]"
        path = self._path(words[0])
        if path is None:
            return self._no_file(words[0])
        lines = self.files[path].splitlines()
        start = 1
        if len(words) > 1:
            m = re.fullmatch(r"(\d+)(?:-\d+)?", words[1])
            if not m:
                return f"error: read's line must be a number, got {_short(words[1], 20)!r}"
            start = max(1, int(m.group(1)))
        if lines and start > len(lines):
            return f"error: {path} has {len(lines)} lines"
        end = min(len(lines), start + self.config.page_lines - 1)
        shown = [f"{i:4d}| {lines[i - 1]}" for i in range(start, end + 1)]
        more = f"; read {path} {end + 1} for more" if end < len(lines) else ""
        return "\n".join(shown + [f"({path}: lines {start}-{end} of {len(lines)}{more})"])

    def edit(self, rest: str) -> str:
        head, _, _ = rest.partition("<")
        words = head.split()
        if not words:
            return "error: edit needs a file: edit PATH A-B<new>text</new> or edit PATH<old>text</old><new>text</new>"
        path = self._path(words[0])
        if path is None:
            return self._no_file(words[0])
        new = _NEW.search(rest)
        if new is None:
            return "error: edit needs the new text in <new>...</new>"
        text, old = self.files[path], _OLD.search(rest)
        if len(words) > 1:
            m = _EDIT_RANGE.match(" ".join(words[1:]))
            if not m:
                return f"error: edit's line range must look like 7-9, got {_short(' '.join(words[1:]), 20)!r}"
            a, b = int(m.group(1)), int(m.group(2))
            lines = text.splitlines(keepends=True)
            if not 1 <= a <= b <= len(lines):
                return f"error: line range {a}-{b} is outside {path} (lines 1-{len(lines)})"
            repl = _tag_text(new)
            repl_lines = [ln + "\n" for ln in repl.split("\n")] if repl else []
            updated = "".join(lines[:a - 1] + repl_lines + lines[b:])
            first = a
        elif old is not None:
            target = _tag_text(old)
            count = text.count(target) if target else 0
            if count != 1:
                return (f"error: the <old> text occurs {count} times in {path}; it must occur exactly once"
                        if target else "error: the <old> text is empty")
            updated = text.replace(target, _tag_text(new), 1)
            first = text[:text.index(target)].count("\n") + 1
        else:
            return "error: edit needs a line range (edit PATH 7-9<new>...</new>) or <old>...</old>"
        if len(updated) > self.config.max_file_chars:
            return f"error: the edit would make {path} {len(updated)} characters long (limit {self.config.max_file_chars})"
        if self.config.syntax_check and path.endswith(".py"):
            problem = _syntax_error(updated)
            if problem:
                return f"error: the edit was not applied: {path} would not parse ({problem})"
        self.files[path] = updated
        lines = updated.splitlines()
        lo, hi = max(1, first - 2), min(len(lines), first + len(_tag_text(new).splitlines()) + 1)
        return f"edited {path}; lines {lo}-{hi} now:\n" + "\n".join(f"{i:4d}| {lines[i - 1]}" for i in range(lo, hi + 1))

    def tool_result(self, command: str) -> str:
        """The text of a tool's answer (never raises)."""
        words = command.strip().split(None, 1)
        if not words:
            return "error: empty command; use ls, read, edit, test or submit"
        verb, rest = words[0].lower(), (words[1] if len(words) > 1 else "")
        if verb == "ls":
            return self.ls()
        if verb in ("read", "cat", "open"):
            return self.read(rest)
        if verb == "edit":
            return self.edit(rest)
        if verb == "test":
            return run_unittests(self.files, self._limits(), self.config.max_output_chars)
        return f"error: unknown command {_short(verb, 40)!r}; use ls, read, edit, test or submit"

    # -- the episode -----------------------------------------------------------------------------------
    def score(self) -> tuple[float, dict]:
        rep = run_checks(self.files, self.task.checks, self._limits())
        broke = any(c.passes_before and not ok for c, ok in zip(self.task.checks, rep.passed))
        resolved = all(rep.passed)
        reward = float(resolved) if self.config.all_pass_only else rep.fraction
        if broke and self.config.break_zero:
            reward = 0.0
        return reward, {"correct": resolved, "passed": sum(rep.passed), "total": len(rep.passed),
                        "broke_passing": broke, "sandbox_status": rep.status, "failures": rep.failures[:3],
                        "edited": sorted(p for p, t in self.files.items() if t != dict(self.task.files)[p])}

    def step(self, model_text: str) -> StepResult:
        m = TOOL.find_call(model_text)
        base = {"tool_calls": self.tool_calls}
        if m is None:
            return StepResult(None, True, 0.0, {**base, "correct": False, "passed": 0})
        if m.group(1).strip().lower() == "submit":
            reward, info = self.score()
            return StepResult(None, True, reward, {**base, **info})
        if self.tool_calls >= self.config.max_tool_calls:
            return StepResult(None, True, 0.0, {**base, "correct": False, "passed": 0, "truncated": True})
        self.tool_calls += 1
        return StepResult(TOOL.result(self.tool_result(m.group(1))), False, 0.0, {"tool_calls": self.tool_calls})


def fix_calls(task: Task) -> list[str]:
    """The tool-call arguments of the demonstration: read the buggy file around the bug, apply the known fix as a
    line-range edit, run the tests, submit."""
    path, old, new = task.fix
    text = dict(task.files)[path]
    first = text[:text.index(old)].count("\n") + 1
    last = first + old.count("\n") - (1 if old.endswith("\n") else 0)
    body = new[:-1] if new.endswith("\n") else new
    return [f"read {path} {max(1, first - 5)}", f"edit {path} {first}-{last}<new>{body}</new>", "test", "submit"]


def demonstration(task: Task) -> list[tuple[str, str]]:
    """The real transcript of the scripted fix (every observation is the tool's own output)."""
    env = SweEnv(task, SweConfig())
    env.reset()
    return replay_calls(env, TOOL, fix_calls(task))


def _tasks(split: str, n: int, seed: int, config: SweConfig) -> list[Task]:
    return tasks(split, n, seed, levels=config.levels, families=config.families or None, n_hidden=config.n_hidden,
                 heldout_tasks=config.heldout_tasks)


SPEC = EnvSpec("swe", SweConfig, _tasks, SweEnv, demonstration,
               title="fix a seeded bug in a small repository (SWE-bench style, sandboxed tests)",
               uses_sandbox=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("swe-grpo", "Repository bug fixing with file and test tools (GRPO)", "grpo", "swe", "A multi-turn agent that lists, reads and edits the files of a small generated repository and "
                   "runs its tests to fix the bug an issue describes; rewarded by hidden tests run in a sandbox "
                   "on the final repository.",
                   nodes=("code-swe", "env-swe-interactive", "env-coding-swe"),
                   changes="Keeps the SWE-bench shape that SWE-agent-style RL trains on: an issue that states a "
                           "symptom (a call, what it returns or raises, what was expected) and not the fix, a "
                           "repository the agent explores and edits with tools (list, read numbered lines, replace "
                           "a line range or a unique string, run the tests), and a reward from tests it never sees "
                           "(the issue's failing call plus more failing inputs and regression checks that already "
                           "passed), with 0 when a passing check breaks, all executed in a sandbox. Simplifies: "
                           "generated repositories of 2-4 files instead of real projects, one seeded bug per task "
                           "from five families (off-by-one, wrong operator, wrong default, missing edge case, wrong "
                           "key) fixed by a one- or two-line change, edits limited to existing files, no shell, git "
                           "or dependency install, and hidden tests that compare return values instead of running "
                           "the project's own test files; eight hand-written tasks join the held-out split."),
)

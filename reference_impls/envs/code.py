"""Code generation environments (HumanEval / MBPP style): write a small Python function from a spec.

``code`` (one turn)::

    user:  spec of ``name(args)`` and two visible examples
    model: <code>def name(...): ...</code>        the submission ends the episode

``code-refine`` (several turns, a tool that runs the visible tests)::

    model: <run>def name(...): ...</run>          runs the *visible* tests in the sandbox
    env:   <result>1/2 visible tests passed; name([3]) returned 6, expected 9</result>
    model: <code>def name(...): ...</code>        the final submission

Problems
    Each problem comes from a *family* (a function shape: add a constant, filter a list, run-length encode
    a string ...) with seeded parameters (the constant, the divisor, the bracket pair ...), a spec, a
    reference solution (the SFT demonstration), two visible examples and ``n_hidden`` hidden tests whose
    inputs include edge cases (empty lists, zero). Levels: 1 = one expression; 2 = a loop or a filter;
    3 = state across a loop (run-length encoding, bracket depth, FizzBuzz with parameters, digital root).
Splits
    ``train`` and ``heldout`` draw from disjoint random streams (the split name is in every seed) and use
    different phrasings of every family's spec.
Reward
    The fraction of hidden tests passed (``all_pass_only=True``: 1.0 only when all pass). Code runs only in
    :mod:`reference_impls.sandbox` (never in this process): the model's text is saved as ``solution.py``
    beside our harness, which imports it, calls the function on each test input and prints the *returned
    values* as JSON lines tagged with a per-run nonce. The expected values never enter the sandbox: the
    comparison happens here, so printing anything cannot fake a pass. Returned values are compared after a
    JSON round trip (tuples and lists are the same).
"""
from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass

from .. import sandbox
from ..options import Options, option
from . import EnvSpec, StepResult, ToolSpec
from .code_problems import FAMILIES, Problem, _call_text, problems

TOOL = ToolSpec(
    name="run-tests",
    description="Runs a draft of the function on the visible examples in a sandbox and reports failures.",
    call_open="<run>",
    call_close="</run>",
    result_open="<result>",
    result_close="</result>",
    answer_open="<code>",
    answer_close="</code>",
)

SYSTEM_PROMPT = ("Write the Python function the user asks for. Put the complete code (the def, any imports) "
                 "inside <code>...</code>. Only the standard library is available.")
REFINE_PROMPT = ("Write the Python function the user asks for. To test a draft on the examples, write "
                 "<run>code</run>; the failures come back in <result>...</result>. Put the final complete code "
                 "inside <code>...</code>. Only the standard library is available.")


# ----------------------------------------------------------------------------------------------------
# running tests in the sandbox

_HARNESS = r'''
import copy, json, sys
NONCE, NAME, TESTS = {nonce!r}, {name!r}, json.loads({tests!r})
def emit(d):
    try:
        line = json.dumps(d)
    except (TypeError, ValueError) as e:
        line = json.dumps({{"ok": False, "error": "result is not JSON-serialisable"}})
    sys.__stdout__.write(NONCE + " " + line + "\n")
    sys.__stdout__.flush()
try:
    import importlib.util
    spec = importlib.util.spec_from_file_location("solution", "solution.py")  # the file beside this harness
    solution = importlib.util.module_from_spec(spec)
    sys.modules["solution"] = solution
    spec.loader.exec_module(solution)
    fn = getattr(solution, NAME)
except BaseException as e:
    emit({{"import_error": (type(e).__name__ + ": " + str(e))[:300]}})
    raise SystemExit(0)
for args in TESTS:
    try:
        emit({{"ok": True, "value": fn(*copy.deepcopy(args))}})
    except BaseException as e:
        emit({{"ok": False, "error": (type(e).__name__ + ": " + str(e))[:200]}})
'''

_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_+-]*\s*\n(.*?)\n?\s*```\s*$", re.S)


def clean_code(text: str) -> str:
    """The code inside a tag, without a surrounding Markdown fence."""
    m = _FENCE.match(text)
    return (m.group(1) if m else text).strip("\n")


@dataclass
class TestReport:
    passed: int
    total: int
    failures: list[str]
    status: str  # the sandbox's status (ok, timeout, ...)
    error: str | None = None

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0


def run_tests(code: str, name: str, tests, limits: sandbox.Limits | None = None, layer: str | None = None) -> TestReport:
    """Run ``code`` (the model's module) on ``tests`` [(JSON args, JSON expected)] in the sandbox."""
    nonce = "R" + secrets.token_hex(8)
    harness = _HARNESS.format(nonce=nonce, name=name, tests=json.dumps([json.loads(a) for a, _ in tests]))
    res = sandbox.check(sandbox.run_python(harness, limits=limits, layer=layer, files={"solution.py": code}))
    outs = []
    error = None
    for line in res.stdout.splitlines():
        if line.startswith(nonce + " "):
            try:
                d = json.loads(line[len(nonce) + 1:])
            except ValueError:
                continue
            if "import_error" in d:
                error = str(d["import_error"])
                break
            outs.append(d)
    failures, passed = [], 0
    for i, (args, expected) in enumerate(tests):
        call = _call_text(name, args)
        exp = json.loads(expected)
        if i >= len(outs):
            failures.append(f"{call}: no result ({error or res.status})")
        elif not outs[i].get("ok"):
            failures.append(f"{call} raised {outs[i].get('error')}")
        elif outs[i].get("value") != exp:
            failures.append(f"{call} returned {_short(repr(outs[i].get('value')))}, expected {_short(repr(exp))}")
        else:
            passed += 1
    if error is None and res.status not in ("ok",) and not outs:
        last = res.stderr.strip().splitlines()[-1][:200] if res.stderr.strip() else ""
        error = f"{res.status}: {last}" if last else res.status
    return TestReport(passed, len(tests), failures, res.status, error)


def _short(s: str, n: int = 80) -> str:
    return s if len(s) <= n else s[:n] + "..."


# ----------------------------------------------------------------------------------------------------
# the environments

@dataclass
class CodeConfig(Options):
    """The code env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option((1, 2, 3), "Difficulty levels: 1 = one expression, 2 = a loop or filter, "
                                     "3 = state across a loop.", choices=(1, 2, 3))
    families: tuple[str, ...] = option((), "Function families to draw from; empty = all.",
                                       choices=tuple(f.name for f in FAMILIES))
    n_hidden: int = option(6, "Hidden tests per problem (the reward's denominator).", low=1, high=6)
    all_pass_only: bool = option(False, "Reward 1 only when every hidden test passes (else the fraction passed).")
    cpu_seconds: int = option(2, "CPU seconds for one sandboxed run (all tests together).", low=1, high=60)
    wall_seconds: float = option(6.0, "Wall-clock seconds for one sandboxed run.", low=0.5, high=120.0)
    max_code_chars: int = option(8000, "Longer code is refused without running it.", low=100, high=200000)


@dataclass
class CodeRefineConfig(CodeConfig):
    max_tool_calls: int = option(3, "<run> calls allowed; one more ends the episode with reward 0.", low=0, high=64,
                                 aliases=("max_turns",))
    max_failures_shown: int = option(2, "Failures listed in one <result>.", low=1, high=20)


class CodeEnv:
    """One-turn episode: the first ``<code>`` block is the submission."""

    tool = TOOL
    stop_strings = (TOOL.answer_close,)
    system_prompt = SYSTEM_PROMPT

    def __init__(self, problem: Problem, config: CodeConfig | None = None):
        self.problem = problem
        self.config = config or CodeConfig()
        self.tool_calls = 0

    def reset(self) -> list[dict[str, str]]:
        self.tool_calls = 0
        return [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": self.problem.prompt}]

    def _limits(self) -> sandbox.Limits:
        return sandbox.Limits(cpu_seconds=self.config.cpu_seconds, wall_seconds=self.config.wall_seconds)

    def test(self, code: str, tests) -> TestReport:
        if len(code) > self.config.max_code_chars:
            return TestReport(0, len(tests), ["code too long"], "refused", "code too long")
        return run_tests(code, self.problem.name, tests, self._limits())

    def submit(self, text: str) -> StepResult:
        rep = self.test(clean_code(text), self.problem.hidden)
        correct = rep.passed == rep.total
        reward = float(correct) if self.config.all_pass_only else rep.fraction
        return StepResult(None, True, reward, {"correct": correct, "passed": rep.passed, "total": rep.total,
                                               "sandbox_status": rep.status, "error": rep.error,
                                               "tool_calls": self.tool_calls})

    def step(self, model_text: str) -> StepResult:
        m = TOOL.find_answer(model_text)
        if m is None:
            return StepResult(None, True, 0.0, {"correct": False, "passed": 0, "tool_calls": self.tool_calls})
        return self.submit(m.group(1))


class CodeRefineEnv(CodeEnv):
    """Multi-turn: ``<run>`` drafts on the visible tests, then ``<code>``."""

    stop_strings = (TOOL.call_close, TOOL.answer_close)
    system_prompt = REFINE_PROMPT

    def step(self, model_text: str) -> StepResult:
        action = TOOL.first_action(model_text)
        if action is None:
            return StepResult(None, True, 0.0, {"correct": False, "passed": 0, "tool_calls": self.tool_calls})
        kind, m = action
        if kind == "answer":
            return self.submit(m.group(1))
        if self.tool_calls >= self.config.max_tool_calls:
            return StepResult(None, True, 0.0, {"correct": False, "passed": 0, "tool_calls": self.tool_calls,
                                                "truncated": True})
        self.tool_calls += 1
        rep = self.test(clean_code(m.group(1)), self.problem.visible)
        return StepResult(TOOL.result(feedback(rep, self.config.max_failures_shown)), False, 0.0,
                          {"tool_calls": self.tool_calls, "visible_passed": rep.passed})


def feedback(rep: TestReport, max_failures: int = 2) -> str:
    head = f"{rep.passed}/{rep.total} visible tests passed"
    if rep.error:
        head += f"; error: {_short(rep.error, 200)}"
    shown = rep.failures[:max_failures]
    return "; ".join([head, *shown]) + (f"; ... {len(rep.failures) - len(shown)} more" if len(rep.failures) > len(shown) else "")


def demonstration(problem: Problem) -> list[tuple[str, str]]:
    return [("model", f"{TOOL.answer_open}\n{problem.solution}\n{TOOL.answer_close}")]


def refine_demonstration(problem: Problem) -> list[tuple[str, str]]:
    """Run the reference solution on the examples (the real tool output), then submit it."""
    env = CodeRefineEnv(problem, CodeRefineConfig())
    call = f"{TOOL.call_open}\n{problem.solution}\n{TOOL.call_close}"
    return [("model", call), ("env", env.step(call).observation),
            ("model", f"{TOOL.answer_open}\n{problem.solution}\n{TOOL.answer_close}")]


def _problems(split: str, n: int, seed: int, config: CodeConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels, families=config.families or None, n_hidden=config.n_hidden)


SPEC = EnvSpec("code", CodeConfig, _problems, CodeEnv, demonstration,
               title="code generation with hidden unit tests (sandboxed)", uses_sandbox=True)
REFINE_SPEC = EnvSpec("code-refine", CodeRefineConfig, _problems, CodeRefineEnv, refine_demonstration,
                      title="code generation with a sandboxed test-running tool", uses_sandbox=True)
ENV_SPECS = (SPEC, REFINE_SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("code-grpo", "Code generation with hidden unit tests (GRPO)", "grpo", "code", "A policy that writes a small Python function from a spec; the reward is the fraction of hidden "
                   "unit tests its code passes in a sandboxed process.",
                   nodes=("code", "code-generation", "env-coding-benchmarks"),
                   changes="Keeps the HumanEval/MBPP-style loop that code RL (e.g. CodeRL, PPOCoder, RLEF) trains "
                           "on: a natural-language spec with examples, generated code executed against unit tests "
                           "the model never sees, and a test-based reward (fraction passed, or pass/fail with "
                           "all_pass_only). Simplifies: twelve procedurally generated function families in three "
                           "levels (parameters seeded per problem) instead of human-written problems, single-file "
                           "standard-library code, and return values compared after a JSON round trip. Code runs "
                           "only in the sandbox (bubblewrap namespaces here), never in the trainer."),
    Implementation("code-refine-grpo", "Code refinement with a test-running tool (GRPO)", "grpo", "code-refine",
                   "A multi-turn coder that runs drafts on the visible examples with a <run> tool, reads the "
                   "failures and resubmits; rewarded by the hidden tests.",
                   nodes=("code-refinement",),
                   changes="Keeps the execution-feedback loop of refinement methods (RLEF, self-debugging): the "
                           "agent runs its draft, gets concrete failures (call, returned value, expected value, "
                           "or the exception) and revises before the final submission, which is scored on hidden "
                           "tests. Simplifies: feedback comes only from the two visible examples, a fixed budget "
                           "of runs, and the same small generated function families as the code env; there is no "
                           "repository, no compiler and no critic model."),
)

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
import random
import re
import secrets
from dataclasses import dataclass
from typing import Callable

from .. import sandbox
from ..options import Options, option
from . import EnvSpec, StepResult, ToolSpec

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


@dataclass(frozen=True)
class Problem:
    prompt: str
    name: str
    solution: str
    visible: tuple[tuple[str, str], ...]  # (JSON args, JSON expected)
    hidden: tuple[tuple[str, str], ...]
    family: str
    phrasing: int
    level: int
    split: str
    uid: str

    @property
    def question(self) -> str:
        return self.prompt


@dataclass(frozen=True)
class Family:
    name: str  # also the function's name
    level: int
    signature: str
    params: Callable[[random.Random], dict]
    ref: Callable[..., Callable]  # ref(**params) -> the reference function (our code, in this process)
    solution: str  # source template of the reference solution ({name} and params)
    inputs: Callable[[random.Random, dict], list[tuple]]  # argument tuples (visible first two)
    train_phrasings: tuple[str, ...]
    heldout_phrasings: tuple[str, ...]


def _ints(r, n, lo=-20, hi=20):
    return [r.randint(lo, hi) for _ in range(n)]


def _lists(r, k, lo=-20, hi=20, maxlen=7):
    return [([] if i == 2 else _ints(r, r.randint(1, maxlen), lo, hi),) for i in range(k)]


def _rle(s):
    out, i = [], 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        out.append(f"{s[i]}{j - i}")
        i = j
    return "".join(out)


def _balanced(o, c):
    def f(s):
        d = 0
        for ch in s:
            d += (ch == o) - (ch == c)
            if d < 0:
                return False
        return d == 0
    return f


def _fizz(a, b, w1, w2):
    return lambda n: [w1 + w2 if i % a == 0 and i % b == 0 else w1 if i % a == 0 else w2 if i % b == 0 else str(i)
                      for i in range(1, n + 1)]


def _droot(b):
    def f(n):
        while n >= b:
            s = 0
            while n:
                s, n = s + n % b, n // b
            n = s
        return n
    return f


def _words(r):
    return " ".join(r.choice(("red", "sun", "map", "tree", "owl", "sea", "jam", "kite")) for _ in range(r.randint(1, 5)))


def _bracket_str(r, o, c):
    return "".join(r.choice((o, c, o, c, "x")) for _ in range(r.randint(0, 8)))


FAMILIES: tuple[Family, ...] = (
    Family("add_const", 1, "add_const(x)", lambda r: {"k": r.randint(2, 99)}, lambda k: (lambda x: x + k),
           "def add_const(x):\n    return x + {k}", lambda r, p: [(x,) for x in _ints(r, 8, -100, 100)],
           ("Write a function `add_const(x)` that returns the integer x plus {k}.",
            "Implement `add_const(x)`: return x increased by {k}."),
           ("Define `add_const(x)`, which adds {k} to its argument and returns the sum.",)),
    Family("scale_list", 1, "scale_list(xs)", lambda r: {"k": r.randint(2, 9)},
           lambda k: (lambda xs: [x * k for x in xs]),
           "def scale_list(xs):\n    return [x * {k} for x in xs]", lambda r, p: _lists(r, 8),
           ("Write a function `scale_list(xs)` that returns a new list with every element of the list xs "
            "multiplied by {k}.", "Implement `scale_list(xs)`: multiply each number in xs by {k}, return the list."),
           ("Define `scale_list(xs)` returning the list of the elements of xs times {k}, in order.",)),
    Family("count_char", 1, "count_char(s)", lambda r: {"c": r.choice("abcdefg")},
           lambda c: (lambda s: s.count(c)), "def count_char(s):\n    return s.count({c!r})",
           lambda r, p: [("".join(r.choice("abcdefg" + p["c"] * 2) for _ in range(r.randint(0, 12))),)
                         for _ in range(8)],
           ("Write a function `count_char(s)` that returns how many times the character '{c}' occurs in the "
            "string s.", "Implement `count_char(s)`: count the occurrences of '{c}' in s."),
           ("Define `count_char(s)` returning the number of '{c}' characters in s.",)),
    Family("clamp", 1, "clamp(x)", lambda r: (lambda lo: {"lo": lo, "hi": lo + r.randint(5, 40)})(r.randint(-30, 10)),
           lambda lo, hi: (lambda x: max(lo, min(hi, x))), "def clamp(x):\n    return max({lo}, min({hi}, x))",
           lambda r, p: [(x,) for x in _ints(r, 8, p["lo"] - 20, p["hi"] + 20)],
           ("Write a function `clamp(x)` that returns x limited to the range [{lo}, {hi}]: {lo} if x is smaller, "
            "{hi} if x is larger, else x.", "Implement `clamp(x)`: clamp the integer x into [{lo}, {hi}]."),
           ("Define `clamp(x)` that keeps x inside {lo}..{hi} (inclusive), replacing values outside by the "
            "nearest bound.",)),
    Family("filter_div", 2, "filter_div(xs)", lambda r: {"k": r.randint(2, 7)},
           lambda k: (lambda xs: [x for x in xs if x % k == 0]),
           "def filter_div(xs):\n    return [x for x in xs if x % {k} == 0]", lambda r, p: _lists(r, 8, -30, 30, 9),
           ("Write a function `filter_div(xs)` that returns the elements of the list xs that are divisible by "
            "{k}, keeping their order.", "Implement `filter_div(xs)`: keep only the multiples of {k} in xs."),
           ("Define `filter_div(xs)` returning, in order, the numbers of xs that {k} divides exactly.",)),
    Family("sum_odd_squares", 2, "sum_odd_squares(xs)", lambda r: {},
           lambda: (lambda xs: sum(x * x for x in xs if x % 2)),
           "def sum_odd_squares(xs):\n    return sum(x * x for x in xs if x % 2 != 0)", lambda r, p: _lists(r, 8),
           ("Write a function `sum_odd_squares(xs)` that returns the sum of the squares of the odd numbers in "
            "the list xs (0 if there are none).",
            "Implement `sum_odd_squares(xs)`: square every odd element of xs and add them up."),
           ("Define `sum_odd_squares(xs)`: the total of x*x over the odd x in xs.",)),
    Family("reverse_words", 2, "reverse_words(s)", lambda r: {},
           lambda: (lambda s: " ".join(s.split(" ")[::-1])),
           "def reverse_words(s):\n    return ' '.join(s.split(' ')[::-1])",
           lambda r, p: [(_words(r),) for _ in range(8)],
           ("Write a function `reverse_words(s)` that returns the words of s (separated by single spaces) in "
            "reverse order, joined by single spaces.",
            "Implement `reverse_words(s)`: reverse the order of the space-separated words of s."),
           ("Define `reverse_words(s)` that turns 'a b c' into 'c b a' for any words separated by one space.",)),
    Family("max_gap", 2, "max_gap(xs)", lambda r: {},
           lambda: (lambda xs: max(b - a for a, b in zip(xs, xs[1:]))),
           "def max_gap(xs):\n    return max(b - a for a, b in zip(xs, xs[1:]))",
           lambda r, p: [(_ints(r, r.randint(2, 7)),) for _ in range(8)],
           ("Write a function `max_gap(xs)` that returns the largest value of xs[i+1] - xs[i] over consecutive "
            "elements of the list xs (xs has at least two elements).",
            "Implement `max_gap(xs)`: the maximum difference next-minus-previous between neighbours in xs."),
           ("Define `max_gap(xs)` returning max(xs[i+1] - xs[i]) for i over the list (length >= 2).",)),
    Family("rle", 3, "rle(s)", lambda r: {}, lambda: _rle,
           "def rle(s):\n    out, i = [], 0\n    while i < len(s):\n        j = i\n"
           "        while j < len(s) and s[j] == s[i]:\n            j += 1\n"
           "        out.append(s[i] + str(j - i))\n        i = j\n    return ''.join(out)",
           lambda r, p: [("".join(r.choice("aab") * r.randint(1, 3) for _ in range(r.randint(0, 5))),)
                         for _ in range(8)],
           ("Write a function `rle(s)` that returns the run-length encoding of the string s: every run of one "
            "repeated character becomes that character followed by the run's length, e.g. 'aaab' -> 'a3b1'.",
            "Implement `rle(s)`: encode runs of equal characters as char+count ('ccd' -> 'c2d1'; '' -> '')."),
           ("Define `rle(s)` that compresses s into character/count pairs written one after another, "
            "e.g. 'xxy' -> 'x2y1'.",)),
    Family("balanced", 3, "balanced(s)", lambda r: dict(zip("oc", r.choice(("()", "[]", "{}", "<>")))),
           lambda o, c: _balanced(o, c),
           "def balanced(s):\n    d = 0\n    for ch in s:\n        if ch == {o!r}:\n            d += 1\n"
           "        elif ch == {c!r}:\n            d -= 1\n            if d < 0:\n                return False\n"
           "    return d == 0",
           lambda r, p: [(_bracket_str(r, p["o"], p["c"]),) for _ in range(8)],
           ("Write a function `balanced(s)` that returns True when the brackets '{o}' and '{c}' in s are balanced "
            "(every '{o}' is closed by a later '{c}', and no '{c}' comes before its '{o}'); other characters are "
            "ignored.", "Implement `balanced(s)`: True iff '{o}'/'{c}' pairs in s nest correctly."),
           ("Define `balanced(s)`: does every '{c}' in s close an earlier open '{o}', with none left open?",)),
    Family("fizz", 3, "fizz(n)",
           lambda r: (lambda a: {"a": a, "b": r.choice([b for b in (2, 3, 5, 7) if b != a]),
                                 "w1": r.choice(("Fizz", "Foo", "Ping")), "w2": r.choice(("Buzz", "Bar", "Pong"))})(
               r.choice((2, 3, 5))),
           lambda a, b, w1, w2: _fizz(a, b, w1, w2),
           "def fizz(n):\n    out = []\n    for i in range(1, n + 1):\n        s = ''\n"
           "        if i % {a} == 0:\n            s += {w1!r}\n        if i % {b} == 0:\n            s += {w2!r}\n"
           "        out.append(s or str(i))\n    return out",
           lambda r, p: [(n,) for n in [r.randint(1, 16) for _ in range(2)] + [0] + [r.randint(1, 20) for _ in range(5)]],
           ("Write a function `fizz(n)` that returns a list of strings for the numbers 1..n: '{w1}' for multiples "
            "of {a}, '{w2}' for multiples of {b}, '{w1}{w2}' for multiples of both, otherwise the number itself "
            "as a string.", "Implement `fizz(n)`: FizzBuzz for 1..n with {a} -> '{w1}', {b} -> '{w2}', both -> "
                            "'{w1}{w2}', else str(i); return the list."),
           ("Define `fizz(n)`: for i from 1 to n give '{w1}{w2}' if {a} and {b} divide i, '{w1}' if only {a} does, "
            "'{w2}' if only {b} does, else str(i); return them as a list.",)),
    Family("digit_root", 3, "digit_root(n)", lambda r: {"b": r.choice((3, 5, 7, 10))}, lambda b: _droot(b),
           "def digit_root(n):\n    while n >= {b}:\n        s = 0\n        while n:\n"
           "            s, n = s + n % {b}, n // {b}\n        n = s\n    return n",
           lambda r, p: [(n,) for n in [r.randint(0, 5000) for _ in range(2)] + [0] + [r.randint(0, 10**6) for _ in range(5)]],
           ("Write a function `digit_root(n)` that repeatedly replaces the non-negative integer n by the sum of "
            "its digits in base {b} until it is below {b}, and returns that number.",
            "Implement `digit_root(n)`: the repeated base-{b} digit sum of n, until a single base-{b} digit."),
           ("Define `digit_root(n)`: sum the base-{b} digits of n again and again until the value is less than "
            "{b}; return it.",)),
)
FAMILY_BY_NAME = {f.name: f for f in FAMILIES}


def _call_text(name: str, args_json: str) -> str:
    return f"{name}({', '.join(repr(a) for a in json.loads(args_json))})"


def make_problem(f: Family, split: str, seed: int, index: int, n_hidden: int = 6) -> Problem:
    rng = random.Random(f"code/{split}/{seed}/{f.name}/{index}")
    params = f.params(rng)
    phrasings = f.train_phrasings if split == "train" else f.heldout_phrasings
    phrasing = rng.randrange(len(phrasings))
    ref = f.ref(**params)
    cases = [(json.dumps(list(args)), json.dumps(ref(*args))) for args in f.inputs(rng, params)]
    visible, hidden = tuple(cases[:2]), tuple(cases[2:2 + n_hidden])
    examples = "\n".join(f"{_call_text(f.name, a)} == {json.loads(e)!r}" for a, e in visible)
    prompt = f"{phrasings[phrasing].format(**params)}\nExamples:\n{examples}"
    return Problem(prompt, f.name, f.solution.format(**params), visible, hidden, f.name, phrasing, f.level, split,
                   f"{split}-{seed}-{f.name}-{index}")


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=(1, 2, 3), families=None,
             n_hidden: int = 6) -> list[Problem]:
    if split not in ("train", "heldout"):
        raise ValueError("split must be 'train' or 'heldout'")
    chosen = [f for f in FAMILIES if f.level in tuple(levels) and (not families or f.name in families)]
    if not chosen:
        raise ValueError(f"no code family matches levels={levels} families={families}")
    return [make_problem(chosen[i % len(chosen)], split, seed, i // len(chosen), n_hidden) for i in range(n)]


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

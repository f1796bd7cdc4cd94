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
import json
import math
import random
import re
import secrets
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Callable

from .. import sandbox
from ..options import Options, option
from . import EnvSpec, StepResult, ToolSpec, replay_calls
from .code import _call_text, _short

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

FAMILIES = ("off_by_one", "wrong_operator", "wrong_default", "missing_edge_case", "wrong_key")
LEVEL_FAMILIES = {1: ("off_by_one", "wrong_operator"), 2: FAMILIES, 3: FAMILIES}
SOURCE_FILES = {1: 1, 2: 2, 3: 3}  # source modules per level (plus one test file)


@dataclass(frozen=True)
class Check:
    """One hidden test: ``module.function(*args)`` must return ``expected`` (JSON)."""

    module: str
    function: str
    args: str  # JSON list
    expected: str  # JSON
    passes_before: bool  # does the buggy repository already pass it?

    def call(self) -> str:
        return _call_text(self.function, self.args)


@dataclass(frozen=True)
class Task:
    prompt: str
    files: tuple[tuple[str, str], ...]  # (path, text), the buggy repository
    fix: tuple[str, str, str]  # (path, old, new): the reference fix, whole lines, ``old`` occurs once
    checks: tuple[Check, ...]
    family: str
    level: int
    split: str
    uid: str
    source: str = "generated"  # or "handwritten"

    @property
    def question(self) -> str:
        return self.prompt

    def fixed_files(self) -> dict[str, str]:
        files = dict(self.files)
        path, old, new = self.fix
        files[path] = files[path].replace(old, new, 1)
        return files


# ----------------------------------------------------------------------------------------------------
# scenarios: a function with a correct and a buggy body, and Python references of both behaviours

@dataclass(frozen=True)
class Scenario:
    name: str  # also the function's name
    family: str
    modules: tuple[str, ...]  # module names the function may live in
    params: Callable[[random.Random], dict]
    source: str  # module text; {BODY} is replaced by the correct or the buggy lines, {name} and params format
    correct: str
    buggy: str
    ref: Callable[..., Callable]  # ref(**params) -> the fixed behaviour
    bug: Callable[..., Callable]  # bug(**params) -> the buggy behaviour
    inputs: Callable[[random.Random, dict], tuple]  # one argument tuple
    context: str  # a sentence on what the function is for (the intended behaviour, not the fix)


def _words(r, k):
    return [r.choice(("ant", "bee", "cat", "dog", "elk", "fox", "gnu", "hen", "jay", "kea")) for _ in range(k)]


def _people(r):
    names = r.sample(("Ada", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal"), r.randint(0, 4))
    ages = r.sample(range(18, 80), len(names))
    ids = r.sample(range(1, 99), len(names))
    return [{"id": i, "name": n, "age": a} for n, a, i in zip(names, ages, ids)]


def _items(r):
    cats = ("food", "toys", "books")
    return [{"name": r.choice(("pen", "cup", "hat", "map")) + str(i), "category": r.choice(cats),
             "price": r.randint(1, 30)} for i in range(r.randint(0, 5))]


def _by_key(key):
    def f(items):
        out: dict = {}
        for it in items:
            out[it[key]] = out.get(it[key], 0) + it["price"]
        return out
    return f


SCENARIOS: tuple[Scenario, ...] = (
    # -- off by one ------------------------------------------------------------------------------------
    Scenario("count_between", "off_by_one", ("stats", "ranges", "tally"), lambda r: {},
             '"""Counting helpers."""\n\n\ndef count_between(xs, lo, hi):\n'
             '    """How many numbers of xs lie in [lo, hi], both ends included."""\n    n = 0\n    for x in xs:\n'
             '{BODY}\n            n += 1\n    return n\n',
             "        if lo <= x <= hi:", "        if lo <= x < hi:",
             lambda: (lambda xs, lo, hi: sum(lo <= x <= hi for x in xs)),
             lambda: (lambda xs, lo, hi: sum(lo <= x < hi for x in xs)),
             lambda r, p: (lambda lo: ([r.randint(-5, 15) for _ in range(r.randint(0, 7))] + [lo + r.choice((0, 4, 9))],
                                       lo, lo + 4))(r.randint(-3, 8)),
             "It should count the values between lo and hi, both bounds included."),
    Scenario("last_items", "off_by_one", ("history", "recent", "feed"), lambda r: {},
             '"""Recent entries."""\n\n\ndef last_items(xs, n):\n'
             '    """The last n entries of xs, oldest first (all of xs when n >= len(xs))."""\n'
             '    if n <= 0:\n        return []\n{BODY}\n    return xs[start:]\n',
             "    start = max(len(xs) - n, 0)", "    start = max(len(xs) - n + 1, 0)",
             lambda: (lambda xs, n: xs[max(len(xs) - n, 0):] if n > 0 else []),
             lambda: (lambda xs, n: xs[max(len(xs) - n + 1, 0):] if n > 0 else []),
             lambda r, p: (_words(r, r.randint(0, 6)), r.randint(0, 4)),
             "It should return the n most recent entries."),
    Scenario("window_sums", "off_by_one", ("sliding", "series", "rolling"), lambda r: {"k": r.randint(2, 3)},
             '"""Rolling sums."""\n\nWINDOW = {k}\n\n\ndef window_sums(xs, k=WINDOW):\n'
             '    """Sums of every run of k consecutive numbers of xs, left to right."""\n    out = []\n'
             '{BODY}\n        out.append(sum(xs[i:i + k]))\n    return out\n',
             "    for i in range(len(xs) - k + 1):", "    for i in range(len(xs) - k):",
             lambda k: (lambda xs, k=k: [sum(xs[i:i + k]) for i in range(len(xs) - k + 1)]),
             lambda k: (lambda xs, k=k: [sum(xs[i:i + k]) for i in range(len(xs) - k)]),
             lambda r, p: ([r.randint(-9, 9) for _ in range(r.randint(0, 6))],),
             "Every window of k consecutive values should have its sum in the result, the last one included."),
    # -- wrong operator --------------------------------------------------------------------------------
    Scenario("apply_discount", "wrong_operator", ("pricing", "checkout", "offers"), lambda r: {},
             '"""Prices."""\n\n\ndef apply_discount(price, percent):\n'
             '    """The price after taking off percent per cent, rounded to cents."""\n'
             '{BODY}\n    return round(value, 2)\n',
             "    value = price * (100 - percent) / 100", "    value = price * (100 + percent) / 100",
             lambda: (lambda price, percent: round(price * (100 - percent) / 100, 2)),
             lambda: (lambda price, percent: round(price * (100 + percent) / 100, 2)),
             lambda r, p: (r.randint(1, 200), r.choice((0, 0, 5, 10, 25, 50))),
             "A discount should make the price lower."),
    Scenario("is_eligible", "wrong_operator", ("rules", "access", "policy"), lambda r: {"m": r.choice((16, 18, 21))},
             '"""Eligibility rules."""\n\nMINIMUM_AGE = {m}\n\n\ndef is_eligible(age, minimum=MINIMUM_AGE):\n'
             '    """True when a person of this age may sign up (minimum age or older)."""\n{BODY}\n',
             "    return age >= minimum", "    return age > minimum",
             lambda m: (lambda age, minimum=m: age >= minimum), lambda m: (lambda age, minimum=m: age > minimum),
             lambda r, p: (p["m"] + r.choice((-3, -1, 0, 0, 1, 5)),),
             "People who have exactly the minimum age should be allowed."),
    Scenario("mean", "wrong_operator", ("stats", "metrics", "summary"), lambda r: {},
             '"""Averages."""\n\n\ndef mean(xs):\n    """The arithmetic mean of a non-empty list of numbers."""\n'
             '{BODY}\n',
             "    return sum(xs) / len(xs)", "    return sum(xs) // len(xs)",
             lambda: (lambda xs: sum(xs) / len(xs)), lambda: (lambda xs: sum(xs) // len(xs)),
             lambda r, p: ([r.randint(0, 20) for _ in range(r.randint(1, 4))],),
             "The mean of whole numbers is not always a whole number."),
    # -- wrong default ---------------------------------------------------------------------------------
    Scenario("split_tags", "wrong_default", ("tags", "labels", "parsing"), lambda r: {},
             '"""Tag lists."""\n\n\n{BODY}\n'
             '    """The tags of a text such as "a, b, c": split at sep, stripped, empty ones dropped."""\n'
             '    return [t.strip() for t in text.split(sep) if t.strip()]\n',
             'def split_tags(text, sep=","):', 'def split_tags(text, sep=";"):',
             lambda: (lambda text, sep=",": [t.strip() for t in text.split(sep) if t.strip()]),
             lambda: (lambda text, sep=";": [t.strip() for t in text.split(sep) if t.strip()]),
             lambda r, p: ((lambda ws: (", ".join(ws),) if r.random() < 0.6 else (";".join(ws), ";"))(
                 _words(r, r.randint(1, 3)))),
             "Tags are separated by commas unless another separator is given."),
    Scenario("format_price", "wrong_default", ("money", "display", "receipts"),
             lambda r: {"cur": r.choice(("EUR", "USD", "GBP"))},
             '"""Formatting prices."""\n\n\n{BODY}\n'
             '    """The amount with `digits` decimals and the currency, e.g. "3.50 {cur}"."""\n'
             '    return f"{{amount:.{{digits}}f}} {{currency}}"\n',
             'def format_price(amount, currency="{cur}", digits=2):',
             'def format_price(amount, currency="{cur}", digits=1):',
             lambda cur: (lambda amount, currency=cur, digits=2: f"{amount:.{digits}f} {currency}"),
             lambda cur: (lambda amount, currency=cur, digits=1: f"{amount:.{digits}f} {currency}"),
             lambda r, p: ((round(r.uniform(0, 99), 2),) if r.random() < 0.6
                           else (round(r.uniform(0, 99), 2), p["cur"], r.choice((0, 1, 3)))),
             "Prices are shown with two decimals by default."),
    Scenario("top_scores", "wrong_default", ("leaderboard", "ranking", "scores"), lambda r: {"n": r.choice((3, 4))},
             '"""Leaderboards."""\n\n\n{BODY}\n    """The n highest scores, highest first."""\n'
             '    return sorted(scores, reverse=True)[:n]\n',
             "def top_scores(scores, n={n}):", "def top_scores(scores, n={n1}):",
             lambda n: (lambda scores, k=n: sorted(scores, reverse=True)[:k]),
             lambda n: (lambda scores, k=n - 1: sorted(scores, reverse=True)[:k]),
             lambda r, p: ([r.randint(0, 99) for _ in range(r.randint(0, 6))],) if r.random() < 0.7
             else ([r.randint(0, 99) for _ in range(r.randint(0, 6))], r.randint(1, 3)),
             "By default the leaderboard shows the top {n}."),
    # -- missing edge case -----------------------------------------------------------------------------
    Scenario("average", "missing_edge_case", ("stats", "grades", "report"), lambda r: {},
             '"""Averages that never fail."""\n\n\ndef average(xs):\n'
             '    """The mean of xs, or 0.0 for an empty list."""\n{BODY}\n    return sum(xs) / len(xs)\n',
             "    if not xs:\n        return 0.0", "    # sum / count",
             lambda: (lambda xs: sum(xs) / len(xs) if xs else 0.0), lambda: (lambda xs: sum(xs) / len(xs)),
             lambda r, p: ([r.randint(0, 10) for _ in range(r.choice((0, 0, 1, 2, 3)))],),
             "An empty list of marks should give 0.0."),
    Scenario("first_word", "missing_edge_case", ("text", "words", "headline"), lambda r: {},
             '"""Words."""\n\n\ndef first_word(s):\n    """The first word of s, or "" when s has none."""\n'
             '    words = s.split()\n{BODY}\n    return words[0]\n',
             '    if not words:\n        return ""', "    # the first one",
             lambda: (lambda s: s.split()[0] if s.split() else ""), lambda: (lambda s: s.split()[0]),
             lambda r, p: (" ".join(_words(r, r.choice((0, 0, 1, 2, 3)))) + r.choice(("", " ", "  ")),),
             "Blank titles should give an empty first word."),
    Scenario("largest", "missing_edge_case", ("stats", "extremes", "peaks"), lambda r: {},
             '"""Extremes."""\n\n\ndef largest(xs, default=None):\n'
             '    """The largest value of xs, or default when xs is empty."""\n{BODY}\n    return max(xs)\n',
             "    if not xs:\n        return default", "    # max of the values",
             lambda: (lambda xs, default=None: max(xs) if xs else default), lambda: (lambda xs, default=None: max(xs)),
             lambda r, p: (([r.randint(-9, 9) for _ in range(r.choice((0, 0, 1, 3)))],) if r.random() < 0.7
                           else ([r.randint(-9, 9) for _ in range(r.choice((0, 2)))], r.randint(-5, 5))),
             "An empty list should give the default instead of an error."),
    # -- wrong key -------------------------------------------------------------------------------------
    Scenario("total_by_category", "wrong_key", ("inventory", "sales", "basket"), lambda r: {},
             '"""Totals."""\n\n\ndef total_by_category(items):\n'
             '    """Sum of the prices per category: {{category: total}}."""\n    totals = {{}}\n    for item in items:\n'
             '{BODY}\n        totals[key] = totals.get(key, 0) + item["price"]\n    return totals\n',
             '        key = item["category"]', '        key = item["name"]',
             lambda: _by_key("category"), lambda: _by_key("name"), lambda r, p: (_items(r),),
             "The totals should be grouped by category."),
    Scenario("names_by_age", "wrong_key", ("people", "members", "roster"), lambda r: {},
             '"""People."""\n\n\ndef names_by_age(people):\n    """The names, youngest first."""\n'
             '{BODY}\n    return [p["name"] for p in ordered]\n',
             '    ordered = sorted(people, key=lambda p: p["age"])', '    ordered = sorted(people, key=lambda p: p["id"])',
             lambda: (lambda people: [p["name"] for p in sorted(people, key=lambda p: p["age"])]),
             lambda: (lambda people: [p["name"] for p in sorted(people, key=lambda p: p["id"])]),
             lambda r, p: (_people(r),),
             "The list should be ordered by age."),
)
SCENARIO_BY_NAME = {s.name: s for s in SCENARIOS}


@dataclass(frozen=True)
class Companion:
    """A correct module placed beside the buggy one at levels 2-3 (its functions get regression checks)."""

    module: str
    source: str
    funcs: tuple[tuple[str, Callable, Callable[[random.Random], tuple]], ...]  # (name, reference, inputs)


COMPANIONS: tuple[Companion, ...] = (
    Companion("textutil", '"""Text helpers."""\n\n\ndef slug(s):\n    """Lower case words joined by dashes."""\n'
              '    return "-".join(s.lower().split())\n\n\ndef shorten(s, width=10):\n'
              '    """s cut to width characters, with "..." when it was longer."""\n'
              '    return s if len(s) <= width else s[:width - 3] + "..."\n',
              (("slug", lambda s: "-".join(s.lower().split()), lambda r: (" ".join(_words(r, r.randint(0, 3))).title(),)),
               ("shorten", lambda s, width=10: s if len(s) <= width else s[:width - 3] + "...",
                lambda r: (" ".join(_words(r, r.randint(1, 4))),)))),
    Companion("mathutil", '"""Number helpers."""\n\n\ndef clamp(x, lo, hi):\n    """x limited to [lo, hi]."""\n'
              '    return max(lo, min(hi, x))\n\n\ndef percent(part, whole):\n'
              '    """part as a percentage of whole, one decimal (0.0 when whole is 0)."""\n'
              '    return round(100 * part / whole, 1) if whole else 0.0\n',
              (("clamp", lambda x, lo, hi: max(lo, min(hi, x)), lambda r: (r.randint(-20, 20), -5, 5)),
               ("percent", lambda part, whole: round(100 * part / whole, 1) if whole else 0.0,
                lambda r: (r.randint(0, 50), r.choice((0, 50, 80)))))),
    Companion("records", '"""Record helpers."""\n\n\ndef pick(record, keys):\n'
              '    """A new dict with only the given keys (those present)."""\n'
              '    return {k: record[k] for k in keys if k in record}\n\n\ndef count_by(values):\n'
              '    """How often each value occurs: {value: count}."""\n    out = {}\n    for v in values:\n'
              '        out[v] = out.get(v, 0) + 1\n    return out\n',
              (("pick", lambda record, keys: {k: record[k] for k in keys if k in record},
                lambda r: ({"a": r.randint(0, 9), "b": r.randint(0, 9), "c": r.randint(0, 9)},
                           r.sample(["a", "b", "c", "d"], 2))),
               ("count_by", lambda values: {v: values.count(v) for v in values}, lambda r: (_words(r, r.randint(0, 5)),)))),
)

ISSUE_TRAIN = (
    "Bug report: calling `{call}` {got}, but it should return `{want}`. {context}{where}",
    "`{call}` gives a wrong result: it {got_short}. Expected `{want}`. {context}{where}",
)
ISSUE_HELDOUT = ("A user reports that `{call}` {got} where `{want}` was expected. {context}{where}",)


def _outcome(fn, args):
    """(ok, JSON value or error text) of our reference function on ``args`` (JSON values, not mutated)."""
    try:
        return True, json.loads(json.dumps(fn(*args)))
    except Exception as e:  # the buggy behaviour may raise (missing edge case)
        return False, f"{type(e).__name__}: {e}"


def _test_file(module: str, func: str, cases: list[tuple[str, object]]) -> str:
    cls = "".join(w.title() for w in func.split("_")) + "Test"
    lines = ["import unittest", "", f"from {module} import {func}", "", "", f"class {cls}(unittest.TestCase):"]
    for i, (call, expected) in enumerate(cases, 1):
        assert_ = "assertAlmostEqual" if isinstance(expected, float) else "assertEqual"
        lines += [f"    def test_{func}_{i}(self):", f"        self.{assert_}({call}, {expected!r})", ""]
    lines += ["", 'if __name__ == "__main__":', "    unittest.main()"]
    return "\n".join(lines) + "\n"


def make_task(sc: Scenario, level: int, split: str, seed: int, index: int, n_hidden: int = 6) -> Task:
    rng = random.Random(f"swe/{split}/{seed}/{sc.name}/{level}/{index}")
    params = sc.params(rng)
    fmt = {**params, **({"n1": params["n"] - 1} if "n" in params else {})}
    module = rng.choice(sc.modules)
    ref, bug = sc.ref(**params), sc.bug(**params)
    failing, passing, seen = [], [], set()
    n_fail = max(1, n_hidden // 2)
    for _ in range(80):  # the train pool holds thousands of tasks: a bounded search (scarce cases stop at 80)
        key = json.dumps(list(sc.inputs(rng, params)))
        if key in seen:
            continue
        seen.add(key)
        args = json.loads(key)  # as the sandbox will see them (tuples become lists)
        ok_ref, want = _outcome(ref, args)
        if not ok_ref:
            continue
        ok_bug, got = _outcome(bug, args)
        (passing if ok_bug and got == want else failing).append((key, want, ok_bug, got))
        if len(failing) >= n_fail and len(passing) >= n_hidden - n_fail + 2:
            break
    if not failing:
        raise RuntimeError(f"scenario {sc.name}: no failing input found")  # a bug in the scenario table
    # the hidden suite of the function: half failing on the buggy code (at least the issue's call), half passing
    checks = [Check(module, sc.name, k, json.dumps(w), False) for k, w, _, _ in failing[:n_fail]]
    checks += [Check(module, sc.name, k, json.dumps(w), True) for k, w, _, _ in passing[:n_hidden - len(checks)]]
    # visible tests: the issue's failing call and two passing ones (the hidden suite reuses the failing one)
    visible = [failing[0]] + passing[-2:] if len(passing) > 2 else [failing[0]] + passing[:2]
    rng.shuffle(visible)
    body = sc.source.replace("{BODY}", "\x00")
    source = body.format(**fmt).replace("\x00", sc.buggy.format(**fmt))
    files = {f"{module}.py": source}
    for comp in rng.sample(COMPANIONS, SOURCE_FILES[level] - 1):
        files[f"{comp.module}.py"] = comp.source
        for fname, fref, finputs in comp.funcs:
            args = json.loads(json.dumps(list(finputs(rng))))
            ok, want = _outcome(fref, args)
            checks.append(Check(comp.module, fname, json.dumps(list(args)), json.dumps(want), True))
    test_path = f"tests/test_{module}.py"
    files[test_path] = _test_file(module, sc.name, [(_call_text(sc.name, k), w) for k, w, _, _ in visible])
    fk, fwant, fok, fgot = failing[0]
    call = _call_text(sc.name, fk)
    got = f"returns `{fgot!r}`" if fok else f"raises `{fgot}`"
    phr = ISSUE_TRAIN if split == "train" else ISSUE_HELDOUT
    text = phr[rng.randrange(len(phr))]
    where = f" The function is `{sc.name}` in `{module}.py`." if level < 3 else ""
    prompt = text.format(call=call, got=got, got_short=got.replace("returns", "returned").replace("raises", "raised"),
                         want=repr(fwant), context=sc.context.format(**fmt), where=where).strip()
    prompt += "\nFiles: " + ", ".join(sorted(files)) + "\nFix the bug so that the call gives the expected result."
    fix = (f"{module}.py", sc.buggy.format(**fmt) + "\n", sc.correct.format(**fmt) + "\n")
    return Task(prompt, tuple(sorted(files.items())), fix, tuple(checks), sc.family, level, split,
                f"{split}-{seed}-{sc.name}-{level}-{index}")


@lru_cache(maxsize=1)
def handwritten_tasks() -> tuple[Task, ...]:
    """The hand-written held-out tasks (``swe_tasks/*.json``), checked field by field."""
    out = []
    folder = resources.files(__package__).joinpath("swe_tasks")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".json"):
            continue
        out.append(task_from_json(json.loads(entry.read_text(encoding="utf-8")), entry.name))
    return tuple(out)


def task_from_json(d: dict, where: str = "task") -> Task:
    def need(key, kind):
        if not isinstance(d.get(key), kind):
            raise ValueError(f"{where}: field {key!r} must be a {kind.__name__}")
        return d[key]

    files = need("files", dict)
    if not all(isinstance(p, str) and isinstance(t, str) for p, t in files.items()):
        raise ValueError(f"{where}: field 'files' must map paths to texts")
    fix = need("fix", dict)
    if fix.get("path") not in files or not isinstance(fix.get("old"), str) or not isinstance(fix.get("new"), str) \
            or files[fix["path"]].count(fix["old"]) != 1:
        raise ValueError(f"{where}: fix.old must occur exactly once in fix.path (and fix.new be a text)")
    text, old = files[fix["path"]], fix["old"]
    if not old.endswith("\n") or not (text.startswith(old) or "\n" + old in text):
        raise ValueError(f"{where}: fix.old must be whole lines (the demonstration edits a line range)")
    checks = []
    for i, c in enumerate(need("checks", list), 1):
        if not isinstance(c, dict) or {"module", "function", "args", "expected", "passes_before"} - set(c) \
                or not isinstance(c["args"], list):
            raise ValueError(f"{where}: check {i} needs module, function, args (a list), expected, passes_before")
        checks.append(Check(c["module"], c["function"], json.dumps(c["args"]), json.dumps(c["expected"]),
                            bool(c["passes_before"])))
    checks = tuple(checks)
    if need("family", str) not in FAMILIES:
        raise ValueError(f"{where}: family must be one of {FAMILIES}")
    if need("level", int) not in (1, 2, 3):
        raise ValueError(f"{where}: level must be 1, 2 or 3")
    issue = need("issue", str) + "\nFiles: " + ", ".join(sorted(files)) + \
        "\nFix the bug so that the call gives the expected result."
    return Task(issue, tuple(sorted(files.items())), (fix["path"], fix["old"], fix["new"]), checks, d["family"],
                d["level"], "heldout", f"hand-{need('id', str)}", "handwritten")


def tasks(split: str = "train", n: int = 100, seed: int = 0, levels=(1, 2, 3), families=None, n_hidden: int = 6,
          heldout_tasks: str = "both") -> list[Task]:
    if split not in ("train", "heldout"):
        raise ValueError("split must be 'train' or 'heldout'")
    combos = [(sc, lv) for lv in sorted(set(levels)) for sc in SCENARIOS
              if sc.family in LEVEL_FAMILIES[lv] and (not families or sc.family in families)]
    hand = [t for t in handwritten_tasks() if t.level in tuple(levels) and (not families or t.family in families)]
    if split == "heldout" and heldout_tasks == "handwritten":
        if not hand:
            raise ValueError(f"no hand-written swe task matches levels={levels} families={families}")
        return [hand[i % len(hand)] for i in range(n)]
    if not combos:
        raise ValueError(f"no swe scenario matches levels={levels} families={families}")
    first = hand[:n] if split == "heldout" and heldout_tasks == "both" else []
    # hand-written tasks first (in file order), then generated ones: every evaluation of n >= 8 sees them all
    return first + [make_task(*combos[i % len(combos)], split, seed, i // len(combos), n_hidden)
                    for i in range(n - len(first))]


# ----------------------------------------------------------------------------------------------------
# the sandboxed harnesses (our code; the repository arrives as repo.json, the nonce on stdin)

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

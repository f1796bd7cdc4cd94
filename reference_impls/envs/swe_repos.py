"""The swe env's tasks: generated repositories with a seeded bug (scenarios of five bug families, companions,
issue texts, hidden checks) and the hand-written held-out tasks (``swe_tasks/*.json``). Plain data and Python
reference functions of the fixed and the buggy behaviour; nothing here runs in the sandbox. The env, its
protocol and its reward are :mod:`reference_impls.envs.swe`."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Callable

from .code_problems import _call_text

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

"""The code envs' problems: function *families* (a shape, seeded parameters, a spec in a train and a held-out
phrasing, a reference solution and the inputs of its tests) and the problems drawn from them. Plain data and
Python reference functions, run here only on our own inputs to compute the expected values; the model's code
runs in the sandbox (:mod:`reference_impls.envs.code`)."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Callable

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

"""Science by experiment: find a hidden law ``y = f(x)`` by measuring it, then state the law.

Tag format (inside the assistant turn; the environment's text is loss-masked)::

    model: <tool>measure(2)</tool>               run one experiment at x = 2
    env:   <result>x = 2: y = 7</result>
    model: <answer>y = 3*x + 1</answer>          the stated law ends the episode

Problems
    A problem is a hidden law from a small family with seeded coefficients: ``linear`` ``y = a*x + b``,
    ``quadratic`` ``y = a*x^2 + b`` and ``exponential`` ``y = a*exp(b*x)``. Levels: 1 = linear with integer
    coefficients; 2 = linear or quadratic, integer coefficients; 3 = all three families, coefficients with one
    decimal. Experiments may be run for x in [X_LOW, X_HIGH]. A measurement is exact unless the option ``noise``
    is set: then Gaussian noise of standard deviation ``noise * max(1, |y|)`` is added, drawn from the problem's
    id and the experiment's number, so an episode replays identically and a repeated experiment gives a new
    reading.
Splits
    ``train``, ``validation`` and ``heldout`` hold different laws: a law (family and coefficients) belongs to
    one split by a stable hash of the law itself (one in four held out, one in eight for validation), so no
    held-out law is ever trained on under any seed.
Reward
    The stated law is evaluated at ``eval_points`` hidden points of the measurable range (drawn with the
    problem) and compared with the true, noise-free law: the reward is the share of points where
    ``|predicted - true| <= tolerance * max(1, |true|)``. Any law that predicts earns it, not only one written in
    the family's form. A law that does not parse earns 0 and the info's ``parse_error`` says why.
Safety
    The law is read by :func:`parse_law`, a recursive-descent parser of a fixed grammar (numbers, ``x``, ``+ - *
    /``, integer powers ``^k`` with ``|k| <= MAX_POWER``, ``exp(...)``, parentheses) into a tree of tuples that
    :func:`evaluate` computes with ``math``; nothing the model writes is passed to ``eval`` or ``exec``. Its
    length, token count, nesting depth and number sizes are bounded, and an overflow or a division by zero makes
    that point's prediction wrong, never an exception.
"""
from __future__ import annotations

import hashlib
import math
import random
import re
from dataclasses import dataclass

from ..options import ConfigError, Options, option
from . import EnvSpec, StepResult, ToolSpec

TOOL = ToolSpec(
    name="measure",
    description="Experiment: 'measure(X)' returns y at x = X.",
    call_open="<tool>",
    call_close="</tool>",
    result_open="<result>",
    result_close="</result>",
)

FAMILIES = ("linear", "quadratic", "exponential")
FORMS = {"linear": "y = a*x + b", "quadratic": "y = a*x^2 + b", "exponential": "y = a*exp(b*x)"}
LEVEL_FAMILIES = {1: ("linear",), 2: ("linear", "quadratic"), 3: FAMILIES}
LEVELS = (1, 2, 3)
X_LOW, X_HIGH = -5.0, 5.0
SPLITS = ("train", "validation", "heldout")
DEMONSTRATION_XS = (0, 1, 2)  # three readings fix both coefficients of every family and tell the families apart

SYSTEM_PROMPT = (
    "Find the hidden law y = f(x) by experiment. <tool>measure(X)</tool> measures y at x = X (X from "
    f"{X_LOW:g} to {X_HIGH:g}); the reading comes back in <result>...</result>. When you know the law, state it "
    "with numbers for its coefficients, e.g. <answer>y = 3*x - 2</answer>. A law may use x, numbers, + - * /, "
    "^ with a whole-number power, exp(...) and parentheses."
)


# ----------------------------------------------------------------------------------------------------
# the law parser: a fixed grammar, read into a tree of tuples (never evaluated as Python)

MAX_LAW_CHARS = 200
MAX_TOKENS = 80
MAX_DEPTH = 8
MAX_POWER = 6
MAX_NUMBER = 1e6
EXP_LIMIT = 60.0  # exp of more than this counts as an overflow

_TOKEN = re.compile(r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)"
                    r"|(?P<name>[A-Za-z_]+)|(?P<op>\*\*|[-+*/^()=]))")


class LawError(ValueError):
    """A law that does not read; the text names what is wrong and where (a 0-based character position)."""


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, position) of each token; kind is num, name, op or end."""
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            bad = text[pos:].lstrip()[:1]
            where = len(text) - len(text[pos:].lstrip())
            raise LawError(f"unexpected character {bad!r} at position {where}")
        kind = m.lastgroup
        out.append((kind, m.group(kind), m.start(kind)))
        if len(out) > MAX_TOKENS:
            raise LawError(f"the law has more than {MAX_TOKENS} tokens")
        pos = m.end()
    out.append(("end", "", len(text)))
    return out


class _Parser:
    """law := [('y' | 'f' '(' 'x' ')') '='] expr;  expr := term (('+' | '-') term)*;
    term := unary (('*' | '/') unary | implicit unary)*  (implicit: a name or '(' right after a factor, as in 2x);
    unary := ('+' | '-') unary | power;  power := atom [('^' | '**') ['-'] integer];
    atom := number | 'x' | 'exp' '(' expr ')' | '(' expr ')'."""

    def __init__(self, text: str):
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0

    @property
    def tok(self):
        return self.toks[self.i]

    def _take(self, kind: str, value: str | None = None) -> bool:
        k, v, _ = self.tok
        if k == kind and (value is None or v.lower() == value):
            self.i += 1
            return True
        return False

    def _expect(self, kind: str, value: str, what: str):
        if not self._take(kind, value):
            raise LawError(f"expected {what} at position {self.tok[2]}, found {self._shown()}")

    def _shown(self) -> str:
        k, v, _ = self.tok
        return "the end of the law" if k == "end" else repr(v)

    def law(self):
        k, v, _ = self.tok
        # an optional left-hand side: "y =" or "f(x) ="
        if k == "name" and v.lower() == "y" and self.toks[self.i + 1][1] == "=":
            self.i += 2
        elif (k == "name" and v.lower() == "f" and [t[1].lower() for t in self.toks[self.i + 1:self.i + 5]]
              == ["(", "x", ")", "="]):
            self.i += 5
        tree = self.expr()
        if self.tok[0] != "end":
            raise LawError(f"unexpected {self._shown()} at position {self.tok[2]}")
        return tree

    def _nest(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise LawError(f"the law nests deeper than {MAX_DEPTH} levels at position {self.tok[2]}")

    def expr(self):
        self._nest()
        tree = self.term()
        while self.tok[0] == "op" and self.tok[1] in "+-":
            op = "add" if self.tok[1] == "+" else "sub"
            self.i += 1
            tree = (op, tree, self.term())
        self.depth -= 1
        return tree

    def term(self):
        tree = self.unary()
        while True:
            k, v, _ = self.tok
            if k == "op" and v in ("*", "/"):
                self.i += 1
                tree = ("mul" if v == "*" else "div", tree, self.unary())
            elif k == "name" or (k == "op" and v == "("):
                tree = ("mul", tree, self.unary())
            else:
                return tree

    def unary(self):
        signs = 0
        while self.tok[0] == "op" and self.tok[1] in "+-":
            signs += self.tok[1] == "-"
            self.i += 1
        tree = self.power()
        return ("neg", tree) if signs % 2 else tree

    def power(self):
        base = self.atom()
        if self.tok[0] == "op" and self.tok[1] in ("^", "**"):
            self.i += 1
            negative = self._take("op", "-")
            k, v, pos = self.tok
            if k != "num" or not float(v).is_integer() or float(v) > MAX_POWER:
                raise LawError(f"a power must be a whole number from -{MAX_POWER} to {MAX_POWER}, found "
                               f"{self._shown()} at position {pos}")
            self.i += 1
            return ("pow", base, -int(float(v)) if negative else int(float(v)))
        return base

    def atom(self):
        k, v, pos = self.tok
        if k == "num":
            value = float(v)
            if not math.isfinite(value) or abs(value) > MAX_NUMBER:
                raise LawError(f"the number {v[:20]!r} at position {pos} is larger than {MAX_NUMBER:g}")
            self.i += 1
            return ("num", value)
        if k == "name":
            name = v.lower()
            if name == "x":
                self.i += 1
                return ("x",)
            if name == "exp":
                self.i += 1
                self._expect("op", "(", "'(' after exp")
                self._nest()
                inner = self.expr()
                self.depth -= 1
                self._expect("op", ")", "')' closing exp(")
                return ("exp", inner)
            if name in ("a", "b", "c", "k"):
                raise LawError(f"'{v}' at position {pos}: write the coefficient's value (a number), not its letter")
            raise LawError(f"unknown name {v[:20]!r} at position {pos}; a law may use x, exp(...) and numbers")
        if k == "op" and v == "(":
            self.i += 1
            self._nest()
            inner = self.expr()
            self.depth -= 1
            self._expect("op", ")", "')'")
            return inner
        raise LawError(f"expected a number, x, exp(...) or '(' at position {pos}, found {self._shown()}")


def parse_law(text: str):
    """The law's tree, or :class:`LawError` naming what is wrong and where. Never evaluates the text."""
    if len(text) > MAX_LAW_CHARS:
        raise LawError(f"the law is {len(text)} characters long; at most {MAX_LAW_CHARS}")
    if not text.strip():
        raise LawError("the answer is empty; state the law, e.g. y = 3*x - 2")
    return _Parser(text).law()


def evaluate(tree, x: float) -> float:
    """The law's value at ``x``; ``nan`` where it is undefined or overflows (a wrong prediction, never raised)."""
    try:
        value = _value(tree, x)
    except (OverflowError, ZeroDivisionError, ValueError):
        return math.nan
    return value if math.isfinite(value) else math.nan


def _value(tree, x: float) -> float:
    kind = tree[0]
    if kind == "num":
        return tree[1]
    if kind == "x":
        return x
    if kind == "neg":
        return -_value(tree[1], x)
    if kind == "exp":
        arg = _value(tree[1], x)
        if arg > EXP_LIMIT:
            raise OverflowError
        return math.exp(arg)
    if kind == "pow":
        return _value(tree[1], x) ** tree[2]  # 0 ** -k raises ZeroDivisionError
    left, right = _value(tree[1], x), _value(tree[2], x)
    if kind == "add":
        return left + right
    if kind == "sub":
        return left - right
    if kind == "mul":
        return left * right
    return left / right  # div


# ----------------------------------------------------------------------------------------------------
# problems

@dataclass(frozen=True)
class Problem:
    family: str
    a: float
    b: float
    eval_xs: tuple[float, ...]  # where the stated law is scored (never shown to the agent)
    level: int
    split: str
    uid: str

    def true_y(self, x: float) -> float:
        if self.family == "linear":
            return self.a * x + self.b
        if self.family == "quadratic":
            return self.a * x * x + self.b
        return self.a * math.exp(self.b * x)

    @property
    def law(self) -> str:
        """The hidden law, written in the grammar the agent answers in."""
        a, b = _num(self.a), _num(abs(self.b))
        if self.family == "exponential":
            return f"y = {a}*exp({_num(self.b)}*x)"
        power = "x" if self.family == "linear" else "x^2"
        if self.b == 0:
            return f"y = {a}*{power}"
        return f"y = {a}*{power} {'-' if self.b < 0 else '+'} {b}"


def _num(v: float) -> str:
    return f"{v:.6g}"


def split_of(family: str, a: float, b: float) -> str:
    """The split a law belongs to: a stable hash of the law (1/4 held out, 1/8 validation, the rest train)."""
    bucket = int(hashlib.sha256(f"science/{family}/{a:.1f}/{b:.1f}".encode()).hexdigest()[:8], 16) % 8
    return "heldout" if bucket < 2 else "validation" if bucket == 2 else "train"


def _coefficients(rng: random.Random, family: str, level: int) -> tuple[float, float]:
    if family == "exponential":
        a = rng.choice([-1, 1]) * rng.randint(5, 50) / 10
        b = rng.choice([-1, 1]) * rng.randint(1, 9) / 10
        return a, b
    if level < 3:
        return float(rng.choice([v for v in range(-9, 10) if v])), float(rng.randint(-9, 9))
    return rng.choice([-1, 1]) * rng.randint(1, 99) / 10, rng.randint(-99, 99) / 10


def make_problem(split: str, seed: int, level: int, index: int, eval_points: int) -> Problem:
    rng = random.Random(f"science/{split}/{seed}/{level}/{index}")
    families = LEVEL_FAMILIES[level]
    family = families[index % len(families)]
    for _ in range(10_000):
        a, b = _coefficients(rng, family, level)
        if split_of(family, a, b) == split:
            xs = tuple(round(rng.uniform(X_LOW, X_HIGH), 2) for _ in range(eval_points))
            return Problem(family, a, b, xs, level, split, f"{split}-{seed}-{level}-{index}")
    raise RuntimeError("no law found for the split")  # pragma: no cover - every split holds many laws


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=LEVELS, eval_points: int = 5) -> list[Problem]:
    if split not in SPLITS:
        raise ValueError(f"science: split must be one of {', '.join(SPLITS)}, got {split!r}")
    levels = tuple(levels)
    if not levels:
        raise ValueError("science: choose at least one level")
    return [make_problem(split, seed, levels[i % len(levels)], i // len(levels), eval_points) for i in range(n)]


# ----------------------------------------------------------------------------------------------------
# the environment

@dataclass
class ScienceConfig(Options):
    """The science env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option(LEVELS, "Law families: 1 = linear, integer coefficients; 2 = linear or "
                                     "quadratic, integer coefficients; 3 = linear, quadratic or exponential, "
                                     "coefficients with one decimal.", choices=LEVELS)
    max_measurements: int = option(6, "Experiments allowed; one more ends the episode with reward 0.", low=0,
                                   high=64, aliases=("max_tool_calls",))
    noise: float = option(0.0, "Measurement noise: a reading's standard deviation is noise * max(1, |y|) "
                          "(0 = exact readings).", low=0.0, high=1.0)
    tolerance: float = option(0.05, "A predicted y counts when |predicted - true| <= tolerance * max(1, |true|).",
                              low=1e-6, high=1.0)
    eval_points: int = option(5, "Hidden points of the measurable range where the stated law is scored.", low=1,
                              high=100)

    def __post_init__(self):
        super().__post_init__()
        if not self.levels:
            raise ConfigError("--levels (option of --env science): choose at least one level")


_MEASURE = re.compile(r"^\s*measure\s*(?:\(\s*(?:x\s*=\s*)?(?P<p>[^()]*?)\s*\)|\s(?:x\s*=\s*)?(?P<s>.*?))\s*$",
                      re.I | re.S)
_NUMBER = re.compile(r"^[-+]?(?:\d{1,6}(?:\.\d{0,6})?|\.\d{1,6})$")


def parse_measure(command: str) -> tuple[float | None, str]:
    """``measure(X)`` -> (X, "") or (None, what is wrong). Never raises, never evaluates."""
    m = _MEASURE.match(command[:200])
    if m is None:
        return None, f"unknown experiment {command.strip()[:40]!r}; write measure(X) with a number X"
    arg = m.group("p") if m.group("p") is not None else m.group("s")
    if not _NUMBER.match(arg or ""):
        return None, f"measure takes one number, e.g. measure(2.5); got {(arg or '')[:30]!r}"
    x = float(arg)
    if not X_LOW <= x <= X_HIGH:
        return None, f"x = {x:g} is outside the range experiments can reach ({X_LOW:g} to {X_HIGH:g})"
    return x, ""


class ScienceEnv:
    """One episode on one :class:`Problem`; see the module docstring for the protocol."""

    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)

    def __init__(self, problem: Problem, config: ScienceConfig | None = None):
        self.problem = problem
        self.config = config or ScienceConfig()
        self.measurements = 0

    def reset(self) -> list[dict[str, str]]:
        self.measurements = 0
        forms = " or ".join(FORMS[f] for f in LEVEL_FAMILIES[self.problem.level])
        user = (f"The law has the form {forms}, with unknown numbers for the coefficients. You may run "
                f"{self.config.max_measurements} experiments.")
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def reading(self, x: float) -> float:
        """One measurement at ``x`` (the ``measurements``-th: the noise is drawn from the problem and that count)."""
        y = self.problem.true_y(x)
        if self.config.noise > 0:
            rng = random.Random(f"science-noise/{self.problem.uid}/{self.measurements}")
            y += rng.gauss(0.0, self.config.noise * max(1.0, abs(y)))
        return y

    def score(self, law_text: str) -> tuple[float, dict]:
        """(reward, info) of a stated law (the inside of <answer>)."""
        try:
            tree = parse_law(law_text)
        except LawError as err:
            return 0.0, {"correct": False, "hits": 0, "parse_error": str(err)}
        tol = self.config.tolerance
        hits = 0
        for x in self.problem.eval_xs:
            true, predicted = self.problem.true_y(x), evaluate(tree, x)
            hits += bool(math.isfinite(predicted) and abs(predicted - true) <= tol * max(1.0, abs(true)))
        n = len(self.problem.eval_xs)
        return hits / n, {"correct": hits == n, "hits": hits}

    def step(self, model_text: str) -> StepResult:
        action = TOOL.first_action(model_text)
        base = {"tool_calls": self.measurements}
        if action is not None and action[0] == "answer":
            text = action[1].group(1).strip()
            reward, info = self.score(text)
            return StepResult(None, True, reward, {**base, **info, "answer": text[:MAX_LAW_CHARS]})
        if action is None:
            return StepResult(None, True, 0.0, {**base, "correct": False, "answer": None})
        if self.measurements >= self.config.max_measurements:
            return StepResult(None, True, 0.0, {**base, "correct": False, "answer": None, "truncated": True,
                                                "error": f"all {self.config.max_measurements} experiments were "
                                                         f"used; state the law with <answer>...</answer>"})
        x, error = parse_measure(action[1].group(1))
        text = f"error: {error}" if x is None else f"x = {x:g}: y = {_num(self.reading(x))}"
        self.measurements += 1
        return StepResult(TOOL.result(text), False, 0.0, {"tool_calls": self.measurements})


def demonstration(problem: Problem) -> list[tuple[str, str]]:
    """Measure at x = 0, 1, 2 (enough to fix both coefficients and the family), then state the law."""
    env = ScienceEnv(problem, ScienceConfig())
    env.reset()
    segments: list[tuple[str, str]] = []
    for x in DEMONSTRATION_XS:
        call = f"{TOOL.call_open}measure({x}){TOOL.call_close}"
        segments += [("model", call), ("env", env.step(call).observation)]
    segments.append(("model", f"{TOOL.answer_open}{problem.law}{TOOL.answer_close}"))
    return segments


def _problems(split: str, n: int, seed: int, config: ScienceConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels, eval_points=config.eval_points)


SPEC = EnvSpec("science", ScienceConfig, _problems, ScienceEnv, demonstration,
               title="Science by experiment: find a hidden law with a measuring tool", validation_split=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("science-grpo", "Scientific discovery by experiment: find a hidden law (GRPO)", "grpo", "science",
                   "An agent that runs experiments with a measure(x) tool against a hidden law y = f(x) and then "
                   "states the law; rewarded by how well the stated law predicts hidden points.",
                   nodes=("env-science-research", "env-domain-specific"),
                   changes="A small stand-in for science and research environments: keeps the loop they share "
                           "(choose an experiment, read its outcome, form a hypothesis, and be scored on whether "
                           "the hypothesis predicts what was not measured) with a budget of experiments and "
                           "optional measurement noise. Simplifies: one input variable, three law families "
                           "(linear, quadratic, exponential) with seeded coefficients, a measurable range of "
                           "-5 to 5, and a law written in a small fixed grammar read by the environment's own "
                           "parser. No literature, lab protocols or real data.",
                   equation=r"r = \frac{1}{K}\sum_{k=1}^{K} \mathbb{1}\left[|\hat f(x_k) - f(x_k)| \le "
                            r"\tau \max(1, |f(x_k)|)\right]"),
)

"""Formal proofs in propositional logic, checked step by step by a small proof kernel.

Tag format (inside the assistant turn; the environment's text is loss-masked)::

    model: <step>q by MP 1, 2</step>                  one inference: a formula, the rule, the lines it uses
    env:   <result>line 4: q (MP 1, 2)</result>       the kernel accepted it as line 4
    model: <step>q & r by Conj 3, 4</step>            ... until a line is the goal
    env:   <result>error: ...</result>                 or what was wrong (the step is not added)

Why a kernel of our own
    A maintained checker that runs offline on CPU from a pip install was looked for and not found: the Lean
    packages (LeanDojo, lean-interact) fetch a Lean toolchain and mathlib at run time, which this project cannot
    download; the Python Metamath verifier (mmverify.py) is a script, not a package; the small PyPI packages that
    name formal mathematics are stubs. So the checker is this module: a formula parser and eight inference rules
    of the propositional calculus (the rules of inference of introductory logic texts), each a function tested on
    its own (tests/reference_impls/test_env_proof.py). A proof is a list of lines; a line is a premise or a
    formula that one rule gives from earlier lines. It has no subproofs (no conditional proof or reductio), so
    every step is checked locally, from the lines it names.
Formulas
    Atoms are single lower-case letters; ``~A`` (not), ``A & B`` (and), ``A | B`` (or), ``A -> B`` (implies),
    binding in that order (``~`` tightest, ``->`` loosest and right-associative), with parentheses. They are read
    by :func:`parse_formula`, a recursive-descent parser into a tree of tuples; nothing the model writes is passed
    to ``eval`` or ``exec``. Length, token count and depth are bounded.
Rules (:data:`RULES`; the order of the cited lines does not matter)
    ``MP``  A -> B, A gives B        ``MT``   A -> B, ~B gives ~A      ``HS``  A -> B, B -> C gives A -> C
    ``DS``  A | B, ~A gives B (or A | B, ~B gives A)                   ``Conj`` A, B gives A & B
    ``Simp`` A & B gives A or B      ``Add``  A gives A | B or B | A (any B)
    ``DN``  ~~A gives A, and A gives ~~A
Problems
    Generated backwards from a goal: a rule that concludes the goal is chosen and its premises become new
    goals, ``level`` times (level 1 = a one-step proof, 3 = three steps); the leaves are the premises, shuffled.
    So every problem has a proof of ``level`` steps, and the demonstration is that proof.
Splits
    ``train``, ``validation`` and ``heldout`` hold different problems: a problem (its premises and goal) belongs
    to one split by a stable hash of its text (one in four held out, one in eight for validation).
Reward
    ``1.0`` when a line the kernel accepts is the goal (the episode ends there), else ``0.0``: a turn without a
    ``<step>``, or more steps than ``max_steps`` (a refused step counts), ends the episode unproved.
"""
from __future__ import annotations

import hashlib
import itertools
import random
import re
from dataclasses import dataclass

from ..options import ConfigError, Options, option
from . import EnvSpec, StepResult, ToolSpec, replay_calls

TOOL = ToolSpec(
    name="step",
    description="One proof step: 'FORMULA by RULE LINES', e.g. 'q by MP 1, 2'.",
    call_open="<step>",
    call_close="</step>",
    result_open="<result>",
    result_close="</result>",
)

LEVELS = (1, 2, 3)
SPLITS = ("train", "validation", "heldout")
ATOMS = "pqrst"  # the letters generated problems use (a proof may use any lower-case letter)

MAX_FORMULA_CHARS = 120
MAX_TOKENS = 60
MAX_DEPTH = 8
MAX_STEP_CHARS = 200

SYSTEM_PROMPT = (
    "Prove the goal from the premises, one step per turn. A step is <step>FORMULA by RULE LINES</step>, e.g. "
    "<step>q by MP 1, 2</step>; the checker answers with the new line's number or with what is wrong. Formulas "
    "use letters, ~ (not), & (and), | (or), -> (implies) and parentheses. Rules: MP (A -> B, A gives B), MT "
    "(A -> B, ~B gives ~A), HS (A -> B, B -> C gives A -> C), DS (A | B, ~A gives B), Conj (A, B gives A & B), "
    "Simp (A & B gives A or B), Add (A gives A | B), DN (~~A gives A, A gives ~~A). The proof ends when a line "
    "is the goal."
)


# ----------------------------------------------------------------------------------------------------
# formulas: a parser into tuples and a printer (never evaluated as Python)

class FormulaError(ValueError):
    """A formula that does not read; the text names what is wrong and where (a 0-based character position)."""


_TOKEN = re.compile(r"\s*(?:(?P<atom>[a-z])(?![A-Za-z0-9_])|(?P<op>->|[~&|()]))")


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, pos = [], 0
    while text[pos:].strip():
        m = _TOKEN.match(text, pos)
        if m is None:
            where = len(text) - len(text[pos:].lstrip())
            word = re.match(r"[A-Za-z0-9_]+", text[where:])
            shown = word.group(0)[:20] if word else text[where]
            hint = "; atoms are single lower-case letters" if word else ""
            raise FormulaError(f"unexpected {shown!r} at position {where}{hint}")
        kind = m.lastgroup
        out.append((kind, m.group(kind), m.start(kind)))
        if len(out) > MAX_TOKENS:
            raise FormulaError(f"the formula has more than {MAX_TOKENS} tokens")
        pos = m.end()
    out.append(("end", "", len(text)))
    return out


class _Parser:
    """formula := or ['->' formula];  or := and ('|' and)*;  and := unary ('&' unary)*;
    unary := '~' unary | atom | '(' formula ')'."""

    def __init__(self, text: str):
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0

    def _shown(self) -> str:
        kind, value, _ = self.toks[self.i]
        return "the end of the formula" if kind == "end" else repr(value)

    def _is(self, value: str) -> bool:
        kind, v, _ = self.toks[self.i]
        return kind == "op" and v == value

    def _nest(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FormulaError(f"the formula nests deeper than {MAX_DEPTH} levels at position {self.toks[self.i][2]}")

    def whole(self):
        tree = self.formula()
        if self.toks[self.i][0] != "end":
            raise FormulaError(f"unexpected {self._shown()} at position {self.toks[self.i][2]}")
        return tree

    def formula(self):
        self._nest()
        left = self.disjunction()
        if self._is("->"):
            self.i += 1
            left = ("imp", left, self.formula())
        self.depth -= 1
        return left

    def disjunction(self):
        tree = self.conjunction()
        while self._is("|"):
            self.i += 1
            tree = ("or", tree, self.conjunction())
        return tree

    def conjunction(self):
        tree = self.unary()
        while self._is("&"):
            self.i += 1
            tree = ("and", tree, self.unary())
        return tree

    def unary(self):
        kind, value, pos = self.toks[self.i]
        if kind == "op" and value == "~":
            self.i += 1
            self._nest()
            inner = self.unary()
            self.depth -= 1
            return ("not", inner)
        if kind == "atom":
            self.i += 1
            return ("atom", value)
        if kind == "op" and value == "(":
            self.i += 1
            inner = self.formula()
            if not self._is(")"):
                raise FormulaError(f"expected ')' at position {self.toks[self.i][2]}, found {self._shown()}")
            self.i += 1
            return inner
        raise FormulaError(f"expected a letter, '~' or '(' at position {pos}, found {self._shown()}")


def parse_formula(text: str):
    """The formula's tree, or :class:`FormulaError` naming what is wrong and where."""
    if len(text) > MAX_FORMULA_CHARS:
        raise FormulaError(f"the formula is {len(text)} characters long; at most {MAX_FORMULA_CHARS}")
    if not text.strip():
        raise FormulaError("the formula is empty")
    return _Parser(text).whole()


def show(tree) -> str:
    """The formula as text, with parentheses around every binary part of a larger formula (reads back the same)."""
    kind = tree[0]
    if kind == "atom":
        return tree[1]
    if kind == "not":
        inner = show(tree[1])
        return f"~{inner}" if tree[1][0] in ("atom", "not") else f"~({inner})"
    symbol = {"and": "&", "or": "|", "imp": "->"}[kind]
    parts = [show(t) if t[0] in ("atom", "not") else f"({show(t)})" for t in tree[1:]]
    return f"{parts[0]} {symbol} {parts[1]}"


def _neg(tree):
    return ("not", tree)


# ----------------------------------------------------------------------------------------------------
# the rules: each checks a conclusion against the cited lines (in either order); "" = accepted

def _mp(conclusion, lines):
    for imp, ante in itertools.permutations(lines):
        if imp[0] == "imp" and imp[1] == ante:
            return "" if imp[2] == conclusion else f"they give {show(imp[2])}, not {show(conclusion)}"
    return "MP needs an implication A -> B and its antecedent A"


def _mt(conclusion, lines):
    for imp, neg in itertools.permutations(lines):
        if imp[0] == "imp" and neg == _neg(imp[2]):
            return "" if conclusion == _neg(imp[1]) else f"they give {show(_neg(imp[1]))}, not {show(conclusion)}"
    return "MT needs an implication A -> B and the negation ~B of its consequent"


def _hs(conclusion, lines):
    for first, second in itertools.permutations(lines):
        if first[0] == "imp" and second[0] == "imp" and first[2] == second[1]:
            given = ("imp", first[1], second[2])
            return "" if conclusion == given else f"they give {show(given)}, not {show(conclusion)}"
    return "HS needs two implications A -> B and B -> C (the first's consequent is the second's antecedent)"


def _ds(conclusion, lines):
    gives = []
    for disj, neg in itertools.permutations(lines):
        if disj[0] == "or":
            if neg == _neg(disj[1]):
                gives.append(disj[2])
            if neg == _neg(disj[2]):
                gives.append(disj[1])
    if not gives:
        return "DS needs a disjunction A | B and the negation of one side (~A or ~B)"
    return "" if conclusion in gives else f"they give {show(gives[0])}, not {show(conclusion)}"


def _conj(conclusion, lines):
    if conclusion[0] != "and":
        return f"Conj concludes a conjunction A & B; {show(conclusion)} is not one"
    if sorted(map(show, conclusion[1:])) == sorted(map(show, lines)):
        return ""
    return f"Conj of lines {show(lines[0])} and {show(lines[1])} is their conjunction, not {show(conclusion)}"


def _simp(conclusion, lines):
    (line,) = lines
    if line[0] != "and":
        return f"Simp needs a conjunction A & B; {show(line)} is not one"
    return "" if conclusion in line[1:] else f"{show(conclusion)} is neither side of {show(line)}"


def _add(conclusion, lines):
    (line,) = lines
    if conclusion[0] != "or":
        return f"Add concludes a disjunction; {show(conclusion)} is not one"
    return "" if line in conclusion[1:] else f"{show(line)} is neither side of {show(conclusion)}"


def _dn(conclusion, lines):
    (line,) = lines
    if line == _neg(_neg(conclusion)) or conclusion == _neg(_neg(line)):
        return ""
    return f"DN turns ~~A into A or A into ~~A; {show(conclusion)} is neither from {show(line)}"


#: rule name -> (number of lines it cites, its check)
RULES = {"MP": (2, _mp), "MT": (2, _mt), "HS": (2, _hs), "DS": (2, _ds), "Conj": (2, _conj), "Simp": (1, _simp),
         "Add": (1, _add), "DN": (1, _dn)}
_RULE_BY_KEY = {name.lower(): name for name in RULES}


def check_rule(rule: str, conclusion, lines) -> str:
    """"" when ``rule`` gives the formula ``conclusion`` from the formulas ``lines``, else what is wrong."""
    arity, check = RULES[rule]
    if len(lines) != arity:
        return f"{rule} cites {arity} line{'s' if arity > 1 else ''}, got {len(lines)}"
    return check(conclusion, list(lines))


_STEP = re.compile(r"^\s*(?P<formula>.+?)\s+by\s+(?P<rule>[A-Za-z]+)\s*(?P<refs>.*?)\s*$", re.S | re.I)


@dataclass(frozen=True)
class Step:
    formula: tuple
    rule: str
    refs: tuple[int, ...]


def parse_step(text: str) -> tuple[Step | None, str]:
    """``FORMULA by RULE N, M`` -> (Step, "") or (None, what is wrong). Never raises, never evaluates."""
    if len(text) > MAX_STEP_CHARS:
        return None, f"the step is {len(text)} characters long; at most {MAX_STEP_CHARS}"
    m = _STEP.match(text)
    if m is None:
        return None, f"a step is 'FORMULA by RULE LINES', e.g. 'q by MP 1, 2'; got {text.strip()[:40]!r}"
    rule = _RULE_BY_KEY.get(m.group("rule").lower())
    if rule is None:
        return None, f"unknown rule {m.group('rule')[:20]!r}; the rules are {', '.join(RULES)}"
    refs_text = m.group("refs").replace("and", ",")
    if not re.fullmatch(r"\s*(\d{1,3}\s*(,\s*)?)*", refs_text):
        return None, (f"the lines a step cites are numbers separated by commas, e.g. '1, 2'; got "
                      f"{m.group('refs')[:30]!r}")
    try:
        formula = parse_formula(m.group("formula"))
    except FormulaError as err:
        return None, f"the formula does not read: {err}"
    return Step(formula, rule, tuple(int(n) for n in re.findall(r"\d+", refs_text))), ""


# ----------------------------------------------------------------------------------------------------
# problems

@dataclass(frozen=True)
class Problem:
    premises: tuple[str, ...]  # lines 1..k, as show() writes them
    goal: str
    proof: tuple[str, ...]  # a proof of ``level`` steps (the demonstration), each 'FORMULA by RULE LINES'
    level: int
    split: str
    uid: str


def split_of(premises, goal: str) -> str:
    """The split of a problem: a stable hash of its premises and goal (1/4 held out, 1/8 validation)."""
    text = "proof/" + " ; ".join(sorted(premises)) + " => " + goal
    bucket = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % 8
    return "heldout" if bucket < 2 else "validation" if bucket == 2 else "train"


def _small(rng: random.Random, avoid=()):
    """An atom (most often), a negated atom or a binary formula of two atoms."""
    for _ in range(20):
        roll = rng.random()
        if roll < 0.6:
            tree = ("atom", rng.choice(ATOMS))
        elif roll < 0.8:
            tree = _neg(("atom", rng.choice(ATOMS)))
        else:
            a, b = rng.sample(ATOMS, 2)
            tree = (rng.choice(("and", "or", "imp")), ("atom", a), ("atom", b))
        if tree not in avoid:
            return tree
    return ("atom", rng.choice(ATOMS))  # pragma: no cover


def _size(tree) -> int:
    return 1 if tree[0] == "atom" else 1 + sum(_size(t) for t in tree[1:])


def _backward(goal, rng: random.Random):
    """A rule that concludes ``goal`` and the formulas it cites (a list), chosen at random among those that fit."""
    choices = ["MP", "DS", "Simp"]
    if goal[0] == "not":
        choices.append("MT")
    if goal[0] == "imp":
        choices.append("HS")
    if goal[0] == "and":
        choices.append("Conj")
    if goal[0] == "or":
        choices.append("Add")
    rule = rng.choice(choices)
    other = _small(rng, avoid=(goal, _neg(goal)))
    if rule == "MP":
        return rule, [("imp", other, goal), other]
    if rule == "DS":
        return rule, [("or", other, goal), _neg(other)]
    if rule == "Simp":
        return rule, [("and", goal, other) if rng.random() < 0.5 else ("and", other, goal)]
    if rule == "MT":
        return rule, [("imp", goal[1], other), _neg(other)]
    if rule == "HS":
        return rule, [("imp", goal[1], other), ("imp", other, goal[2])]
    if rule == "Conj":
        return rule, [goal[1], goal[2]]
    return rule, [goal[1] if rng.random() < 0.5 else goal[2]]  # Add


def _generate(rng: random.Random, level: int):
    """(premises, goal, proof steps) with a proof of ``level`` steps, or None when the draw is degenerate."""
    goal = _small(rng)
    # a node: [formula, rule or None (a premise), children]
    root = [goal, None, []]
    leaves = [root]
    for _ in range(level):
        leaf = leaves.pop(rng.randrange(len(leaves)))
        rule, cited = _backward(leaf[0], rng)
        if any(_size(f) > 7 for f in cited):
            return None
        leaf[1], leaf[2] = rule, [[f, None, []] for f in cited]
        leaves += leaf[2]
    formulas, stack = [], [root]
    while stack:
        node = stack.pop()
        formulas.append(node[0])
        stack += node[2]
    if formulas.count(goal) > 1:  # the goal reached before the root: a shorter, looping proof
        return None
    premises = list(dict.fromkeys(show(leaf[0]) for leaf in leaves))
    rng.shuffle(premises)
    line_of = {p: i + 1 for i, p in enumerate(premises)}
    steps: list[str] = []

    def emit(node):
        text = show(node[0])
        if node[1] is None or text in line_of:
            return line_of[text]
        refs = [emit(child) for child in node[2]]
        steps.append(f"{text} by {node[1]} {', '.join(map(str, refs))}")
        line_of[text] = len(line_of) + 1
        return line_of[text]

    emit(root)
    if len(steps) != level:  # an intermediate formula was already a premise: a shorter proof exists
        return None
    return tuple(premises), show(goal), tuple(steps)


def make_problem(split: str, seed: int, level: int, index: int) -> Problem:
    rng = random.Random(f"proof/{split}/{seed}/{level}/{index}")
    for _ in range(10_000):
        drawn = _generate(rng, level)
        if drawn is not None and split_of(drawn[0], drawn[1]) == split:
            premises, goal, proof = drawn
            return Problem(premises, goal, proof, level, split, f"{split}-{seed}-{level}-{index}")
    raise RuntimeError("no problem found for the split")  # pragma: no cover - every split holds many


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=LEVELS) -> list[Problem]:
    if split not in SPLITS:
        raise ValueError(f"proof: split must be one of {', '.join(SPLITS)}, got {split!r}")
    levels = tuple(levels)
    if not levels:
        raise ValueError("proof: choose at least one level")
    return [make_problem(split, seed, levels[i % len(levels)], i // len(levels)) for i in range(n)]


# ----------------------------------------------------------------------------------------------------
# the environment

@dataclass
class ProofConfig(Options):
    """The proof env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option(LEVELS, "Proof lengths: a problem of level k has a proof of k steps.",
                                     choices=LEVELS)
    max_steps: int = option(8, "Steps allowed, refused ones included; one more ends the episode unproved.", low=1,
                            high=64, aliases=("max_tool_calls",))

    def __post_init__(self):
        super().__post_init__()
        if not self.levels:
            raise ConfigError("--levels (option of --env proof): choose at least one level")


class ProofEnv:
    """One episode on one :class:`Problem`; see the module docstring for the protocol."""

    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)

    def __init__(self, problem: Problem, config: ProofConfig | None = None):
        self.problem = problem
        self.config = config or ProofConfig()
        self.goal = parse_formula(problem.goal)
        self.reset()

    def reset(self) -> list[dict[str, str]]:
        self.lines = [parse_formula(p) for p in self.problem.premises]
        self.steps = 0
        premises = "\n".join(f"{i + 1}. {p}  (premise)" for i, p in enumerate(self.problem.premises))
        user = f"Premises:\n{premises}\nGoal: {self.problem.goal}\nYou may write {self.config.max_steps} steps."
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def check(self, text: str) -> tuple[Step | None, str]:
        """(the step, "") when the kernel accepts the step ``text`` (its formula may be the next line), else
        (None, what is wrong)."""
        step, error = parse_step(text)
        if step is None:
            return None, error
        for ref in step.refs:
            if not 1 <= ref <= len(self.lines):
                return None, f"line {ref} does not exist; the proof has lines 1 to {len(self.lines)}"
        error = check_rule(step.rule, step.formula, [self.lines[r - 1] for r in step.refs])
        if error:
            cited = ", ".join(map(str, step.refs))
            lines = "lines" if len(step.refs) > 1 else "line"
            return None, f"{step.rule} does not give {show(step.formula)} from {lines} {cited}: {error}"
        return step, ""

    def step(self, model_text: str) -> StepResult:
        action = TOOL.first_action(model_text)
        base = {"tool_calls": self.steps, "lines": len(self.lines)}
        if action is None or action[0] == "answer":
            info = {**base, "correct": False, "proved": False}
            if action is not None:
                info["error"] = "an answer proves nothing: derive the goal in a <step>"
            return StepResult(None, True, 0.0, info)
        if self.steps >= self.config.max_steps:
            return StepResult(None, True, 0.0, {**base, "correct": False, "proved": False, "truncated": True,
                                                "error": f"all {self.config.max_steps} steps were used"})
        self.steps += 1
        step, error = self.check(action[1].group(1))
        if step is None:
            return StepResult(TOOL.result(f"error: {error}. The step was not added."), False, 0.0,
                              {"tool_calls": self.steps, "lines": len(self.lines), "step_error": error})
        self.lines.append(step.formula)
        info = {"tool_calls": self.steps, "lines": len(self.lines)}
        if step.formula == self.goal:
            return StepResult(None, True, 1.0, {**info, "correct": True, "proved": True})
        cited = ", ".join(map(str, step.refs))
        return StepResult(TOOL.result(f"line {len(self.lines)}: {show(step.formula)} ({step.rule} {cited})"), False,
                          0.0, info)


def demonstration(problem: Problem) -> list[tuple[str, str]]:
    """The generator's proof, one step per turn, with the checker's real answers between."""
    return replay_calls(ProofEnv(problem, ProofConfig()), TOOL, problem.proof)


def _problems(split: str, n: int, seed: int, config: ProofConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels)


SPEC = EnvSpec("proof", ProofConfig, _problems, ProofEnv, demonstration,
               title="Formal proofs in propositional logic, checked by a proof kernel", validation_split=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("proof-grpo", "Formal proof, checked step by step by a proof kernel (GRPO)", "grpo", "proof",
                   "An agent that proves a propositional goal from premises one inference at a time; a small proof "
                   "kernel checks each step and names what is wrong; reward 1 when a checked line is the goal.",
                   nodes=("math-formal",),
                   changes="A small stand-in for formal theorem proving (Lean, Isabelle, Metamath): keeps what "
                           "makes it formal, a checker that accepts a step only when a named rule gives it from "
                           "cited lines, and a reward that is the checker's verdict on the whole proof. The "
                           "checker is the project's own kernel (no offline pip-installable checker was found): "
                           "propositional logic, eight rules of inference, no subproofs or quantifiers. Problems "
                           "are generated backwards from a goal, so each has a proof of 1 to 3 steps.",
                   equation=r"r = \mathbb{1}\left[\exists\, i:\ \ell_i = G \text{ and every } \ell_j,\ j \le i, "
                            r"\text{ is checked}\right]"),
)

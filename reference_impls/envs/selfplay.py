r"""Self-play arithmetic (Absolute-Zero style): the policy proposes problems, a verifier checks them, the policy
solves them. Trained by ``--algo absolute-zero`` (:mod:`reference_impls.algorithms.agentic.absolute_zero`), which rolls out both roles.

Two kinds of problem, one environment (``role`` says which)::

    propose  user:  "Propose an expression with exactly 2 operations (+ - *), integers 0..50; e.g. 7*3+2"
             model: <problem>12+7*3</problem>          the verifier parses it (never eval) and computes 33
    solve    user:  "Compute 12+7*3."
             model: <answer>33</answer>                 exact match with the verifier's value

The verifier (:func:`parse_proposal`) accepts only integers, ``+ - *`` and parentheses, every operator binary
(no unary minus), exactly the task's number of operations, every integer at most ``max_operand``; the value is
computed by the calculator's own recursive-descent evaluator (:mod:`reference_impls.envs.arith`). Any text gets a
:class:`Verdict` with a message naming what is wrong and where; nothing raises.

Problems (the pool the proposer draws its prompts from)
    Levels: 1 = one operation on integers up to 20, 2 = two operations up to 50, 3 = three operations up to 99
    (parentheses allowed from level 2). A propose task shows ``examples`` seeded reference expressions of its shape
    (AZR conditions its proposer on K past triplets from a buffer; here they are seeded, not from a buffer).
    ``train`` and ``heldout`` draw from disjoint random streams (the split name is in every seed). ``roles``
    chooses what the list holds: the self-play pool is ``propose`` only (no human data: the solver trains only on
    proposed problems); the SFT warm start demonstrates ``propose`` and ``solve`` (seeded expressions) so both
    formats are known before RL.
Rewards of the episodes themselves (AZR's format-aware reward, their Eq. 6, as we read it)
    proposer: -1 without a complete ``<problem>`` tag, -0.5 for a tagged but invalid proposal, 0 for a valid one
    (the self-play algorithm then replaces the 0 by the learnability reward; the env alone cannot know it).
    solver: 1 correct, 0 a wrong ``<answer>``, -1 no answer tag. ``format_penalty=False`` turns the negatives to 0.
    A proposer episode's ``info`` carries ``proposed_problem`` (a solve task of this env, or None when invalid):
    that is the self-play contract the algorithm reads, with no environment names.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

from ..options import Options, option
from . import EnvSpec, StepResult
from .arith import CalcError, evaluate, format_number, parse_number

PROBLEM_OPEN, PROBLEM_CLOSE = "<problem>", "</problem>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
MAX_PROPOSAL_CHARS = 120
ALLOWED = set("0123456789+-*() ")
OPERATORS = "+-*"
#: level -> (operations, largest integer, parentheses allowed in the reference examples)
LEVELS = {1: (1, 20, False), 2: (2, 50, True), 3: (3, 99, True)}
ROLES = ("propose", "solve")

PROPOSE_SYSTEM = ("You write arithmetic problems for a student. Propose one expression inside "
                  "<problem>...</problem>. A good problem is one the student sometimes solves and sometimes fails.")
SOLVE_SYSTEM = "Compute the value of the expression. Answer with <answer>number</answer>."


@dataclass(frozen=True)
class Verdict:
    """What the verifier says about a proposal: ``valid`` with its ``expression`` and exact ``answer``, else
    ``error`` (what is wrong and where). ``formatted``: a complete ``<problem>`` tag was found."""

    valid: bool
    formatted: bool
    expression: str | None = None
    answer: Fraction | None = None
    error: str = ""


def _tokens(expr: str) -> list[tuple[str, int]]:
    """(token, position) pairs: integers, operators, parentheses (spaces dropped); characters already checked."""
    out, i = [], 0
    while i < len(expr):
        ch = expr[i]
        if ch == " ":
            i += 1
        elif ch.isdigit():
            j = i
            while j < len(expr) and expr[j].isdigit():
                j += 1
            out.append((expr[i:j], i))
            i = j
        else:
            out.append((ch, i))
            i += 1
    return out


def parse_proposal(text: str, ops: int, max_operand: int) -> Verdict:
    """Check a proposer's text against its task (``ops`` operations, integers <= ``max_operand``)."""
    if not isinstance(text, str):
        return Verdict(False, False, error="the proposal is not text")
    start = text.find(PROBLEM_OPEN)
    end = text.find(PROBLEM_CLOSE, start + len(PROBLEM_OPEN)) if start >= 0 else -1
    if start < 0 or end < 0:
        return Verdict(False, False, error=f"no complete {PROBLEM_OPEN}...{PROBLEM_CLOSE} tag")
    expr = " ".join(text[start + len(PROBLEM_OPEN):end].split())  # tabs and newlines become single spaces
    if not expr:
        return Verdict(False, True, error="the problem is empty")
    if len(expr) > MAX_PROPOSAL_CHARS:
        return Verdict(False, True, error=f"the problem is longer than {MAX_PROPOSAL_CHARS} characters")
    for pos, ch in enumerate(expr):
        if ch not in ALLOWED:
            return Verdict(False, True, error=f"character {ch!r} at position {pos} is not allowed (only integers, "
                                              f"+ - * and parentheses)")
    tokens = _tokens(expr)
    count = 0
    previous = None
    for tok, pos in tokens:
        if tok in OPERATORS:
            if previous is None or previous in OPERATORS or previous == "(":
                return Verdict(False, True, error=f"operator {tok!r} at position {pos} has no left operand")
            count += 1
        elif tok.isdigit():
            if len(tok) > 6 or int(tok) > max_operand:
                return Verdict(False, True, error=f"integer {tok[:8]} at position {pos} is larger than {max_operand}")
        previous = tok
    if count != ops:
        return Verdict(False, True, error=f"{count} operation{'s' if count != 1 else ''}; the task asks for {ops}")
    try:
        value = evaluate(expr)
    except CalcError as err:
        return Verdict(False, True, error=f"not a valid expression: {err}")
    return Verdict(True, True, expr, value)


def random_expression(rng: random.Random, ops: int, max_operand: int, parentheses: bool) -> str:
    """A seeded expression of exactly ``ops`` binary operations (reference examples and demonstrations)."""
    expr = str(rng.randint(0, max_operand))
    for _ in range(ops):
        op = rng.choice(OPERATORS)
        operand = str(rng.randint(2 if op == "*" else 0, min(max_operand, 12) if op == "*" else max_operand))
        if parentheses and op == "*" and rng.random() < 0.5 and any(o in expr for o in "+-"):
            expr = f"({expr})*{operand}"
        else:
            expr = f"{expr}{op}{operand}"
    return expr


@dataclass(frozen=True)
class ProposeTask:
    ops: int
    max_operand: int
    examples: tuple[str, ...]
    demo: str  # a valid proposal of this shape (the SFT demonstration)
    level: int
    split: str
    uid: str
    role: str = "propose"

    @property
    def question(self) -> str:
        shown = "; ".join(self.examples)
        return (f"Propose an arithmetic expression with exactly {self.ops} operation{'s' if self.ops > 1 else ''} "
                f"(+ - *), integers from 0 to {self.max_operand}" + (f", for example: {shown}" if shown else "")
                + ". Write it as <problem>expression</problem>.")


@dataclass(frozen=True)
class SolveTask:
    expression: str
    answer: Fraction
    level: int
    split: str
    uid: str
    role: str = "solve"

    @property
    def question(self) -> str:
        return f"Compute {self.expression}."


def solve_task(verdict: Verdict, task: ProposeTask) -> SolveTask:
    """The solve task of a valid proposal (its uid is the expression: identical proposals are one task)."""
    return SolveTask(verdict.expression, verdict.answer, task.level, task.split, f"solve:{verdict.expression}")


@dataclass
class SelfPlayConfig(Options):
    """Options of the self-play arithmetic env."""

    levels: tuple[int, ...] = option((1, 2), "Shapes of the proposed problems: 1 = one operation up to 20, 2 = two "
                                     "up to 50, 3 = three up to 99.", choices=(1, 2, 3))
    examples: int = option(2, "Reference expressions shown in the proposer's prompt.", low=0, high=5)
    roles: tuple[str, ...] = option(("propose",), "What the problem list holds: propose tasks (the self-play pool) "
                                    "and/or solve tasks on seeded expressions.", choices=ROLES)
    format_penalty: bool = option(True, "AZR's format-aware reward: -1 for a missing tag, -0.5 for an invalid "
                                  "proposal (off: 0).")


def problems(split: str, n: int, seed: int, config: SelfPlayConfig) -> list:
    if split not in ("train", "heldout"):
        raise ValueError("split must be 'train' or 'heldout'")
    shapes = [(level, role) for role in config.roles for level in config.levels]
    if not shapes:
        raise ValueError(f"selfplay-arith: no problems for roles={config.roles} levels={config.levels} "
                         f"(both must name at least one)")
    out = []
    for i in range(n):
        level, role = shapes[i % len(shapes)]
        ops, top, parens = LEVELS[level]
        rng = random.Random(f"selfplay/{split}/{seed}/{role}/{level}/{i}")
        uid = f"{split}-{seed}-{role}-{level}-{i}"
        if role == "propose":
            examples = tuple(random_expression(rng, ops, top, parens) for _ in range(config.examples))
            out.append(ProposeTask(ops, top, examples, random_expression(rng, ops, top, parens), level, split, uid))
        else:
            expr = random_expression(rng, ops, top, parens)
            out.append(SolveTask(expr, evaluate(expr), level, split, uid))
    return out


class SelfPlayEnv:
    """One episode of either role (module docstring). Both roles share the stop strings, so a batch may mix them."""

    stop_strings = (PROBLEM_CLOSE, ANSWER_CLOSE)

    def __init__(self, problem, config: SelfPlayConfig | None = None):
        self.problem = problem
        self.config = config or SelfPlayConfig()

    def reset(self) -> list[dict[str, str]]:
        system = PROPOSE_SYSTEM if self.problem.role == "propose" else SOLVE_SYSTEM
        return [{"role": "system", "content": system}, {"role": "user", "content": self.problem.question}]

    def penalty(self, amount: float) -> float:
        return -amount if self.config.format_penalty else 0.0

    def step(self, model_text: str) -> StepResult:
        if self.problem.role == "propose":
            verdict = parse_proposal(model_text, self.problem.ops, self.problem.max_operand)
            reward = 0.0 if verdict.valid else self.penalty(0.5 if verdict.formatted else 1.0)
            return StepResult(None, True, reward, {
                "role": "propose", "valid": verdict.valid, "formatted": verdict.formatted,
                "proposal": verdict.expression, "error": verdict.error,
                "proposed_problem": solve_task(verdict, self.problem) if verdict.valid else None})
        start = model_text.find(ANSWER_OPEN)
        end = model_text.find(ANSWER_CLOSE, start + len(ANSWER_OPEN)) if start >= 0 else -1
        if start < 0 or end < 0:
            return StepResult(None, True, self.penalty(1.0), {"role": "solve", "correct": False, "answer": None})
        answer = model_text[start + len(ANSWER_OPEN):end].strip()
        value = parse_number(answer)
        correct = value is not None and value == self.problem.answer
        return StepResult(None, True, 1.0 if correct else 0.0, {"role": "solve", "correct": correct, "answer": answer})


def demonstration(problem) -> list[tuple[str, str]]:
    if problem.role == "propose":
        return [("model", f"{PROBLEM_OPEN}{problem.demo}{PROBLEM_CLOSE}")]
    return [("model", f"{ANSWER_OPEN}{format_number(problem.answer)}{ANSWER_CLOSE}")]


SPEC = EnvSpec(
    "selfplay-arith", SelfPlayConfig, problems, SelfPlayEnv, demonstration,
    title="self-play: propose and solve arithmetic problems (Absolute Zero style)",
    demonstration_options={"roles": ("propose", "solve")},
    # held-out success is the solver's: seeded expressions it never proposed (a proposal has no right answer)
    heldout_options={"roles": ("solve",)})
ENV_SPECS = (SPEC,)  # collected by envs.ENVS

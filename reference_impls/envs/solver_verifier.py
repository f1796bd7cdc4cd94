"""Two roles in one episode: a solver proposes an answer with its work, a verifier accepts or rejects it
with a reason, and after a rejection the solver revises. Both roles are played by ONE shared policy; the
role of each turn is written into the conversation by the environment.

Tag format (inside the assistant turn; the environment's text is loss-masked)::

    user:  Problem: 7 + 6 * 4
           <turn>SOLVER: ...</turn>
    model: 6 * 4 = 24, 7 + 24 = 31. <answer>31</answer>              role "solver"  (turn 0)
    env:   <turn>VERIFIER: the solver answered 31. Check it ...</turn>
    model: <verdict>accept</verdict>                                  role "verifier" (turn 1)
           or <verdict>reject: 6 * 4 is 24, not 20</verdict>
    env:   <turn>SOLVER: the verifier rejected your answer (reason). Revise ...</turn>   (after a reject)
    ...

The protocol is fixed, so the role of a turn is known from its index alone (:meth:`SolverVerifierEnv.
role_of_turn`: even turns solver, odd turns verifier); a solver turn without an ``<answer>`` is a proposal of
nothing (the verifier should reject it), a verifier turn without a readable ``<verdict>accept|reject``
counts as a wrong verdict and as a rejection. The episode ends when the verifier accepts or after
``max_rounds`` proposals have been judged; the solver's last proposal is the pipeline's final answer.

Rewards (all in the episode's info; the rollout's scalar reward is the team outcome)::

    final_correct   = 1[last proposal == the exact value]
    r_solver        = final_correct
    r_verifier      = (1 - verdict_weight) * final_correct + verdict_weight * (verdicts that were right / verdicts)
                      a verdict is right when it accepts a correct proposal or rejects a wrong one
    reward          = final_correct

``role_rewards`` = {"solver": r_solver, "verifier": r_verifier} is what ``role-grpo``
(reference_impls/role_grpo.py) normalises per role; plain GRPO on this env trains every token on ``reward``.
``train_roles`` says which roles learn: the other role's tokens are loss-masked by ``role-grpo``.

Problems: seeded integer arithmetic in three levels (one operation, two operations with precedence, two
bracketed pairs); ``heldout`` or ``train`` by a stable hash of the expression, one in four held out, so no
held-out expression is ever trained on. Values come from ``envs/arith.py``'s exact parser, never ``eval``.
The demonstration is a correct pipeline; for one problem in three it starts from a planted wrong draft
(written as environment text, so no loss on it) that the verifier rejects with the right reason and the
solver corrects, so the warm start shows both verdicts.
"""
from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from fractions import Fraction

from ..options import ConfigError, Options, option
from . import EnvSpec, StepResult, ToolSpec
from .arith import CalcError, evaluate, format_number, parse_number

TOOL = ToolSpec(
    name="verifier",
    description="The verifier's verdict on the solver's latest answer: accept, or reject with a reason.",
    call_open="<verdict>",
    call_close="</verdict>",
    result_open="<turn>",
    result_close="</turn>",
)
ROLES = ("solver", "verifier")
LEVELS = (1, 2, 3)

SYSTEM_PROMPT = (
    "Two agents share this conversation and you play both. The SOLVER works out the arithmetic problem and "
    "ends with <answer>number</answer>. The VERIFIER checks the solver's latest answer and replies "
    "<verdict>accept</verdict> if it is right, or <verdict>reject: reason</verdict> if it is wrong. After a "
    "rejection the solver revises. Each turn starts with <turn>ROLE: ...</turn> saying whose turn it is."
)


@dataclass(frozen=True)
class Problem:
    expression: str
    answer: str  # exact value, formatted
    steps: tuple[str, ...]  # the worked solution, one line per operation
    level: int
    family: str
    split: str
    uid: str
    planted: str | None  # a wrong draft the demonstration starts from (one problem in three), else None


def split_of(expression: str) -> str:
    h = int(hashlib.sha256(f"solver-verifier/{expression}".encode()).hexdigest()[:8], 16)
    return "heldout" if h % 4 == 0 else "train"


def _num(rng: random.Random, lo: int = 2, hi: int = 20) -> int:
    return rng.randint(lo, hi)


def _expression(rng: random.Random, level: int) -> tuple[str, tuple[str, ...]]:
    """An expression and its worked steps (each step an exact operation the verifier can recheck)."""
    if level == 1:
        a, b, op = _num(rng, 2, 99), _num(rng, 2, 99), rng.choice("+-*")
        if op == "*":
            b = _num(rng, 2, 12)
        expr = f"{a} {op} {b}"
        return expr, (f"{expr} = {format_number(evaluate(expr))}",)
    if level == 2:  # a op1 b op2 c, one of them a product, so precedence matters
        a, b, c = _num(rng), _num(rng), _num(rng)
        if rng.random() < 0.5:
            outer = rng.choice("+-")
            expr = f"{a} {outer} {b} * {c}"
            inner = b * c
            return expr, (f"{b} * {c} = {inner}", f"{a} {outer} {inner} = {format_number(evaluate(expr))}")
        outer = rng.choice("+-")
        expr = f"{a} * {b} {outer} {c}"
        inner = a * b
        return expr, (f"{a} * {b} = {inner}", f"{inner} {outer} {c} = {format_number(evaluate(expr))}")
    a, b, c, d = _num(rng), _num(rng), _num(rng), _num(rng)
    op1, op2 = rng.choice("+-"), rng.choice("+-")
    expr = f"({a} {op1} {b}) * ({c} {op2} {d})"
    left, right = evaluate(f"{a} {op1} {b}"), evaluate(f"{c} {op2} {d}")
    return expr, (f"{a} {op1} {b} = {format_number(left)}", f"{c} {op2} {d} = {format_number(right)}",
                  f"{format_number(left)} * {format_number(right)} = {format_number(evaluate(expr))}")


def make_problem(split: str, seed: int, level: int, index: int) -> Problem:
    rng = random.Random(f"solver-verifier/{split}/{seed}/{level}/{index}")
    for _ in range(10_000):
        expr, steps = _expression(rng, level)
        if split_of(expr) != split:
            continue
        answer = format_number(evaluate(expr))
        planted = None
        if rng.random() < 1 / 3:  # a plausible slip: off by a small amount
            planted = format_number(evaluate(expr) + rng.choice((-10, -2, -1, 1, 2, 10)))
        return Problem(expr, answer, steps, level, f"level-{level}", split, f"{split}-{seed}-{level}-{index}",
                       planted)
    raise RuntimeError("no solver-verifier problem found")  # pragma: no cover


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=LEVELS) -> list[Problem]:
    if split not in ("train", "heldout"):
        raise ValueError("split must be 'train' or 'heldout'")
    if not levels:
        raise ValueError("solver-verifier: no levels chosen")
    return [make_problem(split, seed, levels[i % len(levels)], i // len(levels)) for i in range(n)]


# ----------------------------------------------------------------------------------------------------
# parsing the two roles' turns (never eval: numbers through arith.parse_number, verdicts by a regex)

_VERDICT = re.compile(r"\s*(accept|reject)\b\s*[:,.\-]?\s*(.*)", re.S | re.I)


def parse_proposal(text: str) -> Fraction | None:
    """The solver's answer: the number inside its first complete <answer> tag, else None."""
    m = TOOL.find_answer(text)
    if m is None:
        return None
    try:
        return parse_number(m.group(1).strip()[:40])
    except CalcError:
        return None


def parse_verdict(text: str) -> tuple[str | None, str]:
    """("accept" | "reject" | None, reason). None when no complete <verdict> tag starts with either word."""
    m = TOOL.find_call(text)
    if m is None:
        return None, "no <verdict>...</verdict> tag"
    v = _VERDICT.match(m.group(1))
    if v is None:
        return None, "the verdict must start with accept or reject"
    reason = " ".join(v.group(2).split())[:200]
    return v.group(1).lower(), reason


def role_rewards(final_correct: bool, verdicts_right: list[bool], verdict_weight: float) -> dict[str, float]:
    """{"solver": r_solver, "verifier": r_verifier} of the module docstring."""
    accuracy = sum(verdicts_right) / len(verdicts_right) if verdicts_right else 0.0
    return {"solver": float(final_correct),
            "verifier": (1.0 - verdict_weight) * float(final_correct) + verdict_weight * accuracy}


# ----------------------------------------------------------------------------------------------------
# the environment

@dataclass
class SolverVerifierConfig(Options):
    """The solver-verifier env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option(LEVELS, "Problem difficulty: 1 one operation, 2 two with precedence, 3 two "
                                     "bracketed pairs multiplied.", choices=LEVELS)
    train_roles: tuple[str, ...] = option(ROLES, "Roles whose tokens learn under role-grpo; the others are played "
                                          "by the same policy but loss-masked.", choices=ROLES)
    max_rounds: int = option(2, "Proposals the verifier judges before the episode ends (revisions = rounds - 1).",
                             low=1, high=5)
    verdict_weight: float = option(0.5, "Share of the verifier's reward from right accept/reject verdicts (the "
                                   "rest is the final answer's correctness).", low=0.0, high=1.0)

    def __post_init__(self):
        super().__post_init__()
        if not self.levels:
            raise ConfigError("--levels (option of --env solver-verifier): choose at least one level")
        if not self.train_roles:
            raise ConfigError("--train-roles (option of --env solver-verifier): choose at least one role to train")


class SolverVerifierEnv:
    tool = TOOL
    roles = ROLES
    stop_strings = (TOOL.answer_close, TOOL.call_close)

    def __init__(self, problem: Problem, config: SolverVerifierConfig | None = None):
        self.problem = problem
        self.config = config or SolverVerifierConfig()
        self.value = Fraction(problem.answer)
        self.reset()

    @staticmethod
    def role_of_turn(turn: int) -> str:
        """The role that writes model turn ``turn`` (0-based): the protocol alternates, solver first."""
        return ROLES[turn % 2]

    @property
    def trained_roles(self) -> tuple[str, ...]:
        return tuple(self.config.train_roles)

    def reset(self) -> list[dict[str, str]]:
        self.turn = 0
        self.proposals: list[Fraction | None] = []
        self.verdicts: list[str | None] = []
        self.verdicts_right: list[bool] = []
        user = (f"Problem: {self.problem.expression}\n"
                + TOOL.result("SOLVER: compute the value; show your work, then <answer>number</answer>."))
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def _verifier_prompt(self, proposal: Fraction | None) -> str:
        said = f"answered {format_number(proposal)}" if proposal is not None else "gave no <answer>"
        return TOOL.result(f"VERIFIER: the solver {said} for {self.problem.expression}. Check it: "
                           "<verdict>accept</verdict> or <verdict>reject: reason</verdict>.")

    def _end(self) -> StepResult:
        final = self.proposals[-1] if self.proposals else None
        ok = final is not None and final == self.value
        rewards = role_rewards(ok, self.verdicts_right, self.config.verdict_weight)
        first = self.proposals[0] if self.proposals else None
        info = {"correct": ok, "final_answer": None if final is None else format_number(final),
                "first_correct": first is not None and first == self.value,
                "rounds": len(self.proposals), "accepted": bool(self.verdicts) and self.verdicts[-1] == "accept",
                "verdicts": ",".join(v or "none" for v in self.verdicts),
                "verdict_accuracy": sum(self.verdicts_right) / max(len(self.verdicts_right), 1),
                "solver_reward": rewards["solver"], "verifier_reward": rewards["verifier"],
                "role_rewards": rewards, "turn_roles": [self.role_of_turn(k) for k in range(self.turn)],
                "turns": self.turn}
        return StepResult(None, True, float(ok), info)

    def step(self, model_text: str) -> StepResult:
        role = self.role_of_turn(self.turn)
        self.turn += 1
        if role == "solver":
            proposal = parse_proposal(model_text)
            self.proposals.append(proposal)
            return StepResult(self._verifier_prompt(proposal), False, 0.0, {"turns": self.turn})
        verdict, reason = parse_verdict(model_text)
        proposal_ok = self.proposals[-1] is not None and self.proposals[-1] == self.value
        self.verdicts.append(verdict)
        self.verdicts_right.append((verdict == "accept" and proposal_ok) or (verdict == "reject" and not proposal_ok))
        if verdict == "accept" or len(self.proposals) >= self.config.max_rounds:
            return self._end()
        why = reason if verdict == "reject" else f"unreadable verdict ({reason}), taken as a rejection"
        return StepResult(TOOL.result(f"SOLVER: the verifier rejected your answer ({why or 'no reason given'}). "
                                      "Revise your work, then <answer>number</answer>."), False, 0.0,
                          {"turns": self.turn})


def solver_text(problem: Problem) -> str:
    return " ".join(f"{s}." for s in problem.steps) + f" <answer>{problem.answer}</answer>"


def demonstration(problem: Problem) -> list[tuple[str, str]]:
    """A correct pipeline. With a planted draft (one problem in three) the wrong first proposal is written as
    environment text (no loss), the verifier rejects it naming the right value's first step, the solver
    revises and the verifier accepts."""
    env = SolverVerifierEnv(problem, SolverVerifierConfig(max_rounds=2))
    segments: list[tuple[str, str]] = []
    if problem.planted is not None:
        draft = f"I think it is {problem.planted}. <answer>{problem.planted}</answer>"
        segments.append(("env", draft))
        segments.append(("env", env.step(draft).observation))
        reject = f"<verdict>reject: {problem.steps[0]}, so {problem.planted} is wrong</verdict>"
        segments.append(("model", reject))
        segments.append(("env", env.step(reject).observation))
    answer = solver_text(problem)
    segments.append(("model", answer))
    segments.append(("env", env.step(answer).observation))
    segments.append(("model", "<verdict>accept</verdict>"))
    return segments


def _problems(split: str, n: int, seed: int, config: SolverVerifierConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels)


SPEC = EnvSpec("solver-verifier", SolverVerifierConfig, _problems, SolverVerifierEnv, demonstration,
               title="Solver and verifier on arithmetic (two roles, one shared policy)")
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry (the trained
# rows of this env are declared by algorithms/agentic/role_grpo.py) --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("solver-verifier-prompted", "Solver and verifier without RL: the prompted pipeline", "",
                   "solver-verifier",
                   "The RL-free multi-agent reference point: the untrained instruction model plays the solver and "
                   "the verifier under the environment's fixed protocol (propose, accept or reject with a reason, "
                   "revise), greedy, on the held-out problems that the role-trained rows are scored on; nothing "
                   "is trained.",
                   nodes=("mas-rl-free",),
                   changes="Fixed-role multi-agent frameworks with no weight updates, reduced to two prompted "
                           "roles of one model and one fixed protocol (no workflow search, no self-modification). "
                           "The command reports the final accuracy beside the solver's first answer alone (does "
                           "the verification loop help this model?), the verdict accuracy and each role's reward; "
                           "the same command with --run RUN scores a role-trained run on the very same problems.",
                   evaluation=("reference_impls.measure.mas_pipeline", "--model", "smollm2-135m-instruct", "--n",
                               "100", "--max-completion-tokens", "272", "--json")),
)

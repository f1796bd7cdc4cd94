"""Fast and slow reasoning: arithmetic expressions of which some need no thought ("7+5") and some need
several steps ("(23+45)*3-17"); the model may think inside ``<think>...</think>`` before it answers, and
the reward trades accuracy against the thinking it spent.

Tag format (inside the assistant turn)::

    model: <answer>12</answer>                                   a fast answer (level 1)
    model: <think>23+45=68. 68*3=204.</think><answer>204</answer> a slow one (levels 2-4)

In the ``thinking-calc`` env (the reasoning-agentic-slow variant) the model may call the calculator's tool
inside its thinking; the environment's ``<result>`` is loss-masked text, as in the calculator env::

    model: <think><calc>23+45</calc>
    env:   <result>68</result>
    model: <calc>68*3</calc>
    env:   <result>204</result>
    model: </think><answer>204</answer>

Problems
    A random expression tree over + - * (no negative intermediate values) with 1, 2, 3 or 5
    operations (level 1, 2, 3, 4) and numbers 1-9, 2-20, 2-30, 2-50. ``family`` is ``level1`` ..
    ``level4``, so ``evaluate.py``'s ``by_family`` is accuracy by difficulty.
Splits
    ``train`` or ``heldout`` by a stable hash of the expression text (one in four held out): a held-out
    expression is never a training expression.
Thinking length
    Everything the model writes before its ``<answer>`` tag counts as thinking, tags removed (so writing
    the steps outside ``<think>`` is no way around the cost). The env sees text, not token ids, so the
    length is counted in *units*: a run of digits, a run of letters, or any other single non-space
    character (``23+45=68.`` is 6 units; a BPE tokenizer gives a similar count for such text).
Rewards (``reward`` option; ``n`` = thinking units, ``c`` = 1 if the answer is exactly right, else 0)
    ``budget_penalty`` (default): ``r = c - lambda * min(n, B) / B`` with ``lambda`` =
    ``length_penalty`` and ``B`` = ``think_budget``: a plain accuracy-minus-cost trade, the same for
    every problem, so the policy has to learn when thinking pays. A turn that ends without an answer (EOS,
    or cut by the length limit: the rollout hands the cut text to ``step``) scores as a wrong answer and
    pays for its thinking, so rambling until the budget runs out is never better than answering.
    ``lcpo_exact`` and ``lcpo_max``: the two rewards of L1 / LCPO (Aggarwal and Welleck, "L1: Controlling
    How Long A Reasoning Model Thinks With Reinforcement Learning", arXiv 2503.04697, section 3). The
    prompt asks for a target length ``n_gold`` ("Think for about N units."), drawn per problem from
    ``targets``. LCPO-Exact: ``r = c - alpha * |n_gold - n|``. LCPO-Max: ``r = c * clip(alpha * (n_gold -
    n) + delta, 0, 1)``: a correct answer under the budget keeps most of its reward, one over it loses it
    gradually. ``alpha`` = ``lcpo_alpha`` and ``delta`` = ``lcpo_delta``. We checked the two forms against
    the L1 repository's reward code (``deepscaler/rewards/math_reward.py``, functions
    ``get_delta_score_exact`` / ``get_delta_score_max``, read in the copy github.com/troy12x/deepscaler):
    a correct answer gets ``1 - |n - n_gold| / 3000`` and a wrong one ``-|n - n_gold| / 3000`` (Exact,
    alpha = 1/3000), and Max is ``clip(0.5 + (n_gold - n) / 1000, 0, 1)`` times correctness (alpha =
    1/1000, delta = 0.5). The text of the paper available to us stopped at its introduction, so we cite
    its method section and the code, not an equation number. Differences: L1 counts the whole
    response in tokens, we count the thinking in units; their alpha is for thousands of tokens, ours
    (default 0.01) for tens of units.
The benchmark's table
    :func:`thinking_table` turns evaluated episodes into "thinking length by difficulty" (per level:
    accuracy, mean and median thinking units, share of episodes that think at all);
    it is the env's registered report, so ``measure.report.heldout_report(model, tokenizer, "thinking")``
    evaluates a policy greedily on held-out problems and returns it, and
    ``python -m reference_impls.measure.report heldout --env thinking --run RUN`` (or ``--model NAME``) prints it.
"""
from __future__ import annotations

import hashlib
import random
import re
import statistics
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from ..options import Options, option
from . import EnvSpec, StepResult
from .arith import CalcError, evaluate, format_number, parse_number
from .calculator import TOOL as CALCULATOR
from .reports import register_report

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
REWARDS = ("budget_penalty", "lcpo_exact", "lcpo_max")
#: (operations, smallest number, largest number) per level
LEVELS = {1: (1, 1, 9), 2: (2, 2, 20), 3: (3, 2, 30), 4: (5, 2, 50)}
_UNIT = re.compile(r"\d+|[A-Za-z]+|[^\sA-Za-z\d]")
_TAG = re.compile(r"</?[A-Za-z]+>")

SYSTEM_PROMPT = (
    "Compute the value of the expression. You may think first inside <think>...</think>; thinking costs "
    "reward, so think only when the problem needs it. End with <answer>number</answer>.\n"
    "Examples: 7+5 -> <answer>12</answer>. (23+45)*3 -> <think>23+45=68. 68*3=204.</think><answer>204</answer>"
)
SYSTEM_PROMPT_CALC = (
    "Compute the value of the expression. You may think first inside <think>...</think> and call a "
    "calculator there with <calc>expression</calc>; its result comes back as <result>value</result>. "
    "Thinking costs reward, so think only when the problem needs it. End with <answer>number</answer>.\n"
    "Examples: 7+5 -> <answer>12</answer>. (23+45)*3 -> <think><calc>23+45</calc><result>68</result>"
    "<calc>68*3</calc><result>204</result></think><answer>204</answer>"
)


def think_units(text: str) -> int:
    """The thinking length of ``text`` in units (see the module docstring); tags do not count."""
    return len(_UNIT.findall(_TAG.sub(" ", text)))


@dataclass(frozen=True)
class Problem:
    expression: str
    answer: Fraction
    steps: tuple[str, ...]  # "a+b" sub-expressions in evaluation order, for the demonstrations
    target: int  # the target thinking length the LCPO rewards ask for
    level: int
    family: str
    split: str
    uid: str


def split_of(expression: str) -> str:
    h = int(hashlib.sha256(f"thinking/{expression}".encode()).hexdigest()[:8], 16)
    return "heldout" if h % 4 == 0 else "train"


def _tree(rng: random.Random, ops: int, lo: int, hi: int):
    """``(text, value, steps)`` of a random expression with ``ops`` operations; sub-expressions are
    parenthesised, products of two numbers above 12 become sums, differences never go negative."""
    if ops == 0:
        v = rng.randint(lo, hi)
        return str(v), Fraction(v), []
    left_ops = rng.randint(0, ops - 1)
    a, va, sa = _tree(rng, left_ops, lo, hi)
    b, vb, sb = _tree(rng, ops - 1 - left_ops, lo, hi)
    op = rng.choice("+-*")
    if op == "*" and va > 12 and vb > 12:
        op = "+"
    if op == "-" and va < vb:
        (a, va, sa), (b, vb, sb) = (b, vb, sb), (a, va, sa)
    wrap = lambda t, n: f"({t})" if n else t  # noqa: E731
    value = {"+": va + vb, "-": va - vb, "*": va * vb}[op]
    step = f"{format_number(va)}{op}{format_number(vb)}"
    return f"{wrap(a, sa)}{op}{wrap(b, sb)}", value, sa + sb + [step]


def make_problem(split: str, seed: int, level: int, index: int, targets=(8, 16, 32, 64)) -> Problem:
    rng = random.Random(f"thinking/{split}/{seed}/{level}/{index}")
    ops, lo, hi = LEVELS[level]
    for _ in range(10_000):
        text, value, steps = _tree(rng, ops, lo, hi)
        if split_of(text) == split:
            target = rng.choice(tuple(targets))
            return Problem(text, value, tuple(steps), target, level, f"level{level}", split,
                           f"{split}-{seed}-{level}-{index}")
    raise RuntimeError("no expression found")  # pragma: no cover


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=(1, 2, 3, 4),
             targets=(8, 16, 32, 64)) -> list[Problem]:
    """``n`` problems cycling over ``levels``; a pure function of its arguments."""
    if split not in ("train", "heldout"):
        raise ValueError("split must be 'train' or 'heldout'")
    levels = tuple(levels)
    if not levels:
        raise ValueError("thinking: no levels chosen")
    return [make_problem(split, seed, levels[i % len(levels)], i // len(levels), targets) for i in range(n)]


@dataclass
class ThinkingConfig(Options):
    """The fast/slow reasoning env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option((1, 2, 3, 4), "Difficulty: 1, 2, 3 or 5 operations (level 1-4); level 1 needs "
                                     "no thinking.", choices=(1, 2, 3, 4))
    reward: str = option("budget_penalty", "budget_penalty: correct - length_penalty * min(n, budget)/budget; "
                         "lcpo_exact / lcpo_max: L1's rewards against a target length stated in the prompt.",
                         choices=REWARDS)
    length_penalty: float = option(0.2, "lambda of budget_penalty: what thinking the whole budget costs.",
                                   low=0.0, high=10.0)
    think_budget: int = option(48, "B of budget_penalty, in thinking units.", low=1, high=4096)
    lcpo_alpha: float = option(0.01, "alpha of the LCPO rewards, per thinking unit.", low=0.0, high=1.0)
    lcpo_delta: float = option(0.5, "delta of LCPO-Max: the reward of a correct answer exactly at its target.",
                               low=0.0, high=1.0)
    targets: tuple[int, ...] = option((8, 16, 32, 64), "Target thinking lengths (units) the LCPO prompts ask for, "
                                      "one drawn per problem.", choices=(0, 4, 8, 16, 32, 64, 128))
    #: whether <calc> calls are allowed inside the thinking (the thinking-calc env's config sets it)
    calculator: ClassVar[bool] = False


@dataclass
class ThinkingCalcConfig(ThinkingConfig):
    """The options of ``thinking-calc`` (reasoning-agentic-slow): the thinking env's, plus the calculator."""

    calculator: ClassVar[bool] = True
    max_tool_calls: int = option(6, "Calculator calls allowed; one more ends the episode.", low=0, high=64)


def thinking_reward(correct: bool, units: int, config: ThinkingConfig, target: int) -> float:
    """The configured reward of one episode (module docstring, "Rewards")."""
    c = float(correct)
    if config.reward == "budget_penalty":
        return c - config.length_penalty * min(units, config.think_budget) / config.think_budget
    if config.reward == "lcpo_exact":
        return c - config.lcpo_alpha * abs(target - units)
    return c * min(1.0, max(0.0, config.lcpo_alpha * (target - units) + config.lcpo_delta))


class ThinkingEnv:
    """One episode on one :class:`Problem`."""

    def __init__(self, problem: Problem, config: ThinkingConfig | None = None):
        self.problem = problem
        self.config = config or ThinkingConfig()
        self.stop_strings = ((CALCULATOR.call_close, CALCULATOR.answer_close) if self.config.calculator
                             else (CALCULATOR.answer_close,))
        self.reset()

    def reset(self) -> list[dict[str, str]]:
        self.thought = ""  # the model's text before its answer, every turn
        self.tool_calls = 0
        user = f"Expression: {self.problem.expression}"
        if self.config.reward != "budget_penalty":
            user += f"\nThink for about {self.problem.target} units."
        system = SYSTEM_PROMPT_CALC if self.config.calculator else SYSTEM_PROMPT
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def _end(self, answer: str | None, **extra) -> StepResult:
        value = parse_number(answer) if answer is not None else None
        correct = value is not None and value == self.problem.answer
        units = think_units(self.thought)
        reward = thinking_reward(correct, units, self.config, self.problem.target)
        return StepResult(None, True, reward, {"correct": correct, "answer": answer, "think_units": units,
                                               "level": self.problem.level, "target": self.problem.target,
                                               "tool_calls": self.tool_calls, **extra})

    def step(self, model_text: str) -> StepResult:
        if self.config.calculator:
            action = CALCULATOR.first_action(model_text)
        else:
            found = CALCULATOR.find_answer(model_text)
            action = ("answer", found) if found else None
        if action is None:  # EOS or the length limit without an answer
            self.thought += model_text
            return self._end(None)
        kind, match = action
        self.thought += model_text[:match.start()]
        if kind == "answer":
            return self._end(match.group(1).strip()[:80])
        self.thought += match.group(0)
        if self.tool_calls >= self.config.max_tool_calls:
            return self._end(None, truncated=True)
        self.tool_calls += 1
        try:
            result = format_number(evaluate(match.group(1)))
        except CalcError as err:
            result = f"error: {err}"
        return StepResult(CALCULATOR.result(result), False, 0.0, {"tool_calls": self.tool_calls})


def demonstration(problem: Problem, calculator: bool = False) -> list[tuple[str, str]]:
    """Level 1: a direct answer. Otherwise the steps, one per sub-expression, inside ``<think>`` (with
    ``calculator``: one ``<calc>`` call per step and the tool's results between)."""
    answer = f"{CALCULATOR.answer_open}{format_number(problem.answer)}{CALCULATOR.answer_close}"
    if problem.level == 1:
        return [("model", answer)]
    if not calculator:
        lines = " ".join(f"{s}={format_number(evaluate(s))}." for s in problem.steps)
        return [("model", f"{THINK_OPEN}{lines}{THINK_CLOSE}{answer}")]
    segments: list[tuple[str, str]] = []
    for i, s in enumerate(problem.steps):
        segments.append(("model", (THINK_OPEN if i == 0 else "") + f"{CALCULATOR.call_open}{s}{CALCULATOR.call_close}"))
        segments.append(("env", CALCULATOR.result(format_number(evaluate(s)))))
    segments.append(("model", f"{THINK_CLOSE}{answer}"))
    return segments


def _problems(split: str, n: int, seed: int, config: ThinkingConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels, targets=config.targets)


def demonstration_with_calculator(problem: Problem) -> list[tuple[str, str]]:
    return demonstration(problem, calculator=True)


SPEC = EnvSpec("thinking", ThinkingConfig, _problems, ThinkingEnv, demonstration,
               title="fast and slow reasoning (thinking length vs accuracy)")
# a second name rather than a switch: the SFT warm start builds its prompts with the env's default options,
# so the variant whose demonstrations call the calculator must have it on by default
SPEC_CALC = EnvSpec("thinking-calc", ThinkingCalcConfig, _problems, ThinkingEnv,
                    demonstration_with_calculator,
                    title="slow reasoning with calculator calls inside the thinking")
ENV_SPECS = (SPEC, SPEC_CALC,)  # collected by envs.ENVS
make = SPEC.make


# ----------------------------------------------------------------------------------------------------
# the benchmark's table: thinking length by difficulty

def thinking_table(samples, problems_) -> list[dict]:
    """Per level: ``n``, ``accuracy``, ``mean_units``, ``median_units``, ``thinking_share`` (episodes with
    any thinking), ``mean_reward``. ``samples[i].group`` indexes ``problems_`` (as ``evaluate`` returns
    them); an episode cut off by the rollout (no ``think_units`` in its info) counts its model text."""
    rows: dict[int, list] = {}
    for s in samples:
        p = problems_[s.group]
        units = s.info.get("think_units")
        if units is None:
            units = think_units("".join(seg["text"] for seg in s.segments if seg["role"] == "model"))
        rows.setdefault(p.level, []).append((bool(s.info.get("correct")), int(units), float(s.reward)))
    table = []
    for level in sorted(rows):
        r = rows[level]
        units = [u for _, u, _ in r]
        table.append({"level": level, "n": len(r), "accuracy": round(sum(c for c, _, _ in r) / len(r), 4),
                      "mean_units": round(statistics.fmean(units), 2), "median_units": statistics.median(units),
                      "thinking_share": round(sum(u > 0 for u in units) / len(r), 4),
                      "mean_reward": round(statistics.fmean(x for _, _, x in r), 4)})
    return table


def format_table(table: list[dict]) -> str:
    head = "| level | n | accuracy | mean units | median units | thinks | mean reward |\n|---|---|---|---|---|---|---|"
    body = [f"| {r['level']} | {r['n']} | {r['accuracy']:.3f} | {r['mean_units']:.1f} | {r['median_units']} | "
            f"{r['thinking_share']:.2f} | {r['mean_reward']:.3f} |" for r in table]
    return "\n".join([head, *body])


register_report("thinking", thinking_table, format_table)
register_report("thinking-calc", thinking_table, format_table)


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("thinking-grpo", "Fast and slow reasoning: think only when it pays (GRPO)", "grpo", "thinking",
                   "Arithmetic expressions from one operation to five; the policy may think in <think> tags before "
                   "answering, and the reward is accuracy minus a cost per thinking unit, so it must learn to "
                   "answer easy problems at once and work the hard ones out.",
                   nodes=("reasoning", "reasoning-fast", "reasoning-slow"),
                   changes="Keeps what the fast/slow reasoning work measures: one policy facing problems of which "
                           "some need no deliberation and some need several steps, a verifiable answer, a reward "
                           "that trades accuracy against the length of the thinking (correct - lambda * "
                           "min(n, B)/B, or L1's LCPO-Exact / LCPO-Max against a target length in the prompt), and "
                           "the benchmark's table of thinking length by difficulty (thinking_table). Simplifies: "
                           "generated + - * expressions in four levels instead of competition maths, thinking "
                           "counted in text units (digit runs, words, symbols) rather than tokens, and a "
                           "warm start that demonstrates no thinking on level 1 and written steps above it."),
    Implementation("thinking-lcpo-grpo", "Length-controlled thinking with L1's LCPO-Max reward (GRPO)", "grpo",
                   "thinking", "The fast/slow env with the prompt asking for a thinking length and L1's LCPO-Max reward: "
                   "a correct answer within the target keeps its reward, one over it loses it gradually.",
                   env_options={"reward": "lcpo_max"}, paper="arXiv 2503.04697",
                   changes="L1 / LCPO conditions the model on a target length and scores correctness times "
                           "clip(alpha * (n_gold - n) + delta, 0, 1). Here the targets are 8-64 text units drawn "
                           "per problem, alpha is 0.01 per unit (L1's is per token, for thousands of tokens), and "
                           "the optimiser is our GRPO."),
    Implementation("thinking-calc-grpo", "Slow reasoning with tool calls inside the thinking (GRPO)", "grpo",
                   "thinking-calc", "The fast/slow env where the thinking may call the calculator (<calc> inside <think>): "
                   "deliberation interleaved with tool use, under the same thinking cost.",
                   nodes=("reasoning-agentic-slow",),
                   changes="Keeps the prospective 'slow reasoning inside agentic reasoning' setting: a long "
                           "think that calls a tool mid-way and continues from its result, with the thinking's "
                           "length priced as in the plain env (a calculator call costs its expression's units, "
                           "less than writing the step out). Simplifies: one tool (the calculator env's ToolSpec "
                           "and safe evaluator), arithmetic only, a fixed budget of calls."),
)

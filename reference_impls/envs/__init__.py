"""Environments: the protocol every task implements, and a registry by name.

An environment instance is one episode. The rollout loop (``reference_impls/rollout.py``) drives it:

1. ``messages = env.reset()`` gives the chat messages of the prompt (system + user). The rollout
   renders them with the tokenizer's chat template and opens the assistant turn.
2. The model writes until it closes one of ``env.stop_strings`` (e.g. ``</calc>`` or ``</answer>``)
   or emits EOS / hits the length limit.
3. ``result = env.step(model_text)``. If ``result.done`` the episode ends with ``result.reward``;
   otherwise ``result.observation`` (e.g. ``<result>68</result>``) is appended to the assistant turn
   as *environment tokens* (loss mask 0) and the model continues.

A task family registers a :class:`TaskSpec` (how to list problems of a split, how to build an
episode for one problem, how to write a demonstration for SFT). Later envs (search, memory) plug in by
calling :func:`register_env`; nothing else in the trainer changes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence


@dataclass(frozen=True)
class ToolSpec:
    """How a tool is called and answered, as tags in the assistant's text."""

    name: str
    description: str
    call_open: str
    call_close: str
    result_open: str
    result_close: str
    answer_open: str = "<answer>"
    answer_close: str = "</answer>"


@dataclass
class StepResult:
    """What ``Env.step`` returns. ``observation`` is the text appended as environment tokens when the
    episode continues; ``reward`` is only meaningful when ``done``."""

    observation: str | None
    done: bool
    reward: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)


class Env(Protocol):
    tool: ToolSpec
    stop_strings: tuple[str, ...]
    max_turns: int

    def reset(self) -> list[dict[str, str]]: ...

    def step(self, model_text: str) -> StepResult: ...


def step_all(envs, texts) -> list[StepResult]:
    """``env.step(text)`` for each episode, in order. An env class whose step is dominated by a model
    call (the memory env's Answer Agent) may define a classmethod ``step_many(envs, texts)``; the
    episodes of such a class are then stepped in one call so that the model sees one batch."""
    results: list[StepResult | None] = [None] * len(envs)
    by_class: dict[type, list[int]] = {}
    for i, env in enumerate(envs):
        by_class.setdefault(type(env), []).append(i)
    for cls, idx in by_class.items():
        many = getattr(cls, "step_many", None)
        outs = many([envs[i] for i in idx], [texts[i] for i in idx]) if many else [envs[i].step(texts[i]) for i in idx]
        for i, out in zip(idx, outs):
            results[i] = out
    return results


@dataclass(frozen=True)
class TaskSpec:
    """Registry entry: ``problems(split, n, seed)`` lists problems, ``make(problem, **options)`` builds
    an :class:`Env` episode, ``demonstration(problem)`` returns ``[(role, text), ...]`` segments of a
    correct transcript (role ``model`` or ``env``) for SFT."""

    name: str
    problems: Callable[..., Sequence[Any]]
    make: Callable[..., Env]
    demonstration: Callable[[Any], list[tuple[str, str]]]


ENVS: dict[str, TaskSpec] = {}


def register_env(spec: TaskSpec) -> TaskSpec:
    ENVS[spec.name] = spec
    return spec


def get_env(name: str) -> TaskSpec:
    if name not in ENVS:
        raise ValueError(f"Unknown env {name!r}; registered: {', '.join(sorted(ENVS))}")
    return ENVS[name]


from . import calculator as _calculator  # noqa: E402,F401  (registers "calculator")
from . import search as _search  # noqa: E402,F401  (registers "search")
from . import memory as _memory  # noqa: E402,F401  (registers "memory" and "memory-format")

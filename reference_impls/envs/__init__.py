"""Environments: the protocol every task implements, its options, and a registry by name.

An environment instance is one episode. The rollout loop (``reference_impls/rollout.py``) drives it:

1. ``messages = env.reset()`` gives the chat messages of the prompt (system + user). The rollout
   renders them with the tokenizer's chat template and opens the assistant turn.
2. The model writes until it closes one of ``env.stop_strings`` (e.g. ``</calc>`` or ``</answer>``)
   or emits EOS / hits the length limit.
3. ``result = env.step(model_text)``. If ``result.done`` the episode ends with ``result.reward``;
   otherwise ``result.observation`` (e.g. ``<result>68</result>``) is appended to the assistant turn
   as *environment tokens* (loss mask 0) and the model continues.

A task declares an :class:`EnvSpec`: its options (a config dataclass whose fields are declared with
``reference_impls.options.option``: help, choices, range), how to list the problems of a split, how to
build an episode for one problem, how to write a demonstration for the SFT warm start. The trainer,
SFT, evaluation and the Lab call ``spec.problems(split, n, seed, config)`` and
``spec.make(problem, config)`` with the run's typed config (``spec.config_of(...)``: built and validated once, in
``run_config.resolve``, then carried as ``Context.env_config`` and ``RolloutConfig.env_config``) and never branch on an environment's name: the options a problem
list depends on (levels, families ...) are the environment's own fields. A user's environment plugs in
without editing the package: ``python -m reference_impls.train --env-module my_env.py`` imports the
file, whose ``ENV_SPECS`` (or ``register_env(EnvSpec(...))`` call) adds it (:func:`load_env_module`). The
built-in environments are declared the same way: one module each, ending with ``ENV_SPECS``
(:class:`EnvRegistry` collects them), plus the ``IMPLEMENTATIONS`` rows it ships (``reference_impls.registry``).
A module without ``ENV_SPECS`` is a helper of one or more environments (``gridgames``, ``reports``, the task
data of ``swe_repos``, ``sql_db``, ``code_problems``, the harness ``swe_harness``).
"""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
from dataclasses import dataclass, field
from functools import cached_property
from collections.abc import MutableMapping
from typing import Any, Callable, Protocol, Sequence

from ..options import ConfigError, as_dict, build, specs


@dataclass(frozen=True)
class ToolSpec:
    """How a tool is called and answered, as tags in the assistant's text. The tags are written here
    once; :meth:`find_call` and :meth:`find_answer` are the parsers every environment uses."""

    name: str
    description: str
    call_open: str
    call_close: str
    result_open: str
    result_close: str
    answer_open: str = "<answer>"
    answer_close: str = "</answer>"

    @cached_property
    def _call_re(self) -> re.Pattern:
        return re.compile(re.escape(self.call_open) + r"(.*?)" + re.escape(self.call_close), re.S)

    @cached_property
    def _answer_re(self) -> re.Pattern:
        return re.compile(re.escape(self.answer_open) + r"(.*?)" + re.escape(self.answer_close), re.S)

    @staticmethod
    def _first(pattern: re.Pattern, open_: str, close: str, text: str) -> re.Match | None:
        """``pattern.search(text)`` in linear time. The search retried the lazy ``(.*?)`` from every opening
        tag to the end of the text, so many unclosed tags took quadratic time (120 KB: over 20 s). The
        leftmost match starts at the first opening tag when a closing tag follows it, and at none otherwise
        (a closing tag after a later opening tag also follows the first)."""
        start = text.find(open_)
        if start < 0 or text.find(close, start + len(open_)) < 0:
            return None
        return pattern.match(text, start)

    def find_call(self, text: str) -> re.Match | None:
        """The first complete tool call in ``text`` (group 1 = its argument)."""
        return self._first(self._call_re, self.call_open, self.call_close, text)

    def find_answer(self, text: str) -> re.Match | None:
        """The first complete final answer in ``text`` (group 1 = the answer)."""
        return self._first(self._answer_re, self.answer_open, self.answer_close, text)

    def result(self, text: str) -> str:
        return f"{self.result_open}{text}{self.result_close}"

    def first_action(self, text: str) -> tuple[str, re.Match] | None:
        """``("answer", m)`` or ``("call", m)`` for whichever complete tag comes first, else None."""
        call, answer = self.find_call(text), self.find_answer(text)
        if answer is not None and (call is None or answer.start() < call.start()):
            return "answer", answer
        return ("call", call) if call is not None else None


@dataclass
class StepResult:
    """What ``Env.step`` returns. ``observation`` is the text appended as environment tokens when the
    episode continues; ``reward`` is only meaningful when ``done``."""

    observation: str | None
    done: bool
    reward: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)


class Env(Protocol):
    """One episode. What the rollout reads: ``stop_strings``, ``reset`` and ``step`` (an env class may
    add a classmethod ``step_many(envs, texts)``, see :func:`step_all`)."""

    stop_strings: tuple[str, ...]

    def reset(self) -> list[dict[str, str]]: ...

    def step(self, model_text: str) -> StepResult: ...


def replay_calls(env: Env, tool: ToolSpec, arguments) -> list[tuple[str, str]]:
    """A scripted solver's turns as a demonstration transcript: each argument as one tool call (model text),
    the environment's real answer after it (env text), until the episode ends."""
    segments: list[tuple[str, str]] = []
    for argument in arguments:
        call = f"{tool.call_open}{argument}{tool.call_close}"
        segments.append(("model", call))
        result = env.step(call)
        if result.done:
            break
        segments.append(("env", result.observation))
    return segments


def answer_step(action, base: dict, answers, calls_used: int, max_calls: int, calls: str) -> StepResult | None:
    """How a question-answering agent's turn ends (biomed, general-qa): an ``<answer>`` is scored by exact match
    (an empty one is named in ``error``), a turn without a tag ends the episode unanswered, and a tool call past
    ``max_calls`` ends it with an error naming the budget (``calls``: what the tool's calls are called). None: the
    turn is a tool call within the budget, for the environment to run. ``action`` is ``ToolSpec.first_action``'s."""
    from ..scoring import exact_match

    if action is not None and action[0] == "answer":
        text = action[1].group(1).strip()
        correct = exact_match(text, answers)
        info = {**base, "correct": correct, "answer": text[:200]}
        if not text:
            info["error"] = "the answer is empty"
        return StepResult(None, True, float(correct), info)
    if action is None:
        return StepResult(None, True, 0.0, {**base, "correct": False, "answer": None})
    if calls_used >= max_calls:
        return StepResult(None, True, 0.0, {**base, "correct": False, "answer": None, "truncated": True,
                                            "error": f"all {max_calls} {calls} were used; answer with "
                                                     f"<answer>...</answer>"})
    return None


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


class StepChecker(Protocol):
    """An environment's checked steps: how one model turn of an episode is judged against the problem, for
    algorithms with step-level credit (PSGPO's dense step rewards, Step-DPO's first wrong step). A step is
    one model turn; the problem is one of the env's own problems (the checker knows its fields)."""

    def verdicts(self, problem, turn_texts: Sequence[str]) -> list[int]:
        """+1 (a correct, new step), -1 (a wrong step) or 0 (neither: not a step, or a repeat) for each
        model turn of one episode, in order."""
        ...

    def is_correct(self, problem, text: str) -> bool:
        """Whether one model turn, on its own, is a correct step of ``problem``."""
        ...

    def next_step(self, problem, prefix_texts: Sequence[str]) -> str:
        """The reference solution's next step (model text) after the correct steps ``prefix_texts``."""
        ...


@dataclass(frozen=True)
class NoOptions:
    """The config of an environment that has no options."""


@dataclass(frozen=True)
class EnvSpec:
    """Registry entry of one environment.

    ``config``: its options dataclass (fields declared with ``options.option``).
    ``list_problems(split, n, seed, config)``: a pure function of its arguments (held-out evaluation is
    paired across models). ``build(problem, config)``: one episode. ``demonstration(problem)``:
    ``[(role, text), ...]`` segments of a correct transcript (role ``model`` or ``env``) for SFT; with
    ``demonstration_takes_config`` it is called ``demonstration(problem, config=config)`` with the run's
    config, for an env whose transcript depends on its options (moves per tag, hints, results per search).
    Callers go through :meth:`demonstrate`, which resolves the options.
    ``demonstration_options``: options of the problems the warm start demonstrates (on top of the
    defaults; the calculator narrows them to its SFT families so that RL has headroom).
    ``heldout_options``: options every held-out evaluation applies on top of a run's (selfplay-arith: the
    solver on seeded expressions, since its training pool holds proposals, which have no right answer);
    an option given explicitly to an evaluation command still wins.
    ``steps``: a :class:`StepChecker` when the env's model turns can be checked as steps against the
    problem (the calculator's tool calls); algorithms that need step verdicts test this, never a name.
    ``validation_split``: ``list_problems`` also takes the split ``validation``, disjoint from ``heldout`` by
    construction (search: no entity or document in common); without it a comparison draws its validation
    problems from the held-out distribution (``measure.evaluate.validation_problems``)."""

    name: str
    config: type
    list_problems: Callable[[str, int, int, Any], Sequence[Any]]
    build: Callable[..., Env]
    demonstration: Callable[..., list[tuple[str, str]]]
    title: str = ""
    demonstration_options: dict = field(default_factory=dict)
    heldout_options: dict = field(default_factory=dict)
    demonstration_takes_config: bool = False
    steps: StepChecker | None = None
    #: runs model code in reference_impls.sandbox: the trainer checks the sandbox before training and
    #: records its layer in status.json (``sandbox_layer``)
    uses_sandbox: bool = False
    validation_split: bool = False

    def options(self, values: dict | None = None):
        """The env's config from a mapping of option values (validated; raises ConfigError)."""
        return build(self.config, dict(values or {}), f"option of --env {self.name}")

    def config_of(self, config=None, **options):
        """The env's typed config: ``config`` as it is when it already is one (no re-validation: the trainer
        resolves it once and every episode reuses it), else built from a mapping of option values (None = the
        defaults); keyword ``options`` override fields of either (validated)."""
        if isinstance(config, self.config) and not options:
            return config
        values = as_dict(config) if dataclasses.is_dataclass(config) else dict(config or {})
        return self.options({**values, **options})

    def problems(self, split: str = "train", n: int = 100, seed: int = 0, config=None, **options) -> Sequence[Any]:
        """``n`` problems of ``split`` under the typed ``config`` (or a mapping, or keyword options)."""
        return self.list_problems(split, n, seed, self.config_of(config, **options))

    def heldout_env_options(self, run_options: dict | None = None, given: dict | None = None) -> dict:
        """The options of a held-out evaluation: a run's options, then the env's ``heldout_options``, then the
        options the user gave the evaluation command (the last wins)."""
        return {**(run_options or {}), **self.heldout_options, **(given or {})}

    def make(self, problem, config=None, **options) -> Env:
        """One episode of ``problem`` under the typed ``config`` (or a mapping, or keyword options)."""
        return self.build(problem, self.config_of(config, **options))

    def demonstrate(self, problem, config=None) -> list[tuple[str, str]]:
        """A correct transcript of ``problem`` as an episode built with ``config`` plays it (the run's env
        config: a demonstration written for other options would teach a format the run's env rejects)."""
        if self.demonstration_takes_config:
            return self.demonstration(problem, config=self.config_of(config))
        return self.demonstration(problem)

    def option_specs(self):
        return specs(self.config)


class EnvRegistry(MutableMapping):
    """name -> :class:`EnvSpec`. The built-in environments are declared, not registered: each module of this
    package that defines one ends with ``ENV_SPECS = (spec, ...)``, and the registry collects them the first
    time it is read (so importing this package imports no environment). A user's module may declare
    ``ENV_SPECS`` too, or call :func:`register_env`."""

    def __init__(self):
        self._specs: dict[str, EnvSpec] = {}
        self._collected = False

    def _collect(self) -> dict[str, EnvSpec]:
        if not self._collected:
            self._collected = True  # set first: an env module that reads ENVS while importing sees a partial map
            declared: dict[str, EnvSpec] = {}
            for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
                module = importlib.import_module(f"{__name__}.{info.name}")
                declared.update((spec.name, spec) for spec in getattr(module, "ENV_SPECS", ()))
            self._specs = {**declared, **self._specs}  # a user's env registered earlier wins over a built-in
        return self._specs

    def add(self, spec: EnvSpec) -> EnvSpec:
        self._collect()[spec.name] = spec
        return spec

    def __getitem__(self, name: str) -> EnvSpec:
        return self._collect()[name]

    def __setitem__(self, name: str, spec: EnvSpec) -> None:
        if name != spec.name:
            raise ValueError(f"an environment is registered under its own name ({spec.name!r}), not {name!r}")
        self.add(spec)

    def __delitem__(self, name: str) -> None:
        """Forget an environment (a user's module that is unloaded)."""
        del self._collect()[name]

    def __iter__(self):
        return iter(self._collect())

    def __len__(self) -> int:
        return len(self._collect())


ENVS = EnvRegistry()


def register_env(spec: EnvSpec) -> EnvSpec:
    """Add an environment built at run time (a user's module, a test's task); built-in ones declare
    ``ENV_SPECS`` instead."""
    return ENVS.add(spec)


def get_env(name: str) -> EnvSpec:
    if name not in ENVS:
        raise ConfigError(f"--env: unknown environment {name!r}; registered: {', '.join(sorted(ENVS))}")
    return ENVS[name]


def with_checked_steps() -> str:
    """A hint for an error about an environment without checked steps (``EnvSpec.steps``): the registered
    environments that have them, as `` (environments with checked steps: a, b)``, or "" when none has."""
    names = sorted(name for name, spec in ENVS.items() if spec.steps is not None)
    return f" (environments with checked steps: {', '.join(names)})" if names else ""


def load_env_module(path_or_module: str) -> list[str]:
    """Import a user's environment module (a ``.py`` path or a dotted module name) that declares
    ``ENV_SPECS`` or calls :func:`register_env`; returns the names it added."""
    from ..user_modules import import_user_module

    before = dict(ENVS)
    module = import_user_module(path_or_module, "--env-module", "atlas_user_env_")
    for env_spec in getattr(module, "ENV_SPECS", ()):
        register_env(env_spec)
    added = sorted(n for n, s in ENVS.items() if before.get(n) is not s)
    if not added:
        raise ConfigError(f"--env-module {path_or_module!r} added no environment (declare ENV_SPECS or call "
                          f"register_env)")
    return added


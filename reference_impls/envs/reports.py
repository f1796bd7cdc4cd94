"""Per-environment reports on evaluated episodes (the numbers a benchmark shows for an env, beyond accuracy)
and the held-out evaluation they run on. An env registers its report with :func:`register_report`; the
command line is ``python -m reference_impls.report heldout --env NAME --run RUN`` (``reference_impls/report.py``),
which never branches on an environment's name: it looks the report up here."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..options import ConfigError


@dataclass(frozen=True)
class Report:
    """``compute(samples, problems)`` -> JSON-able result; ``format(result)`` -> text for a terminal."""

    compute: Callable[[list, list], Any]
    format: Callable[[Any], str] | None = None


REPORTS: dict[str, Report] = {}


def register_report(env: str, compute: Callable[[list, list], Any], format: Callable[[Any], str] | None = None):
    REPORTS[env] = Report(compute, format)


def get_report(env: str) -> Report:
    if env not in REPORTS:
        raise ConfigError(f"--env: no report for environment {env!r}; environments with a report: "
                          f"{', '.join(sorted(REPORTS)) or 'none'}")
    return REPORTS[env]


def heldout_samples(model, tokenizer, env: str, n: int = 80, seed: int = 0, max_new_tokens_per_turn: int = 96,
                    max_completion_tokens: int = 192, options: dict | None = None):
    """Greedy episodes on ``n`` held-out problems of ``env``: ``(samples, problems)``."""
    from ..measure.evaluate import evaluate
    from . import get_env

    task = get_env(env)
    options = dict(options or {})
    problems = task.problems("heldout", n=n, seed=seed, **options)
    _, samples = evaluate(model, tokenizer, task, problems, max_new_tokens_per_turn=max_new_tokens_per_turn,
                          max_completion_tokens=max_completion_tokens, env_options=options, return_samples=True)
    return samples, problems

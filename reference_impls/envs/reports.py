"""Per-environment reports on evaluated episodes (the numbers a benchmark shows for an env, beyond accuracy).
An env registers its report with :func:`register_report`: a function of evaluated episodes, so this module
(and the env) never runs an evaluation. The measurement layer does: ``measure/report.py`` evaluates a policy
on held-out problems and hands the episodes to the report it looks up here (``python -m
reference_impls.measure.report heldout --env NAME --run RUN``, which never branches on an environment's name)."""
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

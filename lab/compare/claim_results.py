"""A claim's records read back, summarised per seed and judged (issue 61): one run's metric summarised (``summarise``), the pilot's checks, the verdict (``verdict``; the rules are in
``claims``' docstring) and the report lines of a claims folder (``claim_lines``, ``pilot_lines``,
``claim_reports``). Pure functions of the spec (``claims``) and the records (written by ``claims_run``).
"""
from __future__ import annotations

import math
from pathlib import Path

from .claims import (ARMS, COULD_NOT_TELL, NO_SWITCH, NOT_REPRODUCED, NOT_RUN, REPRODUCED, REVERSED, SUMMARIES, Claim,
                     ClaimsSpec, PilotCheck)
from .folder import is_number


# -- one run's metric, summarised ------------------------------------------------------------------------------
def metric_values(rows: list[dict], metric: str) -> list[tuple[int, float]]:
    """(step, value) of ``metric`` over a run's policy steps (PPO's critic-only warm-up steps left out), skipping
    steps where it is missing or not a finite number (``kl`` of a run without a reference)."""
    out = []
    for row in rows:
        if row.get("phase") == "critic-warmup" or row.get("critic_warmup"):
            continue
        value = row.get(metric)
        if is_number(value):
            out.append((int(row["step"]), float(value)))
    return out


def summarise(values: list[float], how: str) -> float | None:
    """One number from a run's per-step values (``SUMMARIES``); None when there are none. ``last_quarter_mean``:
    the mean over the last ceil(n / 4) steps."""
    if not values:
        return None
    if how == "mean":
        return sum(values) / len(values)
    if how == "final":
        return values[-1]
    if how == "max":
        return max(values)
    if how == "last_quarter_mean":
        tail = values[-math.ceil(len(values) / 4):]
        return sum(tail) / len(tail)
    raise ValueError(f"unknown summary {how!r} (one of {', '.join(SUMMARIES)})")


def check_value(check: PilotCheck, rows: list[dict]) -> float | None:
    """The pilot check's quantity for one run: the summary of its metric, or for ``falls_to`` the ratio of the
    last-quarter mean to the first step's value (None when the first is 0 or there are no values)."""
    values = [v for _, v in metric_values(rows, check.metric)]
    if check.falls_to is not None or check.rises_to is not None:
        if not values or values[0] == 0:
            return None
        return summarise(values, "last_quarter_mean") / values[0]
    return summarise(values, check.summary)


def check_passes(check: PilotCheck, value: float | None) -> bool | None:
    if value is None:
        return None
    if check.at_least is not None:
        return value >= check.at_least
    if check.at_most is not None:
        return value <= check.at_most
    if check.rises_to is not None:
        return value >= check.rises_to
    return value <= check.falls_to


# -- the verdict ---------------------------------------------------------------------------------------------
def verdict(direction: str, comparison, p_holm: float | None, smallest_effect: float, pairs: int,
            min_seeds: int, alpha: float = 0.05) -> str:
    """The verdict of one claim (module docstring) from its seed-paired comparison (``with - without``), the
    Holm-adjusted p, the smallest effect that counts and the number of seed pairs."""
    if pairs == 0 or comparison is None:
        return NOT_RUN
    if pairs < min_seeds or p_holm is None:
        return COULD_NOT_TELL
    sign = 1.0 if direction == "higher" else -1.0
    if p_holm < alpha and comparison.difference != 0:
        return REPRODUCED if sign * comparison.difference > 0 else REVERSED
    nearest_predicted = comparison.high if sign > 0 else -comparison.low  # how far the interval reaches that way
    return NOT_REPRODUCED if nearest_predicted < smallest_effect else COULD_NOT_TELL


# -- the records of a claims folder ------------------------------------------------------------------------------
def claim_folder(root: Path, claim: Claim, pilot: bool = False) -> Path:
    return Path(root) / ("pilot" if pilot else "") / claim.id


def arm_result_path(folder: Path, arm: str, seed: int) -> Path:
    return Path(folder) / arm / f"s{seed}" / "result.json"


def read_arm(folder: Path, arm: str, seed: int) -> dict | None:
    """One arm's record of one seed (``<arm>/s<seed>/result.json`` of a run folder, or ``<arm>/s<seed>.json`` of
    an exported one); None when there is none or it cannot be used."""
    from .folder import BadRecord, read_record

    for path in (arm_result_path(folder, arm, seed), Path(folder) / arm / f"s{seed}.json"):
        try:
            record = read_record(path, ("metric_rows",), cell=True)
        except BadRecord:
            record = None
        if record is not None:
            return record
    return None


def seed_rows(spec: ClaimsSpec, claim: Claim, root: Path, pilot: bool = False) -> list[dict]:
    """Per seed of the claim's experiment with both arms recorded and complete: the seed, each arm's summary of
    the claim's metric and its per-step values (for the figure)."""
    from .folder import budget_status

    folder = claim_folder(root, claim, pilot)
    rows = []
    for seed in spec.seeds_of(pilot):
        records = {arm: read_arm(folder, arm, seed) for arm in ARMS}
        if any(r is None or not budget_status(r)["in_verdicts"] for r in records.values()):
            continue
        series = {arm: metric_values(r["metric_rows"], claim.metric) for arm, r in records.items()}
        summaries = {arm: summarise([v for _, v in s], claim.summary) for arm, s in series.items()}
        if any(v is None for v in summaries.values()):
            continue
        rows.append({"seed": seed, "summaries": summaries, "series": series, "records": records})
    return rows


def settings_of(record: dict) -> dict:
    """The settings a claim's record ran under, for the line beside its verdict."""
    config = record.get("config") or {}
    budget = record.get("budget") or {}
    return {"model": record.get("base_model") or config.get("model"), "steps": config.get("steps"),
            "prompts_per_step": config.get("prompts_per_step"), "group_size": config.get("group_size"),
            "lr": config.get("lr"), "mu": budget.get("mu"), "env": record.get("env")}


def claim_lines(spec: ClaimsSpec, root: Path, pilot: bool = False, alpha: float = 0.05) -> list[dict]:
    """One line per claim of ``spec`` from the records under ``root``: the claim, its paper reference, metric and
    direction, the seed pairs, the paired difference (with - without) and its interval, the smallest effect the
    test could detect, the Holm-adjusted p over every claim tested, the verdict and the settings. Claims not run
    say so (verdict ``not run``, seeds 0); a claim without a switch says ``no ablation switch yet``."""
    from reference_impls.stats import compare_seed_summaries, detectable_effect, holm

    lines, tested = [], []
    for claim in spec.claims:
        line = {"id": claim.id, "algorithm": claim.implementation, "claim": claim.claim, "metric": claim.metric,
                "summary": claim.summary if claim.runnable else None, "direction": claim.direction,
                "paper_ref": claim.paper_ref, "ablation": claim.ablation or None, "seeds": 0, "diff": None,
                "ci_low": None, "ci_high": None, "detectable": None, "p_raw": None, "p_holm": None, "tests": None,
                "with_mean": None, "without_mean": None, "smallest_effect": claim.smallest_effect or None,
                "min_seeds": spec.min_seeds, "test": None, "settings": None, "verdict": NOT_RUN,
                "why": claim.no_switch or ""}
        if not claim.runnable:
            line["verdict"] = NO_SWITCH
            lines.append(line)
            continue
        rows = seed_rows(spec, claim, root, pilot)
        line["seeds"] = len(rows)
        if rows:
            line["settings"] = settings_of(rows[0]["records"]["with"])
            a = [r["summaries"]["with"] for r in rows]
            b = [r["summaries"]["without"] for r in rows]
            line["with_mean"], line["without_mean"] = sum(a) / len(a), sum(b) / len(b)
            line["diff"] = line["with_mean"] - line["without_mean"]
        if len(rows) >= 2:
            comparison = compare_seed_summaries(a, b)
            line.update(ci_low=comparison.low, ci_high=comparison.high, p_raw=comparison.p_value,
                        test=comparison.test, _comparison=comparison)
            tested.append(line)
        lines.append(line)
    adjusted = holm([line["p_raw"] for line in tested])
    for line, p in zip(tested, adjusted):
        c = line.pop("_comparison")
        line.update(p_holm=p, tests=len(tested),
                    detectable=detectable_effect(c.se, c.df, alpha / len(tested)) if c.se > 0 else 0.0)
        claim = spec.claim(line["id"])
        line["verdict"] = verdict(claim.direction, c, p, claim.smallest_effect, line["seeds"], spec.min_seeds, alpha)
        line["_comparison"] = c
    for line in lines:
        claim = spec.claim(line["id"])
        if claim.runnable and line["seeds"] and line["verdict"] == NOT_RUN:  # one pair: no spread to test against
            line["verdict"] = COULD_NOT_TELL
        line["why"] = line["why"] or _why(line, spec)
        line.pop("_comparison", None)
    return lines


def _why(line: dict, spec: ClaimsSpec) -> str:
    verdict_ = line["verdict"]
    if verdict_ == NOT_RUN:
        return "no seed pair recorded yet"
    if verdict_ == COULD_NOT_TELL:
        if line["seeds"] < spec.min_seeds:
            return f"{line['seeds']} seed pair(s), fewer than the {spec.min_seeds} a verdict needs"
        return "no difference detected, and the interval still holds the smallest effect that counts"
    if verdict_ == NOT_REPRODUCED:
        return "no difference detected, and the interval rules out the smallest effect that counts"
    return ""


def pilot_lines(spec: ClaimsSpec, root: Path, effect_tests: int | None = None) -> list[dict]:
    """Per runnable claim, from its pilot's records: whether the mechanism's quantity moved in the arm its check
    names (each seed's value and pass), and the seed pairs a power plan asks for to detect the smallest effect
    (80% power at alpha / the number of runnable claims, from the pilot's spread; needs two pilot pairs)."""
    from reference_impls.stats import seeds_for_seed_summaries

    runnable = [c for c in spec.claims if c.runnable]
    tests = effect_tests or len(runnable)
    lines = []
    for claim in runnable:
        folder = claim_folder(root, claim, pilot=True)
        check = claim.pilot_check
        values = []
        for seed in spec.pilot_seeds:
            record = read_arm(folder, check.arm, seed)
            if record is not None:
                values.append((seed, check_value(check, record["metric_rows"])))
        passes = [check_passes(check, v) for _, v in values]
        rows = seed_rows(spec, claim, root, pilot=True)
        diffs = [r["summaries"]["with"] - r["summaries"]["without"] for r in rows]
        plan = seeds_for_seed_summaries(diffs, claim.smallest_effect, tests) if len(diffs) >= 2 else None
        lines.append({"id": claim.id, "algorithm": claim.implementation, "check": check.text(),
                      "values": {str(s): v for s, v in values},
                      "moves": (all(p is True for p in passes) if passes else None),
                      "pilot_pairs": len(rows), "pilot_diffs": diffs,
                      "seeds_needed": plan,
                      "plan": ("a power plan needs two pilot seed pairs" if len(diffs) < 2 else
                               "more than 50 seed pairs" if plan is None else
                               f"{plan} seed pairs detect {claim.smallest_effect:g} with 80% power")})
    return lines


def figure_rows(rows: list[dict]) -> list[dict]:
    """The node page's figure data: every seed's per-step value of each arm (``kind`` seed) and, per arm and step,
    the mean over the seeds that have that step (``kind`` mean)."""
    out, by_step = [], {}
    for r in rows:
        for arm, series in r["series"].items():
            for step, value in series:
                out.append({"arm": arm, "seed": r["seed"], "step": step, "value": value, "kind": "seed"})
                by_step.setdefault((arm, step), []).append(value)
    for (arm, step), values in sorted(by_step.items()):
        out.append({"arm": arm, "seed": None, "step": step, "value": sum(values) / len(values), "kind": "mean"})
    return out


def claims_for_implementations(spec: ClaimsSpec, impl_ids: set[str]) -> list[Claim]:
    return [c for c in spec.claims if c.implementation in impl_ids]


def claim_reports(spec: ClaimsSpec, root: Path) -> dict[str, dict]:
    """Per claim id: its ``line`` (``claim_lines``) and its ``figure`` rows (``figure_rows``: every seed's values of
    both arms and their means; empty when no pair is recorded), what a node page shows."""
    lines = {line["id"]: line for line in claim_lines(spec, root)}
    return {c.id: {"line": lines[c.id], "figure": figure_rows(seed_rows(spec, c, root)) if c.runnable else []}
            for c in spec.claims}

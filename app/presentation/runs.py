"""The Runs page's data, computed without Streamlit: the run history as a table (each run named by its
implementation, with its start, duration, preset and steps done of planned), one metric of chosen runs as
curves with a legend (read from each run's metrics file), the chosen runs that have no such curve and why,
the metric charts of the Lab and Runs pages (axes fitted to the values, numbers as numbers), and the metrics
of chosen runs as one CSV.

    st.dataframe(runs_frame(runs))
    curves, missing = comparison(runs, ["r1", "r2"], "reward_mean")
    st.altair_chart(metric_chart(curves, "reward_mean", color="run"))
"""
from __future__ import annotations

import time
from collections.abc import Collection, Sequence

import pandas as pd

#: the metrics a run's curves can be compared on
METRICS = ("reward_mean", "accuracy", "loss", "kl", "clip_frac", "entropy", "grad_norm", "tokens_per_s")
#: what an empty cell of the runs table reads
MISSING = "—"
#: the policy models' names as the Runs table shows them (``reference_impls.models.MODEL_NAMES``; the full name in
#: the column's help): "smollm2-135m-instruct" did not fit its column at 1440 px
MODEL_LABELS = {"smollm2-135m-instruct": "SmolLM2-135M", "tiny": "tiny (random)"}
#: d3 format of a metric axis: up to 4 significant digits, thousands grouped, no trailing zeros
#: (0.00031, 1.45, 1,500; never "0.000000" or "1.000000")
VALUE_FORMAT = ",.4~g"


def run_label(run) -> str:
    """A run in a legend or a picker: its implementation and its id (``calculator-dapo · 20261203-...``)."""
    return f"{run.name} · {run.id}"


def duration_text(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return MISSING
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def _number(value) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else MISSING


def runs_frame(runs: Sequence, now: float | None = None) -> pd.DataFrame:
    """One row per run: id, implementation, preset, status ("stopping" while a stop is pending), start (local
    time), duration (to now while it runs), RL steps done / planned, model, last reward and accuracy, error.
    Every cell is text; an unknown value reads ``MISSING``, never "None"."""
    from reference_impls.rundir import read_jsonl

    now = time.time() if now is None else now
    rows = []
    for r in runs:
        last = read_jsonl(r.metrics_path, last=1)
        metrics = last[-1] if last else r.final_metrics
        end = r.finished if r.finished else (now if r.status == "running" else None)
        rows.append({
            "id": r.id, "implementation": r.name, "preset": r.preset or MISSING, "status": r.shown_status,
            "started": time.strftime("%Y-%m-%d %H:%M", time.localtime(r.started)) if r.started else MISSING,
            "duration": duration_text(end - r.started) if r.started and end else MISSING,
            "steps": f"{int(metrics.get('step', 0))} / {r.config.get('steps', MISSING)}",
            "model": MODEL_LABELS.get(r.model, r.model),
            "reward_mean": _number(metrics.get("reward_mean")), "accuracy": _number(metrics.get("accuracy")),
            "error": r.error or "",
        })
    return pd.DataFrame(rows, columns=["id", "implementation", "preset", "status", "started", "duration", "steps",
                                       "model", "reward_mean", "accuracy", "error"])


def comparison(runs: Sequence, chosen: Collection[str], metric: str) -> tuple[pd.DataFrame, list[str]]:
    """(``metric`` by step of the chosen runs that logged it, long: columns step, value, run (``run_label``);
    the chosen runs without it, each with why: no RL step yet, or it does not log that metric)."""
    from reference_impls.rundir import read_jsonl

    frames, missing = [], []
    for r in runs:
        if r.id not in chosen:
            continue
        rows = [m for m in read_jsonl(r.metrics_path) if metric in m and "step" in m]
        if rows:
            frames.append(pd.DataFrame({"step": [m["step"] for m in rows], "value": [m[metric] for m in rows],
                                        "run": run_label(r)}))
        elif read_jsonl(r.metrics_path, last=1):
            missing.append(f"{run_label(r)}: does not log {metric}")
        else:
            missing.append(f"{run_label(r)}: no RL step yet ({r.shown_status})")
    curves = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["step", "value", "run"])
    return curves, missing


def axis_domain(values: Sequence[float]) -> tuple[float, float]:
    """The value axis of a chart: the values' range with 5 % room each side; a single value (one step, or a
    constant such as a KL of 0) gets room around it, so the axis reads the value instead of 0-1."""
    finite = [float(v) for v in values if v is not None and pd.notna(v)]
    if not finite:
        return 0.0, 1.0
    lo, hi = min(finite), max(finite)
    if hi == lo:
        pad = abs(lo) * 0.1 or 1.0
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.05
    return lo - pad, hi + pad


def metric_chart(curves: pd.DataFrame, metric: str, color: str | None = None, height: int = 160):
    """An Altair line chart of ``curves`` (columns step, value and, with ``color``, the series column shown in a
    legend): whole-number steps, the value axis fitted to the values (``axis_domain``), formatted with
    ``VALUE_FORMAT``, points drawn when there are few steps (a one-step run shows its point)."""
    import altair as alt

    steps = curves["step"].astype(float) if len(curves) else pd.Series([1.0])
    first, last = float(steps.min()), float(steps.max())
    x_domain = (first - 0.5, last + 0.5) if first == last else (first, last)
    encoding = {
        # padding (pixels): the first and last points are drawn whole, not cut by the plot's edge
        "x": alt.X("step:Q", title="step", scale=alt.Scale(domain=list(x_domain), nice=False, padding=8),
                   axis=alt.Axis(format="d", tickMinStep=1)),
        "y": alt.Y("value:Q", title=metric, scale=alt.Scale(domain=list(axis_domain(curves["value"])), nice=False,
                                                           zero=False),
                   axis=alt.Axis(format=VALUE_FORMAT)),
        "tooltip": [alt.Tooltip("step:Q", format="d"), alt.Tooltip("value:Q", title=metric, format=VALUE_FORMAT)],
    }
    if color:
        encoding["color"] = alt.Color(f"{color}:N", title=None, legend=alt.Legend(orient="bottom", labelLimit=400))
        encoding["tooltip"].append(alt.Tooltip(f"{color}:N"))
    few = curves["step"].nunique() <= 30 if len(curves) else True
    return alt.Chart(curves).mark_line(point=few, clip=True).encode(**encoding).properties(height=height)


def curve_frame(metrics: Sequence[dict], name: str) -> pd.DataFrame:
    """One metric of a run's metric lines as columns step, value (lines without it left out)."""
    rows = [(m["step"], m[name]) for m in metrics if name in m and "step" in m]
    return pd.DataFrame(rows, columns=["step", "value"])


def metrics_csv(runs: Sequence) -> str:
    """All metrics of ``runs`` as one CSV (a run column first)."""
    import csv
    import io

    rows = [{"run": r.id, **m} for r in runs for m in r.files.metrics()]
    fields = ["run"] + sorted({k for row in rows for k in row if k != "run"}, key=lambda k: (k != "step", k))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()

"""The Runs page's data, computed without Streamlit: the run history as a table and one metric of chosen runs
as curves side by side (read from each run's metrics file).

    st.dataframe(runs_frame(runs))
    st.line_chart(metric_frame(runs, ["r1", "r2"], "reward_mean"))
"""
from __future__ import annotations

from collections.abc import Collection, Sequence

import pandas as pd

#: the metrics a run's curves can be compared on
METRICS = ("reward_mean", "accuracy", "loss", "kl", "clip_frac", "entropy", "grad_norm", "tokens_per_s")


def runs_frame(runs: Sequence) -> pd.DataFrame:
    """One row per run: status, implementation, environment, model, steps, final reward and accuracy, error."""
    return pd.DataFrame([{
        "id": r.id, "status": r.status, "algorithm": r.implementation, "env": r.env, "model": r.model,
        "steps": r.config.get("steps"), "reward_mean": r.final_metrics.get("reward_mean"),
        "accuracy": r.final_metrics.get("accuracy"), "error": r.error or "",
    } for r in runs])


def metric_frame(runs: Sequence, chosen: Collection[str], metric: str) -> pd.DataFrame:
    """``metric`` by step, one column per chosen run that logged it (empty when none did)."""
    from lab.runs import read_jsonl

    series = {}
    for r in runs:
        if r.id in chosen:
            rows = read_jsonl(r.metrics_path)
            if rows and metric in rows[0]:
                series[r.id] = pd.Series([m[metric] for m in rows], index=[m["step"] for m in rows])
    return pd.DataFrame(series)

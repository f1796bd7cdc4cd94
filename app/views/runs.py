"""Runs: history, overlay of several runs' curves, metrics as CSV, delete with confirmation."""
import pandas as pd
import streamlit as st

from app import routes, ui
from app.state import run_manager
from lab.runs import metrics_csv, read_jsonl

st.title("Runs")
manager = run_manager()
runs = manager.refresh()
if not runs:
    st.info("No runs yet. Start one in the Lab.")
    st.stop()

table = pd.DataFrame([{
    "id": r.id, "status": r.status, "algorithm": r.implementation, "env": r.env, "model": r.model,
    "steps": r.config.get("steps"), "reward_mean": r.final_metrics.get("reward_mean"),
    "accuracy": r.final_metrics.get("accuracy"), "error": r.error or "",
} for r in runs])
st.dataframe(table, hide_index=True, width="stretch")
st.caption(f"TensorBoard: `tensorboard --logdir {manager.root}`")

chosen = st.multiselect("Compare runs", [r.id for r in runs], default=[r.id for r in runs[:2]])
metric = st.selectbox("Metric", ["reward_mean", "accuracy", "loss", "kl", "clip_frac", "entropy", "grad_norm", "tokens_per_s"])
if chosen:
    series = {}
    for r in runs:
        if r.id in chosen:
            rows = read_jsonl(r.metrics_path)
            if rows and metric in rows[0]:
                series[r.id] = pd.Series([m[metric] for m in rows], index=[m["step"] for m in rows])
    if series:
        st.line_chart(pd.DataFrame(series), height=280, x_label="step", y_label=metric)
    st.download_button("Metrics of the chosen runs (CSV)", metrics_csv([r for r in runs if r.id in chosen]),
                       file_name="metrics.csv", mime="text/csv")

st.subheader("Export for a cluster")
st.caption("A folder that trains the run's recipe with TRL's GRPOTrainer on GPUs (accelerate, DeepSpeed notes, "
           "vLLM notes), starting from the run's latest checkpoint. GRPO-family runs only.")
to_export = st.selectbox("Run to export", [r.id for r in runs], index=None, placeholder="Choose a run ...")
if to_export:
    from reference_impls.export import export_archive
    from reference_impls.options import ConfigError
    from reference_impls.rundir import RunDirError

    run = next(r for r in runs if r.id == to_export)
    try:
        archive = export_archive(run.files.path)
    except (ConfigError, RunDirError) as err:
        st.warning(ui.md(str(err)), icon=":material/block:")
    else:
        st.download_button("Download the TRL export (zip)", archive, file_name=f"{to_export}-trl.zip",
                           mime="application/zip")

st.subheader("Delete a run")
victim = st.selectbox("Run", [r.id for r in runs], index=None, placeholder="Choose a run ...")
if victim:
    sure = st.checkbox(f"Yes, delete {ui.md(victim)} and its files")
    if st.button("Delete", disabled=not sure, type="primary"):
        manager.delete(victim)
        st.rerun()
st.subheader("Open a run in the Lab")
ui.chips([(f"{r.id} · {r.status}", routes.lab(run=r.id)) for r in runs[:20]])

"""Runs: history, overlay of several runs' curves, metrics as CSV, delete with confirmation."""
import streamlit as st

from app import routes, ui
from app.presentation.runs import METRICS, comparison, metrics_csv, run_label, runs_frame
from app.state import run_manager

st.title("Runs")
manager = run_manager()
runs = manager.refresh()
if not runs:
    st.info("No runs yet: launch one in the Lab (the quick preset shows the training loop in about a minute).")
    ui.page_link(routes.lab(), "Open the Lab", icon=":material/science:")
    st.stop()

# widths that fit the table in the content column at 1440 px; the id last (the legend and the links below
# carry it too), errors under the table (they can be long)
RUN_COLUMNS = {
    "implementation": st.column_config.TextColumn("implementation", width=140),
    "preset": st.column_config.TextColumn("preset", width=60),
    "status": st.column_config.TextColumn("status", width=65),
    "started": st.column_config.TextColumn("started", width=120),
    "duration": st.column_config.TextColumn("duration", width=80),
    "steps": st.column_config.TextColumn("steps", help="RL steps done / planned", width=60),
    "model": st.column_config.TextColumn("model", width=100, help="SmolLM2-135M: SmolLM2-135M-Instruct, the "
                                         "pretrained policy; tiny (random): a random 3M-parameter Llama"),
    "reward_mean": st.column_config.TextColumn("reward", help="mean reward of the last step", width=60),
    "accuracy": st.column_config.TextColumn("accuracy", help="accuracy of the last step", width=60),
    "id": st.column_config.TextColumn("id", width=170),
}
table = runs_frame(runs)
st.dataframe(table, hide_index=True, width="stretch", column_order=list(RUN_COLUMNS), column_config=RUN_COLUMNS)
for run_id, error in zip(table["id"], table["error"]):
    if error:
        st.caption(f"{ui.md(run_id)}: {ui.md(error)}")
st.caption(f"TensorBoard: `tensorboard --logdir {manager.root}`")

labels = {r.id: run_label(r) for r in runs}
chosen = st.multiselect("Compare runs", list(labels), default=list(labels)[:2], format_func=labels.get)
metric = st.selectbox("Metric", list(METRICS))
if chosen:
    curves, missing = comparison(runs, chosen, metric)
    if not curves.empty:
        ui.metric_chart(curves, metric, color="run", height=300)
    if missing:
        st.caption("Not drawn: " + "; ".join(ui.md(m) for m in missing))
    st.download_button("Metrics of the chosen runs (CSV)", metrics_csv([r for r in runs if r.id in chosen]),
                       file_name="metrics.csv", mime="text/csv")

st.subheader("Export for a cluster")
st.caption("A folder that trains the run's recipe with TRL's GRPOTrainer on GPUs (accelerate, DeepSpeed notes, "
           "vLLM notes), starting from the run's latest checkpoint. GRPO-family runs only.")
to_export = st.selectbox("Run to export", list(labels), index=None, format_func=labels.get,
                         placeholder="Choose a run ...")
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
victim = st.selectbox("Run", list(labels), index=None, format_func=labels.get, placeholder="Choose a run ...")
if victim:
    sure = st.checkbox(f"Yes, delete {ui.md(labels[victim])} and its files")
    if st.button("Delete", disabled=not sure, type="primary"):
        manager.delete(victim)
        st.rerun()
st.subheader("Open a run in the Lab")
ui.chips([(f"{r.name} · {r.id} · {r.shown_status}", routes.lab(run=r.id)) for r in runs[:20]])

"""Lab: pick an implementation, set its hyperparameters, launch a run, watch it learn, read its code."""
import streamlit as st

from app import ui
from app.presentation.common import first_param
from app.presentation.docs import link_doc_paths
from app.presentation import learning
from app.presentation.lab import (equation_lines, form_error_summary, health_lines, run_caption, run_stage,
                                  transcript_html)
from app.presentation.runs import curve_frame
from app.state import run_manager
from lab import catalog as lab
from lab.recipes import note as preset_note
from reference_impls.rundir import read_jsonl

CURVES = ("reward_mean", "accuracy", "kl", "clip_frac", "entropy", "tokens_per_s")
p = ui.params()
impls = lab.available()
by_id = {i.id: i for i in impls}


def linked_run(run_id: str):
    """The run a ``/lab?run=ID`` link shows (None: no such run), so the form opens on its implementation and preset."""
    try:
        return run_manager().get(run_id) if run_id else None
    except (KeyError, ValueError):
        return None


st.title("Lab")
st.caption("Train a reference implementation on this machine's CPU. Runs are separate processes: "
           "closing the page does not stop them, and a crashing run cannot take the app down.")

opened_run = linked_run(first_param(p, "run", ""))
wanted = first_param(p, "impl", "") or (opened_run and opened_run.impl_id) or impls[0].id
if wanted not in by_id:
    st.warning(f"No runnable implementation '{ui.md(wanted[:200])}'.")
    wanted = impls[0].id
impl_id = st.selectbox("Implementation", list(by_id), index=list(by_id).index(wanted),
                       format_func=lambda i: by_id[i].title)
impl = by_id[impl_id]
wanted_preset = first_param(p, "preset", "") or (opened_run and opened_run.preset) or lab.default_preset(impl)
preset = st.radio("Preset", list(lab.PRESETS), format_func=lambda k: lab.PRESETS[k]["label"], horizontal=True,
                  index=list(lab.PRESETS).index(wanted_preset) if wanted_preset in lab.PRESETS else 0)
st.caption(link_doc_paths(preset_note(preset, impl.env)))
band = learning.measured_band(impl.env) if preset == "learn" else None
if band:  # what to expect before launch: the measured seeds' band and the control's, and the time
    st.caption(ui.md(band["text"] + " " + band["time_text"]))
    st.vega_lite_chart(learning.measured_curve_spec(impl.env, band), width="stretch")
st.markdown(link_doc_paths(impl.summary))

defaults = lab.preset_config(impl, preset)
errors = st.session_state.get("lab_errors", {}) if st.session_state.get("lab_errors_for") == (impl_id, preset) else {}


def field(spec, value, error_key: str | None = None):
    """One input, from the option's type, choices and help (its typed config field)."""
    key = f"hp-{impl_id}-{preset}-{error_key or spec.name}"
    if spec.kind == "bool":
        out = st.checkbox(spec.name, value=bool(value), help=spec.help, key=key)
    elif spec.kind == "choice":
        out = st.selectbox(spec.name, spec.choices, index=spec.choices.index(value) if value in spec.choices else 0,
                           help=spec.help, key=key)
    elif spec.kind == "int":
        out = st.number_input(spec.name, value=int(value), step=1, help=spec.help, key=key)
    elif spec.kind == "float":
        out = st.number_input(spec.name, value=float(value), format="%g", help=spec.help, key=key)
    elif spec.kind in ("ints", "texts") and spec.choices:
        out = st.multiselect(spec.name, list(spec.choices), default=[v for v in value if v in spec.choices],
                             help=spec.help, key=key)
    elif spec.kind in ("ints", "texts"):
        out = st.text_input(spec.name, value=",".join(map(str, value)), help=spec.help, key=key)
    else:
        out = st.text_input(spec.name, value=str(value), help=spec.help, key=key)
    if (error_key or spec.name) in errors:
        st.error(errors[error_key or spec.name], icon=":material/error:")
    return out


with st.expander("Hyperparameters", expanded=bool(errors)):
    config = {"algo": impl.algo, "env": impl.env}
    config["model"] = st.selectbox("model", ["tiny", "smollm2-135m-instruct"],
                                   index=["tiny", "smollm2-135m-instruct"].index(defaults["model"]),
                                   help="tiny: random 3M-parameter Llama for a quick look at the machinery; "
                                        "smollm2-135m-instruct: the real pretrained policy.", key=f"hp-{impl_id}-{preset}-model")
    if "model" in errors:
        st.error(errors["model"])
    left, right = st.columns(2)
    with left:
        st.markdown("**Training**")
        for spec in lab.train_fields():
            config[spec.name] = field(spec, defaults[spec.name])
    with right:
        st.markdown(f"**{impl.algo.upper()} switches**")
        for spec in lab.algo_fields(impl):
            config[spec.name] = field(spec, defaults.get(spec.name))
        st.markdown(f"**Environment: {impl.env}**")
        config["env_options"] = {spec.name: field(spec, defaults["env_options"].get(spec.name, spec.default),
                                                  f"env_options.{spec.name}")
                                 for spec in lab.env_fields(impl)}

config.update({k: defaults[k] for k in lab.HIDDEN_KEYS if defaults.get(k)})
if st.button("Launch", type="primary", icon=":material/play_arrow:"):
    checked = lab.check(impl, config)  # the one validation: the resolved config goes to the run as it is
    st.session_state["lab_errors"], st.session_state["lab_errors_for"] = checked.errors, (impl_id, preset)
    if checked.errors:
        st.rerun()
    run = run_manager().submit(checked.resolved, impl_id=impl_id, preset=preset)
    ui.set_params({"impl": impl_id, "preset": preset, "run": run.id})
    st.rerun()
if errors:
    shown = {"model", *(s.name for s in lab.train_fields()), *(s.name for s in lab.algo_fields(impl)),
             *(f"env_options.{s.name}" for s in lab.env_fields(impl))}
    st.error(ui.md(form_error_summary(errors, shown)), icon=":material/error:")

run_id = first_param(p, "run", "")


def stop_run(run_id: str) -> None:
    run_manager().stop(run_id)  # recorded at once: the fragment's rerun after the click shows "stopping"


def resume_run(run_id: str) -> None:
    run_manager().resume(run_id)


def live_run(run_id: str, was_live: bool) -> None:
    """The run's status, stage, buttons, curves, transcripts and log: the part that changes while it runs
    (a fragment refreshed every 2 s while the run is queued or running, so the rest of the page stays put)."""
    manager = run_manager()
    manager.refresh()
    run = manager.get(run_id)
    if was_live != (run.status in ("running", "queued")):
        st.rerun()  # the run ended (or was resumed): draw the page again, without (with) the refresh
    metrics = read_jsonl(run.metrics_path)
    status = run.files.read_status()
    warm = run.files.warm_start()
    stage = run_stage(run, metrics, status, warm)
    st.caption(run_caption(run, status))
    st.progress(min(max(stage.fraction, 0.0), 1.0), text=stage.text)
    if run.shown_status == "stopping":
        st.caption("Stop asked for: during RL the trainer ends after its current step and writes a checkpoint; "
                   "before the first RL step (model load, warm start) it is ended within seconds.")
    b1, b2, _ = st.columns([1, 1, 4])
    if run.status in ("running", "queued"):
        b1.button("Stop", icon=":material/stop:", key=f"stop-{run.id}", on_click=stop_run, args=(run.id,),
                  disabled=run.stop_requested)
    if run.status in ("stopped", "failed"):
        b2.button("Resume", icon=":material/replay:", key=f"resume-{run.id}", on_click=resume_run, args=(run.id,))
    for line in health_lines(read_jsonl(run.files.health_path)):
        st.warning(line, icon=":material/monitor_heart:")
    live_band = learning.measured_band(run.env) if run.preset == "learn" else None
    if live_band and metrics:
        rewards = [m.get("reward_mean") for m in metrics]
        st.vega_lite_chart(learning.measured_curve_spec(run.env, live_band, live_rewards=rewards), width="stretch")
        st.caption(ui.md(learning.band_check(rewards, live_band)["text"]))
    if warm:
        st.markdown("**warm start: SFT loss**")
        ui.metric_chart(curve_frame(warm, "loss"), "sft_loss", height=120)
    shown = [name for name in CURVES if any(name in m for m in metrics)]
    for row in range(0, len(shown), 2):
        for column, name in zip(st.columns(2), shown[row:row + 2]):
            with column:
                st.markdown(f"**{name}**")
                ui.metric_chart(curve_frame(metrics, name), name)
    st.subheader("Transcripts")
    samples = read_jsonl(run.samples_path, last=4)
    if not samples:
        st.caption("None yet: the first come with the first RL step.")
    else:
        st.caption("Blue: the task the environment poses. Yellow: the environment's observations (tool results; "
                   "masked from the loss). Grey edge: the model's text (trained on).")
    for s in reversed(samples):
        st.markdown(f"step {ui.md(s.get('step'))} · reward **{ui.md(s.get('reward'))}** · turns {ui.md(s.get('turns'))}")
        st.html(transcript_html(s.get("segments", [])))
    with st.expander("Log"):
        try:
            st.code(run.log_path.read_text()[-4000:] or "(empty)")
        except OSError:
            st.caption("No log yet.")


if run_id:
    try:
        shown_run = run_manager().get(run_id)
    except (KeyError, ValueError):  # unknown, or not a valid run id at all
        st.warning(f"No run '{ui.md(run_id[:200])}'.")
    else:
        ui.hide_rerun_indicator()
        shown_impl = by_id.get(shown_run.impl_id) or next(
            (i for i in impls if (i.algo, i.env) == (shown_run.implementation, shown_run.env)), impl)
        st.subheader(f"Run {ui.md(shown_run.id)}: {ui.md(shown_run.name)}")
        st.markdown("**Loss**")
        ui.equations(equation_lines(lab.equation(shown_impl)))
        with st.expander(f"Source: reference_impls/{shown_impl.source}", expanded=False):
            st.code(lab.source_path(shown_impl).read_text(), language="python", line_numbers=True)
        live = shown_run.status in ("running", "queued")
        st.fragment(live_run, run_every=2.0 if live else None)(run_id, live)

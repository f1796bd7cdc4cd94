"""Lab: pick an implementation, set its hyperparameters, launch a run, watch it learn, read its code."""
import pandas as pd
import streamlit as st

from app import ui
from app.presentation.common import first_param
from app.presentation.lab import transcript_html, run_caption
from app.state import run_manager
from lab import catalog as lab
from lab.runs import progress, read_jsonl, warm_start_progress

CURVES = ("reward_mean", "accuracy", "kl", "clip_frac", "entropy", "tokens_per_s")
p = ui.params()
impls = lab.available()
by_id = {i.id: i for i in impls}

st.title("Lab")
st.caption("Train a reference implementation on this machine's CPU. Runs are separate processes: "
           "closing the page does not stop them, and a crashing run cannot take the app down.")

wanted = first_param(p, "impl", impls[0].id)
if wanted not in by_id:
    st.warning(f"No runnable implementation '{ui.md(wanted[:200])}'.")
    wanted = impls[0].id
impl_id = st.selectbox("Implementation", list(by_id), index=list(by_id).index(wanted),
                       format_func=lambda i: by_id[i].title)
impl = by_id[impl_id]
wanted_preset = first_param(p, "preset", lab.default_preset(impl))
preset = st.radio("Preset", list(lab.PRESETS), format_func=lambda k: lab.PRESETS[k]["label"], horizontal=True,
                  index=list(lab.PRESETS).index(wanted_preset) if wanted_preset in lab.PRESETS else 0)
st.caption(lab.PRESETS[preset]["note"])
st.markdown(impl.summary)

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
    problems = lab.validate(impl, config)
    st.session_state["lab_errors"], st.session_state["lab_errors_for"] = problems, (impl_id, preset)
    if problems:
        st.rerun()
    run = run_manager().submit(config)
    ui.set_params({"impl": impl_id, "preset": preset, "run": run.id})
    st.rerun()
if errors:
    st.error(f"Fix {len(errors)} hyperparameter{'s' if len(errors) > 1 else ''} before launching: "
             + ", ".join(errors), icon=":material/error:")

run_id = first_param(p, "run", "")


@st.fragment(run_every=2.0)
def live_run(run_id: str) -> None:
    manager = run_manager()
    manager.refresh()
    try:
        run = manager.get(run_id)
    except (KeyError, ValueError):  # unknown, or not a valid run id at all
        st.warning(f"No run '{ui.md(run_id[:200])}'.")
        return
    metrics = read_jsonl(run.metrics_path)
    done, total, eta = progress(run, metrics)
    shown_impl = impl if (impl.algo, impl.env) == (run.implementation, run.env) else next(
        (i for i in impls if (i.algo, i.env) == (run.implementation, run.env)), impl)
    st.subheader(f"Run {ui.md(run.id)}")
    st.caption(run_caption(run, run.files.read_status()))
    eta_text = f" · about {eta / 60:.1f} min left" if eta and run.status == "running" else ""
    warm = warm_start_progress(run)
    if warm and not metrics:
        st.progress(warm["step"] / warm["steps"], text=f"warm start (SFT on demonstrations): step {warm['step']}/"
                    f"{warm['steps']} · loss {warm['losses'][-1]:.3f}" + (" · RL starting ..." if warm["done"] else ""))
    else:
        st.progress(done / total if total else 0.0, text=f"RL step {done}/{total}{eta_text}")
    b1, b2, _ = st.columns([1, 1, 4])
    if run.status in ("running", "queued") and b1.button("Stop", icon=":material/stop:", key=f"stop-{run.id}"):
        manager.stop(run.id)
    if run.status in ("stopped", "failed") and b2.button("Resume", icon=":material/replay:", key=f"resume-{run.id}"):
        manager.resume(run.id)
    curves, code = st.columns([3, 2])
    with curves:
        if warm:
            st.markdown("**warm start: SFT loss**")
            st.line_chart(pd.DataFrame({"sft_loss": warm["losses"]}, index=range(1, len(warm["losses"]) + 1)),
                          height=120)
        if metrics:
            frame = pd.DataFrame(metrics).set_index("step")
            shown = [c for c in CURVES if c in frame.columns]
            for name in shown:
                st.markdown(f"**{name}**")
                st.line_chart(frame[[name]], height=160)
        else:
            st.info("Waiting for the first step ...")
    with code:
        st.markdown("**Loss**")
        st.latex(lab.equation(shown_impl))
        with st.expander(f"Source: reference_impls/{shown_impl.source}", expanded=False):
            st.code(lab.source_path(shown_impl).read_text(), language="python", line_numbers=True)
    st.subheader("Transcripts")
    samples = read_jsonl(run.samples_path, last=4)
    if not samples:
        st.caption("None yet.")
    for s in reversed(samples):
        st.markdown(f"step {ui.md(s.get('step'))} · reward **{ui.md(s.get('reward'))}** · turns {ui.md(s.get('turns'))}")
        st.markdown(transcript_html(s.get("segments", [])), unsafe_allow_html=True)
    st.caption("Yellow: tool/environment tokens (loss mask 0). Plain: tokens the model wrote (trained on).")
    with st.expander("Log"):
        try:
            st.code(run.log_path.read_text()[-4000:] or "(empty)")
        except OSError:
            st.caption("No log yet.")


if run_id:
    live_run(run_id)

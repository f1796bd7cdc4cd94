"""The Lab page's data, computed without Streamlit, and the links into it: "Run this" for an implementation
(its default preset), the Lab link of a node, where the form's errors go (by each ``ConfigError``'s field),
a run's stage and progress from its files (the progress bar's text), and a training transcript as HTML with
the environment's tokens marked.

    run_link(impl).url                             # "lab?impl=calculator-grpo&preset=learn"
    stage = run_stage(run); st.progress(stage.fraction, text=stage.text)
"""
from __future__ import annotations

import html
from dataclasses import dataclass

from app import routes
from app.presentation.common import md_escape
from app.presentation.docs import link_doc_paths


def run_link(impl) -> routes.Link:
    """The Lab page of ``impl`` with the preset "Run this" opens (lab.catalog.default_preset)."""
    from lab.catalog import default_preset

    return routes.lab(impl=impl.id, preset=default_preset(impl))


def lab_link(node_id: str) -> routes.Link | None:
    """The Lab page of the node's first reference implementation that trains (its default preset), or None."""
    from lab.catalog import for_node

    impls = [impl for impl in for_node(node_id) if impl.trains]  # the Lab only trains
    return run_link(impls[0]) if impls else None


def form_error_summary(errors: dict[str, str], shown: set[str]) -> str:
    """The line above the Launch button when the form has errors (``lab.catalog.check``: field -> message, the
    field being each ``ConfigError``'s): the fields to fix, whose messages stand beside them, then the
    message of each error that no shown field can carry (an option the form does not show, or none)."""
    placed = [name for name in errors if name in shown]
    unplaced = [f"{name}: {message}" if name != "config" else message
                for name, message in errors.items() if name not in shown]
    count = len(errors)
    head = f"Fix {count} hyperparameter{'s' if count > 1 else ''} before launching"
    return head + (": " + ", ".join(placed) if placed else "") + "".join(f". {m}" for m in unplaced)


#: how each role of a transcript's segments is shown: (label, CSS of its block); the model's text stays plain
SEGMENT_STYLES = {
    "prompt": ("task", "background:#e0f2fe;border-left:3px solid #0284c7"),
    "env": ("environment", "background:#fef3c7;border-left:3px solid #d97706"),
    "model": ("model", "border-left:3px solid #9ca3af"),
}


def transcript_html(segments: list[dict]) -> str:
    """A sampled episode's segments as one ``<div>``: the task (the prompt the environment posed), the
    environment's observations (tool results, masked from the loss) and the model's text, each in a block
    labelled with its role and styled apart; every text HTML-escaped, segments of any other role left out."""
    parts = []
    for seg in segments:
        role = seg.get("role")
        if role not in SEGMENT_STYLES:
            continue
        label, style = SEGMENT_STYLES[role]
        text = html.escape(str(seg.get("text", "")))
        parts.append(f"<div style='{style};padding:2px 6px;margin:2px 0'><small style='opacity:.7'>{label}</small>"
                     f"<pre style='white-space:pre-wrap;margin:0;background:none'>{text}</pre></div>")
    return "<div>" + "".join(parts) + "</div>"


def run_caption(run, status: dict) -> str:
    """The line under a run's title: its implementation (``Run.name``), model, preset, status ("stopping" once
    a stop is asked for), the code sandbox's layer when the run's environment executes model code
    (``sandbox_layer`` in status.json), and the error if any."""
    layer = status.get("sandbox_layer")
    preset = f" · preset {md_escape(run.preset)}" if run.preset else ""
    return (f"{md_escape(run.name)} · {md_escape(run.model)}{preset} · status **{md_escape(run.shown_status)}**"
            + (f" · code sandbox: {md_escape(layer)} ({link_doc_paths('docs/security.md')})" if layer else "")
            + (f" · {md_escape(run.error)}" if run.error else ""))


def equation_lines(latex: str) -> list[str]:
    """A loss's LaTeX split at its top-level ``\\quad`` separators (outside braces and ``\\left``/``\\right``),
    one formula per line, so a long objective wraps instead of running out of its column."""
    lines, depth, start, i = [], 0, 0, 0
    while i < len(latex):
        if latex[i] == "\\":
            word = latex[i + 1:i + 6]
            if word.startswith("left") and not word.startswith("leftarrow"):
                depth += 1
            elif word.startswith("right") and not word.startswith("rightarrow"):
                depth -= 1
            elif word.startswith("quad") and not word.startswith("quadr") and depth == 0:
                lines.append(latex[start:i])
                start = i + 5
            i += 2
            continue
        depth += {"{": 1, "}": -1}.get(latex[i], 0)
        i += 1
    lines.append(latex[start:])
    return [line.strip().rstrip(",").rstrip("\\ ").strip() for line in lines if line.strip().strip(",")]


# -- a run's progress, for the Lab's progress bar (from the run's files; tolerant of a line being written) --
def progress(run, metrics: list[dict]) -> tuple[int, int, float | None]:
    """(steps done, total steps, ETA in seconds or None) from the metrics written so far."""
    total = int(run.config.get("steps", 0))
    if not metrics:
        return 0, total, None
    done = int(metrics[-1].get("step", len(metrics)))
    first = metrics[0]
    steps_timed = done - int(first.get("step", 1)) + 1
    wall = float(metrics[-1].get("wall_s", 0.0)) - float(first.get("wall_s", 0.0)) + float(first.get("step_s", 0.0))
    per_step = wall / steps_timed if steps_timed > 0 and wall > 0 else None
    eta = per_step * max(0, total - done) if per_step else None
    return done, total, eta


def warm_start_progress(run) -> dict | None:
    """The SFT warm start's progress (``--sft-steps``), or None when the run has none (yet)."""
    rows = run.files.warm_start()
    if not rows:
        return None
    last = rows[-1]
    return {"step": int(last["step"]), "steps": int(last["steps"]), "losses": [r["loss"] for r in rows],
            "done": int(last["step"]) >= int(last["steps"])}


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


@dataclass(frozen=True)
class Stage:
    """Where a run is, for the Lab's progress bar: ``kind`` is one of queued, converting, loading, warm-start,
    rl, ended; ``text`` says it with its counts; ``fraction`` is how far the stage is (0-1); ``eta_s`` is
    the time left, from the step times measured so far (None before one step of the stage has ended)."""

    kind: str
    text: str
    fraction: float
    eta_s: float | None = None


def converted_model_missing(model: str) -> bool:
    """Whether loading ``model`` starts by converting it (SmolLM2's first load: reference_impls.models)."""
    from reference_impls import models

    return model == "smollm2-135m-instruct" and not (models.models_dir() / model / "config.json").exists()


def run_stage(run, metrics: list[dict] | None = None, status: dict | None = None,
              warm: list[dict] | None = None) -> Stage:
    """The stage of ``run`` from its files: the trainer's status.json (written from the warm start on), the
    warm start's and the RL steps' lines. A running run whose trainer has written nothing since the run
    (re)started is loading its model, or converting it on SmolLM2's first use."""
    metrics = run.files.metrics() if metrics is None else metrics
    status = run.files.read_status() if status is None else status
    warm = run.files.warm_start() if warm is None else warm
    done, total, eta = progress(run, metrics)
    rl_text = f"RL step {done}/{total}"
    if run.status == "queued":
        return Stage("queued", "queued: starts when the running run ends", 0.0)
    if run.status != "running":
        return Stage("ended", f"{rl_text} · {run.status}", done / total if total else 0.0)
    fresh = float(status.get("updated", 0.0)) >= float(run.started or 0.0)
    if metrics and fresh:
        left = f" · about {_minutes(eta)} left (measured step times)" if eta is not None else ""
        running = f" · step {done + 1} running" if done < total else ""
        return Stage("rl", rl_text + running + left, done / total if total else 0.0, eta)
    steps = int(status.get("sft_steps") or (warm[-1]["steps"] if warm else 0)) or 1
    step = int(warm[-1]["step"]) if warm else 0
    if fresh and status.get("phase") == "warm-start" and step < steps:
        if step == 0:
            return Stage("warm-start", f"warm start (SFT on demonstrations): step 1/{steps} running", 0.0)
        # from the second step on, the rate between steps: the first step's time includes building the
        # demonstrations
        first = warm[0]
        timed = step - int(first["step"])
        per_step = ((float(warm[-1].get("wall_s", 0.0)) - float(first.get("wall_s", 0.0))) / timed if timed > 0
                    else float(warm[-1].get("wall_s", 0.0)) / step)
        eta_warm = per_step * (steps - step) if per_step > 0 else None
        left = f" · about {_minutes(eta_warm)} left in the warm start" if eta_warm else ""
        return Stage("warm-start", f"warm start (SFT on demonstrations): step {step}/{steps} done · loss "
                     f"{float(warm[-1]['loss']):.3f}" + left, step / steps, eta_warm)
    if fresh:  # the trainer is in RL before its first step's line (or between the warm start and RL)
        return Stage("rl", ("warm start done · " if warm else "") + f"{rl_text} · step {done + 1} running (time "
                     "left known after it)", 0.0)
    if converted_model_missing(run.model):
        return Stage("converting", "converting the model: SmolLM2's GGUF file into a PyTorch model (first "
                     "SmolLM2 run only)", 0.0)
    return Stage("loading", f"starting: loading the model ({run.model}) and preparing the run", 0.0)


def health_lines(rows: list[dict]) -> list[str]:
    """A run's training-health warnings (its ``health.jsonl`` rows, ``reference_impls.health``), one Markdown line
    each: the step, what was seen, what it means and what to try. Every text is escaped (a run folder is data)."""
    lines = []
    for r in rows:
        if not isinstance(r, dict):
            continue
        lines.append(f"**Step {md_escape(r.get('step'))}: {md_escape(r.get('title', ''))}** "
                     f"({md_escape(r.get('seen', ''))}). {md_escape(r.get('means', ''))} "
                     f"Try: {md_escape(r.get('action', ''))}")
    return lines

"""The Lab page's data, computed without Streamlit, and the links into it: "Run this" for an implementation
(its default preset), the Lab link of a node, and a training transcript as HTML with the environment's
tokens marked.

    run_link(impl).url                             # "lab?impl=calculator-grpo&preset=learn"
"""
from __future__ import annotations

import html

from app import routes
from app.presentation.common import md_escape
from app.presentation.docs import link_doc_paths


def run_link(impl) -> routes.Link:
    """The Lab page of ``impl`` with the preset "Run this" opens (lab.catalog.default_preset)."""
    from lab.catalog import default_preset

    return routes.lab(impl=impl.id, preset=default_preset(impl))


def lab_link(node_id: str) -> routes.Link | None:
    """The Lab page of the node's first reference implementation (its default preset), or None."""
    from lab.catalog import for_node

    impls = for_node(node_id)
    return run_link(impls[0]) if impls else None


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

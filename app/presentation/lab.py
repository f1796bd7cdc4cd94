"""The Lab page's data, computed without Streamlit, and the links into it: "Run this" for an implementation
(its default preset), the Lab link of a node, and a training transcript as HTML with the environment's
tokens marked.

    run_link(impl).url                             # "lab?impl=calculator-grpo&preset=learn"
"""
from __future__ import annotations

import html

from app import routes
from app.presentation.common import md_escape


def run_link(impl) -> routes.Link:
    """The Lab page of ``impl`` with the preset "Run this" opens (lab.catalog.default_preset)."""
    from lab.catalog import default_preset

    return routes.lab(impl=impl.id, preset=default_preset(impl))


def lab_link(node_id: str) -> routes.Link | None:
    """The Lab page of the node's first reference implementation (its default preset), or None."""
    from lab.catalog import for_node

    impls = for_node(node_id)
    return run_link(impls[0]) if impls else None


def transcript_html(segments: list[dict]) -> str:
    """A sampled episode's segments as one ``<pre>`` block: the model's text plain, the environment's
    (masked from the loss) on yellow; every text HTML-escaped, segments of any other role left out."""
    parts = []
    for seg in segments:
        text = html.escape(str(seg.get("text", "")))
        if seg.get("role") == "model":
            parts.append(f"<span>{text}</span>")
        elif seg.get("role") == "env":
            parts.append(f"<span style='background:#fde68a' title='environment tokens: masked from the loss'>{text}</span>")
    return "<pre style='white-space:pre-wrap'>" + "".join(parts) + "</pre>"


def run_caption(run, status: dict) -> str:
    """The line under a run's title: implementation, environment, model, status, the code sandbox's layer when
    the run's environment executes model code (``sandbox_layer`` in status.json), and the error if any."""
    layer = status.get("sandbox_layer")
    return (f"{md_escape(run.implementation)} on {md_escape(run.env)} · {md_escape(run.model)} · status "
            f"**{md_escape(run.status)}**" + (f" · code sandbox: {md_escape(layer)} (docs/security.md)" if layer else "")
            + (f" · {md_escape(run.error)}" if run.error else ""))

"""The links into the Lab page, computed without Streamlit: "Run this" for an implementation (its default
preset) and the Lab link of a node.

    run_link(impl).url                             # "lab?impl=calculator-grpo&preset=learn"
"""
from __future__ import annotations

from app import routes


def run_link(impl) -> routes.Link:
    """The Lab page of ``impl`` with the preset "Run this" opens (lab.catalog.default_preset)."""
    from lab.catalog import default_preset

    return routes.lab(impl=impl.id, preset=default_preset(impl))


def lab_link(node_id: str) -> routes.Link | None:
    """The Lab page of the node's first reference implementation (its default preset), or None."""
    from lab.catalog import for_node

    impls = for_node(node_id)
    return run_link(impls[0]) if impls else None


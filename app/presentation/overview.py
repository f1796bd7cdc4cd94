"""The Overview page's data, computed without Streamlit: the survey's two formalisms and Table 1, the
catalog's counts, the capability x task heat map (with the works behind each cell, and the methods an
inferred axis adds) and works per year.

    heat = heatmap(cat)                            # capability x task counts + index -> cell
    works = cell_works(cat, "memory", "search-research")
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

import pandas as pd

from app.presentation.common import (DIMENSION_COLORS, DIMENSION_LABELS, DIMENSIONS, INFERRED_MIN_CONFIDENCE,
                                     TABLE2, ChartView, sort_works, tooltip)
from papers.catalog import Catalog
from papers.schema import Work

# The two formalisms of the survey's Section 2, in its notation (rendered with st.latex).
FORMULAS = {
    "pbrft_mdp": r"\langle \mathcal{S}_{\text{trad}}, \mathcal{A}_{\text{trad}}, \mathcal{P}_{\text{trad}},"
                 r" R_{\text{trad}}, T = 1 \rangle",
    "pbrft_objective": r"J_{\text{trad}}(\theta) = \mathbb{E}_{a \sim \pi_\theta(\cdot \mid s_0)}\big[ r(a) \big]",
    "agentic_pomdp": r"\langle \mathcal{S}_{\text{agent}}, \mathcal{A}_{\text{agent}}, \mathcal{P}_{\text{agent}},"
                     r" R_{\text{agent}}, \gamma, \mathcal{O} \rangle",
    "agentic_observation": r"o_t = O(s_t), \qquad s_{t+1} \sim P(\cdot \mid s_t, a_t)",
    "agentic_actions": r"\mathcal{A}_{\text{agent}} = \mathcal{A}_{\text{text}} \cup \mathcal{A}_{\text{action}}",
    "agentic_objective": r"J_{\text{agent}}(\theta) = \mathbb{E}_{\tau \sim \pi_\theta}"
                         r"\Big[ \sum_{t=0}^{T-1} \gamma^{t} R_{\text{agent}}(s_t, a_t) \Big]",
}

TABLE1 = "table01_pbrft_vs_agentic_rl"


# -- the survey's Table 1 and the counts --------------------------------------------------------
def _md_cell(text: str) -> str:
    """A survey table cell as Markdown: tidy spacing, keep $...$ math, escape pipes."""
    text = " ".join(str(text).split())
    text = re.sub(r"\\text\{\s*([^{}]*?)\s*\}", r"\\text{\1}", text)
    text = re.sub(r"\s+([.;,])(\s|$)", r"\1\2", text)  # "$T > 1$ ." -> "$T > 1$."
    parts = re.split(r"(\$[^$]*\$)", text)
    out = []
    for part in parts:
        if part.startswith("$") and part.endswith("$") and len(part) > 1:
            out.append(part.replace("|", r"\vert "))
        else:
            out.append(part.replace("|", r"\|"))
    return "".join(out).strip()


def table1_markdown(catalog: Catalog) -> str:
    """The survey's Table 1 (PBRFT vs agentic RL) as a Markdown table with KaTeX math."""
    t = catalog.tables[TABLE1]
    headers = ["Concept", "Traditional PBRFT (LLM RL)", "Agentic RL"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for _, row in t.frame.iterrows():
        concept = _md_cell(row["concept"])
        concept = re.sub(r"^(\$[^$]+\$)\s*:\s*(.+)$", r"**\2** \1", concept)
        lines.append(f"| {concept} | {_md_cell(row['traditional_pbrft'])} | {_md_cell(row['agentic_rl'])} |")
    return "\n".join(lines)


def overview_counts(catalog: Catalog) -> dict[str, int]:
    works = list(catalog)
    return {
        "works": len(works),
        "methods": sum(1 for w in works if w.kind == "method"),
        "with_code": sum(1 for w in works if w.has_code),
        "nodes": len(catalog.taxonomy),
        "tables": len(catalog.tables),
        "algorithms": len(catalog.tables[TABLE2].frame) if TABLE2 in catalog.tables else 0,
    }


# -- the heat map ----------------------------------------------------------------------------
def heatmap_counts(catalog: Catalog) -> pd.DataFrame:
    """Works placed under both a capability and a task, by top-level capability x task (names as labels)."""
    counts = catalog.graph.cooccurrence("capability", "task", level=1)
    return counts


def cell_keys(catalog: Catalog, capability: str, task: str) -> set[str]:
    g = catalog.graph
    return set(g.works_of(capability)) & set(g.works_of(task))


def cell_works(catalog: Catalog, capability: str, task: str) -> list[Work]:
    """The works behind one heat-map cell (placed under both nodes or their descendants), newest first."""
    return sort_works(catalog.works[k] for k in cell_keys(catalog, capability, task))


def inferred_cell_works(catalog: Catalog, capability: str, task: str, inferred: Mapping) -> list[Work]:
    """Methods that join a cell only through an inferred axis (``inferred_cells``), newest first."""
    keys = inferred_cells(catalog, inferred).get((capability, task), set()) - cell_keys(catalog, capability, task)
    return sort_works(catalog.works[k] for k in keys)


def _head(taxonomy, node_id: str) -> str:
    """The node's first-level ancestor under its dimension's root (a heat-map row or column)."""
    path = taxonomy.path(node_id)
    return path[1] if len(path) > 1 else path[0]


def inferred_cells(catalog: Catalog, inferred: Mapping, min_confidence: float = INFERRED_MIN_CONFIDENCE
                   ) -> dict[tuple[str, str], set[str]]:
    """Heat-map cells a method joins through an inferred axis: the survey gives it one axis, the placement
    model's first choice for the other has section confidence >= ``min_confidence``. ``inferred`` is
    ``papers.axes.by_work`` of the loaded inferences. Methods with neither axis from the survey are left
    out (two guesses would make a cell of guesses only)."""
    tax = catalog.taxonomy
    cells: dict[tuple[str, str], set[str]] = {}
    for key, axes in inferred.items():
        work = catalog.works.get(key)
        if work is None:
            continue
        survey = {d: {_head(tax, n) for n in work.nodes if tax[n].dimension == d} for d in ("capability", "task")}
        for axis, ranked in axes.items():
            other = "task" if axis == "capability" else "capability"
            top = ranked[0]
            if not survey[other] or top.section_confidence < min_confidence:
                continue
            for head in survey[other]:
                cell = (top.section, head) if axis == "capability" else (head, top.section)
                cells.setdefault(cell, set()).add(key)
    return cells


def heatmap(catalog: Catalog, selected: tuple[str, str] | None = None, inferred: Mapping | None = None) -> ChartView:
    """The capability x task heat map; with ``inferred`` (``papers.axes.by_work``), each cell also counts the
    methods that join it through an inferred axis, shown as "survey+inferred" and explained in the tooltip."""
    counts = heatmap_counts(catalog)
    extra = inferred_cells(catalog, inferred) if inferred else {}
    caps, tasks = list(counts.index), list(counts.columns)
    tax = catalog.taxonomy
    data, ids = [], []
    vmax = int(counts.values.max()) if counts.size else 1
    vmax = max([vmax] + [int(counts.loc[c, t]) + len(k) for (c, t), k in extra.items()
                         if c in counts.index and t in counts.columns])
    for yi, cap in enumerate(caps):
        for xi, task in enumerate(tasks):
            v = int(counts.loc[cap, task])
            survey_keys = set(cell_keys(catalog, cap, task)) if extra.get((cap, task)) else set()
            n_inf = len(extra.get((cap, task), set()) - survey_keys)
            total = v + n_inf
            text = f"{v} work{'s' if v != 1 else ''} placed under both by the survey"
            if n_inf:
                text += f", plus {n_inf} method{'s' if n_inf != 1 else ''} with one axis inferred by the model"
            item = {
                "value": [xi, yi, total],
                "tooltip": {"formatter": tooltip(f"{tax[cap].name} × {tax[task].name}", text + " — click to list them")},
            }
            if n_inf:
                item["label"] = {"formatter": f"{v}+{n_inf}"}
            if total == 0:  # drawn as an empty cell (no label, no colour)
                item["value"] = [xi, yi, "-"]
            if selected == (cap, task):
                item["itemStyle"] = {"borderColor": "#111", "borderWidth": 3}
            data.append(item)
            ids.append((cap, task))
    spec = {
        "animation": False,
        "tooltip": {"trigger": "item", "confine": True},
        "grid": {"left": 10, "right": 10, "top": 10, "bottom": 10, "containLabel": True},
        "xAxis": {"type": "category", "data": [tax[t].name for t in tasks], "splitArea": {"show": True},
                  "axisLabel": {"interval": 0, "width": 72, "overflow": "break", "lineHeight": 13, "fontSize": 11}},
        "yAxis": {"type": "category", "data": [tax[c].name for c in caps], "inverse": True, "splitArea": {"show": True},
                  "axisLabel": {"width": 180, "overflow": "break", "lineHeight": 14}},
        "visualMap": {"min": 0, "max": max(vmax, 1), "show": False, "inRange": {"color": ["#f4f6fb", "#9ecae1", "#08519c"]}},
        "series": [{
            "type": "heatmap", "name": "works", "data": data, "selectedMode": "single",
            "label": {"show": True}, "emphasis": {"itemStyle": {"borderColor": "#333", "borderWidth": 1}},
            "select": {"itemStyle": {"borderColor": "#111", "borderWidth": 3}},
        }],
    }
    return ChartView(spec, ids, height=60 + 40 * len(caps))


# -- works per year ---------------------------------------------------------------------------
def work_dimensions(catalog: Catalog, work: Work) -> list[str]:
    tax = catalog.taxonomy
    return sorted({tax[n].dimension for n in work.nodes}, key=DIMENSIONS.index)


def works_per_year(catalog: Catalog, min_year: int | None = None) -> pd.DataFrame:
    """Works per publication year and dimension (a work placed in two dimensions counts in both).

    With ``min_year``, earlier years are pooled in one row labelled ``"before <min_year>"``.
    """
    counts: Counter[tuple[str, str]] = Counter()
    for w in catalog:
        if w.year is None:
            continue
        label = str(w.year) if min_year is None or w.year >= min_year else f"before {min_year}"
        for d in work_dimensions(catalog, w):
            counts[(label, d)] += 1
    frame = pd.DataFrame([(y, d, n) for (y, d), n in counts.items()], columns=["year", "dimension", "works"])
    if frame.empty:
        return frame
    order = sorted(frame["year"].unique(), key=lambda y: (not y.startswith("before"), y))
    table = frame.pivot_table(index="year", columns="dimension", values="works", aggfunc="sum", fill_value=0)
    table = table.reindex(index=order, columns=[d for d in DIMENSIONS if d in table.columns]).fillna(0).astype(int)
    table.index.name = "year"
    return table


def year_chart(table: pd.DataFrame) -> ChartView:
    years = list(table.index)
    series = [
        {"type": "bar", "stack": "works", "name": DIMENSION_LABELS[d], "data": [int(v) for v in table[d]],
         "itemStyle": {"color": DIMENSION_COLORS[d]}, "emphasis": {"focus": "series"}}
        for d in table.columns
    ]
    spec = {
        "animation": False,
        "tooltip": {"trigger": "axis", "axisPointer": {"type": "shadow"}},
        "legend": {"top": 0},
        "grid": {"left": 50, "right": 20, "top": 60, "bottom": 30},
        "xAxis": {"type": "category", "data": years},
        "yAxis": {"type": "value", "name": "works"},
        "series": series,
    }
    return ChartView(spec, years, height=360)

"""The explorer's presentation: everything a page shows, computed without Streamlit.

The app's pages stay thin: they read URL parameters, call these functions and hand the results
to Streamlit. Colours, chart specs and page data shaping live here, in the app (the ``papers``
package holds the catalog, not its looks); links come from ``app.routes``. Chart specs are plain
ECharts option dicts (JSON-compatible), each returned with an ``ids`` list that maps the chart's
data index back to a node id, work key or cell, so a click in the browser can be turned into a page.

    tree = dimension_tree(cat, "capability")       # a left-to-right tree + index -> node id
    graph = graph_view(cat, "task")                # ECharts graph (nodes, works, algorithms)
    heat = heatmap(cat)                            # capability x task counts + index -> cell
    state = SearchState.from_params({"q": ["memory"], "kind": ["method"]}, cat)
"""
from __future__ import annotations

import html
import math
import re
import weakref
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import pandas as pd

from app import routes
from papers.catalog import Catalog
from papers.schema import KINDS, Work
from papers.tables import SurveyTable

DIMENSIONS = ("capability", "task", "algorithm", "environment", "framework", "foundation")
DIMENSION_LABELS = {
    "capability": "Capabilities",
    "task": "Tasks",
    "algorithm": "Algorithms",
    "environment": "Environments & benchmarks",
    "framework": "Frameworks",
    "foundation": "Survey sections & open challenges",
}
DIMENSION_SHORT = {
    "capability": "Capabilities", "task": "Tasks", "algorithm": "Algorithms", "environment": "Environments",
    "framework": "Frameworks", "foundation": "Sections",
}
# one colour per dimension, used by every chart so a dimension looks the same everywhere
DIMENSION_COLORS = {
    "capability": "#4C78A8",
    "task": "#F58518",
    "algorithm": "#54A24B",
    "environment": "#B279A2",
    "framework": "#E45756",
    "foundation": "#9D9D9D",
}
WORK_COLOR = "#72B7B2"
ALGORITHM_COLOR = "#EECA3B"

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
TABLE2 = "table02_rl_algorithm_variants"


# -- small helpers ---------------------------------------------------------------------------
def _short(text: str, n: int = 180) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1].rsplit(" ", 1)[0] + " …"


def _tip(*lines: str) -> str:
    """An ECharts tooltip (HTML): the first line bold, every line escaped."""
    first, *rest = lines
    return "<br/>".join([f"<b>{html.escape(first)}</b>", *(html.escape(x) for x in rest if x)])


# characters that start Markdown (or Streamlit's :directive[...] / :icon: / $math$) syntax anywhere
_MD_ALWAYS = re.compile(r"([\\`*_{}\[\]()<>#|!$~])")
# ':' before a non-space (:icon:, :color[), a leading list/number marker
_MD_CONTEXT = re.compile(r"(:)(?=\S)|^([-+=])|^(\d+)([.)])(?=\s|$)")
# GFM turns bare URLs, www. names and e-mail addresses into links after escapes are resolved, so a
# backslash cannot stop it: an invisible WORD JOINER (U+2060) breaks the pattern instead
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)(?=[\w-])", re.IGNORECASE)


def md_escape(text: object) -> str:
    """User- or URL-supplied text as literal Markdown, on one line.

    No link, image (a remote fetch), HTML, heading, list, emphasis, table, ``:color[...]``
    directive, ``:icon:``, ``$math$`` or bare ``www.`` / ``https://`` / e-mail autolink survives,
    and plain text ("Search-R1: a 2025 method") is left as it is.
    """
    out = _MD_ALWAYS.sub(r"\\\1", " ".join(str(text).split()))
    out = _MD_CONTEXT.sub(lambda m: "".join(("\\" + g if g and not g.isdigit() else (g or "")) for g in m.groups()), out)
    return _AUTOLINK.sub("\u2060", out)


def safe_url(url: str) -> str:
    """``url`` when it is an absolute http(s) link, else '' (no javascript:, data: or relative links)."""
    url = (url or "").strip()
    return url if re.match(r"https?://[^\s/?#]+", url, re.IGNORECASE) and not re.search(r"\s", url) else ""


def md_link(label: str, url: str) -> str:
    """A Markdown link to a web URL (brackets and parentheses percent-encoded), or '' if not a web URL."""
    from urllib.parse import quote

    url = safe_url(url)
    return f"[{md_escape(label)}]({quote(url, safe=':/?#@$&*+,;=%-._~')})" if url else ""


def work_label(work: Work, n: int = 60) -> str:
    return work.name or _short(work.title, n)


def first_selected(state: Mapping | None, series_index: int | None = 0) -> int | None:
    """The first selected data index of an ``st.echarts_chart`` selection state, if any."""
    if not state:
        return None
    selection = state.get("selection") or {}
    for group in selection.get("selected") or []:
        if series_index is not None and group.get("series_index") != series_index:
            continue
        if group.get("data_type") == "edge":
            continue
        indices = group.get("data_indices") or []
        if indices:
            return int(indices[0])
    return None


# -- lookups from the URL --------------------------------------------------------------------
@dataclass(frozen=True)
class Lookup:
    """What a URL asked for, what it resolved to (None if nothing) and close matches."""

    value: str
    found: str | None
    suggestions: list[str] = field(default_factory=list)


def lookup_node(catalog: Catalog, raw: str) -> Lookup:
    """A node by id, or by its name (any case)."""
    raw = (raw or "").strip()
    tax = catalog.taxonomy
    if raw in tax:
        return Lookup(raw, raw)
    by_name = {n.name.lower(): n.id for n in tax}
    if raw.lower() in by_name:
        return Lookup(raw, by_name[raw.lower()])
    if raw.lower() in tax:
        return Lookup(raw, raw.lower())
    return Lookup(raw, None, tax.suggest(raw) if raw else [])


def lookup_work(catalog: Catalog, raw: str) -> Lookup:
    """A work by key, arXiv id, name or alias."""
    raw = (raw or "").strip()
    if not raw:
        return Lookup(raw, None, [])
    try:
        return Lookup(raw, catalog.resolve(raw).key)
    except KeyError:
        pass
    if raw.lower() in catalog.works:
        return Lookup(raw, raw.lower())
    return Lookup(raw, None, catalog.suggest(raw, n=5))


def params_dict(params) -> dict[str, list[str]]:
    """``st.query_params`` (or any mapping) as ``{name: [values]}``."""
    out: dict[str, list[str]] = {}
    for k in params:
        if hasattr(params, "get_all"):
            out[k] = list(params.get_all(k))
        else:
            v = params[k]
            out[k] = [str(x) for x in v] if isinstance(v, (list, tuple)) else [str(v)]
    return out


def first_param(params: Mapping[str, Sequence[str]], name: str, default: str = "") -> str:
    vals = params.get(name) or []
    return str(vals[-1]) if vals else default


def all_params(params: Mapping[str, Sequence[str]], name: str) -> list[str]:
    out: list[str] = []
    for v in params.get(name) or []:
        out.extend(p.strip() for p in str(v).split(",") if p.strip())
    return list(dict.fromkeys(out))


def _flag(value: str) -> bool | None:
    v = value.strip().lower()
    if v in ("1", "true", "yes", "on", "y"):
        return True
    if v in ("0", "false", "no", "off", "n"):
        return False
    return None


# -- overview --------------------------------------------------------------------------------
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


@dataclass(frozen=True)
class ChartView:
    """An ECharts option dict and what each clickable data index stands for."""

    spec: dict
    ids: list
    height: int = 400


#: confidence from which an inferred axis is shown (docs/axis_inference.md: on the 41 methods the survey
#: places on both axes, first choices at >= 0.3 hit the survey's section 90 % of the time, its node 80 %)
INFERRED_MIN_CONFIDENCE = 0.3


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


def inferred_node_works(catalog: Catalog, node_id: str, inferred: Mapping,
                        min_confidence: float = INFERRED_MIN_CONFIDENCE) -> list[tuple[Work, float]]:
    """Methods the placement model puts under ``node_id`` (its first choice for an axis the survey does not
    give them is the node or a descendant, with confidence >= ``min_confidence``), with that confidence."""
    tax = catalog.taxonomy
    under = {node_id, *tax.descendants(node_id)}
    out = []
    for key, axes in inferred.items():
        for ranked in axes.values():
            top = ranked[0]
            if top.node in under and top.confidence >= min_confidence and key in catalog.works:
                out.append((catalog.works[key], top.confidence))
    return sorted(out, key=lambda x: (-x[1], work_label(x[0]).lower()))


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
                "tooltip": {"formatter": _tip(f"{tax[cap].name} × {tax[task].name}", text + " — click to list them")},
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


# -- works lists -----------------------------------------------------------------------------
def sort_works(works: Iterable[Work]) -> list[Work]:
    """Newest first, then by name."""
    return sorted(works, key=lambda w: (-(w.year or 0), work_label(w).lower()))


def works_frame(works: Iterable[Work], catalog: Catalog | None = None) -> pd.DataFrame:
    """One row per work for a table: link, name, title, year, kind, code, arXiv, placements."""
    rows = []
    for w in works:
        rows.append({
            "key": w.key,
            "open": routes.work(w.key).url,
            "name": w.name or "",
            "title": w.title,
            "year": w.year,
            "kind": w.kind,
            "code": safe_url(w.code_url),
            "arxiv": safe_url(w.arxiv_url),
            "nodes": ", ".join(catalog.taxonomy[n].name for n in w.nodes) if catalog else "; ".join(w.nodes),
        })
    frame = pd.DataFrame(rows, columns=["key", "open", "name", "title", "year", "kind", "code", "arxiv", "nodes"])
    frame["year"] = frame["year"].astype("Int64")
    return frame


# -- taxonomy --------------------------------------------------------------------------------
def dimension_roots(catalog: Catalog, dimension: str) -> list[str]:
    """The top nodes of a dimension: its nodes whose parent is in another dimension (or none)."""
    tax = catalog.taxonomy
    return [n.id for n in tax if n.dimension == dimension and (n.parent is None or tax[n.parent].dimension != dimension)]


def dimension_children(catalog: Catalog, node_id: str) -> list[str]:
    """Children that stay in the node's dimension (the preliminaries' algorithm subtree is its own tree)."""
    tax = catalog.taxonomy
    dim = tax[node_id].dimension
    return [c for c in tax.children.get(node_id, []) if tax[c].dimension == dim]


_COUNTS: "weakref.WeakKeyDictionary[Catalog, dict[str, int]]" = weakref.WeakKeyDictionary()


def node_counts(catalog: Catalog) -> dict[str, int]:
    """Works per node, counting its descendants (computed once per catalog; a catalog never changes)."""
    if catalog not in _COUNTS:
        g = catalog.graph
        _COUNTS[catalog] = {n.id: len(g.works_of(n.id, include_descendants=True)) for n in catalog.taxonomy}
    return dict(_COUNTS[catalog])


@dataclass(frozen=True)
class TreeRow:
    node: str
    name: str
    depth: int
    works: int
    direct: int


def tree_rows(catalog: Catalog, dimension: str) -> list[TreeRow]:
    """The dimension's tree, depth first, one row per node (for an indented list)."""
    tax, g = catalog.taxonomy, catalog.graph
    counts = node_counts(catalog)
    rows: list[TreeRow] = []

    def walk(nid: str, depth: int) -> None:
        rows.append(TreeRow(nid, tax[nid].name, depth, counts[nid], len(g.works_of(nid, include_descendants=False))))
        for c in dimension_children(catalog, nid):
            walk(c, depth + 1)

    for r in dimension_roots(catalog, dimension):
        walk(r, 0)
    return rows


def tree_frame(catalog: Catalog, dimension: str) -> pd.DataFrame:
    rows = tree_rows(catalog, dimension)
    return pd.DataFrame({
        "node": [r.node for r in rows],
        "open": [routes.node(r.node).url for r in rows],
        "name": ["\u2003" * r.depth + ("└ " if r.depth else "") + r.name for r in rows],
        "works": [r.works for r in rows],
        "placed here": [r.direct for r in rows],
        "section": [catalog.taxonomy[r.node].survey_section for r in rows],
    })


TREE_WIDTH = 11.5  # width of the tree's columns in units of the leaf spacing (ECharts keeps the aspect ratio)


def dimension_tree(catalog: Catalog, dimension: str) -> ChartView:
    """A left-to-right tree (dendrogram) of one dimension; ``ids[i]`` is the node id of data index ``i``.

    Drawn as an ECharts graph with fixed positions: internal nodes stand in the column of their
    depth with the label on the left, every leaf stands in the last column with the label on the
    right, so labels never run into another column whatever the depth of a leaf. Several roots
    (the survey's sections) hang from one synthetic root, whose id is None.
    """
    tax = catalog.taxonomy
    counts = node_counts(catalog)
    color = DIMENSION_COLORS[dimension]
    roots = dimension_roots(catalog, dimension)
    children: dict[str | None, list[str]] = {None: roots}

    def depth_below(nid: str) -> int:
        kids = dimension_children(catalog, nid)
        children[nid] = kids
        return 1 + max((depth_below(c) for c in kids), default=0)

    levels = max(depth_below(r) for r in roots) + (1 if len(roots) > 1 else 0)
    X_STEP = TREE_WIDTH / max(levels - 1, 1)
    ids: list[str | None] = []
    pos: dict[str | None, tuple[float, float]] = {}
    depth_of: dict[str | None, int] = {}
    leaf_no = 0

    def place(nid: str | None, depth: int) -> None:
        nonlocal leaf_no
        ids.append(nid)
        depth_of[nid] = depth
        kids = children.get(nid, [])
        for c in kids:
            place(c, depth + 1)
        if kids:
            ys = [pos[c][1] for c in kids]
            y = (min(ys) + max(ys)) / 2
            if any(abs(y - pos[c][1]) < 0.4 for c in kids if children.get(c)):
                y += 1.0  # never on the same line as an inner child: their labels would collide
            pos[nid] = (float(depth) * X_STEP, y)
        else:
            pos[nid] = (float(levels - 1) * X_STEP, float(leaf_no))
            leaf_no += 1

    if len(roots) == 1:
        place(roots[0], 0)
    else:
        place(None, 0)
    data, links = [], []
    index = {nid: i for i, nid in enumerate(ids)}
    for nid in ids:
        x, y = pos[nid]
        leaf = not children.get(nid)
        if nid is None:
            n = len({k for r in roots for k in catalog.graph.works_of(r)})
            name, tip = DIMENSION_SHORT[dimension], _tip(DIMENSION_LABELS[dimension], f"{n} works")
        else:
            node = tax[nid]
            n = counts[nid]
            name = DIMENSION_SHORT[dimension] if depth_of[nid] == 0 else node.name
            tip = _tip(node.name, f"{n} work{'s' if n != 1 else ''} · survey section §{node.survey_section}",
                       _short(node.description), "click to open")
        data.append({
            "name": f"{name} ({n})",
            "x": x, "y": y, "value": n,
            "symbolSize": 8 + min(10, 1.7 * math.sqrt(n)),
            "itemStyle": {"color": color if n else "#ffffff", "borderColor": color, "borderWidth": 1.5},
            "label": {"show": True, "position": "right" if leaf else "left", "fontSize": 13,
                      "fontWeight": "bold" if depth_of[nid] <= 1 and not leaf else "normal"},
            "tooltip": {"formatter": tip},
        })
        for c in children.get(nid, []):
            links.append({"source": index[nid], "target": index[c]})
    height = max(260, 25 * leaf_no + 50)
    # margins sized to the longest labels on each side (about 7 px a character at 13 px)
    left = 30 + 7 * max(len(d["name"]) for d, nid in zip(data, ids) if children.get(nid))
    right = 30 + 7 * max(len(d["name"]) for d, nid in zip(data, ids) if not children.get(nid))
    spec = {
        "animation": False,
        "tooltip": {"trigger": "item", "confine": True, "extraCssText": "max-width: 360px; white-space: normal;"},
        "series": [{
            "type": "graph", "layout": "none", "data": data, "links": links, "roam": False,
            "preserveAspect": True, "preserveAspectVerticalAlign": "top",
            "left": min(left, 300), "right": min(right, 380), "top": 20, "bottom": 20,
            "selectedMode": "single", "select": {"itemStyle": {"borderColor": "#111", "borderWidth": 2.5}},
            "lineStyle": {"color": color, "opacity": 0.45, "width": 1.2, "curveness": 0},
            "emphasis": {"focus": "adjacency", "lineStyle": {"width": 2, "opacity": 0.9}},
            "labelLayout": {"hideOverlap": False},
        }],
    }
    return ChartView(spec, ids, height=height)


def graph_view(
    catalog: Catalog,
    dimension: str | None,
    show_works: bool = True,
    show_algorithms: bool = True,
    seed: int = 7,
) -> ChartView:
    """An ECharts graph of taxonomy nodes (one dimension, or all), their works and algorithms.

    Positions come from a seeded spring layout (deterministic, computed here, not in the
    browser). ``ids[i]`` is ``"node:<id>"``, ``"work:<key>"`` or ``"algorithm:<name>"``.
    With every dimension at once, works are left out (too many for a readable picture).
    """
    import networkx as nx

    g, tax = catalog.graph.g, catalog.taxonomy
    node_ids = [n.id for n in tax if dimension is None or n.dimension == dimension]
    vertices = [f"node:{n}" for n in node_ids]
    vset = set(vertices)
    works: list[str] = []
    if show_works and dimension is not None:
        works = sorted({u for v in vertices for u, _ in g.in_edges(v) if u.startswith("work:")})
    algos: list[str] = []
    if show_algorithms:
        pool = works or [u for u in g if u.startswith("work:") and any(t in vset for t in g.successors(u))]
        algos = sorted({a for w in pool for a in g.successors(w) if a.startswith("algorithm:")})
    vertices += works + algos
    # The layout's random start is drawn per vertex in iteration order, so build the graph in a
    # fixed order: the catalog graph's own order follows set iteration and so the hash seed.
    sub = nx.Graph()
    sub.add_nodes_from(vertices)
    sub.add_edges_from(sorted(tuple(sorted(e)) for e in g.subgraph(vertices).to_undirected().edges()))
    pos = nx.spring_layout(sub, seed=seed, iterations=80, k=1.6 / math.sqrt(max(len(vertices), 1))) if vertices else {}
    counts = node_counts(catalog)
    index = {v: i for i, v in enumerate(vertices)}
    data = []
    for v in vertices:
        x, y = (float(c) * 480 for c in pos[v])
        if v.startswith("node:"):
            node = tax[v[5:]]
            n = counts[node.id]
            data.append({
                "id": v, "name": node.name, "x": x, "y": y, "category": 0,
                "symbolSize": 10 + min(26, 3 * math.sqrt(n)), "value": n,
                "itemStyle": {"color": DIMENSION_COLORS[node.dimension]},
                "label": {"show": True, "fontSize": 11},
                "tooltip": {"formatter": _tip(node.name, f"taxonomy node · {n} work{'s' if n != 1 else ''}",
                                              _short(node.description, 140), "click to open")},
            })
        elif v.startswith("work:"):
            w = catalog.works[v[5:]]
            data.append({
                "id": v, "name": work_label(w, 40), "x": x, "y": y, "category": 1, "symbolSize": 6,
                "itemStyle": {"color": WORK_COLOR},
                "tooltip": {"formatter": _tip(work_label(w), f"{w.kind} · {w.year or 'n.d.'}", _short(w.title, 120),
                                              "click to open")},
            })
        else:
            data.append({
                "id": v, "name": v[10:], "x": x, "y": y, "category": 2, "symbol": "diamond", "symbolSize": 12,
                "itemStyle": {"color": ALGORITHM_COLOR},
                "label": {"show": True, "fontSize": 10},
                "tooltip": {"formatter": _tip(v[10:], "algorithm", "click to open")},
            })
    links = [
        {"source": index[a], "target": index[b]}
        for a, b in sub.edges()
    ]
    spec = {
        "animation": False,
        "tooltip": {"trigger": "item", "confine": True, "extraCssText": "max-width: 340px; white-space: normal;"},
        "legend": {"top": 0, "data": ["Taxonomy node", "Work", "Algorithm"]},
        "series": [{
            "type": "graph", "layout": "none", "roam": True, "scaleLimit": {"min": 0.3, "max": 8},
            "selectedMode": "single", "select": {"itemStyle": {"borderColor": "#111", "borderWidth": 2}},
            "categories": [{"name": "Taxonomy node", "itemStyle": {"color": DIMENSION_COLORS.get(dimension or "", "#4C78A8")}},
                           {"name": "Work", "itemStyle": {"color": WORK_COLOR}},
                           {"name": "Algorithm", "itemStyle": {"color": ALGORITHM_COLOR}}],
            "data": data, "links": links,
            "label": {"position": "right", "fontSize": 11},
            "labelLayout": {"hideOverlap": True},
            "lineStyle": {"color": "source", "opacity": 0.35, "width": 1, "curveness": 0.08},
            "emphasis": {"focus": "adjacency", "lineStyle": {"width": 2, "opacity": 0.9}},
            "top": 40, "bottom": 20, "left": 20, "right": 140,
        }],
    }
    return ChartView(spec, list(vertices), height=640)


@dataclass(frozen=True)
class NodePage:
    """Everything the node page shows."""

    node: str
    name: str
    dimension: str
    section: str
    description: str
    path: list[tuple[str, str]]           # (id, name) root -> node
    children: list[tuple[str, str, int]]  # (id, name, works incl. descendants)
    works: list[Work]
    direct_works: int
    all_works: int
    related: list[tuple[str, str, int]]   # (id, name, shared works)
    tables: list[tuple[str, pd.DataFrame]]  # (table title, rows)
    algorithms: list[tuple[str, int]]     # algorithms used by its works: (name, works)


def node_page(catalog: Catalog, node_id: str, include_descendants: bool = True) -> NodePage:
    tax, g = catalog.taxonomy, catalog.graph
    node = catalog.node(node_id)
    counts = node_counts(catalog)
    works = sort_works(catalog.works_in(node_id, include_descendants))
    algos: Counter[str] = Counter(a for w in works for a in w.algorithms)
    rows = catalog.table_rows_for_node(node_id) if include_descendants else {
        n: r for n, t in catalog.tables.items() if len(r := t.rows_for({w.key for w in works}))
    }
    return NodePage(
        node=node.id, name=node.name, dimension=node.dimension, section=node.survey_section,
        description=node.description,
        path=[(p, tax[p].name) for p in tax.path(node_id)],
        children=[(c, tax[c].name, counts[c]) for c in tax.children.get(node_id, [])],
        works=works,
        direct_works=len(g.works_of(node_id, include_descendants=False)),
        all_works=counts[node_id],
        related=[(r, tax[r].name, n) for r, n in g.related_nodes(node_id, n=8)],
        tables=[(catalog.tables[n].title, table_display(catalog.tables[n], r)) for n, r in rows.items()],
        algorithms=sorted(algos.items(), key=lambda kv: (-kv[1], kv[0])),
    )


_COLUMN_NAMES = {
    "base_llm": "Base LLM", "rl_algorithm": "RL algorithm", "survey_ref": "Ref.", "kl_penalty": "KL penalty",
    "objective_type": "Objective", "key_mechanism": "Key mechanism", "directly_uses_rl": "Uses RL",
    "agent_capability": "Agent capability", "task_domain": "Task domain", "key_features": "Key features",
    "key_characteristics": "Key characteristics",
}


def column_title(name: str) -> str:
    return _COLUMN_NAMES.get(name, name.replace("_", " ").capitalize())


def table_display(table: SurveyTable, rows: pd.DataFrame | None = None) -> pd.DataFrame:
    """Survey-table rows for display: readable headers, a work link column, no bookkeeping columns."""
    frame = (table.frame if rows is None else rows).copy()
    if "work_key" in frame.columns:
        frame.insert(0, "open", frame["work_key"].map(lambda v: routes.work(v.split(";")[0].strip()).url if v else None))
    frame = frame.drop(columns=[c for c in ("source",) if c in frame.columns])
    frame = frame.rename(columns={c: column_title(c) for c in frame.columns if c not in ("open", "work_key")})
    return frame.reset_index(drop=True)


# -- work page -------------------------------------------------------------------------------
@dataclass(frozen=True)
class WorkPage:
    work: Work
    facts: list[tuple[str, str]]
    links: list[tuple[str, str]]               # (label, url)
    placements: list[list[tuple[str, str]]]    # one breadcrumb per placement: [(id, name), ...]
    algorithms: list[tuple[str, str | None]]   # (algorithm, its taxonomy node or None)
    tables: list[tuple[str, pd.DataFrame]]
    related: list[tuple[Work, int]]            # works sharing placements: (work, shared nodes)


def algorithm_nodes(catalog: Catalog) -> dict[str, str]:
    """Algorithm name (lower case) -> its taxonomy node id."""
    return {n.name.lower(): n.id for n in catalog.taxonomy if n.dimension == "algorithm"}


def work_page(catalog: Catalog, key: str) -> WorkPage:
    w = catalog.get(key)
    tax = catalog.taxonomy
    facts = [
        ("Name", w.name),
        ("Title as printed in the survey", w.title_original if w.title_original and w.title_original != w.title else ""),
        ("Year", str(w.year) if w.year else ""),
        ("Venue", w.venue),
        ("Kind", w.kind),
        ("arXiv", w.arxiv_id),
        ("Reward", w.reward_type),
        ("Also known as", ", ".join(w.aliases)),
        ("Authors", getattr(w, "authors", "")),
        ("Survey references", ", ".join(f"[{r}]" for r in w.survey_refs)),
        ("Source in the survey", w.source),
        ("Tags", ", ".join(w.tags)),
        ("Origin", "added by you" if w.origin == "user" else "the survey"),
        ("Key", w.key),
    ]
    links = [(label, safe_url(url)) for label, url in (
        ("arXiv", w.arxiv_url), ("Paper", w.url if w.url != w.arxiv_url else ""), ("Code", w.code_url),
    ) if safe_url(url)]
    algo_nodes = algorithm_nodes(catalog)
    return WorkPage(
        work=w,
        facts=[(k, v) for k, v in facts if v],
        links=links,
        placements=[[(p, tax[p].name) for p in tax.path(n)] for n in w.nodes],
        algorithms=[(a, algo_nodes.get(a.lower())) for a in w.algorithms],
        tables=[(catalog.tables[n].title, table_display(catalog.tables[n], r))
                for n, r in catalog.table_rows_for_work(key).items()],
        related=[(catalog.works[k], n) for k, n in catalog.graph.related_works(key, n=8)],
    )


def facts_markdown(facts: Sequence[tuple[str, str]]) -> str:
    """Label/value pairs as a two-column Markdown table (values are literal text: see ``md_escape``)."""
    lines = ["| Field | Value |", "|---|---|"]
    lines += [f"| **{md_escape(k)}** | {md_escape(v)} |" for k, v in facts]
    return "\n".join(lines)


def work_options(catalog: Catalog) -> dict[str, str]:
    """Work key -> a label for a picker ("Search-R1 (2025) — Search-R1: Training ...")."""
    out = {}
    for w in sort_works(catalog):
        label = f"{w.name} ({w.year or 'n.d.'}) — {_short(w.title, 70)}" if w.name else f"{_short(w.title, 90)} ({w.year or 'n.d.'})"
        out[w.key] = label
    return out


def node_options(catalog: Catalog) -> dict[str, str]:
    """Node id -> "Name · Dimension" for a picker, in tree order per dimension."""
    out = {}
    for dim in DIMENSIONS:
        for r in tree_rows(catalog, dim):
            out[r.node] = f"{r.name} · {DIMENSION_LABELS[dim]} ({r.works})"
    for n in catalog.taxonomy:  # anything a dimension tree missed
        out.setdefault(n.id, f"{n.name} · {DIMENSION_LABELS[n.dimension]}")
    return out


# -- algorithms ------------------------------------------------------------------------------
COMPARE_FIELDS = [
    ("family", "Family"), ("year", "Year"), ("objective_type", "Objective"), ("clip", "Clip"),
    ("kl_penalty", "KL penalty"), ("key_mechanism", "Key mechanism"), ("signal", "Signal"),
    ("works_using", "Works in the catalog using it"), ("work", "Paper"),
]


def run_link(impl) -> routes.Link:
    """The Lab page of ``impl`` with the preset "Run this" opens (lab.catalog.default_preset)."""
    from lab.catalog import default_preset

    return routes.lab(impl=impl.id, preset=default_preset(impl))


def lab_link(node_id: str) -> routes.Link | None:
    """The Lab page of the node's first reference implementation (its default preset), or None."""
    from lab.catalog import for_node

    impls = for_node(node_id)
    return run_link(impls[0]) if impls else None


def family_base(catalog: Catalog, node_id: str):
    """For a node without its own implementation whose child has one (a family header): the first such
    child's first implementation (the family's base, listed first in the taxonomy); else None."""
    from lab.catalog import for_node

    for child in catalog.taxonomy.children.get(node_id, []):
        impls = for_node(child)
        if impls:
            return impls[0]
    return None


def algorithm_node_runs(catalog: Catalog) -> dict[str, tuple[str, str | None]]:
    """For every node of the algorithms dimension: ("run", impl id) when it has its own implementation,
    ("family", impl id) when it is a family header whose family's base runs, ("none", None) otherwise."""
    from lab.catalog import for_node

    tax = catalog.taxonomy
    out: dict[str, tuple[str, str | None]] = {}
    for node_id in tax.by_dimension(tax["rl-algorithms"].dimension):
        own = for_node(node_id)
        if own:
            out[node_id] = ("run", own[0].id)
            continue
        base = family_base(catalog, node_id)
        out[node_id] = ("family", base.id) if base else ("none", None)
    return out


def algorithm_frame(catalog: Catalog) -> pd.DataFrame:
    """The survey's Table 2 with the catalog's links: one row per algorithm variant."""
    t = catalog.tables[TABLE2].frame.copy()
    algo_nodes = algorithm_nodes(catalog)
    g = catalog.graph
    t["year"] = pd.to_numeric(t["year"], errors="coerce").astype("Int64")
    t["node"] = t["method"].map(lambda m: algo_nodes.get(m.lower()))
    t["works_using"] = t["method"].map(lambda m: len(g.works_using(m)))
    t["work"] = t["work_key"].map(lambda k: work_label(catalog.works[k]) if k in catalog.works else "")
    t["open"] = t["work_key"].map(lambda k: routes.work(k).url if k else None)
    t["lab"] = t["node"].map(lambda n: lab_link(n).url if n and lab_link(n) else None)
    t["runnable"] = t["lab"].notna()
    cols = ["family", "method", "year", "objective_type", "clip", "kl_penalty", "key_mechanism", "signal",
            "works_using", "work", "open", "runnable", "lab", "node", "work_key", "survey_ref", "source"]
    return t[cols].reset_index(drop=True)


@dataclass(frozen=True)
class AlgorithmFilter:
    families: tuple[str, ...] = ()
    clip: str = ""          # "", "Yes", "No"
    kl: tuple[str, ...] = ()
    text: str = ""

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = frame
        if self.families:
            out = out[out["family"].isin(self.families)]
        if self.clip:
            out = out[out["clip"].str.lower() == self.clip.lower()]
        if self.kl:
            out = out[out["kl_penalty"].isin(self.kl)]
        if self.text.strip():
            needle = self.text.strip().lower()
            hay = out[["method", "objective_type", "key_mechanism", "signal", "family"]].astype(str).agg(" ".join, axis=1)
            out = out[hay.str.lower().str.contains(needle, regex=False)]
        return out


def compare_algorithms(frame: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """Chosen variants side by side: one column per method, one row per attribute."""
    rows = frame.set_index("method")
    chosen = [m for m in methods if m in rows.index]
    out = pd.DataFrame(
        {m: [("" if pd.isna(rows.loc[m, f]) else str(rows.loc[m, f])) for f, _ in COMPARE_FIELDS] for m in chosen},
        index=[label for _, label in COMPARE_FIELDS],
    )
    out.index.name = "attribute"
    return out


def differing_attributes(comparison: pd.DataFrame) -> list[str]:
    """Attributes where the compared variants disagree."""
    if comparison.shape[1] < 2:
        return []
    return [idx for idx, row in comparison.iterrows() if row.nunique() > 1]


# -- search ----------------------------------------------------------------------------------
PAGE_SIZE = 10


@dataclass(frozen=True)
class SearchState:
    """A search as URL parameters (``q``, ``node``, ``dim``, ``from``, ``to``, ``kind``, ``algo``,
    ``code``, ``xnode``, ``xkind``, ``page``, ``mode``) and back. Unknown values are dropped and
    reported in ``problems`` (with close matches) instead of failing."""

    q: str = ""
    nodes: tuple[str, ...] = ()
    dimensions: tuple[str, ...] = ()
    year_from: int | None = None
    year_to: int | None = None
    kinds: tuple[str, ...] = ()
    algorithms: tuple[str, ...] = ()
    has_code: bool | None = None
    exclude_nodes: tuple[str, ...] = ()
    exclude_kinds: tuple[str, ...] = ()
    page: int = 1
    mode: str = "hybrid"

    MODES = ("hybrid", "lexical", "dense")

    @classmethod
    def from_params(cls, params: Mapping[str, Sequence[str]], catalog: Catalog) -> tuple["SearchState", list[str]]:
        problems: list[str] = []

        def nodes(name: str) -> tuple[str, ...]:
            out = []
            for raw in all_params(params, name):
                hit = lookup_node(catalog, raw)
                if hit.found:
                    out.append(hit.found)
                else:
                    near = f" (did you mean {', '.join(hit.suggestions)}?)" if hit.suggestions else ""
                    problems.append(f"unknown node '{raw}'{near}")
            return tuple(dict.fromkeys(out))

        def kinds(name: str) -> tuple[str, ...]:
            out = []
            for raw in all_params(params, name):
                if raw.lower() in KINDS:
                    out.append(raw.lower())
                else:
                    problems.append(f"unknown kind '{raw}' (kinds: {', '.join(KINDS)})")
            return tuple(out)

        def year(name: str) -> int | None:
            raw = first_param(params, name)
            if not raw:
                return None
            if re.fullmatch(r"\d{4}", raw.strip()):
                return int(raw)
            problems.append(f"'{raw}' is not a year")
            return None

        dims = []
        for raw in all_params(params, "dim"):
            if raw.lower() in DIMENSIONS:
                dims.append(raw.lower())
            else:
                problems.append(f"unknown dimension '{raw}' (dimensions: {', '.join(DIMENSIONS)})")
        known_algos = {a.lower(): a for a in algorithm_names(catalog)}
        algos = []
        for raw in all_params(params, "algo"):
            if raw.lower() in known_algos:
                algos.append(known_algos[raw.lower()])
            else:
                problems.append(f"unknown algorithm '{raw}'")
        code_raw = first_param(params, "code")
        code = _flag(code_raw) if code_raw else None
        if code_raw and code is None:
            problems.append(f"'code={code_raw}' should be yes or no")
        page_raw = first_param(params, "page", "1")
        page = int(page_raw) if page_raw.isdigit() and int(page_raw) >= 1 else 1
        mode = first_param(params, "mode", "hybrid").lower()
        if mode not in cls.MODES:
            problems.append(f"unknown mode '{mode}' (modes: {', '.join(cls.MODES)})")
            mode = "hybrid"
        y_from, y_to = year("from"), year("to")
        if y_from is not None and y_to is not None and y_from > y_to:
            problems.append(f"years {y_from} to {y_to} run backwards (read as {y_to} to {y_from})")
            y_from, y_to = y_to, y_from
        state = cls(
            q=" ".join(first_param(params, "q").split()), nodes=nodes("node"), dimensions=tuple(dict.fromkeys(dims)),
            year_from=y_from, year_to=y_to, kinds=kinds("kind"), algorithms=tuple(dict.fromkeys(algos)),
            has_code=code, exclude_nodes=nodes("xnode"), exclude_kinds=kinds("xkind"), page=page, mode=mode,
        )
        return state, problems

    def to_params(self) -> dict[str, str | list[str]]:
        """The URL form; defaults are left out so links stay short."""
        out: dict[str, str | list[str]] = {}
        if self.q:
            out["q"] = self.q
        for name, values in (("node", self.nodes), ("dim", self.dimensions), ("kind", self.kinds),
                             ("algo", self.algorithms), ("xnode", self.exclude_nodes), ("xkind", self.exclude_kinds)):
            if values:
                out[name] = list(values)
        if self.year_from is not None:
            out["from"] = str(self.year_from)
        if self.year_to is not None:
            out["to"] = str(self.year_to)
        if self.has_code is not None:
            out["code"] = "yes" if self.has_code else "no"
        if self.mode != "hybrid":
            out["mode"] = self.mode
        if self.page > 1:
            out["page"] = str(self.page)
        return out

    def filter_kwargs(self) -> dict:
        """Keyword arguments for ``papers.search.SearchFilters``."""
        return {
            "nodes": list(self.nodes), "dimensions": list(self.dimensions), "year_from": self.year_from,
            "year_to": self.year_to, "kinds": list(self.kinds), "algorithms": list(self.algorithms),
            "has_code": self.has_code, "exclude_nodes": list(self.exclude_nodes), "exclude_kinds": list(self.exclude_kinds),
        }

    @property
    def has_filters(self) -> bool:
        return any(v not in (None, (), "") for v in self.filter_kwargs().values() if v != [])

    def with_page(self, page: int) -> "SearchState":
        return replace(self, page=max(1, page))


def algorithm_names(catalog: Catalog) -> list[str]:
    """Every algorithm a work in the catalog uses, most used first."""
    counts = Counter(a for w in catalog for a in w.algorithms)
    return [a for a, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0].lower()))]


def why_matched(catalog: Catalog, hit, max_nodes: int = 3) -> str:
    """One line saying why a search hit matched: the node names and query terms it matched."""
    parts = []
    tax = catalog.taxonomy
    matched = [n for n in getattr(hit, "matched_nodes", []) or [] if n in tax]
    specific = [n for n in matched if tax[n].parent is not None] or matched  # the dimension roots say little
    nodes = [tax[n].name for n in specific]
    if nodes:
        parts.append("in " + ", ".join(nodes[:max_nodes]) + (" …" if len(nodes) > max_nodes else ""))
    terms = list(getattr(hit, "matched_terms", []) or [])
    if terms:
        parts.append("terms: " + ", ".join(terms))
    dense = getattr(hit, "dense_score", None)
    if not parts and dense:
        parts.append("close in meaning")
    return " · ".join(parts)


def results_frame(catalog: Catalog, hits: Sequence) -> pd.DataFrame:
    """Search hits as a table: rank, why matched, score and the work's columns."""
    works = [catalog.works[h.key] for h in hits]
    frame = works_frame(works, catalog)
    frame.insert(2, "why", [why_matched(catalog, h) for h in hits])
    frame.insert(3, "score", [round(float(h.score), 3) for h in hits])
    return frame


# -- comparison grid ---------------------------------------------------------------------------------
def seeds_label(n: int) -> str:
    """"1 seed", "3 seeds": how the page and node lines name a row's seed count."""
    return f"{n} seed{'' if n == 1 else 's'}"


def leaderboard_frame(rows: list[dict]) -> pd.DataFrame:
    """One environment's leaderboard as a table (success and interval in %, cost beside quality). The
    implementation names the variant (search-dapo); "trainer" is the registered trainer that runs it (DAPO,
    Dr.GRPO and GSPO are switches of the grpo trainer), so it is not called "algorithm"."""
    frame = pd.DataFrame([{
        "implementation": r["implementation"], "trainer": r["algo"], "seeds": r["seeds"],
        "held-out %": round(100 * r["heldout"], 1), "95% low": round(100 * r["low"], 1),
        "95% high": round(100 * r["high"], 1),
        "vs baseline (pts)": None if r["vs_baseline"] is None else round(100 * r["vs_baseline"]["mean"], 1),
        "verdict": r["verdict"], "train min": round(r["train_s"] / 60, 1), "tokens": int(r["tokens"]),
        "peak MB": int(r["peak_rss_mb"]),
    } for r in rows])
    return frame


def node_comparison_lines(grids, impl_ids: set[str]) -> list[tuple[str, str]]:
    """(grid name, one line) per comparison row of the node's implementations: the leaderboard row and its
    verdict against the grid's baseline; in a base / SFT / SFT + RL grid, the stages and RL's paired
    verdict against the warm start instead. The lines are Markdown with the names escaped."""
    lines = []
    for grid in grids:
        name = grid.spec.get("name", "")
        stages = grid.progression()
        for env, rows in grid.board().items():
            for row in rows:
                if row["implementation"] not in impl_ids:
                    continue
                where = f"In the comparison grid *{md_escape(name)}* ({md_escape(env)}, {seeds_label(row['seeds'])})"
                held = f"{100 * row['heldout']:.1f} % [{100 * row['low']:.1f}, {100 * row['high']:.1f}]"
                refs = {r["stage"]: r for r in stages.get(env, []) if r["implementation"] is None}
                if refs:
                    mine = next(r for r in stages[env] if r["implementation"] == row["implementation"])
                    before = "; ".join(f"{label} {100 * r['heldout']:.1f} %" for label, r in refs.items())
                    versus = [mine["verdict"] or "no warm start measured"]
                    if row["verdict"] and row["verdict"] != "baseline":  # and against the grid's baseline
                        versus.append(row["verdict"])
                    lines.append((name, f"{where}: {before}; SFT + RL held-out {held}; "
                                        f"{md_escape('; '.join(versus))}."))
                else:
                    lines.append((name, f"{where}: held-out {held}; "
                                        f"{md_escape(row['verdict'] or 'no baseline in the grid')}."))
    return lines


def progression_frame(rows: list[dict]) -> pd.DataFrame:
    """One environment's untrained -> SFT -> SFT + RL stages as a table (in %), each stage paired with the
    stage it starts from."""
    return pd.DataFrame([{
        "stage": r["stage"], "seeds": r["seeds"], "held-out %": round(100 * r["heldout"], 1),
        "95% low": round(100 * r["low"], 1), "95% high": round(100 * r["high"], 1),
        "vs stage before (pts)": None if r["vs"] is None else round(100 * r["vs"]["mean"], 1),
        "verdict": r["verdict"],
    } for r in rows])


def interval_chart(rows: list[dict]) -> dict:
    """Vega-Lite: held-out success per implementation with its 95% interval as a bar. Each row's label names
    its seed count: a one-seed bar spans the problems' variation only and looks narrower than it should."""
    data = [{"row": f"{r['implementation']} ({seeds_label(r['seeds'])})",
             "implementation": r["implementation"], "seeds": r["seeds"], "heldout": 100 * r["heldout"],
             "low": 100 * r["low"], "high": 100 * r["high"]} for r in rows]
    order = [d["row"] for d in data]
    # every row labelled: Vega-Lite drops labels it thinks overlap, which hid rows of a 5-row board
    y = {"field": "row", "type": "nominal", "sort": order, "title": None,
         "axis": {"labelOverlap": False, "labelLimit": 260}}
    return {
        "data": {"values": data}, "height": {"step": 26},
        "layer": [
            {"mark": {"type": "rule", "strokeWidth": 3, "opacity": 0.5},
             "encoding": {"y": y, "x": {"field": "low", "type": "quantitative", "title": "held-out success (%)",
                                        "scale": {"domain": [0, 100]}}, "x2": {"field": "high"}}},
            {"mark": {"type": "point", "filled": True, "size": 70},
             "encoding": {"y": y, "x": {"field": "heldout", "type": "quantitative"},
                          "tooltip": [{"field": "implementation"}, {"field": "seeds"},
                                      {"field": "heldout", "format": ".1f"},
                                      {"field": "low", "format": ".1f"}, {"field": "high", "format": ".1f"}]}},
        ],
    }


def passk_frame(passk: dict) -> pd.DataFrame:
    """pass@k curves of one environment: index k, one column per model."""
    curves = {label: {int(k): v for k, v in c["pass_at_k"].items()} for label, c in passk.get("curves", {}).items()}
    frame = pd.DataFrame(curves).sort_index()
    frame.index.name = "k"
    return frame


def passk_comparison_frame(rows: list[dict]) -> pd.DataFrame:
    """``lab.compare.passk_comparison`` rows as a table in %: each model against the one it starts from, at
    k = 1 and the largest k, paired over the same problems."""
    return pd.DataFrame([{
        "model": r["model"], "against": r["against"], "k": r["k"], "before %": round(100 * r["before"], 1),
        "after %": round(100 * r["value"], 1), "difference (pts)": round(100 * r["difference"]["mean"], 1),
        "95% low": round(100 * r["difference"]["low"], 1), "95% high": round(100 * r["difference"]["high"], 1),
        "verdict": r["verdict"],
    } for r in rows])


# -- planning with a learned value (issue 20) ---------------------------------------------------------
VALUE_SEARCH_METHODS = {"policy": "the policy alone (sampled episodes)", "uninformed": "best-first, no guidance",
                        "heuristic": "best-first, fixed heuristic", "learned": "best-first, learned value"}


def value_search_frame(record: dict) -> pd.DataFrame:
    """A value-search record (lab.value_search_results) as a table: one row per budget and method, success in %
    with its 95% interval and the calls each method used on average."""
    rows = []
    for b in record["budgets"]:
        for method, label in VALUE_SEARCH_METHODS.items():
            if method not in b["methods"]:  # records written before the uninformed control have three methods
                continue
            m = b["methods"][method]
            s = m["success"]
            length = b.get("plan_length", {}).get(method)
            rows.append({"budget (calls)": b["budget"], "method": label, "solved %": round(100 * s["mean"], 1),
                         "95% low": round(100 * s["low"], 1), "95% high": round(100 * s["high"], 1),
                         "mean calls": round(m["mean_calls"], 1),
                         "mean plan length (puzzles it solved)": None if length is None else round(length, 1)})
    return pd.DataFrame(rows)


def value_search_verdicts(record: dict) -> list[str]:
    """Per budget, the learned value against the heuristic, the policy and (where recorded) unguided search: paired
    difference in points with its interval and verdict (Markdown-safe: numbers formatted as numbers, the stored
    verdict escaped, since a record may be a user's own file)."""
    lines = []
    for b in record["budgets"]:
        parts = []
        for key, against in (("learned_vs_heuristic", "the heuristic"), ("learned_vs_policy", "the policy"),
                             ("learned_vs_uninformed", "no guidance")):
            d = b.get(key)
            if d is None:
                continue
            diff = d["difference"]
            parts.append(f"vs {against} {100 * diff['mean']:+.0f} points [{100 * diff['low']:+.0f}, "
                         f"{100 * diff['high']:+.0f}], {md_escape(d['verdict'])}")
        lines.append(f"{int(b['budget'])} calls, {int(b['n'])} held-out puzzles: learned value "
                     + "; ".join(parts) + ".")
    return lines


# -- multi-agent and active perception (issue 22) ------------------------------------------------------

@dataclass(frozen=True)
class ProxyNote:
    """What a node page says about a node that has no implementation of its own: the closest runnable
    proxy (``link`` to it in the Lab) or that none exists yet, and why."""

    heading: str
    text: str
    link: routes.Link | None = None
    link_label: str = ""


#: the node whose question pass@k answers: does RL add abilities or only sharpen what the base model samples?
PASSK_NODE = "mechanistic-debate"


def passk_note(grids) -> ProxyNote:
    """The mechanistic-debate node's note: where pass@k curves of base, warm-start and RL models are measured
    (grids with a passk file, shipped or the user's own), with a link to the first on the Compare page, or how
    to measure them when none is."""
    measured = [(g.spec.get("name", ""), sorted(g.passk)) for g in grids if g.passk]
    how = ("Measure it on a comparison grid with `python -m lab.compare passk GRID --env ENV` (pass@k for k = 1..64, "
           "unbiased estimator, temperature 1, on held-out problems); the curves then appear on the Compare page.")
    if not measured:
        return ProxyNote("Measured here: pass@k before and after RL (no curves yet).",
                         "No pass@k curves are shipped or in your grids yet. " + how, routes.compare(),
                         "Open the Compare page")
    from lab.compare.results import passk_comparison, passk_reading

    where = "; ".join(f"grid *{md_escape(name)}*: {md_escape(', '.join(envs))}" for name, envs in measured)
    readings = [f"{md_escape(env)}: {md_escape(reading)}" for g in grids for env, record in sorted(g.passk.items())
                if (reading := passk_reading(passk_comparison(record)))]
    found = f" What they show: {' '.join(readings)}" if readings else ""
    return ProxyNote("Measured here: pass@k before and after RL.",
                     f"The debate's test on this project's environments: if RL raises pass@1 but not pass@k at "
                     f"large k, it sharpened what the base model could already sample rather than adding an "
                     f"ability. Curves of the untrained model, the warm start and the best RL cell: {where}.{found}",
                     routes.compare(grid=measured[0][0]), "See the pass@k curves")


def node_proxy_note(node_id: str) -> ProxyNote | None:
    """The node page's proxy note (lab.catalog.node_proxy), or None for a node that is not listed."""
    from lab.catalog import node_proxy

    found = node_proxy(node_id)
    if found is None:
        return None
    impl, reason = found
    if impl is None:
        return ProxyNote("No runnable proxy yet.", reason)
    return ProxyNote(f"Closest runnable proxy: {impl.title}.", reason, run_link(impl),
                     "Run the proxy")

"""The Taxonomy page's data, computed without Streamlit: each dimension as a tree, a graph or an indented
list, the node picker's labels, and a node page's common part (path, sub-nodes, works, related nodes,
survey tables, algorithms, the methods an inferred axis adds). What only some nodes show (their
implementations, measurements, proxies, notes) is in ``app.presentation.node_sections``.

    tree = dimension_tree(cat, "capability")       # a left-to-right tree + index -> node id
    graph = graph_view(cat, "task")                # ECharts graph (nodes, works, algorithms)
    page = node_page(cat, "memory")                # everything the node page shows for every node
"""
from __future__ import annotations

import math
import weakref
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from app import routes
from app.presentation.common import (DIMENSION_COLORS, DIMENSION_LABELS, DIMENSIONS, INFERRED_MIN_CONFIDENCE,
                                     ChartView, shorten, sort_works, table_display, tooltip, work_label)
from papers.catalog import Catalog
from papers.schema import Work

DIMENSION_SHORT = {
    "capability": "Capabilities", "task": "Tasks", "algorithm": "Algorithms", "environment": "Environments",
    "framework": "Frameworks", "foundation": "Sections",
}
WORK_COLOR = "#72B7B2"
ALGORITHM_COLOR = "#EECA3B"


# -- trees, graph and list -------------------------------------------------------------------
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
            name, tip = DIMENSION_SHORT[dimension], tooltip(DIMENSION_LABELS[dimension], f"{n} works")
        else:
            node = tax[nid]
            n = counts[nid]
            name = DIMENSION_SHORT[dimension] if depth_of[nid] == 0 else node.name
            tip = tooltip(node.name, f"{n} work{'s' if n != 1 else ''} · survey section §{node.survey_section}",
                          shorten(node.description), "click to open")
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
                "tooltip": {"formatter": tooltip(node.name, f"taxonomy node · {n} work{'s' if n != 1 else ''}",
                                                 shorten(node.description, 140), "click to open")},
            })
        elif v.startswith("work:"):
            w = catalog.works[v[5:]]
            data.append({
                "id": v, "name": work_label(w, 40), "x": x, "y": y, "category": 1, "symbolSize": 6,
                "itemStyle": {"color": WORK_COLOR},
                "tooltip": {"formatter": tooltip(work_label(w), f"{w.kind} · {w.year or 'n.d.'}",
                                                 shorten(w.title, 120), "click to open")},
            })
        else:
            data.append({
                "id": v, "name": v[10:], "x": x, "y": y, "category": 2, "symbol": "diamond", "symbolSize": 12,
                "itemStyle": {"color": ALGORITHM_COLOR},
                "label": {"show": True, "fontSize": 10},
                "tooltip": {"formatter": tooltip(v[10:], "algorithm", "click to open")},
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


def node_options(catalog: Catalog) -> dict[str, str]:
    """Node id -> "Name · Dimension" for a picker, in tree order per dimension."""
    out = {}
    for dim in DIMENSIONS:
        for r in tree_rows(catalog, dim):
            out[r.node] = f"{r.name} · {DIMENSION_LABELS[dim]} ({r.works})"
    for n in catalog.taxonomy:  # anything a dimension tree missed
        out.setdefault(n.id, f"{n.name} · {DIMENSION_LABELS[n.dimension]}")
    return out


# -- the node page (what every node shows) ------------------------------------------------------
@dataclass(frozen=True)
class NodePage:
    """What every node page shows (``app.presentation.node_sections`` adds what only some nodes show)."""

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

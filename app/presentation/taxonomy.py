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


# the tree's geometry in pixels: ECharts (zrender) nudges a horizontal or vertical line by half a unit of the
# data's own coordinates to draw it crisp, so in pixel units that is half a pixel (in row units it was half a row,
# 12 px: a middle child's edge drawn beside it and edges that seemed to stop short of their child)
ROW_PX = 25.0  # one leaf per row
COLUMN_PX = 260.0  # between depths, at the nominal width below (the chart stretches it to the page's width)
ELBOW_PX = 14.0  # from a parent to the vertical spine its children's edges branch from
CHAR_PX = 7.0  # about one character of a 13 px label
LABEL_GAP_PX = 8.0  # between a node's symbol and its label
SYMBOL_MAX_PX = 18.0  # the largest node symbol (8 + up to 10 px by its works)
LABEL_RISE_PX = 10.0  # an inner node's label is centred this far above its row, clear of the line entering it
LABEL_HALF_PX = 8.0  # half a 13 px label's height


@dataclass(frozen=True)
class TreeLayout:
    """Where a left-to-right tree draws each node, edge and label, in pixels (y grows downwards).

    A node stands in the column of its depth (a leaf too, whatever its depth) and a leaf has a row of its
    own; an inner node stands at the middle of its first and last child. An edge is an elbow: right from the
    parent to its spine (``ELBOW_PX``), along the spine to the child's row, right into the child. A leaf's
    label is on its right, centred on its row; an inner node's label ends just left of it, above the line
    that enters it, and is cut (``label_chars``) before it would reach the spine to its left."""

    order: list  # nodes depth first, the order of the chart's data
    pos: dict  # node -> (x, y)
    depth: dict  # node -> depth (the root 0)
    edges: list  # (parent, child, [(x, y), ...]): the polyline from the parent's point to the child's
    leaves: set
    label_chars: dict  # node -> how many characters of its label are shown (the rest is in the tooltip)
    rows: int


def tree_layout(children: Mapping, root, labels: Mapping, column_px: float = COLUMN_PX) -> TreeLayout:
    """The geometry of the tree below ``root`` (``children``: node -> its children, in order; ``labels``: node ->
    its label text, to size the labels). Pure arithmetic, tested on its own (tests/test_views.py)."""
    order, pos, depth, edges, leaves = [], {}, {}, [], set()
    row = 0

    def place(node, d: int) -> None:
        nonlocal row
        order.append(node)
        depth[node] = d
        kids = list(children.get(node) or [])
        for c in kids:
            place(c, d + 1)
        if kids:
            y = (pos[kids[0]][1] + pos[kids[-1]][1]) / 2
        else:
            y = row * ROW_PX
            row += 1
            leaves.add(node)
        pos[node] = (d * column_px, y)

    place(root, 0)
    for node in order:
        x, y = pos[node]
        spine = x + ELBOW_PX
        for c in children.get(node) or []:
            cx, cy = pos[c]
            path = [(x, y), (spine, y)] + ([(spine, cy)] if cy != y else []) + [(cx, cy)]
            edges.append((node, c, path))
    inner_room = column_px - ELBOW_PX - 2 * LABEL_GAP_PX - SYMBOL_MAX_PX / 2  # from the spine to the node's label
    chars = {n: len(labels[n]) if n in leaves or depth[n] == 0 else min(len(labels[n]), int(inner_room // CHAR_PX))
             for n in order}
    return TreeLayout(order, pos, depth, edges, leaves, chars, row)


def label_box(layout: TreeLayout, node) -> tuple[float, float, float, float]:
    """The box (left, top, right, bottom) a node's label can take as ``dimension_tree`` places it, whatever the
    size of the node's symbol (up to ``SYMBOL_MAX_PX``)."""
    x, y = layout.pos[node]
    width = CHAR_PX * layout.label_chars[node]
    if node in layout.leaves:
        return (x + LABEL_GAP_PX, y - LABEL_HALF_PX, x + SYMBOL_MAX_PX / 2 + LABEL_GAP_PX + width, y + LABEL_HALF_PX)
    mid = y - LABEL_RISE_PX
    return (x - SYMBOL_MAX_PX / 2 - LABEL_GAP_PX - width, mid - LABEL_HALF_PX, x - LABEL_GAP_PX, mid + LABEL_HALF_PX)


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: max(chars - 1, 1)].rstrip() + "…"


def dimension_tree(catalog: Catalog, dimension: str) -> ChartView:
    """A left-to-right tree (dendrogram) of one dimension; ``ids[i]`` is the node id of data index ``i`` (None
    for the points where an edge bends, and for the synthetic root that several roots hang from).

    Drawn as an ECharts graph at the fixed positions of ``tree_layout`` (pixels), its elbow edges as straight
    links through bend points that draw nothing. Several roots (the survey's sections) hang from one synthetic
    root, whose id is None.
    """
    tax = catalog.taxonomy
    counts = node_counts(catalog)
    color = DIMENSION_COLORS[dimension]
    roots = dimension_roots(catalog, dimension)
    children: dict[str | None, list[str]] = {None: roots} if len(roots) > 1 else {}

    def collect(nid: str) -> None:
        children[nid] = dimension_children(catalog, nid)
        for c in children[nid]:
            collect(c)

    for r in roots:
        collect(r)
    top = None if len(roots) > 1 else roots[0]

    def count(nid: str | None) -> int:
        return len({k for r in roots for k in catalog.graph.works_of(r)}) if nid is None else counts[nid]

    def text(nid: str | None) -> str:
        name = DIMENSION_SHORT[dimension] if nid == top else tax[nid].name
        return f"{name} ({count(nid)})"

    labels = {nid: text(nid) for nid in children.keys() | {c for kids in children.values() for c in kids}}
    layout = tree_layout(children, top, labels)
    ids: list[str | None] = []
    data, links = [], []
    index: dict = {}
    for nid in layout.order:
        x, y = layout.pos[nid]
        n = count(nid)
        leaf = nid in layout.leaves
        if nid is None:
            tip = tooltip(DIMENSION_LABELS[dimension], f"{n} works")
        else:
            node = tax[nid]
            tip = tooltip(node.name, f"{n} work{'s' if n != 1 else ''} · survey section §{node.survey_section}",
                          shorten(node.description), "click to open")
        index[nid] = len(data)
        ids.append(nid)
        label = {"show": True, "fontSize": 13, "formatter": _cut(labels[nid], layout.label_chars[nid]).replace("{", "(")
                 .replace("}", ")"),
                 "fontWeight": "bold" if layout.depth[nid] <= 1 and not leaf else "normal"}
        # a leaf: right of it, on its row; an inner node: ending left of it, above the line that enters it
        size = 8 + min(SYMBOL_MAX_PX - 8, 1.7 * math.sqrt(n))
        # a position in pixels counts from the top left corner of the node's symbol
        label.update({"position": "right", "distance": LABEL_GAP_PX} if leaf else
                     {"position": [-LABEL_GAP_PX, size / 2 - LABEL_RISE_PX], "align": "right", "verticalAlign": "middle"})
        data.append({
            "name": labels[nid], "x": x, "y": y, "value": n,
            "symbolSize": size,
            "itemStyle": {"color": color if n else "#ffffff", "borderColor": color, "borderWidth": 1.5},
            "label": label, "tooltip": {"formatter": tip},
        })
    bend_style = {"symbolSize": 0, "label": {"show": False}, "tooltip": {"show": False}, "value": 0,
                  "itemStyle": {"opacity": 0}, "emphasis": {"disabled": True}}
    bends: dict[tuple[float, float], int] = {}
    for parent, child, path in layout.edges:
        points = []
        for i, (x, y) in enumerate(path):
            if i in (0, len(path) - 1):
                continue
            if (x, y) not in bends:  # a parent's bend points are shared by its children's edges
                bends[(x, y)] = len(data)
                ids.append(None)
                # ECharts' graph keys its points by name: each bend point needs its own (never shown)
                data.append({"name": f"bend {len(bends)}", "x": x, "y": y, **bend_style})
            points.append(bends[(x, y)])
        ends = [index[parent], *points, index[child]]
        links.extend({"source": a, "target": b} for a, b in zip(ends, ends[1:]) if a != b)
    links = [dict(t) for t in dict.fromkeys(tuple(sorted(link.items())) for link in links)]  # shared spine parts once
    leaf_right = max(len(_cut(labels[n], layout.label_chars[n])) for n in layout.leaves)
    top_px, bottom_px = 30, 20
    spec = {
        "animation": False,
        "tooltip": {"trigger": "item", "confine": True, "extraCssText": "max-width: 360px; white-space: normal;"},
        "series": [{
            "type": "graph", "layout": "none", "data": data, "links": links, "roam": False,
            "left": 30 + CHAR_PX * len(labels[top]), "right": min(30 + CHAR_PX * leaf_right, 420),
            "top": top_px, "bottom": bottom_px,
            "selectedMode": "single", "select": {"itemStyle": {"borderColor": "#111", "borderWidth": 2.5}},
            "lineStyle": {"color": color, "opacity": 0.55, "width": 1.2, "curveness": 0},
            "emphasis": {"scale": False, "lineStyle": {"width": 1.2}},
            "labelLayout": {"hideOverlap": False},
        }],
    }
    # the box between top and bottom is exactly the rows' height: one data pixel is one screen pixel vertically
    return ChartView(spec, ids, height=int(top_px + bottom_px + ROW_PX * max(layout.rows - 1, 1)))


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

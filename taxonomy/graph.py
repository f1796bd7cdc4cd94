"""A networkx graph of taxonomy nodes and works, with the queries the explorer needs.

Vertices are namespaced: ``node:<id>``, ``work:<key>``, ``algorithm:<name>``. Edges point
work -> node (placed in), node -> parent (child of), work -> algorithm (uses), and
algorithm -> node where an algorithm has its own taxonomy node (is described by).
The taxonomy package knows nothing about the catalog: works arrive as plain mappings.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

import networkx as nx
import pandas as pd

from taxonomy.tree import Taxonomy


def _n(i: str) -> str:
    return f"node:{i}"


def _w(k: str) -> str:
    return f"work:{k}"


class AtlasGraph:
    def __init__(
        self,
        taxonomy: Taxonomy,
        placements: Mapping[str, Iterable[str]],
        algorithms: Mapping[str, Iterable[str]] | None = None,
    ):
        self.taxonomy = taxonomy
        g = nx.DiGraph()
        for node in taxonomy:
            g.add_node(_n(node.id), kind="node", label=node.name, dimension=node.dimension)
        for node in taxonomy:
            if node.parent:
                g.add_edge(_n(node.id), _n(node.parent), rel="child_of")
        algo_nodes = {n.name.lower(): n.id for n in taxonomy if n.dimension == "algorithm"}
        for key, nodes in placements.items():
            g.add_node(_w(key), kind="work", label=key)
            for node_id in nodes:
                if node_id not in taxonomy:
                    raise KeyError(f"work '{key}' is placed in unknown node '{node_id}'")
                g.add_edge(_w(key), _n(node_id), rel="placed_in")
        for key, algos in (algorithms or {}).items():
            for algo in algos:
                a = f"algorithm:{algo}"
                if a not in g:
                    g.add_node(a, kind="algorithm", label=algo)
                    if algo.lower() in algo_nodes:
                        g.add_edge(a, _n(algo_nodes[algo.lower()]), rel="described_by")
                g.add_edge(_w(key), a, rel="uses")
        self.g = g

    # -- taxonomy queries ------------------------------------------------------------------
    def ancestors(self, node_id: str) -> list[str]:
        return self.taxonomy.ancestors(node_id)

    def descendants(self, node_id: str) -> list[str]:
        return self.taxonomy.descendants(node_id)

    def nodes_of(self, key: str, expand: bool = False) -> list[str]:
        """Nodes a work is placed in; with ``expand`` their ancestors too."""
        direct = [v[5:] for _, v, d in self.g.out_edges(_w(key), data=True) if d["rel"] == "placed_in"]
        if not expand:
            return direct
        out: list[str] = []
        for nid in direct:
            out.extend(self.taxonomy.path(nid))
        return list(dict.fromkeys(out))

    def works_of(self, node_id: str, include_descendants: bool = True) -> list[str]:
        """Works placed in the node (and, by default, in any node below it), sorted by key."""
        if node_id not in self.taxonomy:
            raise KeyError(node_id)
        targets = [node_id] + (self.descendants(node_id) if include_descendants else [])
        keys = {u[5:] for t in targets for u, _ in self.g.in_edges(_n(t)) if u.startswith("work:")}
        return sorted(keys)

    def algorithms_of(self, key: str) -> list[str]:
        return [v[10:] for v in self.g.successors(_w(key)) if v.startswith("algorithm:")]

    def works_using(self, algorithm: str) -> list[str]:
        a = f"algorithm:{algorithm}"
        return sorted(u[5:] for u in self.g.predecessors(a)) if a in self.g else []

    def cooccurrence(self, row_dim: str = "capability", col_dim: str = "task", level: int = 1) -> pd.DataFrame:
        """Count of works placed under both a ``row_dim`` node and a ``col_dim`` node (ids as labels).

        ``level`` 1 groups by the children of each dimension's root (Planning, Tool use, ...),
        so a work placed in "tool-use-react-style" counts under "tool-use".
        """
        def grouped(dim: str) -> dict[str, set[str]]:
            groups: dict[str, set[str]] = {}
            for root in self.taxonomy.roots(dim):
                heads = self.taxonomy.children.get(root, []) if level >= 1 else [root]
                for head in heads:
                    groups[head] = set(self.works_of(head, include_descendants=True))
            return groups

        rows, cols = grouped(row_dim), grouped(col_dim)
        data = [[len(rows[r] & cols[c]) for c in cols] for r in rows]
        return pd.DataFrame(
            data, index=pd.Index(list(rows), name=row_dim), columns=pd.Index(list(cols), name=col_dim)
        )

    def related_works(self, key: str, n: int = 10) -> list[tuple[str, int]]:
        """Works sharing placement nodes with ``key``, most shared nodes first (ties by key)."""
        counts: Counter[str] = Counter()
        for nid in self.nodes_of(key):
            for u, _ in self.g.in_edges(_n(nid)):
                if u.startswith("work:") and u != _w(key):
                    counts[u[5:]] += 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    def related_nodes(self, node_id: str, n: int = 8) -> list[tuple[str, int]]:
        """Other nodes whose works overlap this node's works most (excluding its own subtree and path)."""
        own = set(self.works_of(node_id))
        skip = {node_id, *self.descendants(node_id), *self.ancestors(node_id)}
        counts: Counter[str] = Counter()
        for key in own:
            for nid in self.nodes_of(key):
                if nid not in skip:
                    counts[nid] += 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

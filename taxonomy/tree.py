"""Load and validate the taxonomy (nodes.yaml facts + descriptions.yaml prose) into a ``Taxonomy``."""
from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from pathlib import Path

import yaml
from pydantic import ValidationError

from taxonomy.errors import DataError
from taxonomy.schema import Node

DATA_DIR = Path(__file__).resolve().parent / "data"
# libyaml's safe loader where PyYAML has it: the same documents, ten times faster than the pure-Python one
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read_yaml(path: Path):
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)  # noqa: S506  (a safe loader)
    except FileNotFoundError:
        raise DataError(path, "file not found") from None
    except yaml.YAMLError as e:
        raise DataError(path, f"not valid YAML ({e})") from None


class Taxonomy:
    """The survey's section tree. Node ids are unique, parents exist, there are no cycles."""

    def __init__(self, nodes: list[Node], source: str = "<memory>"):
        self.source = source
        self.nodes: dict[str, Node] = {}
        for n in nodes:
            if n.id in self.nodes:
                raise DataError(source, "duplicate node id", row=f"node '{n.id}'", field="id")
            self.nodes[n.id] = n
        for n in nodes:
            if n.parent is not None and n.parent not in self.nodes:
                raise DataError(source, f"parent '{n.parent}' is not a node", row=f"node '{n.id}'", field="parent")
        for n in nodes:  # walk up from every node: a repeat means a cycle
            seen, cur = [n.id], n.parent
            while cur is not None:
                if cur in seen:
                    cycle = " -> ".join(seen[seen.index(cur):] + [cur])
                    raise DataError(source, f"parent cycle {cycle}", row=f"node '{n.id}'", field="parent")
                seen.append(cur)
                cur = self.nodes[cur].parent

    @classmethod
    def load(cls, nodes_file: Path | None = None, descriptions_file: Path | None = None) -> "Taxonomy":
        nodes_file = Path(nodes_file or DATA_DIR / "nodes.yaml")
        descriptions_file = Path(descriptions_file or DATA_DIR / "descriptions.yaml")
        raw = _read_yaml(nodes_file)
        if not isinstance(raw, dict) or not isinstance(raw.get("nodes"), list):
            raise DataError(nodes_file, "expected a mapping with a 'nodes' list")
        descriptions = _read_yaml(descriptions_file) or {}
        if not isinstance(descriptions, dict):
            raise DataError(descriptions_file, "expected a mapping from node id to description")
        nodes = []
        for i, rec in enumerate(raw["nodes"], 1):
            if not isinstance(rec, dict):
                raise DataError(nodes_file, "expected a mapping", row=f"node #{i}")
            node_id = rec.get("id", f"#{i}")
            desc = descriptions.get(node_id)
            if not isinstance(desc, str) or not desc.strip():
                raise DataError(descriptions_file, "missing description", row=f"node '{node_id}'", field="description")
            try:
                nodes.append(Node(**rec, description=" ".join(desc.split())))
            except ValidationError as e:
                err = e.errors()[0]
                field = ".".join(str(x) for x in err["loc"])
                raise DataError(nodes_file, err["msg"], row=f"node '{node_id}'", field=field) from None
        unknown = sorted(set(descriptions) - {n.id for n in nodes})
        if unknown:
            raise DataError(descriptions_file, "description for an unknown node", row=f"node '{unknown[0]}'")
        return cls(nodes, source=str(nodes_file))

    # -- queries ---------------------------------------------------------------------------
    def __contains__(self, node_id: str) -> bool:
        return node_id in self.nodes

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes.values())

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, node_id: str) -> Node:
        return self.nodes[node_id]

    @cached_property
    def children(self) -> dict[str | None, list[str]]:
        kids: dict[str | None, list[str]] = {}
        for n in self.nodes.values():
            kids.setdefault(n.parent, []).append(n.id)
        return kids

    def roots(self, dimension: str | None = None) -> list[str]:
        return [i for i in self.children.get(None, []) if dimension is None or self.nodes[i].dimension == dimension]

    def ancestors(self, node_id: str) -> list[str]:
        """Ancestors from the parent up to the root."""
        out, cur = [], self.nodes[node_id].parent
        while cur is not None:
            out.append(cur)
            cur = self.nodes[cur].parent
        return out

    def path(self, node_id: str) -> list[str]:
        """Root-to-node path (a breadcrumb)."""
        return list(reversed(self.ancestors(node_id))) + [node_id]

    def descendants(self, node_id: str) -> list[str]:
        out, stack = [], list(self.children.get(node_id, []))
        while stack:
            cur = stack.pop(0)
            out.append(cur)
            stack.extend(self.children.get(cur, []))
        return out

    def top_level(self, node_id: str) -> str:
        """The node's root ancestor (itself if it is a root)."""
        return self.path(node_id)[0]

    def by_dimension(self, dimension: str) -> list[str]:
        return [n.id for n in self.nodes.values() if n.dimension == dimension]

    def suggest(self, text: str, n: int = 3) -> list[str]:
        """Close node ids or names for a misspelled one (for 'did you mean' messages)."""
        import difflib

        ids = difflib.get_close_matches(text, list(self.nodes), n=n, cutoff=0.5)
        names = {nd.name.lower(): nd.id for nd in self.nodes.values()}
        ids += [names[m] for m in difflib.get_close_matches(text.lower(), list(names), n=n, cutoff=0.5)]
        return list(dict.fromkeys(ids))[:n]

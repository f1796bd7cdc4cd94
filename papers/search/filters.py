"""Search filters: which works a query may return, and clear errors for unknown values."""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field, fields

from papers.catalog import UnknownKeyError


class UnknownFilterValueError(UnknownKeyError, ValueError):
    """An unknown value given to a search filter; names the value, the filter and close matches.

    It is an ``UnknownKeyError`` (the CLI prints it and exits 2) and a ``ValueError``.
    """

    def __init__(self, filter_name: str, value: object, suggestions: list[str], what: str | None = None):
        super().__init__(what or filter_name, str(value), suggestions)
        self.filter = filter_name
        hint = f" (did you mean: {', '.join(suggestions)}?)" if suggestions else ""
        self.args = (f"unknown {what or 'value'} '{value}' in search filter '{filter_name}'{hint}",)


@dataclass
class SearchFilters:
    """All given filters must hold (AND); the values inside one list are alternatives (OR).

    nodes / exclude_nodes: taxonomy node ids (or exact node names), each with its descendants.
    dimensions: taxonomy dimensions of the work's placement nodes (capability, task, ...).
    year_from / year_to: inclusive; works without a year are left out when either is set.
    kinds / exclude_kinds: work kinds (method, benchmark, ...). algorithms: names such as 'GRPO'
    (case-insensitive) or algorithm node ids such as 'alg-grpo'. has_code: True/False/None.
    keys: None (no restriction) or the only work keys allowed, e.g. the works of an author or of a
    tag (papers.authors, papers.annotations); an empty list matches nothing.
    """

    nodes: list[str] = field(default_factory=list)
    dimensions: list[str] = field(default_factory=list)
    year_from: int | None = None
    year_to: int | None = None
    kinds: list[str] = field(default_factory=list)
    algorithms: list[str] = field(default_factory=list)
    has_code: bool | None = None
    exclude_nodes: list[str] = field(default_factory=list)
    exclude_kinds: list[str] = field(default_factory=list)
    keys: list[str] | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("year_from", "year_to", "has_code"):
                continue
            if f.name == "keys":
                if v is not None:
                    self.keys = [v] if isinstance(v, str) else list(v)
                continue
            if v is None:
                setattr(self, f.name, [])
            elif isinstance(v, str):
                setattr(self, f.name, [v])
            else:
                setattr(self, f.name, list(v))
        for name in ("year_from", "year_to"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                try:
                    v = int(str(v).strip())
                except ValueError:
                    raise UnknownFilterValueError(name, v, [], what="year") from None
                setattr(self, name, v)
        if self.year_from is not None and self.year_to is not None and self.year_from > self.year_to:
            raise ValueError(f"search filter year_from={self.year_from} is after year_to={self.year_to}")
        if self.has_code is not None and not isinstance(self.has_code, bool):
            raise UnknownFilterValueError("has_code", self.has_code, ["True", "False", "None"])

    def is_empty(self) -> bool:
        return not any((self.nodes, self.dimensions, self.kinds, self.algorithms, self.exclude_nodes,
                        self.exclude_kinds)) and self.year_from is None and self.year_to is None and self.has_code is None \
            and self.keys is None

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def close(value: str, options: list[str], n: int = 3, cutoff: float = 0.5) -> list[str]:
    low = {o.casefold(): o for o in options}
    return [low[m] for m in difflib.get_close_matches(str(value).casefold(), list(low), n=n, cutoff=cutoff)]

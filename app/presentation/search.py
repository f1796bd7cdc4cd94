"""The Search page's data, computed without Streamlit: the search as URL parameters and back (unknown values
reported, not failing), why a hit matched, hits as a table and a result's code / arXiv links.

    state, problems = SearchState.from_params({"q": ["memory"], "kind": ["method"]}, cat)
    hits = index.search(state.q, filters=SearchFilters(**state.filter_kwargs()))
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import pandas as pd

from app.presentation.common import DIMENSIONS, all_params, first_param, lookup_node, md_escape, safe_url, works_frame
from papers.catalog import Catalog
from papers.schema import KINDS


def md_link(label: str, url: str) -> str:
    """A Markdown link to a web URL (brackets and parentheses percent-encoded), or '' if not a web URL."""
    from urllib.parse import quote

    url = safe_url(url)
    return f"[{md_escape(label)}]({quote(url, safe=':/?#@$&*+,;=%-._~')})" if url else ""


def _flag(value: str) -> bool | None:
    v = value.strip().lower()
    if v in ("1", "true", "yes", "on", "y"):
        return True
    if v in ("0", "false", "no", "off", "n"):
        return False
    return None


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


@dataclass(frozen=True)
class ExportChoice:
    """One set of results the Search page can export: its label in the picker and the file name's stem, both
    saying which set it is (the top-ranked works or every match)."""

    label: str
    count: int
    stem: str


def export_choices(total: int, top: int = PAGE_SIZE, like: bool = False) -> list[ExportChoice]:
    """What a search can export, the default first: the ``top`` ranked works, then all ``total`` matches (one
    choice when they are the same set)."""
    what = "similar works" if like else "matches"
    shown = min(top, total)
    choices = [ExportChoice(f"The top {shown} (ranked)", shown, f"atlas-search-top{shown}")]
    if total > shown:
        choices.append(ExportChoice(f"All {total} {what}", total, f"atlas-search-all{total}"))
    return choices


def show_more_like_top(query: str, like: bool, hits: int) -> bool:
    """Whether the page offers "More like the top 3": only for a typed query with more than one hit (without a
    query the list is the catalog newest first, and the top 3 are no one's choice)."""
    return bool(query.strip()) and not like and hits > 1


#: how a result's title link looks: coloured and underlined like a link, not like the sidebar's page links
RESULT_TITLE_CSS = """
[class*="st-key-hit-"] [data-testid="stPageLink-NavLink"] p,
[class*="st-key-hit-"] [data-testid="stPageLink-NavLink"] span {
  color: var(--primary-color, #1c6bd1); text-decoration: underline; text-underline-offset: 3px;
}
"""

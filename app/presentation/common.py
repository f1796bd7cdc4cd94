"""What several pages share, computed without Streamlit: URL parameters and lookups, Markdown escaping and
safe links, the dimensions' names and colours, the chart container, works tables and survey-table display.

Each page's own data lives in the module named after it (``app.presentation.overview`` for
``app/views/overview.py``, and so on); a name is here only when more than one page uses it.

    first_param({"q": ["memory"]}, "q")            # "memory": the last value of a URL parameter
    lookup_node(cat, "Memory").found               # "memory": a node by id or name, with suggestions
    md_escape("Search-R1 (v2)")                    # "Search-R1 \\(v2\\)": user text as literal Markdown
"""
from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from app import routes
from papers.catalog import Catalog
from papers.schema import Work
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
# one colour per dimension, used by every chart so a dimension looks the same everywhere
DIMENSION_COLORS = {
    "capability": "#4C78A8",
    "task": "#F58518",
    "algorithm": "#54A24B",
    "environment": "#B279A2",
    "framework": "#E45756",
    "foundation": "#9D9D9D",
}

#: the survey's Table 2 (RL algorithm variants): the Algorithms page, and a count on the Overview
TABLE2 = "table02_rl_algorithm_variants"


# -- small helpers ---------------------------------------------------------------------------
def shorten(text: str, n: int = 180) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1].rsplit(" ", 1)[0] + " …"


def tooltip(*lines: str) -> str:
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
# Streamlit renders ``:material/name:`` as an icon and ``:name:`` as an emoji after escapes are resolved, so
# ``\:`` does not stop them either: a WORD JOINER right after the opening colon does
_ICON_CODE = re.compile(r"(?<=:)(?=material/|[\w+-]+:)", re.IGNORECASE)


def md_escape(text: object) -> str:
    """User- or URL-supplied text as literal Markdown, on one line.

    No link, image (a remote fetch), HTML, heading, list, emphasis, table, ``:color[...]``
    directive, ``:emoji:`` or ``:material/icon:`` code, ``$math$`` or bare ``www.`` / ``https://`` / e-mail
    autolink survives, and plain text ("Search-R1: a 2025 method") is left as it is.
    """
    out = _MD_ALWAYS.sub(r"\\\1", " ".join(str(text).split()))
    out = _MD_CONTEXT.sub(lambda m: "".join(("\\" + g if g and not g.isdigit() else (g or "")) for g in m.groups()), out)
    return _ICON_CODE.sub("\u2060", _AUTOLINK.sub("\u2060", out))


def safe_url(url: str) -> str:
    """``url`` when it is an absolute http(s) link, else '' (no javascript:, data: or relative links)."""
    url = (url or "").strip()
    return url if re.match(r"https?://[^\s/?#]+", url, re.IGNORECASE) and not re.search(r"\s", url) else ""


def work_label(work: Work, n: int = 60) -> str:
    return work.name or shorten(work.title, n)


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


# -- charts and inferred axes ---------------------------------------------------------------
@dataclass(frozen=True)
class ChartView:
    """An ECharts option dict and what each clickable data index stands for."""

    spec: dict
    ids: list
    height: int = 400


#: confidence from which an inferred axis is shown (docs/axis_inference.md: on the 41 methods the survey
#: places on both axes, first choices at >= 0.3 hit the survey's section 90 % of the time, its node 80 %)
INFERRED_MIN_CONFIDENCE = 0.3


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


# -- survey tables and algorithm nodes --------------------------------------------------------
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


def algorithm_nodes(catalog: Catalog) -> dict[str, str]:
    """Algorithm name (lower case) -> its taxonomy node id."""
    return {n.name.lower(): n.id for n in catalog.taxonomy if n.dimension == "algorithm"}

"""The Work page's data, computed without Streamlit: a work's facts, links, placements, algorithms, survey-table
rows and related works, and the labels of the work picker.

    page = work_page(cat, "search-r1")
    st.markdown(facts_markdown(page.facts))
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from app.presentation.common import algorithm_nodes, md_escape, safe_url, shorten, sort_works, table_display
from papers.authors import is_truncated, split_authors
from papers.catalog import Catalog
from papers.schema import Work
from papers.verification import provenance


@dataclass(frozen=True)
class WorkPage:
    work: Work
    facts: list[tuple[str, str]]
    links: list[tuple[str, str]]               # (label, url)
    placements: list[list[tuple[str, str]]]    # one breadcrumb per placement: [(id, name), ...]
    algorithms: list[tuple[str, str | None]]   # (algorithm, its taxonomy node or None)
    tables: list[tuple[str, pd.DataFrame]]
    related: list[tuple[Work, int]]            # works sharing placements: (work, shared nodes)


def work_page(catalog: Catalog, key: str) -> WorkPage:
    w = catalog.get(key)
    tax = catalog.taxonomy
    facts = [
        ("Name", w.name),
        # the survey's reference list as stored in the catalog; a variant that differs only in letter case says
        # nothing (the imported list lost the case of names like DeepSeekMath), so it is not shown
        ("Title in the survey's reference list",
         w.title_original if w.title_original and w.title_original.casefold() != w.title.casefold() else ""),
        ("Year", str(w.year) if w.year else ""),
        # a published work is dated by its venue; when it first appeared on arXiv earlier, say so
        ("First on arXiv", str(w.year_arxiv) if w.year_arxiv and w.year_arxiv != w.year else ""),
        ("Venue", w.venue),
        ("Kind", w.kind),
        ("arXiv", w.arxiv_id),
        ("Reward", w.reward_type),
        ("Also known as", ", ".join(w.aliases)),
        ("Authors", getattr(w, "authors", "")),
        ("Author list", f"incomplete: the first {len(split_authors(w.authors))} names only (exports say et al.)"
         if is_truncated(w.authors) else ""),
        # what the facts above rest on: an independent source per field, or only the survey's own entry
        ("Facts rest on", provenance(w.key, w.venue, w.url, w.survey_refs) if w.origin == "survey" else ""),
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
        label = f"{w.name} ({w.year or 'n.d.'}) — {shorten(w.title, 70)}" if w.name else f"{shorten(w.title, 90)} ({w.year or 'n.d.'})"
        out[w.key] = label
    return out

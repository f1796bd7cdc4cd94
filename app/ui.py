"""Streamlit building blocks shared by the pages: links, breadcrumbs, work tables, URL state.

Data shaping lives in ``app.presentation`` and every page's route in ``app.routes``; this module
only turns their results into elements. Navigation from a click (a chart point, a table row, a
picker) goes through ``goto``: the callback records the target and ``follow_goto`` (called by the
entry script before the page runs) switches page, so every view ends up as a URL with query parameters.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import streamlit as st

from app import routes
from app.presentation.common import ChartView, first_selected, md_escape, params_dict
from app.routes import Link

# the page icon ships with the app (Streamlit inlines an SVG as a data: URI); a ":material/...:"
# icon would make the browser fetch it from a font CDN, and the explorer must work offline
PAGE_ICON = Path(__file__).resolve().parent / "assets" / "atlas-icon.svg"

# text from a URL, an imported work or a run goes through this before it reaches Markdown
md = md_escape

_GOTO = "_atlas_goto"
_NONCE = "_atlas_nonce"


# -- navigation --------------------------------------------------------------------------------
def goto(link: Link) -> None:
    """Ask for a page switch (safe inside widget callbacks); ``follow_goto`` performs it."""
    st.session_state[_GOTO] = link


def follow_goto() -> None:
    link = st.session_state.pop(_GOTO, None)
    if link:
        st.session_state[_NONCE] = st.session_state.get(_NONCE, 0) + 1
        st.switch_page(link.script, query_params=dict(link.query))


def nonce() -> int:
    """Changes on every goto: clickable charts key on it, so a stale click is never replayed."""
    return st.session_state.get(_NONCE, 0)


def params() -> dict[str, list[str]]:
    """The URL's query parameters as ``{name: [values]}``."""
    return params_dict(st.query_params)


def set_params(new: Mapping[str, str | list[str]]) -> None:
    """Replace the URL's query parameters, unless they already say the same."""
    current = params()
    normal = {k: (list(v) if isinstance(v, (list, tuple)) else [str(v)]) for k, v in new.items()}
    if current != normal:
        st.query_params.from_dict(dict(new))


def seed_widgets(scope: str, url_state: Mapping[str, Any]) -> None:
    """Make widget keys follow the URL when the URL changed since the last run.

    ``url_state`` maps widget keys to the values the URL implies. On the first run, after a
    link or the back button, the widgets are set from it; while the user edits widgets, the
    page publishes their values back with ``publish`` and the URL is left alone.
    """
    marker = f"_atlas_url::{scope}"
    if st.session_state.get(marker) != dict(url_state) or any(k not in st.session_state for k in url_state):
        for k, v in url_state.items():
            st.session_state[k] = v
    st.session_state[marker] = dict(url_state)


def publish(scope: str, widget_state: Mapping[str, Any], new_params: Mapping[str, str | list[str]]) -> None:
    """Write the widgets' values to the URL (so the view is a link) and remember them."""
    remember(scope, widget_state)
    set_params(new_params)


def remember(scope: str, widget_state: Mapping[str, Any]) -> None:
    """Record the widgets' values as what the URL will say (for a scope whose parameters another
    scope's ``publish`` writes), so ``seed_widgets`` does not reset them on the next run."""
    st.session_state[f"_atlas_url::{scope}"] = dict(widget_state)


# -- links -------------------------------------------------------------------------------------
def page_link(link: Link, label: str, icon: str | None = None, help: str | None = None) -> None:
    st.page_link(link.script, label=label, icon=icon, query_params=dict(link.query), help=help)


def node_link(node_id: str, label: str, icon: str | None = None, help: str | None = None) -> None:
    page_link(routes.node(node_id), label, icon, help)


def work_link(key: str, label: str, icon: str | None = None, help: str | None = None) -> None:
    page_link(routes.work(key), label, icon, help)


def search_link(label: str, icon: str | None = ":material/search:", **query: str | list[str]) -> None:
    page_link(routes.search(**query), label, icon)


def breadcrumb(path: Sequence[tuple[str, str]], current: bool = True) -> None:
    """Root-to-node links on one line; the last one is the current node when ``current``."""
    with st.container(horizontal=True, gap="small", vertical_alignment="center"):
        page_link(routes.page("taxonomy"), "Taxonomy", icon=":material/account_tree:")
        for i, (nid, name) in enumerate(path):
            st.markdown("›", width="content")
            if current and i == len(path) - 1:
                st.markdown(f"**{md(name)}**", width="content")
            else:
                node_link(nid, name)


def chips(items: Iterable[tuple[str, Link]], empty: str | None = None) -> None:
    """Links on one wrapping line: ``(label, link)``."""
    items = list(items)
    if not items:
        if empty:
            st.caption(empty)
        return
    with st.container(horizontal=True, gap="small", wrap=True):
        for label, link in items:
            page_link(link, md(label))


# -- tables of works -----------------------------------------------------------------------------
WORK_COLUMNS = {
    "open": st.column_config.LinkColumn("", display_text="open", width=50, help="Open the work's page in a new tab"),
    "name": st.column_config.TextColumn("Name", width="small"),
    "title": st.column_config.TextColumn("Title", width="large"),
    "year": st.column_config.NumberColumn("Year", format="%d", width=60),
    "kind": st.column_config.TextColumn("Kind", width="small"),
    "code": st.column_config.LinkColumn("Code", display_text="code", width=60),
    "arxiv": st.column_config.LinkColumn("arXiv", display_text=r"abs/(.*)$", width="small"),
    "nodes": st.column_config.TextColumn("Placed in", width="medium"),
    "why": st.column_config.TextColumn("Why it matched", width="medium"),
    "score": st.column_config.ProgressColumn("Score", format="%.2f", min_value=0.0, max_value=1.0, width="small"),
}


def _open_selected_row(table_key: str, keys: list[str]) -> None:
    state = st.session_state.get(table_key)
    rows = list(getattr(getattr(state, "selection", None), "rows", []) or [])
    if rows and 0 <= rows[0] < len(keys):
        goto(routes.work(keys[rows[0]]))


def works_table(frame, key: str, height: int | str | None = None, columns: Sequence[str] | None = None) -> None:
    """A table of works (``app.presentation.common.works_frame``); selecting a row opens the work's page."""
    if frame.empty:
        st.caption("No works.")
        return
    cols = list(columns or ["open", "name", "title", "year", "kind", "code", "arxiv", "nodes"])
    keys = list(frame["key"])
    st.dataframe(
        frame[cols], key=key, hide_index=True, width="stretch", column_config={c: WORK_COLUMNS.get(c) for c in cols},
        on_select=partial(_open_selected_row, key, keys), selection_mode="single-row",
        height=height if height is not None else ("auto" if len(frame) <= 12 else 460),
    )


def survey_tables(tables: Sequence[tuple[str, Any]], key: str) -> None:
    """Survey-table rows, one expander per table; rows link to their works."""
    if not tables:
        st.caption("No rows in the survey's tables.")
        return
    for i, (title, frame) in enumerate(tables):
        with st.expander(f"{title} — {len(frame)} row{'s' if len(frame) != 1 else ''}", expanded=len(tables) == 1):
            config = {"open": st.column_config.LinkColumn("", display_text="open", width=50)}
            if "work_key" in frame.columns:
                config["work_key"] = None
            st.dataframe(frame, hide_index=True, width="stretch", column_config=config, key=f"{key}-{i}")


def not_found(what: str, value: str, suggestions: Sequence[tuple[str, Link]], search_query: str | None = None) -> None:
    """A friendly "not found" with close matches and a search link, never a traceback.

    ``value`` comes from the URL: it is shown as literal text (a shared link cannot inject markup).
    """
    shown = md(value[:200] + ("…" if len(value) > 200 else "")) if value else "(empty)"
    st.warning(f"No {what} called **{shown}** in the Atlas.", icon=":material/search_off:")
    if suggestions:
        st.markdown("Did you mean:")
        chips(suggestions)
    if search_query:
        search_link(f"Search the catalog for “{md(search_query[:200])}”", q=search_query)


def echarts(view: ChartView, key: str, on_pick: Callable[[int | None], None] | None = None,
            alt: str | None = None, series_index: int | None = 0):
    """An ECharts chart; with ``on_pick``, a click calls ``on_pick(data index)`` (None: deselected).

    Drawn as SVG: crisp at any zoom, and its labels are real text (findable, clickable in tests).
    """
    if on_pick is None:
        return st.echarts_chart(view.spec, key=key, height=view.height, alt=alt, renderer="svg")

    def _changed() -> None:
        on_pick(first_selected(st.session_state.get(key), series_index))

    return st.echarts_chart(view.spec, key=key, height=view.height, on_select=_changed, alt=alt, renderer="svg")


# -- authors, exports, tags and notes ------------------------------------------------------------
EXPORT_BUTTONS = (  # (format, label, file extension, MIME type)
    ("bibtex", "BibTeX", "bib", "application/x-bibtex"),
    ("cslj", "CSL-JSON", "json", "application/vnd.citationstyles.csl+json"),
    ("ris", "RIS", "ris", "application/x-research-info-systems"),
    ("arxiv-ids", "arXiv ids", "txt", "text/plain"),
    ("csv", "CSV", "csv", "text/csv"),
)


def author_line(work, shown: int = 12) -> None:
    """The work's authors (each a link to their works), where they were read, and the check."""
    from papers.authors import is_truncated, split_authors

    people = split_authors(work.authors)
    if not people:
        if work.origin == "survey":
            st.caption(":material/person_off: Authors unknown: no reference list we read names them.")
        return

    def link(p) -> str:  # a relative link to the search page; the name shown literally
        return f"[{md(p.display)}]({routes.search(author=p.display).url})"

    head = ", ".join(link(p) for p in people[:shown])
    more = len(people) - shown
    st.markdown(head + (f" and {more} more" if more > 0 else "") + (", et al." if is_truncated(work.authors) and more <= 0 else ""))
    if more > 0:
        with st.expander(f"All {len(people)} authors"):
            st.markdown(", ".join(link(p) for p in people))
    if work.authors_source:
        check = {"agrees": "confirmed by a second source", "first-author": "a second source agrees on the first author",
                 "differs": "a second source lists them differently", "single-source": "one source"}.get(work.authors_check, "")
        st.caption(f"Authors: {check}. From {md(work.authors_source)}.")


def export_buttons(keys: Sequence[str], stem: str, key: str, label_count: bool = True) -> None:
    """Download buttons for a list of works in every export format (one row)."""
    from app import state

    keys = tuple(keys)
    with st.container(horizontal=True, gap="small"):
        for fmt, label, ext, mime in EXPORT_BUTTONS:
            text = state.export_text(keys, fmt)
            if fmt == "arxiv-ids" and not text:
                continue
            st.download_button(f"{label} ({len(keys)})" if label_count else label, data=text, file_name=f"{stem}.{ext}",
                               mime=mime, icon=":material/download:", on_click="ignore", key=f"{key}-{fmt}")


def annotations_editor(catalog, work_key: str) -> None:
    """Tags (add, remove) and a note for one work; bad input is shown as an error and nothing saved is lost."""
    from papers.annotations import NOTE_MAX_CHARS, AnnotationError, AnnotationStore

    store = AnnotationStore()
    msg_key = f"_ann_msg-{work_key}"

    def report(kind: str, text: str) -> None:
        st.session_state[msg_key] = (kind, text)

    def add() -> None:
        raw = st.session_state.get(f"ann_tag-{work_key}", "")
        try:
            tags = store.add_tags(catalog, work_key, [t for t in raw.replace(",", " ").split()] or [raw])
            st.session_state[f"ann_tag-{work_key}"] = ""
            report("success", f"Tags: {md(', '.join(tags))}")
        except (AnnotationError, KeyError) as e:
            report("error", f"Tag not added: {md(e)}")

    def remove(tag: str) -> None:
        try:
            store.remove_tags(catalog, work_key, [tag])
            report("success", f"Removed tag {md(tag)}")
        except (AnnotationError, KeyError) as e:
            report("error", f"Tag not removed: {md(e)}")

    def save_note() -> None:
        try:
            store.set_note(catalog, work_key, st.session_state.get(f"ann_note-{work_key}", ""))
            report("success", "Note saved.")
        except (AnnotationError, KeyError) as e:
            report("error", f"Note not saved: {md(e)}")

    def clear_note() -> None:
        store.clear_note(catalog, work_key)
        st.session_state[f"ann_note-{work_key}"] = ""
        report("success", "Note removed.")

    tags = store.tags_of(work_key)
    with st.container(horizontal=True, gap="small", wrap=True, vertical_alignment="center"):
        for tag in tags:
            st.button(md(tag), key=f"ann_untag-{work_key}-{tag}", icon=":material/close:", on_click=remove, args=(tag,),
                      help=f"Remove the tag {md(tag)}")
        if tags:
            page_link(routes.search(tag=tags), "Works with these tags", icon=":material/sell:")
    with st.container(horizontal=True, gap="small", vertical_alignment="bottom"):
        st.text_input("Add tags", key=f"ann_tag-{work_key}", placeholder="reading-list to-replicate",
                      help="Letters, digits and - _ . : / ; several separated by spaces or commas.")
        st.button("Add", key=f"ann_add-{work_key}", on_click=add, icon=":material/sell:")
    if f"ann_note-{work_key}" not in st.session_state:
        st.session_state[f"ann_note-{work_key}"] = store.note_of(work_key)
    # no max_chars: the browser would cut a long paste silently; a note over the limit gets a clear error instead
    st.text_area(f"Your note (up to {NOTE_MAX_CHARS:,} characters; stays on this machine, never exported)",
                 key=f"ann_note-{work_key}", height=120)
    with st.container(horizontal=True, gap="small"):
        st.button("Save note", key=f"ann_save-{work_key}", on_click=save_note, icon=":material/save:")
        st.button("Clear note", key=f"ann_clear-{work_key}", on_click=clear_note, icon=":material/delete:")
    message = st.session_state.pop(msg_key, None)
    if message:
        (st.error if message[0] == "error" else st.success)(message[1])


# -- charts ------------------------------------------------------------------------------------
def metric_chart(curves, metric: str, color: str | None = None, height: int = 160) -> None:
    """A run metric's curve(s) (``app.presentation.runs.metric_chart``: fitted axes, numbers as numbers)."""
    from app.presentation.runs import metric_chart as build

    st.altair_chart(build(curves, metric, color=color, height=height), width="stretch")


def hide_rerun_indicator() -> None:
    """Hide Streamlit's header "Running... Stop" while this page is shown. A page that refreshes itself (the
    Lab's live run) would otherwise show it on every refresh that takes over half a second, next to the
    page's own Stop, and that button halts the page, not the run."""
    st.html("<style>[data-testid='stStatusWidget']{display:none}</style>")


def equations(lines: Sequence[str]) -> None:
    """LaTeX formulas one per line; a formula wider than its column scrolls instead of being cut off."""
    st.html("<style>.katex-display{overflow-x:auto;overflow-y:hidden;padding:2px 0}</style>")
    for line in lines:
        st.latex(line)


def redirect(link: Link) -> None:
    """Open ``link`` instead of the current page, keeping the URL's query parameters (a path alias)."""
    st.switch_page(link.script, query_params={**params_dict(st.query_params), **dict(link.query)})

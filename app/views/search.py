"""Search: a query box, facets in the sidebar, results that say why they matched, export, similar works.

Every search is a URL: ``search?q=memory+agents&kind=method&from=2025&code=yes&page=2``
(see ``app.presentation.search.SearchState`` for the parameters). ``search?like=<key>`` lists works similar
to one work.
"""
import zlib

import streamlit as st

from app import routes, state, ui
from app.presentation.common import DIMENSION_LABELS, DIMENSIONS, Lookup, all_params, first_param, lookup_work, work_label
from app.presentation.search import (PAGE_SIZE, RESULT_TITLE_CSS, SearchState, algorithm_names, export_choices, md_link,
                                     show_more_like_top, why_matched)
from papers.schema import KINDS
from papers import worksets
from papers.authors import display_authors

cat = state.catalog()
p = ui.params()
url, problems = SearchState.from_params(p, cat)
likes = [lookup_work(cat, raw) for raw in all_params(p, "like")] if "like" in p else None

node_opts = state.node_options()
algo_names = algorithm_names(cat)
years = [w.year for w in cat if w.year]
ymin, ymax = min(years), max(years)
SCOPE = "search"


def widget_state(s: SearchState) -> dict:
    return {
        "s_q": s.q, "s_nodes": list(s.nodes), "s_dims": list(s.dimensions),
        "s_years": (max(ymin, s.year_from or ymin), min(ymax, s.year_to or ymax)),
        "s_kinds": list(s.kinds), "s_algos": list(s.algorithms),
        "s_code": {None: "any", True: "yes", False: "no"}[s.has_code],
        "s_xnodes": list(s.exclude_nodes), "s_xkinds": list(s.exclude_kinds), "s_mode": s.mode,
    }


# author and tag filters (papers.authors, papers.annotations): URL parameters author= and tag=
tag_counts = worksets.tag_counts()
url_author = " ".join(first_param(p, "author").split()) if "author" in p else ""
url_tags = [t for t in all_params(p, "tag") if t.strip()]
ui.seed_widgets(SCOPE + "-people", {"s_author": url_author, "s_tags": url_tags})
ui.seed_widgets(SCOPE, widget_state(url))
if st.session_state.get("_s_page_url") != url.page or "s_page" not in st.session_state:
    st.session_state["s_page"] = url.page
st.session_state["_s_page_url"] = url.page


def _clear_filters() -> None:
    for k, v in widget_state(SearchState(q=st.session_state.get("s_q", ""))).items():
        st.session_state[k] = v
    st.session_state["s_author"], st.session_state["s_tags"] = "", []


# -- sidebar facets ------------------------------------------------------------------------------
with st.sidebar:
    st.subheader("Filters")
    st.multiselect("Taxonomy nodes", list(node_opts), key="s_nodes", format_func=node_opts.get,
                   placeholder="any node", help="Works placed in any of these nodes or below them.")
    st.multiselect("Dimensions", list(DIMENSIONS), key="s_dims", format_func=DIMENSION_LABELS.get,
                   placeholder="any dimension")
    st.slider("Years", ymin, ymax, key="s_years")
    st.multiselect("Kind", list(KINDS), key="s_kinds", placeholder="any kind")
    st.multiselect("Algorithm", algo_names, key="s_algos", placeholder="any algorithm")
    st.segmented_control("Code released", ["any", "yes", "no"], key="s_code", required=True)
    st.text_input("Author", key="s_author", placeholder="e.g. Jiawei Han", help="Full name, or a family name alone.")
    if tag_counts or st.session_state.get("s_tags"):
        st.multiselect("Your tags", sorted(set(tag_counts) | set(st.session_state.get("s_tags", []))), key="s_tags",
                       placeholder="any", format_func=lambda t: f"{t} ({tag_counts.get(t, 0)})")
    with st.expander("Exclude", expanded=bool(url.exclude_nodes or url.exclude_kinds)):
        st.multiselect("Nodes", list(node_opts), key="s_xnodes", format_func=node_opts.get, placeholder="none")
        st.multiselect("Kinds", list(KINDS), key="s_xkinds", placeholder="none")
    with st.expander("Ranking", expanded=url.mode != "hybrid"):
        st.segmented_control("Mode", list(SearchState.MODES), key="s_mode", required=True,
                             help="hybrid: words and meaning fused; lexical: words only (BM25); dense: meaning only")
    st.button("Clear filters", on_click=_clear_filters, icon=":material/filter_alt_off:")

# -- query ---------------------------------------------------------------------------------------
st.title("Search")
st.text_input("Search the catalog", key="s_q", placeholder="e.g. agents that learn when to call a search engine",
              label_visibility="collapsed", icon=":material/search:")

y0, y1 = st.session_state["s_years"]
ss = st.session_state
current = SearchState(
    q=" ".join((ss["s_q"] or "").split()), nodes=tuple(ss["s_nodes"]), dimensions=tuple(ss["s_dims"]),
    year_from=y0 if y0 > ymin else None, year_to=y1 if y1 < ymax else None, kinds=tuple(ss["s_kinds"]),
    algorithms=tuple(ss["s_algos"]), has_code={"any": None, "yes": True, "no": False}[ss["s_code"] or "any"],
    exclude_nodes=tuple(ss["s_xnodes"]), exclude_kinds=tuple(ss["s_xkinds"]), mode=ss["s_mode"] or "hybrid",
    page=ss["s_page"],
)
author, tags = " ".join((ss.get("s_author") or "").split()), list(ss.get("s_tags") or [])
restrict, restrict_problem = worksets.restrict_keys_or_problem(cat, author, tags)
people_params = {k: v for k, v in (("author", author), ("tag", tags)) if v}
ui.remember(SCOPE + "-people", {"s_author": author, "s_tags": tags})  # published with the search's parameters below
if (author, tags) != (url_author, url_tags):  # a new author or tag filter starts at page 1 too
    current = current.with_page(1)
    ss["s_page"] = 1
if current.with_page(1) != url.with_page(1):  # a new query or filter starts at page 1
    current = current.with_page(1)
    ss["s_page"] = 1

for problem in problems:
    st.warning(f"Ignored from the link: {ui.md(problem)}.", icon=":material/link_off:")

if not state.search_available():
    st.error("The search index is not installed in this checkout (papers.search is missing).")
    st.stop()

if restrict_problem:
    st.warning(ui.md(restrict_problem), icon=":material/person_search:")

keyword_only = False
if state.search_ready():
    index = state.search_index()
elif likes is not None:  # similar works need the embeddings: wait for the full index
    with st.spinner("Loading the search index (once per server: the embedding model, and on a fresh data folder "
                    "the embeddings of every work) ...", show_time=True):
        index = state.search_index()
else:  # answer from the keyword index now; the full index loads after this script, then the page reruns
    state.want_search_index()
    with st.spinner("Indexing the catalog's words ..."):
        index = state.keyword_index()
    keyword_only = True

    @st.fragment(run_every=2.0)
    def _rerun_when_ready() -> None:
        if state.search_ready():
            st.rerun(scope="app")

    st.info("Keyword matches only (BM25), while the meaning-based index loads in the background (once per server; "
            "on a fresh data folder it first embeds every work, a minute or more). This page updates itself when "
            "it is ready.", icon=":material/hourglass_top:")
    _rerun_when_ready()
mode = "lexical" if keyword_only else current.mode
if likes is not None:
    # works similar to one or several works: search?like=<key>[,<key> ...]
    missing = [lk for lk in likes if lk.found is None]
    if missing or not likes:
        bad = missing[0] if missing else Lookup("", None)
        ui.not_found("work", bad.value, [(s, routes.search(like=s)) for s in bad.suggestions])
        st.stop()
    like_keys = list(dict.fromkeys(lk.found for lk in likes))
    names = ", ".join(work_label(cat.works[k]) for k in like_keys[:3]) + (" ..." if len(like_keys) > 3 else "")
    st.subheader(f"Works similar to {ui.md(names)}")
    ui.chips([*((f"Open {work_label(cat.works[k])}", routes.work(k)) for k in like_keys[:3]),
              ("Back to a plain search", routes.search(**current.to_params()))])
    if len(like_keys) == 1:
        hits = index.similar(key=like_keys[0], k=30, filters={**current.filter_kwargs(), "keys": restrict})
    else:
        hits = index.similar(keys=like_keys, k=30, filters={**current.filter_kwargs(), "keys": restrict})
    all_keys = [h.key for h in hits]
    total, page_hits = len(hits), hits
    ui.publish(SCOPE, widget_state(current), {"like": ",".join(like_keys), **current.to_params(), **people_params})
else:
    from papers.search import SearchFilters

    try:
        filters = SearchFilters(**current.filter_kwargs(), keys=restrict)
        page_no = current.page
        res = index.search(current.q, k=PAGE_SIZE, offset=(page_no - 1) * PAGE_SIZE, filters=filters, mode=mode)
    except (KeyError, ValueError) as e:  # a filter value the index does not know: say so, no traceback
        st.warning(f"This search cannot run: {ui.md(e.args[0] if e.args else e)}", icon=":material/filter_alt_off:")
        st.stop()
    pages = max(1, -(-res.total // PAGE_SIZE))
    if page_no > pages:  # a link to a page past the end: show the last one
        page_no = pages
        current = current.with_page(pages)
        ss["s_page"] = pages
        res = index.search(current.q, k=PAGE_SIZE, offset=(page_no - 1) * PAGE_SIZE, filters=filters, mode=mode)
    total, page_hits = res.total, res.hits
    all_keys = None  # computed below, only for the downloads
    ui.publish(SCOPE, widget_state(current), {**current.to_params(), **people_params})
    st.session_state["_s_page_url"] = current.page

# -- results -------------------------------------------------------------------------------------
if likes is None and not current.q and not current.has_filters and restrict is None:
    st.caption("Type a question or a few words; the facets on the left narrow the results. Or try:")
    ui.chips([(q, routes.search(q=q)) for q in (
        "memory agents that learn what to store", "RL for tool calling with code execution",
        "web search agents trained with outcome rewards", "GUI agents in interactive environments",
        "multi-agent debate with reinforcement learning",
    )])
    st.caption(f"Browsing all {total} works, newest first.")
else:
    what = "works" if total != 1 else "work"
    st.markdown(f"**{total} {what}**" + (f" for “{ui.md(current.q)}”" if current.q and likes is None else "")
                + (" (filtered)" if current.has_filters or restrict is not None else ""))

if not page_hits:
    st.info("Nothing matches. Loosen a filter or rephrase the query.", icon=":material/search_off:")
    st.stop()

if all_keys is None:
    full = index.search(current.q, k=max(total, 1), offset=0, filters=filters, mode=mode)
    all_keys = [h.key for h in full.hits]
choices = export_choices(len(all_keys), like=likes is not None)
with st.container(horizontal=True, gap="small", vertical_alignment="bottom"):
    pick = st.segmented_control("Export", range(len(choices)), default=0, required=True, key="s_export",
                                format_func=lambda i: choices[i].label,
                                help="The file name says which: …-top10 or …-all171.") if len(choices) > 1 else 0
    chosen = choices[pick if pick is not None and pick < len(choices) else 0]
    ui.export_buttons(all_keys[:chosen.count], stem=chosen.stem, key="dl")
if show_more_like_top(current.q, likes is not None, len(page_hits)):
    ui.page_link(routes.search(like=",".join(h.key for h in page_hits[:3])), "More like the top 3",
                 icon=":material/auto_awesome:")
st.html(f"<style>{RESULT_TITLE_CSS}</style>")

start = (current.page - 1) * PAGE_SIZE if likes is None else 0
for rank, hit in enumerate(page_hits, start=start + 1):
    w = cat.works[hit.key]
    with st.container(border=True, key=f"hit-{rank}"):
        head, side = st.columns([5, 1], vertical_alignment="top")
        with head:
            ui.work_link(w.key, f"**{rank}. {ui.md(work_label(w, 90))}**")
            meta = [str(w.year or "n.d."), w.kind] + [link for link in (md_link("code", w.code_url),
                                                                        md_link("arXiv", w.arxiv_url)) if link]
            st.caption(" · ".join(meta) + (f" · {ui.md(w.title)}" if w.name else ""))
            if w.authors:
                st.caption(ui.md(display_authors(w.authors, limit=6)))
            if w.summary:
                st.markdown(ui.md(w.summary) + (" *(summary not checked against the paper)*" if w.summary_confidence == "low" else ""))
            why = why_matched(cat, hit)
            if why:
                st.markdown(f":blue-badge[:material/lightbulb: why] {ui.md(why)}")
        with side:
            ui.page_link(routes.search(like=w.key), "Similar", icon=":material/auto_awesome:")



def _turn_page(widget_key: str) -> None:
    st.session_state["s_page"] = int(st.session_state[widget_key])


if likes is None and total > PAGE_SIZE:
    # keyed on the search and the page, so the widget always starts from the URL's page
    pager_key = f"s_pager-{zlib.crc32(repr(current).encode())}"
    st.pagination(max(1, -(-total // PAGE_SIZE)), default=current.page, key=pager_key,
                  on_change=_turn_page, args=(pager_key,))

"""Work page (``work?key=<key>``, or an arXiv id / name): every fact, links, placements, tables, similar works."""
import streamlit as st

from app import routes, state, ui
from app.presentation.common import first_param, lookup_work, works_frame
from app.presentation.docs import link_doc_paths
from app.presentation.search import results_frame
from app.presentation.work import facts_markdown, work_page
from papers.companion import companion_row

cat = state.catalog()
p = ui.params()
raw = first_param(p, routes.PAGES["work"].param)
options = state.work_options()


def _jump() -> None:
    chosen = st.session_state.get("work_picker")
    if chosen:
        ui.goto(routes.work(chosen))


looked = lookup_work(cat, raw) if raw else None
ui.seed_widgets("work-picker", {"work_picker": looked.found if looked and looked.found else None})
st.sidebar.selectbox("Jump to a work", list(options), format_func=options.get, key="work_picker", index=None,
                     placeholder="Type a work's name ...", on_change=_jump)

if looked is None:
    st.title("Works")
    st.info("Choose a work in the sidebar, or find one with the search.", icon=":material/article:")
    ui.search_link("Open the search")
    st.stop()
if looked.found is None:
    st.title("Works")
    ui.not_found("work", looked.value,
                 [(options.get(s, s), routes.work(s)) for s in looked.suggestions], search_query=looked.value)
    st.stop()
if looked.found != raw:  # an arXiv id or a name: show the canonical link
    ui.set_params(dict(routes.work(looked.found).query))

page = work_page(cat, looked.found)
w = page.work
md = ui.md  # a work's text may be the user's own import: shown literally, never as markup
st.caption(f"{w.kind.capitalize()} · {w.year or 'n.d.'}" + (f" · {md(w.venue)}" if w.venue else ""))
st.title(md(w.name or w.title))
if w.name:
    st.markdown(f"##### {md(w.title)}")
if w.key in cat.attention:
    st.warning(f"This work needs attention: {md(cat.attention[w.key])} (on the Import page).", icon=":material/warning:")
ui.author_line(w)
if page.links:
    with st.container(horizontal=True, gap="small"):
        for label, url in page.links:
            st.link_button(label, url, icon={"arXiv": ":material/description:", "Paper": ":material/link:",
                                             "Code": ":material/code:"}.get(label))

if w.summary:
    with st.container(border=True):
        st.markdown(md(w.summary))
        if w.summary_confidence == "low":
            st.caption(":material/warning: Low-confidence summary: written from the title and the survey's context "
                       "only; check the paper.")
        else:
            st.caption("Summary in the Atlas's own words.")
if w.keywords:
    st.markdown(" ".join(f":gray-badge[{md(k)}]" for k in w.keywords))

left, right = st.columns([3, 2], gap="large")
with left:
    st.subheader("Where the survey places it")
    st.caption("Click a node to see the works around it.")
    for path in page.placements:
        ui.breadcrumb(path, current=False)
    inferred, inferred_error = state.inferred_axes()
    if inferred_error:
        st.caption(f":material/warning: Inferred axes not shown: {md(inferred_error)}")
    if w.key in inferred:
        st.subheader("Inferred axis (a model's guess, not the survey's)")
        st.caption(link_doc_paths(
            "The survey places this method on one axis only. The placement model's closest node on the other axis, "
            "with its share of that axis's score; it is not used by the heat map, the filters or the exports. How "
            "often it is right: docs/axis_inference.md."))
        for axis, ranked in inferred[w.key].items():
            first, rest = ranked[0], ranked[1:]
            ui.node_link(first.node, f"{axis.capitalize()}: {cat.taxonomy[first.node].name} · {first.confidence:.0%}",
                         icon=":material/psychology_alt:",
                         help="inferred; then " + ", ".join(f"{cat.taxonomy[r.node].name} {r.confidence:.0%}" for r in rest)
                         if rest else "inferred")
    if page.algorithms:
        st.subheader("Algorithms")
        ui.chips([(a, routes.node(nid)) if nid else (a, routes.search(algo=a)) for a, nid in page.algorithms])
with right:
    st.subheader("Facts")
    st.markdown(facts_markdown(page.facts))

st.subheader("Your tags and note")
ui.annotations_editor(cat, w.key)
ui.export_buttons([w.key], stem=w.key, key=f"work-dl-{w.key}", label_count=False)
with st.expander("Copy as a companion-list row"):
    row = companion_row(cat, w)
    st.caption(f"A row for the survey's companion paper list (Awesome-AgenticLLM-RL-Papers), section: {row.section}. "
               "Use the copy button, then propose it upstream.")
    st.code(f"{row.header}\n{row.row}", language="markdown")

st.subheader("In the survey's tables")
ui.survey_tables(page.tables, key=f"work-tables-{w.key}")

st.subheader("Similar works")
tab_meaning, tab_place = st.tabs(["Similar in content", "Sharing its taxonomy nodes"])
with tab_place:
    if page.related:
        frame = works_frame([r for r, _ in page.related], cat)
        frame.insert(2, "why", [f"{n} shared node{'s' if n != 1 else ''}" for _, n in page.related])
        ui.works_table(frame, key=f"related-{w.key}-{ui.nonce()}", columns=["open", "name", "title", "year", "why"])
    else:
        st.caption("No other work shares its nodes.")
with tab_meaning:
    index = state.search_index() if state.search_ready() else None
    if index is None and state.search_available():  # never wait here: it loads after this page
        state.want_search_index()
        st.caption("The search index is loading in the background (once per server; on a fresh data folder it "
                   "first embeds every work): similar works appear here on your next visit.")
    elif index is not None and w.key in index:
        hits = index.similar(key=w.key, k=8)
        frame = results_frame(cat, hits)
        frame["why"] = [f"similarity {h.score:.2f}" for h in hits]
        ui.works_table(frame, key=f"similar-{w.key}-{ui.nonce()}", columns=["open", "name", "title", "year", "why"])
        ui.search_link("More works like this one", like=w.key)
    else:
        st.caption("Not in the search index.")

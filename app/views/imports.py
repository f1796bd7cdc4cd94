"""Import: add your own works (file upload or a form), see where they were placed, accept or correct."""
import pandas as pd
import streamlit as st

from app import state, ui
from app.presentation.imports import (form_csv, form_problem, node_paths, store_upload, suggestions_caption,
                                      user_works_frame)
from atlas_data import data_dir, private_dir, private_file
from papers.ingest import ImportInputError, accept_placement, import_file
from papers.userstore import UserStore

st.title("Import your works")
st.caption("Your works live in a local database beside the survey's catalog (which is never changed). "
           "Each is placed in the taxonomy automatically; accept or correct the placement below.")
cat = state.catalog()
store = UserStore()
uploads = private_dir(data_dir() / "uploads")  # what users upload is theirs: 0700, files 0600


def run_import(path, label: str) -> None:
    bar = st.progress(0.0, text=f"Importing {label} ...")
    total = max(1, sum(1 for _ in open(path, "rb")))

    def progress(p):
        bar.progress(min(1.0, p["lines_done"] / total), text=f"line {p['lines_done']}: {p['added']} added, {p['skipped']} skipped")

    try:
        report = import_file(path, cat, store, placer=state.placer(), progress=progress)
    except (ImportInputError, ValueError) as e:  # a file that cannot be imported at all: say why, keep the page
        bar.empty()
        st.error(ui.md(str(e).replace(str(path), label)), icon=":material/error:")
        return
    summary = report.summary().replace(str(path), label)
    bar.progress(1.0, text=ui.md(summary))
    st.session_state["import_report"] = (summary, report.skipped)
    state.user_works_changed()
    st.rerun()


upload_tab, form_tab = st.tabs(["Upload a file", "Add one work"])
with upload_tab:
    file = st.file_uploader("BibTeX (.bib), arXiv metadata JSON lines (.jsonl) or CSV with the catalog's columns (.csv)",
                            type=["bib", "bibtex", "jsonl", "json", "csv"])
    if file is not None and st.button("Import file", type="primary"):
        path = store_upload(uploads, file.name, file.getvalue())  # a new file each time, never a shared name
        private_file(path)
        run_import(path, file.name)
with form_tab:
    with st.form("one-work"):
        title = st.text_input("Title *")
        c1, c2 = st.columns(2)
        year = c1.text_input("Year", placeholder="2026")
        arxiv_id = c2.text_input("arXiv id", placeholder="2601.01234")
        url = st.text_input("URL")
        code_url = st.text_input("Code URL")
        abstract = st.text_area("Abstract (used for placement and search)")
        submitted = st.form_submit_button("Add", type="primary")
    if submitted:
        problem = form_problem(title, year, arxiv_id=arxiv_id, url=url, code_url=code_url, abstract=abstract)
        if problem:
            st.error(problem)
        else:
            path = store_upload(uploads, "form.csv", form_csv(title=title, year=year, arxiv_id=arxiv_id, url=url,
                                                              code_url=code_url, abstract=abstract).encode("utf-8"))
            private_file(path)
            run_import(path, "the form")

if "import_report" in st.session_state:
    summary, skipped = st.session_state["import_report"]
    st.success(ui.md(summary))
    if skipped:
        st.dataframe(pd.DataFrame(skipped, columns=["line", "reason"]), hide_index=True, width="stretch")

st.subheader("Your works")
works = store.works()
unreadable = store.unreadable()
if unreadable:  # rows that no longer read as works: say so, and offer to delete them
    st.warning("Needs attention: " + "; ".join(f"**{ui.md(k)}**: {ui.md(why)}" for k, why in unreadable)
               + ". These rows are left out of the explorer.", icon=":material/warning:")
    bad_key = st.selectbox("Unreadable row", [k for k, _ in unreadable], key="unreadable_row")
    if st.button("Delete this row", key="delete_unreadable"):
        store.delete(bad_key)
        state.user_works_changed()
        st.rerun()
if not works:
    st.info("None yet.")
    st.stop()
attention = cat.attention
st.dataframe(user_works_frame(works, attention), hide_index=True, width="stretch")

by_key = {w.key: w for w in works}
first_bad = next((k for k in by_key if k in attention), None)
key = st.selectbox("Review a work", list(by_key), index=list(by_key).index(first_bad) if first_bad else 0,
                   format_func=lambda k: f"{k}: {by_key[k].title[:80]}")
work = by_key[key]
if key in attention:
    st.warning(f"**{ui.md(key)}** needs attention: {ui.md(attention[key])}. Choose its nodes below and save.",
               icon=":material/warning:")
suggestions = store.suggestions(key)
if suggestions:
    st.caption(suggestions_caption(cat, suggestions))
names = node_paths(cat)
# a stored node the taxonomy lacks cannot be a default (Streamlit would refuse the whole widget)
chosen = st.multiselect("Nodes", list(names), default=[n for n in work.nodes if n in names], format_func=names.get)
c1, c2, c3 = st.columns(3)
if c1.button("Save placement", type="primary", disabled=not chosen):
    accept_placement(store, cat, key, chosen)
    state.user_works_changed()
    st.rerun()
if key in cat:
    ui.work_link(key, "Open its page")
confirm = c3.checkbox("Confirm delete")
if c2.button("Delete this work", disabled=not confirm):
    store.delete(key)
    state.user_works_changed()
    st.rerun()

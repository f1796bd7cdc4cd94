"""Import: add your own works (file upload or a form), see where they were placed, accept or correct."""
import csv
import io
import time

import pandas as pd
import streamlit as st

from app import state, ui
from atlas_data import data_dir
from papers.ingest import AUTO_TAG, accept_placement, import_file
from papers.userstore import UserStore

st.title("Import your works")
st.caption("Your works live in a local database beside the survey's catalog (which is never changed). "
           "Each is placed in the taxonomy automatically; accept or correct the placement below.")
cat = state.catalog()
store = UserStore()
uploads = data_dir() / "uploads"
uploads.mkdir(parents=True, exist_ok=True)


def run_import(path, label: str) -> None:
    bar = st.progress(0.0, text=f"Importing {label} ...")
    total = max(1, sum(1 for _ in open(path, "rb")))

    def progress(p):
        bar.progress(min(1.0, p["lines_done"] / total), text=f"line {p['lines_done']}: {p['added']} added, {p['skipped']} skipped")

    report = import_file(path, cat, store, placer=state.placer(), progress=progress)
    bar.progress(1.0, text=report.summary())
    st.session_state["import_report"] = (report.summary(), report.skipped)
    state.user_works_changed()
    st.rerun()


upload_tab, form_tab = st.tabs(["Upload a file", "Add one work"])
with upload_tab:
    file = st.file_uploader("BibTeX (.bib), arXiv metadata JSON lines (.jsonl) or CSV with the catalog's columns (.csv)",
                            type=["bib", "bibtex", "jsonl", "json", "csv"])
    if file is not None and st.button("Import file", type="primary"):
        path = uploads / f"{int(time.time())}-{file.name}"
        path.write_bytes(file.getvalue())
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
        if not title.strip():
            st.error("Title: required.")
        elif year.strip() and not (year.strip().isdigit() and len(year.strip()) == 4):
            st.error(f"Year: '{year}' is not a year.")
        else:
            buf = io.StringIO()
            writer = csv.writer(buf)
            writer.writerow(["title", "year", "arxiv_id", "url", "code_url", "abstract"])
            writer.writerow([title, year, arxiv_id, url, code_url, abstract])
            path = uploads / f"{int(time.time())}-form.csv"
            path.write_text(buf.getvalue())
            run_import(path, "the form")

if "import_report" in st.session_state:
    summary, skipped = st.session_state["import_report"]
    st.success(summary)
    if skipped:
        st.dataframe(pd.DataFrame(skipped, columns=["line", "reason"]), hide_index=True, width="stretch")

st.subheader("Your works")
works = store.works()
if not works:
    st.info("None yet.")
    st.stop()
st.dataframe(pd.DataFrame([{
    "key": w.key, "title": w.title, "year": w.year, "placed in": "; ".join(w.nodes),
    "placement": "suggested" if AUTO_TAG in w.tags else "accepted",
} for w in works]), hide_index=True, width="stretch")

key = st.selectbox("Review a work", [w.key for w in works], format_func=lambda k: f"{k}: {store.get(k).title[:80]}")
work = store.get(key)
suggestions = store.suggestions(key)
if suggestions:
    st.caption("Suggested: " + " · ".join(f"{cat.taxonomy[n].name} ({c:.0%})" for n, c in suggestions if n in cat.taxonomy))
names = {n.id: " > ".join(cat.taxonomy[p].name for p in cat.taxonomy.path(n.id)) for n in cat.taxonomy}
chosen = st.multiselect("Nodes", list(names), default=list(work.nodes), format_func=names.get)
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

"""Entry point: ``streamlit run app/streamlit_app.py`` (what ``make app`` does).

The navigation is one list per section. To add a section (the Lab issue adds "Lab" with its
Lab and Runs pages), append ``"Lab": [st.Page(...), ...]`` to ``SECTIONS``; links between pages
go through ``app.ui.PAGES``.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import streamlit as st  # noqa: E402

from app import state, ui  # noqa: E402

st.set_page_config(page_title="Agentic RL Atlas", page_icon=":material/hub:", layout="wide")

SECTIONS = {
    "Explore": [
        st.Page(ui.PAGES["overview"], title="Overview", icon=":material/home:", default=True, url_path="overview"),
        st.Page(ui.PAGES["taxonomy"], title="Taxonomy", icon=":material/account_tree:", url_path="taxonomy"),
        st.Page(ui.PAGES["search"], title="Search", icon=":material/search:", url_path="search"),
        st.Page(ui.PAGES["algorithms"], title="Algorithms", icon=":material/functions:", url_path="algorithms"),
        st.Page(ui.PAGES["imports"], title="Import", icon=":material/upload:", url_path="imports"),
        # reached from links (work?key=...); without a key it offers a picker
        st.Page(ui.PAGES["work"], title="Work", icon=":material/article:", url_path="work", visibility="hidden"),
    ],
    "Lab": [
        st.Page(ui.PAGES["lab"], title="Lab", icon=":material/science:", url_path="lab"),
        st.Page(ui.PAGES["runs"], title="Runs", icon=":material/monitoring:", url_path="runs"),
    ],
}

page = st.navigation(SECTIONS)
ui.follow_goto()
try:
    page.run()
finally:
    # once per server: load the search model in the background, after the first page's script ran
    # (started earlier, its imports slow that first render down)
    state.warm_search_in_background()

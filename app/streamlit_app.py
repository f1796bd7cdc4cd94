"""Entry point: ``streamlit run app/streamlit_app.py`` (what ``make app`` does).

The navigation is built from ``app.routes.PAGES``, the one definition of every page (URL path,
script, title, icon, section). To add a page or a section, add a ``Page`` there; links to it go
through ``app.routes`` as well.

Streamlit runs this file as a script; ``import app`` works because the project is installed
(``pip install -e .``, done by ``make``), not because of its location.
"""
from functools import partial

import streamlit as st

from app import routes, state, ui

st.set_page_config(page_title="Agentic RL Atlas", page_icon=ui.PAGE_ICON, layout="wide")

SECTIONS: dict[str, list] = {}
for p in routes.PAGES.values():
    # Streamlit serves the default page at "/" only, yet reserves its path: it gets another one, and its own
    # path (/overview, what routes.Link.url writes) is a hidden page that redirects to it
    SECTIONS.setdefault(p.section, []).append(st.Page(
        p.script, title=p.title, icon=p.icon, url_path=p.path + "-home" if p.default else p.path, default=p.default,
        visibility="hidden" if p.hidden else "visible"))
    if p.default:
        SECTIONS[p.section].append(st.Page(
            partial(ui.redirect, routes.Link(p.path)), title=p.title, icon=p.icon, url_path=p.path,
            visibility="hidden"))

page = st.navigation(SECTIONS)
ui.follow_goto()
try:
    page.run()
finally:
    # once per server: score the comparison grids and load the search model in the background, after the
    # first page's script ran (started earlier, its imports slow that first render down)
    state.warm_in_background()

"""Documentation (``docs?path=NAME.md``): one of the project's docs/*.md, with its links to the others and the paths
it cites as plain text kept in the app."""
import streamlit as st

from app import routes, ui
from app.presentation.common import first_param
from app.presentation.docs import doc_markdown, doc_names, link_doc_paths

name = first_param(ui.params(), "path", "README.md")
try:
    text = doc_markdown(name)
except KeyError:
    st.title("Documentation")
    st.warning(f"No document '{ui.md(name[:200])}' in docs/.", icon=":material/search_off:")
    ui.chips([(n, routes.doc(n)) for n in doc_names()], empty="This installation has no docs/ folder.")
else:
    st.caption(f"docs/{ui.md(name)}")
    st.markdown(link_doc_paths(text))

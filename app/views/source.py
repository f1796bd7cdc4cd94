"""Source (``source?path=reference_impls/rollout.py``): a .py or .yaml file of the checkout that a page cites."""
import streamlit as st

from app import ui
from app.presentation.common import first_param
from app.presentation.source import SourceUnreadable, source_text

path = first_param(ui.params(), "path")
st.title("Source")
try:
    text = source_text(path)
except KeyError:
    st.warning(f"No source file '{ui.md(path[:200])}' that the app shows.", icon=":material/search_off:")
except SourceUnreadable as e:
    st.warning(f"Cannot show this file: {ui.md(str(e))}", icon=":material/error:")
else:
    st.caption(ui.md(path))
    st.code(text, language="python" if path.endswith(".py") else "yaml", line_numbers=True)

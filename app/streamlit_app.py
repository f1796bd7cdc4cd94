"""Entry point: ``streamlit run app/streamlit_app.py`` (what ``make app`` does)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import streamlit as st  # noqa: E402

st.set_page_config(page_title="Agentic RL Atlas", page_icon=":material/hub:", layout="wide")

pages = [
    st.Page("views/overview.py", title="Overview", icon=":material/home:", default=True, url_path="overview"),
]
st.navigation(pages).run()

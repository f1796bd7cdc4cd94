"""Cached resources shared by every page: loaded once per server process, not per rerun."""
from __future__ import annotations

import streamlit as st

from papers import Catalog


@st.cache_resource(show_spinner="Loading the catalog ...")
def catalog() -> Catalog:
    return Catalog.load()

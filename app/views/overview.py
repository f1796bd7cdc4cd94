import streamlit as st

from app.state import catalog

cat = catalog()
stats = cat.stats()
st.title("Agentic RL Atlas")
st.caption(
    "A map of the survey *The Landscape of Agentic Reinforcement Learning for LLMs* "
    "(Zhang et al., arXiv 2509.02547) and the works it covers."
)
cols = st.columns(3)
cols[0].metric("Works", stats["works"])
cols[1].metric("Taxonomy nodes", stats["nodes"])
cols[2].metric("Survey tables", stats["tables"])
st.subheader("Nodes per dimension")
dims = st.columns(len(stats["nodes_per_dimension"]))
for col, (dim, n) in zip(dims, stats["nodes_per_dimension"].items()):
    col.metric(dim.capitalize(), n)

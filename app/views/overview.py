"""Overview: what agentic RL is, the counts, the capability x task map and the field over time."""
import streamlit as st

from app import routes, state, ui
from app.presentation.common import INFERRED_MIN_CONFIDENCE, first_param, works_frame
from app.presentation.overview import FORMULAS, TABLE1, cell_works, inferred_cell_works, overview_counts, table1_markdown

cat = state.catalog()
p = ui.params()

st.title("Agentic RL Atlas")
st.markdown(
    "A browsable map of the survey *The Landscape of Agentic Reinforcement Learning for LLMs* "
    "(Zhang et al., arXiv [2509.02547](https://arxiv.org/abs/2509.02547)): the works it covers, "
    "placed in its taxonomy of capabilities, tasks, algorithms, environments and frameworks."
)

counts = overview_counts(cat)
with st.container(horizontal=True, gap="medium"):
    st.metric("Works", counts["works"], border=True)
    st.metric("Methods", counts["methods"], border=True)
    st.metric("With code", counts["with_code"], border=True)
    st.metric("Taxonomy nodes", counts["nodes"], border=True)
    st.metric("Algorithm variants", counts["algorithms"], border=True)
    st.metric("Survey tables", counts["tables"], border=True)

st.header("From LLM RL to agentic RL", divider="gray")
st.markdown(
    "Ordinary LLM reinforcement learning (preference-based reinforcement fine-tuning, PBRFT: RLHF, "
    "reasoning RL) treats generation as a **one-step MDP**: one prompt, one answer, one reward. "
    "**Agentic RL** trains the model as a policy in a **partially observable, multi-step** world: it "
    "observes, plans, calls tools, keeps memory and acts over many turns, and the reward comes from "
    "the whole trajectory."
)
left, right = st.columns(2, gap="large")
with left, st.container(border=True):
    st.markdown("**LLM RL (PBRFT): a degenerate, one-step MDP**")
    st.latex(FORMULAS["pbrft_mdp"])
    st.latex(FORMULAS["pbrft_objective"])
    st.caption("One prompt $s_0$, one answer $a$, one scalar reward; the episode ends at once.")
with right, st.container(border=True):
    st.markdown("**Agentic RL: a POMDP over many turns**")
    st.latex(FORMULAS["agentic_pomdp"])
    st.latex(FORMULAS["agentic_observation"])
    st.latex(FORMULAS["agentic_actions"])
    st.latex(FORMULAS["agentic_objective"])
    st.caption("The agent sees observations $o_t$ of a hidden state, acts in text and in the world, "
               "and is rewarded over a horizon $T > 1$.")
st.markdown(f"**{cat.tables[TABLE1].title}**")
st.markdown(table1_markdown(cat))

st.header("Capabilities × tasks", divider="gray")
st.caption(
    "Works placed under both a capability and a task (most works sit under one of the two). "
    "Click a cell to list its works."
)
cap, task = first_param(p, "cap"), first_param(p, "task")
cell = (cap, task) if cap in cat.taxonomy and task in cat.taxonomy else None
AXES_CHOICES = {"survey": "Survey only", "inferred": "With inferred axes"}
axes_param = first_param(p, "axes", "survey")


def _axes_changed() -> None:
    keep = {"cap": cap, "task": task} if cell else {}
    ui.set_params({**keep, "axes": "inferred"} if st.session_state.get("heat_axes") == "inferred" else keep)


axes_mode = st.segmented_control(
    "Placements", list(AXES_CHOICES), format_func=AXES_CHOICES.get,
    default=axes_param if axes_param in AXES_CHOICES else "survey", key="heat_axes", on_change=_axes_changed,
    help="With inferred axes, a method the survey places on one axis also counts in the cell of the placement "
         "model's first choice for the other axis (section confidence at least "
         f"{INFERRED_MIN_CONFIDENCE:.0%}); shown as survey+inferred. A model's guess, not the survey's.")
with_inferred = axes_mode == "inferred"
inferred, inferred_error = state.inferred_axes() if with_inferred else ({}, None)
if inferred_error:
    st.caption(f":material/warning: Inferred axes not shown: {ui.md(inferred_error)}")
heat = state.heatmap(cell, with_inferred and not inferred_error)


def _cell_params(c: str | None = None, t: str | None = None) -> dict:
    out = {"cap": c, "task": t} if c else {}
    return {**out, "axes": "inferred"} if with_inferred else out


def _pick_cell(index: int | None) -> None:
    if index is None:
        ui.set_params(_cell_params())
    else:
        ui.set_params(_cell_params(*heat.ids[index]))


ui.echarts(heat, key=f"heatmap-{ui.nonce()}", on_pick=_pick_cell,
           alt="Heat map: number of works per capability and task")
if cap or task:
    if cell is None:
        bad = cap if cap not in cat.taxonomy else task
        ui.not_found("node", bad, [(cat.taxonomy[s].name, routes.node(s)) for s in cat.taxonomy.suggest(bad)]
                     if bad else [])
    else:
        works = cell_works(cat, *cell)
        st.subheader(f"{cat.taxonomy[cell[0]].name} × {cat.taxonomy[cell[1]].name}: {len(works)} work{'s' if len(works) != 1 else ''}")
        ui.chips([(cat.taxonomy[cell[0]].name, routes.node(cell[0])),
                  (cat.taxonomy[cell[1]].name, routes.node(cell[1]))])
        ui.works_table(works_frame(works, cat), key=f"cell-works-{ui.nonce()}")
        if works:
            ui.export_buttons([w.key for w in works], stem=f"atlas-{cell[0]}-x-{cell[1]}", key="cell-dl")
        if with_inferred and inferred:
            guessed = inferred_cell_works(cat, *cell, inferred)
            st.markdown(f"**With an inferred axis: {len(guessed)} method{'s' if len(guessed) != 1 else ''}** "
                        "(the placement model's guess for the axis the survey does not give them; not survey facts)")
            if guessed:
                ui.works_table(works_frame(guessed, cat), key=f"cell-inferred-{ui.nonce()}")

st.header("Works per year, by dimension", divider="gray")
st.caption("A work placed in two dimensions counts in both. Click a legend entry to hide a dimension.")
ui.echarts(state.year_chart(), key="years", alt="Stacked bar chart of works per year and dimension")

st.header("Where to go next", divider="gray")
ui.chips([
    ("Browse the taxonomy", routes.page("taxonomy")),
    ("Search the catalog", routes.page("search")),
    ("Compare RL algorithms", routes.page("algorithms")),
])

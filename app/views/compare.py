"""Compare: algorithms under one model, one warm start, one budget and several seeds (lab/compare/)."""
import json

import streamlit as st

from app import routes, state, ui
from app.presentation.common import first_param
from app.presentation.docs import link_doc_paths
from app.presentation.compare import (as_text, budget_frame, curves_chart, diagnostic_chart, diagnostic_choices,
                                      diagnostics_frame, diagnostics_notes, env_notes, family_frame, grid_intro,
                                      interval_chart, leaderboard_frame, lr_frame, passk_chart, passk_comparison_frame,
                                      progress_note, progression_frame, references, warm_start_effects_chart,
                                      warm_start_effects_frame)


@st.fragment
def mechanisms(grid, diagnostics: dict, env: str) -> None:
    """One environment's diagnostic curves; choosing another diagnostic re-runs this part only."""
    frame = diagnostics_frame(diagnostics, env)
    choices = diagnostic_choices(frame)
    if not choices:
        for note in diagnostics_notes(grid, diagnostics, env):
            st.caption(note)
        return
    pick = choices[st.selectbox("Diagnostic", range(len(choices)), format_func=lambda i: choices[i].label,
                                key=f"diagnostic-{env}")]
    st.caption(ui.md(pick.shows) + " Each line is an implementation's mean over its seeds at each step (the "
               "tooltip says how many).")
    st.vega_lite_chart(diagnostic_chart(frame, pick.key), width="stretch")
    for note in diagnostics_notes(grid, diagnostics, env, pick.key):
        st.caption(note)


def environment(chosen, summary, env: str, header: bool) -> None:
    """One environment's section: its stages, intervals, leaderboard, notes, curves, mechanisms, pass@k and how to
    reproduce a cell."""
    rows = summary.board[env]
    if header:
        st.header(f"{env}", divider="gray")
    reference = chosen.reference_line(env)
    if reference:
        st.caption(reference)
    if chosen.base.get(env):  # a base / SFT / SFT + RL grid: what each stage adds, paired on the problems
        st.table(as_text(progression_frame(summary.progression[env]), "stage"))
    st.vega_lite_chart(interval_chart(rows, references(chosen, env)), width="stretch")
    st.table(as_text(leaderboard_frame(rows), "implementation"))
    effects = warm_start_effects_frame(rows)
    if effects is not None:
        st.subheader("Each warm start's effect")
        st.caption("RL minus the warm start its seeds started from, for each warm start on its own (Holm over these "
                   "tests; each conditional on its warm start). The pooled comparison with the warm start averages "
                   "these; where they point in opposite directions, the pooled figure hides both.")
        st.vega_lite_chart(warm_start_effects_chart(rows), width="stretch")
        st.table(as_text(effects, "implementation"))
    for note in env_notes(chosen, summary, env):
        st.markdown(link_doc_paths(note))  # benchmarks/... and docs/... named in a note open in the app
    families = family_frame(rows)
    if families is not None:
        st.caption("Held-out % per problem family (its number of problems in the header), mean over seeds; in "
                   "parentheses the paired difference from each seed's own warm start, in points. Descriptive: no "
                   "verdict is drawn per family (few problems each, and not in the Holm family).")
        st.table(families)
    curves = curves_chart(summary.curves, env)
    if curves:
        st.caption("Mean training reward per step (over seeds); DPO rows are not drawn: their per-step number "
                   "is the preference margin, not the environment's reward")
        st.vega_lite_chart(curves, width="stretch")
    st.subheader("Mechanisms, step by step")
    mechanisms(chosen, summary.diagnostics, env)
    if env in chosen.passk:
        st.caption("pass@k on held-out problems (unbiased estimator; temperature 1): where RL raises pass@1 "
                   "but not pass@k at large k, it sharpened rather than added abilities")
        st.vega_lite_chart(passk_chart(chosen.passk[env]), width="stretch")
        paired = summary.passk_rows.get(env)
        if paired:
            st.table(as_text(passk_comparison_frame(paired), "model"))
            st.markdown(ui.md(summary.passk_readings[env]))
    cells = [c for c in chosen.cells if c["env"] == env]
    choices = chosen.lr_choices(env)
    rates = lr_frame(choices)
    if rates is not None:
        with st.expander("Learning rates, chosen on validation"):
            split = choices[0]["split"]
            st.caption(f"Each implementation trained once per rate, as its cell of seed {choices[0]['seed']} would, "
                       f"and was scored on "
                       f"{split.get('n')} validation problems (seed {split.get('seed')}), none of them a test "
                       f"problem; its cells train with the best rate (ties: the first). The rates were fixed before "
                       f"any trial ran.")
            st.table(rates)
    spent = budget_frame(cells)
    if spent is not None:
        with st.expander("Budget spent, per cell"):
            st.caption("The same budget of work was planned for every cell (above); this is what each spent.")
            st.table(as_text(spent, "cell"))
    with st.expander("Reproduce a cell"):
        pick = st.selectbox("Cell", range(len(cells)), format_func=lambda i: cells[i]["cell"],
                            key=f"cell-{env}")
        cell = cells[pick]
        st.code(chosen.reproduce(cell), language="bash")
        st.download_button("Download the cell's config", json.dumps(cell["config"], indent=1),
                           file_name=f"{cell['cell']}.json", mime="application/json", key=f"dl-{env}")
        ui.page_link(routes.lab(impl=cell["implementation"], preset=chosen.spec.get("recipe", "quick")),
                     "Open this implementation in the Lab", icon=":material/science:")


st.title("Compare algorithms")

grids = state.comparison_results()
if not grids:
    st.info("No comparison results yet. Run a grid from a terminal, e.g. `python -m lab.compare run core` "
            "(`python -m lab.compare run tiny` checks the machinery in a few minutes); its cells appear here "
            "as they finish.", icon=":material/leaderboard:")
    st.stop()

labels = [g.label for g in grids]
param = routes.PAGES["compare"].param
wanted = first_param(ui.params(), param)
# a link names a grid by its key; an older link by the grid's name (the shipped grid first, where both have it)
default = next((i for i, g in enumerate(grids) if g.key == wanted),
               next((i for i, g in enumerate(grids) if g.spec.get("name") == wanted), 0))


def _grid_chosen() -> None:  # the URL names the grid shown, so a link (or a reload) reopens it
    st.query_params[param] = grids[st.session_state["compare-grid"]].key


chosen = grids[st.selectbox("Grid", range(len(grids)), index=default, format_func=labels.__getitem__,
                            key="compare-grid", on_change=_grid_chosen)]
st.caption(grid_intro(chosen))
st.caption("Budget: " + ui.md(chosen.budget()))
progress = progress_note(chosen)
if progress:
    st.info(progress, icon=":material/hourglass_top:")
for problem in chosen.bad:
    st.warning("Left out a record that cannot be read: " + ui.md(problem))
if not chosen.cells:
    st.info("No finished cell in this grid yet (`python -m lab.compare status "
            f"{ui.md(chosen.spec.get('name', ''))}`).")
    st.stop()

with st.spinner("Scoring this grid (its intervals and tests; once for these results) ...", show_time=True):
    summary = chosen.summary()

envs = list(summary.board)
if len(envs) == 1:
    environment(chosen, summary, envs[0], header=True)
else:
    # one tab per environment, only the open one drawn (a grid's every chart at once took the page past 2 s); the
    # open tab is the URL's ``env`` parameter, so a link opens (and the address bar keeps) that environment
    tabs = st.tabs(envs, key=routes.COMPARE_ENV, bind="query-params")
    for env, tab in zip(envs, tabs):
        if tab.open:
            with tab:
                environment(chosen, summary, env, header=False)

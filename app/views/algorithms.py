"""Algorithms: the survey's Table 2 (PPO / DPO / GRPO variants), filterable, and a side-by-side comparison."""
import streamlit as st

from app import routes, state, ui
from app.presentation.algorithms import AlgorithmFilter
from app.presentation.common import TABLE2, all_params, first_param

cat = state.catalog()
p = ui.params()
frame = state.algorithm_frame()
families = list(dict.fromkeys(frame["family"]))
kls = sorted(set(frame["kl_penalty"]))
methods = list(frame["method"])

st.title("RL algorithms")
st.caption(cat.tables[TABLE2].title)

# URL <-> widgets: family, clip, kl, q (text filter), compare
known_family = {f.lower(): f for f in families}
known_method = {m.lower(): m for m in methods}
url_state = {
    "algo_family": [known_family[f.lower()] for f in all_params(p, "family") if f.lower() in known_family],
    "algo_clip": {"yes": "Yes", "no": "No"}.get(first_param(p, "clip").lower()),
    "algo_kl": [k for k in all_params(p, "kl") if k in kls],
    "algo_text": first_param(p, "q"),
    "algo_compare": [known_method[m.lower()] for m in all_params(p, "compare") if m.lower() in known_method],
}
unknown = [m for m in all_params(p, "compare") if m.lower() not in known_method]
if not url_state["algo_compare"] and not unknown:
    url_state["algo_compare"] = ["PPO", "GRPO", "DAPO", "GSPO"]
ui.seed_widgets("algorithms", url_state)

c1, c2, c3, c4 = st.columns([4, 1.4, 2, 2.2], vertical_alignment="bottom")
fam = c1.pills("Family", families, key="algo_family", selection_mode="multi")
clip = c2.segmented_control("Clip", ["Yes", "No"], key="algo_clip")
kl = c3.multiselect("KL penalty", kls, key="algo_kl", placeholder="any")
text = c4.text_input("Filter", key="algo_text", placeholder="e.g. sequence, entropy, process")

shown = AlgorithmFilter(tuple(fam or ()), clip or "", tuple(kl or ()), text or "").apply(frame)
st.caption(f"{len(shown)} of {len(frame)} variants. Click a column header to sort; select rows to compare them.")
table_key = f"algo-table-{ui.nonce()}"


def _add_selected() -> None:
    rows = st.session_state[table_key].selection.rows
    picked = [shown.iloc[r]["method"] for r in rows]
    current = list(st.session_state.get("algo_compare") or [])
    st.session_state["algo_compare"] = list(dict.fromkeys(current + picked))


# pixel widths that add up to the content width at 1440 px (about 980 px with the row checkboxes), so no column
# is cut off on the right: long cells are truncated (hover shows them) and the paper is the "open" link
SHOWN_COLUMNS = {
    "family": st.column_config.TextColumn("Family", width=85),
    "method": st.column_config.TextColumn("Method", width=85),
    "year": st.column_config.NumberColumn("Year", format="%d", width=50),
    "objective_type": st.column_config.TextColumn("Objective", width=140),
    "clip": st.column_config.TextColumn("Clip", width=40),
    "kl_penalty": st.column_config.TextColumn("KL", width=65),
    "key_mechanism": st.column_config.TextColumn("Key mechanism", width=140),
    "signal": st.column_config.TextColumn("Signal", width=100),
    "works_using": st.column_config.NumberColumn("Used by", help="Works in the catalog that use it", width=60),
    "open": st.column_config.LinkColumn("Paper", display_text="open", width=50, help="The paper's page"),
    "lab": st.column_config.LinkColumn("Lab", display_text="run", width=40,
                                       help="Open its reference implementation in the Lab (empty: none yet)"),
    "claims": st.column_config.TextColumn("Paper's claim", width=60,
                                          help="Does it do what its paper says? Each claim's verdict from its paired "
                                               "ablation (docs/claims.md; 'not run': not measured yet)"),
}
st.dataframe(
    shown, key=table_key, hide_index=True, width="stretch", on_select=_add_selected, selection_mode="multi-row",
    height=min(36 * (len(shown) + 1) + 3, 560), column_order=list(SHOWN_COLUMNS), column_config=SHOWN_COLUMNS,
)

st.header("Side by side", divider="gray")
if unknown:
    st.warning("Unknown algorithm" + ("s" if len(unknown) > 1 else "") + ": " + ui.md(", ".join(unknown)), icon=":material/search_off:")
chosen = st.multiselect("Variants to compare", methods, key="algo_compare", placeholder="Choose variants ...")
new_params = {
    "family": fam or [], "clip": (clip or "").lower(), "kl": kl or [], "q": (text or "").strip(),
    "compare": chosen or [],
}
ui.publish("algorithms", {"algo_family": fam or [], "algo_clip": clip, "algo_kl": kl or [], "algo_text": text or "",
                          "algo_compare": chosen or []},
           {k: v for k, v in new_params.items() if v})

if chosen:
    comparison, differ = state.comparison(tuple(chosen))
    st.table(comparison.style.apply(lambda row: ["background-color: rgba(255, 196, 0, 0.18)" if row.name in differ
                                                 else "" for _ in row], axis=1))
    st.caption("Highlighted rows: where the chosen variants differ.")
    links = []
    for m in chosen:
        row = frame[frame["method"] == m].iloc[0]
        if row["node"]:
            links.append((f"{m}: taxonomy node", routes.node(row["node"])))
        if row["work_key"]:
            links.append((f"{m}: paper", routes.work(row["work_key"])))
    ui.chips(links)
else:
    st.caption("Choose two or more variants (or select rows in the table) to compare them.")

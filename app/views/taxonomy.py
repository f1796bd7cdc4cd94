"""Taxonomy: a tree / graph / list per dimension, and a page per node (``taxonomy?node=<id>``)."""
from functools import partial

import streamlit as st

from app import presentation, routes, state, ui
from lab import catalog as lab

cat = state.catalog()
tax = cat.taxonomy
p = ui.params()
NODE = routes.PAGES["taxonomy"].param
node_param = presentation.first_param(p, NODE) if NODE in p else None
looked = presentation.lookup_node(cat, node_param) if node_param is not None else None

# -- sidebar: jump to any node -------------------------------------------------------------------
options = state.node_options()
ui.seed_widgets("taxonomy-picker", {"node_picker": looked.found if looked and looked.found else None})


def _jump() -> None:
    chosen = st.session_state.get("node_picker")
    if chosen:
        ui.goto(routes.node(chosen))


st.sidebar.selectbox("Jump to a node", list(options), format_func=options.get, key="node_picker",
                     index=None, placeholder="Type a node name ...", on_change=_jump)


def node_page(node_id: str) -> None:
    desc_default = True
    ui.seed_widgets("taxonomy-node", {"with_descendants": presentation.first_param(p, "desc", "1") != "0"})
    has_children = bool(tax.children.get(node_id))
    include = st.session_state["with_descendants"] if has_children else desc_default
    page = presentation.node_page(cat, node_id, include_descendants=include)

    ui.breadcrumb(page.path)
    st.title(page.name)
    st.caption(
        f"{presentation.DIMENSION_LABELS[page.dimension]} · survey section §{page.section} · "
        f"{page.all_works} work{'s' if page.all_works != 1 else ''}"
        + (f" ({page.direct_works} placed here directly)" if has_children else "")
    )
    st.markdown(page.description)
    impls = lab.for_node(node_id)
    for impl in impls:
        with st.container(border=True):
            st.markdown(f"**Reference implementation:** {ui.md(impl.title)}. {ui.md(impl.summary)}")
            if impl.changes:
                st.markdown(f"**What it changes and why.** {ui.md(impl.changes)}")
            if impl.survey_vs_paper:
                st.markdown(f"**Survey vs paper.** {ui.md(impl.survey_vs_paper)}")
            if lab.equation(impl):
                st.latex(lab.equation(impl))
            if impl.paper:
                st.caption(f"Implemented from: {ui.md(impl.paper)}")
            ui.page_link(presentation.run_link(impl), "Run this", icon=":material/play_arrow:")
    if impls:
        compared = presentation.node_comparison_lines(state.comparison_results(), {i.id for i in impls})
        for _, line in compared:
            st.caption(line)  # Markdown whose names node_comparison_lines escaped
        if compared:
            ui.page_link(routes.compare(grid=compared[0][0]), "See the comparison", icon=":material/leaderboard:")
    for record in state.value_search_results(node_id):  # issue 20: the learned value guiding a search
        with st.container(border=True):
            st.markdown(f"**Measured: a learned value guiding best-first search on {ui.md(record['env'])}**, "
                        f"against a fixed heuristic, unguided search and the policy alone, at equal model calls "
                        f"({ui.md(record['model'])}; held-out puzzles; docs/env_textgames_value.md).")
            st.dataframe(presentation.value_search_frame(record), hide_index=True, width="stretch")
            for line in presentation.value_search_verdicts(record):
                st.caption(line)
    if lab.not_implemented(node_id):
        st.info("**No reference implementation yet.** " + ui.md(lab.not_implemented(node_id)), icon=":material/pending:")
    proxy = presentation.node_proxy_note(node_id) if not impls else None  # issue 22: capability/task proxies
    if proxy is not None:
        st.info(f"**{ui.md(proxy.heading)}** {ui.md(proxy.text)}", icon=":material/pending:")
        if proxy.link is not None:
            ui.page_link(proxy.link, proxy.link_label, icon=":material/play_arrow:")
    if node_id == presentation.PASSK_NODE:  # the comparison's pass@k answers this node's question
        note = presentation.passk_note(state.comparison_results())
        st.info(f"**{note.heading}** {note.text}", icon=":material/query_stats:")  # own text; grid names escaped
        ui.page_link(note.link, note.link_label, icon=":material/leaderboard:")
    family = presentation.family_base(cat, node_id) if not impls else None
    if family is not None:
        with st.container(border=True):
            st.markdown(f"**A family of algorithms.** Its base implementation is {ui.md(family.title)}; each "
                        "variant below with a reference implementation has its own *Run this*.")
            ui.page_link(presentation.run_link(family), "Run the family's base",
                         icon=":material/play_arrow:")

    if page.children:
        st.subheader("Sub-nodes")
        ui.chips([(f"{name} · {n}", routes.node(cid)) for cid, name, n in page.children])

    head, toggle = st.columns([3, 2], vertical_alignment="bottom")
    head.subheader(f"Works ({len(page.works)})")
    if has_children:
        toggle.toggle("Include works of sub-nodes", key="with_descendants")
        new = st.session_state["with_descendants"]
        ui.publish("taxonomy-node", {"with_descendants": new}, {NODE: node_id, **({} if new else {"desc": "0"})})
    if page.works:
        st.caption("Select a row to open the work.")
    ui.works_table(presentation.works_frame(page.works, cat), key=f"node-works-{node_id}-{include}-{ui.nonce()}")
    if page.works:
        ui.export_buttons([w.key for w in page.works], stem=f"atlas-{node_id}", key=f"node-dl-{node_id}-{include}")
    ui.search_link(f"Search within {page.name}", node=node_id)

    if page.dimension in ("capability", "task"):
        inferred, inferred_error = state.inferred_axes()
        guessed = presentation.inferred_node_works(cat, node_id, inferred) if not inferred_error else []
        if guessed and st.toggle(f"Also show {len(guessed)} method{'s' if len(guessed) != 1 else ''} the placement "
                                 "model puts here (inferred, not the survey's)", key=f"inferred-{node_id}"):
            st.caption("For each, the survey gives only the other axis; this is the model's first choice for this "
                       f"one, with confidence at least {presentation.INFERRED_MIN_CONFIDENCE:.0%} "
                       "(docs/axis_inference.md: 80 % of such first choices match the survey where it places both).")
            frame = presentation.works_frame([w for w, _ in guessed], cat)
            frame.insert(0, "confidence", [round(c, 2) for _, c in guessed])
            ui.works_table(frame, key=f"node-inferred-{node_id}-{ui.nonce()}",
                           columns=["confidence", "open", "name", "title", "year", "kind", "nodes"])

    st.subheader("In the survey's tables")
    ui.survey_tables(page.tables, key=f"node-tables-{node_id}")

    st.subheader("Related nodes")
    related = [(f"{name} · {n} shared", routes.node(rid)) for rid, name, n in page.related]
    parent = tax[node_id].parent
    siblings = [(tax[s].name, routes.node(s)) for s in tax.children.get(parent, []) if s != node_id] if parent else []
    if related:
        st.caption("Nodes whose works overlap this node's works the most.")
        ui.chips(related)
    if siblings:
        st.caption("Next to it in the survey")
        ui.chips(siblings)
    if not related and not siblings:
        st.caption("None.")

    if page.algorithms:
        st.subheader("Algorithms its works use")
        algo_nodes = presentation.algorithm_nodes(cat)
        ui.chips([
            (f"{a} · {n}", routes.node(algo_nodes[a.lower()])) if a.lower() in algo_nodes
            else (f"{a} · {n}", routes.search(algo=a))
            for a, n in page.algorithms
        ])


def _open_row(key: str, nodes: list[str]) -> None:
    rows = st.session_state[key].selection.rows
    if rows:
        ui.goto(routes.node(nodes[rows[0]]))


def browser() -> None:
    st.title("Taxonomy")
    st.caption(
        "The survey's map in six dimensions. Click a node in the tree or the graph to open it; "
        "hover for its description."
    )
    dims = [*presentation.DIMENSIONS, "all"]
    dim_param = presentation.first_param(p, "dim", "capability").lower()
    view_param = presentation.first_param(p, "view", "tree").lower()
    ui.seed_widgets("taxonomy-browser", {
        "tax_dim": dim_param if dim_param in dims else "capability",
        "tax_view": view_param if view_param in ("tree", "graph", "list") else "tree",
    })
    controls = st.container(horizontal=True, wrap=True, gap="medium", vertical_alignment="bottom")
    dim = controls.segmented_control("Dimension", dims, key="tax_dim", required=True,
                               format_func=lambda d: "All" if d == "all" else presentation.DIMENSION_SHORT[d])
    view = controls.segmented_control("View", ["tree", "graph", "list"], key="tax_view", required=True,
                                format_func={"tree": "Tree", "graph": "Graph", "list": "List"}.get)
    ui.publish("taxonomy-browser", {"tax_dim": dim, "tax_view": view},
               {k: v for k, v in (("dim", dim), ("view", view)) if v != {"dim": "capability", "view": "tree"}[k]})
    chosen = list(presentation.DIMENSIONS) if dim == "all" else [dim]

    if view == "graph":
        g1, g2, _ = st.columns([1, 1, 3])
        show_works = g1.checkbox("Works", value=dim != "all", disabled=dim == "all", key="graph_works",
                                 help="With every dimension at once, works are left out.")
        show_algos = g2.checkbox("Algorithms", value=True, key="graph_algos")
        graph = state.graph_view(None if dim == "all" else dim, show_works and dim != "all", show_algos)

        def _pick(index: int | None) -> None:
            if index is None:
                return
            target = graph.ids[index]
            kind, _, value = target.partition(":")
            if kind == "node":
                ui.goto(routes.node(value))
            elif kind == "work":
                ui.goto(routes.work(value))
            else:
                algo_node = presentation.algorithm_nodes(cat).get(value.lower())
                ui.goto(routes.node(algo_node)) if algo_node else ui.goto(routes.search(algo=value))

        st.caption("Scroll to zoom, drag to pan, hover for details, click to open. Circles sized by works are "
                   "taxonomy nodes (coloured by dimension); small teal dots are works; yellow diamonds are algorithms.")
        ui.echarts(graph, key=f"graph-{dim}-{ui.nonce()}", on_pick=_pick,
                   alt="Graph of taxonomy nodes, works and algorithms")
        return

    for d in chosen:
        if len(chosen) > 1:
            st.subheader(presentation.DIMENSION_LABELS[d])
        if view == "tree":
            tree = state.tree_view(d)

            def _pick(index: int | None, tree=tree) -> None:
                if index is not None and index < len(tree.ids) and tree.ids[index]:
                    ui.goto(routes.node(tree.ids[index]))

            ui.echarts(tree, key=f"tree-{d}-{ui.nonce()}", on_pick=_pick,
                       alt=f"Tree of the {presentation.DIMENSION_LABELS[d]} dimension")
        else:
            frame = presentation.tree_frame(cat, d)
            key = f"tree-list-{d}-{ui.nonce()}"
            st.dataframe(
                frame.drop(columns=["node"]), key=key, hide_index=True, width="stretch",
                on_select=partial(_open_row, key, list(frame["node"])), selection_mode="single-row",
                height=min(36 * (len(frame) + 1) + 3, 720),
                column_config={
                    "open": st.column_config.LinkColumn("", display_text="open", width=50),
                    "name": st.column_config.TextColumn("Node", width="large"),
                    "works": st.column_config.NumberColumn("Works", width="small"),
                    "placed here": st.column_config.NumberColumn("Placed here", width="small"),
                    "section": st.column_config.TextColumn("Section", width="small"),
                },
            )


if looked is None:
    browser()
elif looked.found is None:
    st.title("Taxonomy")
    ui.not_found("taxonomy node", looked.value,
                 [(f"{tax[s].name} ({s})", routes.node(s)) for s in looked.suggestions],
                 search_query=looked.value or None)
    ui.chips([("Browse the whole taxonomy", routes.page("taxonomy"))])
else:
    if looked.found != node_param:  # a name or odd case: show the canonical link
        ui.set_params(dict(routes.node(looked.found).query))
    node_page(looked.found)

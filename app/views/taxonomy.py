"""Taxonomy: a tree / graph / list per dimension, and a page per node (``taxonomy?node=<id>``)."""
from contextlib import nullcontext
from functools import partial

import streamlit as st

from app import routes, state, ui
from app.presentation.common import (DIMENSION_LABELS, DIMENSIONS, INFERRED_MIN_CONFIDENCE, algorithm_nodes,
                                     first_param, lookup_node, works_frame)
from app.presentation.docs import link_doc_paths
from app.presentation.node_sections import NodeContext, node_sections
from app.presentation.taxonomy import DIMENSION_SHORT, inferred_node_works, node_page, tree_frame

cat = state.catalog()
tax = cat.taxonomy
p = ui.params()
NODE = routes.PAGES["taxonomy"].param
node_param = first_param(p, NODE) if NODE in p else None
looked = lookup_node(cat, node_param) if node_param is not None else None

# -- sidebar: jump to any node -------------------------------------------------------------------
options = state.node_options()
ui.seed_widgets("taxonomy-picker", {"node_picker": looked.found if looked and looked.found else None})


def _jump() -> None:
    chosen = st.session_state.get("node_picker")
    if chosen:
        ui.goto(routes.node(chosen))


st.sidebar.selectbox("Jump to a node", list(options), format_func=options.get, key="node_picker",
                     index=None, placeholder="Type a node name ...", on_change=_jump)


# how the node page shows each kind of part of a node section (app.presentation.node_sections.PART_KINDS)
SHOW_PART = {
    "markdown": lambda part: st.markdown(part.body),
    "caption": lambda part: st.caption(part.body),
    "latex": lambda part: st.latex(part.body),
    "table": lambda part: st.dataframe(part.body, hide_index=True, width="stretch"),
    "note": lambda part: st.info(part.body, icon=part.icon),
    "link": lambda part: ui.page_link(part.body, part.label, icon=part.icon),
    "chart": lambda part: st.vega_lite_chart(part.body, width="stretch"),
}


def show_blocks(blocks) -> None:
    """A node section's blocks, each in a bordered box or straight on the page."""
    for block in blocks:
        with st.container(border=True) if block.boxed else nullcontext():
            for part in block.parts:
                SHOW_PART[part.kind](part)


def show_node(node_id: str) -> None:
    desc_default = True
    ui.seed_widgets("taxonomy-node", {"with_descendants": first_param(p, "desc", "1") != "0"})
    has_children = bool(tax.children.get(node_id))
    include = st.session_state["with_descendants"] if has_children else desc_default
    page = node_page(cat, node_id, include_descendants=include)

    ui.breadcrumb(page.path)
    st.title(page.name)
    st.caption(
        f"{DIMENSION_LABELS[page.dimension]} · survey section §{page.section} · "
        f"{page.all_works} work{'s' if page.all_works != 1 else ''}"
        + (f" ({page.direct_works} placed here directly)" if has_children else "")
    )
    st.markdown(page.description)
    # once per server the implementations' registry is imported (torch) and a grid without a stored summary scored
    with st.spinner("Loading the reference implementations and their comparison results (once per server) ...",
                    show_time=True):
        sections = node_sections(NodeContext(cat, node_id, load_grids=state.comparison_results))
    for _, blocks in sections:
        show_blocks(blocks)

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
    ui.works_table(works_frame(page.works, cat), key=f"node-works-{node_id}-{include}-{ui.nonce()}")
    if page.works:
        ui.export_buttons([w.key for w in page.works], stem=f"atlas-{node_id}", key=f"node-dl-{node_id}-{include}")
    ui.search_link(f"Search within {page.name}", node=node_id)

    if page.dimension in ("capability", "task"):
        inferred, inferred_error = state.inferred_axes()
        guessed = inferred_node_works(cat, node_id, inferred) if not inferred_error else []
        if guessed and st.toggle(f"Also show {len(guessed)} method{'s' if len(guessed) != 1 else ''} the placement "
                                 "model puts here (inferred, not the survey's)", key=f"inferred-{node_id}"):
            st.caption(link_doc_paths(
                "For each, the survey gives only the other axis; this is the model's first choice for this "
                f"one, with confidence at least {INFERRED_MIN_CONFIDENCE:.0%} "
                "(docs/axis_inference.md: 80 % of such first choices match the survey where it places both)."))
            frame = works_frame([w for w, _ in guessed], cat)
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
        algo_nodes = algorithm_nodes(cat)
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
    dims = [*DIMENSIONS, "all"]
    dim_param = first_param(p, "dim", "capability").lower()
    view_param = first_param(p, "view", "tree").lower()
    ui.seed_widgets("taxonomy-browser", {
        "tax_dim": dim_param if dim_param in dims else "capability",
        "tax_view": view_param if view_param in ("tree", "graph", "list") else "tree",
    })
    controls = st.container(horizontal=True, wrap=True, gap="medium", vertical_alignment="bottom")
    dim = controls.segmented_control("Dimension", dims, key="tax_dim", required=True,
                               format_func=lambda d: "All" if d == "all" else DIMENSION_SHORT[d])
    view = controls.segmented_control("View", ["tree", "graph", "list"], key="tax_view", required=True,
                                format_func={"tree": "Tree", "graph": "Graph", "list": "List"}.get)
    ui.publish("taxonomy-browser", {"tax_dim": dim, "tax_view": view},
               {k: v for k, v in (("dim", dim), ("view", view)) if v != {"dim": "capability", "view": "tree"}[k]})
    chosen = list(DIMENSIONS) if dim == "all" else [dim]

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
                algo_node = algorithm_nodes(cat).get(value.lower())
                ui.goto(routes.node(algo_node)) if algo_node else ui.goto(routes.search(algo=value))

        st.caption("Scroll to zoom, drag to pan, hover for details, click to open. Circles sized by works are "
                   "taxonomy nodes (coloured by dimension); small teal dots are works; yellow diamonds are algorithms.")
        ui.echarts(graph, key=f"graph-{dim}-{ui.nonce()}", on_pick=_pick,
                   alt="Graph of taxonomy nodes, works and algorithms")
        return

    for d in chosen:
        if len(chosen) > 1:
            st.subheader(DIMENSION_LABELS[d])
        if view == "tree":
            tree = state.tree_view(d)

            def _pick(index: int | None, tree=tree) -> None:
                if index is not None and index < len(tree.ids) and tree.ids[index]:
                    ui.goto(routes.node(tree.ids[index]))

            ui.echarts(tree, key=f"tree-{d}-{ui.nonce()}", on_pick=_pick,
                       alt=f"Tree of the {DIMENSION_LABELS[d]} dimension")
        else:
            frame = tree_frame(cat, d)
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
    show_node(looked.found)

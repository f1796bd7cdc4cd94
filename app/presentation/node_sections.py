"""What only some node pages show, computed without Streamlit, as a list of sections a node page goes through
in order: each ``NodeSection`` says whether it applies to a node and builds what it shows as ``Block``s of
``Part``s (Markdown, captions, an equation, a table, an info note, a page link), which the page renders
whatever the section. A new node-specific feature is a new entry in ``SECTIONS``, not a branch in the page.

    SECTIONS, in order: implementations (each with "Run this"), in the code (where a concept node's idea is
    code: ``reference_impls.implementations.CONCEPT_CODE``, the survey's preliminaries), two forms (the
    preliminaries' task as a one-step MDP and as a multi-turn POMDP: both forms' training-reward curves and
    held-out before and after, ``lab.compare.forms``, or that the grid has not been run), measured learning (the learning preset's
    measured curve on each of their environments, from the shipped records), claims ("Does it do what the paper
    says?": each claim about its implementations, its paired ablation's figure and verdict, issue 61),
    comparison (its rows in the comparison grids),
    value search (learned-value planning), not implemented (why not yet), proxy (the closest runnable stand-in),
    pass@k (the mechanistic-debate node), scaling sweep (the curve of each sweep grid that measures the node, or
    that it has not been run and how to run it), family (a family header: its base's "Run this"), tour (the survey's
    prose and root nodes: a guided tour of their children's implementations, ``TOURS``).

    for name, blocks in node_sections(NodeContext(cat, "alg-grpo", load_grids=available_results)):
        ...
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pandas as pd

from app import routes
from app.presentation.common import md_escape
from app.presentation.compare import seeds_label
from app.presentation.docs import link_doc_paths
from app.presentation.lab import run_link
from papers.catalog import Catalog

#: what a ``Part`` can be; the node page has one way to show each
PART_KINDS = ("markdown", "caption", "latex", "table", "note", "link", "chart")


@dataclass(frozen=True)
class Part:
    """One thing a section shows: ``body`` is Markdown (markdown, caption, note: an info box), LaTeX (latex),
    a DataFrame (table), a ``routes.Link`` (link, shown with ``label``) or a Vega-Lite spec (chart); ``icon``
    for a note or a link."""

    kind: str
    body: Any
    label: str = ""
    icon: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in PART_KINDS:
            raise ValueError(f"unknown part kind {self.kind!r} (kinds: {', '.join(PART_KINDS)})")


@dataclass(frozen=True)
class Block:
    """Parts shown together, in a bordered box when ``boxed``, else straight on the page."""

    parts: tuple[Part, ...]
    boxed: bool = False


def _value_searches(node_id: str) -> list[dict]:
    """The shipped learned-value search comparisons of a node (results/value-search/: a few small files)."""
    from lab.value_search_results import for_node

    return for_node(node_id)


def _sweeps(node_id: str) -> list:
    """The sweep grids that measure a node (issue 65, the scaling nodes), each with its results or None."""
    from lab.compare.sweep import sweep_for_node

    return sweep_for_node(node_id)


def _forms(node_id: str) -> list:
    """The grids that run one task in two forms on a node (issue 65, the preliminaries), each with its results
    or None."""
    from lab.compare.forms import forms_for_node

    return forms_for_node(node_id)


@dataclass
class NodeContext:
    """What the sections of one node page read: the node, its reference implementations and, each loaded once
    on first use, the comparison grids (``load_grids``: the app passes its cached loader), the node's
    value-search records, the sweeps that measure it (``load_sweeps``) and the grids that run its task in two forms
    (``load_forms``)."""

    catalog: Catalog
    node: str
    load_grids: Callable[[], Sequence]
    load_value_searches: Callable[[str], list[dict]] = _value_searches
    load_sweeps: Callable[[str], list] = _sweeps
    load_forms: Callable[[str], list] = _forms

    @cached_property
    def impls(self) -> list:
        from lab.catalog import for_node

        return for_node(self.node)

    @cached_property
    def grids(self) -> Sequence:
        return self.load_grids()

    @cached_property
    def value_searches(self) -> list[dict]:
        return self.load_value_searches(self.node)

    @cached_property
    def sweeps(self) -> list:
        return self.load_sweeps(self.node) if self.impls else []

    @cached_property
    def forms(self) -> list:
        return self.load_forms(self.node) if self.impls else []


@dataclass(frozen=True)
class NodeSection:
    """A part of the node page that only some nodes show: ``applies`` says whether this node shows it,
    ``build`` what it shows (no blocks: nothing, e.g. no grid has measured the node's implementations)."""

    name: str
    applies: Callable[[NodeContext], bool]
    build: Callable[[NodeContext], list[Block]]


#: the kinds of part whose body is Markdown: their documentation and source paths become links (link_doc_paths)
TEXT_KINDS = ("markdown", "caption", "note")


def _with_path_links(block: Block) -> Block:
    parts = tuple(Part(p.kind, link_doc_paths(p.body), p.label, p.icon) if p.kind in TEXT_KINDS else p
                  for p in block.parts)
    return Block(parts, block.boxed)


def node_sections(ctx: NodeContext) -> list[tuple[str, list[Block]]]:
    """The sections the node shows, in ``SECTIONS`` order, each with its blocks; a documentation or source path
    in their text is a link to its page in the app."""
    return [(s.name, [_with_path_links(b) for b in blocks]) for s in SECTIONS
            if s.applies(ctx) and (blocks := s.build(ctx))]


# -- its implementations, or why it has none, or its family's base ---------------------------------------
def _implementations(ctx: NodeContext) -> list[Block]:
    from lab.catalog import equation

    blocks = []
    for impl in ctx.impls:
        parts = [Part("markdown", f"**Reference implementation:** {md_escape(impl.title)}. {md_escape(impl.summary)}")]
        if impl.changes:
            parts.append(Part("markdown", f"**What it changes and why.** {md_escape(impl.changes)}"))
        if impl.survey_vs_paper:
            parts.append(Part("markdown", f"**Survey vs paper.** {md_escape(impl.survey_vs_paper)}"))
        if equation(impl):
            parts.append(Part("latex", equation(impl)))
        if impl.paper:
            parts.append(Part("caption", f"Implemented from: {md_escape(impl.paper)}"))
        if impl.trains:
            parts.append(Part("link", run_link(impl), "Run this", ":material/play_arrow:"))
        else:  # the Lab only trains: a row that does not train is run by its measurement command
            parts.append(Part("markdown", "**Run this (no training)** from a shell in the project folder; it loads "
                                          "the model and scores it, nothing is trained:\n\n"
                                          f"```\n{impl.command}\n```"))
        blocks.append(Block(tuple(parts), boxed=True))
    return blocks


def _measured_learning(ctx: NodeContext) -> list[Block]:
    """Per environment of the node's implementations whose learning preset the benchmark has measured
    (``benchmarks/learn_presets.py``, shipped into ``lab/recipes/learn/<env>.yaml``): the measured curve (both
    arms, the seeds' band), the settings and time, the verdict with its interval and the held-out figures, and
    on the memory environment the Memory-R1 table. Nothing for an environment not measured yet."""
    from app.presentation import learning
    from lab import recipes

    blocks, seen = [], set()
    for impl in ctx.impls:
        if impl.env in seen:
            continue
        seen.add(impl.env)
        band = learning.measured_band(impl.env)
        if band is None:
            continue
        parts = [Part("markdown", f"**Measured learning on {md_escape(impl.env)}**: what the learning preset did in "
                                  f"the benchmark's runs, without running anything (benchmarks/learn_presets.py)."),
                 Part("chart", learning.measured_curve_spec(impl.env, band)),
                 Part("caption", f"{learning.settings_text(impl.env)} {band['time_text']}"),
                 Part("markdown", md_escape(recipes.measured_sentence(impl.env)))]
        rows = learning.memory_r1_rows(recipes.measured(impl.env))
        if rows:
            parts.append(Part("caption", "Memory-R1's claim on held-out sessions: the RL-trained manager against "
                                         "its warm start and the add-only baseline (answer exact match, 95% "
                                         "intervals)."))
            parts.append(Part("table", pd.DataFrame(rows)))
        blocks.append(Block(tuple(parts), boxed=True))
    return blocks


def _why_not(node_id: str) -> str:
    """Why the node has no reference implementation yet ('' for a node not listed as such)."""
    from lab.catalog import not_implemented

    return not_implemented(node_id)


def _not_implemented(ctx: NodeContext) -> list[Block]:
    return [Block((Part("note", "**No reference implementation yet.** " + md_escape(_why_not(ctx.node)),
                        icon=":material/pending:"),))]


def family_base(catalog: Catalog, node_id: str):
    """For a node without its own implementation whose child has one (a family header): the first such
    child's first implementation (the family's base, listed first in the taxonomy); else None."""
    from lab.catalog import for_node

    for child in catalog.taxonomy.children.get(node_id, []):
        impls = [impl for impl in for_node(child) if impl.trains]
        if impls:
            return impls[0]
    return None


def _family(ctx: NodeContext) -> list[Block]:
    family = family_base(ctx.catalog, ctx.node)
    return [Block((Part("markdown", f"**A family of algorithms.** Its base implementation is {md_escape(family.title)}; "
                                    "each variant below with a reference implementation has its own *Run this*."),
                   Part("link", run_link(family), "Run the family's base", ":material/play_arrow:")), boxed=True)]


# -- does it do what the paper says (issue 61) -----------------------------------------------------------
def _claims(ctx: NodeContext) -> list[Block]:
    """Each claim about the node's implementations (``app.presentation.claims``): the claim and its paper, the
    figure of its quantity over steps when recorded, the verdict and settings, or how to measure it."""
    from app.presentation.claims import SECTION_TITLE, claim_parts, node_claims

    found = node_claims({i.id for i in ctx.impls})
    if not found:
        return []
    blocks = [Block((Part("markdown", f"#### {SECTION_TITLE}"),
                     Part("caption", "Each claim is tested where its mechanism acts: the implementation against the "
                                     "same with only that mechanism removed, on the same seeds, warm starts and "
                                     "problems (docs/claims.md).")))]
    for claim, line, figure in found:
        blocks.append(Block(tuple(Part(kind, body) for kind, body in claim_parts(claim, line, figure)), boxed=True))
    return blocks


# -- comparison grids -----------------------------------------------------------------------------------
def node_comparison_lines(grids, impl_ids: set[str]) -> list[tuple[str, str]]:
    """(grid key for a link, one line) per comparison row of the node's implementations: the leaderboard row and its
    verdict against the grid's baseline; in a base / SFT / SFT + RL grid, the stages and RL's paired
    verdict against the warm start instead. The lines are Markdown with the names escaped."""
    lines = []
    for grid in grids:
        if not any(c.get("implementation") in impl_ids for c in grid.cells):
            continue  # not scored at all: its summary may not be computed yet
        name, key = grid.spec.get("name", ""), grid.key
        summary = grid.summary()  # computed once per results (lab.compare.results.grid_summary)
        stages = summary.progression
        for env, rows in summary.board.items():
            for row in rows:
                if row["implementation"] not in impl_ids:
                    continue
                where = f"In the comparison grid *{md_escape(name)}* ({md_escape(env)}, {seeds_label(row['seeds'])})"
                held = f"{100 * row['heldout']:.1f} % [{100 * row['low']:.1f}, {100 * row['high']:.1f}]"
                refs = {r["stage"]: r for r in stages.get(env, []) if r["implementation"] is None}
                if refs:
                    mine = next(r for r in stages[env] if r["implementation"] == row["implementation"])
                    before = "; ".join(f"{label} {100 * r['heldout']:.1f} %" for label, r in refs.items())
                    versus = [mine["verdict"] or "no warm start measured"]
                    if row["verdict"] and row["verdict"] != "baseline":  # and against the grid's baseline
                        versus.append(row["verdict"])
                    lines.append((key, f"{where}: {before}; SFT + RL held-out {held}; "
                                        f"{md_escape('; '.join(versus))}."))
                else:
                    lines.append((key, f"{where}: held-out {held}; "
                                        f"{md_escape(row['verdict'] or 'no baseline in the grid')}."))
    return lines


def _comparison(ctx: NodeContext) -> list[Block]:
    compared = node_comparison_lines(ctx.grids, {i.id for i in ctx.impls})
    if not compared:
        return []
    return [Block((*(Part("caption", line) for _, line in compared),  # Markdown whose names are escaped
                   Part("link", routes.compare(grid=compared[0][0]), "See the comparison", ":material/leaderboard:")))]


# -- planning with a learned value --
VALUE_SEARCH_METHODS = {"policy": "the policy alone (sampled episodes)", "uninformed": "best-first, no guidance",
                        "heuristic": "best-first, fixed heuristic", "learned": "best-first, learned value"}


def value_search_frame(record: dict) -> pd.DataFrame:
    """A value-search record (lab.value_search_results) as a table: one row per budget and method, success in %
    with its 95% interval and the calls each method used on average."""
    rows = []
    for b in record["budgets"]:
        for method, label in VALUE_SEARCH_METHODS.items():
            if method not in b["methods"]:  # records written before the uninformed control have three methods
                continue
            m = b["methods"][method]
            s = m["success"]
            length = b.get("plan_length", {}).get(method)
            rows.append({"budget (calls)": b["budget"], "method": label, "solved %": round(100 * s["mean"], 1),
                         "95% low": round(100 * s["low"], 1), "95% high": round(100 * s["high"], 1),
                         "mean calls": round(m["mean_calls"], 1),
                         "mean plan length (puzzles it solved)": None if length is None else round(length, 1)})
    return pd.DataFrame(rows)


def value_search_verdicts(record: dict) -> list[str]:
    """Per budget, the learned value against the heuristic, the policy and (where recorded) unguided search.
    Where the record has every puzzle's result for both methods, the comparison is recomputed here with the
    method's test and worded by ``stats.verdict_sentence`` (one value fit, so "one seed: an observation ...", no p).
    A record without per-puzzle results (a user's own older file) shows its stored difference and verdict, said
    to be as recorded. Markdown-safe: numbers formatted as numbers, stored text escaped."""
    from reference_impls.stats import compare, verdict_sentence

    lines = []
    for b in record["budgets"]:
        parts = []
        for key, method, against in (("learned_vs_heuristic", "heuristic", "the heuristic"),
                                     ("learned_vs_policy", "policy", "the policy"),
                                     ("learned_vs_uninformed", "uninformed", "no guidance")):
            d = b.get(key)
            if d is None:
                continue
            mine = b["methods"]["learned"].get("per_problem") or []
            theirs = b["methods"].get(method, {}).get("per_problem") or []
            if mine and len(mine) == len(theirs):
                c = compare([mine], [theirs])
                parts.append(f"vs {against}: {md_escape(verdict_sentence(c, against, None, 1))}")
                continue
            diff = d["difference"]
            parts.append(f"vs {against} {100 * diff['mean']:+.0f} points [{100 * diff['low']:+.0f}, "
                         f"{100 * diff['high']:+.0f}], as recorded: {md_escape(d['verdict'])}")
        lines.append(f"{int(b['budget'])} calls, {int(b['n'])} held-out puzzles: learned value "
                     + "; ".join(parts) + ".")
    return lines


def _value_search(ctx: NodeContext) -> list[Block]:
    return [Block((Part("markdown", f"**Measured: a learned value guiding best-first search on {md_escape(r['env'])}**, "
                                    f"against a fixed heuristic, unguided search and the policy alone, at equal model "
                                    f"calls ({md_escape(r['model'])}; held-out puzzles; docs/env_textgames_value.md)."),
                   Part("table", value_search_frame(r)),
                   *(Part("caption", line) for line in value_search_verdicts(r))), boxed=True)
            for r in ctx.value_searches]


# -- proxies for nodes without an implementation, and the pass@k note --
@dataclass(frozen=True)
class ProxyNote:
    """What a node page says about a node that has no implementation of its own: the closest runnable
    proxy (``link`` to it in the Lab) or that none exists yet, and why."""

    heading: str
    text: str
    link: routes.Link | None = None
    link_label: str = ""


#: the node whose question pass@k answers: does RL add abilities or only sharpen what the base model samples?
PASSK_NODE = "mechanistic-debate"


def passk_note(grids) -> ProxyNote:
    """The mechanistic-debate node's note: where pass@k curves of base, warm-start and RL models are measured
    (grids with a passk file, shipped or the user's own), with a link to the first grid's first such environment on
    the Compare page, or how to measure them when none is."""
    measured = [(g.spec.get("name", ""), sorted(g.passk), g.key) for g in grids if g.passk]
    how = ("Measure it on a comparison grid with `python -m lab.compare passk GRID --env ENV` (pass@k for k = 1 up to "
           "the grid's samples: 64 in core, 256 in debate, the grid of this node's row calculator-grpo-passk; "
           "unbiased estimator, temperature 1, on held-out problems); the curves then appear on the Compare page.")
    if not measured:
        return ProxyNote("Measured here: pass@k before and after RL (no curves yet).",
                         "No pass@k curves are shipped or in your grids yet. " + how, routes.compare(),
                         "Open the Compare page")
    where = "; ".join(f"grid *{md_escape(name)}*: {md_escape(', '.join(envs))}" for name, envs, _ in measured)
    readings = [f"{md_escape(env)}: {md_escape(reading)}" for g in grids if g.passk
                for env, reading in sorted(g.summary().passk_readings.items()) if reading]
    found = f" What they show: {' '.join(readings)}" if readings else ""
    return ProxyNote("Measured here: pass@k before and after RL.",
                     f"The debate's test on this project's environments: if RL raises pass@1 but not pass@k at "
                     f"large k, it sharpened what the base model could already sample rather than adding an "
                     f"ability. Curves of the untrained model, the warm start and RL checkpoints (each reading says "
                     f"which and how they were chosen): {where}.{found}",
                     routes.compare(grid=measured[0][2], env=measured[0][1][0]), "See the pass@k curves")


def node_proxy_note(node_id: str) -> ProxyNote | None:
    """The node page's proxy note (lab.catalog.node_proxy), or None for a node that is not listed."""
    from lab.catalog import node_proxy

    found = node_proxy(node_id)
    if found is None:
        return None
    impl, reason = found
    if impl is None:
        return ProxyNote("No runnable proxy yet.", reason)
    return ProxyNote(f"Closest runnable proxy: {impl.title}.", reason, run_link(impl),
                     "Run the proxy")


def _note(note: ProxyNote, text: str, icon: str, link_icon: str) -> list[Block]:
    """A note as an info box (``text``: its Markdown) and, where it has one, its link below the box."""
    parts = [Part("note", text, icon=icon)]
    if note.link is not None:
        parts.append(Part("link", note.link, note.link_label, link_icon))
    return [Block(tuple(parts))]


def _proxy(ctx: NodeContext) -> list[Block]:
    note = node_proxy_note(ctx.node)
    return _note(note, f"**{md_escape(note.heading)}** {md_escape(note.text)}", ":material/pending:",
                 ":material/play_arrow:")


def _passk(ctx: NodeContext) -> list[Block]:
    note = passk_note(ctx.grids)  # its own text, the grid names in it escaped
    return _note(note, f"**{note.heading}** {note.text}", ":material/query_stats:", ":material/leaderboard:")


# -- the scaling sweeps (issue 65) ------------------------------------------------------------------------
def sweep_command(name: str) -> str:
    """The command that runs (or resumes) a sweep grid."""
    return f"python -m lab.compare run {name}"


def sweep_frame(results) -> pd.DataFrame:
    """A sweep's points as a table (``lab.compare.sweep.SweepResults``): its value, the seeds measured, held-out
    success in % with its 95% interval and the mean training time of a cell; a point not measured yet has its
    figures empty."""
    def pct(x):
        return None if x is None else round(100 * x, 1)

    return pd.DataFrame([{results.option: p["point"], "seeds": p["seeds"], "held-out %": pct(p["heldout"]),
                          "95% low": pct(p["low"]), "95% high": pct(p["high"]),
                          "training s per cell": None if p["train_s"] is None else round(p["train_s"])}
                         for p in results.points])


def sweep_curve_spec(results) -> dict:
    """A Vega-Lite spec of a sweep's curve: held-out success (%) at each measured point, in the file's order, with
    its 95% interval as an error bar."""
    order = [p["point"] for p in results.points]
    rows = [{"point": p["point"], "heldout": 100 * p["heldout"], "low": 100 * p["low"], "high": 100 * p["high"],
             "seeds": p["seeds"]} for p in results.measured]
    x = {"field": "point", "type": "ordinal", "sort": order, "title": results.option}
    return {"data": {"values": rows}, "height": 220,
            "layer": [{"mark": {"type": "rule"},
                       "encoding": {"x": x, "y": {"field": "low", "type": "quantitative",
                                                  "title": "held-out success (%)", "scale": {"domain": [0, 100]}},
                                    "y2": {"field": "high"}}},
                      {"mark": {"type": "line", "point": True},
                       "encoding": {"x": x, "y": {"field": "heldout", "type": "quantitative"},
                                    "tooltip": [{"field": "point"}, {"field": "heldout", "format": ".1f"},
                                                {"field": "low", "format": ".1f"}, {"field": "high", "format": ".1f"},
                                                {"field": "seeds"}]}}]}


def sweep_time_spec(results) -> dict | None:
    """A Vega-Lite spec of what each measured point cost: the mean training time of its complete cells (seconds;
    the efficiency sweep's quantity), or None when no record kept one."""
    rows = [{"point": p["point"], "train_s": p["train_s"]} for p in results.measured if p["train_s"] is not None]
    if not rows:
        return None
    x = {"field": "point", "type": "ordinal", "sort": [p["point"] for p in results.points], "title": results.option}
    return {"data": {"values": rows}, "height": 160, "mark": {"type": "bar"},
            "encoding": {"x": x, "y": {"field": "train_s", "type": "quantitative",
                                       "title": "training time per cell (s)"},
                         "tooltip": [{"field": "point"}, {"field": "train_s", "format": ".0f"}]}}


def sweep_blocks(sweeps) -> list[Block]:
    """Per sweep that measures the node (``(grid, results or None)``, ``lab.compare.sweep.sweep_for_node``): what
    it varies, then its curve (held-out success; below it, each point's training time) and table from the shipped
    or the user's results, or, when it has not been run, a plain note saying so with the command that runs it."""
    blocks = []
    for grid, results in sweeps:
        values = ", ".join(name for name, _ in grid.sweep_points())
        head = Part("markdown", f"**Sweep: {md_escape(grid.label or grid.name)}.** The grid *{md_escape(grid.name)}* "
                                f"varies {md_escape(grid.sweep['option'])} alone over {md_escape(values)}, "
                                f"{len(grid.seeds)} seeds per value, each value's cells from their own warm starts "
                                f"and scored on the same held-out problems (lab/recipes/grids/{grid.name}.yaml).")
        run = f"`{sweep_command(grid.name)}`"
        if results is None:
            blocks.append(Block((head, Part("note", f"**Not run yet.** No results of this sweep are shipped or in "
                                                    f"your data folder, so there is no curve to draw. Run it with "
                                                    f"{run} from the project folder (resumable: a finished point or "
                                                    f"cell is kept); its curve then appears here.",
                                            icon=":material/pending:")), boxed=True))
            continue
        where = "shipped results" if results.shipped else f"your run in {results.folder}"
        missing = [p["point"] for p in results.points if not p["seeds"]]
        caption = (f"From {md_escape(where)}: held-out success of each point's complete cells with its 95% interval "
                   f"over seeds x problems.")
        if missing:
            caption += (f" Not measured yet: {md_escape(', '.join(missing))}; {run} resumes the sweep.")
        time_spec = sweep_time_spec(results)
        charts = [Part("chart", sweep_curve_spec(results))] + ([] if time_spec is None else [Part("chart", time_spec)])
        blocks.append(Block((head, *charts, Part("table", sweep_frame(results)), Part("caption", caption)),
                            boxed=True))
    return blocks


def _scaling_sweep(ctx: NodeContext) -> list[Block]:
    return sweep_blocks(ctx.sweeps)


# -- one task in two forms (issue 65, the preliminaries) ----------------------------------------------------
#: how the page names each form, by the calculator's mode (``CalculatorConfig.mode``)
FORM_NAMES = {"direct": "one-step MDP", "tool": "multi-turn POMDP"}


def form_name(form) -> str:
    """A form's short name (``lab.compare.forms.FormRun``): by its mode, else its implementation id."""
    return FORM_NAMES.get(form.settings.get("mode"), form.implementation)


#: the forms' colours on the chart, in the grid file's order
FORM_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def forms_curve_spec(results) -> dict:
    """A Vega-Lite spec of the forms' training reward per step (the mean reward of the step's episodes),
    overlaid: each seed a thin line, the mean over seeds a thick one with points, one colour per form."""
    order = [form_name(f) for f in results.forms]
    rows = [{"form": form_name(f), "line": f"seed {s['seed']}", "step": step, "reward": reward, "kind": "seed"}
            for f in results.measured for s in f.seeds for step, reward in s["curve"]]
    rows += [{"form": form_name(f), "line": "mean", "step": step, "reward": reward, "kind": "mean"}
             for f in results.measured for step, reward in f.mean]
    # two colours far apart (the theme's default nominal colours are two shades of blue)
    color = {"field": "form", "type": "nominal", "sort": order, "title": "form",
             "scale": {"domain": order, "range": FORM_COLOURS[:len(order)]}}
    x = {"field": "step", "type": "quantitative", "title": "RL step", "axis": {"tickMinStep": 1}}
    y = {"field": "reward", "type": "quantitative", "title": "training reward", "scale": {"domain": [0, 1]}}
    tooltip = [{"field": "form"}, {"field": "line"}, {"field": "step"}, {"field": "reward", "format": ".3f"}]
    return {"data": {"values": rows}, "height": 260,
            "layer": [{"transform": [{"filter": "datum.kind == 'seed'"}],
                       "mark": {"type": "line", "strokeWidth": 1, "opacity": 0.45},
                       "encoding": {"x": x, "y": y, "color": color, "detail": {"field": "line"},
                                    "tooltip": tooltip}},
                      {"transform": [{"filter": "datum.kind == 'mean'"}],
                       "mark": {"type": "line", "strokeWidth": 3.5, "point": True},
                       "encoding": {"x": x, "y": y, "color": color, "tooltip": tooltip}}]}


def forms_frame(results) -> pd.DataFrame:
    """One row per form: held-out success (%) of its warm starts (before RL) and after RL with their 95%
    intervals over seeds x problems, RL minus each seed's own warm start (points, paired on the problems),
    the last step's mean training reward and what a cell cost (the verdicts, sentences, are ``forms_verdicts``)."""
    def pct(d):
        return "-" if d is None else f"{100 * d['heldout']:.1f} [{100 * d['low']:.1f}, {100 * d['high']:.1f}]"

    rows = []
    for f in results.forms:
        diff = f.difference
        rows.append({"form": form_name(f), "implementation": f.implementation, "seeds": len(f.seeds),
                     "held-out before RL (warm start) %": pct(f.before), "held-out after RL %": pct(f.after),
                     "RL - warm start (pts)": "-" if diff is None else
                     f"{100 * diff['mean']:+.1f} [{100 * diff['low']:+.1f}, {100 * diff['high']:+.1f}]",
                     "last step's training reward": None if not f.mean else round(f.mean[-1][1], 3),
                     "training s per cell": None if f.settings.get("train_s") is None else round(f.settings["train_s"])})
    return pd.DataFrame(rows)


def forms_verdicts(results) -> str:
    """Each measured form's verdict on RL against its warm starts (``board.progression``'s sentence), as Markdown
    lines."""
    lines = [f"- {form_name(f)}: {md_escape(f.verdict)}" for f in results.measured if f.verdict]
    return "**RL against the warm start, per form:**\n" + "\n".join(lines) if lines else ""


def forms_settings_text(results) -> str:
    """The settings the forms ran with, in one sentence (from the first measured form's records; the forms share
    every setting but the mode, which the table names)."""
    s = results.measured[0].settings
    mu = f", mu {s['mu']} updates per batch" if s.get("mu") else ""
    lr = f"{s['lr']:g}" if isinstance(s.get("lr"), (int, float)) else "not recorded"
    sft = s.get("sft_steps")
    return (f"Settings: {md_escape(str(s.get('algo', '')).upper())} on {md_escape(str(s.get('model')))}, "
            f"{s.get('steps')} steps of {s.get('prompts_per_step')} problems x {s.get('group_size')} samples "
            f"({s.get('episodes')} episodes per cell){mu}, learning rate {lr}, at most "
            f"{s.get('max_new_tokens_per_turn')} tokens per turn and {s.get('max_completion_tokens')} per episode; "
            f"each seed's warm start {sft} SFT step{'' if sft == 1 else 's'} on its own form's transcripts; "
            f"held-out: {s.get('eval_n')} problems (seed {s.get('eval_seed')}), greedy, in each form.")


def _concept_pointer(node_id: str) -> str:
    """Where the node's concept is in the code the two forms ran (``CONCEPT_CODE``), as one Markdown line."""
    from reference_impls.implementations import CONCEPT_CODE

    places = CONCEPT_CODE.get(node_id, ())
    if not places:
        return ""
    return ("**This node in these runs:** " + "; ".join(f"`{name}` in {path}" for path, name, _ in places) +
            ". The same code runs both forms; the calculator's mode option (direct or tool) is all that differs.")


#: what the page says in place of a no-update control: the grid runs no lr-0 cells
NO_CONTROL = ("No no-update (learning rate 0) control is run: the comparison grid trains every cell it runs, so "
              "each form's before figure is its warm starts' held-out score, and its training reward is read "
              "against its own first steps.")


def forms_blocks(node_id: str, forms) -> list[Block]:
    """Per grid that runs the node's task in two forms (``(grid, results or None)``,
    ``lab.compare.forms.forms_for_node``): what it runs, then both forms' training-reward curves (each seed thin,
    the mean thick), the held-out before and after table, each form's verdict, the settings and where the node's
    concept is in the code; or, when it has not been run, a plain note saying so with the commands that run and ship it."""
    from lab.compare.forms import export_command, run_command

    blocks = []
    for grid, results in forms:
        title = grid.label or f"One task, two forms ({grid.name})"
        head = Part("markdown", f"**{md_escape(title)}.** The grid "
                                f"*{md_escape(grid.name)}* trains the same word problems as a one-step MDP (one "
                                f"prompt, one answer, one reward) and as a multi-turn POMDP (observations, tool "
                                f"calls, transitions, one trajectory reward) with the same trainer and budget, "
                                f"{len(grid.seeds)} seeds each, each form from its own warm starts "
                                f"(lab/recipes/grids/{grid.name}.yaml).")
        pointer = _concept_pointer(node_id)
        code = [Part("markdown", pointer)] if pointer else []
        if results is None:
            blocks.append(Block((head, Part("note", f"**Not run yet.** No results of *{md_escape(grid.name)}* are "
                                                    f"shipped or in your data folder, so there are no curves to "
                                                    f"draw. Run it from the project folder with "
                                                    f"`{run_command(grid.name)}` (resumable: a finished stage is "
                                                    f"kept), then `{export_command(grid.name)}` to ship its results; "
                                                    f"the curves then appear here.", icon=":material/pending:"),
                                 *code), boxed=True))
            continue
        where = "shipped results" if results.shipped else f"your run in {results.folder}"
        missing = [form_name(f) for f in results.forms if not f.measured]
        caption = (f"From {md_escape(where)}: each form's training reward per RL step (the mean reward of the step's "
                   f"sampled episodes), each seed a thin line and the mean over seeds a thick one. Held-out success with its 95% interval over seeds x problems; RL "
                   f"minus each seed's own warm start paired on the same problems. {NO_CONTROL}")
        if missing:
            caption += f" Not measured yet: {md_escape(', '.join(missing))}; `{run_command(grid.name)}` resumes it."
        verdicts = forms_verdicts(results)
        blocks.append(Block((head, Part("chart", forms_curve_spec(results)), Part("table", forms_frame(results)),
                             *([Part("markdown", verdicts)] if verdicts else []), Part("caption", caption),
                             Part("caption", forms_settings_text(results)), *code), boxed=True))
    return blocks


def _two_forms(ctx: NodeContext) -> list[Block]:
    return forms_blocks(ctx.node, ctx.forms)


# -- a guided tour of the children's implementations (the survey's prose and root nodes) --------------------
#: the nodes that are the survey's prose or a root of its map: what their tour walks through, in the project's
#: own words. A node without children (the introduction, the conclusion) tours the roots of the map.
TOURS: dict[str, str] = {
    "introduction": "Start here. Each stop below is one part of the map, in the survey's order, with how much of it "
                    "runs in this project: small reference implementations that train on a CPU, each opened in the "
                    "Lab by its *Run this*. Each stop's own page has a tour of its parts.",
    "preliminaries": "The formal set-up first (what the agent observes, which actions it has, how the environment "
                     "answers, what is rewarded and what is maximised), then the algorithm families that do the "
                     "maximising. A stop with a runnable implementation opens the code that plays that part.",
    "capabilities": "What an agent can learn with RL, one capability per stop. The implementations under a stop are "
                    "environments in which that capability is what earns the reward.",
    "tasks": "The application areas the survey sorts its works into. The implementations under a stop are this "
             "project's environments for that kind of task, sized for a CPU; where a task needs pixels or the open "
             "web, the stop's pages say which text stand-in is used, or that none exists yet.",
    "task-others": "Tasks that belong to no larger family. Each stop is one; its page runs the environment built "
                   "for it, or names the closest runnable stand-in and why.",
    "environments": "Where agents are trained and tested, by kind of environment. Each stop maps a kind onto the "
                    "environments of this project that play that role.",
    "env-domain-specific": "Environments built around one field's work: running experiments, engineering "
                           "machine-learning systems, answering from biomedical knowledge, security tasks. Each stop "
                           "is one field; its runnable stand-in here is small and keeps the task's shape (what the "
                           "agent may do, what earns the reward), never the field's real data or tools, and its "
                           "page says what it simplifies.",
    "frameworks": "The software that runs RL for language models. This project trains with its own small trainer; "
                  "a stop with an implementation shows where that trainer and its environments meet that kind of "
                  "framework, in the framework's own interface or format.",
    "challenges": "Open problems: trustworthiness, scaling, and the debate on what RL adds to a model. The "
                  "implementations under these stops are measurements set up as training runs.",
    "conclusion": "The whole map once more, with how much of each part runs here: a place to pick what to try next.",
}


@dataclass(frozen=True)
class TourStop:
    """One stop of a tour: a node (``node``, ``name``), how many nodes of its subtree (itself included) have an
    implementation of their own out of how many, how many distinct implementations serve the subtree, and where
    to start (the node's own first implementation, else the first one found below it in the taxonomy's order)."""

    node: str
    name: str
    runnable_nodes: int
    nodes: int
    implementations: int
    start: Any = None


def tour_stops(catalog: Catalog, node_id: str) -> list[TourStop]:
    """The stops of ``node_id``'s tour: its children in the taxonomy's order, or, for a node without children, the
    roots of the map (those with children)."""
    from lab.catalog import for_node

    tax = catalog.taxonomy
    targets = tax.children.get(node_id) or [r for r in tax.roots() if r != node_id and tax.children.get(r)]
    stops = []
    for target in targets:
        subtree = [target, *tax.descendants(target)]
        rows = {n: for_node(n) for n in subtree}
        distinct = {impl.id: impl for n in subtree for impl in rows[n]}
        start = next((rows[n][0] for n in subtree if rows[n]), None)
        stops.append(TourStop(target, tax[target].name, sum(bool(rows[n]) for n in subtree), len(subtree),
                              len(distinct), start))
    return stops


def tour_line(number: int, stop: TourStop) -> str:
    """A stop as one Markdown line: the node's link, what of it runs, and where to start (with its Lab link)."""
    line = f"{number}. **[{md_escape(stop.name)}]({routes.node(stop.node).url})**: "
    if not stop.implementations:
        return line + (f"nothing runnable yet ({stop.nodes} nodes)." if stop.nodes > 1 else "nothing runnable yet.")
    count = f"{stop.implementations} implementation{'s' if stop.implementations != 1 else ''}"
    if stop.nodes > 1:
        count += f" on {stop.runnable_nodes} of its {stop.nodes} nodes"
    return line + f"{count}; start with [{md_escape(stop.start.title)}]({run_link(stop.start).url})."


def _tour(ctx: NodeContext) -> list[Block]:
    stops = tour_stops(ctx.catalog, ctx.node)
    if not stops:
        return []
    return [Block((Part("markdown", f"**A guided tour.** {TOURS[ctx.node]}"),
                   Part("markdown", "\n".join(tour_line(i, stop) for i, stop in enumerate(stops, 1)))), boxed=True)]


# -- the sections, in the order a node page shows them ---------------------------------------------------
def _concept_code(ctx: NodeContext) -> list[Block]:
    from reference_impls.implementations import CONCEPT_CODE

    lines = [f"- `{name}` in {path}: {md_escape(what)}" for path, name, what in CONCEPT_CODE[ctx.node]]
    return [Block((Part("markdown", "**In the code.** Where this concept is, in the environment and the trainer "
                                    "the rows above run:\n\n" + "\n".join(lines)),))]


def _has_concept_code(node_id: str) -> bool:
    from reference_impls.implementations import CONCEPT_CODE

    return node_id in CONCEPT_CODE


SECTIONS: tuple[NodeSection, ...] = (
    NodeSection("implementations", lambda c: bool(c.impls), _implementations),
    NodeSection("in the code", lambda c: _has_concept_code(c.node), _concept_code),
    NodeSection("two forms", lambda c: bool(c.forms), _two_forms),
    NodeSection("measured learning", lambda c: bool(c.impls), _measured_learning),
    NodeSection("claims", lambda c: bool(c.impls), _claims),
    NodeSection("comparison", lambda c: bool(c.impls), _comparison),
    NodeSection("value search", lambda c: bool(c.value_searches), _value_search),
    NodeSection("not implemented", lambda c: bool(_why_not(c.node)), _not_implemented),
    NodeSection("proxy", lambda c: not c.impls and node_proxy_note(c.node) is not None, _proxy),
    NodeSection("pass@k", lambda c: c.node == PASSK_NODE, _passk),
    NodeSection("scaling sweep", lambda c: bool(c.sweeps), _scaling_sweep),
    NodeSection("family", lambda c: not c.impls and c.node not in TOURS and family_base(c.catalog, c.node) is not None,
                _family),
    NodeSection("tour", lambda c: c.node in TOURS, _tour),
)

"""Does each algorithm do what its paper says (issue 61)? What a node page and the Algorithms page show of the
claims, computed without Streamlit from ``lab.compare.results.claims_report`` (the claims file and the verdicts
of the recorded paired experiments): per claim the claim, its paper reference, a figure of the quantity over
steps (both arms, each seed thin, the mean thick) when records exist, the verdict with its interval and settings;
without records, "not measured yet" and the command that measures it.

    for claim, line, figure in node_claims({"calculator-dapo"}):
        ...
"""
from __future__ import annotations

from app.presentation.common import md_escape

SECTION_TITLE = "Does it do what the paper says?"
ARM_LABELS = {"with": "with the mechanism", "without": "without (the ablation)"}


def node_claims(impl_ids: set[str], report=None) -> list[tuple]:
    """(claim, its line, its figure rows) of every claim about one of ``impl_ids``, in the claims file's order."""
    from lab.compare.results import claims_report

    spec, reports = claims_report() if report is None else report
    return [(c, reports[c.id]["line"], reports[c.id]["figure"]) for c in spec.claims if c.implementation in impl_ids]


def run_command(claim_id: str) -> str:
    return (f"python -m lab.compare claims run --claim {claim_id}   # then: python -m lab.compare claims --json")


def figure_spec(claim, figure: list[dict]) -> dict | None:
    """The quantity over steps as a Vega-Lite spec: each seed of each arm a thin line, each arm's mean over its seeds
    a thick one; None without records."""
    if not figure:
        return None
    values = [{**row, "arm": ARM_LABELS[row["arm"]], "line": f"{row['arm']} seed {row['seed']}"
               if row["kind"] == "seed" else f"{row['arm']} mean"} for row in figure]
    color = {"field": "arm", "type": "nominal", "title": None,
             "scale": {"domain": list(ARM_LABELS.values()), "range": ["#2563eb", "#9ca3af"]}}
    x = {"field": "step", "type": "quantitative", "title": "RL step", "axis": {"tickMinStep": 1}}
    y = {"field": "value", "type": "quantitative", "title": claim.metric}
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": f"{claim.metric} per step: each seed thin, the mean over seeds thick",
        "data": {"values": values},
        "encoding": {"x": x, "y": y, "color": color, "detail": {"field": "line", "type": "nominal"}},
        "layer": [
            {"transform": [{"filter": "datum.kind == 'seed'"}], "mark": {"type": "line", "strokeWidth": 1,
                                                                          "opacity": 0.5}},
            {"transform": [{"filter": "datum.kind == 'mean'"}], "mark": {"type": "line", "strokeWidth": 3,
                                                                          "point": True}},
        ],
    }


def _number(x) -> str:
    return "-" if x is None else f"{x:+.4g}"


def verdict_text(claim, line: dict) -> str:
    """The verdict in one Markdown sentence: the verdict, the paired difference and its interval, the smallest
    effect the test could detect, the test and its correction, and the settings it ran under."""
    verdict = line["verdict"]
    if verdict == "no ablation switch yet":
        return f"**No ablation switch yet.** {md_escape(line['why'])}"
    if verdict == "not run":
        return f"**Not measured yet.** Run `{run_command(claim.id)}`."
    s = line["settings"] or {}
    settings = (f"{md_escape(str(s.get('model')))}, {s.get('steps')} steps of {s.get('prompts_per_step')} x "
                f"{s.get('group_size')}, lr {s.get('lr')}, {s.get('mu')} updates per batch")
    stats = ""
    if line["ci_low"] is not None:
        stats = (f", 95% interval {_number(line['ci_low'])} to {_number(line['ci_high'])}; detectable with 80% "
                 f"power: {line['detectable']:.3g}; {md_escape(line['test'])}, Holm-adjusted p "
                 f"{line['p_holm']:.3g} over {line['tests']} claims")
    why = f" ({md_escape(line['why'])})" if line["why"] else ""
    return (f"**Verdict: {verdict}**{why}. {md_escape(claim.metric)} ({claim.summary.replace('_', ' ')}), with minus "
            f"without: {_number(line['diff'])} over {line['seeds']} seed pairs{stats}. Predicted: {claim.direction}. "
            f"Settings: {settings}.")


def claim_parts(claim, line: dict, figure: list[dict]) -> list[tuple[str, object]]:
    """(kind, body) of what one claim shows, in order: the claim, its paper reference and ablation, the figure
    (when recorded) and the verdict or how to measure it; kinds as the node page's ``Part``s."""
    ablation = ", ".join(f"{k} {v}" for k, v in claim.ablation.items())
    parts = [("markdown", f"**Claim ({md_escape(claim.implementation)}).** {md_escape(claim.claim)}"),
             ("caption", f"Paper: {md_escape(claim.paper_ref)}. Quantity: {md_escape(claim.metric)}"
                         + (f"; ablation: {md_escape(ablation)} (everything else identical)" if ablation else ""))]
    spec = figure_spec(claim, figure)
    if spec is not None:
        parts.append(("chart", spec))
    kind = "markdown" if line["verdict"] not in ("not run",) else "note"
    parts.append((kind, verdict_text(claim, line)))
    if claim.note:
        parts.append(("caption", md_escape(claim.note)))
    return parts


def verdict_column(nodes, report=None) -> list[str]:
    """The Algorithms page's column: per taxonomy node (None for a row without one), each of its implementations'
    claims as ``id: verdict`` ("" when it has none)."""
    from lab.catalog import for_node

    spec, reports = _report(report)
    out = []
    for node in nodes:
        ids = {i.id for i in for_node(node)} if node else set()
        out.append("; ".join(f"{c.id}: {reports[c.id]['line']['verdict']}" for c in spec.claims
                             if c.implementation in ids))
    return out


def _report(report):
    from lab.compare.results import claims_report

    return claims_report() if report is None else report

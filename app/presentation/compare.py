"""The Compare page's data, computed without Streamlit: a comparison grid's leaderboard and its base / SFT /
SFT + RL stages as tables, the interval chart (Vega-Lite) and the pass@k curves and their paired comparison.
The grids themselves are read and scored by ``lab.compare``; this shapes what it returns.

    summary = grid.summary()                       # every statistic, computed once per results
    st.table(leaderboard_frame(summary.board[env]))
    st.vega_lite_chart(interval_chart(summary.board[env], references(grid, env)))
    for line in env_notes(grid, summary, env): st.markdown(line)

Tables are plain strings with a dash where a figure does not apply (never "None"), shown as static tables
that wrap rather than scroll sideways.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from app.presentation.common import md_escape

NOT_APPLICABLE = "–"


def seeds_label(n: int) -> str:
    """"1 seed", "3 seeds": how the page and node lines name a row's seed count."""
    return f"{n} seed{'' if n == 1 else 's'}"


def _points(value: float | None) -> str:
    return NOT_APPLICABLE if value is None else f"{100 * value:+.1f}"


def compared_rows(rows: list[dict]) -> bool:
    """Whether a leaderboard compares anything: more than one row and a baseline among them. An environment
    with one implementation (a base / SFT / SFT + RL grid) has only its own row, which is not compared with
    itself."""
    return len(rows) > 1 and any(r["verdict"] == "baseline" for r in rows)


def leaderboard_frame(rows: list[dict]) -> pd.DataFrame:
    """One environment's leaderboard as a table (success and interval in %, cost beside quality). The
    implementation names the variant (search-dapo); "trainer" is the registered trainer that runs it (DAPO,
    Dr.GRPO and GSPO are switches of the grpo trainer), so it is not called "algorithm". The columns against
    the baseline appear only where a row has one to be compared with (``compared_rows``)."""
    compared = compared_rows(rows)
    frame = pd.DataFrame([{
        "implementation": r["implementation"], "trainer": r["algo"], "seeds": r["seeds"],
        "held-out %": round(100 * r["heldout"], 1), "95% low": round(100 * r["low"], 1),
        "95% high": round(100 * r["high"], 1),
        **({"vs baseline (pts)": "baseline" if r["verdict"] == "baseline" else _points(
            (r["vs_baseline"] or {}).get("mean")), "verdict": r["verdict"] or NOT_APPLICABLE} if compared else {}),
        "train min": round(r["train_s"] / 60, 1), "tokens": int(r["tokens"]), "peak MB": int(r["peak_rss_mb"]),
    } for r in rows])
    return frame


def progression_frame(rows: list[dict]) -> pd.DataFrame:
    """One environment's untrained -> SFT -> SFT + RL stages as a table (in %), each stage paired with the
    stage it starts from (a dash for the first stage, which starts from nothing)."""
    return pd.DataFrame([{
        "stage": r["stage"], "seeds": r["seeds"], "held-out %": round(100 * r["heldout"], 1),
        "95% low": round(100 * r["low"], 1), "95% high": round(100 * r["high"], 1),
        "vs stage before (pts)": _points((r["vs"] or {}).get("mean")),
        "verdict": r["verdict"] or NOT_APPLICABLE,
    } for r in rows])


@dataclass(frozen=True)
class Reference:
    """A figure every row of an environment is read against, drawn as a vertical line on its interval chart:
    ``value`` is a held-out success in [0, 1]."""

    label: str
    value: float
    color: str


WARM_START_COLOR, MAP_BLIND_COLOR = "#555555", "#d35400"


def best_map_blind(record: dict) -> tuple[str, float]:
    """The best fixed turn of a map-blind record (benchmarks/frozenlake_open_loop.py) and its held-out score."""
    turn = max(record["best"], key=lambda t: record["best"][t])
    return turn, float(record["best"][turn])


def references(grid, env: str) -> list[Reference]:
    """The lines of an environment's interval chart: the warm start alone (no RL), which every cell starts
    from, and where measured the best policy that never reads the map."""
    refs = []
    warm = grid.warm.get(env, {})
    if "heldout" in warm:
        refs.append(Reference(f"warm start {100 * warm['heldout']:.0f}%", float(warm["heldout"]), WARM_START_COLOR))
    if env in grid.map_blind:
        _, score = best_map_blind(grid.map_blind[env])
        refs.append(Reference(f"map-blind {100 * score:.0f}%", score, MAP_BLIND_COLOR))
    return refs


def interval_chart(rows: list[dict], refs: list[Reference] | tuple = ()) -> dict:
    """Vega-Lite: held-out success per implementation with its 95% interval as a bar, and each reference
    (``references``: the warm start, the map-blind bar) as a dashed vertical line labelled at the top. Each
    row's label names its seed count: a one-seed bar spans the problems' variation only and looks narrower
    than it should."""
    data = [{"row": f"{r['implementation']} ({seeds_label(r['seeds'])})",
             "implementation": r["implementation"], "seeds": r["seeds"], "heldout": 100 * r["heldout"],
             "low": 100 * r["low"], "high": 100 * r["high"]} for r in rows]
    order = [d["row"] for d in data]
    # every row labelled: Vega-Lite drops labels it thinks overlap, which hid rows of a 5-row board
    y = {"field": "row", "type": "nominal", "sort": order, "title": None,
         "axis": {"labelOverlap": False, "labelLimit": 260}}
    layers = [
        {"mark": {"type": "rule", "strokeWidth": 3, "opacity": 0.5},
         "encoding": {"y": y, "x": {"field": "low", "type": "quantitative", "title": "held-out success (%)",
                                    "scale": {"domain": [0, 100]}}, "x2": {"field": "high"}}},
        {"mark": {"type": "point", "filled": True, "size": 70},
         "encoding": {"y": y, "x": {"field": "heldout", "type": "quantitative"},
                      "tooltip": [{"field": "implementation"}, {"field": "seeds"},
                                  {"field": "heldout", "format": ".1f"},
                                  {"field": "low", "format": ".1f"}, {"field": "high", "format": ".1f"}]}},
    ]
    for i, ref in enumerate(refs):
        line = {"values": [{"reference": ref.label, "x": 100 * ref.value}]}
        x = {"field": "x", "type": "quantitative"}
        layers.append({"data": line, "mark": {"type": "rule", "strokeDash": [6, 4], "strokeWidth": 2,
                                              "color": ref.color},
                       "encoding": {"x": x, "tooltip": [{"field": "reference"}]}})
        # labelled above the plot (in its top padding), so a label never covers a row's interval
        layers.append({"data": line, "mark": {"type": "text", "align": "left", "dx": 3, "dy": -3 - 13 * i,
                                              "baseline": "bottom", "color": ref.color, "fontSize": 11},
                       "encoding": {"x": x, "y": {"value": 0}, "text": {"field": "reference"}}})
    chart = {"data": {"values": data}, "height": {"step": 26}, "layer": layers}
    if refs:
        chart["padding"] = {"top": 6 + 13 * len(refs), "left": 5, "right": 5, "bottom": 5}
    return chart


def grid_intro(grid) -> str:
    """What the grid's rows are and what each is compared with, true for this grid's kind (Markdown)."""
    spec = grid.spec
    baseline = md_escape(str(spec.get("baseline", "grpo")))
    seeds = spec.get("seeds") or []
    ev = spec.get("eval") or {}
    problems = f"the same {ev['n']} held-out problems" if ev.get("n") else "the same held-out problems"
    text = (f"Each cell trains one implementation from the same warm-start checkpoint under the same budget, then "
            f"answers {problems} greedily (one answer each, temperature 0). Intervals are 95% intervals over "
            f"problems{' and seeds' if len(seeds) > 1 else ''}; each verdict names the test behind it. ")
    if spec.get("base"):
        text += ("Per environment the untrained model, the warm start (SFT) and SFT + RL are measured; each stage is "
                 "compared, paired on the problems, with the stage it starts from")
        text += (f", and where an environment has several implementations each is also compared with its plain "
                 f"{baseline} row.")
    else:
        text += (f"Each row is compared, paired on the problems, with its environment's plain {baseline} row (the "
                 f"baseline row itself is not compared) and, where the warm start was measured alone, with it (the "
                 f"chart's grey dashed line).")
    if len(seeds) == 1:
        text += (" Every row is one training run (one seed): its interval covers another draw of problems, not "
                 "another training run.")
    return text


def env_notes(grid, summary, env: str) -> list[str]:
    """What an environment's results say and what limits them, as Markdown lines: each comparison's verdict in
    the board's own words, one-seed rows, the map-blind bar, and why greedy held-out and pass@1 differ."""
    rows = summary.board.get(env, [])
    notes = []
    stages = [r for r in summary.progression.get(env, []) if r["verdict"]]
    if stages:
        notes.append("**Against the stage it starts from:**\n" + "\n".join(
            f"- {md_escape(r['stage'])}: {md_escape(r['verdict'])}" for r in stages))
    if compared_rows(rows):
        notes.append("**Against the baseline:**\n" + "\n".join(
            f"- {md_escape(r['implementation'])}: {md_escape(r['verdict'])}" for r in rows
            if r["verdict"] and r["verdict"] != "baseline"))
    one_seed = [r["implementation"] for r in rows if r["seeds"] == 1]
    if one_seed and len(one_seed) < len(rows):
        notes.append(f"**One seed:** {md_escape(', '.join(one_seed))}: an interval over the problems only; another "
                     "training run of the same row can land outside it.")
    if env in grid.map_blind:
        record = grid.map_blind[env]
        turn, score = best_map_blind(record)
        best = max(rows, key=lambda r: r["heldout"]) if rows else None
        notes.append(
            f"**Map-blind bar:** writing `{turn}` every turn, whatever the map shows, solves {100 * score:.0f}% of "
            f"these {record.get('maps', '')} held-out maps (benchmarks/frozenlake_open_loop.py, no model). A row "
            "at or below that line has not shown that it reads the map"
            + (f"; the best row here, {md_escape(best['implementation'])}, scores {100 * best['heldout']:.0f}%."
               if best else "."))
    if env in grid.passk:
        record = grid.passk[env]
        notes.append(
            f"**Held-out vs pass@1:** the tables score one greedy answer per problem; pass@1 below is the expected "
            f"success of one sample at temperature {record.get('temperature', 1)} on "
            f"{record.get('problems', 'some')} of the held-out problems. Sampling finds answers greedy decoding "
            "misses and misses some it finds (a greedy decode stuck in a loop scores 0 where samples escape it), "
            "and the problem sets differ, so the two figures need not agree.")
    return notes


def passk_comparison_frame(rows: list[dict]) -> pd.DataFrame:
    """``lab.compare.results.passk_comparison`` rows (``summary.passk_rows[env]``) as a table in %: each model
    against the one it starts from, at k = 1 and the largest k, paired over the same problems."""
    return pd.DataFrame([{
        "model": r["model"], "against": r["against"], "k": r["k"], "before %": round(100 * r["before"], 1),
        "after %": round(100 * r["value"], 1), "difference (pts)": round(100 * r["difference"]["mean"], 1),
        "95% low": round(100 * r["difference"]["low"], 1), "95% high": round(100 * r["difference"]["high"], 1),
        "verdict": r["verdict"],
    } for r in rows])


def as_text(frame: pd.DataFrame, index: str) -> pd.DataFrame:
    """A table for ``st.table``: indexed by the column ``index``, numbers with one decimal (whole numbers as
    they are), so a static table shows 37.3 rather than 37.3000 without a pandas Styler (slow to send)."""
    def shown(value):
        return f"{value:.1f}" if isinstance(value, float) else value

    return frame.set_index(index).map(shown)


def line_chart(rows: list[dict], x: str, y: str, series: str, x_title: str, y_title: str) -> dict:
    """Vega-Lite: one line per ``series`` value through the (``x``, ``y``) points of ``rows``, legend below."""
    return {
        "data": {"values": rows}, "height": 240,
        "mark": {"type": "line", "point": {"size": 20}},
        "encoding": {
            "x": {"field": x, "type": "quantitative", "title": x_title,  # steps and k are whole numbers
                  "axis": {"tickMinStep": 1, "format": "d"}},
            "y": {"field": y, "type": "quantitative", "title": y_title},
            "color": {"field": series, "type": "nominal", "title": None, "legend": {"orient": "bottom",
                                                                                   "labelLimit": 320}},
            "tooltip": [{"field": series}, {"field": x}, {"field": y, "format": ".3f"}],
        },
    }


def curves_chart(curves: list[dict], env: str) -> dict | None:
    """The mean training reward per step of each implementation of ``env`` (``summary.curves``), or None."""
    rows = [{"step": c["step"], "implementation": c["implementation"], "reward": c["reward_mean"]}
            for c in curves if c["env"] == env]
    return line_chart(rows, "step", "reward", "implementation", "step", "reward") if rows else None


def passk_chart(passk: dict) -> dict:
    """The pass@k curves of one environment's record: one line per model."""
    rows = [{"k": int(k), "model": label, "pass@k": v} for label, c in passk.get("curves", {}).items()
            for k, v in c["pass_at_k"].items()]
    return line_chart(sorted(rows, key=lambda r: (r["model"], r["k"])), "k", "pass@k", "model", "k", "pass@k")

"""The Compare page's data, computed without Streamlit: a comparison grid's leaderboard and its base / SFT /
SFT + RL stages as tables, the interval chart (Vega-Lite) and the pass@k curves and their paired comparison.
The grids themselves are read and scored by ``lab.compare``; this shapes what it returns.

    st.dataframe(leaderboard_frame(rows))          # rows: one environment of ``grid.board()``
    st.vega_lite_chart(interval_chart(rows))
"""
from __future__ import annotations

import pandas as pd


def seeds_label(n: int) -> str:
    """"1 seed", "3 seeds": how the page and node lines name a row's seed count."""
    return f"{n} seed{'' if n == 1 else 's'}"


def leaderboard_frame(rows: list[dict]) -> pd.DataFrame:
    """One environment's leaderboard as a table (success and interval in %, cost beside quality). The
    implementation names the variant (search-dapo); "trainer" is the registered trainer that runs it (DAPO,
    Dr.GRPO and GSPO are switches of the grpo trainer), so it is not called "algorithm"."""
    frame = pd.DataFrame([{
        "implementation": r["implementation"], "trainer": r["algo"], "seeds": r["seeds"],
        "held-out %": round(100 * r["heldout"], 1), "95% low": round(100 * r["low"], 1),
        "95% high": round(100 * r["high"], 1),
        "vs baseline (pts)": None if r["vs_baseline"] is None else round(100 * r["vs_baseline"]["mean"], 1),
        "verdict": r["verdict"], "train min": round(r["train_s"] / 60, 1), "tokens": int(r["tokens"]),
        "peak MB": int(r["peak_rss_mb"]),
    } for r in rows])
    return frame


def progression_frame(rows: list[dict]) -> pd.DataFrame:
    """One environment's untrained -> SFT -> SFT + RL stages as a table (in %), each stage paired with the
    stage it starts from."""
    return pd.DataFrame([{
        "stage": r["stage"], "seeds": r["seeds"], "held-out %": round(100 * r["heldout"], 1),
        "95% low": round(100 * r["low"], 1), "95% high": round(100 * r["high"], 1),
        "vs stage before (pts)": None if r["vs"] is None else round(100 * r["vs"]["mean"], 1),
        "verdict": r["verdict"],
    } for r in rows])


def interval_chart(rows: list[dict]) -> dict:
    """Vega-Lite: held-out success per implementation with its 95% interval as a bar. Each row's label names
    its seed count: a one-seed bar spans the problems' variation only and looks narrower than it should."""
    data = [{"row": f"{r['implementation']} ({seeds_label(r['seeds'])})",
             "implementation": r["implementation"], "seeds": r["seeds"], "heldout": 100 * r["heldout"],
             "low": 100 * r["low"], "high": 100 * r["high"]} for r in rows]
    order = [d["row"] for d in data]
    # every row labelled: Vega-Lite drops labels it thinks overlap, which hid rows of a 5-row board
    y = {"field": "row", "type": "nominal", "sort": order, "title": None,
         "axis": {"labelOverlap": False, "labelLimit": 260}}
    return {
        "data": {"values": data}, "height": {"step": 26},
        "layer": [
            {"mark": {"type": "rule", "strokeWidth": 3, "opacity": 0.5},
             "encoding": {"y": y, "x": {"field": "low", "type": "quantitative", "title": "held-out success (%)",
                                        "scale": {"domain": [0, 100]}}, "x2": {"field": "high"}}},
            {"mark": {"type": "point", "filled": True, "size": 70},
             "encoding": {"y": y, "x": {"field": "heldout", "type": "quantitative"},
                          "tooltip": [{"field": "implementation"}, {"field": "seeds"},
                                      {"field": "heldout", "format": ".1f"},
                                      {"field": "low", "format": ".1f"}, {"field": "high", "format": ".1f"}]}},
        ],
    }


def passk_frame(passk: dict) -> pd.DataFrame:
    """pass@k curves of one environment: index k, one column per model."""
    curves = {label: {int(k): v for k, v in c["pass_at_k"].items()} for label, c in passk.get("curves", {}).items()}
    frame = pd.DataFrame(curves).sort_index()
    frame.index.name = "k"
    return frame


def passk_comparison_frame(rows: list[dict]) -> pd.DataFrame:
    """``lab.compare.results.passk_comparison`` rows as a table in %: each model against the one it starts from, at
    k = 1 and the largest k, paired over the same problems."""
    return pd.DataFrame([{
        "model": r["model"], "against": r["against"], "k": r["k"], "before %": round(100 * r["before"], 1),
        "after %": round(100 * r["value"], 1), "difference (pts)": round(100 * r["difference"]["mean"], 1),
        "95% low": round(100 * r["difference"]["low"], 1), "95% high": round(100 * r["difference"]["high"], 1),
        "verdict": r["verdict"],
    } for r in rows])

"""The Compare page's data, computed without Streamlit: a comparison grid's leaderboard and its base / SFT /
SFT + RL stages as tables, the interval chart (Vega-Lite) and the pass@k curves and their paired comparison.
The grids themselves are read and scored by ``lab.compare``; this shapes what it returns. The mechanism
diagnostics per step (``DIAGNOSTICS``: entropy, clip shares, KL, importance ratio, lengths of correct and wrong
episodes, groups without signal, usable pairs) become a tidy frame (``diagnostics_frame``) drawn one diagnostic at
a time (``diagnostic_chart``), or a note when the records predate them (``diagnostics_notes``).

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
            (r["vs_baseline"] or {}).get("mean")),
            "interval alone / all at once (pts)": _both_intervals(r.get("tests", {}).get("baseline")),
            "verdict": r["verdict"] or NOT_APPLICABLE} if compared else {}),
        "train min": round(r["train_s"] / 60, 1), "tokens": int(r["tokens"]), "peak MB": int(r["peak_rss_mb"]),
    } for r in rows])
    return frame


def _both_intervals(test: dict | None) -> str:
    """A comparison's 95% interval read alone and, where it is one of several of its kind, its Bonferroni interval
    read with all of them (``simultaneous``): a sentence that rules a difference out over every row rests on the
    second."""
    if test is None or test.get("one_run"):
        return NOT_APPLICABLE
    alone = f"{_points(test['low'])} to {_points(test['high'])}"
    sim = test.get("simultaneous")
    return alone if not sim else f"{alone} / {_points(sim['low'])} to {_points(sim['high'])} (over {sim['over']})"


def warm_start_effects_frame(rows: list[dict]) -> pd.DataFrame | None:
    """Each implementation's effect from each warm start on its own (RL minus the warm start its seeds started
    from, ``lab.compare.report.warm_start_effects``), in points: where a pooled "no difference from the warm start"
    averages a loss from one warm start with a gain from another, this table shows both. None for a grid whose
    seeds share one warm start or each have their own."""
    from lab.compare.report import warm_start_effects

    effects = warm_start_effects(rows)
    if not effects:
        return None
    return pd.DataFrame([{
        "implementation": e["implementation"], "warm start": f"{e['label']} ({100 * e['heldout_warm']:.1f}%)",
        "seeds": e["seeds"], "RL - warm start (pts)": _points(e["difference"]),
        "95% low": _points(e["low"]), "95% high": _points(e["high"]),
        "Holm p": f"{e['p_holm']:.3f}", "verdict": e["relation"],
    } for e in effects])


def warm_start_effects_chart(rows: list[dict]) -> dict | None:
    """``warm_start_effects_frame`` drawn: per implementation, each warm start's effect as a point with its 95%
    interval, one colour per warm start, and a line at zero. None where the frame is None."""
    from lab.compare.report import warm_start_effects

    effects = warm_start_effects(rows)
    if not effects:
        return None
    values = [{"implementation": e["implementation"], "warm start": e["label"], "effect": 100 * e["difference"],
               "low": 100 * e["low"], "high": 100 * e["high"]} for e in effects]
    y = {"field": "implementation", "type": "nominal", "title": None}
    color = {"field": "warm start", "type": "nominal"}
    return {"data": {"values": values}, "height": 24 * len({v["implementation"] for v in values}) + 40,
            "encoding": {"y": y, "yOffset": {"field": "warm start"}, "color": color},
            "layer": [
                {"mark": "rule", "encoding": {"x": {"field": "low", "type": "quantitative",
                                                    "title": "RL minus its warm start (points, 95% interval)"},
                                              "x2": {"field": "high"}}},
                {"mark": {"type": "point", "filled": True, "size": 60},
                 "encoding": {"x": {"field": "effect", "type": "quantitative"},
                              "tooltip": [{"field": f} for f in ("implementation", "warm start", "effect", "low",
                                                                 "high")]}},
                {"data": {"values": [{"zero": 0}]}, "mark": {"type": "rule", "strokeDash": [4, 4]},
                 "encoding": {"x": {"field": "zero", "type": "quantitative"}, "y": None, "yOffset": None,
                              "color": None}},
            ]}


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
    """The lines of an environment's interval chart: each warm start alone (no RL), which the cells start
    from, and where measured the best policy that never reads the map."""
    refs = []
    for tag, warm in grid.warm_starts(env):  # one line per warm start (grids with several warm seeds)
        if "heldout" in warm:
            label = f"warm start{' ' + tag if tag else ''} {100 * warm['heldout']:.0f}%"
            refs.append(Reference(label, float(warm["heldout"]), WARM_START_COLOR))
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
    warm_seeds = spec.get("warm_seeds") or []
    start = ("from the same warm-start checkpoint" if len(warm_seeds) < 2 else
             f"from its seed's warm-start checkpoint ({len(warm_seeds)} warm starts per environment, trained with "
             f"seeds {', '.join(str(w) for w in warm_seeds)}; the cells of one seed share one, and a cell is compared "
             f"with its own)")
    text = (f"Each cell trains one implementation {start} under the same budget, then "
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


def progress_note(grid) -> str | None:
    """How far the grid has run when not every planned cell (its grid file's implementations x seeds) has a
    record: a grid still running, or stopped, shows what has finished, and its verdicts read only those cells
    (Markdown). None when every planned cell has one."""
    impls, seeds = grid.spec.get("implementations") or [], grid.spec.get("seeds") or []
    planned = {(i, s) for i in impls for s in seeds}
    done = {(c.get("implementation"), c.get("seed")) for c in grid.cells} & planned
    if not planned or len(done) == len(planned):
        return None
    started = {i for i, _ in done}
    missing = [i for i in impls if i not in started]
    text = (f"**Not finished:** {len(done)} of the grid's {len(planned)} cells ({len(impls)} implementations x "
            f"{len(seeds)} seeds) have results; the tables, charts and verdicts read those only, so a row's seed "
            f"count says how many it has.")
    if missing:
        shown = ", ".join(md_escape(i) for i in missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4
                                                                   else "")
        text += f" No cell yet: {shown}."
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


def family_frame(rows: list[dict]) -> pd.DataFrame | None:
    """One environment's held-out success per problem family (``by_family`` of the board's rows), in %: a column
    per family named with its number of problems, a row per implementation; beside each figure, in parentheses,
    the paired difference from the rows' own warm starts in points, where the records pair them. None when no row
    has families (an environment without them, or a grid whose problems are too few per family)."""
    names = list(dict.fromkeys(name for r in rows for name in r.get("by_family", {})))
    if not names:
        return None
    sizes = {name: e["problems"] for r in rows for name, e in r.get("by_family", {}).items()}

    def shown(entry: dict | None) -> str:
        if entry is None:
            return NOT_APPLICABLE
        vs = (entry.get("vs") or {}).get("mean")
        return f"{100 * entry['heldout']:.0f}" + ("" if vs is None else f" ({100 * vs:+.0f})")

    return pd.DataFrame([{"implementation": r["implementation"],
                          **{f"{name} ({sizes[name]})": shown(r.get("by_family", {}).get(name)) for name in names}}
                         for r in rows]).set_index("implementation")


def lr_frame(rows: list[dict]) -> pd.DataFrame | None:
    """``GridResults.lr_choices`` of one environment as a table: per implementation its mu, each rate tried with
    its validation success in %, the chosen rate, and whether that rate is at an end of the sweep (the best rate
    may then lie beyond what was tried). None when the grid chose no rate (no ``lr_sweep``)."""
    if not rows:
        return None

    def tried(r: dict) -> str:
        return "; ".join(f"{t['lr']:g}: {100 * t['validation']:.0f}%" + ("" if t["complete"] else " (stopped)")
                         for t in r["trials"])

    return pd.DataFrame([{"implementation": r["implementation"],
                          "mu": NOT_APPLICABLE if r["mu"] is None else r["mu"],
                          "validation success per rate": tried(r), "chosen": f"{r['chosen']:g}",
                          "at the sweep's edge": r["edge"] or "no"} for r in rows]).set_index("implementation")


def budget_frame(cells: list[dict]) -> pd.DataFrame | None:
    """The budget each cell actually spent (its record's ``budget``, lab/compare/training.py): RL steps done of those
    planned, the policy's updates (mu per step, fewer where DAPO's dynamic sampling left a step's groups without
    signal), the episodes sampled, PPO's critic updates, the tokens generated and the training time, and whether the
    cell is complete (an incomplete one is left out of every verdict). None when no cell's record has a budget
    (records from before issue 41)."""
    cells = sorted((c for c in cells if c.get("budget")), key=lambda c: (c["implementation"], c["seed"]))
    if not cells:
        return None
    critic = any(c["budget"].get("critic_updates") for c in cells)

    def row(c: dict) -> dict:
        b = c["budget"]
        done = b.get("policy_steps_done", c.get("steps_done"))
        return {"cell": c["cell"], "RL steps": f"{done}/{b['policy_steps']}",
                "policy updates": b.get("policy_updates", NOT_APPLICABLE),
                "episodes": b.get("episodes", NOT_APPLICABLE),
                **({"critic updates": b.get("critic_updates") or 0} if critic else {}),
                "tokens": int(c.get("tokens", 0)), "train min": round(c.get("train_s", 0.0) / 60, 1),
                "complete": "yes" if c.get("complete", True) else f"no: {c.get('incomplete_reason') or 'stopped'}"}

    return pd.DataFrame([row(c) for c in cells])


def passk_comparison_frame(rows: list[dict]) -> pd.DataFrame:
    """``lab.compare.results.passk_comparison`` rows (``summary.passk_rows[env]``) as a table in %: each model
    against the one it starts from, at k = 1 and the largest k, paired over the same problems. A row of an older
    record (its RL cell picked on the test problems, ``PASSK_LEGACY``) says "(old method)" beside its verdict: the
    reading under the table says why it is not to be trusted as a test."""
    from lab.compare.results import PASSK_LEGACY

    return pd.DataFrame([{
        "model": r["model"], "against": r["against"], "k": r["k"], "before %": round(100 * r["before"], 1),
        "after %": round(100 * r["value"], 1), "difference (pts)": round(100 * r["difference"]["mean"], 1),
        "95% low": round(100 * r["difference"]["low"], 1), "95% high": round(100 * r["difference"]["high"], 1),
        "verdict": r["verdict"] + (" (old method)" if r.get("method") == PASSK_LEGACY else ""),
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


# -- mechanism diagnostics, step by step -------------------------------------------------------------------

@dataclass(frozen=True)
class Diagnostic:
    """A per-step diagnostic the Compare page draws: the record's name, its axis label, and what its curve shows
    (which algorithm's mechanism it lets a reader see act)."""

    key: str
    label: str
    shows: str


#: the diagnostics drawn, in the order offered (docs/compare.md, "Mechanism diagnostics, every step")
DIAGNOSTICS = (
    Diagnostic("entropy", "policy entropy (nats per token)",
               "Whether the policy keeps exploring. DAPO's clip-higher raises the upper clip bound (0.28 against "
               "GRPO's 0.2) so that unlikely tokens with a positive advantage can grow: it is meant to keep entropy "
               "from collapsing, so DAPO's curve should stay above GRPO's."),
    Diagnostic("clip_frac_high", "share of tokens clipped above (A > 0)",
               "How often the upper bound stops a positive-advantage token from growing. Clip-higher (DAPO) moves "
               "that bound up, so its share should sit below GRPO's; it is 0 while a batch gets one update (the "
               "ratio is 1)."),
    Diagnostic("clip_frac_low", "share of tokens clipped below (A < 0)",
               "How often the lower bound stops a negative-advantage token from shrinking further; DAPO keeps "
               "GRPO's lower bound, so its share need not differ."),
    Diagnostic("kl", "KL to the reference (k3)",
               "How far the policy drifts from the frozen reference model, which the KL penalty (beta) holds "
               "back. No curve for a run without a reference (beta = 0, the GRPO family's default: GRPO, DAPO and "
               "Dr.GRPO rows unless their config sets beta)."),
    Diagnostic("ratio_mean", "mean importance ratio",
               "How off-policy the updates are: exactly 1 when a rollout batch gets one update, away from 1 on the "
               "later minibatch updates (mu > 1). GSPO's is the sequence ratio."),
    Diagnostic("ratio_max", "largest importance ratio",
               "The largest token ratio a step saw (GSPO: sequence ratio): what the clip range bounds and GMPO's "
               "geometric mean and log-space clip keep from growing."),
    Diagnostic("len_incorrect", "mean length of wrong episodes (tokens)",
               "Dr.GRPO's length bias: GRPO divides each answer's loss by its length, so a long wrong answer is "
               "penalised less per token and wrong answers can grow. Dr.GRPO divides by a constant instead, so its "
               "wrong answers should not lengthen. No point at a step with no wrong episode."),
    Diagnostic("len_correct", "mean length of correct episodes (tokens)",
               "Read with the wrong episodes' length: the bias Dr.GRPO removes lengthens wrong answers, not correct "
               "ones. No point at a step with no correct episode."),
    Diagnostic("zero_advantage_groups_frac", "share of groups with no signal",
               "Groups whose episodes all scored the same: a group-relative advantage is exactly 0 there, so they "
               "carry no gradient. DAPO's dynamic sampling drops them; a rising share means a batch teaches less."),
    Diagnostic("groups_kept_frac", "share of groups trained on",
               "What DAPO's dynamic sampling keeps (the groups with some signal); 1 for an algorithm that trains "
               "on every group."),
    Diagnostic("pairs", "usable preference pairs",
               "Offline (DPO family): how many preference pairs the sampled episodes gave; an all-correct or "
               "all-wrong group gives none."),
)
DIAGNOSTIC_BY_KEY = {d.key: d for d in DIAGNOSTICS}

#: said in place of the curves when none of an environment's cells kept diagnostics
NO_DIAGNOSTICS_SHIPPED = ("These records predate per-step diagnostics; re-run the grid (issue 42) or a grid of your "
                          "own to see them.")
NO_DIAGNOSTICS_YOURS = ("These cells' records predate per-step diagnostics (a cell run since issue 41 keeps them); "
                        "run the grid again into a new folder (`python -m lab.compare run {name} --dir NEW_FOLDER`) "
                        "to see them.")

DIAGNOSTIC_COLUMNS = ["step", "implementation", "key", "value", "seeds"]


def diagnostics_frame(diagnostics: dict, env: str) -> pd.DataFrame:
    """The drawn diagnostics (``DIAGNOSTICS``) of one environment as a tidy table: one row per (step,
    implementation, key) with the mean over seeds (``value``) and how many seeds it averages, from
    ``summary.diagnostics`` (``lab.compare.results.GridResults.diagnostics``). Empty (with the columns) when
    no cell of ``env`` kept diagnostics."""
    rows = [{"step": p["step"], "implementation": impl, "key": key, "value": p["value"], "seeds": p["seeds"]}
            for impl, kept in diagnostics.get(env, {}).items() for key, points in kept["series"].items()
            if key in DIAGNOSTIC_BY_KEY for p in points]
    return pd.DataFrame(rows, columns=DIAGNOSTIC_COLUMNS)


def diagnostic_choices(frame: pd.DataFrame) -> list[Diagnostic]:
    """The diagnostics with at least one point in ``frame``, in ``DIAGNOSTICS`` order (what the page offers)."""
    present = set(frame["key"])
    return [d for d in DIAGNOSTICS if d.key in present]


def diagnostic_chart(frame: pd.DataFrame, key: str) -> dict:
    """Vega-Lite: one diagnostic of one environment per step, one line per implementation (the mean over its
    seeds; the tooltip says how many)."""
    picked = frame[frame["key"] == key].sort_values(["implementation", "step"])
    rows = [{"step": int(r.step), "implementation": r.implementation, "value": float(r.value), "seeds": int(r.seeds)}
            for r in picked.itertuples()]
    chart = line_chart(rows, "step", "value", "implementation", "step", DIAGNOSTIC_BY_KEY[key].label)
    chart["encoding"]["tooltip"].append({"field": "seeds"})
    return chart


def diagnostics_notes(grid, diagnostics: dict, env: str, key: str | None = None) -> list[str]:
    """What limits an environment's diagnostic curves, as Markdown lines: that no record has them (then nothing
    is drawn), which implementations' records lack them, and, for the diagnostic ``key``, which implementations
    have no curve of it (an algorithm that does not compute it, or a run without a reference for KL)."""
    cells = [c for c in grid.cells if c["env"] == env]
    impls = sorted({c["implementation"] for c in cells})
    kept = diagnostics.get(env, {})
    if not any(k in DIAGNOSTIC_BY_KEY for i in kept.values() for k in i["series"]):
        return [NO_DIAGNOSTICS_SHIPPED if grid.shipped
                else NO_DIAGNOSTICS_YOURS.format(name=md_escape(str(grid.spec.get("name", "GRID"))))]
    notes = []
    without = [i for i in impls if i not in kept]
    if without:
        notes.append(f"No diagnostics in the records of {md_escape(', '.join(without))} (run before they were kept).")
    warmup = sorted({(c["implementation"], int(((c.get("config") or {}).get("algo_config") or {})
                                                 .get("critic_warmup_steps") or 0))
                     for c in cells if c.get("algo") == "ppo" and c["implementation"] in kept})
    for impl, steps in warmup:
        if steps:
            notes.append(f"{md_escape(impl)}: its first {steps} step{'' if steps == 1 else 's'} train only the "
                         "critic (the policy does not move), so its policy steps start after them.")
    if key is not None:
        absent = [i for i in sorted(kept) if key not in kept[i]["series"]]
        if absent:
            notes.append(f"No curve of {DIAGNOSTIC_BY_KEY[key].label} for {md_escape(', '.join(absent))}: "
                         "its algorithm does not compute it, or (KL) its run has no reference model.")
    return notes

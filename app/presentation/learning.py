"""What the Lab and a node page show of an environment's measured learning preset (issue 59), without Streamlit:
the measured band (mean and spread over seeds of the training reward per step, for the RL arm and the
no-update control) and time, whether a live run's curve so far lies within that band, and the node page's
measured curve as a Vega-Lite spec. Everything is read from the preset's ``measured`` block
(``lab.recipes.measured``), which ``benchmarks/learn_presets.py ship`` fills from the benchmark's records.

    band = measured_band("memory")                     # None until the preset is measured
    band_check(run.metrics(), band)["text"]            # "Within the measured band: ..." during a run
    st.vega_lite_chart(measured_curve_spec("memory"))  # the node page's curve
"""
from __future__ import annotations

from lab import recipes

ARM_LABELS = {"rl": "RL (learning preset)", "control": "control (no update)"}


def band_of(rewards_by_seed: list[list[float]]) -> list[dict]:
    """Per step: the mean over seeds of the training reward and its spread, the lowest and highest seed
    (``{"step", "mean", "low", "high", "seeds"}``; steps run from 1). Seeds of unequal length are read up to
    the shortest; a reward that is None (a step without one) is left out of that step."""
    if not rewards_by_seed:
        return []
    steps = min(len(r) for r in rewards_by_seed)
    rows = []
    for i in range(steps):
        values = [float(r[i]) for r in rewards_by_seed if r[i] is not None]
        if values:
            rows.append({"step": i + 1, "mean": sum(values) / len(values), "low": min(values), "high": max(values),
                         "seeds": len(values)})
    return rows


def measured_band(env: str, measured: dict | None = None) -> dict | None:
    """The measured band of ``env``'s learning preset: ``{"env", "status", "seeds", "rl", "control",
    "wall_s_median", "time_text", "text"}`` (``rl``/``control``: ``band_of`` rows); None when the preset has not
    been measured by the benchmark (no per-seed rewards in its block). ``measured``: the block (default: the
    shipped one)."""
    block = recipes.measured(env) if measured is None else measured
    rewards = block.get("rewards") or {}
    if not rewards.get("rl"):
        return None
    return {"env": env, "status": block.get("status"), "seeds": len(rewards["rl"]),
            "rl": band_of(rewards["rl"]), "control": band_of(rewards.get("control") or []),
            "wall_s_median": block.get("wall_s_median"), "time_text": measured_time(block),
            "text": recipes.measured_sentence(env) if measured is None else ""}


def measured_time(block: dict) -> str:
    """The measured time of a preset's run, as the Lab says it before launch."""
    wall = block.get("wall_s_median")
    if not isinstance(wall, (int, float)):
        return "Not timed yet."
    load = block.get("load_1min_max")
    where = f" on {block['cpu']}" if block.get("cpu") else ""
    at_load = f", 1-minute load at most {load:.1f}" if isinstance(load, (int, float)) else ""
    return (f"Measured: median {wall / 60:.1f} min per run over {block.get('seeds')} seeds{where}{at_load} "
            f"(warm start and training; a first SmolLM2 run also converts the model).")


def band_check(live_rewards: list[float], band: dict | None) -> dict:
    """Whether a live run's training reward so far lies within the measured band of the RL arm: over the
    steps both have, the live mean against the mean of the band's lowest and highest seed at those steps.
    ``{"state": "within" | "above" | "below" | "no band" | "no steps", "steps", "inside", "text"}``;
    ``inside`` counts the steps whose own reward lies between that step's lowest and highest seed."""
    if band is None or not band.get("rl"):
        return {"state": "no band", "steps": 0, "inside": 0,
                "text": "No measured band for this preset yet: nothing to compare the run with."}
    rows = band["rl"]
    k = min(len(live_rewards), len(rows))
    if k == 0:
        return {"state": "no steps", "steps": 0, "inside": 0, "text": "No step finished yet."}
    live = [float(x) for x in live_rewards[:k]]
    inside = sum(rows[i]["low"] <= live[i] <= rows[i]["high"] for i in range(k))
    live_mean = sum(live) / k
    low = sum(r["low"] for r in rows[:k]) / k
    high = sum(r["high"] for r in rows[:k]) / k
    state = "within" if low <= live_mean <= high else ("above" if live_mean > high else "below")
    words = {"within": "Within the measured band", "above": "Above the measured band",
             "below": "Below the measured band"}[state]
    beyond = f" (the measurement has {len(rows)} steps; later steps are not compared)" if len(live_rewards) > k else ""
    text = (f"{words}: mean reward {live_mean:.2f} over the first {k} steps against the measured seeds' "
            f"{low:.2f}-{high:.2f}; {inside} of {k} steps inside their step's range{beyond}.")
    return {"state": state, "steps": k, "inside": inside, "text": text}


def curve_rows(band: dict) -> list[dict]:
    """The band's rows for a chart: one per (arm, step)."""
    return [{"arm": ARM_LABELS[arm], **row} for arm in ("rl", "control") for row in band.get(arm) or ()]


def measured_curve_spec(env: str, band: dict | None = None, live_rewards: list[float] | None = None) -> dict | None:
    """The node page's (and the Lab's) measured curve as a Vega-Lite spec: per arm the seeds' band (lowest to
    highest seed) and the mean, and ``live_rewards`` (a running run's curve) drawn over them. None when
    nothing is measured."""
    band = measured_band(env) if band is None else band
    if band is None:
        return None
    values = curve_rows(band)
    if live_rewards:
        values += [{"arm": "this run", "step": i + 1, "mean": float(r)} for i, r in enumerate(live_rewards)]
    color = {"field": "arm", "type": "nominal", "title": None,
             "scale": {"domain": [*ARM_LABELS.values(), *(["this run"] if live_rewards else [])],
                       "range": ["#2563eb", "#9ca3af", "#dc2626"][:2 + bool(live_rewards)]}}
    x = {"field": "step", "type": "quantitative", "title": "RL step", "axis": {"tickMinStep": 1}}
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": f"{env}: training reward per step, {band['seeds']} seeds (band: lowest to highest seed)",
        "data": {"values": values},
        "encoding": {"x": x, "color": color},
        "layer": [
            {"transform": [{"filter": "isValid(datum.low)"}], "mark": {"type": "area", "opacity": 0.2},
             "encoding": {"y": {"field": "low", "type": "quantitative", "title": "mean training reward"},
                          "y2": {"field": "high"}}},
            {"mark": {"type": "line", "point": True},
             "encoding": {"y": {"field": "mean", "type": "quantitative"}}},
        ],
    }


def settings_text(env: str) -> str:
    """The learning preset's settings on ``env`` in one line (what the node page shows beside the curve)."""
    from lab import catalog

    preset = recipes.env_presets("learn").get(env)
    if preset is None:
        return ""
    c = catalog.preset_config(catalog.get(preset["impl"]), "learn")
    options = ", ".join(f"{k} {v}" for k, v in sorted(c["env_options"].items())
                        if k in (recipes.load("learn").get("env", {}).get(env, {}).get("env_options") or {}))
    return (f"{preset['impl']}, {c['model']}: {c['sft_steps']} warm-start steps"
            f"{' on ' + c['sft_env'] if c.get('sft_env') else ''}, then {c['steps']} RL steps of "
            f"{c['prompts_per_step']} problems x {c['group_size']} samples, learning rate {c['lr']:g}, up to "
            f"{c['max_new_tokens_per_turn']} tokens a turn and {c['max_completion_tokens']} an episode"
            f"{'; ' + options if options else ''}.")


def memory_r1_rows(block: dict) -> list[dict]:
    """The Memory-R1 table of a measured memory preset: one row per manager (RL manager, its warm start, the
    add-only baseline) with its exact match and 95% interval, and the RL manager's difference against the
    other two with theirs; [] when the block has no table."""
    table = block.get("memory_r1") or {}
    rows = []
    for key, name, versus in (("rl", "RL manager", None), ("warm_start", "warm start (no RL)", "rl_vs_warm_start"),
                              ("add_only", "add-only baseline", "rl_vs_add_only")):
        if table.get(key):
            row = {"manager": name, "exact_match": table[key]["mean"], "low": table[key]["low"],
                   "high": table[key]["high"]}
            if versus and table.get(versus):
                d = table[versus]
                row["rl_minus_this"] = f"{d['difference']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"
            rows.append(row)
    return rows

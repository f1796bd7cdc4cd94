"""app.presentation.node_sections: what only some node pages show, as sections built without Streamlit (the
pages that render them are checked in test_node_proxies.py and test_app_pages.py)."""
from types import SimpleNamespace

import pytest

from app import routes
from app.presentation.node_sections import (PASSK_NODE, SECTIONS, NodeContext, Part, node_proxy_note, node_sections,
                                            passk_note)


def shown(catalog, node_id, grids=(), records=()):
    """The sections a node page shows, by name, with stand-in comparison grids and value-search records."""
    return dict(node_sections(NodeContext(catalog, node_id, load_grids=lambda: list(grids),
                                          load_value_searches=lambda _: list(records))))


def parts(blocks, kind):
    return [part for block in blocks for part in block.parts if part.kind == kind]


def test_sections_come_in_the_page_order():
    assert [s.name for s in SECTIONS] == ["implementations", "measured learning", "claims", "comparison", "value search",
                                          "not implemented", "proxy", "pass@k", "family"]


def test_a_node_with_an_implementation_shows_it_boxed_with_run_this(catalog):
    sections = shown(catalog, "alg-grpo")
    # no grid measured it here, so no comparison lines; its learning preset on the calculator is measured
    assert list(sections) == ["implementations", "measured learning"]
    first = sections["implementations"][0]
    assert first.boxed and first.parts[0].body.startswith("**Reference implementation:** ")
    assert [p.kind for p in first.parts].count("latex") == 1
    assert first.parts[-1] == Part("link", routes.lab(impl="calculator-grpo", preset="learn"), "Run this",
                                   ":material/play_arrow:")


def test_comparison_lines_name_the_grid_and_link_to_it(catalog):
    row = {"implementation": "calculator-grpo", "seeds": 2, "heldout": 0.5, "low": 0.4, "high": 0.6,
           "verdict": "better than the baseline"}
    summary = SimpleNamespace(progression={}, board={"calculator": [row]})
    grid = SimpleNamespace(spec={"name": "my_grid"}, key="yours:my_grid", cells=[{"implementation": "calculator-grpo"}],
                           summary=lambda: summary)
    [block] = shown(catalog, "alg-grpo", grids=[grid])["comparison"]
    [line] = parts([block], "caption")
    assert line.body == (r"In the comparison grid *my\_grid* (calculator, 2 seeds): held-out 50.0 % [40.0, 60.0]; "
                         "better than the baseline.")
    # the text names the grid, the link opens it by its key (a user's folder: ``yours:<folder>``)
    assert parts([block], "link")[0].body == routes.compare(grid="yours:my_grid") and not block.boxed


def test_a_value_search_record_is_a_box_with_its_table_and_verdicts(catalog):
    diff = {"difference": {"mean": 0.1, "low": -0.05, "high": 0.25}, "verdict": "no significant difference"}
    method = {"success": {"mean": 0.5, "low": 0.4, "high": 0.6}, "mean_calls": 20.0}
    record = {"env": "sokoban", "model": "warm/*sokoban*", "budgets": [
        {"budget": 16, "n": 2, "methods": {m: method for m in ("policy", "heuristic", "learned")},
         "learned_vs_heuristic": diff}]}
    [block] = shown(catalog, "planning-external-guide", records=[record])["value search"]
    assert block.boxed and [p.kind for p in block.parts] == ["markdown", "table", "caption"]
    assert r"warm/\*sokoban\*" in block.parts[0].body  # a record's text is shown literally
    assert len(block.parts[1].body) == 3


def test_a_node_without_an_implementation_shows_its_proxy_or_why_not(catalog):
    sections = shown(catalog, "vision-image")
    assert "implementations" not in sections
    note = node_proxy_note("vision-image")
    [block] = sections["proxy"]
    assert [(p.kind, p.icon) for p in block.parts] == [("note", ":material/pending:"), ("link", ":material/play_arrow:")]
    assert block.parts[1].body == note.link and block.parts[1].label == "Run the proxy"
    [block] = shown(catalog, "perception-audio")["proxy"]
    assert [p.kind for p in block.parts] == ["note"]  # no runnable proxy: nothing to link
    assert "proxy" not in shown(catalog, "perception")  # it runs itself


def test_only_the_mechanistic_debate_node_shows_the_pass_at_k_note(catalog):
    grids = [SimpleNamespace(spec={"name": "core"}, key="core", passk={}, cells=[])]
    [block] = shown(catalog, PASSK_NODE, grids=grids)["pass@k"]
    note = passk_note(grids)
    assert block.parts[0] == Part("note", f"**{note.heading}** {note.text}", icon=":material/query_stats:")
    assert block.parts[1] == Part("link", note.link, note.link_label, ":material/leaderboard:")
    assert "pass@k" not in shown(catalog, "alg-grpo")


def test_grids_are_loaded_once_and_only_for_a_section_that_reads_them(catalog):
    calls = []
    ctx = NodeContext(catalog, "introduction", load_grids=lambda: calls.append(1) or [], load_value_searches=lambda _: [])
    node_sections(ctx)
    assert calls == []  # no implementation, not the pass@k node
    ctx = NodeContext(catalog, PASSK_NODE, load_grids=lambda: calls.append(1) or [], load_value_searches=lambda _: [])
    node_sections(ctx)
    node_sections(ctx)
    assert calls == [1]


def test_a_part_is_one_of_the_kinds_the_page_shows():
    with pytest.raises(ValueError, match="unknown part kind"):
        Part("video", {})


MEASURED = {"status": "learns", "seeds": 3, "steps": 3, "wall_s_median": 240.0, "load_1min_max": 1.8, "cpu": "cpu x",
            "reward_last": 0.8, "control_last": 0.2, "diff": 0.6, "ci_low": 0.4, "ci_high": 0.8, "control_lr": 0.0,
            "heldout_before": {"mean": 0.3, "low": 0.2, "high": 0.4}, "heldout_after": {"mean": 0.5, "low": 0.4,
                                                                                          "high": 0.6},
            "rewards": {"rl": [[0.2, 0.5, 0.8], [0.3, 0.6, 0.9], [0.1, 0.4, 0.7]],
                        "control": [[0.2, 0.2, 0.2], [0.3, 0.3, 0.3], [0.1, 0.1, 0.1]]},
            "memory_r1": {"rl": {"mean": 0.55, "low": 0.45, "high": 0.65},
                          "warm_start": {"mean": 0.3, "low": 0.2, "high": 0.4},
                          "add_only": {"mean": 0.5, "low": 0.4, "high": 0.6},
                          "rl_vs_warm_start": {"difference": 0.25, "low": 0.1, "high": 0.4},
                          "rl_vs_add_only": {"difference": 0.05, "low": -0.05, "high": 0.15}}}


def test_a_measured_preset_shows_its_curve_figures_and_memory_table_on_the_node(catalog, monkeypatch):
    from lab import recipes

    real = recipes.measured
    monkeypatch.setattr(recipes, "measured", lambda env, name="learn": MEASURED if env == "memory" else real(env, name))
    blocks = shown(catalog, "memory")["measured learning"]
    assert len(blocks) == 1 and blocks[0].boxed
    (chart,) = [p.body for p in parts(blocks, "chart")]
    arms = {row["arm"] for row in chart["data"]["values"]}
    assert arms == {"RL (learning preset)", "control (no update)"}
    assert max(row["high"] for row in chart["data"]["values"]) == 0.9  # the seeds' band, not only the mean
    text = " ".join(p.body for p in parts(blocks, "markdown") + parts(blocks, "caption"))
    assert "memory-grpo" in text and "median 4.0 min" in text and "0.40" in text  # settings, time, interval
    (table,) = [p.body for p in parts(blocks, "table")]
    assert list(table["manager"]) == ["RL manager", "warm start (no RL)", "add-only baseline"]
    assert list(table["exact_match"]) == [0.55, 0.3, 0.5]


def test_an_environment_without_measured_rewards_shows_no_measured_learning(catalog):
    from lab import recipes

    assert recipes.measured("zoom")["status"] == recipes.NOT_MEASURED
    assert "measured learning" not in shown(catalog, "perception-tool-driven")


def test_the_shipped_memory_measurement_is_on_the_memory_node(catalog):
    from lab import recipes

    block = recipes.measured("memory")
    blocks = shown(catalog, "memory")["measured learning"]
    (chart,) = [p.body for p in parts(blocks, "chart")]
    rl = [row for row in chart["data"]["values"] if row["arm"] == "RL (learning preset)"]
    assert len(rl) == block["steps"] and rl[0]["seeds"] == block["seeds"]
    assert [p.body for p in parts(blocks, "table")][0]["exact_match"].tolist()[0] == block["memory_r1"]["rl"]["mean"]

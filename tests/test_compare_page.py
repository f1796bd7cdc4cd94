"""The Compare page under AppTest: empty state, and a grid folder's leaderboard, curves and pass@k."""
import json
import re

import pytest
import yaml

from test_app_pages import open_page, texts

from app.presentation.compare import NO_DIAGNOSTICS_YOURS, curves_chart, interval_chart, leaderboard_frame, passk_chart
from lab.compare import results
from lab.compare.board import leaderboard
from reference_impls.stats import pass_at_k_curve


def _write_grid(root, cells, passk=None):
    folder = root / "compare" / "demo"
    (folder / "cells").mkdir(parents=True)
    (folder / "grid.yaml").write_text(yaml.safe_dump({
        "name": "demo", "label": "Demo grid", "recipe": "quick", "seeds": [0, 1],
        "implementations": sorted({c["implementation"] for c in cells}), "options": {"steps": 3},
        "eval": {"n": 4, "seed": 1}}))
    for c in cells:
        (folder / "cells" / c["cell"]).mkdir()
        (folder / "cells" / c["cell"] / "result.json").write_text(json.dumps(c))
    (folder / "warm" / "calculator").mkdir(parents=True)  # a grid folder's warm start, measured alone
    (folder / "warm" / "calculator" / "done.json").write_text(json.dumps(
        {"sft_steps": 3, "heldout": 0.25, "heldout_interval": [0.0, 0.75], "heldout_by_problem": [1, 0, 0, 0]}))
    (folder / "base").mkdir()  # the untrained model, measured on the same problems
    (folder / "base" / "calculator.json").write_text(json.dumps(
        {"model": "tiny", "heldout": 0.0, "heldout_interval": [0.0, 0.0], "heldout_by_problem": [0, 0, 0, 0]}))
    if passk:
        (folder / "passk").mkdir()
        (folder / "passk" / "calculator.json").write_text(json.dumps(passk))
    return folder


def _cell(impl, algo, seed, heldout):
    return {"cell": f"{impl}-s{seed}", "implementation": impl, "algo": algo, "env": "calculator", "seed": seed,
            "heldout": sum(heldout) / len(heldout), "heldout_by_problem": heldout, "train_s": 60.0, "tokens": 1000,
            "peak_rss_mb": 700.0, "config": {"algo": algo, "seed": seed},
            "curve": [{"step": s, "reward_mean": 0.1 * s * (seed + 1)} for s in (1, 2, 3)]}


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(results, "RESULTS", tmp_path / "no-shipped-results")
    return tmp_path


def test_empty_state_says_how_to_run_a_grid(data):
    at = open_page("compare")
    assert "python -m lab.compare run" in texts(at)


def test_leaderboard_curves_and_passk(data):
    cells = [_cell("calculator-grpo", "grpo", s, [1, 0, 0, 0]) for s in (0, 1)]
    cells += [_cell("calculator-ppo", "ppo", s, [1, 1, 1, 0]) for s in (0, 1)]
    passk = {"env": "calculator", "samples": 4, "curves": {
        "base": {"pass_at_k": {"1": 0.1, "2": 0.2, "3": 0.25, "4": 0.3}},
        "RL": {"pass_at_k": {"1": 0.3, "2": 0.35, "3": 0.37, "4": 0.38}}}}
    _write_grid(data, cells, passk)
    grids = results.available_results()
    assert len(grids) == 1 and not grids[0].shipped
    board = grids[0].board()["calculator"]
    assert [r["implementation"] for r in board] == ["calculator-ppo", "calculator-grpo"]
    frame = leaderboard_frame(board)
    assert list(frame["held-out %"]) == [75.0, 25.0] and list(frame["vs baseline (pts)"]) == ["+50.0", "baseline"]
    # the variant is the implementation; the trainer column names the trainer, not a second "algorithm"
    assert list(frame["trainer"]) == ["ppo", "grpo"] and "algorithm" not in frame.columns
    assert {"k": 4, "model": "RL", "pass@k": 0.38} in passk_chart(passk)["data"]["values"]
    # the interval chart labels each row with its seed count (a one-seed bar leaves out seed-to-seed variation)
    one_seed = leaderboard(cells + [_cell("calculator-dapo", "grpo", 0, [1, 1, 0, 0])])["calculator"]
    chart = interval_chart(one_seed)
    assert [d["row"] for d in chart["data"]["values"]] == [
        "calculator-ppo (2 seeds)", "calculator-dapo (1 seed)", "calculator-grpo (2 seeds)"]
    assert chart["layer"][0]["encoding"]["y"]["sort"] == [d["row"] for d in chart["data"]["values"]]
    curves = grids[0].curves()
    assert {"env": "calculator", "implementation": "calculator-ppo", "step": 3, "reward_mean": pytest.approx(0.45),
            "seeds": 2} in curves
    drawn = curves_chart(curves, "calculator")["data"]["values"]
    assert {"step": 3, "implementation": "calculator-ppo", "reward": pytest.approx(0.45)} in drawn
    assert curves_chart(curves, "frozenlake") is None
    # a DPO cell's per-step number is its preference margin: never drawn as a reward curve
    dpo = results.GridResults("g", data, {}, [_cell("calculator-dpo", "dpo", 0, [1, 0, 0, 0])], {}, False)
    assert dpo.curves() == []

    at = open_page("compare", grid="demo")
    shown = texts(at)
    assert "Demo grid" in at.selectbox[0].format_func(at.selectbox[0].value)
    assert "calculator" in [h.value for h in at.header]
    table = at.table[1].value
    assert list(table.index) == ["calculator-ppo", "calculator-grpo"]
    assert "None" not in table.to_string() and "None" not in at.table[0].value.to_string()
    assert "recipe quick" in shown and "4 problems" in shown
    assert any("pass@k" in c.value for c in at.caption)
    # the untrained model and the warm start alone are the references each row is read against
    # (intervals exact over the 4 problems, as the leaderboard's one-run rows: Clopper-Pearson 0 of 4, 1 of 4)
    [line] = [c.value for c in at.caption if c.value == grids[0].reference_line("calculator")]
    assert re.findall(r"(\d+\.\d)% \(95% interval (\d+\.\d)-(\d+\.\d)%\)", line) == [("0.0", "0.0", "60.2"),
                                                                                ("25.0", "0.6", "80.6")]
    assert line.index("Untrained") < line.index("Warm start")
    # with the untrained model measured, the stages table pairs each stage with the one it starts from
    stages = at.table[0].value
    assert list(stages.index)[:2] == ["untrained", "SFT (warm start)"]
    assert list(stages["vs stage before (pts)"])[:2] == ["–", "+25.0"]
    # the interval chart carries the warm start as a reference line, and the page reads each row in the board's words
    [chart] = [c for c in at.get("vega_lite_chart") if "held-out success" in c.proto.spec]
    assert '"warm start 25%"' in chart.proto.spec
    [against] = [m.value.replace("\\", "") for m in at.markdown if m.value.startswith("**Against the baseline:**")]
    assert f"- calculator-ppo: {board[0]['verdict']}" in against.splitlines()
    # these records predate the per-step diagnostics: the section says so and draws no empty chart
    assert "Mechanisms, step by step" in [h.value for h in at.subheader]
    assert NO_DIAGNOSTICS_YOURS.format(name="demo") in [c.value for c in at.caption]
    assert not [c for c in at.get("vega_lite_chart") if "nats per token" in c.proto.spec]
    assert not [b for b in at.selectbox if b.label == "Diagnostic"]


def test_passk_paired_table_and_reading_under_the_curves(data):
    cells = [_cell("calculator-grpo", "grpo", 0, [1, 0, 0, 0])]
    passk = {"env": "calculator", "samples": 64, "curves": {
        "base": {"correct_counts": [0] * 40},
        "warm start": {"correct_counts": [8] * 20 + [1] * 20},
        "RL (calculator-grpo, seed 0)": {"correct_counts": [32] * 20 + [0] * 20}}}
    for c in passk["curves"].values():
        c["pass_at_k"] = {str(k): v for k, v in pass_at_k_curve(c["correct_counts"], 64).items()}
    _write_grid(data, cells, passk)
    at = open_page("compare", grid="demo")
    table = [d.value for d in at.table if "against" in d.value.columns][0]
    # a record without "method" is of the old method (its RL cell picked on the test problems): said in the table
    assert list(table["k"]) == [1, 64, 1, 64]
    assert list(table["verdict"])[2:] == ["better (old method)", "worse (old method)"]
    assert list(table["after %"])[2:] == ["25.0", "50.0"]
    assert any("Sharpened and narrowed" in m.value for m in at.markdown)


def test_passk_table_marks_only_old_method_rows():
    from app.presentation.compare import passk_comparison_frame
    from lab.compare.results import PASSK_LEGACY

    row = {"model": "RL", "against": "warm start", "k": 1, "before": 0.2, "value": 0.3, "verdict": "better",
           "difference": {"mean": 0.1, "low": 0.02, "high": 0.18}}
    frame = passk_comparison_frame([{**row, "method": PASSK_LEGACY}, {**row, "method": "named in advance"}])
    assert list(frame["verdict"]) == ["better (old method)", "better"]


def test_node_page_shows_its_algorithms_row(data):
    cells = [_cell("calculator-grpo", "grpo", s, [1, 0, 0, 0]) for s in (0, 1)]
    cells += [_cell("calculator-ppo", "ppo", s, [1, 1, 1, 0]) for s in (0, 1)]
    _write_grid(data, cells)
    at = open_page("taxonomy", node="alg-ppo")
    row = [c.value.replace("\\", "") for c in at.caption if "comparison grid" in c.value]  # unescaped
    assert row and "75.0 %" in row[0] and "(calculator, 2 seeds)" in row[0]
    [ppo] = [r for r in results.available_results()[0].board()["calculator"] if r["implementation"] == "calculator-ppo"]
    assert ppo["verdict"] and ppo["verdict"] in row[0]
    assert [e for e in at.get("page_link") if e.proto.label == "See the comparison"]


def test_node_page_of_a_base_grid_reads_rl_against_the_warm_start(data):
    """In a base / SFT / SFT + RL grid the node's line gives the stages and RL's verdict against SFT."""
    _write_grid(data, [_cell("calculator-grpo", "grpo", s, [1, 1, 0, 0]) for s in (0, 1)])
    at = open_page("taxonomy", node="alg-grpo")
    row = [c.value.replace("\\", "") for c in at.caption if "comparison grid" in c.value]  # unescaped
    assert row and re.findall(r"(untrained|SFT \(warm start\)|SFT \+ RL held-out) (\d+\.\d) %", row[0]) == [
        ("untrained", "0.0"), ("SFT (warm start)", "25.0"), ("SFT + RL held-out", "50.0")]
    [rl] = [r for r in results.available_results()[0].summary().progression["calculator"]
            if r["implementation"] == "calculator-grpo"]
    assert rl["verdict"] and rl["verdict"] in row[0]


def test_a_grid_summary_is_computed_once_per_content_and_stored_as_json(data, monkeypatch):
    """GridResults.summary(): the statistics once per (records, statistics' source), kept in the process and as a
    JSON file (no pickle) that a new process reads back; a changed record gives a new key, a corrupt file a recompute."""
    _write_grid(data, [_cell("calculator-grpo", "grpo", s, [1, 0, 0, 0]) for s in (0, 1)]
                + [_cell("calculator-ppo", "ppo", s, [1, 1, 1, 0]) for s in (0, 1)])
    [grid] = results.available_results()
    monkeypatch.setattr(results, "_summaries", {})  # this test's process memory starts empty, like a new server
    computed = []
    real = results.GridSummary.compute
    monkeypatch.setattr(results.GridSummary, "compute",
                        classmethod(lambda cls, g, key: computed.append(key) or real.__func__(cls, g, key)))
    first = grid.summary()
    assert computed == [first.key] and grid.summary() is first
    assert first.board == grid.board() and first.progression == grid.progression() and first.curves == grid.curves()
    stored = data / "compare-summaries" / f"{first.key}.json"
    assert json.loads(stored.read_text())["key"] == first.key
    results._summaries.clear()  # a new process: read back from the file, not computed
    assert results.available_results()[0].summary() == first and computed == [first.key]
    # a record that changes makes a new key (and a new computation)
    cell = data / "compare" / "demo" / "cells" / "calculator-ppo-s0" / "result.json"
    record = json.loads(cell.read_text())
    cell.write_text(json.dumps({**record, "heldout_by_problem": [0, 0, 0, 0], "heldout": 0.0}))
    changed = results.available_results()[0].summary()
    assert changed.key != first.key and computed == [first.key, changed.key]
    # a corrupt stored summary is recomputed, not trusted
    results._summaries.clear()
    (data / "compare-summaries" / f"{changed.key}.json").write_text("{not json")
    assert results.available_results()[0].summary() == changed and computed[-1] == changed.key


def test_compare_tables_charts_and_notes_for_each_grid_kind():
    """No row is compared with itself, no cell reads None, the warm start and the map-blind bar are lines on the
    chart, and the intro and notes are true for a multi-seed baseline grid and a one-seed base / SFT / RL grid."""
    from pathlib import Path

    from app.presentation.compare import env_notes, grid_intro, progression_frame, references
    from lab.compare.board import progression

    cells = [_cell("frozenlake-grpo", "grpo", s, [1, 1, 0, 0]) for s in (0, 1)]
    cells += [_cell("frozenlake-ppo", "ppo", 0, [1, 0, 0, 0])]
    for c in cells:
        c["env"] = "frozenlake"
    warm = {"frozenlake": {"heldout": 0.25, "heldout_by_problem": [1, 0, 0, 0]}}
    blind = {"frozenlake": {"best": {"<move>down right</move>": 0.5, "<move>left</move>": 0.0}, "maps": 4}}
    grid = results.GridResults("g", Path("g"), {"name": "g", "seeds": [0, 1], "eval": {"n": 4}}, cells, {}, False,
                               warm, {}, [], blind)
    summary = grid.summary()
    rows = summary.board["frozenlake"]
    frame = leaderboard_frame(rows)
    assert list(frame["vs baseline (pts)"]) == ["baseline", "-25.0"]
    assert "None" not in frame.to_string()
    assert [(r.label, r.value) for r in references(grid, "frozenlake")] == [("warm start 25%", 0.25),
                                                                            ("map-blind 50%", 0.5)]
    chart = interval_chart(rows, references(grid, "frozenlake"))
    rules = [layer for layer in chart["layer"] if layer.get("data")]
    assert [layer["data"]["values"][0]["x"] for layer in rules] == [25.0, 25.0, 50.0, 50.0]
    notes = env_notes(grid, summary, "frozenlake")
    assert any(n.startswith("**Against the baseline:**") and
               f"- frozenlake-ppo: {rows[1]['verdict']}" in n.replace("\\", "").splitlines() for n in notes)
    assert any(n.startswith("**One seed:** frozenlake-ppo") for n in notes)
    assert any("`<move>down right</move>`" in n and "50%" in n for n in notes)
    assert not any("pass@1" in n for n in notes)  # no pass@k record here
    assert "plain grpo row" in grid_intro(grid) and "over problems and seeds" in grid_intro(grid)
    assert "from the same warm-start checkpoint" in grid_intro(grid)
    # a grid with two warm seeds: a line per warm start, and the intro says each cell starts from its seed's
    two = results.GridResults("g", Path("g"), {"name": "g", "seeds": [0, 1], "warm_seeds": [0, 1], "eval": {"n": 4}},
                              cells, {}, False, {**warm, "frozenlake@w1": {"heldout": 0.5, "heldout_by_problem": [1, 1, 0, 0]}}, {}, [], blind)
    assert [(r.label, r.value) for r in references(two, "frozenlake")] == [
        ("warm start 25%", 0.25), ("warm start @w1 50%", 0.5), ("map-blind 50%", 0.5)]
    assert "2 warm starts" in grid_intro(two) and "seeds 0, 1" in grid_intro(two)
    assert "warm starts" not in grid_intro(grid)
    assert "Warm start @w1 alone (no RL): 50.0%" in two.reference_line("frozenlake")

    # a base / SFT / SFT + RL grid, one seed, one implementation per environment: nothing against itself
    one = [_cell("calculator-grpo", "grpo", 0, [1, 1, 0, 0])]
    base_grid = results.GridResults("b", Path("b"), {"name": "b", "base": True, "seeds": [0]}, one, {}, False,
                                    {"calculator": {"heldout": 0.25, "heldout_by_problem": [1, 0, 0, 0]}},
                                    {"calculator": {"heldout": 0.0, "heldout_by_problem": [0, 0, 0, 0]}})
    s = base_grid.summary()
    frame = leaderboard_frame(s.board["calculator"])
    assert "verdict" not in frame.columns and "vs baseline (pts)" not in frame.columns
    stages = progression_frame(progression(one, base_grid.base, base_grid.warm)["calculator"])
    assert list(stages["vs stage before (pts)"]) == ["–", "+25.0", "+25.0"] and "None" not in stages.to_string()
    intro = grid_intro(base_grid)
    assert "stage it starts from" in intro and "one seed" in intro and "and seeds" not in intro
    assert not any(n.startswith("**Against the baseline") for n in env_notes(base_grid, s, "calculator"))


def test_shipped_grids_carry_their_current_summary(tmp_path, monkeypatch):
    """Each shipped grid's summary.json matches its records and the statistics' source (else the explorer
    recomputes it on a fresh data folder): rewrite them with `python -m lab.compare.results`. A fresh data
    folder reads them without computing."""
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(results, "_summaries", {})
    monkeypatch.setattr(results.GridSummary, "compute", classmethod(lambda cls, g, key: pytest.fail(
        f"{g.folder / results.SHIPPED_SUMMARY} is stale or missing: run `python -m lab.compare.results`")))
    shipped = [g for g in results.available_results() if g.shipped]
    assert {g.spec["name"] for g in shipped} >= {"core", "envs-code-web", "envs-planning"}
    for grid in shipped:
        summary = grid.summary()
        assert summary.key == results.summary_key(grid)
        assert set(summary.board) == {c["env"] for c in grid.cells}
    # and what it holds is what the statistics compute (the smallest shipped grid, recomputed here)
    monkeypatch.undo()
    small = min(shipped, key=lambda g: len(g.cells))
    assert results.GridSummary.compute(small, "k").board == small.summary().board


# -- mechanism diagnostics, step by step (issue 41) ----------------------------------------------------------

def _diagnostic_cell(impl, algo, seed, entropy, **extra):
    """A cell whose record keeps per-step diagnostics as the cell stage writes them (training.diagnostic_rows)."""
    cell = _cell(impl, algo, seed, [1, 0, 0, 0])
    cell["diagnostics"] = [{"step": s, "phase": "policy", "entropy": e, "kl": None, **{k: v[i] for k, v in extra.items()}}
                           for i, (s, e) in enumerate(zip((1, 2, 3), entropy))]
    return cell


def _diagnostic_cells():
    return [
        # DAPO's entropy stays up; its wrong answers' length is there only where a step has a wrong answer
        _diagnostic_cell("calculator-dapo", "grpo", 0, [1.0, 0.9, 0.8], accuracy=[0.5, 1.0, 0.0],
                         len_incorrect=[30.0, 0.0, 40.0], len_correct=[10.0, 12.0, 0.0],
                         clip_frac_high=[0.0, 0.01, 0.02]),
        _diagnostic_cell("calculator-dapo", "grpo", 1, [0.8, 0.7, 0.6], accuracy=[0.25, 0.5, 0.5],
                         len_incorrect=[50.0, 60.0, 70.0], len_correct=[14.0, 16.0, 18.0],
                         clip_frac_high=[0.0, 0.03, 0.04]),
        _diagnostic_cell("calculator-grpo", "grpo", 0, [1.0, 0.5, 0.2]),
        # DPO: its reward_mean is the preference margin and its accuracy the pairs', not the environment's
        _diagnostic_cell("calculator-dpo", "dpo", 0, [0.9, 0.9, 0.9], reward_mean=[0.3, 0.6, 0.9],
                         accuracy=[0.5, 0.6, 0.7], pairs=[12, 12, 12]),
        _cell("calculator-ppo", "ppo", 0, [1, 1, 0, 0]),  # a record from before the diagnostics
    ]


def test_diagnostics_are_averaged_over_seeds_per_step_and_drawn_one_at_a_time():
    from pathlib import Path

    from app.presentation.compare import (DIAGNOSTICS, NO_DIAGNOSTICS_SHIPPED, diagnostic_chart, diagnostic_choices,
                                          diagnostics_frame, diagnostics_notes)

    grid = results.GridResults("g", Path("g"), {"name": "g", "seeds": [0, 1]}, _diagnostic_cells(), {}, False)
    kept = grid.diagnostics()["calculator"]
    assert set(kept) == {"calculator-dapo", "calculator-grpo", "calculator-dpo"}  # PPO's old record has none
    dapo = kept["calculator-dapo"]
    assert dapo["seeds"] == 2
    assert dapo["series"]["entropy"] == [{"step": 1, "value": pytest.approx(0.9), "seeds": 2},
                                         {"step": 2, "value": pytest.approx(0.8), "seeds": 2},
                                         {"step": 3, "value": pytest.approx(0.7), "seeds": 2}]
    # a step with no wrong (accuracy 1) or no correct episode (accuracy 0) has no length of that kind: not a 0
    assert dapo["series"]["len_incorrect"] == [{"step": 1, "value": 40.0, "seeds": 2}, {"step": 2, "value": 60.0,
                                               "seeds": 1}, {"step": 3, "value": 55.0, "seeds": 2}]
    assert dapo["series"]["len_correct"][2] == {"step": 3, "value": 18.0, "seeds": 1}
    assert "kl" not in dapo["series"]  # null without a reference: no curve rather than a line at 0
    assert "reward_mean" not in kept["calculator-dpo"]["series"] and "accuracy" not in kept["calculator-dpo"]["series"]
    assert [p["value"] for p in kept["calculator-dpo"]["series"]["pairs"]] == [12.0, 12.0, 12.0]
    # the summary carries them, and they survive its JSON file
    summary = grid.summary()
    assert summary.diagnostics == grid.diagnostics()
    assert results.GridSummary(**json.loads(json.dumps(results.asdict(summary)))) == summary

    frame = diagnostics_frame(summary.diagnostics, "calculator")
    assert list(frame.columns) == ["step", "implementation", "key", "value", "seeds"]
    assert frame[(frame["key"] == "entropy") & (frame["step"] == 3)].set_index("implementation")["value"].to_dict() \
        == {"calculator-dapo": pytest.approx(0.7), "calculator-grpo": pytest.approx(0.2),
            "calculator-dpo": pytest.approx(0.9)}
    assert set(frame["key"]) <= {d.key for d in DIAGNOSTICS}  # accuracy is in the records, not drawn
    assert [d.key for d in diagnostic_choices(frame)] == ["entropy", "clip_frac_high", "len_incorrect", "len_correct",
                                                          "pairs"]
    chart = diagnostic_chart(frame, "len_incorrect")
    assert chart["encoding"]["y"]["title"] == "mean length of wrong episodes (tokens)"
    assert chart["data"]["values"] == [{"step": 1, "implementation": "calculator-dapo", "value": 40.0, "seeds": 2},
                                       {"step": 2, "implementation": "calculator-dapo", "value": 60.0, "seeds": 1},
                                       {"step": 3, "implementation": "calculator-dapo", "value": 55.0, "seeds": 2}]
    assert {"field": "seeds"} in chart["encoding"]["tooltip"]
    # notes: the record without diagnostics, and the rows without a curve of the chosen diagnostic
    notes = diagnostics_notes(grid, summary.diagnostics, "calculator", "pairs")
    assert notes[0].startswith("No diagnostics") and re.findall(r"calculator-[a-z]+", notes[0]) == ["calculator-ppo"]
    assert "for calculator-dapo, calculator-grpo:" in notes[1]
    assert not any("critic" in n for n in notes)
    # an environment none of whose records keeps them: the note, and nothing to draw
    old = results.GridResults("o", Path("o"), {"name": "o"}, [_cell("calculator-grpo", "grpo", 0, [1, 0, 0, 0])], {},
                              True)
    assert old.diagnostics() == {} and diagnostics_frame(old.diagnostics(), "calculator").empty
    assert diagnostics_notes(old, old.diagnostics(), "calculator") == [NO_DIAGNOSTICS_SHIPPED]
    yours = results.GridResults("y", Path("y"), {"name": "mine"}, old.cells, {}, False)
    assert "python -m lab.compare run mine --dir" in diagnostics_notes(yours, {}, "calculator")[0]


def test_ppo_warm_up_steps_are_named_under_its_curves():
    from pathlib import Path

    from app.presentation.compare import diagnostics_notes

    ppo = _diagnostic_cell("calculator-ppo", "ppo", 0, [1.0, 1.0, 0.9])
    ppo["config"]["algo_config"] = {"critic_warmup_steps": 2}
    grid = results.GridResults("g", Path("g"), {"name": "g"}, [ppo], {}, False)
    [note] = diagnostics_notes(grid, grid.diagnostics(), "calculator")
    assert note.startswith("calculator-ppo: ") and "first 2 steps" in note and "critic" in note
    ppo["config"]["algo_config"] = {"critic_warmup_steps": 0}
    assert diagnostics_notes(grid, grid.diagnostics(), "calculator") == []


def test_compare_page_draws_the_mechanisms_section(data):
    from app.presentation.compare import diagnostics_notes

    _write_grid(data, _diagnostic_cells())
    at = open_page("compare", grid="demo")
    assert "Mechanisms, step by step" in [h.value for h in at.subheader]
    picker = at.selectbox(key="diagnostic-calculator")
    assert picker.format_func(picker.value) == "policy entropy (nats per token)"
    [chart] = [c for c in at.get("vega_lite_chart") if "policy entropy" in c.proto.spec]
    drawn = chart.proto.SerializeToString()  # the rows travel as Arrow data beside the spec
    assert b"calculator-dapo" in drawn and b"calculator-grpo" in drawn
    assert any("clip-higher" in c.value for c in at.caption)
    demo = results.available_results()[0]
    assert diagnostics_notes(demo, demo.diagnostics(), "calculator")[0] in [c.value for c in at.caption]
    picker.set_value(2).run()  # the wrong episodes' length, Dr.GRPO's mechanism
    assert not at.exception
    assert any("wrong episodes" in c.proto.spec for c in at.get("vega_lite_chart"))
    assert any("Dr.GRPO" in c.value for c in at.caption)


def test_compare_notes_link_the_files_they_name():
    """A Compare note that names a benchmark script (the map-blind bar's) links it to the app's source page."""
    from app.presentation.compare import env_notes
    from app.presentation.docs import link_doc_paths

    grid = next(g for g in results.available_results() if g.key == "core-first")
    notes = [link_doc_paths(n) for n in env_notes(grid, grid.summary(), "frozenlake")]
    assert any("](source?path=benchmarks%2Ffrozenlake_open_loop.py)" in n for n in notes)
    at = open_page("compare", grid="core-first", env="frozenlake")
    shown = "\n".join(str(e.value) for e in at.markdown)
    assert "](source?path=benchmarks%2Ffrozenlake_open_loop.py)" in shown


def test_a_grid_of_several_environments_draws_one_tab_at_a_time():
    """The shipped core grid: a tab per environment, only the open one drawn; ``env=`` in the URL opens that tab,
    and a value that names no environment opens the first (and leaves the URL)."""
    def drawn(at) -> list[str]:
        return [c.proto.spec for c in at.get("vega_lite_chart")]

    first = open_page("compare", grid="core-first")
    assert [t.label for t in first.tabs] == ["calculator", "frozenlake", "search"]
    assert first.selectbox(key="cell-calculator") and "cell-frozenlake" not in first.session_state
    assert len(drawn(first)) == 3  # the interval chart, the training curves and pass@k of the open tab alone
    assert not any("Map-blind bar" in str(m.value) for m in first.markdown)

    linked = open_page("compare", grid="core-first", env="frozenlake")
    assert linked.selectbox(key="cell-frozenlake") and "cell-calculator" not in linked.session_state
    assert any("Map-blind bar" in str(m.value) for m in linked.markdown)
    assert linked.query_params.get("env") in ("frozenlake", ["frozenlake"])

    unknown = open_page("compare", grid="core-first", env="nowhere")
    assert unknown.selectbox(key="cell-calculator")
    assert "env" not in unknown.query_params


def test_choosing_another_grid_writes_it_into_the_url():
    """A link or a reload reopens the grid shown: choosing a grid sets ``grid=``, and its tabs are drawn."""
    at = open_page("compare", grid="core-first", env="frozenlake")
    names = [g.spec.get("name") for g in results.available_results()]
    other = next(i for i, name in enumerate(names) if name == "envs-planning")
    at.selectbox(key="compare-grid").set_value(other).run()
    assert not at.exception
    assert at.query_params.get("grid") in ("envs-planning", ["envs-planning"])
    assert [t.label for t in at.tabs][:2] == ["frozenlake", "household"]
    again = open_page("compare", grid="envs-planning")
    assert again.selectbox(key="compare-grid").value == other


def test_family_table_shows_each_family_with_its_difference_from_the_warm_start():
    """Per problem family: held-out % over seeds and the family's problems, and in parentheses the paired difference
    from the warm start (hand-computed: warm start a = [1, 0], b = [0, 0])."""
    from app.presentation.compare import family_frame

    cells = [_cell("calculator-grpo", "grpo", 0, [1, 1, 0, 0]), _cell("calculator-grpo", "grpo", 1, [1, 0, 0, 0]),
             _cell("calculator-ppo", "ppo", 0, [1, 1, 1, 0]), _cell("calculator-ppo", "ppo", 1, [1, 1, 1, 1])]
    warm = {"calculator": {"heldout": 0.25, "heldout_by_problem": [1, 0, 0, 0]}}
    board = leaderboard(cells, warm=warm, families={"calculator": ["a", "a", "b", "b"]})["calculator"]
    frame = family_frame(board)
    assert list(frame.columns) == ["a (2)", "b (2)"]
    assert frame.to_dict("index") == {"calculator-ppo": {"a (2)": "100 (+50)", "b (2)": "75 (+75)"},
                                      "calculator-grpo": {"a (2)": "75 (+25)", "b (2)": "0 (+0)"}}
    # without families (or too few problems per family) there is no table, and no row reads None
    assert family_frame(leaderboard(cells, warm=warm)["calculator"]) is None
    alone = family_frame(leaderboard(cells, families={"calculator": ["a", "a", "b", "b"]})["calculator"])
    assert alone.loc["calculator-grpo"].tolist() == ["75", "0"] and "None" not in alone.to_string()


def test_compare_page_draws_the_family_table_of_the_shipped_calculator():
    at = open_page("compare", grid="core-first", env="calculator")
    tables = [t.value for t in at.table]
    [families] = [t for t in tables if any(col.startswith("add (") for col in t.columns)]
    assert list(families.index) == list(tables[0].index)  # the leaderboard's rows, in its order
    assert any("per problem family" in c.value for c in at.caption)


def test_budget_table_says_what_each_cell_spent():
    from app.presentation.compare import budget_frame

    def spent(impl, algo, seed, updates, critic=0, complete=True):
        c = _cell(impl, algo, seed, [1, 0, 0, 0])
        c.update(complete=complete, incomplete_reason=None if complete else "stopped by the wall-time cap",
                 budget={"policy_steps": 8, "policy_steps_done": 8 if complete else 5, "policy_updates": updates,
                         "episodes": 256, "critic_updates": critic})
        return c

    cells = [spent("calculator-dapo", "grpo", 1, 80), spent("calculator-dapo", "grpo", 0, 128),
             spent("calculator-ppo", "ppo", 0, 32, critic=40, complete=False)]
    frame = budget_frame(cells)
    assert list(frame["cell"]) == ["calculator-dapo-s0", "calculator-dapo-s1", "calculator-ppo-s0"]
    assert list(frame["RL steps"]) == ["8/8", "8/8", "5/8"] and list(frame["policy updates"]) == [128, 80, 32]
    assert list(frame["critic updates"]) == [0, 0, 40]
    assert list(frame["complete"]) == ["yes", "yes", "no: stopped by the wall-time cap"]
    assert list(frame["train min"]) == [1.0, 1.0, 1.0] and "None" not in frame.to_string()
    # no critic, no critic column; records from before the budget record: no table
    assert "critic updates" not in budget_frame(cells[:2]).columns
    assert budget_frame([_cell("calculator-grpo", "grpo", 0, [1, 0, 0, 0])]) is None


def test_compare_page_lists_each_cells_budget(data):
    cells = [_cell("calculator-grpo", "grpo", s, [1, 0, 0, 0]) for s in (0, 1)]
    for c in cells:
        c["budget"] = {"policy_steps": 3, "policy_steps_done": 3, "policy_updates": 6, "episodes": 96}
    _write_grid(data, cells)
    at = open_page("compare", grid="demo")
    assert "Budget spent, per cell" in [e.label for e in at.expander]
    [spent] = [t.value for t in at.table if "policy updates" in t.value.columns]
    assert list(spent.index) == ["calculator-grpo-s0", "calculator-grpo-s1"] and list(spent["RL steps"]) == ["3/3"] * 2


def _choice(impl, chosen, trials, seed=0):
    """A cell record's ``validation``: the learning-rate choice it trained with (trial.choose_lr's record)."""
    return {"implementation": impl, "lr": chosen, "seed": seed, "split": {"n": 100, "seed": 5151},
            "trials": [{"lr": lr, "validation": v, "complete": done, "validation_by_problem": []}
                       for lr, v, done in trials]}


def test_learning_rates_chosen_on_validation_by_hand():
    from app.presentation.compare import lr_frame
    from lab.compare.report import lr_choices, lr_choices_text

    grpo = [_cell("calculator-grpo", "grpo", s, [1, 0, 0, 0]) for s in (0, 1)]
    ppo = [_cell("calculator-ppo", "ppo", 0, [1, 1, 0, 0])]
    for c in grpo:
        c.update(validation=_choice("calculator-grpo", 1e-5, [(1e-5, 0.59, True), (3e-5, 0.38, True),
                                                                (1e-4, 0.07, True)]), budget={"mu": 2})
    ppo[0].update(validation=_choice("calculator-ppo", 3e-5, [(1e-5, 0.43, True), (3e-5, 0.49, True),
                                                             (1e-4, 0.9, False)]), budget={"mu": 4})
    rows = lr_choices(grpo + ppo + [_cell("calculator-rloo", "rloo", 0, [0, 0, 0, 0])])  # rloo: no choice
    assert [r["implementation"] for r in rows] == ["calculator-grpo", "calculator-ppo"]  # one row each
    assert [(r["mu"], r["chosen"], r["edge"]) for r in rows] == [(2, 1e-5, "smallest"), (4, 3e-5, "")]
    assert rows[1]["trials"][2] == {"lr": 1e-4, "validation": 0.9, "complete": False}
    text = lr_choices_text(rows)
    assert "(100 problems, seed 5151;" in text
    [grpo_line] = [line for line in text.splitlines() if line.startswith("- calculator-grpo ")]
    tried, chosen = grpo_line.split(" -> ")
    assert "(mu 2)" in tried and re.findall(r"(\S+): (\d\.\d{3})", tried) == [
        ("1e-05", "0.590"), ("3e-05", "0.380"), ("0.0001", "0.070")]
    assert chosen.split()[0] == "1e-05" and "smallest" in chosen
    assert "0.0001: 0.900 (stopped) -> 3e-05\n" in text  # a stopped trial is not chosen, however high
    frame = lr_frame(rows)
    assert list(frame.columns) == ["mu", "validation success per rate", "chosen", "at the sweep's edge"]
    assert frame.drop(columns="validation success per rate").to_dict("index") == {
        "calculator-grpo": {"mu": 2, "chosen": "1e-05", "at the sweep's edge": "smallest"},
        "calculator-ppo": {"mu": 4, "chosen": "3e-05", "at the sweep's edge": "no"}}
    assert [v.split("; ") for v in frame["validation success per rate"]] == [
        ["1e-05: 59%", "3e-05: 38%", "0.0001: 7%"], ["1e-05: 43%", "3e-05: 49%", "0.0001: 90% (stopped)"]]
    assert lr_frame([]) is None and lr_choices_text([]) == ""


def test_compare_page_shows_the_learning_rate_choice(data):
    cells = [_cell("calculator-grpo", "grpo", s, [1, 0, 0, 0]) for s in (0, 1)]
    for c in cells:
        c["validation"] = _choice("calculator-grpo", 3e-5, [(1e-5, 0.2, True), (3e-5, 0.4, True), (1e-4, 0.1, True)])
    _write_grid(data, cells)
    at = open_page("compare", grid="demo")
    assert "Learning rates, chosen on validation" in [e.label for e in at.expander]
    [rates] = [t.value for t in at.table if "chosen" in t.value.columns]
    assert rates.loc["calculator-grpo"].tolist() == ["–", "1e-05: 20%; 3e-05: 40%; 0.0001: 10%", "3e-05", "no"]
    assert any("100 validation problems (seed 5151)" in c.value for c in at.caption)


def test_a_reproduced_grid_of_a_shipped_name_has_its_own_link(tmp_path, monkeypatch):
    """A user who reproduces a shipped grid into a folder of the shipped folder's name (``lab.compare run core``
    makes ``compare/core``): a link names each grid by its key (``<folder>``, ``yours:<folder>``), choosing the
    user's writes that key, and a link reopens it."""
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    name = "core-first"  # a shipped folder
    mine_dir = tmp_path / "compare" / name
    (mine_dir / "cells" / "calculator-grpo-s0").mkdir(parents=True)
    (mine_dir / "grid.yaml").write_text((results.RESULTS / name / "grid.yaml").read_text())
    cell = _cell("calculator-grpo", "grpo", 0, [1, 0, 0, 0])
    (mine_dir / "cells" / "calculator-grpo-s0" / "result.json").write_text(json.dumps(cell))
    grids = results.available_results()
    keys = [g.key for g in grids]
    assert name in keys and f"yours:{name}" in keys and len(set(keys)) == len(keys)
    mine = keys.index(f"yours:{name}")
    at = open_page("compare", grid=name)
    assert at.selectbox(key="compare-grid").value == keys.index(name)  # the shipped grid keeps its plain link
    at.selectbox(key="compare-grid").set_value(mine).run()
    assert not at.exception and at.query_params.get("grid") in (f"yours:{name}", [f"yours:{name}"])
    assert open_page("compare", grid=f"yours:{name}").selectbox(key="compare-grid").value == mine


def test_a_grid_not_finished_says_how_far_it_has_run(data):
    from pathlib import Path

    from app.presentation.compare import progress_note

    cells = [_cell("calculator-grpo", "grpo", s, [1, 0, 0, 0]) for s in (0, 1)] + [
        _cell("calculator-ppo", "ppo", 0, [1, 1, 0, 0])]
    spec = {"name": "g", "seeds": [0, 1], "implementations": ["calculator-grpo", "calculator-ppo", "frozenlake-grpo"]}
    note = progress_note(results.GridResults("g", Path("g"), spec, cells, {}, False))
    assert note.startswith("**Not finished:**") and re.findall(r"\d+", note.split(";")[0]) == ["3", "6", "3", "2"]
    assert note.endswith("No cell yet: frozenlake-grpo.")
    whole = {**spec, "implementations": ["calculator-grpo"], "seeds": [0, 1]}
    assert progress_note(results.GridResults("g", Path("g"), whole, cells, {}, False)) is None
    # on the page: the demo grid plans 2 implementations x 2 seeds and has 3 cells
    _write_grid(data, cells)
    at = open_page("compare", grid="demo")
    shown = progress_note(results.available_results()[0])
    assert re.findall(r"\d+", shown.split(";")[0]) == ["3", "4", "2", "2"] and shown in [i.value for i in at.info]


def test_every_shipped_grid_is_finished():
    """The shipped grids are whole: the page shows no "Not finished" note for any of them."""
    from app.presentation.compare import progress_note

    assert [g.key for g in results.available_results() if g.shipped and progress_note(g)] == []

"""The Compare page under AppTest: empty state, and a grid folder's leaderboard, curves and pass@k."""
import json

import pytest
import yaml

from test_app_pages import open_page, texts

from app.presentation.compare import interval_chart, leaderboard_frame, passk_frame
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
    assert list(frame["held-out %"]) == [75.0, 25.0] and frame["vs baseline (pts)"].iloc[0] == 50.0
    # the variant is the implementation; the trainer column names the trainer, not a second "algorithm"
    assert list(frame["trainer"]) == ["ppo", "grpo"] and "algorithm" not in frame.columns
    assert passk_frame(passk).loc[4, "RL"] == 0.38
    # the interval chart labels each row with its seed count (a one-seed bar leaves out seed-to-seed variation)
    one_seed = leaderboard(cells + [_cell("calculator-dapo", "grpo", 0, [1, 1, 0, 0])])["calculator"]
    chart = interval_chart(one_seed)
    assert [d["row"] for d in chart["data"]["values"]] == [
        "calculator-ppo (2 seeds)", "calculator-dapo (1 seed)", "calculator-grpo (2 seeds)"]
    assert chart["layer"][0]["encoding"]["y"]["sort"] == [d["row"] for d in chart["data"]["values"]]
    curves = grids[0].curves()
    assert {"env": "calculator", "implementation": "calculator-ppo", "step": 3, "reward_mean": pytest.approx(0.45),
            "seeds": 2} in curves
    # a DPO cell's per-step number is its preference margin: never drawn as a reward curve
    dpo = results.GridResults("g", data, {}, [_cell("calculator-dpo", "dpo", 0, [1, 0, 0, 0])], {}, False)
    assert dpo.curves() == []

    at = open_page("compare", grid="demo")
    shown = texts(at)
    assert "Demo grid" in at.selectbox[0].format_func(at.selectbox[0].value)
    assert "calculator" in [h.value for h in at.header]
    table = at.dataframe[1].value
    assert list(table["implementation"]) == ["calculator-ppo", "calculator-grpo"]
    assert "recipe quick" in shown and "4 problems" in shown
    assert any("pass@k" in c.value for c in at.caption)
    # the untrained model and the warm start alone are the references each row is read against
    # (intervals exact over the 4 problems, as the leaderboard's one-run rows: Clopper-Pearson 0 of 4, 1 of 4)
    assert ("Same held-out problems. Untrained model: 0.0% (95% interval 0.0-60.2%); "
            "Warm start alone (no RL): 25.0% (95% interval 0.6-80.6%)") in [c.value for c in at.caption]
    # with the untrained model measured, the stages table pairs each stage with the one it starts from
    stages = at.dataframe[0].value
    assert list(stages["stage"])[:2] == ["untrained", "SFT (warm start)"]
    assert list(stages["vs stage before (pts)"])[1] == 25.0


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
    table = [d.value for d in at.dataframe if "against" in d.value.columns][0]
    assert list(table["k"]) == [1, 64, 1, 64] and list(table["verdict"])[2:] == ["better", "worse"]
    assert list(table["after %"])[2:] == [25.0, 50.0]
    assert any("Sharpened and narrowed" in m.value for m in at.markdown)


def test_node_page_shows_its_algorithms_row(data):
    cells = [_cell("calculator-grpo", "grpo", s, [1, 0, 0, 0]) for s in (0, 1)]
    cells += [_cell("calculator-ppo", "ppo", s, [1, 1, 1, 0]) for s in (0, 1)]
    _write_grid(data, cells)
    at = open_page("taxonomy", node="alg-ppo")
    row = [c.value.replace("\\", "") for c in at.caption if "comparison grid" in c.value]  # unescaped
    assert row and "75.0 %" in row[0] and "(calculator, 2 seeds)" in row[0]
    assert "better than calculator-grpo" in row[0] or "no difference detected from calculator-grpo" in row[0]
    assert [e for e in at.get("page_link") if e.proto.label == "See the comparison"]


def test_node_page_of_a_base_grid_reads_rl_against_the_warm_start(data):
    """In a base / SFT / SFT + RL grid the node's line gives the stages and RL's verdict against SFT."""
    _write_grid(data, [_cell("calculator-grpo", "grpo", s, [1, 1, 0, 0]) for s in (0, 1)])
    at = open_page("taxonomy", node="alg-grpo")
    row = [c.value.replace("\\", "") for c in at.caption if "comparison grid" in c.value]  # unescaped
    assert row and "untrained 0.0 %; SFT (warm start) 25.0 %; SFT + RL held-out 50.0 %" in row[0]
    assert "than SFT (warm start)" in row[0] or "no difference detected from SFT (warm start)" in row[0]

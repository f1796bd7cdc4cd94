"""How a grid's comparisons are read (issue 60): comparisons over shared warm starts are worded as conditional on
them wherever they are printed, each warm start's effect is shown on its own, a sentence that rules a difference
out names the interval it rests on (one at a time, or Bonferroni over its kind), and pass@k's reading gives the
seed-level direction and where RL's greedy answers come from. Synthetic grids check each rule against hand-built
rows; the shipped re-run (results/core) checks the figures the docs quote."""
import json
from pathlib import Path

import pytest

from app.presentation.compare import leaderboard_frame, progression_frame, warm_start_effects_frame
from lab.compare.board import WARM, grid_tests, leaderboard, passk_comparison, progression, sampled_support
from lab.compare.cli import main
from lab.compare.report import passk_reading, report_text, warm_start_effects
from lab.compare.results import RESULTS, load_results
from reference_impls.stats import ALPHA, compare, conditional_clause, holm

CLAUSE = "conditional on these"
ROOT = Path(__file__).resolve().parents[1]


def _cell(impl, algo, seed, heldout, warm_start):
    return {"cell": f"{impl}-s{seed}", "implementation": impl, "algo": algo, "env": "calculator", "seed": seed,
            "warm_start": warm_start, "heldout": sum(heldout) / len(heldout), "heldout_by_problem": heldout,
            "train_s": 1.0, "tokens": 1, "peak_rss_mb": 1.0, "config": {}}


def _grid(seeds: int, warm_of):
    """grpo and ppo over ``seeds`` seeds on 40 problems; ``warm_of(seed)`` names the seed's warm start (two
    warm starts, w0 strong and w1 weak); ppo loses from the strong one and gains from the weak one."""
    names = {warm_of(s) for s in range(seeds)}
    warm = {name: {"seed": i, "heldout_by_problem": [1 if (j + i) % (2 + i) == 0 else 0 for j in range(40)]}
            for i, name in enumerate(sorted(names))}
    cells = []
    for s in range(seeds):
        name = warm_of(s)
        row = warm[name]["heldout_by_problem"]
        jitter = [1 if (j * 7 + s) % 11 == 0 else 0 for j in range(40)]
        grpo = [max(x, y) for x, y in zip(row, jitter)]
        strong = name == sorted(names)[0]
        ppo = [0 if (strong and j < 12) else (1 if j < 16 and not strong else x) for j, x in enumerate(grpo)]
        cells += [_cell("calculator-grpo", "grpo", s, grpo, name), _cell("calculator-ppo", "ppo", s, ppo, name)]
    return cells, warm


def test_shared_warm_starts_make_every_comparison_conditional_and_own_warm_starts_do_not():
    shared_cells, shared_warm = _grid(6, lambda s: "calculator" if s % 2 == 0 else "calculator@w1")
    tests = grid_tests(shared_cells, "grpo", shared_warm)
    for key in [("calculator", "calculator-ppo", "calculator-grpo"), ("calculator", "calculator-ppo", WARM),
                ("calculator", "calculator-grpo", WARM)]:
        assert tests[key]["warm_starts"] == 2
        assert tests[key]["verdict"].endswith(f"; {conditional_clause(2)})")
    own_cells, own_warm = _grid(4, lambda s: "calculator" if s == 0 else f"calculator@w{s}")
    for test in grid_tests(own_cells, "grpo", own_warm).values():
        assert test["warm_starts"] is None and CLAUSE not in test["verdict"]


def test_each_warm_starts_effect_is_its_own_seeds_against_its_row_with_holm_over_them():
    cells, warm = _grid(6, lambda s: "calculator" if s % 2 == 0 else "calculator@w1")
    tests = grid_tests(cells, "grpo", warm)
    ppo = tests[("calculator", "calculator-ppo", WARM)]["by_warm_start"]
    assert [e["warm_start"] for e in ppo] == ["calculator", "calculator@w1"]
    assert [e["label"] for e in ppo] == ["warm seed 0", "warm seed 1"]
    rows = {s: c["heldout_by_problem"] for c in cells if c["implementation"] == "calculator-ppo" for s in [c["seed"]]}
    by_hand = compare([rows[s] for s in (1, 3, 5)], [warm["calculator@w1"]["heldout_by_problem"]])
    assert ppo[1]["difference"] == pytest.approx(by_hand.difference) and ppo[1]["seeds"] == 3
    assert ppo[1]["low"] == pytest.approx(by_hand.low) and ppo[1]["p_raw"] == pytest.approx(by_hand.p_value)
    assert ppo[0]["difference"] < 0 < ppo[1]["difference"]  # opposite effects, which the pooled test averages
    every = [e for t in tests.values() for e in t.get("by_warm_start", [])]
    assert len(every) == 4 and all(e["tests"] == 4 for e in every)
    assert sorted(e["p_holm"] for e in every) == pytest.approx(sorted(holm([e["p_raw"] for e in every])))
    board = leaderboard(cells, "grpo", warm, tests=tests)["calculator"]
    assert [e["implementation"] for e in warm_start_effects(board)].count("calculator-ppo") == 2
    frame = warm_start_effects_frame(board)
    assert set(frame["warm start"]) == {"warm seed 0 (50.0%)", "warm seed 1 (32.5%)"}
    assert "Each warm start's effect" in report_text({"calculator": board})
    # one warm start between all seeds, or one each: nothing to split
    single, single_warm = _grid(3, lambda s: "calculator")
    assert not any("by_warm_start" in t for t in grid_tests(single, "grpo", single_warm).values())


def test_simultaneous_intervals_are_bonferroni_over_their_kind_and_named_in_the_sentence():
    cells, warm = _grid(6, lambda s: "calculator" if s % 2 == 0 else "calculator@w1")
    rows = {}
    for c in cells:
        rows.setdefault(c["implementation"], {})[c["seed"]] = c["heldout_by_problem"]
    # a third implementation, so that two compare with the baseline
    cells += [dict(c, implementation="calculator-rloo", algo="rloo", cell=c["cell"].replace("ppo", "rloo"))
              for c in cells if c["implementation"] == "calculator-ppo"]
    tests = grid_tests(cells, "grpo", warm)
    ppo = tests[("calculator", "calculator-ppo", "calculator-grpo")]
    sim = ppo["simultaneous"]
    by_hand = compare([rows["calculator-ppo"][s] for s in range(6)], [rows["calculator-grpo"][s] for s in range(6)],
                      level=1 - ALPHA / 2)
    assert sim["over"] == 2 and sim["level"] == pytest.approx(1 - ALPHA / 2)
    assert (sim["low"], sim["high"]) == pytest.approx((by_hand.low, by_hand.high))
    assert sim["low"] <= ppo["low"] and ppo["high"] <= sim["high"]
    if ppo["relation"] == "no difference detected":
        assert "read alone" in ppo["verdict"] and "Bonferroni over 2" in ppo["verdict"]
    assert tests[("calculator", "calculator-ppo", WARM)]["simultaneous"]["over"] == 3  # ppo, rloo and grpo
    board = leaderboard(cells, "grpo", warm, tests=tests)["calculator"]
    shown = leaderboard_frame(board).set_index("implementation")["interval alone / all at once (pts)"]
    assert shown["calculator-ppo"].endswith("(over 2)")


def test_the_shipped_rerun_reads_conditional_everywhere_it_is_printed(capsys):
    """Every comparison of the re-run shares its two warm starts between five seeds each: the report, --json, the
    page's tables and the pass@k reading all carry the clause (grep for a printed verdict without it finds none)."""
    grid = load_results(RESULTS / "core", shipped=True)
    summary = grid.summary()
    board, stages = summary.board["calculator"], summary.progression["calculator"]
    verdicts = [r["verdict"] for r in board if r["verdict"] != "baseline"] + [r["verdict_warm"] for r in board]
    verdicts += [r["verdict"] for r in stages if r["implementation"] is not None]
    verdicts += list(leaderboard_frame(board)["verdict"]) + list(progression_frame(stages)["verdict"][2:])
    assert len(verdicts) > 30 and all(v == "baseline" or CLAUSE in v for v in verdicts)
    assert CLAUSE in summary.passk_readings["calculator"]
    assert main(["report", "core", "--dir", str(RESULTS / "core"), "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    printed = [r for r in lines if r.get("record") == "comparison"]
    assert len(printed) == 13 and all(r["warm_starts"] == 2 and CLAUSE in r["verdict"] for r in printed)
    passk = [r for r in lines if r.get("record") == "passk" and r["model"].startswith("RL")]
    assert passk and all(CLAUSE in r["sentence"] for r in passk)
    assert main(["report", "core", "--dir", str(RESULTS / "core")]) == 0
    text = capsys.readouterr().out
    assert all(CLAUSE in line for line in text.splitlines() if "no difference detected from" in line)


def test_the_shipped_rerun_gives_the_figures_the_docs_quote():
    grid = load_results(RESULTS / "core", shipped=True)
    tests = grid.tests()
    sim = {k[1]: v["simultaneous"] for k, v in tests.items() if k[2] == "calculator-grpo"}
    assert (round(100 * sim["calculator-dapo"]["low"], 1), round(100 * sim["calculator-dapo"]["high"], 1)) == (-12.2, 4.0)
    assert (round(100 * sim["calculator-rloo"]["low"], 1), round(100 * sim["calculator-rloo"]["high"], 1)) == (-6.1, 12.1)
    grpo = {e["label"]: e for e in tests[("calculator", "calculator-grpo", WARM)]["by_warm_start"]}
    assert round(100 * grpo["warm seed 1"]["difference"], 1) == 7.5 and grpo["warm seed 1"]["relation"] == "better"
    rows = passk_comparison(grid.passk["calculator"])
    top = [r for r in rows if r["model"].startswith("RL") and r["k"] == 64][0]
    assert (top["seeds_up"], top["seeds_down"]) == (10, 0) and top["sign_p"] == pytest.approx(2 * 0.5 ** 10)
    assert top["verdict"] == "no difference detected"
    support = sampled_support(grid.passk["calculator"], grid.cells)
    assert (support["seeds"], support["greedy_right"], support["never_sampled"]) == (10, 221, 3)
    reading = passk_reading(rows, support)
    assert "rose in 10 of 10 seeds" in reading and "could already sample" in reading


def test_passk_reading_gives_the_seed_level_direction_only_beside_an_undetected_verdict():
    up = {"model": "RL", "against": "warm start", "k": 64, "before": 0.5, "value": 0.6, "seeds": 5,
          "difference": {"mean": 0.1, "low": -0.01, "high": 0.2}, "verdict": "no difference detected",
          "seeds_up": 5, "seeds_down": 0, "sign_p": 0.0625, "one_run": False, "test": "t", "tests": 2,
          "method": "declared", "warm_starts": None}
    one = dict(up, k=1, verdict="better", seeds_up=5)
    text = passk_reading([one, up])
    assert "pass@64 rose in 5 of 5 seeds" in text and "pass@1 rose in" not in text and CLAUSE not in text
    assert "rose in" not in passk_reading([one, dict(up, verdict="better")])


def test_corrected_sentences_are_gone_from_the_docs():
    docs = (ROOT / "docs" / "compare.md").read_text() + (ROOT / "README.md").read_text()
    for sentence in ("variation is in the seed variance", "already reached greedily", "is solved by no cell",
                     "showed no difference", "so the seeds sample the warm start's variation too"):
        assert sentence not in docs.replace("\n  ", " ").replace("\n", " ")
    assert "so the seeds sample the warm start's variation" not in (ROOT / "lab/recipes/grids/core.yaml").read_text()


def test_the_shipped_results_live_in_the_top_level_folder_and_old_links_still_open():
    """Issue 58: results/ (not the lab package) holds the shipped grids and the grids in progress; the app finds
    them there, and a source link written before the move opens the moved file."""
    from app.presentation.source import source_file
    from lab.compare.results import available_results
    from lab.shipped import GRID_RUNS, RESULTS

    assert RESULTS == ROOT / "results" and GRID_RUNS.parent == RESULTS and not (ROOT / "lab" / "results").exists()
    assert {g.folder.name for g in available_results() if g.shipped} >= {"core", "core-first"}
    assert source_file("lab/results/core/grid.yaml") == source_file("results/core/grid.yaml") == \
        (RESULTS / "core" / "grid.yaml").resolve()
    assert source_file("lab/results/../../etc/passwd.yaml") is None

"""The comparison grid's verdicts (lab/compare/board.py): one Holm family per grid, results per problem family,
the report over the shipped folders (one JSON line per cell) and the wording rules on every shipped verdict."""
import json
import re

import pytest

from lab.compare.board import UNTRAINED, WARM, family_results, grid_tests, leaderboard, progression
from lab.compare.cli import main
from lab.compare.results import RESULTS, heldout_families, load_results
from reference_impls.stats import compare, holm


def _cell(impl, algo, seed, heldout, env="calculator"):
    return {"cell": f"{impl}-s{seed}", "implementation": impl, "algo": algo, "env": env, "seed": seed,
            "heldout": sum(heldout) / len(heldout), "heldout_by_problem": heldout, "train_s": 1.0, "tokens": 1,
            "peak_rss_mb": 1.0, "config": {}}


def _grid_cells():
    """Two environments, three seeds each: grpo and ppo; ppo's seeds each gain problems 0-29."""
    cells = []
    for env in ("calculator", "search"):
        for seed in range(3):
            poor = [1 if (j + seed) % 4 == 0 else 0 for j in range(40)]
            good = [1 if j < 30 else x for j, x in enumerate(poor)]
            cells += [_cell(f"{env}-grpo", "grpo", seed, poor, env), _cell(f"{env}-ppo", "ppo", seed, good, env)]
    return cells


def test_holm_runs_over_every_test_of_the_grid():
    cells = _grid_cells()
    envs = ("calculator", "search")
    warm = {env: {"heldout_by_problem": [1 if j % 4 == 0 else 0 for j in range(40)]} for env in envs}
    base = {env: {"heldout_by_problem": [0] * 40} for env in envs}
    tests = grid_tests(cells, "grpo", warm, base)
    # per env: ppo vs grpo, ppo vs warm, grpo vs warm (3 seeds each: in the family); warm vs untrained (one run: not)
    assert len(tests) == 8
    family = [k for k, t in tests.items() if t["p_holm"] is not None]
    assert len(family) == 6 and all(tests[k]["tests"] == 6 for k in tests)
    assert ("calculator", WARM, UNTRAINED) not in family
    assert tests[("calculator", WARM, UNTRAINED)]["relation"] == "one run"
    raw = [tests[k]["p_raw"] for k in family]
    assert [tests[k]["p_holm"] for k in family] == pytest.approx(holm(raw))
    # each p_raw is compare()'s, on seed-paired matrices
    seeds = {s: c["heldout_by_problem"] for c in cells if c["implementation"] == "search-ppo" for s in [c["seed"]]}
    ref = {c["seed"]: c["heldout_by_problem"] for c in cells if c["implementation"] == "search-grpo"}
    direct = compare([seeds[s] for s in range(3)], [ref[s] for s in range(3)])
    assert tests[("search", "search-ppo", "search-grpo")]["p_raw"] == pytest.approx(direct.p_value)
    # a verdict follows the adjusted p, never the raw one
    for t in tests.values():
        if t["p_holm"] is not None:
            assert (t["relation"] in ("better", "worse")) == (t["p_holm"] < 0.05)
            assert t["verdict"].count("Holm-adjusted p") == 1 and f"over {len(family)} tests" in t["verdict"]
    # the leaderboard and the stages table show the same test for the same pair
    board = {r["implementation"]: r for r in leaderboard(cells, "grpo", warm, base)["search"]}
    stages = {r["implementation"]: r for r in progression(cells, base, warm)["search"]}
    assert board["search-ppo"]["verdict_warm"] == stages["search-ppo"]["verdict"]
    assert board["search-ppo"]["verdict"] == tests[("search", "search-ppo", "search-grpo")]["verdict"]


def test_results_per_problem_family():
    families = ["a", "b"] * 20
    matrix = [[1, 0] * 20, [1, 1] * 20]
    warm = [[0, 0] * 20]
    out = family_results(matrix, families, warm)
    assert list(out) == ["a", "b"] and out["a"]["problems"] == 20
    assert out["a"]["heldout"] == 1.0 and out["b"]["heldout"] == 0.5
    assert out["a"]["vs"]["mean"] == 1.0 and out["b"]["vs"]["mean"] == 0.5
    assert family_results(matrix, ["a"] * 3) == {}  # labels that do not fit the problems: nothing, not a guess
    cells = [_cell("calculator-grpo", "grpo", s, row) for s, row in enumerate(matrix)]
    row = leaderboard(cells, families={"calculator": families})["calculator"][0]
    assert row["by_family"]["b"]["heldout"] == 0.5
    # a tiny grid's 4 problems in 4 families leave no variance within a family: read pooled, not an error
    tiny = [_cell("calculator-grpo", "grpo", s, [1, 0, 0, s]) for s in (0, 1)]
    row = leaderboard(tiny, families={"calculator": ["add", "sub", "mul", "add_sub"]})["calculator"][0]
    assert row["by_family"] == {} and row["low"] <= row["heldout"] <= row["high"]


def test_heldout_families_follow_the_generator():
    """The calculator's held-out problems cycle its 9 families (levels 1-2), FrozenLake's its 3 levels."""
    calc = heldout_families("calculator", json.dumps({"levels": [1, 2], "families": []}), 100, 4242)
    assert len(calc) == 100 and len(set(calc)) == 9 and calc[:3] == ("add", "sub", "mul") and calc[9] == calc[0]
    lake = heldout_families("frozenlake", json.dumps({"levels": [1, 2, 3]}), 30, 4242)
    assert lake[:4] == ("level1", "level2", "level3", "level1")
    assert heldout_families("no-such-env", "{}", 10, 0) is None


def test_shipped_core_grid_reads_with_families_and_corrected_verdicts():
    grid = load_results(RESULTS / "core-first", shipped=True)
    assert {env: len(set(v)) for env, v in grid.families().items()} == {"calculator": 9, "search": 5, "frozenlake": 3}
    tests = grid.tests()
    family = [t for t in tests.values() if t["p_holm"] is not None]
    assert len(family) == 39  # 21 implementations vs the warm start, 18 vs the baseline
    for t in tests.values():
        text = t["verdict"]
        assert "equal" not in text and "significant" not in text
        assert len(re.findall(r"\bp\b", text)) == text.count("Holm-adjusted p") + text.count("uncorrected p")
        if t["relation"] == "no difference detected":
            assert "could not rule out +-" in text and "power" in text
    board = grid.board()
    calc = {r["implementation"]: r for r in board["calculator"]}
    # two calculator families no model solves, pooled into the headline and shown apart per family
    assert calc["calculator-grpo"]["by_family"]["diff_mul"]["heldout"] == 0.0
    assert all(r["low"] <= r["heldout"] <= r["high"] for rows in board.values() for r in rows)


SHIPPED = sorted(p.name for p in RESULTS.iterdir() if (p / "grid.yaml").is_file())


def test_the_shipped_grids_are_these():  # the loop below is not empty, and a new shipped grid is read by it
    assert {"core", "core-first", "envs-code-web", "envs-planning", "envs-reasoning-trust", "longhorizon"} <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_report_json_prints_one_line_per_shipped_cell(name, capsys):
    assert main(["report", str(RESULTS / name / "grid.yaml"), "--dir", str(RESULTS / name), "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    shipped = sorted(p.stem for p in (RESULTS / name / "cells").glob("*.json"))
    records = [r for r in lines if r["record"] == "cell"]
    assert sorted(r["cell"] for r in records) == shipped
    assert all(isinstance(r["heldout"], float) and r["heldout_by_family"] is not None for r in records)
    # then every comparison of the grid, as --comparisons prints them: the verdict and the detectable effect
    tests = [r for r in lines if r["record"] == "comparison"]
    assert lines[:len(records) + len(tests)] == records + tests
    assert main(["report", str(RESULTS / name / "grid.yaml"), "--dir", str(RESULTS / name), "--comparisons"]) == 0
    alone = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [{k: v for k, v in t.items() if k != "record"} for t in tests] == alone
    assert all({"verdict", "detectable"} <= set(t) for t in tests)
    # last, each pass@k test of the grid's records, as the page's pass@k table reads them
    passk = lines[len(records) + len(tests):]
    assert all(r["record"] == "passk" and {"env", "model", "against", "k", "p_holm", "verdict"} <= set(r)
               for r in passk)
    assert {r["env"] for r in passk} <= {p.stem for p in (RESULTS / name / "passk").glob("*.json")}


def test_report_json_of_the_core_rerun_names_every_test_and_the_passk_tests(capsys):
    """The re-run (results/core): 70 cells, 13 comparisons in one Holm family, then the pass@k tests of GRPO's
    ten seeds against their warm starts at the k named in the grid file, each a verdict with its Holm p."""
    assert main(["report", "core", "--dir", str(RESULTS / "core"), "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = [r["record"] for r in lines]
    assert kinds == ["cell"] * 70 + ["comparison"] * 13 + ["passk"] * 4
    assert all(r["tests"] == 13 and r["seeds"] == 10 and r["problems"] == 200 for r in lines if r["record"] == "comparison")
    rl = [r for r in lines if r["record"] == "passk" and r["against"] == "warm start"]
    assert [r["k"] for r in rl] == [1, 64] and all(r["seeds"] == 10 and r["tests"] == 4 for r in rl)
    for r in rl:  # the verdict follows the Holm-adjusted p, never the raw one
        assert (r["verdict"] in ("better", "worse")) == (r["p_holm"] < 0.05)


def test_report_text_and_comparisons_of_the_core_grid(capsys):
    assert main(["report", "core", "--dir", str(RESULTS / "core-first"), "--comparisons"]) == 0
    out = capsys.readouterr().out
    assert "Infinity" not in out and "NaN" not in out  # strict JSON, for any reader
    tests = [json.loads(line) for line in out.splitlines()]
    assert len(tests) == 39 and all({"p_raw", "p_holm", "test", "detectable", "verdict"} <= set(t) for t in tests)
    assert main(["report", "core", "--dir", str(RESULTS / "core-first")]) == 0
    text = capsys.readouterr().out
    assert "Per problem family" in text and "Holm-adjusted p" in text
    assert "significant" not in text and " equal" not in text

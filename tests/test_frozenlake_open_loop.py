"""The map-blind baseline of the FrozenLake slice: an open-loop turn played through the env's own step."""
from benchmarks.frozenlake_open_loop import main, open_loop_turns, play_open_loop
from reference_impls.envs import get_env
from reference_impls.envs.frozenlake import Problem, bfs

OPTIONS = {"moves_per_turn": 3, "max_turns": 8, "shaping": 0.0, "shaping_mode": "final", "turn_cost": 0.0,
           "hint_moves": 0, "levels": [1]}


def _problem(*rows):
    return Problem(grid=rows, plan=tuple(bfs(rows)), level=1, family="level1", split="heldout", uid="t")


def test_open_loop_outcomes_follow_the_map():
    task = get_env("frozenlake")
    lake = _problem("SF", "HG")
    assert play_open_loop(task, lake, "<move>right down</move>", OPTIONS) == 1
    assert play_open_loop(task, lake, "<move>down</move>", OPTIONS) == 0  # the hole below S
    assert play_open_loop(task, lake, "<move>left</move>", OPTIONS) == 0  # blocked every turn: ends at the turn limit
    # the same turn on the mirrored map falls in the hole on its first move
    assert play_open_loop(task, _problem("SH", "FG"), "<move>right down</move>", OPTIONS) == 0


def test_every_turn_of_up_to_three_moves_is_tried():
    turns = open_loop_turns(3)
    assert len(turns) == 4 + 16 + 64 == len(set(turns))
    assert "<move>down right down</move>" in turns


def test_shipped_cells_are_compared(tmp_path, capsys):
    out = tmp_path / "open_loop.json"
    assert main(["--out", str(out)]) == 0
    import json

    record = json.loads(out.read_text())
    assert record["maps"] == 100 and len(record["cells"]) == 22  # the warm start and the 21 cells
    for row in record["cells"]:
        assert 0 <= row["solved_by_both"] <= row["solved"] and row["agreement"] <= 100
    assert "| frozenlake-grpo-s0 |" in capsys.readouterr().out


def test_missing_results_folder_is_a_clear_error(tmp_path, capsys):
    assert main(["--results", str(tmp_path)]) == 2
    assert str(tmp_path / "cells") in capsys.readouterr().err

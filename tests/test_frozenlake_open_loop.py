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


def test_a_sweep_is_a_snake_cut_into_turns():
    from benchmarks.frozenlake_open_loop import sweeps

    all_sweeps = sweeps(3, width=3)
    assert len(all_sweeps) == 8
    turns = all_sweeps["sweep right/down"]
    assert turns[:3] == ("<move>right right down</move>", "<move>left left down</move>", "<move>right right down</move>")


def test_symmetries_of_the_square():
    from reference_impls.envs.frozenlake import symmetry

    grid = ("SF", "HG")
    assert symmetry(grid, 0) == grid
    assert symmetry(grid, 1) == ("HS", "GF")  # a quarter turn clockwise
    assert symmetry(grid, 2) == ("GH", "FS")
    assert symmetry(symmetry(grid, 3), 1) == grid
    assert symmetry(grid, 4) == ("FS", "GH")  # mirrored left-right
    assert len({symmetry(("SFF", "FHF", "FFG"), k) for k in range(8)}) == 4  # this map is symmetric about its diagonal
    assert len({symmetry(("SFH", "FFF", "HFG"), k) for k in range(8)}) == 4
    assert len({symmetry(("SHF", "FFF", "FFG"), k) for k in range(8)}) == 8


def test_fixed_orientation_keeps_the_maps_drawn_before_the_option():
    from reference_impls.envs.frozenlake import problems

    fixed = problems("heldout", n=12, seed=4242)
    assert all(p.grid[0][0] == "S" and p.grid[-1][-1] == "G" for p in fixed)  # gymnasium's layout
    assert fixed == problems("heldout", n=12, seed=4242, orientation="fixed")
    turned = problems("heldout", n=40, seed=4242, orientation="any")
    corners = {(next(r for r, row in enumerate(p.grid) if "G" in row) == 0, next(row.index("G") for row in p.grid if "G" in row) == 0)
               for p in turned}
    assert len(corners) == 4  # G in every corner
    for p in turned:  # a real path from S to G on the turned map, of the level's length
        assert p.split == "heldout" and bfs(p.grid) is not None and len(bfs(p.grid)) == len(p.plan)


def test_core_grid_maps_beat_every_map_blind_policy_chosen_on_validation(tmp_path):
    """The issue's bar: no map-blind policy chosen on the validation maps solves more than 10% of the test maps
    (on gymnasium's fixed layout 'down right' solved 32%)."""
    import json

    out = tmp_path / "blind.json"
    assert main(["--grid", "core", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["options"]["orientation"] == "any" and record["maps"] == 200
    chosen = record["chosen_on_validation"]
    assert chosen["validation_maps"] == 100 and chosen["test"] <= 0.10

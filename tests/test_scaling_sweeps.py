"""Issue 65, the scaling nodes: each is served by a row of ``train --list --json`` and measured by a sweep grid
(lab/recipes/grids/scaling-*.yaml: one run option over values, each point a grid of its own, lab.compare.sweep);
the grids load and validate and their points differ in the swept option alone; a sweep runs and resumes point by
point on the tiny model; its node page draws the curve, or says it has not been run and how to run it."""
import json
import sys

import pytest
import yaml

from app.presentation.node_sections import NodeContext, node_sections, sweep_blocks, sweep_command
from lab.compare import sweep as sweeps
from lab.compare.cell_options import cell_config, warm_settings
from lab.compare.driver import validate
from lab.compare.folder import GridDir
from lab.compare.grid import GRIDS, Grid
from reference_impls.envs.calculator import CalculatorConfig, _problems
from reference_impls.options import ConfigError

from inprocess import compare_stages_in_process, dotted_paths, run_main

#: node -> the sweep grids that measure it (the grids' rows serve the node); a node or a grid that disappears fails
SCALING = {
    "scaling-training": {"scaling-training"},
    "scaling-computation": {"scaling-computation", "scaling-training"},
    "scaling-model-size": {"scaling-model-size"},
    "scaling-data-size": {"scaling-data-size"},
    "scaling-efficiency": {"scaling-efficiency"},
    "scaling-environment": {"scaling-environment"},
}
GRID_NAMES = sorted(set().union(*SCALING.values()))


@pytest.fixture(scope="module")
def listed(train_list_json):
    return json.loads(train_list_json)


@pytest.mark.parametrize("node", sorted(SCALING))
def test_each_scaling_node_is_served_by_a_listed_row_of_its_sweeps(listed, node):
    rows = {row["id"] for row in listed if node in row["nodes"]}
    assert rows, f"no row of train --list --json serves {node}"
    measured_by = {g.name for g in sweeps.sweep_grids() if rows & set(g.implementations)}
    assert measured_by == SCALING[node]


def test_train_list_serves_at_least_131_nodes(listed, taxonomy):
    served = {node for row in listed for node in row["nodes"]}
    assert served <= {n.id for n in taxonomy}
    assert len(served) >= 131, len(served)


@pytest.mark.parametrize("name", GRID_NAMES)
def test_a_scaling_grid_loads_validates_and_its_points_differ_in_the_swept_option_alone(tmp_path, name):
    grid = Grid.load(name)
    assert grid.sweep and len(grid.sweep_points()) >= 2 and len(grid.seeds) >= 3
    validate(grid, GridDir(tmp_path))  # every point's every cell passes the trainer's checks
    option = grid.sweep["option"]
    configs = {point: dotted_paths(cell_config(grid.at_point(value), grid.implementations[0], 0, "warm"))
               for point, value in grid.sweep_points()}
    # what a point's warm starts are trained with: the model reaches a cell through its warm start alone (a cell's
    # model is the warm start's folder)
    warms = {point: warm_settings(grid.at_point(value), "calculator") for point, value in grid.sweep_points()}
    for runs in (configs, warms):
        first = next(iter(runs.values()))
        for point in runs:
            differ = {k for k in set(first) | set(runs[point]) if first.get(k) != runs[point].get(k)}
            assert differ <= {option}, (point, differ)
    where = warms if option == "model" else configs
    assert [where[point][option] for point, _ in grid.sweep_points()] == [v for _, v in grid.sweep_points()]
    assert len({json.dumps(c[option]) for c in where.values()}) == len(where)  # each point its own value
    # a point is an ordinary grid: its file carries no sweep, and the sweep's own file reads back as the sweep
    point = grid.at_point(grid.sweep_points()[0][1])
    assert not point.sweep and "sweep" not in point.as_dict() and Grid.from_dict(point.as_dict()).cells()
    assert Grid.from_dict(grid.as_dict()).sweep == grid.sweep


def _tiny_sweep(**changes) -> dict:
    data = yaml.safe_load((GRIDS / "tiny.yaml").read_text())
    for key in ("lr_sweep", "lr_trials", "passk", "validation", "mu"):
        data.pop(key)
    data.update(name="sweep", implementations=["calculator-grpo-scaling-data"], seeds=[0],
                sweep={"option": "train_pool", "values": [8, 32]}, eval={"n": 4, "seed": 7})
    data["options"].update(steps=1, prompts_per_step=2, group_size=2, max_new_tokens_per_turn=8,
                           max_completion_tokens=16)
    data.update(changes)
    return data


@pytest.mark.parametrize("sweep,message", [
    ({"option": "train_pool"}, "a mapping with option"),
    ({"option": "steps", "values": [4, 8]}, "steps is also set in the grid.s options"),
    ({"option": "train_pool", "values": [4]}, "at least two"),
    ({"option": "train_pool", "values": [4, 4]}, "repeats a point"),
    ({"option": "seed", "values": [0, 1]}, "'seed' is not a run option a sweep may vary"),
    ({"option": "nosuch", "values": [0, 1]}, "'nosuch' is not a run option"),
    ({"option": "group_size", "values": [2, 4]}, "group_size is also set in the grid's options"),
    ({"option": "env_options.nosuch", "values": [1, 2]}, "'nosuch' is not an option of the environment calculator"),
    ({"option": "sft_lr", "values": [1e-5, "../x"]}, "cannot name a point.s folder"),
    ({"option": "train_pool", "values": [{"a": 1}, 2]}, "not a list of at least two values"),
])
def test_bad_sweeps_name_the_problem(sweep, message):
    with pytest.raises(ConfigError, match=message):
        Grid.from_dict(_tiny_sweep(sweep=sweep), "g.yaml")


def test_a_sweep_is_not_run_as_one_grid(tmp_path):
    from lab.compare.driver import run

    grid = Grid.from_dict(_tiny_sweep(), "g.yaml")
    with pytest.raises(ConfigError, match="is a sweep"):
        run(grid, GridDir(tmp_path / "g"))


def test_train_families_narrow_the_training_problems_alone():
    config = CalculatorConfig(levels=(1, 2), families=("add", "sub", "mul", "add_sub"), train_families=("add",))
    assert {p.family for p in _problems("train", 12, 0, config)} == {"add"}
    assert {p.family for p in _problems("heldout", 12, 0, config)} == {"add", "sub", "mul", "add_sub"}
    assert _problems("heldout", 12, 0, config) == _problems("heldout", 12, 0, CalculatorConfig(
        levels=(1, 2), families=("add", "sub", "mul", "add_sub")))  # the test problems do not move
    with pytest.raises(ConfigError, match="add_sub not of the chosen levels"):
        CalculatorConfig(levels=(1,), train_families=("add_sub",))


def test_one_cell_of_a_scaling_sweep_runs_end_to_end_and_the_sweep_resumes(tmp_path, monkeypatch):
    """The data-size sweep on the tiny model, two points of one seed, stopped after one cell: the first point's
    warm start and cell ran (its config has that point's train_pool), the second point nothing; the curve has one
    measured point, drawn, and exports; run again, the sweep resumes with the other point's first stage."""
    from lab.compare.cli import main

    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(_tiny_sweep()))
    grid = Grid.load(str(path))
    root = tmp_path / "out"
    calls = compare_stages_in_process(monkeypatch, lambda args: (args[0], args[args.index("--dir") + 1]))
    assert sweeps.run_sweep(grid, root, max_cells=1, out=sys.stderr) == 0
    first = sweeps.point_dir(root, "8")
    assert [stage for stage, _ in calls] == ["_warm", "_warmeval", "_cell"]
    assert {folder for _, folder in calls} == {str(first.path)}
    record = first.result("calculator-grpo-scaling-data", 0)
    assert record["config"]["train_pool"] == 8 and len(record["heldout_by_problem"]) == 4
    assert not (root / "points" / "32").exists()
    found = sweeps.load_sweep(root, shipped=False)
    assert [(p["point"], p["seeds"]) for p in found.points] == [("8", 1), ("32", 0)]
    assert found.points[0]["heldout"] == pytest.approx(sum(record["heldout_by_problem"]) / 4)
    [block] = sweep_blocks([(grid, found)])
    kinds = [p.kind for p in block.parts]
    assert kinds == ["markdown", "chart", "chart", "table", "caption"] and "Not measured yet: 32" in block.parts[-1].body
    assert [r["point"] for r in block.parts[1].body["data"]["values"]] == ["8"]
    assert block.parts[2].body["data"]["values"] == [{"point": "8", "train_s": record["train_s"]}]
    shown = run_main(main, ["status", str(path), "--dir", str(root)], prog="python -m lab.compare").stdout
    assert "done 1" in shown and "pending 1" in shown
    shipped = tmp_path / "shipped"
    assert sweeps.export_sweep(grid, root, shipped) == 1
    assert [p["seeds"] for p in sweeps.load_sweep(shipped, shipped=True).points] == [1, 0]
    # resumed: the finished point is kept and the next stage is the other point's warm start (a stand-in stage
    # that fails, so that nothing more is trained here)
    started = []
    monkeypatch.setattr("lab.compare.driver.stage_process",
                        lambda args, log: started.append((args[0], args[args.index("--dir") + 1])) or 1)
    assert sweeps.run_sweep(grid, root, out=sys.stderr) == 1
    assert started == [("_warm", str(sweeps.point_dir(root, "32").path))]
    # the folder is this sweep's: another one is refused before anything is written
    other = Grid.from_dict(_tiny_sweep(sweep={"option": "train_pool", "values": [8, 64]}), "g.yaml")
    with pytest.raises(ConfigError, match="different sweep"):
        sweeps.run_sweep(other, root, out=sys.stderr)


@pytest.mark.parametrize("node", sorted(SCALING))
def test_the_node_page_says_a_sweep_not_run_yet_and_its_command(catalog, node, tmp_path, monkeypatch):
    monkeypatch.setattr(sweeps, "RESULTS", tmp_path / "no-results")  # neither shipped results nor the user's
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path / "data"))
    sections = dict(node_sections(NodeContext(catalog, node, load_grids=lambda: [], load_value_searches=lambda _: [])))
    blocks = sections["scaling sweep"]
    assert len(blocks) == len(SCALING[node])
    for block in blocks:
        kinds = [p.kind for p in block.parts]
        assert kinds == ["markdown", "note"], kinds
        assert "**Not run yet.**" in block.parts[1].body
        assert any(f"`{sweep_command(name)}`" in block.parts[1].body for name in SCALING[node])
    assert "scaling sweep" not in dict(node_sections(NodeContext(catalog, "alg-grpo", load_grids=lambda: [],
                                                                 load_value_searches=lambda _: [])))

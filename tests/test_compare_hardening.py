"""A grid folder is data, never a path to follow (issue 63's serious items and their neighbours): a warm restore
refuses a planted link and writes only into fresh folders of its own; ``export`` names each cell's file after the
implementation and seed whose folder holds it, refuses a record that says otherwise and a folder holding a link,
and leaves nothing behind when it refuses. Each case checks that nothing outside the grid and export folders
changed (every file under the test's folder, the grid folder and the export apart, hashed before and after)."""
import hashlib
import json
import os
import shutil

import pytest
import yaml

from lab.compare.cli import main
from lab.compare.folder import GridDir, atomic_json
from lab.compare.grid import GRIDS, Grid
from lab.compare.report import export
from lab.compare.warm import warm_restore_stage, warm_stage
from reference_impls.options import ConfigError

from inprocess import run_main


def _tree(root, leave_out=()):
    """{relative path: sha256 or the link's target} of everything under ``root`` but ``leave_out`` (folders)."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in {str(p) for p in leave_out}]
        for name in dirs + files:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                found[rel] = "link -> " + os.readlink(path)
            elif os.path.isfile(path):
                with open(path, "rb") as f:
                    found[rel] = hashlib.sha256(f.read()).hexdigest()
    return found


def _victim(tmp_path):
    """A folder beside the grid folder with files a planted link would reach."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "config.json").write_text('{"mine": true}')
    (victim / "thesis.txt").write_text("four years of work")
    return victim


def _grid_file(tmp_path, **options):
    data = yaml.safe_load((GRIDS / "tiny.yaml").read_text())
    data.pop("lr_sweep", None)
    data.pop("passk", None)
    data["options"].update(options)
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def carried_warm_start(tmp_path):
    """A grid folder whose calculator warm start is recorded (done.json with its digest) but whose weights are gone,
    as a folder committed without them arrives: ``run`` restores such a warm start by itself."""
    path = _grid_file(tmp_path, sft_examples=4)
    grid = Grid.load(str(path))
    gdir = GridDir(tmp_path / "g")
    gdir.bind(grid)
    warm_stage(grid, gdir, "calculator")
    warm = gdir.warm("calculator")
    for f in warm.iterdir():
        if f.name != "done.json":
            f.unlink()
    return path, grid, gdir


@pytest.mark.parametrize("planted", [".calculator.restore", ".calculator.tmp", "calculator/model.safetensors"])
def test_a_warm_restore_refuses_a_planted_link(carried_warm_start, tmp_path, planted):
    """The repro of issue 63: a link planted in warm/ under the name the restore's scratch folder used to have
    (or inside the warm start's own folder). The restore, started by ``run`` for a warm start without its weights,
    is refused with an error naming the link; the victim folder is untouched and nothing of it is moved."""
    path, grid, gdir = carried_warm_start
    victim = _victim(tmp_path)
    (gdir.path / "warm" / planted).symlink_to(victim if not planted.endswith(".safetensors") else victim / "thesis.txt")
    before = _tree(tmp_path, leave_out=[gdir.path])
    out = run_main(main, ["_warmrestore", str(path), "--dir", str(gdir.path), "--env", "calculator"],
                   env=dict(os.environ, HF_HUB_OFFLINE="1"), prog="python -m lab.compare")
    assert out.returncode == 2 and "is a symbolic link" in out.stderr and planted.split("/")[-1] in out.stderr
    with pytest.raises(ConfigError, match="symbolic link"):
        warm_restore_stage(grid, gdir, "calculator")
    assert _tree(tmp_path, leave_out=[gdir.path]) == before
    assert sorted(p.name for p in victim.iterdir()) == ["config.json", "thesis.txt"]


def test_a_warm_restore_writes_only_into_a_fresh_folder_and_moves_only_what_it_wrote(carried_warm_start, tmp_path):
    """Without a link the restore goes on: it trains into a folder made fresh for it (not one of a name chosen in
    advance), moves the weights it wrote beside done.json, and leaves no scratch folder behind."""
    path, grid, gdir = carried_warm_start
    warm = gdir.warm("calculator")
    record = json.loads((warm / "done.json").read_text())
    (warm.parent / ".calculator.restore").mkdir()  # an old scratch folder of that name, with a file in it
    (warm.parent / ".calculator.restore" / "stray.txt").write_text("not the stage's")
    warm_restore_stage(grid, gdir, "calculator")
    assert json.loads((warm / "done.json").read_text()) == record
    assert any(warm.glob("*.safetensors")) and not (warm / "stray.txt").exists()
    assert sorted(p.name for p in warm.parent.iterdir()) == [".calculator.restore", "calculator"]


@pytest.mark.parametrize("bad", [[1, 2], {"weights_sha256": 5}])
def test_a_warm_restore_of_a_malformed_record_is_an_error_line(carried_warm_start, bad):
    """A done.json that is a list, or whose digest is a number: an ``error:`` line, not a traceback."""
    path, grid, gdir = carried_warm_start
    (gdir.warm("calculator") / "done.json").write_text(json.dumps(bad))
    out = run_main(main, ["_warmrestore", str(path), "--dir", str(gdir.path), "--env", "calculator"],
                   env=dict(os.environ, HF_HUB_OFFLINE="1"), prog="python -m lab.compare")
    assert out.returncode == 2 and out.stderr.startswith("error: ") and "Traceback" not in out.stderr
    assert "done.json" in out.stderr


def _cell_record(impl, seed, **changes):
    return {"cell": f"{impl}-s{seed}", "implementation": impl, "seed": seed, "env": "calculator", "algo": "grpo",
            "heldout": 0.5, "heldout_by_problem": [0, 1], "config": {"model": "/somewhere/warm/calculator",
                                                                      "out": "/somewhere/run", "lr": 1e-5},
            **changes}


@pytest.fixture
def recorded_grid(tmp_path):
    """A grid folder of the tiny grid with finished cell records written by hand (no training)."""
    grid = Grid.load(str(_grid_file(tmp_path)))
    gdir = GridDir(tmp_path / "g")
    gdir.bind(grid)
    for impl, seed in grid.cells():
        gdir.cell(impl, seed).mkdir(parents=True)
        atomic_json(gdir.cell(impl, seed) / "result.json", _cell_record(impl, seed))
    other = tmp_path / "other"
    other.mkdir()
    (other / "settings.json").write_text('{"keep": "me"}')
    (tmp_path / "exports").mkdir()
    return grid, gdir


def test_export_names_files_after_the_implementation_and_seed(recorded_grid, tmp_path):
    grid, gdir = recorded_grid
    before = _tree(tmp_path, leave_out=[gdir.path, tmp_path / "exports"])
    assert export(grid, gdir, tmp_path / "exports" / "out") == 4
    assert sorted(p.name for p in (tmp_path / "exports" / "out" / "cells").iterdir()) == [
        "calculator-grpo-s0.json", "calculator-grpo-s1.json", "calculator-rloo-s0.json", "calculator-rloo-s1.json"]
    shipped = json.loads((tmp_path / "exports" / "out" / "cells" / "calculator-grpo-s1.json").read_text())
    assert shipped["config"]["out"] == "cells/calculator-grpo-s1/run" and shipped["cell"] == "calculator-grpo-s1"
    assert sorted(p.name for p in (tmp_path / "exports").iterdir()) == ["out"]  # no staging folder left
    assert _tree(tmp_path, leave_out=[gdir.path, tmp_path / "exports"]) == before


@pytest.mark.parametrize("hostile", ["../../x", "ABSOLUTE", "calculator-rloo-s0"])
def test_export_refuses_a_record_whose_cell_field_disagrees(recorded_grid, tmp_path, hostile):
    """The repro of issue 63: a record whose ``cell`` is ``../../x`` wrote beside the export, an absolute one
    overwrote another folder's settings.json, and another cell's id overwrote that cell. Refused, with the record
    named; nothing is written anywhere, the export folder included."""
    grid, gdir = recorded_grid
    cell = str(tmp_path / "other" / "settings") if hostile == "ABSOLUTE" else hostile
    atomic_json(gdir.cell("calculator-grpo", 1) / "result.json", _cell_record("calculator-grpo", 1, cell=cell))
    before = _tree(tmp_path, leave_out=[gdir.path])
    out = run_main(main, ["export", str(gdir.path / "grid.yaml"), "--dir", str(gdir.path), "--to",
                          str(tmp_path / "exports" / "out")], prog="python -m lab.compare")
    assert out.returncode == 2 and "calculator-grpo-s1" in out.stderr and "nothing was exported" in out.stderr
    assert _tree(tmp_path, leave_out=[gdir.path]) == before
    assert not (tmp_path / "exports" / "out").exists() and not (tmp_path / "x.json").exists()


def test_export_refuses_a_linked_record_and_copies_no_link_target(recorded_grid, tmp_path):
    """A base record (or any file) that is a link to a file outside: refused, the target's text nowhere."""
    grid, gdir = recorded_grid
    secret = tmp_path / "other" / "id_key.json"
    secret.write_text('{"private": "KEY-0123456789"}')
    gdir.base("calculator").parent.mkdir(parents=True)
    gdir.base("calculator").symlink_to(secret)
    before = _tree(tmp_path, leave_out=[gdir.path])
    with pytest.raises(ConfigError, match="symbolic link"):
        export(grid, gdir, tmp_path / "exports" / "out")
    assert _tree(tmp_path, leave_out=[gdir.path]) == before
    assert not (tmp_path / "exports" / "out").exists()


def test_export_to_a_file_or_of_a_record_without_config_is_an_error_and_leaves_nothing(recorded_grid, tmp_path):
    grid, gdir = recorded_grid
    target = tmp_path / "exports" / "a-file"
    target.write_text("mine")
    out = run_main(main, ["export", str(gdir.path / "grid.yaml"), "--dir", str(gdir.path), "--to", str(target)],
                   prog="python -m lab.compare")
    assert out.returncode == 2 and out.stderr.startswith("error: ") and target.read_text() == "mine"
    record = _cell_record("calculator-rloo", 1)
    del record["config"]
    atomic_json(gdir.cell("calculator-rloo", 1) / "result.json", record)
    with pytest.raises(ConfigError, match="no config"):
        export(grid, gdir, tmp_path / "exports" / "out")
    assert sorted(p.name for p in (tmp_path / "exports").iterdir()) == ["a-file"]  # no partial export left
    shutil.rmtree(gdir.cell("calculator-rloo", 1))
    assert export(grid, gdir, tmp_path / "exports" / "out") == 3  # the next export is not refused as non-empty

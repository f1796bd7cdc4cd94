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
    for key in ("lr_sweep", "lr_trials", "passk"):
        data.pop(key, None)
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
    assert _tree(tmp_path, leave_out=[gdir.path]) == before  # first: what the old code broke
    assert sorted(p.name for p in victim.iterdir()) == ["config.json", "thesis.txt"]
    assert out.returncode == 2 and "is a symbolic link" in out.stderr and planted.split("/")[-1] in out.stderr
    with pytest.raises(ConfigError, match="symbolic link"):
        warm_restore_stage(grid, gdir, "calculator")
    assert _tree(tmp_path, leave_out=[gdir.path]) == before


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
    assert _tree(tmp_path, leave_out=[gdir.path, tmp_path / "exports" / "out"]) == before  # first: the old damage
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
    try:
        export(grid, gdir, tmp_path / "exports" / "out")
        refused = None
    except ConfigError as err:
        refused = str(err)
    leaked = [p for p in (tmp_path / "exports").rglob("*") if p.is_file() and "KEY-0123456789" in p.read_text()]
    assert leaked == []  # first: what the old code copied
    assert refused is not None and "symbolic link" in refused and "base" in refused
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


@pytest.mark.parametrize("field", [{"seed": "x"}, {"implementation": ["a"]}, {"curve": "x"}, {"heldout_by_problem": []},
                                   {"env": 5}, {"heldout": "abc"}, {"diagnostics": {"a": 1}}, {"config": []}])
def test_a_wrongly_typed_cell_record_is_named_and_left_out(recorded_grid, tmp_path, field):
    """One wrongly typed field crashed ``report``, ``status`` or the app's loader (issue 63, item 4): every reader
    checks a cell record against one schema (``folder.RECORD_SCHEMA``), names a bad one and leaves it out."""
    from lab.compare.results import load_results

    grid, gdir = recorded_grid
    path = gdir.cell("calculator-grpo", 1) / "result.json"
    atomic_json(path, {**_cell_record("calculator-grpo", 1), **field})
    grid_file = str(gdir.path / "grid.yaml")
    for argv in (["status"], ["report"], ["report", "--json"]):
        out = run_main(main, [argv[0], grid_file, "--dir", str(gdir.path), *argv[1:]], prog="python -m lab.compare")
        assert out.returncode == 0 and "Traceback" not in out.stderr, (argv, out.stderr[-2000:])
    status = run_main(main, ["status", grid_file, "--dir", str(gdir.path)], prog="python -m lab.compare").stdout
    assert "calculator-grpo-s1" in status and "bad record" in status and next(iter(field)) in status
    loaded = load_results(gdir.path, shipped=False)
    assert [str(path) in problem and next(iter(field)) in problem for problem in loaded.bad] == [True]
    assert sorted(c["cell"] for c in loaded.cells) == ["calculator-grpo-s0", "calculator-rloo-s0", "calculator-rloo-s1"]
    loaded.board()  # the page's board is drawn from the three good ones


def test_records_are_read_from_regular_files_of_bounded_size_only(recorded_grid, tmp_path):
    """A record that is a link (to a record outside, or to /dev/zero) is a bad record, never followed; so is a
    record larger than a record may hold (issue 63, item 5)."""
    from lab.compare.folder import MAX_RECORD_BYTES, BadRecord, read_record
    from lab.compare.results import load_results

    grid, gdir = recorded_grid
    outside = tmp_path / "other" / "record.json"
    outside.write_text(json.dumps(_cell_record("calculator-grpo", 1, heldout=1.0)))
    linked = gdir.cell("calculator-grpo", 1) / "result.json"
    linked.unlink()
    linked.symlink_to(outside)
    loaded = load_results(gdir.path, shipped=False)
    assert "calculator-grpo-s1" not in [c["cell"] for c in loaded.cells]
    assert any("symbolic link" in problem for problem in loaded.bad)
    with pytest.raises(BadRecord, match="symbolic link"):
        read_record(linked)
    big = gdir.cell("calculator-rloo", 1) / "result.json"
    with open(big, "r+b") as f:  # sparse: larger than the bound without the disk space
        f.truncate(MAX_RECORD_BYTES + 1)
    with pytest.raises(BadRecord, match="more than a record may hold"):
        read_record(big)
    out = run_main(main, ["status", str(gdir.path / "grid.yaml"), "--dir", str(gdir.path)], prog="python -m lab.compare")
    assert out.returncode == 2 and "symbolic link" in out.stderr  # the grid folder holds a link: refused whole


def test_dev_zero_behind_a_record_is_never_read(recorded_grid):
    """A ``result.json`` linked to /dev/zero exhausted memory in ``status``. (Not run against the old code: it would
    exhaust this machine's memory.)"""
    from lab.compare.folder import BadRecord, read_record
    from lab.compare.results import load_results

    grid, gdir = recorded_grid
    linked = gdir.cell("calculator-grpo", 1) / "result.json"
    linked.unlink()
    linked.symlink_to("/dev/zero")
    with pytest.raises(BadRecord, match="symbolic link"):
        read_record(linked)
    assert len(load_results(gdir.path, shipped=False).cells) == 3


@pytest.mark.parametrize("spec", ["ALIASES", "EVAL_N"])
def test_a_grid_file_is_read_with_bounds(recorded_grid, tmp_path, spec):
    """A grid.yaml of nested aliases (1.4 KB that expands to gigabytes) and one asking for 10^8 held-out problems:
    refused by the runner's loader and left out by the app's (issue 63, item 5)."""
    from lab.compare.results import load_results

    grid, gdir = recorded_grid
    data = yaml.safe_load((gdir.path / "grid.yaml").read_text())
    if spec == "ALIASES":
        lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
        text = yaml.safe_dump(data) + "\n".join(lines) + "\n"
        assert len(text) < 3000
    else:
        data["eval"] = {"n": 100_000_000, "seed": 1}
        text = yaml.safe_dump(data)
    (gdir.path / "grid.yaml").write_text(text)
    with pytest.raises(ConfigError, match="aliases are not allowed|eval"):
        Grid.load(str(gdir.path / "grid.yaml"))
    assert load_results(gdir.path, shipped=False) is None

"""Issue 65, the preliminaries: one task run both ways (lab/recipes/grids/prelim.yaml, a sweep over implementation:
the calculator as a one-step MDP and as a multi-turn POMDP, each form from its own warm starts). The grid loads and
validates and its forms differ in the calculator's mode alone; its results read back per form (each seed's
training-reward curve, the mean, held-out before and after); the six node pages draw them, or say the grid has not
been run and how to run it; a tiny-model run of the grid runs, exports and is drawn, on the page too (AppTest)."""
import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from app.presentation.common import md_escape
from app.presentation.node_sections import NodeContext, forms_blocks, node_sections
from lab.compare import forms
from lab.compare import sweep as sweeps
from lab.compare.cell_options import cell_config, reference_config, warm_settings
from lab.compare.driver import validate
from lab.compare.folder import GridDir
from lab.compare.grid import GRIDS, Grid
from reference_impls.implementations import CONCEPT_CODE, PRELIMINARY_NODES
from reference_impls.options import ConfigError
from reference_impls.stats import config_interval

from inprocess import compare_stages_in_process, dotted_paths, run_main

FORMS = ("calculator-one-step-grpo", "calculator-multi-turn-grpo")


def test_the_prelim_grid_runs_both_forms_alike_but_for_the_mode_each_from_its_own_warm_starts(tmp_path):
    grid = Grid.load("prelim")
    assert grid.implementations == FORMS and grid.seeds == (0, 1, 2) and grid.sweep["option"] == "implementation"
    assert grid.recipe == "compare" and grid.eval_n >= 100 and grid.budget == "sampled-episodes"
    validate(grid, GridDir(tmp_path))  # every cell of both forms passes the trainer's checks
    points = {impl: grid.at_point(impl) for _, impl in grid.sweep_points()}
    assert [p.implementations for p in points.values()] == [(impl,) for impl in FORMS]
    configs = {impl: dotted_paths(cell_config(p, impl, 0, "warm")) for impl, p in points.items()}
    one, multi = configs[FORMS[0]], configs[FORMS[1]]
    assert {k for k in set(one) | set(multi) if one.get(k) != multi.get(k)} == {"env_options.mode"}
    assert (one["env_options.mode"], multi["env_options.mode"]) == ("direct", "tool")
    assert one["model"] == "warm" and one["steps"] * one["prompts_per_step"] * one["group_size"] == 256
    # each form's warm start: the same SFT settings, demonstrating (and scored in) its own form's episodes
    assert warm_settings(points[FORMS[0]], "calculator") == warm_settings(points[FORMS[1]], "calculator")
    assert warm_settings(points[FORMS[0]], "calculator")["model"] == "smollm2-135m-instruct"
    assert [reference_config(p, "calculator", "m")["env_options"]["mode"] for p in points.values()] == ["direct", "tool"]
    # a point reads back as an ordinary grid of one implementation
    point = Grid.from_dict(points[FORMS[1]].as_dict())
    assert point.cells() == [(FORMS[1], s) for s in (0, 1, 2)] and not point.sweep


def _prelim(**changes) -> dict:
    data = yaml.safe_load((GRIDS / "prelim.yaml").read_text())
    data.update(changes)
    return data


@pytest.mark.parametrize("changes,message", [
    ({"sweep": {"option": "implementation", "values": [FORMS[0]]}}, "the grid's implementations"),
    ({"sweep": {"option": "implementation", "values": [FORMS[0], FORMS[0]]}}, "each once"),
    ({"sweep": {"option": "implementation", "values": [FORMS[0], "calculator-grpo"]}}, "the grid's implementations"),
    ({"passk": {"implementation": "one-step-grpo", "problems": 50, "samples": 4}}, "passk' with a sweep over impl"),
])
def test_a_bad_sweep_over_implementation_names_the_problem(changes, message):
    with pytest.raises(ConfigError, match=message):
        Grid.from_dict(_prelim(**changes), "g.yaml")


# -- reading results back, on hand-made records --------------------------------------------------------------
def _cell(impl: str, seed: int, rewards: list[float], answers: list[int], complete: bool = True) -> dict:
    mode = "direct" if impl == FORMS[0] else "tool"
    return {"cell": f"{impl}-s{seed}", "implementation": impl, "algo": "grpo", "env": "calculator", "seed": seed,
            "warm_start": "calculator" if seed == 0 else f"calculator@w{seed}", "warm_seed": seed,
            "config": {"algo": "grpo", "steps": len(rewards), "prompts_per_step": 4, "group_size": 8, "lr": 3e-5,
                       "max_new_tokens_per_turn": 24, "max_completion_tokens": 80,
                       "env_options": {"levels": [1, 2], "mode": mode}},
            "budget": {"mu": 2, "episodes": 32 * len(rewards)}, "complete": complete,
            "curve": [{"step": i + 1, "reward_mean": r, "accuracy": r} for i, r in enumerate(rewards)],
            "heldout": sum(answers) / len(answers), "heldout_by_problem": answers, "train_s": 100.0 + seed}


def _warm(seed: int, answers: list[int]) -> dict:
    return {"model": "smollm2-135m-instruct", "sft_steps": 3, "seed": seed, "heldout": sum(answers) / len(answers),
            "heldout_by_problem": answers}


def _write_forms(root: Path, cells: dict, warms: dict, seeds=(0, 1)) -> Grid:
    """An exported forms folder: sweep.yaml, and per form its grid.yaml, cells/<id>.json and warm/<name>.json."""
    grid = Grid.from_dict(_prelim(seeds=list(seeds), eval={"n": 6, "seed": 7}), "prelim.yaml")
    root.mkdir(parents=True)
    (root / "sweep.yaml").write_text(yaml.safe_dump(grid.as_dict(), sort_keys=False))
    for name, impl in grid.sweep_points():
        folder = root / "points" / name
        (folder / "cells").mkdir(parents=True)
        (folder / "warm").mkdir()
        (folder / "grid.yaml").write_text(yaml.safe_dump(grid.at_point(impl).as_dict(), sort_keys=False))
        for record in cells.get(impl, []):
            (folder / "cells" / f"{record['cell']}.json").write_text(json.dumps(record))
        for warm_name, record in warms.get(impl, {}).items():
            (folder / "warm" / f"{warm_name}.json").write_text(json.dumps(record))
    return grid


def test_a_forms_folder_reads_back_each_forms_curves_and_held_out_before_and_after(tmp_path):
    one = [_cell(FORMS[0], 0, [0.1, 0.2, 0.3], [1, 0, 0, 1, 0, 0]),
           _cell(FORMS[0], 1, [0.3, 0.4, 0.5], [1, 1, 0, 1, 0, 0]),
           _cell(FORMS[0], 2, [0.9, 0.9], [1, 1, 1, 1, 1, 1], complete=False)]  # stopped short: left out
    warm_one = {"calculator": _warm(0, [0, 0, 0, 1, 0, 0]), "calculator@w1": _warm(1, [1, 0, 0, 0, 0, 0])}
    _write_forms(tmp_path / "prelim", {FORMS[0]: one}, {FORMS[0]: warm_one}, seeds=(0, 1, 2))
    found = forms.load_forms(tmp_path / "prelim", shipped=True)
    assert found.name == "prelim" and found.shipped and [f.implementation for f in found.forms] == list(FORMS)
    direct, tool = found.forms
    assert not tool.measured and found.measured == [direct]
    assert [s["seed"] for s in direct.seeds] == [0, 1]
    assert direct.seeds[1]["curve"] == [(1, 0.3), (2, 0.4), (3, 0.5)]
    assert direct.mean == [(1, pytest.approx(0.2)), (2, pytest.approx(0.3)), (3, pytest.approx(0.4))]
    after = config_interval([one[0]["heldout_by_problem"], one[1]["heldout_by_problem"]])
    before = config_interval([r["heldout_by_problem"] for r in warm_one.values()])
    assert direct.after == {"heldout": pytest.approx(5 / 12), "low": pytest.approx(after.low),
                            "high": pytest.approx(after.high), "seeds": 2}
    assert direct.before == {"heldout": pytest.approx(2 / 12), "low": pytest.approx(before.low),
                             "high": pytest.approx(before.high), "seeds": 2}
    assert direct.difference["mean"] == pytest.approx(3 / 12)  # each seed paired with its own warm start
    assert direct.verdict
    s = direct.settings
    assert (s["mode"], s["steps"], s["mu"], s["episodes"], s["sft_steps"], s["model"], s["eval_n"]) == (
        "direct", 3, 2, 96, 3, "smollm2-135m-instruct", 6)
    assert s["train_s"] == pytest.approx(100.5)
    assert forms.load_forms(tmp_path / "nothing", shipped=True) is None


def test_the_mean_curve_keeps_the_steps_every_seed_reached():
    assert forms.mean_curve([[(1, 0.0), (2, 1.0), (3, 1.0)], [(1, 0.5), (2, 0.5)]]) == [(1, 0.25), (2, 0.75)]
    assert forms.mean_curve([]) == []


def test_the_section_draws_both_forms_seed_and_mean_lines_and_the_before_after_table(tmp_path):
    cells = {FORMS[0]: [_cell(FORMS[0], 0, [0.1, 0.2], [1, 0, 0, 0, 0, 0]), _cell(FORMS[0], 1, [0.3, 0.2], [1, 1, 0, 0, 0, 0])],
             FORMS[1]: [_cell(FORMS[1], 0, [0.5, 0.7], [1, 1, 1, 0, 0, 0])]}
    warms = {FORMS[0]: {"calculator": _warm(0, [0] * 6), "calculator@w1": _warm(1, [1, 0, 0, 0, 0, 0])},
             FORMS[1]: {"calculator": _warm(0, [1, 1, 0, 0, 0, 0])}}
    grid = _write_forms(tmp_path / "prelim", cells, warms)
    found = forms.load_forms(tmp_path / "prelim", shipped=False)
    [block] = forms_blocks("prelim-transition-dynamics", [(grid, found)])
    assert [p.kind for p in block.parts] == ["markdown", "chart", "table", "markdown", "caption", "caption", "markdown"]
    rows = block.parts[1].body["data"]["values"]
    seeds = [r for r in rows if r["kind"] == "seed"]
    means = [r for r in rows if r["kind"] == "mean"]
    assert len(seeds) == 2 * 2 + 2 and len(means) == 2 + 2
    assert {(r["form"], r["step"], round(r["reward"], 3)) for r in means} == {
        ("one-step MDP", 1, 0.2), ("one-step MDP", 2, 0.2), ("multi-turn POMDP", 1, 0.5), ("multi-turn POMDP", 2, 0.7)}
    frame = block.parts[2].body
    assert list(frame["form"]) == ["one-step MDP", "multi-turn POMDP"] and list(frame["seeds"]) == [2, 1]
    assert frame["held-out after RL %"][1].startswith("50.0 [") and frame["held-out before RL (warm start) %"][0].startswith("8.3 [")
    verdicts = block.parts[3].body.splitlines()
    assert [line.split(":")[0] for line in verdicts[1:]] == ["- one-step MDP", "- multi-turn POMDP"]
    assert verdicts[1].endswith(md_escape(found.forms[0].verdict)) and found.forms[0].verdict
    assert "No no-update (learning rate 0) control" in block.parts[4].body and "your run in" in block.parts[4].body
    assert "2 steps of 4 problems x 8 samples (64 episodes per cell)" in block.parts[5].body
    assert "3 SFT steps" in block.parts[5].body and "held-out: 6 problems (seed 7)" in block.parts[5].body
    for path, name, _ in CONCEPT_CODE["prelim-transition-dynamics"]:
        assert f"`{name}` in {path}" in block.parts[6].body


def _not_run(monkeypatch, tmp_path):
    monkeypatch.setattr(sweeps, "RESULTS", tmp_path / "no-results")  # neither shipped results nor the user's
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path / "data"))


@pytest.mark.parametrize("node", PRELIMINARY_NODES)
def test_each_prelim_node_says_the_grid_is_not_run_yet_with_its_commands(catalog, node, tmp_path, monkeypatch):
    _not_run(monkeypatch, tmp_path)
    sections = dict(node_sections(NodeContext(catalog, node, load_grids=lambda: [], load_value_searches=lambda _: [])))
    assert list(sections)[:3] == ["implementations", "in the code", "two forms"]
    [block] = sections["two forms"]
    assert [p.kind for p in block.parts] == ["markdown", "note", "markdown"]
    note = block.parts[1].body
    assert "**Not run yet.**" in note and "`python -m lab.compare run prelim`" in note
    assert "`python -m lab.compare export prelim --to results/prelim`" in note
    assert "scaling sweep" not in sections  # the forms are not a sweep of one quantity
    assert "two forms" not in dict(node_sections(NodeContext(catalog, "alg-grpo", load_grids=lambda: [],
                                                             load_value_searches=lambda _: [])))


# -- the grid itself, on the tiny model ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_forms(tmp_path_factory):
    """prelim.yaml with the random tiny model and a budget of seconds (two seeds, two steps of 2 x 2 episodes, four
    held-out problems), run by the sweep's driver (stages in this process) and exported as the lead ships it."""
    from lab.compare.cli import main

    tmp = tmp_path_factory.mktemp("prelim")
    data = _prelim(seeds=[0, 1], eval={"n": 4, "seed": 7})
    data["options"].update(model="tiny", steps=2, prompts_per_step=2, group_size=2, max_new_tokens_per_turn=8,
                           max_completion_tokens=16, sft_steps=1, sft_examples=8)
    path = tmp / "prelim.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    grid = Grid.load(str(path))
    with pytest.MonkeyPatch.context() as mp:
        calls = compare_stages_in_process(mp, lambda args: (args[0], Path(args[args.index("--dir") + 1]).name))
        assert sweeps.run_sweep(grid, tmp / "run", out=sys.stderr) == 0
        shipped = tmp / "results" / "prelim"
        out = run_main(main, ["export", str(path), "--dir", str(tmp / "run"), "--to", str(shipped)],
                       prog="python -m lab.compare")
    assert out.returncode == 0, out.stderr
    return grid, tmp / "run", shipped, calls


def test_the_tiny_prelim_grid_runs_each_form_from_its_own_warm_starts_and_exports(tiny_forms):
    grid, run, shipped, calls = tiny_forms
    assert calls == [(stage, impl) for impl in FORMS
                     for stage in ("_warm", "_warmeval", "_warm", "_warmeval", "_cell", "_cell")]
    for impl, mode in zip(FORMS, ("direct", "tool")):
        point = sweeps.point_dir(run, impl)
        assert json.loads((point.warm("calculator") / "done.json").read_text())["model"] == "tiny"
        for seed in (0, 1):
            record = point.result(impl, seed)
            assert record["config"]["env_options"]["mode"] == mode and record["complete"]
            assert record["warm_start"] == ("calculator" if seed == 0 else "calculator@w1")
    assert sorted(p.name for p in (shipped / "points").iterdir()) == sorted(FORMS)
    found = forms.load_forms(shipped, shipped=True)
    assert [f.implementation for f in found.measured] == list(FORMS)
    for form in found.forms:
        assert [s["seed"] for s in form.seeds] == [0, 1] and [len(s["curve"]) for s in form.seeds] == [2, 2]
        assert [step for step, _ in form.mean] == [1, 2]
        assert form.before["seeds"] == 2 and form.after["seeds"] == 2 and form.difference is not None
        assert 0 <= form.before["low"] <= form.before["heldout"] <= form.before["high"] <= 1
        assert form.settings["model"] == "tiny" and form.settings["episodes"] == 8
    [block] = forms_blocks("prelim-mdp", [(grid, found)])
    assert [p.kind for p in block.parts] == ["markdown", "chart", "table", "markdown", "caption", "caption", "markdown"]
    assert "shipped results" in block.parts[4].body and "Not measured yet" not in block.parts[4].body


def test_the_prelim_node_page_shows_both_forms_curves_from_shipped_results(tiny_forms, tmp_path, monkeypatch):
    from test_node_proxies import _node_page

    _, _, shipped, _ = tiny_forms
    results = tmp_path / "results"
    shutil.copytree(shipped, results / "prelim")
    monkeypatch.setattr(sweeps, "RESULTS", results)
    at = _node_page("prelim-reward-function")
    [chart] = [c for c in at.get("vega_lite_chart") if "datum.kind == 'mean'" in c.proto.spec]
    assert "one-step MDP" in str(chart.proto) and "multi-turn POMDP" in str(chart.proto)  # spec or its datasets
    text = "\n".join(str(e.value) for kind in ("markdown", "caption") for e in getattr(at, kind))
    assert "**One task, two forms:" in text and "`CalculatorEnv.score`" in text and "Not run yet" not in text
    [frame] = [d.value for d in at.dataframe if "held-out after RL %" in d.value.columns]
    assert list(frame["form"]) == ["one-step MDP", "multi-turn POMDP"]


def test_the_prelim_node_page_says_not_run_yet(tmp_path, monkeypatch):
    from test_node_proxies import _node_page

    _not_run(monkeypatch, tmp_path)
    at = _node_page("prelim-mdp")
    info = "\n".join(str(e.value) for e in at.info)
    assert "**Not run yet.**" in info and "python -m lab.compare run prelim" in info
    assert not [c for c in at.get("vega_lite_chart") if "datum.kind == 'mean'" in c.proto.spec]

"""Issue 65: the GUI, social, RL-free multi-agent and closed-source search nodes each have a row of
``train --list --json``. Three of those rows train nothing (an RL-free reference point: the untrained model,
prompted, scored on the held-out problems its RL rows are scored on): the row type refuses a row that is both or
neither, the list says so and gives the command, the trainer refuses them naming it, the Lab does not offer
them, the node page's "Run this" shows the command instead of opening the Lab, and each command runs."""
from __future__ import annotations

import importlib
import json
import shlex

import pytest

from reference_impls import train
from reference_impls.implementations import Implementation

#: row id -> (the nodes it must serve, whether it trains)
ROWS = {
    "gui-grpo": ({"gui"}, True),
    "gui-prompted": ({"gui-rl-free"}, False),
    "negotiate-grpo": ({"other-social"}, True),
    "solver-verifier-prompted": ({"mas-rl-free"}, False),
    "search-prompted": ({"search-closed-source"}, False),
}


@pytest.fixture(scope="module")
def listed(train_list_json):
    return {row["id"]: row for row in json.loads(train_list_json)}


@pytest.mark.parametrize("impl_id", sorted(ROWS))
def test_the_row_is_listed_with_its_nodes_and_whether_it_trains(listed, taxonomy, impl_id):
    nodes, trains = ROWS[impl_id]
    row = listed[impl_id]
    assert nodes <= set(row["nodes"]) and all(n in taxonomy for n in row["nodes"])
    assert row["trains"] is trains
    if trains:
        assert row["algorithm"] == "grpo" and "command" not in row
    else:
        assert row["algorithm"] is None and row["command"].startswith("python -m reference_impls.measure.")
        assert f"--env {row['environment']}" in row["command"] or row["environment"] == "solver-verifier"
        assert row["env_options"]  # the environment's options it is scored under


def test_every_row_of_the_list_says_whether_it_trains(listed):
    assert all(isinstance(row["trains"], bool) for row in listed.values())
    assert all(row["algorithm"] for row in listed.values() if row["trains"])


def test_a_row_is_either_a_training_run_or_a_command():
    with pytest.raises(ValueError, match="'both'.*algo must be ''"):
        Implementation("both", "t", "grpo", "gui", "s", evaluation=("reference_impls.measure.evaluate",))
    with pytest.raises(ValueError, match="'neither'.*give an algo"):
        Implementation("neither", "t", "", "gui", "s")
    row = Implementation("cmd", "t", "", "gui", "s", evaluation=("reference_impls.measure.evaluate", "--env", "gui",
                                                                 "--note", "two words"))
    assert not row.trains and row.command == "python -m reference_impls.measure.evaluate --env gui --note 'two words'"
    with pytest.raises(ValueError, match="does not train; run it with: python -m"):
        row.config()


@pytest.mark.parametrize("impl_id", [i for i, (_, trains) in ROWS.items() if not trains])
def test_the_trainer_refuses_a_row_that_trains_nothing_and_names_its_command(tmp_path, capsys, impl_id):
    from reference_impls.registry import by_id

    assert train.main(["--impl", impl_id, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert f"--impl {impl_id}: this row trains nothing" in err and by_id()[impl_id].command in err
    assert not (tmp_path / "x").exists()


def test_the_lab_offers_only_rows_that_train():
    from app.presentation.lab import lab_link
    from lab import catalog

    offered = {i.id for i in catalog.available()}
    assert "gui-grpo" in offered and not {"gui-prompted", "solver-verifier-prompted", "search-prompted"} & offered
    assert lab_link("gui-rl-free") is None  # its only row trains nothing
    assert lab_link("gui").query["impl"] == "gui-grpo"


def test_the_node_page_shows_the_command_instead_of_a_lab_link(catalog):
    from app.presentation.node_sections import NodeContext, node_sections

    def parts(node):
        sections = dict(node_sections(NodeContext(catalog, node, load_grids=lambda: [])))
        return [p for block in sections["implementations"] for p in block.parts]

    rl_free = parts("mas-rl-free")
    assert not [p for p in rl_free if p.kind == "link"]
    [run] = [p for p in rl_free if p.kind == "markdown" and "Run this (no training)" in p.body]
    assert "python -m reference_impls.measure.mas_pipeline --model smollm2-135m-instruct" in run.body
    assert [p.label for p in parts("other-social") if p.kind == "link"] == ["Run this"]


def test_each_command_parses_with_its_own_module():
    from reference_impls.registry import implementations

    commands = [row for row in implementations() if not row.trains]
    assert {row.id for row in commands} >= {i for i, (_, trains) in ROWS.items() if not trains}
    for row in commands:
        module = importlib.import_module(row.evaluation[0])
        args = module.build_parser(list(row.evaluation[1:])).parse_args(list(row.evaluation[1:]))
        assert args.model == "smollm2-135m-instruct" and args.json and args.n == 100, row.id
        assert getattr(args, "env", row.env) == row.env, row.id
        assert shlex.split(row.command)[2:] == list(row.evaluation)


def test_the_gui_command_runs_on_the_tiny_model(capsys):
    """The gui-prompted command, on the tiny model and two problems: it prints the evaluator's JSON."""
    from reference_impls.measure import evaluate
    from reference_impls.registry import by_id

    argv = [a for a in by_id()["gui-prompted"].evaluation[1:]]
    argv[argv.index("--model") + 1], argv[argv.index("--n") + 1] = "tiny", "2"
    argv[argv.index("--max-completion-tokens") + 1] = "64"
    assert evaluate.main(argv) in (0, None)
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == 2 and 0.0 <= result["accuracy"] <= 1.0


def test_the_rl_free_node_page_renders_the_command():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from app import routes

    root = Path(__file__).resolve().parents[2]
    at = AppTest.from_file(str(root / "app" / "streamlit_app.py"), default_timeout=180)
    at.query_params["node"] = "gui-rl-free"
    at.switch_page(routes.PAGES["taxonomy"].script)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    text = "\n".join(str(e.value) for e in at.markdown)
    assert "Run this (no training)" in text and "reference_impls.measure.evaluate" in text and "--env gui" in text
    assert not [e for e in at.get("page_link") if e.proto.label == "Run this"]


def test_the_document_gives_each_rows_command_as_the_row_declares_it():
    import re
    from pathlib import Path

    from reference_impls.registry import implementations

    text = (Path(__file__).resolve().parents[2] / "docs" / "env_gui_social.md").read_text()
    joined = re.sub(r"\s*\\\n\s*", " ", text)  # shell line continuations
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in joined.splitlines()]
    for row in implementations():
        if not row.trains:
            assert row.command in lines, row.id

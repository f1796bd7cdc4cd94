"""The Lab and Runs pages under AppTest, with real training processes (tiny model)."""
import time

import pytest

from test_app_pages import open_page, texts

from lab.runs import RunManager


@pytest.fixture(autouse=True)
def private_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path / "data"))
    yield
    manager = RunManager(tmp_path / "data" / "runs")
    for run in manager.list():
        if run.status in ("running", "queued"):
            manager.delete(run.id)


def _set(at, name, value):
    widget = next(w for w in at.number_input if w.label == name)
    widget.set_value(value)


def test_node_page_offers_run_this():
    at = open_page("taxonomy", node="alg-dapo")
    link = [e for e in at.get("page_link") if e.proto.label == "Run this"]
    assert link and "impl=calculator-dapo" in link[0].proto.query_string


def test_node_without_implementation_has_no_run_this(node_without_implementation):
    at = open_page("taxonomy", node=node_without_implementation)
    assert not [e for e in at.get("page_link") if e.proto.label == "Run this"]


def test_invalid_hyperparameters_are_refused_at_the_field():
    at = open_page("lab", impl="calculator-grpo", preset="quick")
    _set(at, "lr", -1.0)
    _set(at, "group_size", 1)
    at.button[0].click().run()
    errors = [e.value for e in at.error]
    assert any("lr" in e or "at least" in e for e in errors)
    assert any("at least 2 samples" in e for e in errors)
    assert RunManager().list() == []  # no process was started


def test_lab_launches_a_tiny_run_that_finishes_and_shows_its_curve():
    at = open_page("lab", impl="calculator-grpo", preset="quick")
    _set(at, "steps", 3)
    _set(at, "sft_steps", 2)  # the warm start runs first, as its own visible phase
    at.button[0].click().run()
    assert not at.exception
    runs = RunManager().list()
    assert len(runs) == 1
    run_id = runs[0].id
    assert at.query_params["run"] == [run_id] or at.query_params["run"] == run_id
    deadline = time.time() + 240
    while time.time() < deadline:
        at.run()
        if f"status **finished**" in texts(at):
            break
        time.sleep(2)
    text = texts(at)
    assert "status **finished**" in text, text[-2000:]
    assert "step 3/3" in " ".join(p.proto.text for p in at.get("progress"))
    assert at.get("arrow_vega_lite_chart") or at.get("vega_lite_chart"), "the curves are shown"
    assert any("reward" in e.value for e in at.markdown)
    assert any("warm start: SFT loss" in e.value for e in at.markdown)
    assert runs[0].config["sft_steps"] == 2
    assert at.get("latex"), "the loss equation is shown beside the curves"
    # training health: the tiny model never answers right, so every group has equal rewards (no signal)
    assert any("most groups carry no advantage" in w.value and "Try:" in w.value for w in at.warning)
    runs_page = open_page("runs")
    table = runs_page.dataframe[0].value
    assert run_id in table["id"].tolist()
    assert table[["implementation", "preset", "steps"]].values.tolist() == [["calculator-grpo", "quick", "3 / 3"]]
    # export for a cluster: a zip of the TRL folder for this finished GRPO run
    next(s for s in runs_page.selectbox if s.label == "Run to export").set_value(run_id).run()
    assert not runs_page.exception
    assert [b for b in runs_page.get("download_button") if "TRL export" in b.proto.label]


def test_runs_page_without_runs_links_to_the_lab():
    from app.state import run_manager

    run_manager.clear()  # the cached manager of an earlier test reads that test's data folder
    at = open_page("runs")
    assert not at.exception and any("No runs yet" in e.value for e in at.info)
    assert [e for e in at.get("page_link") if e.proto.label == "Open the Lab"]


def test_node_without_implementation_says_why(monkeypatch):
    """Every algorithm node runs now (issues 18/19); the page's 'why not' path is kept for nodes added later."""
    import dataclasses

    from reference_impls import implementations, registry

    stripped = tuple(dataclasses.replace(i, nodes=tuple(n for n in i.nodes if n != "alg-lcpo"))
                     for i in registry.implementations())
    monkeypatch.setattr(registry, "implementations", lambda: stripped)
    monkeypatch.setattr(implementations, "NOT_IMPLEMENTED", {"alg-lcpo": "Its loss is not public yet."})
    at = open_page("taxonomy", node="alg-lcpo")
    assert any("No reference implementation yet" in i.value and "Its loss is not public yet." in i.value
               for i in at.info)
    assert not [e for e in at.get("page_link") if e.proto.label == "Run this"]
    monkeypatch.undo()
    at = open_page("taxonomy", node="alg-lcpo")
    assert not [i for i in at.info if "No reference implementation yet" in i.value]
    assert [e for e in at.get("page_link") if e.proto.label == "Run this"]


def test_variant_node_shows_what_it_changes_and_its_equation():
    at = open_page("taxonomy", node="alg-simpo")
    assert any("What it changes and why" in m.value for m in at.markdown)
    assert at.get("latex") and [e for e in at.get("page_link") if e.proto.label == "Run this"]


def test_health_lines_escape_what_a_run_folder_says():
    from app.presentation.lab import health_lines

    lines = health_lines([{"step": 3, "title": "entropy collapsed", "seen": "0.01 nats", "means": "m",
                           "action": "a [x](javascript:alert(1))"}, "not a row"])
    assert len(lines) == 1 and lines[0].startswith("**Step 3: entropy collapsed**")
    assert "](javascript" not in lines[0]

"""Issue 22: capability/task nodes without an environment of their own name their closest runnable proxy, or
say why there is none; the node page shows it (app.presentation.node_sections.node_proxy_note)."""
import re

from app import routes
from app.presentation.common import md_escape
from app.presentation.node_sections import PASSK_NODE, node_proxy_note, passk_note
from lab import catalog as lab
from lab.compare.board import PASSK_LEGACY
from reference_impls.implementations import NODE_PROXIES
from reference_impls.registry import by_id

#: the multi-agent and perception nodes of issue 22 (multi-agent, active perception, vision/audio)
ISSUE_22_NODES = ("multi-agent", "mas-rl-based", "mas-rl-free", "other-social", "other-general-qa", "perception",
                  "perception-tool-driven", "perception-grounding-driven", "perception-passive-to-active", "vision",
                  "vision-image", "vision-video", "vision-3d", "perception-generation-driven", "perception-audio")


def test_proxies_name_real_nodes_without_their_own_implementation(taxonomy):
    for node_id, (impl_id, reason) in NODE_PROXIES.items():
        assert node_id in taxonomy and taxonomy[node_id].dimension in ("capability", "task"), node_id
        assert lab.for_node(node_id) == [], f"{node_id} runs itself; its proxy entry would hide nothing"
        assert impl_id is None or impl_id in by_id(), node_id
        assert len(reason) > 40, node_id


def test_every_issue_22_node_runs_or_says_what_stands_in():
    for node_id in ISSUE_22_NODES:
        assert lab.for_node(node_id) or node_id in NODE_PROXIES, node_id
    runs = {n for n in ISSUE_22_NODES if lab.for_node(n)}
    # issue 65: the vision and audio nodes run their text proxies (the perception-proxy environment); general-qa,
    # negotiate and the prompted solver-verifier pipeline run theirs
    assert runs >= {"multi-agent", "mas-rl-based", "mas-rl-free", "other-social", "other-general-qa", "perception",
                    "perception-tool-driven", "perception-grounding-driven", "perception-passive-to-active", "vision",
                    "vision-image", "vision-video", "vision-3d", "perception-generation-driven", "perception-audio"}
    unrunnable = {n for n, (impl, _) in NODE_PROXIES.items() if impl is None}
    assert unrunnable == set()


#: issue 65 gave the last proxied nodes environments of their own, so NODE_PROXIES is empty; the note's two forms
#: are checked on a stand-in entry for a node without an implementation (the ``node_without_implementation``
#: fixture): a proxy, then no runnable proxy
PROXY = ("zoom-grpo", "A stand-in entry of this test: the zoom environment's character grids, as the vision nodes "
                      "had before issue 65.")
NO_PROXY = (None, "No runnable proxy yet: nothing here takes this node's input, and no environment stands in.")


def test_node_page_note_links_the_proxy_or_says_none(monkeypatch, node_without_implementation):
    proxied = node_without_implementation
    assert node_proxy_note(proxied) is None  # not listed: no note
    monkeypatch.setitem(NODE_PROXIES, proxied, PROXY)
    impl_id, reason = PROXY
    note = node_proxy_note(proxied)
    assert note.heading == f"Closest runnable proxy: {by_id()[impl_id].title}."
    assert note.link == routes.lab(impl=impl_id, preset="quick") and note.text == reason
    monkeypatch.setitem(NODE_PROXIES, proxied, NO_PROXY)
    none = node_proxy_note(proxied)
    assert none.heading == "No runnable proxy yet." and none.link is None and none.text == NO_PROXY[1]
    monkeypatch.undo()
    assert node_proxy_note("mas-rl-free") is None  # it runs: the prompted pipeline (issue 65) is its own row
    assert node_proxy_note("alg-grpo") is None
    assert node_proxy_note("perception") is None  # it runs: its own implementation is shown


def test_text_proxy_is_said_plainly_on_the_perception_node():
    impl = lab.for_node("perception")[0]
    assert impl.id == "zoom-grpo" and "TEXT PROXY" in impl.changes


def _node_page(node_id: str):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"), default_timeout=180)
    at.query_params["node"] = node_id
    at.switch_page(routes.PAGES["taxonomy"].script)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_node_pages_show_the_proxy_note_and_its_link(monkeypatch, node_without_implementation):
    proxied = node_without_implementation
    monkeypatch.setitem(NODE_PROXIES, proxied, PROXY)
    impl_id, reason = PROXY
    at = _node_page(proxied)
    info = "\n".join(str(e.value) for e in at.info)
    assert "Closest runnable proxy" in info and md_escape(reason) in info
    assert any(e.proto.label == "Run the proxy" and f"impl={impl_id}" in e.proto.query_string
               for e in at.get("page_link"))
    monkeypatch.setitem(NODE_PROXIES, proxied, NO_PROXY)
    at = _node_page(proxied)
    info = "\n".join(str(e.value) for e in at.info)
    assert "No runnable proxy yet." in info and not any(e.proto.label == "Run the proxy" for e in at.get("page_link"))


def test_planning_external_guide_page_shows_a_value_search_record(tmp_path, monkeypatch):
    """Issue 20: a learned-value search comparison shipped in results/value-search/ is shown on the node it
    measures (here a record written the way `value_search export` writes one, into a stand-in folder)."""
    import json

    from app.presentation.node_sections import value_search_verdicts
    from lab import value_search_results
    from reference_impls.stats import ONE_SEED

    method = {"success": {"mean": 0.5, "low": 0.4, "high": 0.6}, "mean_calls": 20.0, "max_calls": 32,
              "per_problem": [1, 0]}
    diff = {"difference": {"mean": 0.1, "low": -0.05, "high": 0.25}, "p_value": 0.2,
            "verdict": "no significant difference"}
    record = {"node": "planning-external-guide", "env": "sokoban", "model": "warm/sokoban", "value": {"hidden": 576},
              "budgets": [{"budget": b, "n": 2, "methods": {m: method for m in ("policy", "heuristic", "learned")},
                           "plan_length": {"heuristic": 9.0, "learned": 10.0},
                           "learned_vs_heuristic": diff, "learned_vs_policy": diff} for b in (16, 64)]}
    (tmp_path / "sokoban.json").write_text(json.dumps(record))
    monkeypatch.setattr(value_search_results, "SHIPPED", tmp_path)
    at = _node_page("planning-external-guide")
    [intro] = [str(e.value) for e in at.markdown if "warm/sokoban" in str(e.value)]  # the record's model ...
    assert "sokoban" in intro.replace("warm/sokoban", "")  # ... and environment
    [frame] = [f.value for f in at.dataframe if "budget (calls)" in f.value.columns]
    assert sorted(set(frame["budget (calls)"])) == [16, 64] and len(frame) == 6
    captions = [str(e.value) for e in at.caption]
    # every puzzle's result is in the record: the page shows the comparisons recomputed, a line per budget, each of
    # one value fit (one-seed wording: an observation, no verdict)
    expected = value_search_verdicts(record)
    assert len(expected) == 2 and [line for line in captions if line in expected] == expected
    assert all(line.count(ONE_SEED) == 2 and "better" not in line for line in expected)  # vs heuristic and policy
    # another node shows none
    at = _node_page("planning-internal-driver")
    assert not [f for f in at.dataframe if "budget (calls)" in f.value.columns]


def test_mechanistic_debate_note_points_to_pass_at_k():
    """Issue 22/23: the mechanistic-debate node links to the comparison's pass@k curves where a grid has them,
    and says how to measure them where none has."""
    from pathlib import Path

    from lab.compare.results import GridResults

    def grid(name, passk):  # a grid with pass@k records and no cells
        return GridResults(name, Path(name), {"name": name}, [], passk, shipped=False)

    none = passk_note([grid("core", {})])
    assert "no curves yet" in none.heading and "lab.compare passk" in none.text and none.link == routes.compare()
    grids = [grid("core", {}), grid("my_grid", {"search": {}, "calculator": {}})]
    found = passk_note(grids)
    # the grid (a user's folder, by its key), on its first environment's tab
    assert found.link == routes.compare(grid="yours:my_grid", env="calculator")
    assert found.link_label == "See the pass@k curves"
    assert r"grid *my\_grid*: calculator, search" in found.text
    assert "What they show" not in found.text  # records without per-problem counts: curves only, no reading
    counts = {"samples": 64, "curves": {"warm start": {"correct_counts": [8] * 20 + [1] * 20},
                                        "RL": {"correct_counts": [32] * 20 + [0] * 20}}}
    legacy = grid("core", {"calculator": counts})
    read = passk_note([legacy])
    # the note shows the grid's own reading (Markdown-escaped); a record without a ``method`` field predates issue
    # 41, so its reading says first why it is not a verdict; pass@1 of the counts: 7% (8 and 1 of 64) -> 25%
    reading = legacy.summary().passk_readings["calculator"]
    assert f"What they show: calculator: {md_escape(reading)}" in read.text
    assert reading.startswith(PASSK_LEGACY[0].upper() + PASSK_LEGACY[1:])
    assert re.search(r"RL against the warm start: pass@1 (\d+)% -> (\d+)%", reading).groups() == ("7", "25")
    assert "Sharpened and narrowed" in read.text


def test_mechanistic_debate_page_shows_the_pass_at_k_note():
    from lab.compare.results import available_results

    at = _node_page(PASSK_NODE)
    info = "\n".join(str(e.value) for e in at.info)
    expected = passk_note(available_results())
    assert expected.heading in info
    assert any(e.proto.label == expected.link_label for e in at.get("page_link"))
    at = _node_page("alg-grpo")
    assert "pass@k before and after RL" not in "\n".join(str(e.value) for e in at.info)

"""Issue 61 on the explorer: each algorithm's node page has a section "Does it do what the paper says?" (the claim,
its figure over steps when records exist, the verdict and settings; "not measured yet" with the command
otherwise), and the Algorithms page a column with each verdict. The logic is checked without Streamlit
(app.presentation.claims, the node sections), the page once under AppTest."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from app.presentation.common import md_escape
from app.presentation.claims import SECTION_TITLE, claim_parts, figure_spec, node_claims, verdict_column
from app.presentation.node_sections import NodeContext, node_sections
from lab.compare.claim_results import claim_reports
from lab.compare.claims import ClaimsSpec
from lab.compare.results import claims_report


def _records(root, claim_id, metric, with_values, without_values):
    for seed, (w, wo) in enumerate(zip(with_values, without_values)):
        for arm, last in (("with", w), ("without", wo)):
            path = root / claim_id / arm / f"s{seed}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({
                "implementation": "calculator-dapo", "seed": seed, "claim": claim_id, "arm": arm,
                "budget": {"mu": 16}, "complete": True, "base_model": "smollm2-135m-instruct",
                "config": {"steps": 2, "prompts_per_step": 4, "group_size": 8, "lr": 3e-5},
                "metric_rows": [{"step": 1, "phase": "policy", metric: 1.0},
                                {"step": 2, "phase": "policy", metric: last}]}))


@pytest.fixture
def recorded(tmp_path):
    """Hand-made records of DAPO's clip-higher claim (five seed pairs), none of the others."""
    _records(tmp_path, "dapo-clip-higher", "entropy", [0.50, 0.52, 0.49, 0.51, 0.50], [0.30, 0.31, 0.28, 0.33, 0.29])
    spec = ClaimsSpec.load()
    return spec, claim_reports(spec, tmp_path)


def test_a_recorded_claim_shows_its_figure_verdict_and_settings(recorded):
    found = node_claims({"calculator-dapo"}, recorded)
    assert [c.id for c, _, _ in found] == ["dapo-clip-higher", "dapo-clip-higher-mu2", "dapo-dynamic-sampling",
                                           "dapo-overlong-shaping"]
    claim, line, figure = found[0]
    kinds = [k for k, _ in claim_parts(claim, line, figure)]
    assert kinds[:3] == ["markdown", "caption", "chart"]
    assert md_escape("ablation: epsilon_high 0.2") in claim_parts(claim, line, figure)[1][1]
    text = claim_parts(claim, line, figure)[3][1]
    assert text.startswith("**Verdict: reproduced**") and "5 seed pairs" in text and "95% interval" in text
    assert md_escape("smollm2-135m-instruct") + ", 2 steps of 4 x 8" in text and "16 updates per batch" in text
    spec = figure_spec(claim, figure)
    layers = [layer["transform"][0]["filter"] for layer in spec["layer"]]
    assert layers == ["datum.kind == 'seed'", "datum.kind == 'mean'"]
    assert [layer["mark"]["strokeWidth"] for layer in spec["layer"]] == [1, 3]  # each seed thin, the mean thick
    values = spec["data"]["values"]
    assert len([v for v in values if v["kind"] == "seed"]) == 20 and len([v for v in values if v["kind"] == "mean"]) == 4


def test_a_claim_not_measured_says_so_with_the_command(recorded):
    claim, line, figure = node_claims({"calculator-dapo"}, recorded)[2]
    parts = claim_parts(claim, line, figure)
    assert "chart" not in [k for k, _ in parts] and parts[2][0] == "note"
    assert parts[2][1] == ("**Not measured yet.** Run `python -m lab.compare claims run --claim dapo-dynamic-sampling"
                           "   # then: python -m lab.compare claims --json`.")
    rloo = node_claims({"calculator-rloo"}, recorded)[0]
    texts = [text for _, text in claim_parts(*rloo)]  # it has a switch now (issue 61)
    assert any(t.startswith("**Not measured yet.**") for t in texts)
    assert not any(t.startswith("**No ablation switch yet.**") for t in texts)


def test_a_claim_without_a_switch_says_so(tmp_path):
    import yaml

    from lab.compare.claims import CLAIMS_FILE

    data = yaml.safe_load(CLAIMS_FILE.read_text())
    data["claims"] = [{k: c[k] for k in ("id", "implementation", "claim", "paper_ref", "metric", "direction")}
                      | {"no_switch": "no option removes only this mechanism (test)"}
                      if c["id"] == "rloo-leave-one-out" else c for c in data["claims"]]
    spec = ClaimsSpec.from_dict(data, "claims (test)")
    rloo = node_claims({"calculator-rloo"}, (spec, claim_reports(spec, tmp_path)))[0]
    assert claim_parts(*rloo)[-1][1].startswith("**No ablation switch yet.**")


def test_the_node_section_and_the_algorithms_column(catalog, recorded, monkeypatch):
    monkeypatch.setattr("lab.compare.results.claims_report", lambda root=None: recorded)
    sections = dict(node_sections(NodeContext(catalog, "alg-dapo", load_grids=list)))
    blocks = sections["claims"]
    assert blocks[0].parts[0].body == f"#### {SECTION_TITLE}" and len(blocks) == 5 and all(b.boxed for b in blocks[1:])
    assert "claims" not in dict(node_sections(NodeContext(catalog, "alg-grpo", load_grids=list)))  # no claim of its own
    column = verdict_column(["alg-dapo", "alg-grpo", None], recorded)
    assert column[0].startswith("dapo-clip-higher: reproduced; dapo-clip-higher-mu2: not run") and column[1:] == ["", ""]


def test_the_shipped_claims_are_read_without_records(tmp_path):
    spec, reports = claims_report(tmp_path)
    assert set(reports) == {c.id for c in spec.claims}
    assert {r["line"]["verdict"] for r in reports.values()} == {"not run"}  # every shipped claim has a switch


def test_the_node_pages_show_the_section():
    """The five node pages issue 61 names, rendered in one app session: the section's title and, with no shipped
    records, each claim says it is not measured yet (or has no switch yet)."""
    from pathlib import Path

    from app import routes

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"), default_timeout=300)
    at.switch_page(routes.PAGES["taxonomy"].script)
    for node, claim in (("alg-dapo", "dapo-clip-higher"), ("alg-dr-grpo", "dr-grpo-length"),
                        ("alg-gspo", "gspo-sequence-clip"), ("alg-reinforce", "rloo-leave-one-out"),
                        ("alg-ppo", "ppo-critic")):
        at.query_params["node"] = node
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        shown = "\n".join(str(e.value) for e in [*at.markdown, *at.info, *at.caption])
        assert f"#### {SECTION_TITLE}" in shown, node
        assert ("Not measured yet" in shown and f"--claim {claim}" in shown) or (
            "No ablation switch yet" in shown), node

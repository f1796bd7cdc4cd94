"""Issue 65: the vision, generation-driven and audio perception nodes and the domain-specific environment nodes are
served by rows of ``train --list --json`` (where the Lab and the node pages read them), each by the row built for
it, and the text proxies say on the row that they are text proxies."""
import json

import pytest


#: node -> the rows that must serve it
SERVED_BY = {
    "vision": {"perception-proxy-grpo"},
    "vision-image": {"perception-proxy-image-grpo"},
    "vision-video": {"perception-proxy-video-grpo"},
    "vision-3d": {"perception-proxy-3d-grpo"},
    "perception-generation-driven": {"perception-proxy-sketch-grpo"},
    "perception-audio": {"perception-proxy-audio-grpo"},
    "env-mle": {"mle-grpo"},
    "env-cybersecurity": {"ctf-grpo"},
    "env-domain-specific": {"science-grpo", "biomed-grpo", "mle-grpo", "ctf-grpo"},
}


@pytest.fixture(scope="module")
def listed(train_list_json):
    return json.loads(train_list_json)


@pytest.mark.parametrize("node", sorted(SERVED_BY))
def test_the_node_is_served_by_its_rows(listed, taxonomy, node):
    assert node in taxonomy
    rows = {row["id"] for row in listed if node in row["nodes"]}
    assert SERVED_BY[node] <= rows, (node, rows)


def test_the_perception_rows_say_they_are_text_proxies(listed):
    from reference_impls.registry import by_id

    rows = [row for row in listed if row["environment"] == "perception-proxy"]
    assert len(rows) == 6
    for row in rows:
        assert row["summary"].startswith("A text proxy of "), row["id"]
        assert row["title"].split(":")[0].endswith(" as text"), row["id"]
        assert "A TEXT PROXY, not " in by_id()[row["id"]].changes, row["id"]


def test_the_sandboxed_rows_run_on_sandboxed_environments(listed):
    from reference_impls.envs import get_env

    for impl_id in ("mle-grpo", "ctf-grpo"):
        [row] = [row for row in listed if row["id"] == impl_id]
        assert get_env(row["environment"]).uses_sandbox

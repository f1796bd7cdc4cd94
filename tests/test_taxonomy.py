import re

import pytest

from taxonomy import DataError, Taxonomy


def test_all_nodes_with_descriptions(taxonomy):
    assert len(taxonomy) == 140
    for node in taxonomy:
        n_words = len(node.description.split())
        n_sentences = len(re.findall(r"[.?!](\s|$)", node.description))
        assert 25 <= n_words <= 130, (node.id, n_words)
        assert 2 <= n_sentences <= 5, (node.id, n_sentences)
    descriptions = [n.description for n in taxonomy]
    assert len(set(descriptions)) == len(descriptions)


def test_dimensions_match_survey(taxonomy):
    counts = {d: len(taxonomy.by_dimension(d)) for d in ("algorithm", "task", "capability", "foundation", "environment", "framework")}
    assert counts == {"algorithm": 42, "task": 33, "capability": 27, "foundation": 21, "environment": 13, "framework": 4}


def test_ancestors_descendants_path(taxonomy):
    assert taxonomy.ancestors("alg-dapo") == ["alg-grpo-family", "rl-algorithms", "preliminaries"]
    assert taxonomy.path("search-external-web") == ["tasks", "search-research", "search-open-source", "search-external-web"]
    assert set(taxonomy.descendants("code")) == {"code-generation", "code-refinement", "code-swe"}
    assert taxonomy.top_level("memory-token-level") == "capabilities"


def test_suggest(taxonomy):
    assert "memory" in taxonomy.suggest("memroy")


def _write_nodes(path, nodes):
    lines = ["nodes:"]
    for n in nodes:
        lines.append(f"  - id: {n[0]}\n    name: {n[0]}\n    parent: {n[1] or 'null'}\n    dimension: {n[2]}\n    survey_section: '1'")
    path.write_text("\n".join(lines) + "\n")


def test_cycle_is_refused(tmp_path):
    nodes, desc = tmp_path / "nodes.yaml", tmp_path / "descriptions.yaml"
    _write_nodes(nodes, [("a", "c", "task"), ("b", "a", "task"), ("c", "b", "task")])
    desc.write_text("a: A thing. More.\nb: B thing. More.\nc: C thing. More.\n")
    with pytest.raises(DataError) as e:
        Taxonomy.load(nodes, desc)
    assert "nodes.yaml" in str(e.value) and "cycle" in str(e.value) and "field 'parent'" in str(e.value)


@pytest.mark.parametrize(
    "nodes,desc,expect",
    [
        ([("a", None, "task"), ("a", None, "task")], "a: A. B.\n", "duplicate node id"),
        ([("a", "zz", "task")], "a: A. B.\n", "parent 'zz' is not a node"),
        ([("a", None, "colour")], "a: A. B.\n", "field 'dimension'"),
        ([("a", None, "task")], "b: B. C.\n", "missing description"),
    ],
)
def test_bad_taxonomy_named(tmp_path, nodes, desc, expect):
    n, d = tmp_path / "nodes.yaml", tmp_path / "descriptions.yaml"
    _write_nodes(n, nodes)
    d.write_text(desc)
    with pytest.raises(DataError) as e:
        Taxonomy.load(n, d)
    assert expect in str(e.value)
    assert "node 'a'" in str(e.value)


def test_graph_queries(catalog):
    g = catalog.graph
    direct = g.works_of("code", include_descendants=False)
    deep = g.works_of("code", include_descendants=True)
    assert set(direct) < set(deep)
    assert "search-r1" in g.works_of("search-research")
    assert "search-external-web" in g.nodes_of("search-r1")
    assert "tasks" in g.nodes_of("search-r1", expand=True)
    assert "GRPO" in g.algorithms_of("deepseek-r1")
    assert "deepseek-r1" in g.works_using("GRPO")
    related = g.related_works("search-r1")
    assert related and all(count >= 1 for _, count in related)
    assert related == sorted(related, key=lambda kv: (-kv[1], kv[0]))


def test_cooccurrence_counts_by_hand(catalog):
    m = catalog.graph.cooccurrence("capability", "task")
    assert list(m.index)[:3] == ["planning", "tool-use", "memory"]
    assert "search-research" in m.columns
    # recount one cell independently from the works' placements
    tax = catalog.taxonomy
    def under(work, head):
        return any(head in tax.path(n) for n in work.nodes)
    expected = sum(1 for w in catalog if under(w, "tool-use") and under(w, "search-research"))
    assert m.loc["tool-use", "search-research"] == expected
    assert m.values.sum() > 0

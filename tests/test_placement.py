"""Auto-placement with the real embedding model."""
import numpy as np
import pytest

from papers.placement import Placer, default_encoder, placement_text
from papers.schema import Work


@pytest.fixture(scope="module")
def placer(catalog):
    return Placer(catalog, default_encoder())


def test_new_works_land_in_the_right_place(placer, catalog):
    works = [
        Work(key="u1", title="Training a Lean 4 theorem prover with proof-assistant feedback as reward", origin="user"),
        Work(key="u2", title="A web browsing agent that learns when to issue search engine queries for multi-hop QA", origin="user"),
        Work(key="u3", title="Clicking through Android apps: an RL-trained phone GUI agent", origin="user"),
    ]
    expected = ["math", "search-research", "gui"]
    for suggestions, section in zip(placer.suggest(works), expected):
        assert len(suggestions) == 3
        confidences = [c for _, c in suggestions]
        assert confidences == sorted(confidences, reverse=True) and 0 < confidences[0] <= 1
        paths = [catalog.taxonomy.path(n) for n, _ in suggestions]
        assert any(section in p for p in paths), (section, suggestions)


def test_leave_one_out_accuracy_holds(placer, catalog):
    """A regression guard on a fixed sample (the full table is benchmarks/placement_eval.py)."""
    rows = list(range(0, len(placer.placed_keys), 7))
    p_desc, p_nb = placer.scores(placer.placed_vectors[rows], exclude=rows)
    p = placer.combine(p_desc, p_nb)
    tax = catalog.taxonomy
    hits = 0
    for i, r in zip(range(len(rows)), rows):
        work = catalog.get(placer.placed_keys[r])
        truth = {tax[n].dimension for n in work.nodes}
        agg = {}
        for j, nid in enumerate(placer.node_ids):
            agg[tax[nid].dimension] = agg.get(tax[nid].dimension, 0) + p[i, j]
        top3 = sorted(agg, key=agg.get, reverse=True)[:3]
        hits += bool(truth & set(top3))
    assert hits / len(rows) >= 0.9


def test_leave_one_out_hides_the_work(placer):
    v = placer.placed_vectors[:1]
    _, with_self = placer.scores(v)
    _, without_self = placer.scores(v, exclude=[0])
    assert not np.allclose(with_self, without_self)


def test_placement_text_reveals_no_nodes(catalog):
    w = catalog.get("search-r1")
    text = placement_text(w)
    for nid in w.nodes:
        assert catalog.taxonomy[nid].name not in text

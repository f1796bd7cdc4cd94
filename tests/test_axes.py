"""Inferred capability/task axes (issue 24): kept apart from the survey's placements, strictly read."""
import hashlib

import numpy as np
import pytest

from papers.axes import AXES, FIELDS, axes_of, infer_missing_axes, load_inferred, methods_missing_an_axis, write_inferred
from papers.placement import Placer
from taxonomy import DataError


def fake_encode(texts):
    """Deterministic unit vectors from the text (no model)."""
    out = []
    for t in texts:
        seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:4], "little")
        v = np.random.default_rng(seed).normal(size=16)
        out.append(v / np.linalg.norm(v))
    return np.array(out, dtype=np.float32)


@pytest.fixture(scope="module")
def inferred(catalog):
    return infer_missing_axes(catalog, Placer(catalog, fake_encode))


def test_every_method_gets_both_axes_and_only_the_missing_ones(catalog, inferred):
    missing = set(methods_missing_an_axis(catalog))
    assert {(r.key, r.axis) for r in inferred} == missing
    both = [w for w in catalog if w.kind == "method" and axes_of(catalog, w) == set(AXES)]
    assert len(both) == 41 and not any(r.key in {w.key for w in both} for r in inferred)
    for r in inferred:
        assert catalog.taxonomy[r.node].dimension == r.axis and r.status == "inferred"
        assert 0 <= r.confidence <= r.section_confidence <= 1 + 1e-9
    firsts = [r for r in inferred if r.rank == 1]
    assert len(firsts) == len(missing)


def test_the_catalog_keeps_the_survey_placements_only(catalog, inferred, tmp_path):
    before = {w.key: w.nodes for w in catalog}
    load_inferred(catalog, write_inferred(inferred, tmp_path / "inferred_axes.csv"))
    assert {w.key: w.nodes for w in catalog} == before
    from papers import Catalog

    fresh = Catalog.load()
    assert {w.key: w.nodes for w in fresh} == before


def test_round_trip(catalog, inferred, tmp_path):
    path = write_inferred(inferred, tmp_path / "inferred_axes.csv")
    back = load_inferred(catalog, path)
    assert [(r.key, r.axis, r.rank, r.node) for r in back] == [(r.key, r.axis, r.rank, r.node) for r in inferred]
    assert load_inferred(catalog, tmp_path / "absent.csv") == []


@pytest.mark.parametrize("change,field,why", [
    (lambda r: r.update(key="no-such-work"), "key", "unknown work"),
    (lambda r: r.update(node="grpo-no-such"), "node", "is not a"),
    (lambda r: r.update(status="survey"), "status", "must be 'inferred'"),
    (lambda r: r.update(confidence="1.5"), "confidence", "outside 0..1"),
])
def test_bad_rows_name_file_row_and_field(catalog, inferred, tmp_path, change, field, why):
    import csv

    path = write_inferred(inferred[:3], tmp_path / "inferred_axes.csv")
    rows = list(csv.DictReader(path.open()))
    change(rows[1])
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(DataError, match=rf"inferred_axes.csv, row 3, field '{field}': .*{why}"):
        load_inferred(catalog, path)


def test_an_axis_the_survey_gives_is_refused(catalog, inferred, tmp_path):
    import csv

    both = next(w for w in catalog if w.kind == "method" and axes_of(catalog, w) == set(AXES))
    node = next(n for n in both.nodes if catalog.taxonomy[n].dimension == "task")
    path = tmp_path / "inferred_axes.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(FIELDS)
        w.writerow([both.key, "task", 1, node, "0.5", node, "0.5", "inferred", "m"])
    with pytest.raises(DataError, match="already places"):
        load_inferred(catalog, path)


def test_the_shipped_file_if_present_reads_back(catalog):
    rows = load_inferred(catalog)
    if rows:
        assert {(r.key, r.axis) for r in rows} == set(methods_missing_an_axis(catalog))


def _open_work(key):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"), default_timeout=180)
    at.query_params["key"] = key
    at.switch_page("views/work.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_work_page_shows_an_inferred_axis_apart_and_marked(catalog):
    from papers.axes import by_work, load_inferred

    inferred = by_work(load_inferred(catalog))
    if not inferred:
        pytest.skip("no inferred_axes.csv shipped")
    key = next(k for k in sorted(inferred) if len(inferred[k]) == 1)
    axis, ranked = next(iter(inferred[key].items()))
    at = _open_work(key)
    assert any("not the survey's" in h.value for h in at.subheader)
    links = [e for e in at.get("page_link") if e.proto.query_string == f"node={ranked[0].node}"]
    assert links and axis.capitalize() in links[0].proto.label
    both = next(w.key for w in catalog if w.kind == "method" and axes_of(catalog, w) == set(AXES))
    at = _open_work(both)
    assert not any("not the survey's" in h.value for h in at.subheader)

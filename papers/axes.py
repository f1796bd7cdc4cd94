"""Both axes for every method: the capability or task a method most likely has, where the survey
places it on one axis only (issue 24), inferred by the placement model and kept apart from the survey.

The survey's heat map crosses capability and task, but of its methods only 41 are placed on both.
For every method missing one (or both) of the two axes, ``infer_missing_axes`` asks the placement
model (``papers.placement.Placer``: node descriptions + placed neighbours) for that axis alone: the
scores of that dimension's nodes, renormalised over the dimension, so a confidence reads "of this
axis, how much goes to this node". The method's own row is left out of the neighbour pool.

The result is **not** a survey fact: it is written to ``papers/data/inferred_axes.csv`` (every row
marked ``status=inferred``, with its confidence and the model that made it) by
``scripts/infer_axes.py``, and read by ``load_inferred``, never by ``Catalog.load``: ``Work.nodes``,
the heat map, the search filters and the exports still hold the survey's placements only.
``benchmarks/axis_inference_eval.py`` measures the model on the 41 methods placed on both axes
(hide one, predict it), in docs/axis_inference.md.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from taxonomy import DataError

AXES = ("capability", "task")
INFERRED_PATH = Path(__file__).resolve().parent / "data" / "inferred_axes.csv"
FIELDS = ("key", "axis", "rank", "node", "confidence", "section", "section_confidence", "status", "model")
MODEL = "papers.placement, restricted to the axis"


@dataclass(frozen=True)
class Inference:
    key: str
    axis: str                   # "capability" or "task"
    rank: int                   # 1 = the model's first choice
    node: str                   # a node of that axis
    confidence: float           # the node's share of the axis's score (0..1)
    section: str                # the node's section (first level under the axis root)
    section_confidence: float   # the section's share of the axis's score
    status: str = "inferred"
    model: str = MODEL


def section_of(taxonomy, node_id: str) -> str:
    path = taxonomy.path(node_id)
    return path[1] if len(path) > 1 else path[0]


def axes_of(catalog, work) -> set[str]:
    return {catalog.taxonomy[n].dimension for n in work.nodes} & set(AXES)


def methods_missing_an_axis(catalog) -> list[tuple[str, str]]:
    """``(key, axis)`` for every shipped method and each of the two axes the survey does not place it on."""
    return [(w.key, axis) for w in catalog if w.kind == "method" and w.origin == "survey"
            for axis in AXES if axis not in axes_of(catalog, w)]


def axis_scores(placer, rows_or_vectors: np.ndarray, axis: str, exclude=None) -> tuple[list[str], np.ndarray]:
    """(node ids of ``axis``, their scores renormalised over the axis), one row per vector."""
    p = placer.combine(*placer.scores(rows_or_vectors, exclude=exclude))
    tax = placer.catalog.taxonomy
    cols = [i for i, n in enumerate(placer.node_ids) if tax[n].dimension == axis]
    sub = p[:, cols]
    sub = sub / np.maximum(sub.sum(axis=1, keepdims=True), 1e-12)
    return [placer.node_ids[i] for i in cols], sub


def rank_axis(taxonomy, node_ids: list[str], scores: np.ndarray, k: int = 3) -> list[tuple[str, float, str, float]]:
    """Top-``k`` ``(node, confidence, section, section confidence)`` of one row of axis scores."""
    sections: dict[str, float] = {}
    for n, s in zip(node_ids, scores):
        sec = section_of(taxonomy, n)
        sections[sec] = sections.get(sec, 0.0) + float(s)
    order = np.argsort(-scores)[:k]
    return [(node_ids[j], float(scores[j]), section_of(taxonomy, node_ids[j]),
             sections[section_of(taxonomy, node_ids[j])]) for j in order]


def infer_missing_axes(catalog, placer, k: int = 3) -> list[Inference]:
    """The top-``k`` nodes of each missing axis of each method (``methods_missing_an_axis``)."""
    missing = methods_missing_an_axis(catalog)
    if not missing:
        return []
    index = {key: i for i, key in enumerate(placer.placed_keys)}
    keys = sorted({key for key, _ in missing})
    unplaced = [catalog.get(key) for key in keys if key not in index]
    new_vectors = placer.embed_works(unplaced) if unplaced else None
    vectors, exclude = [], []
    for key in keys:
        if key in index:
            vectors.append(placer.placed_vectors[index[key]])
            exclude.append(index[key])
        else:
            vectors.append(new_vectors[[w.key for w in unplaced].index(key)])
            exclude.append(None)
    vectors = np.stack(vectors)
    row = {key: i for i, key in enumerate(keys)}
    out: list[Inference] = []
    for axis in AXES:
        node_ids, scores = axis_scores(placer, vectors, axis, exclude=exclude)
        for key, ax in missing:
            if ax != axis:
                continue
            for rank, (node, conf, sec, sec_conf) in enumerate(rank_axis(catalog.taxonomy, node_ids, scores[row[key]], k), 1):
                out.append(Inference(key, axis, rank, node, round(conf, 4), sec, round(sec_conf, 4)))
    return sorted(out, key=lambda r: (r.key, AXES.index(r.axis), r.rank))


def write_inferred(rows: list[Inference], path: Path = INFERRED_PATH) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(FIELDS)
        for r in rows:
            w.writerow([r.key, r.axis, r.rank, r.node, f"{r.confidence:.4f}", r.section, f"{r.section_confidence:.4f}",
                        r.status, r.model])
    return path


def load_inferred(catalog, path: Path = INFERRED_PATH) -> list[Inference]:
    """The inferred axes, checked against the catalog: a row naming an unknown work or node, a node
    off its axis, an axis the survey already gives the work, a confidence outside 0..1 or a status
    other than ``inferred`` is a ``DataError`` naming file, row and field. No file: no inferences."""
    path = Path(path)
    if not path.exists():
        return []
    tax = catalog.taxonomy
    out: list[Inference] = []
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f, strict=True)
        if tuple(reader.fieldnames or ()) != FIELDS:
            raise DataError(path, f"header must be {','.join(FIELDS)}", row=1)
        for line, rec in enumerate(reader, start=2):
            key, axis, node = rec["key"], rec["axis"], rec["node"]
            if key not in catalog.works:
                raise DataError(path, f"unknown work '{key}'", row=line, field="key")
            if axis not in AXES:
                raise DataError(path, f"axis '{axis}' is not one of {', '.join(AXES)}", row=line, field="axis")
            if axis in axes_of(catalog, catalog.works[key]):
                raise DataError(path, f"the survey already places '{key}' on the {axis} axis", row=line, field="axis")
            if node not in tax or tax[node].dimension != axis:
                raise DataError(path, f"node '{node}' is not a {axis} node", row=line, field="node")
            if rec["status"] != "inferred":
                raise DataError(path, f"status must be 'inferred', not '{rec['status']}'", row=line, field="status")
            try:
                rank, conf, sec_conf = int(rec["rank"]), float(rec["confidence"]), float(rec["section_confidence"])
            except ValueError as e:
                raise DataError(path, f"not a number: {e}", row=line, field="rank/confidence") from None
            for name, v in (("confidence", conf), ("section_confidence", sec_conf)):
                if not 0.0 <= v <= 1.0:
                    raise DataError(path, f"{name} {v} is outside 0..1", row=line, field=name)
            out.append(Inference(key, axis, rank, node, conf, rec["section"], sec_conf, rec["status"], rec["model"]))
    return out


def by_work(rows: list[Inference]) -> dict[str, dict[str, list[Inference]]]:
    """``{key: {axis: [rank 1, rank 2, ...]}}`` of loaded inferences."""
    out: dict[str, dict[str, list[Inference]]] = {}
    for r in sorted(rows, key=lambda r: (r.key, AXES.index(r.axis), r.rank)):
        out.setdefault(r.key, {}).setdefault(r.axis, []).append(r)
    return out

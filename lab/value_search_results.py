"""Shipped results of the learned-value search comparison (``reference_impls.measure.value_search``): the policy
alone vs best-first search with a fixed heuristic vs best-first search with a learned value, on the same
held-out puzzles at equal numbers of model calls. One record per environment in
``results/value-search/<env>.json`` (written by ``python -m reference_impls.measure.value_search export``); the
planning-external-guide node page shows them."""
from __future__ import annotations

import json
from pathlib import Path

from lab.shipped import VALUE_SEARCH
from taxonomy import DataError

SHIPPED = VALUE_SEARCH
METHODS = ("policy", "heuristic", "learned")


def _check(record: dict, where: Path) -> dict:
    for key in ("node", "env", "model", "value", "budgets"):
        if key not in record:
            raise DataError(where, "missing (write the file with `value_search export`)", field=key)
    for i, b in enumerate(record["budgets"], start=1):
        missing = [m for m in METHODS if m not in b.get("methods", {})]
        if missing or "budget" not in b:
            raise DataError(where, "budget missing" if "budget" not in b else "no " + ", ".join(missing),
                            row=f"budgets[{i}]", field="methods")
    return record


def load(folder: Path | None = None) -> list[dict]:
    """Every record in ``folder`` (default: the shipped ones; none when it does not exist), sorted by environment."""
    records = []
    for path in sorted(Path(folder or SHIPPED).glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise DataError(path, f"not JSON ({err.msg})", row=f"line {err.lineno}") from err
        records.append(_check(record, path))
    return records


def for_node(node_id: str, folder: Path | None = None) -> list[dict]:
    return [r for r in load(folder) if r["node"] == node_id]

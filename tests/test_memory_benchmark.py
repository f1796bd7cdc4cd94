"""The memory benchmark's report: the paired sign test, by hand."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from memory_eval import report, sign_test_p  # noqa: E402


def test_sign_test_by_hand():
    assert sign_test_p(12, 0) == pytest.approx(2 / 2 ** 12)
    assert sign_test_p(2, 9) == pytest.approx(2 * (1 + 11 + 55) / 2 ** 11)
    assert sign_test_p(9, 2) == sign_test_p(2, 9)
    assert sign_test_p(5, 5) == 1.0 and sign_test_p(0, 0) == 1.0 and sign_test_p(1, 0) == 1.0


def test_report_counts_paired_wins_against_add_only(tmp_path):
    def rows(name, ems):
        with open(tmp_path / f"rows_{name}.jsonl", "w") as f:
            for em in ems:
                f.write(json.dumps({"em": em, "kind": "single"}) + "\n")

    summary = lambda em: {k: {"em": em, "f1": em, "n": 4} for k in ("all", "single", "updated", "multi_hop", "temporal")}
    rows("add_only", [1, 0, 0, 1])
    rows("rule", [1, 1, 1, 0])
    text = report(tmp_path, {"add_only": {"summary": summary(0.5)}, "rule": {"summary": summary(0.75)}})
    assert "| rule-based manager | 0.750 | 0.750 | 2 / 1 (p=1) |" in text

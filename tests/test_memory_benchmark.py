"""The memory benchmark's report: the paired sign test, by hand."""
import json

import pytest

from benchmarks.memory_eval import report, sign_test_p


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
    row = next([cell.strip() for cell in line.strip("|").split("|")] for line in text.splitlines()
               if line.startswith("| rule-based manager |"))  # the first table: overall scores
    # EM and F1 of the rule manager's summary; its paired wins / losses against add-only (2 / 1) and their sign test
    assert row[1:4] == ["0.750", "0.750", f"2 / 1 (p={sign_test_p(2, 1):g})"]


def test_ops_by_turn_kind_tells_a_replaced_stale_value_from_a_destroyed_fact():
    from benchmarks.memory_ops_by_kind import ops_by_turn_kind

    from reference_impls.memory.dialogue import dialogues
    from reference_impls.memory.managers import RuleManager

    ds = dialogues("heldout", 6, 0, (1, 2))
    rule = ops_by_turn_kind(RuleManager(), ds)
    assert rule[("change", "UPDATE-same")] > 0 and rule[("set", "ADD")] > 0
    assert not any(tag == "UPDATE-other" for _, tag in rule)

    class OverwriteFirst:  # UPDATE the first shown entry on every turn, ADD when nothing is shown
        def decide_many(self, items):
            return [f"UPDATE {shown[0].id}" if shown else "ADD" for _, shown in items]

    greedy = ops_by_turn_kind(OverwriteFirst(), ds)
    assert greedy[("set", "UPDATE-other")] > 0 and greedy[("filler", "UPDATE-other")] > 0
    assert sum(greedy.values()) == sum(rule.values()) == sum(len(d.turns) for d in ds)

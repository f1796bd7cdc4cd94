"""The synthetic dialogue generator: determinism, splits, and gold answers against the true state."""
import re

import pytest

from reference_impls.memory.dialogue import (KINDS, LEVELS, MONTHS, dialogues, gold_answer, make_dialogue,
                                             replay_state, vocab)
from reference_impls.memory.managers import RuleManager, run_manager


def test_same_arguments_same_dialogues():
    a = dialogues("heldout", 9, seed=3)
    b = dialogues("heldout", 9, seed=3)
    assert a == b
    assert dialogues("heldout", 9, seed=4) != a
    assert [d.level for d in a] == [1, 2, 3] * 3


def test_splits_share_no_names_or_values():
    tr, ho = vocab("train"), vocab("heldout")
    for key in tr:
        assert not set(tr[key]) & set(ho[key]), key
    held = dialogues("heldout", 30, seed=0)
    words = set(re.findall(r"[a-z]+", " ".join(t.text.lower() for d in held for t in d.turns)))
    assert not words & set(v.lower() for vals in tr.values() for v in vals) - {"max"}  # "max" is not English-free
    with pytest.raises(ValueError):
        vocab("test")


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_sizes_by_level(level):
    ds = [make_dialogue("train", 0, level, i) for i in range(20)]
    n_turns = [len(d.turns) for d in ds]
    assert 5 <= min(n_turns) and max(n_turns) <= 32
    assert all(len({t.session for t in d.turns}) == LEVELS[level]["sessions"] for d in ds)
    if level == 3:
        assert any(t.kind == "retract" for d in ds for t in d.turns)


def _independent_state(turns):
    """A second, deliberately naive replay: the last non-filler turn of each (speaker, slot) decides."""
    last = {}
    for t in turns:
        if t.slot:
            last[(t.speaker, t.slot)] = t
    return {k: t for k, t in last.items() if t.kind != "retract"}


def test_gold_answers_match_the_true_state():
    seen_kinds = set()
    for d in dialogues("heldout", 60, seed=1) + dialogues("train", 30, seed=2):
        truth = _independent_state(d.turns)
        assert replay_state(d.turns).keys() == truth.keys()
        for q in d.questions:
            seen_kinds.add(q.kind)
            assert gold_answer(d, q) == q.answer
            last = truth[(q.speaker, q.slot)]
            if q.kind == "temporal":
                assert q.answer in MONTHS and q.answer in last.text.lower()
            else:
                assert q.answer == last.value and last.value in last.text.lower()
            kinds = [t.kind for t in d.turns if t.speaker == q.speaker and t.slot == q.slot]
            if q.kind == "single":
                assert kinds == ["set"]
            if q.kind == "updated":
                assert len(kinds) > 1
            if q.kind == "multi_hop":  # the describing value identifies exactly one speaker
                described = [v for (sp, _s), (v, _m) in d.state().items() if sp == q.speaker and v in q.text.lower()]
                assert described and all(v not in q.text.lower() for (sp, _s), (v, _m) in d.state().items()
                                         if sp != q.speaker)
    assert seen_kinds == set(KINDS)


def test_rule_manager_reaches_the_gold_memory():
    ds = dialogues("heldout", 45, seed=0)
    banks, stats = run_manager(RuleManager(), ds)
    assert stats["UPDATE"] > 0 and stats["DELETE"] > 0 and stats["NOOP"] > 0
    for d, bank in zip(ds, banks):
        state = d.state()
        assert len(bank) == len(state) == len(d.gold_memory())
        for (sp, _slot), (value, _m) in state.items():
            assert sum(e.text.startswith(sp + ":") and value in e.text.lower() for e in bank.entries.values()) == 1

"""Memory bank operations, retrieval, and the operation parser (including fuzzing with hypothesis)."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impls.memory.bank import Entry, MemoryBank, Op, parse_op


def test_add_update_delete_noop():
    b = MemoryBank()
    assert b.apply(parse_op("ADD Alice lives in Paris.")) == Op("ADD", text="Alice lives in Paris.")
    assert b.apply(parse_op("ADD"), turn_text="Bob: I have a cat named Milo.").kind == "ADD"
    assert b.texts() == ["Alice lives in Paris.", "Bob: I have a cat named Milo."]
    assert b.apply(parse_op("UPDATE 1 Alice lives in Oslo.")).kind == "UPDATE"
    assert b.entries[1].text == "Alice lives in Oslo."
    assert b.apply(parse_op("UPDATE [2]"), turn_text="Bob: my cat is called Leo.").kind == "UPDATE"
    assert b.entries[2].text == "Bob: my cat is called Leo."
    assert b.apply(parse_op("DELETE #1")).kind == "DELETE" and list(b.entries) == [2]
    assert b.apply(parse_op("NOOP")) == Op("NOOP")
    assert b.add("x") == 3  # ids are never reused
    b2 = b.copy()
    b2.delete(3)
    assert 3 in b.entries


def test_invalid_and_unparseable_are_noops():
    b = MemoryBank([Entry(1, "a")])
    for text, status in [("DELETE 9", "invalid"), ("UPDATE 9 x", "invalid"), ("hello", "unparseable"),
                         ("", "unparseable"), ("UPDATE x y", "unparseable"), ("ADDITION foo", "unparseable"),
                         ("Sure! ADD foo", "unparseable")]:
        applied = b.apply(parse_op(text))
        assert (applied.kind, applied.status) == ("NOOP", status), text
    assert b.texts() == ["a"]


@pytest.mark.parametrize("text,expected", [
    ("add  Alice is a nurse ", Op("ADD", text="Alice is a nurse")),
    ("Operation: UPDATE 3 Bob lives in Rome", Op("UPDATE", 3, "Bob lives in Rome")),
    ("<op>DELETE [12]</op>", Op("DELETE", 12)),
    ("\n\nNOOP\nADD more", Op("NOOP")),
    ("UPDATE 4: Alice moved", Op("UPDATE", 4, "Alice moved")),
    ("ADD \"quoted\"", Op("ADD", text="quoted")),
    ("noop.", Op("NOOP")),
])
def test_parser_examples(text, expected):
    assert parse_op(text) == expected


ops = st.one_of(
    st.builds(lambda t: Op("ADD", text=t), st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=40)
              .map(lambda s: " ".join(s.split())).filter(lambda s: s[:1] not in (":", "-", '"', "'") and not s.lower().startswith("<") and "</op" not in s.lower())),
    st.builds(lambda i, t: Op("UPDATE", i, t), st.integers(0, 999999), st.from_regex(r"[A-Za-z][A-Za-z ]{0,20}[a-z]", fullmatch=True)),
    st.builds(lambda i: Op("DELETE", i), st.integers(0, 999999)),
    st.just(Op("NOOP")),
)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_render_parse_roundtrip(op):
    parsed = parse_op(op.render())
    assert (parsed.kind, parsed.id, parsed.status) == (op.kind, op.id, "ok")
    if op.kind in ("ADD", "UPDATE"):
        assert parsed.text == " ".join(op.text.split())  # whitespace is squeezed


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=200))
def test_parser_never_raises_on_any_text(text):
    op = parse_op(text)
    assert op.kind in ("ADD", "UPDATE", "DELETE", "NOOP") and op.status in ("ok", "unparseable")
    assert len(op.text) <= 300
    if op.status == "unparseable":
        assert op.kind == "NOOP"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=25))
def test_bank_stays_consistent_under_random_ops(outputs):
    b = MemoryBank()
    seen_ids = set()
    for i, text in enumerate(outputs):
        before = dict(b.entries)
        applied = b.apply(parse_op(text), turn_text=f"turn {i}", turn=i)
        if applied.kind == "ADD":
            new = set(b.entries) - set(before)
            assert len(new) == 1 and not new & seen_ids
            seen_ids |= new
        elif applied.kind == "DELETE":
            assert set(before) - set(b.entries) == {applied.id}
        elif applied.kind == "UPDATE":
            assert set(before) == set(b.entries)
        else:
            assert b.entries == before
        assert all(e.id == k for k, e in b.entries.items()) and b.next_id > max(b.entries, default=0)


def test_retrieval_uses_slot_synonyms_and_recency():
    b = MemoryBank()
    b.add("Alice: I work as a nurse.", 0)
    b.add("Alice: I moved to Oslo in May.", 1)
    b.add("Bob: I have a dog named Rex.", 2)
    b.add("Alice: I left Oslo and moved to Rome in June.", 3)
    assert b.retrieve("Where does Alice live?", 1)[0].id == 4
    assert b.retrieve("What is Alice's job?", 1)[0].id == 1
    assert b.retrieve("What is the name of Bob's pet?", 1)[0].id == 3
    assert b.retrieve("unrelated words", 3) == []
    assert MemoryBank().retrieve("anything") == []

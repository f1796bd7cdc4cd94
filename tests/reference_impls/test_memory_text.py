"""The memory env's tokenizer: hand-checked terms, and independence from the catalog search."""
import ast
from pathlib import Path

import pytest

from reference_impls.memory import dialogue
from reference_impls.memory.bank import SYNONYMS
from reference_impls.memory.text import stem, terms

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text, expected", [
    ("Alice: I moved to Oslo in May.", ["alice", "moved", "oslo", "may"]),
    ("What is the name of Bruno's pet?", ["name", "bruno", "bruno", "s", "pet"]),
    ("I don't live in Rome anymore.", ["dont", "don", "t", "live", "rome", "anymore"]),
    ("We adopted a cat named Luna in June.", ["adopt", "cat", "named", "luna", "june"]),
    ("I am planning a trip to Peru; the trips are booked.", ["plan", "trip", "peru", "trip", "book"]),
    ("The trip to Lima is cancelled.", ["trip", "lima", "cancell"]),
    ("My parents' dogs, 3 cities", ["parent", "dogs", "3", "city"]),  # "dogs": four letters, kept
    ("", []),
])
def test_terms_by_hand(text, expected):
    assert terms(text) == expected


def test_stem_keeps_short_stems_and_digits():
    assert stem("named") == "named"  # "nam" would be under four letters
    assert stem("working") == "work"
    assert stem("glasses") == "glass"
    assert stem("r1") == "r1"


def test_query_reaches_slot_synonyms():
    """Every synonym key is a term some generated question produces, so the table is reachable."""
    produced = set()
    for d in dialogue.dialogues("train", n=40, seed=0, levels=(1, 2, 3)):
        for q in d.questions:
            produced.update(terms(q.text))
    missing = set(SYNONYMS) - produced - {"work", "live", "name"}  # reached through statements, not questions
    assert not missing, missing


def test_memory_package_does_not_import_the_catalog():
    """Tuning the explorer's search must not move memory rewards: no import of ``papers`` here."""
    for path in (ROOT / "reference_impls" / "memory").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n == "papers" or n.startswith("papers.") for n in names), path

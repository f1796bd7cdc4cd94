"""The memory bank's own tokenizer: how an entry or a question becomes retrieval terms.

It belongs to the memory environment, not to the catalog search, so that tuning the explorer's search
never changes memory rewards. It is deliberately small and frozen; change it only together with the
memory results it would move (docs/results_memory.md).

Rules, in order:

1. NFKC-normalise and case-fold.
2. A *word* is a run of letters or digits; words joined by ``-``, ``.``, ``/`` or ``'`` form a compound,
   which gives its joined form and each part ("Alice's" -> alices, alice, s; "don't" -> dont, don, t).
3. English stop words are dropped.
4. A light stemmer: plurals (-ies -> -y, -sses -> -ss, -s unless -ss/-us/-is) on words longer than
   four letters, then -ing/-ed when at least four letters stay, and a doubled final consonant is
   undone ("planning" -> plan, "booked" -> book, "named" stays, "cancelled" -> cancell).

On the generated dialogues, questions and canonical memory sentences these are the terms the catalog
search produced when the memory env was built (tests/reference_impls/test_memory_text.py checks every
template word); model-written entries may differ on -ation/-ize words and CamelCase, which the search
tokenizer splits and this one does not.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can could did do does doing don't down during each either
    etc few for from further had has have having he her here hers him his how i if in into is isn't it
    its itself just let me more most my no nor not of off on once only or other our ours out over own
    per same she should so some such than that the their theirs them then there these they this those
    through to too under until up upon us very via vs was we were what when where which while who whom
    why will with within without would you your yours""".split()
)

_COMPOUND = re.compile(r"[^\W_]+(?:[-./'][^\W_]+)*")
_JOINER = re.compile(r"[-./']")


@lru_cache(maxsize=50_000)
def stem(word: str) -> str:
    """Fold plurals and -ing/-ed endings (see the module docstring); digits and short words stay."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 4:
        word = word[:-1]
    for suffix in ("ings", "ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)]
            if len(word) >= 5 and word[-1] == word[-2] and word[-1] not in "aeiouls":
                word = word[:-1]  # planning -> plann -> plan
            break
    return word


def terms(text: str) -> list[str]:
    """Retrieval terms of ``text``, in order and with repeats (BM25 counts them)."""
    text = unicodedata.normalize("NFKC", text or "").casefold()
    out: list[str] = []
    for match in _COMPOUND.finditer(text):
        compound = match.group()
        parts = _JOINER.split(compound)
        if len(parts) > 1:
            out.append(_JOINER.sub("", compound))
        out.extend(parts)
    return [stem(t) for t in out if t not in STOPWORDS]

"""Answer normalisation and exact match, the one definition every environment scores with.

SQuAD / Search-R1 normalisation: lower case, punctuation and the articles a/an/the removed, whitespace
collapsed. Exact match compares normalised strings; token F1 is SQuAD's (overlap of normalised words).
"""
from __future__ import annotations

import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str | None) -> str:
    text = (text or "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str | None, answers) -> bool:
    """True when the normalised prediction is non-empty and equals one of the normalised ``answers``."""
    if prediction is None:
        return False
    pred = normalize_answer(prediction)
    return bool(pred) and any(pred == normalize_answer(a) for a in answers)


def token_f1(prediction: str | None, gold: str) -> float:
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not p or not g:
        return float(p == g)
    same = sum((Counter(p) & Counter(g)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)

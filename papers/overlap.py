"""Detect long word runs shared between our own text and the survey's sentences.

The survey's sentences are reference material we may not store; the import script keeps only
hashes of their N-word runs ("shingles"), which is enough to flag copying without holding the text.
"""
from __future__ import annotations

import hashlib
import re

SHINGLE_WORDS = 8


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def shingle_hashes(text: str, n: int = SHINGLE_WORDS) -> set[str]:
    """Hashes (16 hex chars) of every run of ``n`` consecutive normalised words in ``text``."""
    w = words(text)
    return {
        hashlib.blake2b(" ".join(w[i : i + n]).encode(), digest_size=8).hexdigest()
        for i in range(len(w) - n + 1)
    }

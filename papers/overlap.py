"""Detect long word runs shared between our own text and the survey's sentences.

The survey's sentences are reference material we may not store; the import script keeps only
hashes of their N-word runs ("shingles") in ``papers/data/survey_shingles.txt``, which is enough to
flag copying without holding the text.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path

SHINGLE_WORDS = 8
SURVEY_SHINGLES = Path(__file__).resolve().parent / "data" / "survey_shingles.txt"


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _hash(run: list[str]) -> str:
    return hashlib.blake2b(" ".join(run).encode(), digest_size=8).hexdigest()


def shingle_hashes(text: str, n: int = SHINGLE_WORDS) -> set[str]:
    """Hashes (16 hex chars) of every run of ``n`` consecutive normalised words in ``text``."""
    w = words(text)
    return {_hash(w[i : i + n]) for i in range(len(w) - n + 1)}


def load_survey_shingles(path: Path = SURVEY_SHINGLES) -> set[str]:
    return {ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")}


def copied_runs(text: str, survey: set[str], n: int = SHINGLE_WORDS) -> list[str]:
    """The ``n``-word runs of ``text`` that also occur in the survey (as readable strings)."""
    w = words(text)
    return [" ".join(w[i : i + n]) for i in range(len(w) - n + 1) if _hash(w[i : i + n]) in survey]


def overlap_report(texts: Iterable[tuple[str, str]], survey: set[str] | None = None) -> list[tuple[str, str]]:
    """[(label, copied run)] for every labelled text sharing an ``n``-word run with the survey."""
    survey = load_survey_shingles() if survey is None else survey
    return [(label, run) for label, text in texts for run in copied_runs(text, survey)[:1]]

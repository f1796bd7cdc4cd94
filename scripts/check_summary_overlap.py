"""Flag summaries and node descriptions that share an 8-word run with the survey's sentences.

    python scripts/check_summary_overlap.py            # exit 1 and list offenders if any
Uses only the hashes shipped in papers/data/survey_shingles.txt (the survey text is never stored).
"""
from __future__ import annotations

import sys

from papers.catalog import Catalog
from papers.overlap import overlap_report


def main() -> int:
    cat = Catalog.load()
    texts = [(f"work {w.key} summary", w.summary) for w in cat]
    texts += [(f"node {n.id} description", n.description) for n in cat.taxonomy]
    hits = overlap_report(texts)
    for label, run in hits:
        print(f"{label}: shares '{run}'")
    print(f"{len(hits)} of {len(texts)} texts share an 8-word run with the survey")
    return 1 if hits else 0


if __name__ == "__main__":
    sys.exit(main())

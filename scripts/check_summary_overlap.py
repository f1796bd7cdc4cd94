"""Flag summaries that share a run of N words with the survey's own sentences.

Dev tool used while writing summaries:
    python scripts/check_summary_overlap.py FILE.jsonl [FILE2.jsonl ...]
Each input line: {"key": ..., "summary": ..., "keywords": [...], "confidence": "high"|"low"}.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

SEED = Path(__file__).resolve().parents[2] / "shared" / "seed-data" / "citation_contexts.jsonl"
N = 8


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def shingles(text: str, n: int = N) -> set[tuple[str, ...]]:
    w = words(text)
    return {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}


def main(paths: list[str]) -> int:
    survey: set[tuple[str, ...]] = set()
    for line in SEED.read_text().splitlines():
        rec = json.loads(line)
        for c in rec["contexts"]:
            survey |= shingles(c["text"])
        for cells in rec.get("table_cells", {}).values():
            for v in cells.values():
                survey |= shingles(str(v))
    bad = 0
    for p in paths:
        for i, line in enumerate(Path(p).read_text().splitlines(), 1):
            if not line.strip():
                continue
            rec = json.loads(line)
            hit = shingles(rec["summary"]) & survey
            if hit:
                bad += 1
                print(f"{p}:{i}: {rec['key']}: shares '{' '.join(next(iter(hit)))}'")
    print(f"{bad} summaries overlap")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Write papers/data/inferred_axes.csv: the capability / task axis the placement model infers for every
method the survey places on one axis only (or on neither), top 3 per axis, marked ``inferred``.

    .venv/bin/python scripts/infer_axes.py [--out papers/data/inferred_axes.csv]

Kept apart from the survey's placements (papers/data/works.csv is never touched; ``Catalog.load``
does not read this file): see papers/axes.py. Validation: benchmarks/axis_inference_eval.py.
Deterministic for the same catalog and embeddings (the search cache under atlas_data.data_dir()).
"""
from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from papers import Catalog
from papers.axes import INFERRED_PATH, infer_missing_axes, load_inferred, write_inferred
from papers.placement import Placer, default_encoder


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=INFERRED_PATH)
    args = ap.parse_args(argv)
    cat = Catalog.load()
    rows = infer_missing_axes(cat, Placer(cat, default_encoder(cache_new=False)))
    write_inferred(rows, args.out)
    load_inferred(cat, args.out)  # what was written reads back under the strict checks
    firsts = [r for r in rows if r.rank == 1]
    print(f"wrote {args.out}: {len(rows)} rows, {len({r.key for r in rows})} methods, "
          f"missing axes {dict(Counter(r.axis for r in firsts))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Where the shipped results live, written once: the checkout's top-level ``results/`` folder (records and their
summaries, not code). ``results/<grid>/`` is a comparison grid as exported (``python -m lab.compare export``),
``results/grid-runs/<grid>/`` a grid in progress across sessions (records only), ``results/value-search/`` the
learned-value search comparisons, ``results/claims/`` the claims' paired ablations (``python -m lab.compare claims
export``; no grid.yaml at its top, so no grid reader takes it for a grid). The app, the comparison runner and the tests read these paths from here."""
from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results"
GRID_RUNS = RESULTS / "grid-runs"
VALUE_SEARCH = RESULTS / "value-search"
CLAIMS = RESULTS / "claims"

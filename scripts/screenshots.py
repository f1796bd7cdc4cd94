"""Screenshots of the pages that need a training run (Lab, Runs) plus Import and Algorithms, for the README.

    .venv/bin/python scripts/screenshots.py            # writes docs/screenshots/{algorithms,compare,import,lab,runs}.png

The explorer's other screenshots come from ``benchmarks/app_bench.py --screenshots docs/screenshots``;
this script uses the same machinery (``take_screenshots``) in a private data directory where it first
trains one quick tiny-model run (a 3-step SFT warm start, then 8 GRPO steps) through the run manager,
so the Lab shows a real run's curves, equation, source and transcripts. Developer tool, not a test.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from app.testing import free_port, launch_chromium, start_app, stop_app, wait_healthy
from benchmarks.app_bench import take_screenshots


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    a = p.parse_args()
    data = tempfile.mkdtemp(prefix="atlas-shots-")
    os.environ["ATLAS_DATA_DIR"] = data
    from lab.catalog import get, preset_config
    from lab.runs import RunManager

    manager = RunManager()
    run = manager.submit({**preset_config(get("calculator-grpo"), "quick"), "steps": 8, "sft_steps": 3})
    print(f"run {run.id}: {manager.wait(run.id, timeout=900).status}", file=sys.stderr, flush=True)
    shots = [
        ("algorithms.png", "/algorithms", [("h1", "RL algorithms")], None),
        # the shipped core grid's results (lab/results/core), drawn from the repository's files
        ("compare.png", "/compare?grid=core", [("h1", "Compare algorithms")], None),
        ("import.png", "/imports", [("h1", "Import your works")], None),
        ("lab.png", f"/lab?impl=calculator-grpo&preset=quick&run={run.id}", [("h3", f"Run {run.id}")], f"Run {run.id}"),
        ("runs.png", "/runs", [("h1", "Runs")], None),
    ]
    port = free_port()
    app = start_app(port, env={"ATLAS_DATA_DIR": data})
    try:
        wait_healthy(port, app)
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            take_screenshots(page, f"http://127.0.0.1:{port}", a.out, shots)
            browser.close()
    finally:
        stop_app(app)
    return 0


if __name__ == "__main__":
    sys.exit(main())

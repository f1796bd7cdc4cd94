"""The screenshots of docs/tour.md (the README shows the first), at 1440x900: every shot of
``app.page_checks.screenshot_shots``, the pages that need a training run (Lab, Runs) included.

    .venv/bin/python scripts/screenshots.py            # every screenshot, into docs/screenshots/
    .venv/bin/python scripts/screenshots.py --only compare.png compare_envs.png   # some of them
    .venv/bin/python scripts/screenshots.py --no-run   # all but lab.png and runs.png (no training run)
    .venv/bin/python scripts/screenshots.py --preset learn --mid-run 3 --only lab.png   # plus lab_running.png:
        # the Lab while the run trains, its live curve over the preset's measured band (issue 59)

It runs the app (``make app``) on a private, empty data directory where it first trains one run of calculator-grpo
with a Lab preset (``--preset``; the shipped shots: ``--preset learn``, SmolLM2 learning one-operation sums in
about 4 minutes) through the run manager, so the Lab shows a real run's curves, equation, source and
transcripts; before the first shot it waits until Search answers from the full index (the data directory is
new, so the search index is built first). Developer tool, not a test.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from app.page_checks import MID_RUN_SHOTS, RUN_SHOTS, screenshot_shots
from app.testing import free_port, launch_chromium, start_app, stop_app, wait_healthy
from benchmarks.app_bench import take_screenshots, wait_full_search

VIEWPORT = {"width": 1440, "height": 900}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    p.add_argument("--only", nargs="+", default=None, metavar="NAME", help="only these files (e.g. compare.png)")
    p.add_argument("--no-run", action="store_true", help="leave out lab.png and runs.png: no training run")
    p.add_argument("--preset", default="quick", help="the Lab preset of that run (quick: the tiny random model, a "
                   "minute; learn: SmolLM2-135M-Instruct learning one-operation problems, about 4 minutes)")
    p.add_argument("--mid-run", type=int, metavar="STEPS", default=None,
                   help="also shoot lab_running.png while the run trains, once STEPS steps are done: the live curve "
                        "drawn over the preset's measured band")
    a = p.parse_args()
    data = tempfile.mkdtemp(prefix="atlas-shots-")
    os.environ["ATLAS_DATA_DIR"] = data
    from lab.catalog import get, preset_config
    from lab.runs import RunManager

    wanted = set(a.only or ())
    run_id = None
    if not a.no_run and (not wanted or wanted & set(RUN_SHOTS)):  # the pages that show a training run
        manager = RunManager()
        run = manager.submit(preset_config(get("calculator-grpo"), a.preset), impl_id="calculator-grpo", preset=a.preset)
        if a.mid_run:
            _shoot_mid_run(manager, run.id, a.mid_run, a.preset, a.out, data)
        print(f"run {run.id}: {manager.wait(run.id, timeout=900).status}", file=sys.stderr, flush=True)
        run_id = run.id
    shots = screenshot_shots(run_id, a.preset)
    unknown = wanted - {name for name, *_ in shots}
    if unknown:
        p.error(f"--only: no screenshot named {', '.join(sorted(unknown))}")
    shots = [s for s in shots if (not wanted or s[0] in wanted) and not (a.no_run and s[0] in RUN_SHOTS)]
    port = free_port()
    app = start_app(port, env={"ATLAS_DATA_DIR": data})
    try:
        wait_healthy(port, app)
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            page = browser.new_page(viewport=VIEWPORT)
            if any(name == "search.png" for name, *_ in shots):  # ranked by meaning, not the keyword-only fallback
                print(f"full search index after {wait_full_search(page, f'http://127.0.0.1:{port}')} s", file=sys.stderr)
            take_screenshots(page, f"http://127.0.0.1:{port}", a.out, shots)
            browser.close()
    finally:
        stop_app(app)
    return 0


def _shoot_mid_run(manager, run_id: str, steps: int, preset: str, out: Path, data: str) -> None:
    """lab_running.png: the Lab on ``run_id`` once ``steps`` of its steps are done, while it still trains."""
    import time

    from app import routes
    from app.page_checks import _url

    deadline = time.time() + 900
    while len(manager.get(run_id).files.metrics()) < steps:
        if manager.get(run_id).status not in ("queued", "running") or time.time() > deadline:
            raise SystemExit(f"run {run_id} ended or stalled before {steps} steps: {manager.get(run_id).status}")
        time.sleep(2)
    port = free_port()
    app = start_app(port, env={"ATLAS_DATA_DIR": data})
    try:
        wait_healthy(port, app)
        from playwright.sync_api import sync_playwright

        shot = (MID_RUN_SHOTS[0], _url(routes.lab(impl="calculator-grpo", preset=preset, run=run_id)),
                [("h3", f"Run {run_id}")], f"Run {run_id}:")
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            take_screenshots(browser.new_page(viewport=VIEWPORT), f"http://127.0.0.1:{port}", out, [shot])
            browser.close()
    finally:
        stop_app(app)
    print(f"lab_running.png at step {len(manager.get(run_id).files.metrics())} of run {run_id}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())

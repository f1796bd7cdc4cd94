"""Fresh server on an empty data folder; visit pages in app_bench's order; timeline of the Search query page."""
import os, sys, time, tempfile
from pathlib import Path
from playwright.sync_api import sync_playwright
from app.testing import RUNNING, free_port, launch_chromium, start_app, stop_app, wait_healthy
from benchmarks.app_bench import COMPLETE, visit_complete
TIMELINE = """([running]) => { const t0 = performance.now(); window.__tl = []; let last = '';
  const tick = () => { const b = document.body ? document.body.innerText : '';
    const s = [document.querySelector(running) ? 'RUN' : 'idle', b.includes('Keyword matches only') ? 'KW' : '-',
               /\\d+ works? for/.test(b) ? 'RESULTS' : '-', document.querySelectorAll('[data-stale="true"]').length ? 'stale' : ''].join(' ');
    if (s !== last) { window.__tl.push([Math.round(performance.now() - t0), s]); last = s; }
    if (performance.now() - t0 < 15000) requestAnimationFrame(tick); };
  tick(); }"""
pages = list(COMPLETE)[:4]
with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
    port = free_port(); proc = start_app(port, env={"ATLAS_DATA_DIR": tmp, "SWITCH": os.environ.get("SWITCH", "")}); b = launch_chromium(pw)
    try:
        wait_healthy(port, proc, poll=0.05); t_up = time.perf_counter()
        page = b.new_page(viewport={"width": 1440, "height": 900}); base = f"http://127.0.0.1:{port}"
        for n in pages:
            print(round(time.perf_counter() - t_up, 1), visit_complete(page, base, n), os.getloadavg()[0], flush=True)
        page.goto("about:blank")
        print("query visit at", round(time.perf_counter() - t_up, 1))
        page.goto(base + COMPLETE["Search, a query"][0], wait_until="commit")
        page.evaluate(TIMELINE, [RUNNING]); time.sleep(12)
        for row in page.evaluate("window.__tl"): print(row)
    finally:
        b.close(); stop_app(proc); print("\n".join(l for l in proc.stdout.read().decode().splitlines() if "SEARCHLAP" in l or "Traceback" in l))

"""Explorer speed, measured in a real browser: every page complete, first meaningful render, page switches.

    .venv/bin/python benchmarks/app_bench.py                 # every page complete: fresh data folder, then warm
    .venv/bin/python benchmarks/app_bench.py --switches      # 3 cold starts, 5 rounds of page switches
    .venv/bin/python benchmarks/app_bench.py --screenshots docs/screenshots

First meaningful render: from starting the app process exactly as the README says (``make app
PORT=...``) to the moment the home page shows its title, its counts and the capability x task heat
map in Chromium. The browser is started before the app, so its own start-up is not counted.
"Warm cache" means the on-disk caches (bytecode, the search embeddings) exist, as on any start
after the first; each start is a fresh server process with empty in-memory caches.

Page switch: from clicking a page in the sidebar to that page's own content being on screen,
timed inside the browser (``performance.now()`` before the click and when the content appears).
Every page is visited once before timing (the first visit of Search loads the embedding model,
once per server process; that one-time cost is reported separately).
First search: from starting the app process to the results of a search typed right after the
first render (home page title and counts on screen -> optionally ``--think`` seconds -> click
Search -> type the query -> Enter -> the result count shows). ``--first-search`` times it with the background load of the search model
off (``ATLAS_WARM_SEARCH=0``, the "before") and on (the default, "after"), alternating.

Every page complete (the default): a fresh server on a fresh, empty data folder (``ATLAS_DATA_DIR``); each
page is opened by its URL in turn ("fresh": its first visit, caches empty), then every page again on the same
server ("warm"). A page is complete when every one of its sections is on screen (``app.page_checks.COMPLETE``: a selector and
text per section, the last section included, none of it left over from the page before) and Streamlit's
running indicator is gone; "after first render" is complete minus the moment its title showed. Before the
warm pass it waits until Search answers from the full index (the background load, on a fresh data folder the
build, that the first visits started) and reports how long that took. Then the first
search: a fresh server on the now-filled data folder, and one on another empty data folder, each opened
first on a search URL; timed from the server's health check answering to the results count on screen.

Results are printed as Markdown (recorded in docs/app_performance.md) and as JSON with --json.

    .venv/bin/python benchmarks/app_bench.py --first-search 3 --starts 0 --rounds 0   # only the first-search timing
    .venv/bin/python benchmarks/app_bench.py --first-query 3   # only the first query after a start, 3 rounds

``--first-query N``: the complete mode's last measurement alone, N rounds: a fresh server opened first on a
search URL, on a data folder that has the search embeddings (built once, in this process, before the rounds)
and on an empty one; from the health check answering to the results complete, with the 1-minute load average
read before each.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from app.page_checks import COMPLETE, COMPLETE_JS, EXPLORER_SHOTS, HOME_FIRST, HOME_READY, WORKS
from app.testing import RUNNING, free_port, launch_chromium, start_app, stop_app, wait_healthy

# what "this page is on screen" means: a CSS selector and a text it must contain
READY = {
    "Overview": ('[data-testid="stMetricValue"]', WORKS),
    "Taxonomy": ("svg text", "Memory (22)"),
    "Search": ("h1", "Search"),
    "Algorithms": ("h2", "Side by side"),
}
WAIT_JS = """([checks, idle]) => {
  if (idle && document.querySelector('[data-testid="stStatusWidget"]')) return false;
  for (const [sel, text] of checks) {
    const els = Array.from(document.querySelectorAll(sel));
    if (!els.some(e => (e.textContent || '').includes(text) && !e.closest('[data-stale="true"]'))) return false;
  }
  return performance.now();
}"""

# every page by its URL and what "complete" means there: app.page_checks.COMPLETE
TITLE_OF = {name: checks[0] for name, (_, checks) in COMPLETE.items()}


def visit_complete(page, base: str, name: str, timeout_ms: int = 300_000) -> dict:
    """Open a page by its URL; seconds from the navigation to its title and to every section (script idle)."""
    path, checks = COMPLETE[name]
    page.goto("about:blank")
    t0 = time.perf_counter()
    page.goto(base + path, wait_until="commit")
    page.wait_for_function(WAIT_JS, arg=[[TITLE_OF[name]], False], polling="raf", timeout=timeout_ms)
    title = time.perf_counter() - t0
    page.wait_for_timeout(50)  # the running indicator shows a moment after the script starts
    page.wait_for_function(COMPLETE_JS, arg=[checks, RUNNING], polling="raf", timeout=timeout_ms)
    done = time.perf_counter() - t0
    return {"page": name, "title_s": round(title, 2), "complete_s": round(done, 2),
            "after_title_s": round(done - title, 2)}


KEYWORD_ONLY = "Keyword matches only"  # the Search page's note while the full index loads


def wait_full_search(page, base: str) -> float:
    """Seconds until Search answers from the full index (its keyword-only note gone): the background load or,
    on a fresh data folder, build of the search index that the first visits started."""
    t0 = time.perf_counter()
    page.goto(base + COMPLETE["Search, a query"][0], wait_until="commit")
    page.wait_for_function("""([checks, running, note]) => {
      if (document.querySelector(running) || (document.body && document.body.innerText || '').includes(note)) return false;
      return checks.every(([sel, text]) => Array.from(document.querySelectorAll(sel)).some(
        e => (e.textContent || '').includes(text) && !e.closest('[data-stale="true"]')));
    }""", arg=[COMPLETE["Search, a query"][1], RUNNING, KEYWORD_ONLY], polling=250, timeout=900_000)
    return round(time.perf_counter() - t0, 1)


def time_first_query(pw, data: Path, label: str) -> dict:
    """A fresh server on ``data``, opened first on a search URL: health check answering -> results on screen."""
    port = free_port()
    browser = launch_chromium(pw)  # before the app, so its own start is not counted
    start = time.perf_counter()
    proc = start_app(port, env={"ATLAS_DATA_DIR": str(data)})
    try:
        wait_healthy(port, proc, poll=0.05)
        up = time.perf_counter()
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"http://127.0.0.1:{port}" + COMPLETE["Search, a query"][0], wait_until="commit")
        page.wait_for_function(COMPLETE_JS, arg=[COMPLETE["Search, a query"][1], RUNNING], polling="raf",
                               timeout=600_000)
        return {"case": label, "server_up_to_results_s": round(time.perf_counter() - up, 2),
                "process_start_to_server_up_s": round(up - start, 2)}
    finally:
        browser.close()
        stop_app(proc)


def first_queries(pw, rounds: int, filled: Path | None = None) -> list[dict]:
    """``rounds`` times: the first query after a start on a data folder with the embeddings (``filled``, else one
    built here) and on an empty one."""
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory(prefix="atlas-bench-") as tmp:
        filled = filled or Path(tmp) / "filled"
        filled.mkdir(exist_ok=True)
        env_before = os.environ.get("ATLAS_DATA_DIR")
        os.environ["ATLAS_DATA_DIR"] = str(filled)
        try:  # the embeddings a restarted server finds (what the visits of the complete mode leave)
            from papers import Catalog
            from papers.search import SearchIndex

            SearchIndex.load_or_build(Catalog.load())
        finally:
            if env_before is None:
                os.environ.pop("ATLAS_DATA_DIR")
            else:
                os.environ["ATLAS_DATA_DIR"] = env_before
        for i in range(rounds):
            empty = Path(tmp) / f"empty{i}"
            empty.mkdir()
            for data, label in ((filled, "restarted server, data folder with the embeddings"),
                                (empty, "fresh server on an empty data folder")):
                load = os.getloadavg()[0]
                rows.append({**time_first_query(pw, data, label), "load_1min": round(load, 2)})
                print(rows[-1], file=sys.stderr, flush=True)
    return rows


def print_first_queries(rows: list[dict]) -> None:
    print("| first query after a start | server up → results complete | process start → server up "
          "| 1-minute load before |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['server_up_to_results_s']:.2f} s | {r['process_start_to_server_up_s']:.2f} s "
              f"| {r['load_1min']:.2f} |")
    for case in dict.fromkeys(r["case"] for r in rows):
        vals = [r["server_up_to_results_s"] for r in rows if r["case"] == case]
        print(f"\n{case}: median {statistics.median(vals):.2f} s, max {max(vals):.2f} s of {len(vals)}.", end="")
    print(f"\n{os.cpu_count()} CPUs.")


def complete_renders(pw, pages: list[str], fresh_search: bool = True) -> dict:
    """Every page complete on a fresh data folder and again warm; then the first query after a start."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="atlas-bench-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        port = free_port()
        proc = start_app(port, env={"ATLAS_DATA_DIR": str(data)})
        browser = launch_chromium(pw)
        rows: dict = {"fresh": [], "warm": []}
        try:
            wait_healthy(port, proc, poll=0.05)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            for when in ("fresh", "warm"):
                if when == "warm":  # warm: once the background work the visits started is done
                    rows["background_s"] = wait_full_search(page, f"http://127.0.0.1:{port}")
                for name in pages:
                    rows[when].append(visit_complete(page, f"http://127.0.0.1:{port}", name))
                    print(when, rows[when][-1], f"load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
        finally:
            browser.close()
            stop_app(proc)
        queries = [time_first_query(pw, data, "restarted server, data folder as the visits left it")]
        if fresh_search:
            empty = Path(tmp) / "empty"
            empty.mkdir()
            queries.append(time_first_query(pw, empty, "fresh server on an empty data folder"))
        for q in queries:
            print(q, file=sys.stderr, flush=True)
    return {"pages": rows, "first_query": queries}


def print_complete(result: dict) -> None:
    print("| page | fresh: title | fresh: complete | fresh: after title | warm: title | warm: complete "
          "| warm: after title |")
    print("|---|---|---|---|---|---|---|")
    for fresh, warm in zip(result["pages"]["fresh"], result["pages"]["warm"]):
        print(f"| {fresh['page']} | {fresh['title_s']:.2f} s | {fresh['complete_s']:.2f} s | "
              f"**{fresh['after_title_s']:.2f} s** | {warm['title_s']:.2f} s | {warm['complete_s']:.2f} s | "
              f"**{warm['after_title_s']:.2f} s** |")
    print(f"\nBetween the two passes: {result['pages']['background_s']:.1f} s until Search answered from the full "
          "index (the background work the first visits started).")
    print("\n| first search after a start | server up → results |\n|---|---|")
    for q in result["first_query"]:
        print(f"| {q['case']} | {q['server_up_to_results_s']:.2f} s |")
    print(f"\n{result['cpus']} CPUs; 1-minute load average {result['load_average_1min'][0]:.2f} before, "
          f"{result['load_average_1min'][1]:.2f} after.")


def wait_ready(page, checks, timeout_ms: int = 120_000, idle: bool = False) -> float:
    """performance.now() when every (selector, text) check holds (and, with ``idle``, the script is done)."""
    return page.wait_for_function(WAIT_JS, arg=[checks, idle], polling="raf", timeout=timeout_ms).json_value()


def first_render(pw, runs: int) -> tuple[list[float], list[float]]:
    times, complete = [], []
    browser = launch_chromium(pw)
    try:
        for _ in range(runs):
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            port = free_port()
            t0 = time.perf_counter()
            proc = start_app(port)
            try:
                wait_healthy(port, proc, poll=0.02)
                page.goto(f"http://127.0.0.1:{port}/", wait_until="commit")
                wait_ready(page, HOME_FIRST)
                times.append(time.perf_counter() - t0)
                wait_ready(page, HOME_READY)
                complete.append(time.perf_counter() - t0)
            finally:
                page.close()
                stop_app(proc)
    finally:
        browser.close()
    return times, complete


FIRST_QUERY = "web search agents trained with outcome rewards"


def first_search(pw, runs: int, think: float = 0.0) -> dict[str, list[dict]]:
    """Per mode ("before": no background load, "after": background load), per run: seconds from
    process start to first render and to the first search's results."""
    out: dict[str, list[dict]] = {"before": [], "after": []}
    browser = launch_chromium(pw)
    try:
        for _ in range(runs):
            for mode in ("before", "after"):
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                port = free_port()
                t0 = time.perf_counter()
                proc = start_app(port, env={"ATLAS_WARM_SEARCH": "0" if mode == "before" else "1"})
                try:
                    wait_healthy(port, proc, poll=0.02)
                    page.goto(f"http://127.0.0.1:{port}/", wait_until="commit")
                    wait_ready(page, HOME_FIRST)
                    render = time.perf_counter() - t0
                    page.wait_for_timeout(think * 1000)  # a person reading the first page before searching
                    nav_click(page, "Search")
                    wait_ready(page, [READY["Search"]])
                    box = page.get_by_placeholder("e.g. agents that learn when to call a search engine")
                    box.fill(FIRST_QUERY)
                    box.press("Enter")
                    wait_ready(page, [("p", f"for “{FIRST_QUERY}”")], timeout_ms=300_000)
                    out[mode].append({"first_render_s": round(render, 2),
                                      "first_search_results_s": round(time.perf_counter() - t0, 2)})
                finally:
                    page.close()
                    stop_app(proc)
    finally:
        browser.close()
    return out


def nav_click(page, label: str) -> None:
    page.locator('[data-testid="stSidebarNav"] a', has_text=label).first.click()


def page_switches(pw, rounds: int, shots: Path | None) -> tuple[dict[str, list[float]], float]:
    port = free_port()
    proc = start_app(port)
    browser = launch_chromium(pw)
    try:
        wait_healthy(port, proc)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        base = f"http://127.0.0.1:{port}"
        page.goto(base + "/")
        wait_ready(page, HOME_READY)
        # warm-up: every page once (Search loads the embedding model once per server)
        t = time.perf_counter()
        page.goto(base + "/search?q=warm+up")
        wait_ready(page, [("p", "for “warm up”")], timeout_ms=180_000)
        index_load = time.perf_counter() - t
        for name in READY:
            nav_click(page, name)
            wait_ready(page, [READY[name]])
        order = ["Overview", "Taxonomy", "Search", "Algorithms"]
        times: dict[str, list[float]] = {}
        for _ in range(rounds):
            for src, dst in zip(order, order[1:] + order[:1]):
                t0 = page.evaluate("performance.now()")
                nav_click(page, dst)
                t1 = wait_ready(page, [READY[dst]])
                times.setdefault(f"{src} → {dst}", []).append((t1 - t0) / 1000)
        if shots:
            take_screenshots(page, base, shots)
        return times, index_load
    finally:
        browser.close()
        stop_app(proc)


HEADER_PX = 72  # Streamlit's fixed header bar (60 px) and a little air


def take_screenshots(page, base: str, folder: Path, shots: list | None = None) -> None:
    """Screenshots of the real app at the page's viewport, palette-quantised to stay small. ``shots``: (file,
    path, ready checks, what to scroll to) tuples, default ``EXPLORER_SHOTS``. A shot is taken once its checks
    hold and Streamlit's running indicator is gone."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    shots = shots or EXPLORER_SHOTS
    for name, path, checks, scroll_to in shots:
        page.goto(base + path)
        wait_ready(page, checks)
        page.wait_for_timeout(800)  # the "running" indicator shows only after a short delay
        wait_ready(page, checks, idle=True)
        if scroll_to:
            # (role, exact name): the "search" heading, not the sidebar's "Search" link that a text match finds first
            target = (page.get_by_role(scroll_to[0], name=scroll_to[1], exact=True) if isinstance(scroll_to, tuple)
                      else page.get_by_text(scroll_to))
            # Streamlit's header is a fixed, opaque bar over the top of the page: a target scrolled to the very top
            # hides behind it (the pass@k chart's caption and the chart's top were cut off), so keep it below the
            # bar (scroll-margin, which scrollIntoView respects; headings already carry one for their anchors).
            # Charts drawn as they come into view change the height of what is above: scroll until it stays put
            for _ in range(8):
                top = target.first.evaluate(
                    "(e, px) => { if (parseFloat(getComputedStyle(e).scrollMarginTop) < px) e.style.scrollMarginTop ="
                    " px + 'px'; e.scrollIntoView({block: 'start'}); return parseFloat(getComputedStyle(e).scrollMarginTop); }",
                    HEADER_PX)
                page.wait_for_timeout(1000)
                if abs(target.first.evaluate("e => e.getBoundingClientRect().top") - top) < 5:
                    break
        page.wait_for_timeout(1200)  # let chart animations settle
        out = folder / name
        page.screenshot(path=str(out))
        img = Image.open(out).convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT)
        img.save(out, optimize=True)
        print(f"screenshot {out} ({out.stat().st_size // 1024} KiB)", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--switches", action="store_true",
                    help="time cold starts and page switches (--starts, --rounds) instead of every page complete")
    ap.add_argument("--pages", nargs="+", choices=list(COMPLETE), default=list(COMPLETE), metavar="PAGE",
                    help="pages to time complete (default all: %(choices)s)")
    ap.add_argument("--no-fresh-search", action="store_true",
                    help="leave out the first search on an empty data folder (it builds the search index)")
    ap.add_argument("--starts", type=int, default=3, help="fresh server starts to time")
    ap.add_argument("--rounds", type=int, default=5, help="rounds through the four pages")
    ap.add_argument("--screenshots", type=Path, help="also save screenshots into this folder")
    ap.add_argument("--first-search", type=int, default=0, metavar="N",
                    help="also time start -> first search results, N starts each without and with the background load")
    ap.add_argument("--think", type=float, default=0.0,
                    help="seconds between the first render and opening the Search page (a reader's pause; default 0)")
    ap.add_argument("--first-query", type=int, default=0, metavar="N",
                    help="only the first query after a start (the complete mode's last measurement), N rounds")
    ap.add_argument("--filled", type=Path, metavar="DIR",
                    help="with --first-query: the data folder with the embeddings (built there if missing)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    if args.first_query:
        with sync_playwright() as pw:
            rows = first_queries(pw, args.first_query, args.filled)
        if args.json:
            print(json.dumps(rows, indent=1))
        print_first_queries(rows)
        return

    load_before = os.getloadavg()[0]
    if not args.switches and not args.first_search and not args.screenshots:
        with sync_playwright() as pw:
            result = complete_renders(pw, args.pages, fresh_search=not args.no_fresh_search)
        result.update(cpus=os.cpu_count(), load_average_1min=[round(load_before, 2), round(os.getloadavg()[0], 2)])
        if args.json:
            print(json.dumps(result, indent=1))
        print_complete(result)
        return
    with sync_playwright() as pw:
        searches = first_search(pw, args.first_search, args.think) if args.first_search else None
        if args.starts == 0 and args.rounds == 0:
            load_after = os.getloadavg()[0]
            print_first_search(searches, load_before, load_after, args.json)
            return
        starts, complete = first_render(pw, args.starts)
        switches, index_load = page_switches(pw, args.rounds, args.screenshots)
    load_after = os.getloadavg()[0]
    if searches:
        print_first_search(searches, load_before, load_after, args.json)
    result = {
        "cpus": os.cpu_count(), "load_average_1min": [round(load_before, 2), round(load_after, 2)],
        "first_meaningful_render_s": [round(x, 3) for x in starts],
        "home_complete_s": [round(x, 3) for x in complete],
        "page_switch_s": {k: [round(x, 3) for x in v] for k, v in switches.items()},
        "search_index_first_load_s": round(index_load, 2),
    }
    if args.json:
        print(json.dumps(result, indent=1))
    all_switches = [x for v in switches.values() for x in v]
    print("| measure | median | max | runs | target |")
    print("|---|---|---|---|---|")
    print(f"| first meaningful render (process start → title and counts) | {statistics.median(starts):.2f} s | "
          f"{max(starts):.2f} s | {len(starts)} | ≤ 3 s |")
    print(f"| home page complete (… → heat map drawn) | {statistics.median(complete):.2f} s | "
          f"{max(complete):.2f} s | {len(complete)} | |")
    for k, v in switches.items():
        print(f"| page switch {k} | {statistics.median(v):.3f} s | {max(v):.3f} s | {len(v)} | ≤ 0.5 s |")
    print(f"| page switch, all | {statistics.median(all_switches):.3f} s | {max(all_switches):.3f} s | "
          f"{len(all_switches)} | ≤ 0.5 s |")
    print(f"\nOne-time per server: loading the search index (embedding model) {index_load:.1f} s.")
    print(f"{os.cpu_count()} CPUs, 1-minute load average {load_before:.1f} before and {load_after:.1f} after.")


def print_first_search(searches: dict[str, list[dict]], load_before: float, load_after: float, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"first_search": searches, "load_average_1min": [round(load_before, 2), round(load_after, 2)]}, indent=1))
    print("| first search (process start → results of a search typed after the first render) | median | runs | all |")
    print("|---|---|---|---|")
    for mode, label in (("before", "before: model loaded by the first search"), ("after", "after: model loaded in the background at the first page")):
        vals = [r["first_search_results_s"] for r in searches[mode]]
        renders = [r["first_render_s"] for r in searches[mode]]
        print(f"| {label} | {statistics.median(vals):.1f} s (first render {statistics.median(renders):.1f} s) | {len(vals)} | "
              f"{', '.join(f'{v:.1f}' for v in vals)} |")
    print(f"\n{os.cpu_count()} CPUs, 1-minute load average {load_before:.1f} before and {load_after:.1f} after.")


if __name__ == "__main__":
    main()

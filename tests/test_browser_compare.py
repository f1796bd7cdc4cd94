"""A real browser on the Compare page: a grid folder's leaderboard, its interval chart, the per-step curves,
"Reproduce a cell" and its link into the Lab with that cell's implementation and recipe.

The grid folder is written the way `lab.compare` writes one (grid.yaml + cells/*/result.json); the numbers
are test inputs, and the assertions check what the page makes of them (order, percentages, links).
"""
import re
from pathlib import Path

import pytest

from app.testing import follow_page_link, launch_chromium
from test_compare_page import _cell, _write_grid

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("app-server")]


def seed_demo_grid(data: Path) -> None:
    """The grid folder "demo" this test reads: two implementations x two seeds. tests/conftest.py's
    ``app_server`` writes it into the shared server's data folder before the server starts."""
    cells = [_cell("calculator-grpo", "grpo", s, [1, 0, 0, 0]) for s in (0, 1)]
    cells += [_cell("calculator-ppo", "ppo", s, [1, 1, 1, 0]) for s in (0, 1)]
    _write_grid(data, cells)


@pytest.fixture
def compare_app(require_chromium, app_server):
    assert (app_server.data / "compare" / "demo" / "grid.yaml").is_file()  # seed_demo_grid's
    return app_server.url


def test_leaderboard_reproduce_and_open_in_lab(compare_app):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(120_000)
            # the whole page drawn first (its 2 tables and 2 charts arrive, then draw a moment later): a click
            # while they still push the page down can land beside its link
            _open_complete(page, compare_app + "/compare?grid=demo", [
                ("h2", "calculator"), ('[data-testid="stExpander"] summary', "Reproduce a cell"),
                ('[data-testid="stVegaLiteChart"] svg.marks', "", 2), ('[data-testid="stTable"]', "", 2)])
            page.get_by_role("heading", name="Compare algorithms").wait_for()
            page.get_by_role("heading", name="calculator").wait_for()
            # the budget line comes from the grid file
            page.get_by_text(re.compile(r"recipe quick")).first.wait_for()
            # the interval chart and the leaderboard table are drawn
            page.locator('[data-testid="stVegaLiteChart"]').first.wait_for()
            table = page.locator('[data-testid="stTable"]').first
            table.wait_for()
            # the per-step curves (a second chart) are drawn too
            page.get_by_text("Mean training reward per step (over seeds)").wait_for()
            assert page.locator('[data-testid="stVegaLiteChart"]').count() >= 2

            # Reproduce a cell: the command names the grid and the cell's own run folder
            page.get_by_text("Reproduce a cell").click()
            code = page.locator('[data-testid="stCode"]').first
            code.wait_for()
            text = code.inner_text()
            assert "python -m lab.compare run demo" in text
            assert re.search(r"--out runs/calculator-(grpo|ppo)-s[01]", text)
            page.get_by_role("button", name=re.compile("Download the cell's config")).wait_for()

            # ... and its link opens the Lab on that implementation with the grid's recipe
            follow_page_link(page, re.compile("Open this implementation in the Lab"), "Lab")
            page.wait_for_function("() => /impl=calculator-(grpo|ppo)/.test(window.location.search)")
            assert "preset=quick" in page.url
        finally:
            browser.close()


def _open_complete(page, url: str, checks) -> None:
    """Open ``url`` and wait until every (selector, text) check holds and the script has finished."""
    from app.testing import RUNNING
    from app.page_checks import COMPLETE_JS

    page.goto(url)
    page.wait_for_timeout(300)  # the running indicator shows a moment after the script starts
    page.wait_for_function(COMPLETE_JS, arg=[checks, RUNNING], polling=200, timeout=240_000)


def test_shipped_compare_page_draws_the_warm_start_on_every_interval_chart(require_chromium, app_server):
    """On the shipped core grid, one tab per environment: clicking a tab opens it and writes it in the URL; each
    tab's interval chart carries the warm start as a labelled dashed line (FrozenLake also the map-blind bar), the
    tabs state the verdicts and caveats, no table cell reads None and no table is cut at 1440 px; a link to a tab
    opens that tab."""
    from playwright.sync_api import sync_playwright

    from app.testing import RUNNING, wait_script_idle
    from app.page_checks import COMPLETE, COMPLETE_JS

    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.set_default_timeout(120_000)  # a tab's rerun and its charts on a loaded CI machine
            _open_complete(page, app_server.url + "/compare?grid=core-first", COMPLETE["Compare, the first core grid"][1])
            assert [t.strip() for t in page.locator('[data-testid="stTab"]').all_inner_texts()] == [
                "calculator", "frozenlake", "search"]
            said, seen = [], []
            for env in ("calculator", "frozenlake", "search"):
                if env != "calculator":  # the first tab is open by default
                    page.get_by_role("tab", name=env, exact=True).click()
                    page.wait_for_function("env => new URLSearchParams(window.location.search).get('env') === env",
                                           arg=env, timeout=120_000)
                    # the tab's own rows (their names start with the environment's), drawn, the rerun over
                    page.wait_for_function(COMPLETE_JS, arg=[[
                        ('[data-testid="stTab"][aria-selected="true"]', env), ('[data-testid="stTable"]', f"{env}-grpo"),
                        ('[data-testid="stVegaLiteChart"] svg.marks', "", 2),
                        ('[data-testid="stExpander"] summary', "Reproduce a cell")], RUNNING],
                        polling=200, timeout=240_000)
                    wait_script_idle(page)
                assert page.get_by_role("tab", name=env, exact=True).get_attribute("aria-selected") == "true"
                main = page.locator('[data-testid="stMain"]')
                charts = main.locator('[data-testid="stVegaLiteChart"]').filter(
                    has=page.locator("svg text", has_text="held-out success (%)"))
                charts.first.wait_for()  # Vega draws each chart a moment after its element arrives
                assert charts.count() == 1, env  # only the open tab is drawn
                chart = charts.first
                chart.locator("svg text", has_text=re.compile(r"^warm start \d+%$")).first.wait_for()
                assert chart.locator("svg text", has_text=re.compile(r"^warm start \d+%$")).count() == 1
                blind = chart.locator("svg text", has_text=re.compile(r"^map-blind 32%$")).count()
                assert blind == (1 if env == "frozenlake" else 0), env
                said.append(main.inner_text())
                tables = main.locator('[data-testid="stTable"]')
                assert tables.count() >= 2, env
                for i in range(tables.count()):
                    text = tables.nth(i).inner_text()
                    assert "None" not in text and "nan" not in text.split()
                    # the whole table fits: nothing to scroll to sideways
                    assert tables.nth(i).evaluate("e => e.scrollWidth <= e.clientWidth + 1"), text[:200]
                seen.append(env)
            assert seen == ["calculator", "frozenlake", "search"]
            body = "\n".join(said)
            for caveat in ("Against the baseline:", "Against the stage it starts from:", "Map-blind bar:",
                           "Held-out vs pass@1:"):
                assert caveat in body
            assert "Map-blind bar:" in said[1] and "Map-blind bar:" not in said[0]

            # a link to a tab opens it
            _open_complete(page, app_server.url + "/compare?grid=core-first&env=search",
                           [('[data-testid="stTab"][aria-selected="true"]', "search"),
                            ('[data-testid="stVegaLiteChart"] svg.marks', "", 2)])
        finally:
            browser.close()


def test_default_compare_page_is_the_rerun_of_the_core_grid(require_chromium, app_server):
    """With no grid named, the page opens the re-run of the core grid (results/core): its one environment under
    a header, no tabs; the interval chart carries each warm start as its own labelled line and no map-blind bar;
    the page states each comparison's verdict with what it could detect, and the pass@k reading of every GRPO
    seed; no table cell reads None and none is cut at 1440 px."""
    from playwright.sync_api import sync_playwright

    from app.page_checks import COMPLETE

    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.set_default_timeout(120_000)
            _open_complete(page, app_server.url + "/compare", COMPLETE["Compare"][1])
            assert page.locator('[data-testid="stTab"]').count() == 0
            main = page.locator('[data-testid="stMain"]')
            chart = main.locator('[data-testid="stVegaLiteChart"]').filter(
                has=page.locator("svg text", has_text="held-out success (%)"))
            chart.first.wait_for()  # the page's charts draw one after another; the completeness check counts 3 of 5
            assert chart.count() == 1
            warm = chart.first.locator("svg text", has_text=re.compile(r"^warm start (@w\d+ )?\d+%$"))
            warm.first.wait_for()
            assert warm.count() == 2  # warm seeds 0 and 1, each its own line
            assert chart.first.locator("svg text", has_text=re.compile("^map-blind")).count() == 0
            text = main.inner_text()
            assert "calculator-dpo" in text and "calculator-rloo" in text
            assert "detectable with 80% power" in text
            assert "pass@k on held-out problems" in text
            tables = main.locator('[data-testid="stTable"]')
            assert tables.count() >= 2
            for i in range(tables.count()):
                cell_text = tables.nth(i).inner_text()
                assert "None" not in cell_text and "nan" not in cell_text.split()
                assert tables.nth(i).evaluate("e => e.scrollWidth <= e.clientWidth + 1"), cell_text[:200]
        finally:
            browser.close()

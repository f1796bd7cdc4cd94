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
            page.goto(compare_app + "/compare?grid=demo")
            page.get_by_role("heading", name="Compare algorithms").wait_for()
            page.get_by_role("heading", name="calculator").wait_for()
            # the budget line comes from the grid file
            page.get_by_text(re.compile(r"recipe quick")).first.wait_for()
            # the interval chart and the leaderboard table are drawn
            page.locator('[data-testid="stVegaLiteChart"]').first.wait_for()
            table = page.locator('[data-testid="stDataFrame"]').first
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

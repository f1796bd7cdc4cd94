"""A real browser on the explorer's node page and Search, on the shipped results: the GRPO node page with all its
sections (the time it takes is measured in benchmarks/app_bench.py, not here), search titles that look like links,
"More like the top 3" only for a typed query, and an export that says which results it holds."""
import re

import pytest

from app.testing import launch_chromium
from test_browser_compare import _open_complete

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("app-server")]


def test_grpo_node_page_renders_every_section(require_chromium, app_server):
    from playwright.sync_api import sync_playwright

    from app.page_checks import COMPLETE

    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            _open_complete(page, app_server.url + "/taxonomy?node=alg-grpo", COMPLETE["Node page (GRPO)"][1])
            line = page.get_by_text(re.compile(r"^In the comparison grid core \(calculator, 3 seeds\)")).inner_text()
            assert "SFT + RL held-out" in line and "%" in line
            page.locator('[data-testid="stPageLink"]', has_text="See the comparison").wait_for()
            page.locator(".katex").first.wait_for()  # the loss equation, typeset
        finally:
            browser.close()


def test_search_titles_are_links_and_exports_say_what_they_hold(require_chromium, app_server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            _open_complete(page, app_server.url + "/search", [("h1", "Search"),
                                                              ('[data-testid="stCaptionContainer"]', "Browsing all")])
            assert page.get_by_text("More like the top 3").count() == 0  # no query: nothing to be like
            _open_complete(page, app_server.url + "/search?q=memory+agents", [("p", "for “memory agents”"),
                                                                              ("p", "1. ")])
            page.get_by_text("More like the top 3").wait_for()
            title = page.locator('[class*="st-key-hit-1"] [data-testid="stPageLink-NavLink"] p').first
            style = title.evaluate("e => { const s = getComputedStyle(e); return [s.color, s.textDecorationLine]; }")
            body = page.locator("h1").first.evaluate("e => getComputedStyle(e).color")
            assert style[1] == "underline" and style[0] != body
            assert page.get_by_text("The top 10 (ranked)").count() == 1
            assert page.get_by_text(re.compile(r"^All \d+ matches$")).count() == 1
            assert page.get_by_role("button", name=re.compile(r"BibTeX \(10\)")).count() == 1
        finally:
            browser.close()

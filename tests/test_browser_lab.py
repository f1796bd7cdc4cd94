"""A real browser: open a node, press "Run this", launch the quick preset, see the curve grow, stop it."""
import os
import re
import tempfile

import pytest

from app.testing import (chromium_path, follow_page_link, free_port, launch_chromium, start_app, stop_app,
                         wait_healthy)

pytestmark = pytest.mark.browser


@pytest.fixture
def lab_app():
    if not chromium_path():
        if os.environ.get("ATLAS_REQUIRE_BROWSER") == "1":
            pytest.fail("Debian's chromium is not installed but ATLAS_REQUIRE_BROWSER=1")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    data = tempfile.mkdtemp(prefix="atlas-lab-")  # runs of this test stay out of the user's data dir
    port = free_port()
    proc = start_app(port, env={"ATLAS_DATA_DIR": data})
    try:
        wait_healthy(port, proc)
        yield f"http://127.0.0.1:{port}", data
    finally:
        stop_app(proc)
        from lab.runs import RunManager

        manager = RunManager(os.path.join(data, "runs"))
        for run in manager.list():
            if run.status in ("running", "queued"):
                manager.delete(run.id)


def test_run_this_launch_watch_stop(lab_app):
    from playwright.sync_api import sync_playwright

    base_url, data = lab_app
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(120_000)
            page.goto(base_url + "/taxonomy?node=alg-dapo")
            page.get_by_role("heading", name="DAPO").first.wait_for()
            follow_page_link(page, re.compile("Run this"), "Lab")
            page.wait_for_function("() => window.location.search.includes('impl=calculator-dapo')")
            # "Run this" opens the preset measured to learn on the calculator (SmolLM2, lab/recipes/learn.yaml);
            # this test launches the tiny model's quick preset instead, to watch the machinery fast
            assert "preset=learn" in page.url
            page.get_by_text("Watch it learn").first.wait_for()
            page.get_by_text(re.compile("^Quick demo")).first.click()
            page.get_by_text(re.compile("tiny model is randomly initialised")).first.wait_for()
            page.get_by_test_id("stBaseButton-primary").filter(has_text="Launch").click()
            page.wait_for_function("() => window.location.search.includes('run=')")
            # the curve grows: the progress text advances past step 0 and a chart is drawn
            page.get_by_text(re.compile(r"step [1-9]\d*/20")).first.wait_for()
            page.locator('[data-testid="stVegaLiteChart"]').first.wait_for()
            first = page.get_by_text(re.compile(r"step \d+/20")).first.inner_text()
            page.get_by_text(re.compile(r"step ([2-9]|1\d)/20")).first.wait_for()
            # our Stop button, not Streamlit's own header "Stop" (shown while a script reruns)
            page.get_by_test_id("stBaseButton-secondary").filter(has_text="Stop").click()
            page.get_by_text(re.compile(r"status stopped")).first.wait_for()
            assert first != page.get_by_text(re.compile(r"step \d+/20")).first.inner_text()
        finally:
            browser.close()

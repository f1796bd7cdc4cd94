"""A real browser: open a node, press "Run this", launch the quick preset, see the curve grow, stop it; the
warm start's stage, Stop, and the run's name on the Runs page."""
import contextlib
import re

import pytest

from app.testing import follow_page_link, launch_chromium

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("app-server")]


@pytest.fixture
def lab_app(require_chromium, app_server):
    """The session's shared server (tests/conftest.py); the run this test launches lands in its own data
    folder, out of the user's data dir, and no training process outlives the test."""
    try:
        yield app_server.url, str(app_server.data)
    finally:
        from lab.runs import RunManager

        manager = RunManager(app_server.data / "runs")
        for run in manager.list():
            if run.status in ("running", "queued"):
                manager.delete(run.id)


@contextlib.contextmanager
def browser_page(width: int):
    """A page of Debian's Chromium, ``width`` x 900, closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.set_default_timeout(120_000)
            yield page
        finally:
            browser.close()


def test_run_this_launch_watch_stop(lab_app):
    base_url, data = lab_app
    with browser_page(1280) as page:
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


def _launch_with_warm_start(page, base_url: str, sft_steps: int) -> str:
    """Open calculator-dapo's quick preset (tiny model), set a warm start of ``sft_steps`` SFT steps, launch;
    returns the run id from the URL."""
    page.goto(base_url + "/lab?impl=calculator-dapo&preset=quick")
    page.get_by_text(re.compile("tiny model is randomly initialised")).first.wait_for()
    page.get_by_text("Hyperparameters").first.click()
    field = page.get_by_role("spinbutton", name="sft_steps")
    field.fill(str(sft_steps))
    field.press("Enter")
    page.wait_for_function(f"() => [...document.querySelectorAll('input')].some(i => i.value === '{sft_steps}')")
    page.get_by_test_id("stBaseButton-primary").filter(has_text="Launch").click()
    page.wait_for_function("() => window.location.search.includes('run=')")
    return re.search(r"run=([\w.-]+)", page.url).group(1)


def test_stage_during_the_warm_start_stop_and_the_run_named_on_runs(lab_app):
    """issue 45: the Lab says the run is in its warm start (step k/n) while it is, Streamlit's own header
    "Running... Stop" never shows beside the page's Stop, Stop reads "stopping" or "stopped" at once and reaches
    "stopped", and the Runs page names the run by its implementation (calculator-dapo, not "grpo")."""
    base_url, _ = lab_app
    with browser_page(1440) as page:
        run_id = _launch_with_warm_start(page, base_url, 2000)
        stage = page.get_by_text(re.compile(r"warm start \(SFT on demonstrations\): step [1-9]\d*/2000"))
        stage.first.wait_for()
        page.get_by_text(re.compile(r"calculator-dapo · tiny · preset quick · status running")).first.wait_for()
        header_stop = page.locator('[data-testid="stStatusWidget"]')
        for _ in range(10):  # five auto-refreshes of the live view
            assert not header_stop.is_visible(), "Streamlit's header Running/Stop is shown"
            page.wait_for_timeout(500)
        page.get_by_test_id("stBaseButton-secondary").filter(has_text="Stop").click()
        page.get_by_text(re.compile(r"status (stopping|stopped)")).first.wait_for(timeout=2_000)
        page.get_by_text(re.compile(r"status stopped")).first.wait_for(timeout=30_000)
        # Resume: the page goes back to refreshing itself (the stage shows the new warm start), and stops again
        page.get_by_test_id("stBaseButton-secondary").filter(has_text="Resume").click()
        page.get_by_text(re.compile(r"status running")).first.wait_for(timeout=30_000)
        stage.first.wait_for()
        page.get_by_test_id("stBaseButton-secondary").filter(has_text="Stop").click()
        page.get_by_text(re.compile(r"status stopped")).first.wait_for(timeout=30_000)
        page.goto(base_url + "/runs")
        page.get_by_text(f"calculator-dapo · {run_id} · stopped").first.wait_for()
        assert page.get_by_text(re.compile(r"^grpo ")).count() == 0

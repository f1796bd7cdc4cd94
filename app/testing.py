"""Start and stop the explorer the way the README says (``make app PORT=...``) and drive it with Chromium.

Shared by the browser tests, ``benchmarks/app_bench.py`` and ``scripts/screenshots.py``. It lives in the
app package (it knows how the app is served) so that all three import it the same way, as
``app.testing``; the tests folder is not a package and benchmarks must not depend on it. It imports no
Streamlit and needs a source checkout (it runs ``make`` in it).
What each page shows once it is complete, and the screenshots, are in ``app.page_checks``.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Debian's chromium under Playwright (never `playwright install`); see ../shared/STACK-NOTES.md
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(port: int, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        ["make", "app", f"PORT={port}"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True, env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
    )


def wait_healthy(port: int, proc: subprocess.Popen, timeout: float = 120, poll: float = 0.5) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, proc.stdout.read().decode()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(poll)
    raise AssertionError(f"app not healthy on port {port} after {timeout}s")


def stop_app(proc: subprocess.Popen, grace: float = 15) -> None:
    """Stop `make` and everything it started. Streamlit can outlive `make` on SIGTERM (it shuts down
    from its event loop, which a busy machine delays), so wait for the whole group, then SIGKILL it."""
    pgid = proc.pid  # start_new_session: the group id is make's pid

    def group_alive() -> bool:
        try:
            os.killpg(pgid, 0)
            return True
        except ProcessLookupError:
            return False

    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.time() + grace
    while group_alive() and time.time() < deadline:
        try:
            proc.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
    if group_alive():
        os.killpg(pgid, signal.SIGKILL)
    proc.wait(timeout=5)


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def launch_chromium(playwright, home: str | None = None):
    """Launch Debian's chromium with a fresh profile and HOME/XDG dirs in a temp folder. A temp folder made
    here is removed when the browser closes (or disconnects); a ``home`` given by the caller is the caller's."""
    made = home is None
    home = home or tempfile.mkdtemp(prefix="atlas-chromium-")
    env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": f"{home}/.config", "XDG_CACHE_HOME": f"{home}/.cache"}
    # Playwright gives every launch its own fresh --user-data-dir (it refuses one passed in args)
    try:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS, env=env)
    except BaseException:
        if made:
            shutil.rmtree(home, ignore_errors=True)
        raise
    if made:
        browser.on("disconnected", lambda _browser: shutil.rmtree(home, ignore_errors=True))
    return browser


RUNNING = '[data-testid="stStatusWidgetRunningIcon"]'  # Streamlit's "Running..." icon


def wait_script_idle(page, timeout_ms: float = 120_000) -> None:
    """Wait until the page's Streamlit script run has finished (its "Running..." icon is gone).

    A click on a link while the script is still streaming elements can land on an element that the rerun
    then replaces; waiting for the run to end first makes the click land on the page as the user sees it.
    """
    page.locator(RUNNING).wait_for(state="detached", timeout=timeout_ms)


#: how long a click on a page link may go without any sign that the app took it (the URL changes when the new
#: page's script starts; the running icon shows while a script runs)
CLICK_TAKEN_MS = 15_000


def follow_page_link(page, link_name, heading: str, timeout_ms: float = 120_000) -> None:
    """Click the page link ``link_name`` (text or regex) and wait for the target page's ``heading`` (exact).

    Streamlit drops a click on a page link while the browser is not connected to the server (it draws the link
    greyed, with a ``disabled`` attribute), so the click waits for the link to be enabled. A click that still
    leaves no trace within ``CLICK_TAKEN_MS`` (URL unchanged, no script running: seen once in CI at load ~6,
    the browser still on the old page two minutes later) is made once more, as a user would, and said on
    stderr; the target page must then show up as before. On a timeout the error names the URL the browser
    reached, whether the link was enabled and the start of what the page shows, so a failure in CI says whether
    the click was lost, the page errored, or it was still loading.
    """
    import sys

    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    link = page.get_by_role("link", name=link_name)
    enabled = link.and_(page.locator("a:not([disabled])"))

    def click() -> bool:
        """Click once; True when the app took the click (navigation or a script run began)."""
        wait_script_idle(page, timeout_ms)
        enabled.wait_for(timeout=timeout_ms)
        before = page.url
        link.click()
        try:
            page.wait_for_function("([url, running]) => window.location.href !== url || "
                                   "document.querySelector(running) !== null",
                                   arg=[before, RUNNING], polling=100, timeout=CLICK_TAKEN_MS)
            return True
        except PlaywrightTimeout:
            return False

    if not click() and not page.get_by_role("heading", name=heading, exact=True).is_visible():
        print(f"follow_page_link: the click on {link_name!r} left no trace within {CLICK_TAKEN_MS / 1000:.0f} s "
              f"(still at {page.url}); clicking again", file=sys.stderr)
        click()
    try:
        page.get_by_role("heading", name=heading, exact=True).wait_for(timeout=timeout_ms)
    except PlaywrightTimeout as err:
        shown = page.locator("body").inner_text(timeout=5_000)[:1500]
        state = "no such link any more" if not link.count() else (
            "enabled" if enabled.count() else "disabled (browser not connected)")
        raise AssertionError(f"after clicking {link_name!r} no heading {heading!r} within {timeout_ms / 1000:.0f} s; "
                             f"the browser is at {page.url}; the link is {state}; the page shows:\n{shown}") from err

"""The app in a real headless Chromium: start a run on the scripted model, Step to the end, take a screenshot."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = [pytest.mark.browser, pytest.mark.slow]

if not CHROMIUM.exists():
    pytest.skip("no Chromium at /usr/bin/chromium (install the Debian package chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    port = _free_port()
    env = {
        **os.environ,
        "AGENTCORE_PROVIDER": "scripted",
        "AGENTCORE_DB": str(tmp_path_factory.mktemp("db") / "runs.db"),
    }
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"streamlit did not start: {proc.stdout.read() if proc.stdout else ''}")
        time.sleep(0.3)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def browser():
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def test_stepping_a_scripted_run_to_the_end_in_a_browser(app_url, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    expect = sync_api.expect
    page.goto(app_url)
    start = page.locator(".st-key-start button")
    expect(start).to_be_visible(timeout=30_000)
    start.click()
    step = page.get_by_role("button", name="Step", exact=True)
    expect(step).to_be_enabled(timeout=20_000)
    budget = page.get_by_test_id("stMetricValue").first
    for n in range(1, 11):
        if step.is_disabled():
            break
        step.click()
        expect(budget).to_have_text(re.compile(rf"^{n} / \d+$"), timeout=20_000)
        page.wait_for_timeout(300)  # let the redraw after the phase settle
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 2400})  # the app scrolls inside its own container
    page.wait_for_timeout(500)
    page.screenshot(path=str(ARTIFACTS / "playground.png"), full_page=True)
    expect(page.get_by_text("Stop reason:")).to_be_visible(timeout=20_000)
    expect(page.get_by_text("answer", exact=True).first).to_be_visible()
    expect(page.locator(".st-key-msg_5")).to_contain_text("Here is the weather (simulated data):")
    expect(page.locator(".st-key-msg_0")).to_contain_text("user")
    expect(page.locator(".st-key-msg_1")).to_contain_text("get_weather")
    assert step.is_disabled()
    page.close()

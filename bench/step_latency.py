"""Figure 8: in a real browser, the time from clicking Step until the step's first new message is on the page.

The app runs as `make run` starts it (streamlit run app.py), on the scripted model's `runaway` scenario,
over a runs database seeded with an open run of about 10 and about 100 messages; headless Chromium
(Debian's /usr/bin/chromium) is driven by Playwright. Each sample is one click of Step, timed until the
page's text holds the new message's index (`#N`), polled on every animation frame.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from common import ROOT, Row, median, progress, ratio, unavailable

FIGURE = "8. Step in the browser"
CHROMIUM = Path("/usr/bin/chromium")
SIZES = (10, 100)  # messages in the run when Step is clicked
CLICKS = 7


def seeded_run(messages: int):
    """An open `runaway` run of about `messages` messages, made by agentcore's loop: each step adds two."""
    from agentcore import Agent, Run, RunConfig, ScriptedProvider
    from agentcore.toolbox import TOOLBOX

    run = Run.start("Find out what a step budget is.", RunConfig(scenario="runaway", model="runaway", max_steps=500))
    run.config = run.config.model_copy(update={"tools": [TOOLBOX["search_notes"].spec()]})
    agent = Agent(ScriptedProvider(scenario="runaway"), [TOOLBOX["search_notes"]])
    while len(run.messages) < messages - 1:
        agent.step(run)
    return run


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(db: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """`streamlit run app.py` on a free port over `db`; returns the process and its address once healthy."""
    port = free_port()
    env = {**os.environ, "AGENTCORE_PROVIDER": "scripted", "AGENTCORE_DB": str(db)}
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as reply:
                if reply.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"the app did not start within 60 s (log: {log})")


def open_run(page, url: str) -> None:
    """Load the app and bring the seeded run on screen: a fresh tab offers the last run, so take the offer."""
    page.goto(url)
    reopen = page.locator(".st-key-reopen button")
    step = page.get_by_role("button", name="Step", exact=True)
    reopen.or_(step).first.wait_for(state="visible", timeout=60_000)
    if reopen.count():
        reopen.click()
    deadline = time.monotonic() + 60
    while not (step.count() and step.first.is_enabled()):
        if time.monotonic() > deadline:
            raise RuntimeError("the seeded run did not come on screen with Step enabled")
        page.wait_for_timeout(100)


def click_ms(page, next_index: int) -> float:
    """Milliseconds from a click on Step until the text `#next_index` (the step's first new message) shows."""
    step = page.get_by_role("button", name="Step", exact=True)
    step.wait_for(state="visible")
    page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=30_000)
    started = time.perf_counter()
    step.click()
    page.wait_for_function(
        "n => new RegExp('#' + n + '\\\\b').test(document.body.innerText)", arg=next_index, timeout=30_000
    )
    return (time.perf_counter() - started) * 1000


def measure() -> list[Row]:
    """Median click-to-message time at each run size, and the ratio of the largest to the smallest."""
    if not CHROMIUM.exists():
        return [unavailable(FIGURE, "click Step → new message", "no /usr/bin/chromium (Debian package chromium)")]
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return [unavailable(FIGURE, "click Step → new message", "the playwright package is not installed")]
    from agentcore.store import LAST_RUN_KEY, Store

    rows: list[Row] = []
    first: float | None = None
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
        )
        for size in SIZES:
            progress(f"Step in the browser, {size} messages")
            db = Path(tmp) / f"runs-{size}.db"
            run = seeded_run(size)
            store = Store(db)
            store.save_run(run)
            store.set_meta(LAST_RUN_KEY, run.id)
            store.close()
            proc, url = start_app(db, Path(tmp) / f"app-{size}.log")
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                open_run(page, url)
                count = len(run.messages)
                samples = []
                for _ in range(CLICKS):
                    samples.append(click_ms(page, count))
                    count += 2  # the runaway model's call and its result
                page.close()
            finally:
                proc.terminate()
                proc.wait(timeout=10)
            value = median(samples)
            first = value if first is None else first
            note = f"{len(run.messages)} messages at the first click; median of {CLICKS} clicks"
            if size == SIZES[0]:
                rows.append(Row(FIGURE, f"scripted, {size} messages", value, "ms", note=note))
            else:
                rows.append(
                    Row(FIGURE, f"scripted, {size} messages", value, "ms", ratio(value, first), f"of {SIZES[0]}", note)
                )
        browser.close()
    return rows

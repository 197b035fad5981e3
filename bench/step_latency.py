"""Figure 8: in a real browser, the time from clicking Step until the step's first new message is on the page.

The app runs as `make run` starts it (streamlit run app.py), on the scripted model's `runaway` scenario,
over a runs database seeded with an open run of about 10 and about 100 messages; headless Chromium
(Debian's /usr/bin/chromium) is driven by Playwright. Each sample is one click of Step, timed in the page
from the click to the first frame drawn once the new message (`#N`) is on it, which a MutationObserver
sees (with --poll, by Playwright's clock until the page's text holds `#N`, polled on every frame).

Beside the wall time, each sample takes the CPU time the click cost: the app server's process and the
browser's (Chromium's processes and Playwright's driver), read from /proc. On a shared machine the wall
time swings with the load while the CPU time stays put, so the CPU time is the steadier figure there.

    .venv/bin/python bench/step_latency.py                 # both sizes, 7 clicks each
    .venv/bin/python bench/step_latency.py --clicks 5 10   # only 10 messages, 5 clicks; prints each sample
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import common
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


def start_app(db: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """The app on the scripted model over `db`."""
    return common.start_app({"AGENTCORE_PROVIDER": "scripted", "AGENTCORE_DB": str(db)}, log)


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


def cpu_ms(server: int) -> tuple[float, float]:
    """CPU milliseconds used so far by the server's processes and by the browser's (every other child of this one)."""
    tick = 1000 / os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    used: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended while the list was read
        pid = int(stat.parent.name)
        parent[pid], used[pid] = int(fields[1]), (int(fields[11]) + int(fields[12])) * tick

    def under(pid: int, root: int) -> bool:
        while pid > 1:
            if pid == root:
                return True
            pid = parent.get(pid, 0)
        return False

    me = os.getpid()
    server_ms = sum(ms for pid, ms in used.items() if under(pid, server))
    browser_ms = sum(ms for pid, ms in used.items() if pid != me and under(pid, me) and not under(pid, server))
    return server_ms, browser_ms


@dataclass(frozen=True)
class Sample:
    """One click: the wall time until the message shows, and the CPU time the server and the browser spent."""

    wall_ms: float
    server_cpu_ms: float
    browser_cpu_ms: float


# Set before the click: the time of the click, and a promise of the time of the first frame drawn once the
# message `#n` is on the page. A MutationObserver looks only when the page changes, so the watching costs the
# page next to nothing; polling the page's text on every frame (--poll) lays out the whole page each time, on
# the thread that draws it, and so slows down what it measures.
WATCH = """n => {
  window.__clicked = null;
  document.addEventListener('click', () => { window.__clicked ??= performance.now(); }, {capture: true, once: true});
  const shown = () => new RegExp('#' + n + '\\\\b').test(document.querySelector('.st-key-msg_' + n)?.textContent ?? '');
  window.__shown = new Promise(resolve => {
    const observer = new MutationObserver(() => {
      if (shown()) { observer.disconnect(); requestAnimationFrame(() => resolve(performance.now())); }
    });
    observer.observe(document.body, {childList: true, subtree: true, characterData: true});
  });
}"""


def click(page, next_index: int, server: int, poll: bool = False) -> Sample:
    """Click Step and wait until the message `#next_index` (the step's first new message) is on the page."""
    # found by its key's class, not by role and name: a role query walks the whole page, in the time measured
    step = page.locator(".st-key-step button").first
    step.wait_for(state="visible")
    page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=30_000)
    page.wait_for_timeout(300)  # let the last redraw's trailing work end, so it is not counted in this click
    if not poll:
        page.evaluate(WATCH, next_index)
    cpu_before = cpu_ms(server)
    started = time.perf_counter()
    step.click()
    if poll:
        page.wait_for_function(
            "n => new RegExp('#' + n + '\\\\b').test(document.body.innerText)", arg=next_index, timeout=30_000
        )
        wall = (time.perf_counter() - started) * 1000
    else:
        wall = page.evaluate("async () => (await window.__shown) - window.__clicked")
    cpu_after = cpu_ms(server)
    return Sample(wall, cpu_after[0] - cpu_before[0], cpu_after[1] - cpu_before[1])


def measure(sizes: tuple[int, ...] = SIZES, clicks: int = CLICKS, poll: bool = False) -> list[Row]:
    """Median click-to-message time at each run size, and the ratio of the largest to the smallest."""
    if not CHROMIUM.exists():
        return [unavailable(FIGURE, "click Step → new message", "no /usr/bin/chromium (Debian package chromium)")]
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return [unavailable(FIGURE, "click Step → new message", "the playwright package is not installed")]
    from agentcore.store.runs import LAST_RUN_KEY, Store

    rows: list[Row] = []
    first: float | None = None
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
        )
        for size in sizes:
            progress(f"Step in the browser, {size} messages")
            db = Path(tmp) / f"runs-{size}.db"
            run = seeded_run(size)
            store = Store(db)
            store.save_run(run)
            store.set_meta(LAST_RUN_KEY, run.id)
            store.close()
            log = Path(tmp) / f"app-{size}.log"
            proc, url = start_app(db, log)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                open_run(page, url)
                count = len(run.messages)
                samples = []
                for _ in range(clicks):
                    samples.append(click(page, count, proc.pid, poll))
                    count += 2  # the runaway model's call and its result
                page.close()
            except Exception as exc:  # noqa: BLE001 - re-raised with the app log, which says why
                raise RuntimeError(f"{exc}\nthe app's log ends: {log.read_text(errors='replace')[-2000:]}") from None
            finally:
                proc.terminate()
                proc.wait(timeout=10)
            value = median([s.wall_ms for s in samples])
            first = value if first is None else first
            for what in ("wall_ms", "server_cpu_ms", "browser_cpu_ms"):
                progress(f"  {what}: {', '.join(f'{getattr(s, what):.0f}' for s in samples)}")
            server_cpu = median([s.server_cpu_ms for s in samples])
            browser_cpu = median([s.browser_cpu_ms for s in samples])
            note = (
                f"{len(run.messages)} messages at the first click; median of {clicks} clicks; "
                f"CPU {server_cpu:.0f} ms server + {browser_cpu:.0f} ms browser"
            )
            if size == sizes[0]:
                rows.append(Row(FIGURE, f"scripted, {size} messages", value, "ms", note=note))
            else:
                rows.append(
                    Row(FIGURE, f"scripted, {size} messages", value, "ms", ratio(value, first), f"of {sizes[0]}", note)
                )
        browser.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    """Figure 8 alone: each sample on stderr, the rows on stdout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, help=f"messages in the run (default: {SIZES})")
    parser.add_argument("--clicks", type=int, default=CLICKS, help="clicks of Step at each size")
    parser.add_argument("--poll", action="store_true", help="time by polling the page's text on every frame")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    for row in measure(tuple(args.sizes) or SIZES, args.clicks, args.poll):
        print(" | ".join(row.cells()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

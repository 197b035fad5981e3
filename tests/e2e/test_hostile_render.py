"""A hostile run in a real Chromium: every page that shows it asks nothing of any host but the app's own.

The run (tests/app/test_rendering.py) carries Markdown images, links, raw HTML, a script and code-span
break-outs in its messages, names, ids, title, model, error and wire exchange. It is put in the
app's database before the app starts, so the playground opens on it; each page is then visited
while every request the page makes is recorded (and any to another host refused).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urlsplit

import pytest
from support.browser import WAIT, expect, row_action
from support.hostile import EVIL, hostile_run
from support.servers import start_app

from agentcore.store.runs import LAST_RUN_KEY, Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def hostile_app(tmp_path_factory):
    """The app over a database holding the hostile run, a fork of it and a run waiting for tool decisions."""
    workdir = tmp_path_factory.mktemp("hostile-app")
    store = Store(workdir / "runs.db")
    run, pending = hostile_run(), hostile_run(pending=True)
    # the fork saved last, so the Runs page opens on it whatever the clock: the newest save first, and an id of hex
    # digits before the others' on a tie (the waiting run saved last was first there whenever a millisecond passed)
    for r in (pending, run, run.fork(1)):
        store.save_run(r)
    store.set_meta(LAST_RUN_KEY, run.id)  # a new browser session opens on the last run viewed
    server = start_app(workdir, {"AGENTCORE_PROVIDER": "scripted", "AGENTCORE_DB": str(workdir / "runs.db")})
    yield server.url, store, run, pending
    server.stop()


class Visit:
    """A page that records every request it makes and refuses those to any host but the app's."""

    def __init__(self, chromium, app: str) -> None:
        self.app = urlsplit(app).netloc
        self.requests: list[str] = []
        self.page = chromium.new_page(viewport={"width": 1400, "height": 2400})
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.route(lambda url: not self._own(url), lambda route: route.abort())

    def _own(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme in ("data", "blob") or parts.netloc == self.app

    def open(self, url: str, ready: Callable[[], None], *, reopen: bool = False) -> None:
        """Go to `url` (taking the offer of the last run when `reopen`), wait until `ready` passes, then give late
        images and scripts time to load."""
        self.page.goto(url)
        if reopen:  # a fresh tab offers the last run rather than opening it
            button = self.page.locator(".st-key-reopen button")
            expect(button).to_be_visible(timeout=WAIT)
            button.click()
        ready()
        self.page.wait_for_timeout(1500)

    def check(self, where: str, shows: str) -> None:
        """Nothing left the app, nothing links away or runs, and the hostile text is there, as text."""
        page = self.page
        foreign = [url for url in self.requests if not self._own(url)]
        assert not foreign, f"{where}: requests to other hosts: {foreign}"
        images = page.eval_on_selector_all("img", "els => els.map(e => e.src)")
        assert not [src for src in images if not self._own(src)], f"{where}: images from other hosts: {images}"
        links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        assert not [href for href in links if EVIL in href], f"{where}: links to {EVIL}: {links}"
        assert page.evaluate("typeof window.pwned") == "undefined", f"{where}: a script from the run ran"
        assert page.locator(".stMarkdownColoredText, .stMarkdownBadge", has_text="SPOOF").count() == 0, where
        assert page.locator("span[role=img]", has_text=re.compile(r"^home$")).count() == 0, where
        assert page.locator(".katex").count() == 0, where
        expect(page.get_by_text(shows).first).to_be_attached()


def test_a_hostile_run_fetches_links_and_runs_nothing_on_any_page(hostile_app, browser):
    url, store, run, pending = hostile_app
    visit = Visit(browser, url)
    page = visit.page

    visit.open(url, lambda: expect(page.locator(".st-key-msg_5")).to_be_visible(timeout=WAIT), reopen=True)
    expect(page.get_by_text("The model call failed")).to_be_visible()
    visit.check("playground, messages", f"{EVIL}/answer-img?d=secret")
    page.get_by_role("tab", name=re.compile(r"^Steps")).click()  # drawn once opened
    page.get_by_text("Wire view: the exact request").click()
    page.wait_for_timeout(500)
    visit.check("playground, steps", f"{EVIL}/wire?d=secret")

    visit.open(f"{url}/runs", lambda: expect(page.get_by_text("Compare with another run")).to_be_visible(timeout=WAIT))
    visit.check("runs", f"{EVIL}/title-img")

    store.set_meta(LAST_RUN_KEY, pending.id)
    visit.open(url, lambda: expect(page.locator(".st-key-pending")).to_be_visible(timeout=WAIT), reopen=True)
    row_action(page, 2, "edit").click()
    expect(page.get_by_text("Arguments of").first).to_be_visible(timeout=WAIT)
    visit.check("playground, pending calls and the editor", f"{EVIL}/name-img")

    store.set_meta(LAST_RUN_KEY, run.id)
    visit.open(url, lambda: expect(page.locator(".st-key-msg_5")).to_be_visible(timeout=WAIT), reopen=True)
    page.get_by_role("link", name="Cost").click()  # in-app navigation keeps the reopened run current
    expect(page.get_by_text("Every step").first).to_be_visible(timeout=WAIT)
    page.wait_for_timeout(1500)
    visit.check("cost", f"{EVIL}/model-img")

    visit.open(f"{url}/compare", lambda: expect(page.get_by_text("Compare providers")).to_be_visible(timeout=WAIT))
    visit.check("compare", "Compare providers")
    assert visit.requests, "no request was recorded at all"
    page.close()

"""What the browser tests share: one headless Chromium per worker, each test's pages closed as it ends."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest

# the event loop of the worker's Playwright, once started: Playwright's sync API marks it running in the thread after
# each call, and asyncio.run (the MCP clients, the tests after a browser module on the same worker) refuses to start
# while any loop is marked so. It is marked running for each phase of a browser test only, and cleared after it.
_PLAYWRIGHT_LOOP: list[asyncio.AbstractEventLoop] = []


def _each_phase(item: pytest.Item):
    if _PLAYWRIGHT_LOOP:
        asyncio.events._set_running_loop(_PLAYWRIGHT_LOOP[0])
    try:
        return (yield)
    finally:
        asyncio.events._set_running_loop(None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    return (yield from _each_phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    return (yield from _each_phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    return (yield from _each_phase(item))


@pytest.fixture(scope="session")
def chromium():
    """Debian's Chromium through Playwright, headless, with no background network: started once per worker."""
    # imported here: support.browser skips a module that has no Chromium or Playwright before any of this runs
    from support.browser import CHROMIUM, CHROMIUM_ARGS, sync_api

    playwright = sync_api.sync_playwright().start()
    _PLAYWRIGHT_LOOP.append(asyncio.get_running_loop())
    try:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        # the session may end in the teardown of a test that is not a browser test: its loop is not marked running
        asyncio.events._set_running_loop(_PLAYWRIGHT_LOOP[0])
        chromium.close()
    finally:
        asyncio.events._set_running_loop(_PLAYWRIGHT_LOOP[0])
        playwright.stop()
        _PLAYWRIGHT_LOOP.clear()
        asyncio.events._set_running_loop(None)


class _Pages:
    """The worker's Chromium as one module sees it: each page (in a context of its own) or context it opens is
    closed when the test that opened it ends, or, opened by a module's fixture, when the module ends; so none keeps a
    session open on an app server, or reconnecting to one the module has stopped."""

    def __init__(self, chromium) -> None:
        self._chromium = chromium
        self._pages: list = []

    def new_page(self, **options):
        page = self._chromium.new_page(**options)
        self._pages.append(page)
        return page

    def new_context(self, **options):
        context = self._chromium.new_context(**options)
        self._pages.append(context)
        return context

    def __getattr__(self, name: str):
        return getattr(self._chromium, name)

    def close_all(self, since: int = 0) -> None:
        for page in reversed(self._pages[since:]):
            try:
                page.close()
            except Exception:  # noqa: BLE001 - a page its test closed, or one whose browser went away
                pass
        del self._pages[since:]


@pytest.fixture(scope="module")
def browser(chromium):
    pages = _Pages(chromium)
    yield pages
    pages.close_all()


@pytest.fixture(autouse=True)
def _pages_of_the_test(request):
    """Close the pages a test opened as it ends (those of its module's fixtures stay open for the module)."""
    if "browser" not in request.fixturenames:
        yield
        return
    pages = request.getfixturevalue("browser")
    opened = len(pages._pages)
    yield
    pages.close_all(opened)


@pytest.fixture(scope="module")
def axe_source() -> str:
    """axe-core's script, installed from the lock file in tests/npm-mcp when it is not there yet."""
    from support.browser import ARTIFACTS, AXE, NPM_DIR, REPORT

    if not AXE.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("axe-core is not installed and there is no npm to install it (Debian: apt-get install npm)")
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=NPM_DIR, capture_output=True, text=True, timeout=300
        )
        if done.returncode != 0 or not AXE.exists():
            pytest.skip(f"`npm ci` in tests/npm-mcp could not install axe-core: {done.stderr.strip()[-500:]}")
    ARTIFACTS.mkdir(exist_ok=True)
    REPORT.write_text("")
    return AXE.read_text("utf-8")

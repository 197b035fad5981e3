"""What the browser tests share: one headless Chromium per module, each module's pages closed as it ends."""

from __future__ import annotations

import shutil
import subprocess

import pytest


@pytest.fixture(scope="module")
def chromium():
    """Debian's Chromium through Playwright, headless, with no background network: one per module, as Playwright's
    sync API keeps an event loop running in the thread while it is open, and the tests after a browser module on
    the same worker run event loops of their own (the MCP clients, asyncio.run)."""
    # imported here: support.browser skips a module that has no Chromium or Playwright before any of this runs
    from support.browser import CHROMIUM, CHROMIUM_ARGS, sync_api

    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class _Pages:
    """The worker's Chromium as one module sees it: the pages it opens are closed when the module ends, so none
    keeps reconnecting to an app server the module has stopped."""

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

    def close_all(self) -> None:
        for page in reversed(self._pages):
            try:
                page.close()
            except Exception:  # noqa: BLE001 - a page its test closed, or one whose browser went away
                pass


@pytest.fixture(scope="module")
def browser(chromium):
    pages = _Pages(chromium)
    yield pages
    pages.close_all()


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

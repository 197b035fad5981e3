"""What the browser tests share: one headless Chromium per module."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium through Playwright, headless, with no background network."""
    # imported here: test_browser skips a module that has no Chromium or Playwright before any of this runs
    from test_browser import CHROMIUM, CHROMIUM_ARGS, sync_api

    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()

"""A breakpoint in a real Chromium: typed in the sidebar, Run to end stops at it, says which fired and opens the
decision panel; running the tools goes on past it to the answer."""

from __future__ import annotations

import pytest
from support.browser import WAIT, app_over_runs, expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    server = app_over_runs(tmp_path_factory.mktemp("breakpoint-app"))
    yield server.url
    server.stop()


def _idle(page) -> None:
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)


def test_run_to_end_stops_at_a_tool_breakpoint_typed_in_the_sidebar(app, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(app)
    area = page.locator(".st-key-cfg_breakpoints textarea")
    expect(area).to_be_visible(timeout=WAIT)
    # the page drawn whole first, its prompt box filled, as a person sees it before typing: a sidebar value sent
    # while the first draw was still under way (two suites on two cores) once left the prompt box empty
    expect(page.get_by_role("textbox", name="Prompt", exact=True)).not_to_have_value("", timeout=WAIT)
    _idle(page)
    area.fill("args:$.city=Rome")
    area.press("Tab")  # a text area takes its value when it loses the focus
    _idle(page)
    page.locator(".st-key-start button").click()
    run_to_end = page.get_by_role("button", name="Run to end")
    expect(run_to_end).to_be_enabled(timeout=WAIT)
    _idle(page)
    run_to_end.click()
    expect(page.get_by_text("Paused at breakpoint args:$.city=Rome before tools")).to_be_visible(timeout=WAIT)
    panel = page.locator(".st-key-pending")
    expect(panel).to_contain_text("3 tool calls waiting")
    _idle(page)
    page.locator(".st-key-run_tools button").click()
    expect(page.locator(".st-key-pending")).to_have_count(0, timeout=WAIT)
    expect(page.get_by_text("Paused at breakpoint")).to_have_count(0)
    _idle(page)
    page.get_by_role("button", name="Step", exact=True).click()
    expect(page.get_by_text("Stop reason:")).to_be_visible(timeout=WAIT)
    page.close()

"""An imported Claude Code session in a real headless Chromium: opened, stepped through step by step with its
wire view and its subagent link, forked at a step, and the fork stepped on the scripted model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.browser import WAIT, app_over_runs, choose

pytestmark = [pytest.mark.browser, pytest.mark.slow]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
expect = sync_api.expect

REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "sessions"
SAMPLE = REFERENCE / "claude_code" / "v2.1.7_subagent_dir" / "e9fb405b-169f-40eb-9396-7e75076f045d.jsonl"


@pytest.fixture(scope="module")
def session_app(tmp_path_factory):
    """The app over a database holding one imported Claude Code session and its subagent, the session last."""
    if not SAMPLE.exists():
        pytest.skip(f"the real Claude Code session is not here ({SAMPLE} is absent)")
    from agentcore.sessions import read_import
    from agentcore.store.runs import LAST_RUN_KEY, Store

    workdir = tmp_path_factory.mktemp("session-app")
    main, sub = read_import(SAMPLE.read_bytes(), SAMPLE.name, SAMPLE.parent).runs
    server = app_over_runs(workdir, [sub, main])
    store = Store(workdir / "runs.db")
    store.set_meta(LAST_RUN_KEY, main.id)
    yield server.url, main, sub, store
    server.stop()


def reopen_finished(browser, url: str):
    """Open the app and take its offer of the last run, a finished one (so Step stays off until a fork)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    reopen = page.locator(".st-key-reopen button")
    expect(reopen).to_be_visible(timeout=WAIT)
    reopen.click()
    expect(page.get_by_text("Stop reason:")).to_be_visible(timeout=WAIT)
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
    return page


def test_an_imported_claude_code_session_steps_and_forks_in_a_browser(session_app, browser):
    url, main, sub, store = session_app
    page = reopen_finished(browser, url)
    last = len(main.messages) - 1  # the list opens on its last page
    expect(page.locator(f".st-key-msg_{last}")).to_contain_text("analyzed the existing CLI command structure")
    page.get_by_role("tab", name="Steps").click()
    expect(page.get_by_text(f"step 1 started subagent run {sub.id}")).to_be_visible(timeout=WAIT)
    expect(page.get_by_text("imported from the claude-code file")).to_be_visible()
    picker = page.get_by_label("Inspect step")
    for n in (1, 2, len(main.steps)):
        choose(page, picker, str(n))
        step = main.steps[n - 1]
        metrics = page.get_by_test_id("stMetricValue")
        expect(metrics.filter(has_text=re.compile(rf"^{step.usage.input_tokens:,}$")).first).to_be_visible(timeout=WAIT)
        expect(page.get_by_text(f"Cache: {step.usage.cache_read_tokens:,} read")).to_be_visible()
        page.get_by_text("Wire view: the exact request and response").click()
        expect(page.get_by_text(re.compile(r"claude-code, lines? \d+"))).to_be_visible()
    choose(page, picker, "3")
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
    page.get_by_role("button", name="Fork from step 3").click()
    expect(page.get_by_text(f"Forked from run {main.id} at step 3")).to_be_visible(timeout=WAIT)
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
    choose(page, page.get_by_role("combobox", name="Provider"), "scripted")  # the fork goes on with another provider
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
    # a fork of an imported session is read-only until a person chooses who goes on with it
    assert page.get_by_role("button", name="Step", exact=True).count() == 0
    page.get_by_role("button", name="Go on with scripted/weather").click()
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
    page.get_by_role("tab", name="Messages").click()
    step = page.get_by_role("button", name="Step", exact=True)
    expect(step).to_be_enabled(timeout=WAIT)
    step.click()
    # the step's own event: the scripted model's reply drawn as the fork's next message (the page being idle, or
    # the sidebar naming scripted/weather, can come before the click's run has started)
    reply = main.steps[2].message_count  # the fork keeps the messages step 3 was sent; its reply comes next
    expect(page.locator(f".st-key-msg_{reply}")).to_be_visible(timeout=WAIT)
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
    expect(page.locator("code", has_text="scripted/weather").first).to_be_visible(timeout=WAIT)
    page.close()
    fork = next(r for r in store.list_runs(None, None, 50) if r.id not in (main.id, sub.id))
    stepped = store.load_run(fork.id)
    assert stepped.parent.run_id == main.id and stepped.parent.step == 3
    assert [s.provider for s in stepped.steps] == ["anthropic", "anthropic", "scripted"]

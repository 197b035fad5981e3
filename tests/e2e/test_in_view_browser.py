"""What a click changes is on screen where it was made, in a real headless Chromium at 1280x720.

A Step lists its new messages by the controls and leaves the page where it was; with the tools paused,
the decision panel it opens is in view with Step. Cancel on an editor left as it was leaves nothing
pending. A value that cannot be used is refused next to its field; the Runs page's notices are drawn
by the control that caused them. The loop's code and a tool's JSON wrap rather than run off their box,
and the metrics are read in full.
"""

from __future__ import annotations

import json

import pytest
from support.browser import WAIT, app_over_runs, expect, row_action, runaway_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VIEWPORT = {"width": 1280, "height": 720}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The app on the scripted model (its weather scenario asks for three tools at once), over two saved runs."""
    server = app_over_runs(tmp_path_factory.mktemp("in-view-app"), [runaway_run(m, 10) for m in (5, 7)])
    yield server.url
    server.stop()


def _idle(page) -> None:
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
    page.wait_for_timeout(500)


def _in_view(locator, what: str) -> dict:
    """The element is drawn and lies wholly inside the 1280x720 viewport; returns its box."""
    box = locator.bounding_box()
    assert box is not None and box["width"] > 0 and box["height"] > 0, f"{what} is not drawn: {box}"
    inside = box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= VIEWPORT["width"]
    assert inside and box["y"] + box["height"] <= VIEWPORT["height"], f"{what} is not wholly on screen: {box}"
    return box


def _scrolled(page) -> float:
    """How far the app's own scrolling container is scrolled down."""
    return page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollTop")


def _new_run(browser, url: str, pause: bool = False):
    """A new tab on the playground, with the tools paused or not, and a new run; returns the page and Step."""
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(url)
    expect(page.locator(".st-key-start button")).to_be_visible(timeout=WAIT)
    _idle(page)
    if pause:
        page.get_by_test_id("stSidebar").get_by_text("Pause before tools").click()
        _idle(page)
    page.locator(".st-key-start button").click()
    step = page.get_by_role("button", name="Step", exact=True)
    expect(step).to_be_enabled(timeout=WAIT)
    _idle(page)
    return page, step


def test_a_step_shows_its_new_messages_with_step_and_keeps_the_page_in_place(app, browser):
    page, step = _new_run(browser, app)
    step.click()
    latest = page.locator(".st-key-latest")
    expect(latest).to_contain_text("#1", timeout=WAIT)  # the model's turn with its three calls, then the results
    expect(latest).to_contain_text("get_weather")
    _idle(page)
    assert _scrolled(page) == 0
    _in_view(latest, "the new messages")
    _in_view(step, "Step")
    _in_view(page.get_by_test_id("stMetric").first, "the step counter")
    step.click()  # the answer: the newest message is the model's last one, and the run stopped
    expect(latest).to_contain_text("#5", timeout=WAIT)
    _idle(page)
    assert _scrolled(page) == 0
    _in_view(latest, "the answer")
    _in_view(page.get_by_text("Stop reason:"), "the stop reason")
    _in_view(step, "Step")
    expect(page.locator(".st-key-msg_5")).to_contain_text("new")  # the list below marks it too
    page.close()


def test_with_the_tools_paused_a_step_shows_the_decision_panel_with_step(app, browser):
    page, step = _new_run(browser, app, pause=True)
    step.click()
    panel = page.locator(".st-key-pending")
    expect(panel).to_contain_text("3 tool calls waiting", timeout=WAIT)
    _idle(page)
    assert _scrolled(page) == 0
    _in_view(step, "Step")
    _in_view(panel.get_by_role("heading"), "the panel's heading")
    expect(panel).to_contain_text("I'll look up each city at once.")  # what the model said with its calls
    for k in range(3):
        _in_view(page.locator(f".st-key-dec_call_1_{k}"), f"the decision on call {k}")
    _in_view(panel.get_by_role("button", name="Run tools with these decisions"), "Run tools")
    page.close()


def test_cancel_on_an_editor_left_as_it_was_leaves_nothing_pending(app, browser):
    page, step = _new_run(browser, app)
    step.click()
    expect(page.locator(".st-key-latest")).to_contain_text("#4", timeout=WAIT)
    _idle(page)
    for i in (1, 2):  # a model turn with tool calls, and a tool result
        row_action(page, i, "edit").click()
        cancel = page.locator(f".st-key-edit_cancel_{i} button")
        expect(cancel).to_be_visible(timeout=WAIT)
        cancel.click()
        expect(cancel).to_have_count(0, timeout=WAIT)
        _idle(page)
        expect(page.get_by_text("Unapplied edits")).to_have_count(0)
        expect(page.locator(".st-key-discard_edits")).to_have_count(0)
        for name in ("Step", "Model phase", "Run to end"):
            expect(page.get_by_role("button", name=name, exact=True)).to_be_enabled()
    page.close()


def test_arguments_that_are_not_json_are_refused_next_to_their_field(app, browser):
    page, step = _new_run(browser, app, pause=True)
    step.click()
    expect(page.locator(".st-key-pending")).to_be_visible(timeout=WAIT)
    _idle(page)
    # in the decision panel: the reason is drawn under the arguments typed, in view
    page.locator(".st-key-dec_call_1_0").get_by_text("Edit arguments").click()
    field = page.locator(".st-key-dec_args_call_1_0 textarea")
    expect(field).to_be_visible(timeout=WAIT)
    field.fill('{"city": Paris}')
    page.locator(".st-key-run_tools button").click()
    refusal = page.locator(".st-key-pending").get_by_text("the arguments are not JSON")
    expect(refusal).to_be_visible(timeout=WAIT)
    _idle(page)
    _near(_in_view(field, "the arguments typed"), _in_view(refusal, "the reason they were refused"))
    # in the message editor: Save keeps the editor open and says why under the field
    row_action(page, 1, "edit").click()
    field = page.locator(".st-key-edit_args_1_0 textarea")
    expect(field).to_be_visible(timeout=WAIT)
    field.fill("{broken")
    page.locator(".st-key-edit_save_1 button").click()
    refusal = page.locator(".st-key-msg_1").get_by_text("the arguments are not JSON")
    expect(refusal).to_be_visible(timeout=WAIT)
    _idle(page)
    _near(_in_view(field, "the arguments typed"), _in_view(refusal, "the reason they were refused"))
    page.close()


def _near(field: dict, note: dict) -> None:
    """The note starts just below the field."""
    gap = note["y"] - (field["y"] + field["height"])
    assert 0 <= gap <= 60, f"the note is {gap:.0f} px from its field: {field} {note}"


def test_the_runs_page_says_what_a_delete_did_where_it_was_pressed(app, browser):
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{app}/runs")
    delete = page.get_by_role("button", name="Delete…")
    expect(delete).to_be_visible(timeout=WAIT)
    _idle(page)
    delete.click()
    yes = page.get_by_role("button", name="Yes, delete")
    expect(yes).to_be_visible(timeout=WAIT)
    _idle(page)
    yes.click()
    done = page.get_by_text("Deleted run")
    expect(done).to_be_visible(timeout=WAIT)
    _idle(page)
    _in_view(done, "the notice of the delete")
    page.close()


def test_an_import_is_reported_under_the_file_box(app, browser, tmp_path):
    upload = tmp_path / "chat.json"
    upload.write_text(json.dumps([{"role": "user", "content": "Hello?"}, {"role": "assistant", "content": "Hi."}]))
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{app}/runs")
    files = page.locator("input[type=file]")
    expect(files).to_be_attached(timeout=WAIT)
    _idle(page)
    files.set_input_files(str(upload))
    done = page.get_by_text("Imported chat.json")
    expect(done).to_be_visible(timeout=WAIT)
    _idle(page)
    _near(_in_view(page.get_by_test_id("stFileUploader"), "the file box"), _in_view(done, "the notice"))
    page.close()


def test_the_loop_code_and_tool_json_wrap_and_the_metrics_read_in_full(app, browser):
    page, step = _new_run(browser, app)
    step.click()
    expect(page.locator(".st-key-msg_4 .stCode pre")).to_be_attached(timeout=WAIT)  # the last tool's JSON
    _idle(page)
    overflow = """(selector) => Array.from(document.querySelectorAll(selector)).map(
        (el) => [el.scrollWidth - el.clientWidth, el.textContent.slice(0, 80)])"""
    for selector, what in (
        (".st-key-source .ac-src", "the loop's code"),
        ("[class*='st-key-msg_'] .stCode pre", "a tool's JSON"),
        ("[data-testid=stMetricValue] > div", "a metric"),
    ):
        found = page.evaluate(overflow, selector)
        assert found, f"nothing on the page is {what} ({selector})"
        cut = [text for spill, text in found if spill > 0]
        assert not cut, f"{what} is cut off at its right edge: {cut}"
    expect(page.get_by_test_id("stMetricValue").nth(1)).to_have_text("model phase")
    page.close()


def _text_box(locator) -> dict:
    """The box of the text itself (not of its full-width paragraph), through a range over its contents."""
    return locator.evaluate(
        """e => { const range = document.createRange(); range.selectNodeContents(e);
                  const r = range.getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, height: r.height}; }"""
    )


def _overlap(a: dict, b: dict) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and (b["y"] < a["y"] + a["height"])
    )


def test_a_focused_step_leaves_the_next_step_line_uncovered(app, browser):
    page, step = _new_run(browser, app)
    line = page.get_by_test_id("stCaptionContainer").filter(has_text="Next step:").locator("p")
    expect(line).to_contain_text("get_weather")
    step.focus()
    page.wait_for_timeout(1500)  # a tooltip opens after a short delay
    shown = _text_box(line)
    assert shown["width"] > 0, "the next-step line is not drawn"
    tips = page.get_by_role("tooltip")
    covering = [t.inner_text() for t in tips.all() if t.is_visible() and _overlap(t.bounding_box(), shown)]
    assert covering == [], f"a tooltip covers the next-step line: {covering}"
    page.close()


@pytest.fixture(scope="module")
def one_run_app(tmp_path_factory):
    """The app over one saved run with steps, which no other test adds to: Runs opens that run."""
    server = app_over_runs(tmp_path_factory.mktemp("cost-app"), [runaway_run(5, 10)])
    yield server.url
    server.stop()


def test_the_cost_pages_first_chart_is_on_the_first_screen(one_run_app, browser):
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{one_run_app}/runs")
    opener = page.get_by_role("button", name="Open in playground")
    expect(opener).to_be_visible(timeout=WAIT)
    _idle(page)
    opener.click()
    expect(page.get_by_role("button", name="Step", exact=True)).to_be_visible(timeout=WAIT)
    _idle(page)
    page.get_by_test_id("stSidebarNavLink").filter(has_text="Cost").click()
    expect(page.get_by_role("heading", name="Cost", level=1)).to_be_visible(timeout=WAIT)
    _idle(page)
    chart = page.locator(".stPlotlyChart").first
    expect(chart).to_be_visible(timeout=WAIT)
    _idle(page)
    assert "Tokens per step" in chart.inner_text()
    _in_view(chart, "the tokens-per-step chart")
    page.close()

"""The first lesson in a real headless Chromium at 1280x720: after each Step, everything that matters is on screen.

A first-time visitor (an empty runs database) opens the app, follows the playground's offer of the
first lesson, and steps it to its end. Screenshots of each screen are saved under test-artifacts/,
with the time each part took.
"""

from __future__ import annotations

import re
import time

import pytest
from support.browser import WAIT, app_over_runs, choose, expect
from support.servers import ROOT

from ui.lessons import LESSONS, get_lesson

ARTIFACTS = ROOT / "test-artifacts"
VIEWPORT = {"width": 1280, "height": 720}

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def fresh_app(tmp_path_factory):
    """The app on the scripted model with an empty runs database: what a first-time visitor opens."""
    server = app_over_runs(tmp_path_factory.mktemp("lesson-app"))
    yield server.url
    server.stop()


def _inside_viewport(page, selector: str) -> None:
    """The element is drawn, and its whole bounding box lies inside the 1280x720 viewport."""
    box = page.locator(selector).bounding_box()
    assert box is not None, f"{selector} is not drawn"
    assert box["width"] > 0 and box["height"] > 0, f"{selector} is empty: {box}"
    right, bottom = box["x"] + box["width"], box["y"] + box["height"]
    assert box["x"] >= 0 and box["y"] >= 0, f"{selector} starts off screen: {box}"
    assert right <= VIEWPORT["width"] and bottom <= VIEWPORT["height"], f"{selector} runs off screen: {box}"


def _idle(page) -> None:
    """Wait until the app has finished its script run: a click during one can be lost in the page switch."""
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))  # the viewport only: what a projector shows


def test_first_lesson_fits_a_projector_after_every_step(fresh_app, browser):
    lesson = get_lesson(None)
    page = browser.new_page(viewport=VIEWPORT)
    opened = time.monotonic()
    page.goto(fresh_app)
    offer = page.locator(".st-key-lesson_offer")
    link = offer.get_by_role("link")
    expect(link).to_contain_text(lesson.title, timeout=WAIT)
    offered = time.monotonic()
    expect(page.locator(".st-key-start button")).to_be_visible()
    page.wait_for_timeout(500)  # let the rest of the playground finish drawing for the screenshot
    _shot(page, "lesson-offer.png")
    link.click()
    step = page.locator(".st-key-lesson_step button")
    expect(step).to_be_enabled(timeout=WAIT)
    expect(page.locator(".st-key-lesson_narration")).to_contain_text(lesson.intro.split(".")[0])
    _shot(page, "lesson-start.png")
    timings = [f"app opened to the offer: {offered - opened:.1f} s"]
    heading = page.locator(".st-key-lesson_diagram h4")
    stepped = time.monotonic()
    n = 0
    while step.is_enabled():
        n += 1
        _idle(page)
        clicked = time.monotonic()
        step.click()
        expect(heading).to_contain_text(re.compile(rf"^Step {n}: sent \d+ tokens"), timeout=WAIT)
        node = "done" if n == 2 else "model"  # the node the run is at: the model phase is next, or done
        expect(page.locator(".st-key-lesson_diagram img.ac-loop")).to_have_attribute("data-node", node)
        page.wait_for_timeout(300)  # let the redraw after the step settle
        timings.append(f"step {n}, click to redraw: {time.monotonic() - clicked:.1f} s")
        for part in (".st-key-lesson_diagram", ".st-key-lesson_new", ".st-key-lesson_code_model"):
            _inside_viewport(page, part)
        expect(page.locator(".st-key-lesson_new")).to_contain_text("new")
        if n == 1:  # the first step asked for a tool: both phases ran, so both phases' code is shown
            expect(page.locator(".st-key-lesson_new")).to_contain_text("get_weather")
            _inside_viewport(page, ".st-key-lesson_code_tools")
            expect(page.locator(".st-key-lesson_code_tools")).to_contain_text("self._execute(")
        expect(page.locator(".st-key-lesson_code_model")).to_contain_text("response = self._complete(")
        _shot(page, f"lesson-step-{n}.png")
        assert n <= 5, "the first lesson should end within a few steps"
    ended = time.monotonic()
    expect(page.locator(".st-key-lesson_ending")).to_contain_text("What you saw")
    _inside_viewport(page, ".st-key-lesson_ending")
    _inside_viewport(page, ".st-key-lesson_narration")
    expect(page.locator(".st-key-lesson_new")).to_contain_text("Here is the weather")
    timings += [f"first Step to the end of the lesson: {ended - stepped:.1f} s", f"total: {ended - opened:.1f} s"]
    (ARTIFACTS / "lesson-first-visit.txt").write_text("\n".join(timings) + "\n")
    print("\n".join(timings))
    assert n == 2
    page.close()


def _pick_lesson(page, lesson_id: str) -> None:
    """Choose `lesson_id` in the Lesson page's picker."""
    index = list(LESSONS).index(lesson_id)
    if index:
        choose(page, page.locator(".st-key-lesson_id"), nth=index)
    expect(page.locator(".stMain h3")).to_contain_text(LESSONS[lesson_id].title, timeout=WAIT)


def _parts_off_screen(page) -> list[str]:
    """Each drawn part of the lesson screen whose box runs past the 1280x720 viewport, with its bottom edge."""
    boxes = page.evaluate(
        """() => [...document.querySelectorAll('[class*="st-key-lesson_"]')].map(e => {
            const r = e.getBoundingClientRect();
            return [[...e.classList].find(c => c.startsWith('st-key-')), r.right, r.bottom, r.height];
        })"""
    )
    return [
        f"{name} ends at x={right:.0f}, y={bottom:.0f}"
        for name, right, bottom, height in boxes
        if height > 0 and (right > VIEWPORT["width"] or bottom > VIEWPORT["height"])
    ]


@pytest.mark.parametrize("lesson_id", [lesson_id for lesson_id in LESSONS if lesson_id != "loop"])
def test_every_step_of_each_lesson_fits_a_projector_and_shows_the_answer_whole(fresh_app, browser, lesson_id):
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{fresh_app}/lesson")
    step = page.locator(".st-key-lesson_step button")
    expect(step).to_be_enabled(timeout=WAIT)
    _pick_lesson(page, lesson_id)
    heading = page.locator(".st-key-lesson_diagram h4")
    steps = 0
    tools_alone = 0  # Steps that ran only a tools phase: after a mock at a breakpoint, the step goes on
    while True:
        _idle(page)
        mock = page.locator(".st-key-lesson_mock_button button")
        if mock.count():  # the debugging lesson waits at its breakpoint for a mocked result: its box must fit too
            assert _parts_off_screen(page) == [], f"{lesson_id}, at the breakpoint"
            mock.click()
            expect(mock).to_have_count(0, timeout=WAIT)
            _idle(page)
            tools_alone += 1
        fork = page.locator(".st-key-lesson_fork_button button")
        if fork.count():  # the fork lesson waits for a changed tool result: its box must fit too
            assert _parts_off_screen(page) == [], f"{lesson_id}, before the fork"
            fork.click()
            expect(heading).to_contain_text("Step 1:", timeout=WAIT)
            _idle(page)
            steps = 1
        if not step.is_enabled():
            break
        step.click()
        steps += 1
        expect(heading).to_contain_text(f"Step {steps - tools_alone}:", timeout=WAIT)
        _idle(page)
        page.wait_for_timeout(300)  # let the redraw after the step settle
        assert _parts_off_screen(page) == [], f"{lesson_id}, step {steps}"
        assert steps <= 12, f"{lesson_id} should end within its budget"
    ending = page.locator(".st-key-lesson_ending")
    expect(ending).to_contain_text("What you saw")
    _shot(page, f"lesson-{lesson_id}-end.png")
    assert _parts_off_screen(page) == [], f"{lesson_id}, its end"
    newest = page.locator(".st-key-lesson_new")
    said = [t for t in newest.get_by_test_id("stMarkdown").all_inner_texts() if t.startswith("assistant")]
    assert said and not [t for t in said if "…" in t], f"what the model said is cut: {said}"
    if lesson_id == "parallel":  # the answer names each city on a line of its own, none cut short
        for city in ("Paris", "Rome", "Tokyo"):
            expect(newest).to_contain_text(re.compile(rf"{city}: -?[\d.]+° celsius, \w+"))
    page.close()


def test_a_lesson_taken_up_in_a_new_session_says_so_and_still_fits_a_projector(fresh_app, browser):
    """A new session (a new tab, or another app server after the student's stopped) goes on from the saved run: at
    the debugging lesson's breakpoint, the tallest screen, with the line that says so on top of it."""
    first = browser.new_page(viewport=VIEWPORT)
    first.goto(f"{fresh_app}/lesson")
    expect(first.locator(".st-key-lesson_step button")).to_be_enabled(timeout=WAIT)
    _pick_lesson(first, "debug")
    first.locator(".st-key-lesson_step button").click()
    expect(first.locator(".st-key-lesson_mock_button button")).to_be_visible(timeout=WAIT)
    _idle(first)
    first.close()

    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{fresh_app}/lesson")
    expect(page.get_by_text("Resumed your run of this lesson")).to_be_visible(timeout=WAIT)
    expect(page.locator(".stMain h3")).to_contain_text(LESSONS["debug"].title)
    mock = page.locator(".st-key-lesson_mock_button button")
    expect(mock).to_be_visible()
    _idle(page)
    page.wait_for_timeout(300)  # let the redraw settle
    _shot(page, "lesson-resumed.png")
    assert _parts_off_screen(page) == [], "the resumed lesson at its breakpoint"
    mock.click()  # to the lesson's end, so the other tests open on no unfinished run
    expect(mock).to_have_count(0, timeout=WAIT)
    step = page.locator(".st-key-lesson_step button")
    while True:
        _idle(page)
        if not step.is_enabled():
            break
        step.click()
        page.wait_for_timeout(300)
    expect(page.locator(".st-key-lesson_ending")).to_contain_text("What you saw", timeout=WAIT)
    page.close()

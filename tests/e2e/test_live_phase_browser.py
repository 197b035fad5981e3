"""A slow model phase in a real headless Chromium: while it runs, the page shows the time so far and the reply as it
streams, in the playground and in the lesson; when it ends, the message takes the box's place.

The scripted model streams at a pace of a word every 0.4 s (AGENTCORE_SCRIPTED_PACE), as a remote model does.
"""

from __future__ import annotations

import re

import pytest
from support.browser import WAIT, app_over_runs, expect, new_run

from agentcore.store.runs import Store
from ui.lessons import get_lesson

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PACE_S = 0.4
ELAPSED = re.compile(r"model phase · (\d+\.\d) s")


@pytest.fixture(scope="module")
def paced_app(tmp_path_factory):
    """The app on a scripted model that streams a word every 0.4 s, over an empty runs database."""
    workdir = tmp_path_factory.mktemp("paced-app")
    server = app_over_runs(workdir, AGENTCORE_SCRIPTED_PACE=str(PACE_S))
    yield server.url, Store(workdir / "runs.db")
    server.stop()


def _watch(page, box: str) -> list[str]:
    """The box's text each time it changed, from its first drawing until it is gone."""
    live = page.locator(box)
    expect(live).to_be_visible(timeout=WAIT)
    seen: list[str] = []
    for _ in range(600):  # a bound on the polls, not on time: the phase ends long before
        if not live.count():
            break
        try:
            text = live.first.inner_text(timeout=1_000)
        except sync_error():  # the box went away between the count and the read
            break
        if not seen or text != seen[-1]:
            seen.append(text)
        page.wait_for_timeout(100)
    return seen


def sync_error():
    from playwright.sync_api import Error

    return Error


def _words(text: str) -> str:
    return " ".join(text.replace("▌", " ").split())


def _streamed_before_the_end(seen: list[str], reply: str) -> None:
    """Some drawings of the box showed a growing time and only part of the reply, each a start of the reply."""
    drawn = [(float(m.group(1)), text) for text in seen if (m := ELAPSED.search(text))]
    assert drawn, f"no drawing showed the model phase's time: {seen}"
    times = [t for t, _ in drawn]
    assert times == sorted(times) and times[-1] > times[0], f"the time did not grow: {times}"
    partial = []
    for _, text in drawn:
        text = text.rsplit("stop_circle", 1)[0]  # the box's Stop button, under the streamed text
        body = _words(text.split("\n", 1)[1]) if "\n" in text else ""
        if body and not body.startswith("Nothing streamed yet"):
            assert _words(reply).startswith(body), f"{body!r} is not the start of the reply {reply!r}"
            partial.append(body)
    assert any(len(p) < len(_words(reply)) for p in partial), f"no part of the reply streamed: {seen}"
    assert any("▌" in text and "characters" in text for _, text in drawn)


def _reply(store: Store, lesson: bool) -> str:
    """The first model reply of the lesson's run, or of the playground's."""
    (found,) = [s for s in store.list_runs() if (s.title or "").startswith("Lesson:") == lesson]
    run = store.load_run(found.id)
    return next(m.content for m in run.messages if m.role == "assistant")


def test_the_playground_shows_the_time_and_the_streamed_reply_while_the_model_phase_runs(paced_app, browser):
    url, store = paced_app
    page, step, _ = new_run(browser, url)
    step.click()
    seen = _watch(page, ".st-key-live")
    reply = _reply(store, lesson=False)
    _streamed_before_the_end(seen, reply)
    latest = page.locator(".st-key-latest")
    expect(latest).to_contain_text(reply.split()[-1], timeout=WAIT)  # the message, drawn in the box's place
    expect(page.locator(".st-key-live")).to_have_count(0)
    expect(page.get_by_text(ELAPSED)).to_have_count(0)
    page.close()


def test_the_lesson_shows_the_time_and_the_streamed_reply_while_its_step_runs(paced_app, browser):
    url, store = paced_app
    lesson = get_lesson(None)
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{url}/lesson")
    step = page.locator(".st-key-lesson_step button")
    expect(step).to_be_enabled(timeout=WAIT)
    expect(page.locator(".stMain h3")).to_contain_text(lesson.title)
    step.click()
    seen = _watch(page, ".st-key-lesson_live")
    reply = _reply(store, lesson=True)
    _streamed_before_the_end(seen, reply)
    expect(page.locator(".st-key-lesson_diagram h4")).to_contain_text("Step 1:", timeout=WAIT)
    expect(page.locator(".st-key-lesson_new")).to_contain_text(reply.split()[-1])
    expect(page.locator(".st-key-lesson_live")).to_have_count(0)
    page.close()

"""A conversation whose user is a person, in a real Chromium: after the agent's answer the page waits for the user's
next turn; the person types it, the agent answers it, and the turn shows who wrote it."""

from __future__ import annotations

import re

import pytest
from support.browser import WAIT, app_over_runs, expect, idle, new_run

from agentcore.messages import UserMessage
from agentcore.store.runs import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("conversation-app")
    server = app_over_runs(workdir)
    yield server.url, workdir
    server.stop()


def test_the_person_types_the_second_turn_and_the_agent_answers_it(app, browser):
    url, workdir = app
    page, _, _ = new_run(browser, url)
    page.get_by_role("button", name="Run to end").click()
    turn = page.get_by_label("Your turn as the user")
    expect(turn).to_be_visible(timeout=WAIT)  # the agent answered: the page waits for the person's turn
    idle(page)
    turn.fill("And what about Oslo?")
    page.locator(".st-key-send_turn button").click()
    expect(page.get_by_text("Oslo").first).to_be_visible(timeout=WAIT)
    expect(page.get_by_label("Your turn as the user")).to_be_visible(timeout=WAIT)  # and waits for the next one
    idle(page)
    runs = Store(workdir / "runs.db").list_runs()
    run = Store(workdir / "runs.db").load_run(runs[0].id)
    said = [m for m in run.messages if isinstance(m, UserMessage)]
    assert [(m.content, m.author.kind) for m in said][1] == ("And what about Oslo?", "person")
    assert run.stop_reason == "answer" and "Oslo" in run.messages[-1].content  # the agent answered it
    page.get_by_role("tab", name="Messages").click()
    idle(page)
    header = page.locator("p").filter(has_text=re.compile(r"^#6\s*user\b.*\bperson$"))
    expect(header).to_be_visible(timeout=WAIT)  # the turn's author, beside it
    page.close()

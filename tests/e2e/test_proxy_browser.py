"""A held call in a real Chromium: an agent (a script on the openai SDK) waits on a request the recording proxy
holds; in the playground, which shows the held call live, a person opens the last user message in the message editor,
changes its text and clicks Edit and send; the agent receives the reply to the edited request (the stand-in upstream
says back what it was asked), and the run records the edit as the step's effect."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support.browser import WAIT, check_axe, expect, idle
from support.proxy_rig import KEY, held, rig_of  # noqa: F401 - rig_of: the fixture
from support.servers import start_app, stop_process
from support.stand_in import Reply

pytestmark = [pytest.mark.browser, pytest.mark.slow]

AGENT = """
import sys
from openai import OpenAI
client = OpenAI(api_key=sys.argv[2], base_url=sys.argv[1] + "/v1", max_retries=0, timeout=120)
reply = client.chat.completions.create(model="gpt-4o-mini", messages=[
    {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}])
print(reply.choices[0].message.content)
"""


def test_a_person_edits_a_held_request_in_the_browser_and_the_agent_gets_the_reply_to_it(
    rig_of,  # noqa: F811 - the fixture imported above
    browser,
    axe_source,
    tmp_path,
):
    pytest.importorskip("openai", reason="the openai package is not installed (pip install '.[test]')")
    rig = rig_of(Reply.echoing(), pause="always")
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    agent = subprocess.Popen(
        [sys.executable, str(script), rig.url, KEY], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    app = start_app(
        tmp_path,
        {"AGENTCORE_PROVIDER": "scripted", "AGENTCORE_DB": str(rig.db), "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none"},
    )
    try:
        [hold] = held(rig)
        editor = f"playground_held_msg_{hold['id']}"
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(app.url)
        last_user = page.locator(f".st-key-{editor}_row_1")
        expect(last_user).to_contain_text("Weather in Paris?", timeout=WAIT)
        idle(page)
        last_user.locator(f".st-key-{editor}_open_1 button").first.click()  # its help is a second button
        area = page.locator(f".st-key-{editor}_content_1 textarea")
        expect(area).to_have_value("Weather in Paris?", timeout=WAIT)
        idle(page)
        check_axe(page, axe_source, "the playground with a held call's message open in the editor")
        area.fill("Weather in Rome?")
        area.press("Tab")  # a text area takes its value when it loses the focus
        idle(page)
        page.locator(f".st-key-playground_held_edited_{hold['id']} button").click()
        out, err = agent.communicate(timeout=WAIT / 1000)
        assert agent.returncode == 0, err[-2000:]
        assert out.strip() == "You asked: Weather in Rome?"
        expect(page.locator(f".st-key-playground_held_send_{hold['id']}")).to_have_count(0, timeout=WAIT)
    finally:
        stop_process(agent)
        app.stop()
    edited = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Rome?"}]
    assert rig.upstream.bodies()[0]["messages"] == edited
    [run] = rig.runs()
    [effect] = run.steps[0].hook_effects
    assert effect.kind == "message_list" and effect.after["messages"] == edited
    assert effect.before[1] == {"role": "user", "content": "Weather in Paris?"}
    assert run.messages[1].content == "Weather in Rome?"


def test_a_call_held_while_the_playground_is_open_shows_there_without_a_click(
    rig_of,  # noqa: F811 - the fixture imported above
    browser,
    tmp_path,
):
    pytest.importorskip("openai", reason="the openai package is not installed (pip install '.[test]')")
    rig = rig_of(Reply.chat("Sunny in Paris."), pause="always")
    app = start_app(
        tmp_path,
        {"AGENTCORE_PROVIDER": "scripted", "AGENTCORE_DB": str(rig.db), "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none"},
    )
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    agent = None
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(app.url)
        expect(page.get_by_text("Playground", exact=True).first).to_be_visible(timeout=WAIT)
        expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
        agent = subprocess.Popen(
            [sys.executable, str(script), rig.url, KEY], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        [hold] = held(rig)
        send = page.locator(f".st-key-playground_held_send_{hold['id']} button")
        expect(send).to_be_visible(timeout=WAIT)  # drawn by the page's own polling: nothing was clicked
        expect(page.locator(f".st-key-playground_held_msg_{hold['id']}_row_1")).to_contain_text("Weather in Paris?")
        send.click()
        out, err = agent.communicate(timeout=WAIT / 1000)
        assert agent.returncode == 0, err[-2000:]
        assert out.strip() == "Sunny in Paris."
        expect(send).to_have_count(0, timeout=WAIT)
    finally:
        if agent is not None:
            stop_process(agent)
        app.stop()
    [run] = rig.runs()
    assert run.steps[0].hook_effects[0].change == "held, then sent as it was"

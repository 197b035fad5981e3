"""A held call in a real Chromium: an agent (a script on the openai SDK) waits on a request the recording proxy
holds; on the Held calls page a person edits the last user message and sends it; the agent receives the reply to
the edited request, and the run records the edit as the step's effect."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.browser import WAIT, check_axe, expect
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
    rig = rig_of(Reply.chat("Rome: 25 C"), pause="always")
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
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{app.url}/held")
        area = page.locator(f".st-key-held_edit_{hold['id']} textarea")
        expect(area).to_be_visible(timeout=WAIT)
        expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
        check_axe(page, axe_source, "the held calls page with a call held")
        edited = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Rome?"}]
        area.fill(json.dumps(edited))
        area.press("Tab")  # a text area takes its value when it loses the focus
        expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
        page.locator(f".st-key-held_edited_{hold['id']} button").click()
        out, err = agent.communicate(timeout=WAIT / 1000)
        assert agent.returncode == 0, err[-2000:]
        assert out.strip() == "Rome: 25 C"
        expect(page.get_by_text("No call is held now.")).to_be_visible(timeout=WAIT)
    finally:
        stop_process(agent)
        app.stop()
    assert rig.upstream.bodies()[0]["messages"] == edited
    [run] = rig.runs()
    [effect] = run.steps[0].hook_effects
    assert effect.kind == "message_list" and effect.after["messages"] == edited
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
        expect(page.locator(f".st-key-playground_held_edit_{hold['id']} textarea")).to_contain_text("Weather in Paris?")
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

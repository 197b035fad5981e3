"""Hooks in the app: the sidebar's Hooks go into the run's config, and the page shows what each hook did."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest
from support.app import click

from agentcore.hooks import Pause
from agentcore.loop import Agent
from agentcore.messages import ToolCall
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run, RunConfig
from agentcore.toolbox import get_tools

PROMPT = "What is the weather in Paris? Write to bob@example.com"


def start(at: AppTest, hooks: list[str]) -> Run:
    at.selectbox(key="cfg_scenario").set_value("weather").run()
    at.multiselect(key="cfg_hooks").set_value(hooks).run()
    at.text_input(key="prompt").set_value(PROMPT).run()
    click(at, "start")
    return at.session_state["session"].run


def test_the_sidebar_redactor_masks_what_is_sent_and_the_steps_tab_shows_before_and_after(open_app, steps_tab):
    at = open_app()
    run = start(at, ["redact"])
    assert run.config.hooks == ["redact"]
    click(at, "step")
    assert run.messages[0].content == PROMPT  # the run keeps what the person wrote
    sent = run.steps[0].wire.request["messages"][0]["content"]
    assert sent == "What is the weather in Paris? Write to [email]"
    steps_tab(at)
    assert any("hook redact before model: request: message 0 changed" in m.value for m in at.markdown)
    shown = [j.value for j in at.json]
    assert any("bob@example.com" in v for v in shown) and any("[email]" in v for v in shown)


def test_the_sidebar_guardrail_refuses_a_call_with_personal_data_and_the_model_reads_why(open_app, steps_tab):
    at = open_app()
    run = start(at, ["guardrail"])
    click(at, "model_phase")
    asked = run.messages[1]
    call = ToolCall(id=asked.tool_calls[0].id, name="get_weather", arguments={"city": "bob@example.com"})
    run.messages[1] = asked.model_copy(update={"tool_calls": (call, *asked.tool_calls[1:])})  # as a model could ask
    click(at, "tools_phase")
    tool_run = run.steps[0].tool_runs[0]
    assert (tool_run.source, tool_run.hook) == ("hook_refused", "guardrail")
    assert run.messages[2].is_error and "refused by guardrail" in run.messages[2].content
    assert [t.source for t in run.steps[0].tool_runs[1:]] == ["approved"]  # Paris ran, as the panel approved it
    assert any("refused by hook guardrail" in m.value for m in at.markdown)  # the result's badge
    steps_tab(at)
    assert any("hook guardrail before tools: call" in m.value for m in at.markdown)


def test_a_run_a_hook_paused_says_which_hook_and_step_goes_on(open_app):
    from ui.state import Session

    def look(run: Run, request):
        return Pause("look at the request first")

    tools = get_tools(["get_weather"])
    run = Run.start("Weather in Paris?", RunConfig(scenario="weather", tools=[t.spec() for t in tools]))
    Agent(ScriptedProvider(scenario="weather"), tools, before_model=[look]).step(run)
    assert run.paused and not run.steps
    session = Session()
    session.add_run(run)
    at = open_app(session=session)
    assert any("Paused by hook look before model: look at the request first" in w.value for w in at.warning)
    click(at, "step")  # the app's agent goes on; the hook is not the app's, and the pause is cleared
    assert run.halt is None and len(run.steps) == 1


def test_a_hooks_answer_and_unreadable_arguments_show_as_text_in_the_steps_tab(open_app, steps_tab):
    from agentcore.hooks import Answer
    from agentcore.tools import ToolOutcome
    from ui.state import Session

    def answer(run: Run, calls):
        return [Answer(c, ToolOutcome("Paris: 21 degrees, answered by the hook", False, 0.0)) for c in calls]

    tools = get_tools(["get_weather"])
    run = Run.start("Weather in Paris?", RunConfig(scenario="weather", tools=[t.spec() for t in tools]))
    Agent(ScriptedProvider(scenario="weather"), tools, before_tools=[answer]).step(run)
    assert run.steps[0].hook_effects[0].after == "Paris: 21 degrees, answered by the hook"
    session = Session()
    session.add_run(run)
    at = steps_tab(open_app(session=session))
    assert any(c.value == "Paris: 21 degrees, answered by the hook" for c in at.code)
    for shown in at.json:  # the page parses each st.json body as JSON: text would be a parse error there
        json.loads(shown.proto.body)

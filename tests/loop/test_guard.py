"""The loop guard: a repeated identical call is answered from the run, then the model is asked without tools."""

from __future__ import annotations

import json

import pytest

from agentcore import transcript
from agentcore.exports import export_request
from agentcore.hooks.guard import default_mode, guard_mode
from agentcore.loop import Agent
from agentcore.messages import ToolMessage
from agentcore.providers.anthropic import AnthropicProvider
from agentcore.providers.base import ModelRequest
from agentcore.providers.local_chat import ANSWER_GRAMMAR
from agentcore.providers.ollama import build_body as ollama_body
from agentcore.providers.openai import OpenAIProvider
from agentcore.providers.openai_responses import build_body as responses_body
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run, RunConfig
from agentcore.toolbox import get_tools

PROMPT = "Find out what a step budget is."


def runaway(mode: str | None, max_steps: int = 10) -> Run:
    """The scripted runaway loop under `mode`, run to its end."""
    tools = get_tools(["search_notes"])
    config = RunConfig(scenario="runaway", tools=[t.spec() for t in tools], max_steps=max_steps, loop_guard=mode)
    run = Run.start(PROMPT, config)
    Agent(ScriptedProvider(scenario="runaway"), tools).run(run)
    return run


def test_the_guard_answers_a_repeated_call_from_the_run_and_then_asks_for_an_answer():
    run = runaway("guard")
    assert [[t.source for t in s.tool_runs] for s in run.steps] == [["ran"], ["repeat"], ["repeat"], []]
    results = [m for m in run.messages if isinstance(m, ToolMessage)]
    first = results[0].content
    # the second and third identical calls were not run: each returns the first result, with a note
    assert all(r.content.startswith(first) and "not run again" in r.content for r in results[1:])
    assert "No tools are offered on the next call" in results[2].content
    assert "No tools are offered" not in results[1].content
    # the fourth model call went without tools: the scripted model answered, and the run says so
    assert [s.tools_withheld for s in run.steps] == [False, False, False, True]
    assert run.steps[3].wire.request["tool_choice"] == "none"
    assert run.stop_reason == "answer" and run.messages[-1].content.startswith("I kept asking")


def test_warn_and_off_run_every_repeat_until_the_budget():
    for mode in ("warn", "off"):
        run = runaway(mode, max_steps=4)
        assert [t.source for s in run.steps for t in s.tool_runs] == ["ran"] * 4
        assert run.stop_reason == "max_steps" and not any(s.tools_withheld for s in run.steps)


def test_a_guarded_run_keeps_its_record_through_a_transcript(tmp_path):
    run = runaway("guard")
    path = tmp_path / "run.json"
    transcript.save(run, path)
    data = json.loads(path.read_text())
    assert data["config"]["loop_guard"] == "guard"
    assert data["steps"][3]["tools_withheld"] is True
    assert data["steps"][1]["tool_runs"][0]["source"] == "repeat"
    assert transcript.load(path) == run


def test_a_transcript_without_the_setting_loads_with_its_providers_default():
    old = {"config": {"provider": "scripted"}, "messages": [{"role": "user", "content": "hi"}]}
    run = Run.model_validate(old)
    assert run.config.loop_guard is None and guard_mode(run.config) == "warn"
    assert "loop_guard" not in run.model_dump(mode="json")["config"]  # an unset guard writes the file as before
    assert default_mode("local") == "guard" and guard_mode(RunConfig(provider="local")) == "guard"


def test_a_person_s_decision_is_not_overridden_by_the_guard():
    tools = get_tools(["search_notes"])
    config = RunConfig(scenario="runaway", tools=[t.spec() for t in tools], loop_guard="guard")
    run = Run.start(PROMPT, config)
    agent = Agent(ScriptedProvider(scenario="runaway"), tools)
    agent.step(run)
    agent.model_phase(run)
    (call,) = run.messages[-1].tool_calls
    from agentcore.loop import ToolDecision

    agent.tools_phase(run, {call.id: ToolDecision(action="result", content="typed")})
    assert run.steps[-1].tool_runs[0].source == "typed" and run.messages[-1].content == "typed"


def test_the_export_of_a_guarded_run_carries_the_request_the_model_was_sent():
    run = runaway("guard", max_steps=3)  # stopped by the budget just after the second repeat
    assert run.stop_reason == "max_steps"
    run.config = run.config.model_copy(update={"max_steps": 4})
    assert export_request(run, "openai")["tool_choice"] == "none"
    assert export_request(run, "anthropic")["tool_choice"] == {"type": "none"}
    assert "tool_choice" not in export_request(runaway("warn", max_steps=3), "openai")


def test_apis_without_tool_choice_are_sent_no_tools_and_the_embedded_model_an_answer_grammar():
    run = runaway("guard", max_steps=3)
    request = ModelRequest(messages=tuple(run.messages), tools=tuple(run.tool_specs), tool_choice="none")
    assert "tools" not in ollama_body("m", request)
    assert responses_body("m", request)["tool_choice"] == "none"
    assert "agentcore-call" not in ANSWER_GRAMMAR and ANSWER_GRAMMAR.startswith("root ::= agentcore-answer")


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_the_guarded_call_over_http_carries_tool_choice_none(katan, fmt):
    """llm-katan answers every request with tools by a call: the same call, so the guard takes over."""
    tools = get_tools(["get_weather"])
    if fmt == "openai":
        provider = OpenAIProvider("echo", base_url=f"{katan.url}/v1", api_key="katan-key", stream=False)
    else:
        provider = AnthropicProvider("echo", base_url=katan.url, api_key="katan-key", stream=False)
    config = RunConfig(provider=fmt, model="echo", tools=[t.spec() for t in tools], max_steps=4, loop_guard="guard")
    run = Run.start("Weather in Paris?", config)
    Agent(provider, tools).run(run)
    assert run.stop_reason != "error", run.error
    assert [t.source for s in run.steps[:3] for t in s.tool_runs] == ["ran", "repeat", "repeat"]
    bodies = [s.wire.request for s in run.steps]
    assert all("tool_choice" not in b or b["tool_choice"] != "none" for b in bodies[:3])
    expected = "none" if fmt == "openai" else {"type": "none"}
    assert bodies[3]["tool_choice"] == expected and bodies[3]["tools"]  # the tools stay: only the choice changes
    assert run.steps[3].tools_withheld


# -- both halves of each of the guard's rules ------------------------------------------------------------------


def _calls(*pairs: tuple[str, str]):
    from agentcore.messages import AssistantMessage, ToolCall

    return AssistantMessage(
        tool_calls=tuple(ToolCall(id=i, name="get_weather", arguments={"city": city}) for i, city in pairs)
    )


def test_a_call_refused_for_the_turns_limit_was_never_answered_so_its_repeat_runs():
    from agentcore.messages import AssistantMessage

    turns = [_calls(("a", "Paris"), ("b", "Rome")), _calls(("c", "Rome")), AssistantMessage(content="ok")]
    run = Run.start("Weather?", RunConfig(max_steps=3, loop_guard="guard"))
    Agent(ScriptedProvider(replay=turns), get_tools(["get_weather"]), max_tool_calls=1).run(run)
    assert [[t.source for t in s.tool_runs] for s in run.steps] == [["ran", "refused"], ["ran"], []]
    rome = [m for m in run.messages if isinstance(m, ToolMessage) and m.tool_call_id == "c"]
    assert "Loop guard" not in rome[0].content and not rome[0].is_error


@pytest.mark.parametrize(
    ("turns", "line"),
    [
        ([], None),  # no call at all
        ([("a", "Paris")], None),  # made once
        ([("a", "Paris"), ("b", "Rome")], None),  # two calls, each once
        ([("a", "Paris"), ("b", "Paris")], 'get_weather({"city": "Paris"}) was made 2 times'),
        ([("a", "Paris"), ("b", "Paris"), ("c", "Paris")], "was made 3 times"),
    ],
)
def test_under_warn_the_line_names_a_call_made_twice_or_more_and_nothing_else(turns, line):
    from agentcore.hooks.guard import guard_line
    from agentcore.messages import AssistantMessage

    replies = [_calls(pair) for pair in turns] + [AssistantMessage(content="ok")]
    run = Run.start("Weather?", RunConfig(max_steps=len(replies), loop_guard="warn"))
    Agent(ScriptedProvider(replay=replies), get_tools(["get_weather"])).run(run)
    said = guard_line(run)
    assert (said is None) is (line is None)
    if line:
        assert said.startswith("loop guard (warn): ") and line in said


@pytest.mark.parametrize(("repeats", "words"), [(1, "1 repeated call answered"), (2, "2 repeated calls answered")])
def test_under_guard_the_line_counts_the_repeats_in_words(repeats, words):
    from agentcore.hooks.guard import guard_line
    from agentcore.messages import AssistantMessage

    replies = [_calls((f"c{k}", "Paris")) for k in range(repeats + 1)] + [AssistantMessage(content="ok")]
    run = Run.start("Weather?", RunConfig(max_steps=len(replies), loop_guard="guard"))
    Agent(ScriptedProvider(replay=replies), get_tools(["get_weather"])).run(run)
    assert guard_line(run).startswith(f"loop guard: {words} from the run, not run again")
    assert guard_line(Run.start("Weather?", RunConfig(loop_guard="guard"))) is None  # nothing repeated: no line

"""The diff of two runs: where they diverge, and the decisions a person took on their tool calls."""

from __future__ import annotations

from agentcore import Agent, Run, RunConfig, ScriptedProvider, ToolDecision
from agentcore.diff import diff_runs
from agentcore.toolbox import get_tools


def paused_weather_run() -> tuple[Agent, Run]:
    """The weather run, paused before its tools with three calls waiting."""
    tools = get_tools(["get_weather"])
    config = RunConfig(provider="scripted", model="weather", tools=[t.spec() for t in tools], pause_before_tools=True)
    agent = Agent(ScriptedProvider(scenario="weather"), tools)
    return agent, agent.run(Run.start("Weather in Paris, Rome and Tokyo?", config))


def test_the_diff_shows_an_argument_edited_by_a_person_beside_what_the_model_asked():
    agent, run = paused_weather_run()
    fork = run.fork(1)
    agent.run(fork)  # the same model asks for the same calls again
    rome = run.messages[-1].tool_calls[1]
    agent.tools_phase(run, {rome.id: ToolDecision(action="edit", arguments={"city": "Kyoto"})})
    agent.tools_phase(fork, {})
    d = diff_runs(fork, run)
    row = next(r for r in d.rows if r.kind == "changed")
    assert 'get_weather({"city": "Rome"}) [approved by a person]' in row.a_text
    assert 'get_weather({"city": "Kyoto"}) [edited by a person; the model asked {"city": "Rome"}]' in row.b_text


def test_the_diff_shows_a_denied_call_and_a_result_typed_by_a_person():
    agent, run = paused_weather_run()
    paris, _, tokyo = run.messages[-1].tool_calls
    agent.tools_phase(
        run, {paris.id: ToolDecision(action="deny"), tokyo.id: ToolDecision(action="result", content="9")}
    )
    d = diff_runs(run, run)
    texts = [r.a_text for r in d.rows]
    call_row = next(t for t in texts if t.startswith("assistant:"))
    assert call_row.count("[denied by a person]") == 1 and call_row.count("[result typed by a person]") == 1
    assert "tool get_weather [result typed by a person]: 9" in texts
    assert d.identical


def test_the_same_messages_show_who_decided_on_each_side():
    agent, paused = paused_weather_run()
    agent.tools_phase(paused, {})
    tools = get_tools(["get_weather"])
    config = paused.config.model_copy(update={"pause_before_tools": False})
    unpaused = Agent(ScriptedProvider(scenario="weather"), tools).run(Run.start(paused.messages[0].content, config))
    row = next(r for r in diff_runs(unpaused, paused).rows if r.a_text.startswith("assistant:") and r.a.tool_calls)
    assert row.kind == "same" and "by a person" not in row.a_text  # no person was asked: the calls just ran
    assert row.b_text.count("[approved by a person]") == 3

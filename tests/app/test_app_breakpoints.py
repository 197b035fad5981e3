"""Breakpoints and mocks in the app: the sidebar's Breakpoints go into the run's config, Run to end stops at each
and says which fired (a tool call's opens the decision panel), and a tool result is mocked from here on or replayed."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest
from support.app import click, open_menu

from agentcore.run import Run


def open_mock(at: AppTest, index: int) -> None:
    """Open the menu of the tool result at `index`: its mock form is drawn once it is open."""
    open_menu(at, index)


def start(at: AppTest, scenario: str, breakpoints: str = "") -> Run:
    at.selectbox(key="cfg_scenario").set_value(scenario).run()
    at.text_area(key="cfg_breakpoints").set_value(breakpoints).run()
    click(at, "start")
    return at.session_state["session"].run


@pytest.mark.parametrize(
    ("scenario", "spec", "panel"),
    [
        ("weather", "tool:get_weather", True),
        ("weather", "args:$.city=Tokyo", True),
        ("weather", "args:$.city~^Ro", True),
        ("weather", "step:2", False),
        ("weather", "tokens:20", False),
        ("runaway", "repeat", True),
        ("tool_error", "tool-error", False),
    ],
)
def test_run_to_end_stops_at_each_kind_of_breakpoint_and_says_which(open_app, scenario, spec, panel):
    at = open_app()
    run = start(at, scenario, spec)
    assert run.config.breakpoints == [spec]
    click(at, "run_to_end")
    assert run.paused and run.halt.breakpoint == spec
    assert any(f"Paused at breakpoint {spec}" in w.value.replace("\\", "") for w in at.warning)  # $ is escaped
    assert (at.button(key="run_tools") is not None) if panel else not any(b.key == "run_tools" for b in at.button)
    stopped_at = len(run.steps)
    click(at, "step")  # goes on past it
    assert run.halt is None or run.halt.step > stopped_at
    assert run.halts[0].breakpoint == spec


def test_a_bad_breakpoint_is_said_in_the_sidebar_and_left_out(open_app):
    at = open_app()
    at.text_area(key="cfg_breakpoints").set_value("tool:get_weather\nstep:zero").run()
    assert any("step takes a whole number" in e.value for e in at.sidebar.error)
    run = start(at, "weather", "tool:get_weather\nstep:zero")
    assert run.config.breakpoints == ["tool:get_weather"]


def test_a_result_mocked_from_here_on_answers_the_later_calls(open_app):
    at = open_app()
    run = start(at, "runaway")
    click(at, "step")
    assert run.messages[2].role == "tool"
    open_mock(at, 2)
    at.text_area(key="mock_text_2").set_value("A step budget caps the model calls.").run()
    click(at, "mock_2")
    assert [r.tool for r in run.config.mocks] == ["search_notes"]
    click(at, "step")
    assert run.steps[1].tool_runs[0].source == "mocked"
    assert run.messages[-1].content == "A step budget caps the model calls."
    assert any("mocked: a mock rule fixed this result" in m.value for m in at.markdown)
    click(at, "mocks_clear")
    assert run.config.mocks == []


def test_replay_from_here_forks_at_the_call_and_goes_on_with_the_mock(open_app):
    at = open_app()
    run = start(at, "weather")
    click(at, "run_to_end")
    assert run.stop_reason == "answer"
    open_mock(at, 3)
    at.text_area(key="mock_text_3").set_value("Rome: snow, -5 degrees").run()
    click(at, "mock_replay_3")
    fork = at.session_state["session"].run
    assert fork is not run and fork.parent.run_id == run.id and fork.stop_reason == "answer"
    sources = [t.source for t in fork.steps[0].tool_runs]
    assert sources[1] == "mocked" and "Rome: snow, -5 degrees" in [m.content for m in fork.messages]
    assert run.steps[0].tool_runs[1].source == "ran"  # the original run is kept as it was


def test_replay_from_here_goes_past_the_breakpoint_it_came_from_and_says_so_as_news_with_one_step_number(open_app):
    at = open_app()
    run = start(at, "weather", "tool:get_weather")
    click(at, "run_to_end")
    assert run.paused
    click(at, "run_to_end")
    assert run.stop_reason == "answer"
    open_mock(at, 3)
    at.text_area(key="mock_text_3").set_value("Rome: snow").run()
    click(at, "mock_replay_3")
    fork = at.session_state["session"].run
    assert fork is not run and fork.stop_reason == "answer" and fork.halts == []  # not paused there again
    assert [t.source for t in fork.steps[0].tool_runs][1] == "mocked"
    (said,) = [i.value for i in at.info if "Replaying" in i.value]
    assert said.startswith("Replaying step 1's tools with get_weather when ") and "Rome: snow" in said
    assert said.endswith(", past the breakpoint tool:get_weather, then on to the end.")
    assert not [e for e in at.error if "Replaying" in e.value]  # news, not an error
    fresh = open_app()  # without a breakpoint: nothing to go past, and nothing said of one
    plain = start(fresh, "weather")
    click(fresh, "run_to_end")
    open_mock(fresh, 3)
    fresh.text_area(key="mock_text_3").set_value("Rome: snow").run()
    click(fresh, "mock_replay_3")
    assert any(i.value.startswith("Replaying step 1's tools with ") and "breakpoint" not in i.value for i in fresh.info)
    assert plain.stop_reason == "answer"


def test_run_to_end_goes_on_past_the_breakpoint_it_stopped_at(open_app):
    at = open_app()
    run = start(at, "weather", "tool:get_weather")
    click(at, "run_to_end")
    assert run.paused
    click(at, "run_to_end")  # the decision panel approves the calls; the run goes on to its answer
    assert run.stop_reason == "answer" and [h.breakpoint for h in run.halts] == ["tool:get_weather"]


def test_a_breakpoint_set_during_a_run_stops_it_at_its_next_step(open_app):
    at = open_app()
    run = start(at, "weather")
    click(at, "step")
    at.text_area(key="cfg_breakpoints").set_value("step:2").run()
    click(at, "step")
    assert run.config.breakpoints == ["step:2"] and run.paused and len(run.steps) == 1


def test_the_debugging_lesson_stops_at_its_breakpoint_mocks_rome_and_points_to_the_error_analysis(open_app):
    from ui.lessons import LESSONS

    at = open_app("views/lesson.py")
    at.selectbox(key="lesson_id").set_value("debug").run()
    click(at, "lesson_step")
    run = at.session_state["session"].run
    assert run.halt.breakpoint == "tool:get_weather" and at.button(key="lesson_step").disabled
    at.text_area(key="lesson_mock_result").set_value("Rome: hail").run()
    click(at, "lesson_mock_button")
    click(at, "lesson_step")
    click(at, "lesson_step")
    assert [t.source for t in run.steps[0].tool_runs] == ["approved", "mocked", "approved"]
    assert "Rome: hail" in [m.content for m in run.messages] and run.stop_reason == "answer"
    assert [s.value for s in at.success] == [LESSONS["debug"].ending]
    assert any("Error analysis" in link.label for link in at.get("page_link"))


def test_a_cost_breakpoint_stops_the_next_model_call_once_the_run_has_cost_more(open_app):
    from agentcore import toolbox
    from agentcore.loop import Agent
    from agentcore.messages import Usage
    from agentcore.providers.scripted import ScriptedProvider
    from agentcore.run import RunConfig
    from ui.state import Session

    tools = toolbox.get_tools(["get_weather"])
    run = Run.start(
        "Weather in Paris?",
        RunConfig(scenario="weather", model="weather", tools=[t.spec() for t in tools], breakpoints=["cost:0.001"]),
    )
    Agent(ScriptedProvider(scenario="weather"), tools).step(run)
    # step 1 as a priced model answered it: 1,000 input tokens of gpt-4o cost $0.0025
    run.steps[0] = run.steps[0].model_copy(
        update={"provider": "openai", "model": "gpt-4o", "usage": Usage(input_tokens=1000)}
    )
    session = Session()
    session.add_run(run)
    at = open_app(session=session)
    click(at, "run_to_end")
    assert run.paused and run.halt.breakpoint == "cost:0.001" and len(run.steps) == 1
    assert any("Paused at breakpoint cost:0.001 before model" in w.value for w in at.warning)
    click(at, "run_to_end")
    assert run.stop_reason == "answer" and len(run.halts) == 1


@pytest.mark.parametrize(
    ("result", "line"),
    [
        ('{"city": "Rome", "condition": "heavy snow"}', "- Rome: heavy snow"),  # the lesson's own mock
        ('{"city": "Rome", "temperature": 4, "unit": "celsius"}', "- Rome: 4° celsius"),
        ("Rome: hail", "- get_weather: Rome: hail"),  # words, not JSON: quoted, not called a failure
    ],
)
def test_the_scripted_weather_answer_says_what_a_mocked_result_gave_and_nothing_it_lacks(result, line):
    from agentcore import toolbox
    from agentcore.hooks.specs import MockRule
    from agentcore.loop import Agent
    from agentcore.providers.scripted import ScriptedProvider
    from agentcore.run import Run, RunConfig

    mock = MockRule(tool="get_weather", when=["$.city=Rome"], result=result)
    run = Run.start("What is the weather in Paris and Rome?", RunConfig(mocks=[mock], scenario="weather"))
    Agent(ScriptedProvider(scenario="weather"), toolbox.get_tools("get_weather")).run(run)
    answer = run.messages[-1].content
    assert line in answer.splitlines() and "None" not in answer and "failed" not in answer

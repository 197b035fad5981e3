"""Guided lessons: each runs offline to its end in the app with a paragraph per step; the parts they draw from."""

from __future__ import annotations

import html
import os
import re

import pytest
from streamlit.testing.v1 import AppTest

from agentcore.errors import UsageError
from agentcore.loop import Agent
from agentcore.messages import AssistantMessage, ToolMessage
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run
from agentcore.steps import ModelRef
from agentcore.store.runs import Store
from agentcore.toolbox import get_tools
from ui.graph import key_lines, key_lines_html, step_views
from ui.lessons import LESSONS, Lesson, edited_result, fork_with_result, get_lesson, step_tokens

# lesson, the Steps it takes, and how its run stops
LENGTHS = {
    "loop": (2, "answer"),
    "parallel": (2, "answer"),
    "errors": (3, "answer"),
    "budget": (4, "max_steps"),
    "cost": (10, "answer"),
    "fork": (3, "answer"),
    "debug": (3, "answer"),
    "blame": (4, "answer"),
}


def _agent(lesson: Lesson) -> Agent:
    return Agent(ScriptedProvider(scenario=lesson.scenario), get_tools(list(lesson.tools)))


def _stepped(lesson: Lesson, steps: int) -> Run:
    run = lesson.start()
    agent = _agent(lesson)
    for _ in range(steps):
        agent.step(run)
    return run


# -- in the app ---------------------------------------------------------------------------------


def _markdown(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown]


def _lesson_run(at: AppTest, lesson: Lesson) -> Run:
    run_id = at.session_state["lesson_state"].runs[lesson.id]
    return at.session_state["session"].runs[run_id]


def test_every_built_in_lesson_is_tested_here():
    assert set(LESSONS) == set(LENGTHS)


@pytest.mark.parametrize("lesson_id", list(LENGTHS))
def test_each_lesson_runs_to_its_end_in_the_app_with_a_paragraph_per_step(open_app, lesson_id):
    lesson = LESSONS[lesson_id]
    length, stop = LENGTHS[lesson_id]
    at = open_app("views/lesson.py")
    at.selectbox(key="lesson_id").set_value(lesson_id).run()
    assert not at.exception, at.exception
    said = [lesson.narration(None)]
    assert said[0] in _markdown(at)
    steps = 0
    while not at.button(key="lesson_step").disabled:
        at.button(key="lesson_step").click().run()
        assert not at.exception, at.exception
        steps += 1
        run = _lesson_run(at, lesson)
        text = lesson.narration(run)
        assert text in _markdown(at), f"step {steps}: the narration is not shown"
        assert text not in said, f"step {steps} says again what was said before: {text}"
        said.append(text)
        assert f"#### Step {len(run.steps)}: {step_tokens(run).line}" in _markdown(at)
        if lesson.wants_fork(run):
            box = at.text_area(key="lesson_fork_result")
            assert box.value == edited_result(run)
            at.button(key="lesson_fork_button").click().run()
            assert not at.exception, at.exception
            fork = _lesson_run(at, lesson)
            assert fork.parent is not None and fork.parent.run_id == run.id
            said.append(lesson.narration(fork))
            assert said[-1] in _markdown(at)
        if lesson.wants_mock(run):
            assert at.button(key="lesson_step").disabled  # the lesson waits for the mock
            at.button(key="lesson_mock_button").click().run()
            assert not at.exception, at.exception
            assert run.config.mocks and not lesson.wants_mock(run)
            said.append(lesson.narration(run))
            assert said[-1] in _markdown(at)
        assert steps <= length, "the lesson goes on past its length"
    run = _lesson_run(at, lesson)
    for paragraph in lesson.steps + lesson.fork_steps + tuple(filter(None, (lesson.paused, lesson.mocked))):
        # each paragraph written for a step was said at its step
        words = max(re.split(r"\{[^}]*\}", paragraph), key=len)
        assert any(words in text for text in said), f"never said: {paragraph}"
    assert steps == length
    assert run.stop_reason == stop
    assert lesson.done(run)
    assert [s.value for s in at.success] == [lesson.ending]
    assert at.session_state["session"].current_id == run.id  # the Cost page and the playground show it
    if lesson.see_cost:
        at.switch_page("views/cost.py").run()
        assert not at.exception, at.exception
        assert any(m.startswith(f"**Lesson: {lesson.title}**") for m in _markdown(at))


def test_a_lesson_saves_nothing_until_its_first_step(open_app):
    at = open_app("views/lesson.py")
    assert get_lesson(None).narration(None) in _markdown(at)
    assert "#### Step 0: nothing sent yet" in _markdown(at)
    assert Store(os.environ["AGENTCORE_DB"]).list_runs() == []
    at.button(key="lesson_step").click().run()
    assert [r.title for r in Store(os.environ["AGENTCORE_DB"]).list_runs()] == ["Lesson: The loop itself"]


def test_restart_begins_the_lesson_again_and_keeps_the_old_run(open_app):
    at = open_app("views/lesson.py")
    at.button(key="lesson_step").click().run()
    first = _lesson_run(at, get_lesson(None))
    at.button(key="lesson_restart").click().run()
    assert get_lesson(None).narration(None) in _markdown(at)
    at.button(key="lesson_step").click().run()
    assert _lesson_run(at, get_lesson(None)).id != first.id
    assert first.id in at.session_state["session"].runs


def test_a_lessons_first_step_runs_on_the_lessons_own_model_whatever_the_sidebar_holds(open_app):
    at = open_app()
    at.selectbox(key="cfg_scenario").set_value("research").run()
    at.switch_page("views/lesson.py").run()
    at.button(key="lesson_step").click().run()
    assert not at.exception, at.exception
    run = _lesson_run(at, get_lesson(None))
    assert [run.answered_by(s) for s in run.steps] == [ModelRef("scripted", "weather")]
    assert at.selectbox(key="cfg_scenario").value == "weather"  # and the sidebar now shows the lesson's run


def test_a_lesson_runs_its_tools_as_the_model_asked_when_the_sidebar_pauses_before_tools(open_app):
    at = open_app("views/lesson.py")
    at.selectbox(key="lesson_id").set_value("fork").run()
    at.toggle(key="cfg_pause").set_value(True).run()
    at.button(key="lesson_step").click().run()
    run = _lesson_run(at, LESSONS["fork"])
    assert len(run.steps) == 1 and run.next_phase == "model"  # the step ran its tools: no pause
    assert at.toggle(key="cfg_pause").value is False  # the sidebar shows the lesson's run
    at.toggle(key="cfg_pause").set_value(True).run()  # paused by hand: the next step takes it
    at.button(key="lesson_step").click().run()
    assert run.config.pause_before_tools and LESSONS["fork"].wants_fork(run)
    at.button(key="lesson_fork_button").click().run()
    assert not at.exception, at.exception
    fork = _lesson_run(at, LESSONS["fork"])
    assert fork.parent is not None and not fork.config.pause_before_tools  # the lesson goes on without pausing
    assert at.toggle(key="cfg_pause").value is False


def test_a_first_visit_is_offered_the_first_lesson_and_a_returning_one_is_not(open_app):
    at = open_app()
    offer = [m for m in _markdown(at) if m.startswith("**New here?**")]
    assert offer and get_lesson(None).goal in offer[0]
    Store(os.environ["AGENTCORE_DB"]).save_run(Run.start("an earlier question"))
    again = open_app()
    assert not [m for m in _markdown(again) if m.startswith("**New here?**")]


# -- the parts ------------------------------------------------------------------------------------


def test_step_tokens_give_what_a_step_sent_and_its_growth_since_the_step_before():
    run = _stepped(LESSONS["budget"], 3)
    sent = [s.usage.input_tokens for s in run.steps]
    assert step_tokens(run).line == f"sent {sent[2]:,} tokens, +{sent[2] - sent[1]:,}"
    assert sent[2] > sent[1] > sent[0]
    assert step_tokens(_stepped(LESSONS["budget"], 1)).line == f"sent {sent[0]:,} tokens"
    assert step_tokens(LESSONS["budget"].start()) is None


def test_a_step_that_ran_tools_shows_both_phases_and_an_answer_only_the_model_phase():
    lesson = LESSONS["loop"]
    run = _stepped(lesson, 1)
    views = step_views(run)
    assert [v.phase for v in views] == ["model", "tools"]
    assert all(v.highlighted for v in views)
    tools_lines = [views[1].lines[i] for i in views[1].highlighted]
    assert any("self._execute(" in line for line in tools_lines)
    _agent(lesson).step(run)
    (answer,) = step_views(run)
    assert answer.phase == "model"
    assert any('run.stop_reason = "answer"' in answer.lines[i] for i in answer.highlighted)


def test_key_lines_are_the_signature_and_the_lines_that_did_the_work_wrapped_not_cut():
    (model, tools) = step_views(_stepped(LESSONS["loop"], 1))
    shown = [i for i in key_lines(tools) if i is not None]
    assert shown[0] == 0 and set(shown[1:]) == set(tools.highlighted)
    page = key_lines_html(tools)
    assert "white-space:pre-wrap" in page and "overflow-x" not in page
    for i in shown:
        assert html.escape(tools.lines[i].strip()) in page
    assert "->" not in page  # the signature's arrow is escaped like every other character
    assert len(key_lines(model)) < len(model.lines) // 3


def test_the_fork_lesson_answers_from_the_changed_result():
    lesson = LESSONS["fork"]
    run = _stepped(lesson, 2)
    assert lesson.wants_fork(run) and not lesson.done(run)
    changed = edited_result(run)
    assert '"temperature": -12' in changed
    fork = fork_with_result(run, changed)
    assert lesson.forked(fork) and len(fork.steps) == 1 and isinstance(fork.messages[-1], ToolMessage)
    _agent(lesson).step(fork)
    assert lesson.done(fork)
    answer = fork.messages[-1]
    assert isinstance(answer, AssistantMessage) and "-12" in answer.content
    assert "-12" not in run.messages[-1].content  # the original run keeps its own answer


def test_forking_with_the_tool_result_unchanged_is_refused():
    run = _stepped(LESSONS["fork"], 2)
    first = next(m for m in run.messages if isinstance(m, ToolMessage))
    with pytest.raises(UsageError, match="unchanged"):
        fork_with_result(run, first.content)
    with pytest.raises(UsageError, match="no tool result"):
        fork_with_result(LESSONS["fork"].start(), "x")


def test_an_unknown_lesson_is_a_usage_error_naming_the_others():
    with pytest.raises(UsageError, match="available: loop, parallel"):
        get_lesson("nope")


@pytest.mark.parametrize("pending", [False, True])
def test_the_lesson_page_shows_a_hostile_run_inert(open_app, pending):
    from support.hostile import EVIL, assert_inert, hostile_run

    from ui.page_state import LessonState
    from ui.state import Session

    run = hostile_run(pending=pending)
    session = Session()
    session.add_run(run)
    session.sync_sidebar = False  # the run's provider is the scripted one: nothing to follow
    at = open_app(session=session)
    at.session_state["lesson_state"] = LessonState(runs={"loop": run.id})  # as if this run were the first lesson's
    at.switch_page("views/lesson.py").run()
    newest = "name" if pending else "final"  # the tool calls waiting, or the last answer
    assert_inert(at, shows=f"{EVIL}/{newest}-img")


def test_every_line_the_code_panels_mark_is_in_the_loops_own_source():
    # the panels find their lines by text: a marker the loop no longer holds would silently mark nothing
    import inspect

    from ui import graph

    source = inspect.getsource(Agent)
    markers = [*graph._MARKERS["model"], *graph._MARKERS["tools"], *graph._STOP_MARKERS.values(), *graph._ERROR_MARKERS]
    assert [m for m in markers if m not in source] == []


def test_a_finished_lesson_offers_the_next_one_and_the_last_does_not(open_app):
    at = open_app("views/lesson.py")
    at.selectbox(key="lesson_id").set_value("loop").run()
    while not at.button(key="lesson_step").disabled:
        at.button(key="lesson_step").click().run()
    assert at.button(key="lesson_next").label == f"Next lesson: {LESSONS['parallel'].title}"
    at.button(key="lesson_next").click().run()
    assert not at.exception, at.exception
    assert at.selectbox(key="lesson_id").value == "parallel"
    assert LESSONS["parallel"].narration(None) in _markdown(at)
    last = list(LESSONS)[-1]
    at.selectbox(key="lesson_id").set_value(last).run()
    while not at.button(key="lesson_step").disabled:
        at.button(key="lesson_step").click().run()
        for waiting in ("lesson_fork_button", "lesson_mock_button"):
            if any(b.key == waiting for b in at.button):
                at.button(key=waiting).click().run()
    assert [s.value for s in at.success] == [LESSONS[last].ending]
    assert not [b for b in at.button if b.key == "lesson_next"]


def test_the_errors_lesson_shows_the_times_sign_as_itself():
    run = _stepped(LESSONS["errors"], 1)
    call = run.messages[-2].tool_calls[0]
    assert call.arguments_shown == '{"expression": "17 × 23"}'
    assert "\\u00d7" in call.arguments_text  # what goes over the wire is unchanged


def test_the_lesson_page_shows_a_calls_arguments_as_written(open_app):
    at = open_app("views/lesson.py")
    at.selectbox(key="lesson_id").set_value("errors").run()
    at.button(key="lesson_step").click().run()
    shown = "\n".join(_markdown(at))
    assert "17 × 23" in shown and "\\u00d7" not in shown


def test_the_diagram_counts_steps_against_the_budget_not_as_the_lessons_length():
    from ui.graph import loop_svg

    run = _stepped(LESSONS["loop"], 1)
    assert run.config.max_steps > LENGTHS["loop"][0]
    drawn = html.unescape(loop_svg(run))
    assert f"at most {run.config.max_steps}" in drawn and "of 4" not in drawn


@pytest.mark.parametrize("lesson_id", ["loop", "parallel"])
def test_what_the_model_says_with_its_calls_agrees_with_the_lessons_prompt(open_app, lesson_id):
    lesson = LESSONS[lesson_id]
    at = open_app("views/lesson.py")
    at.selectbox(key="lesson_id").set_value(lesson_id).run()
    at.button(key="lesson_step").click().run()
    reply = next(m for m in _lesson_run(at, lesson).messages if isinstance(m, AssistantMessage))
    cities = [c.arguments["city"] for c in reply.tool_calls]
    shown = "\n".join(_markdown(at))
    assert reply.content in shown
    if len(cities) == 1:  # one city asked about: the model names it, and speaks of no others
        assert reply.content == f"I'll look up the weather in {cities[0]}." and "each city" not in shown
    else:
        assert cities == ["Paris", "Rome", "Tokyo"] and reply.content == "I'll look up each city at once."


def test_a_lessons_answer_is_shown_whole_line_by_line(open_app):
    at = open_app("views/lesson.py")
    at.selectbox(key="lesson_id").set_value("parallel").run()
    while not at.button(key="lesson_step").disabled:
        at.button(key="lesson_step").click().run()
    answer = _lesson_run(at, LESSONS["parallel"]).messages[-1].content
    shown = next(m for m in _markdown(at) if m.startswith("**assistant**"))
    assert "…" not in shown
    lines = answer.splitlines()
    assert len(lines) == 4 and shown.count("  \n") == 3  # a line of its own for each city
    for line in lines[1:]:  # "- Rome: -1.2° celsius, showers", its list marker shown as written
        assert "\\" + line in shown


def test_the_playground_says_when_its_run_and_settings_are_a_lessons(open_app):
    at = open_app("views/lesson.py")
    at.selectbox(key="lesson_id").set_value("budget").run()
    at.button(key="lesson_step").click().run()
    at.switch_page("views/playground.py").run()
    assert not at.exception
    (said,) = [i.value for i in at.info if "run of the lesson" in i.value]
    assert "The step budget" in said and "4 steps at most" in said and "**New run** starts with them" in said
    at.button(key="start").click().run()  # a run of one's own: nothing said of a lesson
    assert not [i for i in at.info if "run of the lesson" in i.value]

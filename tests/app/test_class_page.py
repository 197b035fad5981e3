"""The class page and the Runs page for a teacher, and private runs in the app (AppTest over a real database)."""

from __future__ import annotations

import dataclasses
import os
from datetime import UTC, datetime, timedelta, timezone

import pytest
from streamlit.testing.v1 import AppTest
from support.servers import APP_WAIT, ROOT

from agentcore import Agent, Run, RunConfig, create_provider
from agentcore.messages import ToolMessage
from agentcore.providers.scripted import get_scenario
from agentcore.store.runs import RunSummary, Store
from agentcore.toolbox import get_tools
from ui.classroom import class_rows, lesson_state, planned_steps, runs_table, since, stuck_reason, student_table
from ui.lessons import LESSONS

CLASS, RUNS, PLAYGROUND = "views/class_page.py", "views/runs.py", "views/playground.py"


def lesson_run(lesson_id: str, steps: int) -> Run:
    """A lesson's run, `steps` steps in, as the Lesson page makes it."""
    lesson = LESSONS[lesson_id]
    run = lesson.start()
    agent = Agent(create_provider("scripted", lesson.scenario, scenario=lesson.scenario), get_tools(list(lesson.tools)))
    for _ in range(steps):
        agent.step(run)
    return run


def runaway_run(steps: int) -> Run:
    """A free prompt on the `runaway` scenario: the same search, again and again."""
    sc = get_scenario("runaway")
    tools = get_tools(",".join(sc.tools))
    config = RunConfig(provider="scripted", model="runaway", scenario="runaway", tools=[t.spec() for t in tools])
    run = Run.start(sc.prompt, config.model_copy(update={"max_steps": 20}), title="bob's free prompt")
    agent = Agent(create_provider("scripted", "runaway", scenario="runaway"), tools)
    for _ in range(steps):
        agent.step(run)
    return run


@pytest.fixture
def klass(monkeypatch):
    """A class with private runs: ada one step into lesson 1 and done with lesson 2, bob going round in circles."""
    monkeypatch.setenv("AGENTCORE_TEACHERS", "tina")
    monkeypatch.setenv("AGENTCORE_PRIVATE_RUNS", "1")
    db = os.environ["AGENTCORE_DB"]
    ada, bob = Store(db, owner="ada"), Store(db, owner="bob")
    first, second = lesson_run("loop", 1), lesson_run("parallel", planned_steps("parallel"))
    ada.save_run(first)
    ada.save_run(second)
    circles = runaway_run(4)
    bob.save_run(circles)
    return {"first": first, "second": second, "circles": circles}


def summary(run: Run, owner: str = "ada") -> RunSummary:
    store = Store(os.environ["AGENTCORE_DB"], owner=owner)
    store.save_run(run)
    return store.summary(run.id)


def test_a_lesson_is_not_started_at_step_k_of_n_or_done():
    loop = LESSONS["loop"]
    assert planned_steps("loop") == 2 and planned_steps("budget") == 4
    assert lesson_state(loop, []) == "not started"
    one = summary(lesson_run("loop", 1))
    assert lesson_state(loop, [one]) == "step 1 of 2"
    assert lesson_state(LESSONS["parallel"], [one]) == "not started"
    done = summary(lesson_run("loop", 2))
    assert lesson_state(loop, [one, done]) == "done"


def test_a_run_is_stuck_at_its_budget_on_an_error_or_repeating_one_call():
    budget = lesson_run("budget", planned_steps("budget"))
    assert stuck_reason(summary(budget), budget) == "step budget reached"
    circles = runaway_run(3)
    assert stuck_reason(summary(circles), circles) == "search_notes called 3× with the same arguments"
    twice = runaway_run(2)
    assert stuck_reason(summary(twice), twice) == ""
    fine = lesson_run("loop", 2)
    assert stuck_reason(summary(fine), fine) == ""
    failing = lesson_run("loop", 1)
    failing.messages = [
        *failing.messages,
        ToolMessage(tool_call_id="a", name="x", content="no", is_error=True),
        ToolMessage(tool_call_id="b", name="x", content="no", is_error=True),
    ]
    assert stuck_reason(summary(failing), failing) == "the last 2 tool results were errors"
    errored = summary(fine).__class__(**{**summary(fine).__dict__, "stop_reason": "error"})
    assert stuck_reason(errored, None) == "stopped on an error"
    # a run that ended well, its contents not read: no reason, as the text the tables show
    assert stuck_reason(summary(fine), None) == ""


def test_a_time_window_starts_at_local_midnight_or_its_span_before_now_in_utc():
    now = datetime(2026, 12, 6, 1, 30, 15, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert since("Today", now) == "2026-12-05T22:00:00.000+00:00"
    assert since("Last hour", now) == "2026-12-05T22:30:15.123+00:00"
    assert since("Last 7 days", now) == "2026-11-28T23:30:15.123+00:00"
    assert since("Last 30 days", datetime(2026, 12, 6, 12, 0, tzinfo=UTC)) == "2026-11-06T12:00:00.000+00:00"


def test_the_tables_show_a_students_tokens_and_last_save_and_an_untitled_or_open_run_in_words():
    db = os.environ["AGENTCORE_DB"]
    ada = Store(db, owner="ada")
    first, second = lesson_run("loop", 1), lesson_run("loop", 2)
    ada.save_run(first)
    ada.save_run(second)
    one, two = ada.summary(first.id), ada.summary(second.id)
    [row] = class_rows([one, two], lambda s: None)
    [line] = student_table([row], None)
    assert line["tokens"] == one.total_tokens + two.total_tokens > two.total_tokens > 0
    newest = max(one.updated_at, two.updated_at)
    assert line["last active"] == newest[:19].replace("T", " ") + " UTC"
    assert student_table([dataclasses.replace(row, runs=[])], None)[0]["last active"] == ""
    assert two.stop_reason and two.title
    untitled = dataclasses.replace(one, title=None, stop_reason=None)
    lines = {line["id"]: line for line in runs_table([untitled, two], [row])}
    assert (lines[one.id]["run"], lines[one.id]["stop"]) == ("(untitled)", "open")
    assert (lines[two.id]["run"], lines[two.id]["stop"]) == (two.title, two.stop_reason)


def test_class_rows_leave_out_the_teachers_and_filter_by_lesson(klass):
    tina = Store(os.environ["AGENTCORE_DB"], owner="tina")
    tina.save_run(lesson_run("loop", 2))
    runs = tina.list_runs()
    rows = class_rows(runs, lambda s: tina.read_run(s.id), leave_out={"tina"})
    assert [r.student for r in rows] == ["ada", "bob"]
    ada, bob = rows
    assert ada.lessons["loop"] == "step 1 of 2" and ada.lessons["parallel"] == "done"
    assert ada.lessons["budget"] == "not started" and ada.flag == ""
    assert bob.flag == "search_notes called 4× with the same arguments"
    assert bob.steps == 4 and ada.steps == 1 + planned_steps("parallel")
    only = class_rows(runs, lambda s: None, lesson_id="parallel", leave_out={"tina"})
    assert [(r.student, r.lessons) for r in only] == [("ada", {"parallel": "done"})]


def test_the_class_page_shows_each_student_for_a_teacher_and_opens_a_run_as_the_teachers_copy(
    klass, open_app, monkeypatch
):
    monkeypatch.setenv("AGENTCORE_USER", "tina")
    Store(os.environ["AGENTCORE_DB"], owner="tina").save_run(lesson_run("loop", 2))  # a teacher's is no student's
    at = open_app(CLASS)
    students = at.dataframe[0].value
    assert list(students["student"]) == ["ada", "bob"]
    assert list(students["1. The loop itself"]) == ["step 1 of 2", "not started"]
    assert list(students["2. Parallel tool calls"]) == ["done", "not started"]
    assert list(students["stuck"]) == ["", "search_notes called 4× with the same arguments"]
    runs = at.dataframe[1].value
    assert set(runs["id"]) == {r.id for r in klass.values()}
    assert list(runs["stop"]) and set(runs["student"]) == {"ada", "bob"}
    at.selectbox(key="class_lesson").set_value("loop").run()
    assert list(at.dataframe[0].value["student"]) == ["ada"]
    at.selectbox(key="class_open_pick").set_value(klass["first"].id).run()
    at.button(key="class_open").click().run()
    at.run()  # the page switch the click asked for
    run = at.session_state["session"].run
    assert run.id != klass["first"].id and run.parent.run_id == klass["first"].id
    stored = Store(os.environ["AGENTCORE_DB"], owner="tina")
    assert stored.summary(run.id).owner == "tina" and stored.summary(klass["first"].id).owner == "ada"


def test_the_class_page_is_refused_to_a_student(klass, open_app, monkeypatch):
    monkeypatch.setenv("AGENTCORE_USER", "ada")
    at = open_app()
    with pytest.raises(ValueError, match="Could not find a navigation page"):  # not in a student's navigation
        at.switch_page(CLASS)
    page = AppTest.from_file(str(ROOT / CLASS), default_timeout=APP_WAIT)  # and the page itself refuses
    page.session_state["session"] = at.session_state["session"]
    page.run()
    assert [e.value for e in page.error] == ["The class page is for the class's teachers."]
    assert not page.dataframe and not page.selectbox


def test_a_teacher_lands_on_everyones_runs_with_an_owner_filter(klass, open_app, monkeypatch):
    monkeypatch.setenv("AGENTCORE_USER", "tina")
    at = open_app(RUNS)
    assert set(at.dataframe[0].value["id"]) == {r.id for r in klass.values()}  # the lessons' runs included
    at.selectbox(key="runs_owner").set_value("bob").run()
    assert list(at.dataframe[0].value["id"]) == [klass["circles"].id]


def test_with_private_runs_a_student_sees_no_classmates_run_and_a_link_to_one_is_refused(klass, open_app, monkeypatch):
    monkeypatch.setenv("AGENTCORE_USER", "bob")
    at = open_app(RUNS)
    assert list(at.dataframe[0].value["id"]) == [klass["circles"].id]
    assert not [t for t in at.toggle if t.key == "runs_mine"]  # no one else's runs to choose from
    shown = " ".join(str(e.value) for e in [*at.markdown, *at.caption, *at.selectbox, *at.text_input])
    assert "Lesson: " not in shown
    at.query_params["run"] = klass["first"].id
    at.run()
    assert any(f"No run {klass['first'].id} here that you may open." in e.value for e in at.error)
    assert at.selectbox(key="runs_selected").value == klass["circles"].id
    assert "Lesson: " not in " ".join(str(t.value) for t in at.text_input)


def test_a_teacher_is_named_by_the_header_or_a_header_value_and_a_typed_name_never_teaches(monkeypatch):
    from ui.state import USER_HEADER_ENV, resolve_user

    monkeypatch.setenv("AGENTCORE_TEACHERS", "tina, X-Forwarded-Groups: teachers")
    monkeypatch.delenv(USER_HEADER_ENV, raising=False)
    monkeypatch.delenv("AGENTCORE_USER", raising=False)
    assert not resolve_user({}, "tina").teacher  # anyone may type any name
    monkeypatch.setenv("AGENTCORE_USER", "tina")
    assert resolve_user({}, None).teacher  # the server's own user, set by whoever runs it
    monkeypatch.setenv(USER_HEADER_ENV, "X-Forwarded-User")
    assert resolve_user({"X-Forwarded-User": "tina"}, None).teacher
    assert not resolve_user({"X-Forwarded-User": "ada"}, None).teacher
    groups = {"X-Forwarded-User": "greta", "X-Forwarded-Groups": "staff,teachers"}
    assert resolve_user(groups, None).teacher


def test_the_class_page_counts_its_rows_and_lists_runs_newest_first_with_their_save_time(klass, open_app, monkeypatch):
    monkeypatch.setenv("AGENTCORE_USER", "tina")
    cy = lesson_run("loop", 2)
    Store(os.environ["AGENTCORE_DB"], owner="cy").save_run(cy)  # a third student, not stuck
    klass = {**klass, "cy": cy}
    at = open_app(CLASS)
    caption = "3 students · 4 runs · 1 student with a stuck run · updates every 2 s"
    assert caption in [c.value for c in at.caption]
    runs = at.dataframe[1].value
    store = Store(os.environ["AGENTCORE_DB"], owner="tina")
    saved = {r.id: store.summary(r.id).updated_at for r in klass.values()}
    newest_first = sorted(saved, key=saved.get, reverse=True)
    assert list(runs["id"]) == newest_first
    assert list(runs["saved"]) == [saved[i][:19].replace("T", " ") + " UTC" for i in newest_first]
    assert list(runs["stuck"]) == [
        "search_notes called 4× with the same arguments" if i == klass["circles"].id else "" for i in newest_first
    ]

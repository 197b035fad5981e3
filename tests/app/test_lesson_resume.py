"""A lesson goes on from its saved run on any app server: two AppTest sessions over one runs database stand for a
student's session on the server that stopped and the one another server opens after it."""

from __future__ import annotations

import os

import pytest
from streamlit.testing.v1 import AppTest
from support.servers import ROOT

from agentcore.run import Run
from agentcore.store.runs import Store
from ui.lessons import LESSONS

LESSON, CLASS = "views/lesson.py", "views/class_page.py"


@pytest.fixture
def ada(monkeypatch):
    """The app's user is ada, a student of a class whose teacher is tina."""
    monkeypatch.setenv("AGENTCORE_USER", "ada")
    monkeypatch.setenv("AGENTCORE_TEACHERS", "tina")


def _store(owner: str = "ada") -> Store:
    return Store(os.environ["AGENTCORE_DB"], owner=owner)


def _markdown(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown]


def _run(at: AppTest, lesson_id: str) -> Run | None:
    run_id = at.session_state["lesson_state"].runs.get(lesson_id)
    return at.session_state["session"].runs.get(run_id) if run_id else None


def _step(at: AppTest, times: int = 1) -> AppTest:
    for _ in range(times):
        button = at.button(key="lesson_step")
        assert not button.disabled
        button.click().run()
        assert not at.exception, at.exception
    return at


def _offered(at: AppTest) -> list[str]:
    return [b.label for b in at.button if b.key == "lesson_reopen"]


def test_a_lesson_started_on_one_server_goes_on_on_the_other_at_its_last_step(ada, open_app, monkeypatch):
    lesson = LESSONS["errors"]
    first = open_app(LESSON)
    first.selectbox(key="lesson_id").set_value("errors").run()
    started = _run(_step(first, 2), "errors")
    assert first.query_params["lesson"] == "errors"  # the address names the lesson

    other = open_app(LESSON)  # the session another server opens: nothing of the first in it
    assert other.selectbox(key="lesson_id").value == "errors"  # the lesson left off, not the first lesson
    run = _run(other, "errors")
    assert run is not None and run.id == started.id and len(run.steps) == 2
    assert other.session_state["session"].current_id == started.id
    assert lesson.narration(run) in _markdown(other) and lesson.intro not in _markdown(other)
    (said,) = [i.value for i in other.info if i.value.startswith("Resumed your run of this lesson")]
    assert "2 steps" in said  # and not silently
    _step(other)
    assert not [i for i in other.info if i.value.startswith("Resumed")]  # said once, then the lesson speaks
    assert [s.value for s in other.success] == [lesson.ending]

    (stored,) = _store().list_runs()
    assert (stored.id, stored.steps, stored.stop_reason) == (started.id, 3, "answer")
    monkeypatch.setenv("AGENTCORE_USER", "tina")
    students = open_app(CLASS).dataframe[0].value
    assert list(students["student"]) == ["ada"] and list(students["runs"]) == [1]  # one run, not a new one
    assert list(students["3. Errors are data"]) == ["done"]


def test_the_lesson_the_address_names_opens_on_another_server(ada, open_app):
    first = open_app(LESSON)
    first.selectbox(key="lesson_id").set_value("budget").run()
    started = _run(_step(first), "budget")
    first.selectbox(key="lesson_id").set_value("parallel").run()  # picked, not yet stepped: nothing saved of it
    assert first.query_params["lesson"] == "parallel"

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=first.default_timeout)
    at.query_params["lesson"] = "parallel"  # the reloaded address
    at.run()
    at.switch_page(LESSON).run()
    assert at.selectbox(key="lesson_id").value == "parallel" and _run(at, "parallel") is None
    at.selectbox(key="lesson_id").set_value("budget").run()
    assert _run(at, "budget").id == started.id  # the other lesson, once picked, goes on from its saved run too


def test_a_finished_lesson_is_offered_to_reopen_and_a_step_starts_it_afresh(ada, open_app):
    lesson = LESSONS["loop"]
    done = _run(_step(open_app(LESSON), 2), "loop")
    assert lesson.done(done)

    at = open_app(LESSON)
    assert _run(at, "loop") is None and lesson.intro in _markdown(at)  # a finished lesson is not put back by itself
    (label,) = _offered(at)
    assert label == "Reopen your last run of this lesson: 2 steps · answer"
    at.button(key="lesson_reopen").click().run()
    assert _run(at, "loop").id == done.id and [s.value for s in at.success] == [lesson.ending]
    assert at.button(key="lesson_step").disabled and not _offered(at)

    again = open_app(LESSON)
    assert _offered(again)
    _step(again)
    assert _run(again, "loop").id != done.id and not _offered(again)
    assert len(_store().list_runs()) == 2


def test_only_the_users_own_run_of_a_lesson_is_taken_up_or_offered(ada, open_app, monkeypatch):
    mine = _run(_step(open_app(LESSON)), "loop")
    monkeypatch.setenv("AGENTCORE_USER", "bob")
    theirs = open_app(LESSON)
    assert _run(theirs, "loop") is None and not _offered(theirs)
    assert LESSONS["loop"].intro in _markdown(theirs)
    bobs = _run(_step(theirs), "loop")
    assert bobs.id != mine.id and len(bobs.steps) == 1
    assert _store().summary(mine.id).steps == 1 and _store().summary(bobs.id).owner == "bob"
    monkeypatch.setenv("AGENTCORE_USER", "tina")  # a teacher, who may read every run, is not put in ada's either
    teacher = open_app(LESSON)
    assert _run(teacher, "loop") is None and not _offered(teacher)


def test_restart_after_a_resume_stays_restarted_and_offers_the_run_left(ada, open_app):
    left = _run(_step(open_app(LESSON)), "loop")
    at = open_app(LESSON)
    assert _run(at, "loop").id == left.id
    at.button(key="lesson_restart").click().run()
    assert _run(at, "loop") is None and LESSONS["loop"].intro in _markdown(at)
    assert _offered(at) == ["Reopen your last run of this lesson: 1 step"]
    _step(at)
    fresh = _run(at, "loop")
    assert fresh.id != left.id and len(fresh.steps) == 1
    assert {r.id for r in _store().list_runs()} == {left.id, fresh.id}


def test_a_lessons_saved_run_is_known_by_its_title_not_by_words_in_another_run():
    from ui.lesson_offer import last_lesson_run, left_off

    store = _store()
    budget = LESSONS["budget"].start()
    store.save_run(budget)
    assert last_lesson_run(store, LESSONS["budget"]).id == budget.id and left_off(store) is LESSONS["budget"]
    store.save_run(Run.start("Lesson: The step budget, in my own words", title="my notes"))  # newer, no lesson's
    assert last_lesson_run(store, LESSONS["budget"]).id == budget.id and left_off(store) is LESSONS["budget"]
    loop = LESSONS["loop"].start()
    loop.stop_reason = "answer"  # a lesson done is not one left off
    store.save_run(loop)
    assert last_lesson_run(store, LESSONS["loop"]).id == loop.id and left_off(store) is None


def test_a_step_clicked_on_a_page_the_stopped_server_drew_is_taken_on_the_other(ada, open_app):
    """The browser reconnects to the other server without a redraw; its next click reaches a session that never drew
    the page, where Streamlit has no callback to call: the click still steps the saved run, once."""
    lesson = LESSONS["errors"]
    on_a = open_app(LESSON)
    on_a.selectbox(key="lesson_id").set_value("errors").run()
    left = _run(_step(on_a), "errors")
    on_a.button(key="lesson_step").click()  # pressed after server A stopped: not run there
    clicked = on_a._tree.get_widget_states()

    on_b = AppTest.from_file(str(ROOT / "app.py"), default_timeout=on_a.default_timeout)
    on_b.query_params["lesson"] = "errors"  # the address the page on A left
    on_b.switch_page(LESSON)
    on_b._run(clicked)  # the click is the first thing this session hears
    assert not on_b.exception, on_b.exception
    run = _run(on_b, "errors")
    assert run.id == left.id and len(run.steps) == 2
    assert "#### Step 2: " in "\n".join(_markdown(on_b)) and lesson.narration(run) in _markdown(on_b)
    (said,) = [i.value for i in on_b.info if i.value.startswith("Resumed your run of this lesson")]
    assert "1 step," in said  # where it was taken up, above the step it went on with
    assert [(r.id, r.steps) for r in _store().list_runs()] == [(left.id, 2)]

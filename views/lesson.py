"""Lesson: a guided run laid out for a projector (1280x720, no scrolling), with a narration for each step.

The diagram with the current node and the edge just taken, the newest messages, the key lines of
both phases of the step that just ran, and what the step sent: all on one screen.

A lesson goes on from its saved run: a browser session that has no run of the lesson yet (a new tab, or the
session another app server opened when the student's own stopped) takes up the student's own unfinished run of it
from the runs database, at its last saved step, and says so; a finished one is offered to reopen. The lesson in the
picker is in the page's address (?lesson=ID), so a reload or a reconnection opens the same lesson, and a Step clicked
on a page another server drew is taken (Streamlit has no callback to call for it there), not lost.
"""

from __future__ import annotations

import streamlit as st

from agentcore.errors import AgentcoreError
from agentcore.messages import AssistantMessage, Message, ToolMessage
from agentcore.run import Run
from ui import actions, safe, words
from ui.classroom import lesson_done
from ui.graph import key_lines_html, loop_html, step_views
from ui.lesson_offer import Saved, last_lesson_run, left_off
from ui.lessons import LESSONS, Lesson, edited_result, fork_with_result, get_lesson, step_tokens
from ui.page_state import LessonState
from ui.state import Session, get_session, get_store, in_app_words, on_run_changed
from ui.style import announce

LESSON_KEY = "lesson_id"  # the lesson picker
LESSON_PARAM = "lesson"  # the page address's query parameter naming the lesson in the picker
FORK_TEXT_KEY = "lesson_fork_result"
MOCK_TEXT_KEY = "lesson_mock_result"
WIDGETS = {LESSON_KEY: next(iter(LESSONS))}  # kept while another page is open, with their first values
STEPPED_KEY = "lesson_stepped"  # set by the Step button's callback, for the draw to know that it ran
SHOWN_MESSAGES = 4
SHOWN_CHARS = 90  # a tool result is cut to about one line (what the model said is not): the newest must fit

# the lesson screen packs tighter than the other pages: less padding above the first row and between blocks
PAGE_STYLE = (
    "<style>"
    ".stMainBlockContainer{padding:2.1rem 2rem 0.5rem 2rem}"
    ".st-key-lesson_page,.st-key-lesson_page [data-testid='stColumn']>[data-testid='stVerticalBlock']{gap:0.5rem}"
    ".st-key-lesson_narration p{font-size:1.05rem;line-height:1.4;margin-bottom:0.3rem}"
    ".st-key-lesson_new{background:#fff9db;border-radius:8px}"
    ".st-key-lesson_new p{margin-bottom:0.1rem;line-height:1.35}"
    "[class*='st-key-lesson_code_']{gap:0.15rem}"
    "[class*='st-key-lesson_code_'] .ac-klsrc{line-height:1.3}"
    "[class*='st-key-lesson_code_'] .ac-kl{padding:0 8px 0 0}"
    ".st-key-lesson_ending p{font-size:0.95rem;line-height:1.4}"
    ".st-key-lesson_ending [data-testid='stAlertContainer']{padding:0.75rem 1rem}"
    "</style>"
)


# -- which run is the lesson's ----------------------------------------------------------------


def _chosen() -> Lesson:
    """The lesson in the picker."""
    return get_lesson(st.session_state.get(LESSON_KEY))


def lesson_run(session: Session, lesson: Lesson) -> Run | None:
    """This lesson's run in this session, if it has started."""
    run_id = LessonState.get().runs.get(lesson.id)
    return session.runs.get(run_id) if run_id else None


def _place(state: LessonState) -> None:
    """On the page's first draw in a session: the lesson the address names, else the one the user left unfinished.

    A browser that reconnects to another app server keeps its address but not its widgets' values.
    """
    saved = Saved.get()
    if saved.placed:
        return
    saved.placed = True
    if LESSON_KEY in st.session_state or LESSON_KEY in state.widgets:
        return
    named = st.query_params.get(LESSON_PARAM)
    if named in LESSONS:
        st.session_state[LESSON_KEY] = named
        return
    try:
        lesson = left_off(get_store())
    except Exception:  # noqa: BLE001 - the same store is read again for the lesson's own run, which says what failed
        return
    if lesson is not None:
        st.session_state[LESSON_KEY] = lesson.id


def _take_up(session: Session, lesson: Lesson, run: Run, how: str, saved_at: str) -> None:
    """Make a run loaded from the database the lesson's run and the current one, and say from where it goes on."""
    LessonState.get().runs[lesson.id] = run.id
    session.add_run(run)
    actions.apply_settings(session, pause_before_tools=False)  # as _adopt: the lesson runs its tools as asked
    Saved.get().said = (
        f"{how} your run of this lesson as it was last saved: {words.plural(len(run.steps), 'step')}, "
        f"saved {_time(saved_at)}. "
        "**Restart** begins the lesson again."
    )


def _from_saved(session: Session, lesson: Lesson) -> Run | None:
    """Once per lesson in a session: the user's own unfinished saved run of it, taken up as the lesson's run; a
    finished one is offered to reopen instead. None when there is nothing to take up."""
    saved = Saved.get()
    if lesson.id in saved.looked:
        return None
    saved.looked.add(lesson.id)
    try:
        store = get_store()
        last = last_lesson_run(store, lesson)
        if last is None:
            return None
        if lesson_done(lesson, last):
            saved.offers[lesson.id] = last
            return None
        run = store.load_run(last.id)
    except Exception as exc:  # noqa: BLE001 - an unreadable store leaves the lesson to start afresh, and says why
        LessonState.get().notice = f"Your saved run of this lesson could not be read: {type(exc).__name__}: {exc}"
        return None
    _take_up(session, lesson, run, "Resumed", last.updated_at)
    return run


def _time(saved_at: str) -> str:
    return f"{saved_at[:16].replace('T', ' ')} UTC"


def _waits(lesson: Lesson, run: Run | None) -> bool:
    """Whether a Step cannot go on with the lesson's run: it is done, waits for a fork or a mock, or failed."""
    if run is None:
        return False
    waits = lesson.wants_fork(run) or lesson.wants_mock(run)
    return lesson.done(run) or waits or run.stop_reason == "error"


def _adopt(session: Session, lesson: Lesson, run: Run) -> None:
    """Make `run` the lesson's run and the current one, so the Step drives it and the Cost page shows it."""
    LessonState.get().runs[lesson.id] = run.id
    session.add_run(run)
    # a lesson runs its tools as the model asked (a fork of a run paused in the sidebar too); the sidebar follows
    actions.apply_settings(session, pause_before_tools=False)
    on_run_changed(run)


# -- what the buttons do ----------------------------------------------------------------------


def _step() -> None:
    """Step the lesson's run; the first Step starts it."""
    session, lesson = get_session(), _chosen()
    st.session_state[STEPPED_KEY] = True
    LessonState.get().notice = Saved.get().said = None
    run = lesson_run(session, lesson)
    if run is None:
        _adopt(session, lesson, lesson.start())
    elif _waits(lesson, run):
        return
    elif session.current_id != run.id:
        session.add_run(run)
    actions.request("step")


def _restart() -> None:
    """Start the lesson again; its old run stays in the runs library."""
    state, lesson, saved = LessonState.get(), _chosen(), Saved.get()
    left = state.runs.pop(lesson.id, None)
    state.notice = saved.said = None
    st.session_state.pop(FORK_TEXT_KEY, None)  # the box is filled in again for the new run
    if left is not None:  # the run just left is the one to offer back
        try:
            last = last_lesson_run(get_store(), lesson)
        except Exception:  # noqa: BLE001 - no offer is all that is lost; the store's trouble shows in the sidebar
            last = None
        saved.offers.pop(lesson.id, None)
        if last is not None:
            saved.offers[lesson.id] = last


def _reopen() -> None:
    """Make the user's last saved run of the lesson, offered under the first message, the lesson's run again."""
    session, lesson, saved = get_session(), _chosen(), Saved.get()
    offered = saved.offers.pop(lesson.id, None)
    if offered is None:
        return
    try:
        run = get_store().load_run(offered.id)
    except Exception as exc:  # noqa: BLE001 - a run deleted or unreadable since is said, not raised
        LessonState.get().notice = f"Your last run of this lesson could not be reopened: {type(exc).__name__}: {exc}"
        return
    _take_up(session, lesson, run, "Reopened", offered.updated_at)


def _fork() -> None:
    """Fork the lesson's run with the tool result typed in the box."""
    session, lesson, state = get_session(), _chosen(), LessonState.get()
    run = lesson_run(session, lesson)
    if run is None:
        return
    try:
        fork = fork_with_result(run, st.session_state.get(FORK_TEXT_KEY, ""))
    except AgentcoreError as exc:
        state.notice = str(exc)
        return
    state.notice = None
    _adopt(session, lesson, fork)


def _mock() -> None:
    """Put the lesson's mock rule, with the result typed in the box, on the lesson's run."""
    session, lesson = get_session(), _chosen()
    run = lesson_run(session, lesson)
    if run is None or lesson.mock is None:
        return
    rule = lesson.mock.model_copy(update={"result": st.session_state.get(MOCK_TEXT_KEY) or lesson.mock.result})
    if session.current_id != run.id:
        session.add_run(run)
    actions.apply_settings(session, mocks=[rule])
    on_run_changed(run)


# -- the parts of the screen -------------------------------------------------------------------


def _header(lesson: Lesson, run: Run | None) -> bool:
    """The title, the picker, Step and Restart; whether Step was clicked without its callback having run.

    Streamlit calls a button's callback only in a session that drew the button before: a click from a page that
    another app server drew (the browser's own server stopped, and it reconnected here) comes with no callback.
    """
    title, pick, step, restart = st.columns([5, 3, 1.3, 1.3], vertical_alignment="center")
    title.markdown(f"### :material/school: {lesson.title}")
    pick.selectbox(
        "Lesson",
        list(LESSONS),
        key=LESSON_KEY,
        format_func=lambda i: f"{list(LESSONS).index(i) + 1}. {LESSONS[i].title}",
        label_visibility="collapsed",
    )
    clicked = step.button(
        "Step",
        key="lesson_step",
        type="primary",
        icon=":material/skip_next:",
        disabled=_waits(lesson, run),
        on_click=_step,
        width="stretch",
    )
    restart.button("Restart", key="lesson_restart", icon=":material/restart_alt:", on_click=_restart, width="stretch")
    stepped = st.session_state.pop(STEPPED_KEY, False)
    return clicked and not stepped


def _narration(session: Session, lesson: Lesson, run: Run | None) -> None:
    with st.container(key="lesson_narration"):
        said = lesson.narration(run)
        st.markdown(said)  # the project's own words; only numbers come from the run
    announce(said.replace("**", "").replace("`", ""))  # read aloud after each Step, as it changes
    notice = LessonState.get().notice or session.notice
    if notice:
        st.error(safe.block(in_app_words(notice)), icon=":material/error:")
    if run is not None and run.stop_reason == "error":
        st.error(f"The model call failed: {safe.block(run.error or '')}", icon=":material/error:")


def _diagram(run: Run | None) -> None:
    with st.container(key="lesson_diagram"):
        tokens = None if run is None else step_tokens(run)
        if tokens is not None:
            st.markdown(f"#### Step {tokens.step}: {tokens.line}")
        else:
            st.markdown("#### Step 0: nothing sent yet")
        st.html(loop_html(run))  # a fixed drawing: nothing to lay out in the browser on each Step


def _next_lesson(lesson_id: str) -> None:
    st.session_state[LESSON_KEY] = lesson_id


def _ending(lesson: Lesson) -> None:
    with st.container(key="lesson_ending"):
        st.success(lesson.ending, icon=":material/flag:")


def _onward(lesson: Lesson) -> None:
    """Where to go once the lesson is done, under the diagram: the right column is full with the last step."""
    with st.container(key="lesson_onward"):
        if lesson.see_cost:
            st.page_link(
                "views/cost.py", label="Open the Cost page: the fit and the what-if curves", icon=":material/payments:"
            )
        if lesson.see_errors:
            st.page_link(
                "views/errors.py", label="Open the Error analysis page: labels counted", icon=":material/bug_report:"
            )
        ids = list(LESSONS)
        following = ids[ids.index(lesson.id) + 1] if lesson.id in ids[:-1] else None
        if following is not None:
            st.button(
                f"Next lesson: {LESSONS[following].title}",
                key="lesson_next",
                type="primary",
                icon=":material/arrow_forward:",
                on_click=_next_lesson,
                args=(following,),
            )


def _message_line(m: Message) -> str:
    """One message as Markdown, its untrusted text made safe: tool results and calls cut short, the model's words whole."""
    if isinstance(m, AssistantMessage):
        # what the model said is shown whole, line by line: the lesson's point is often its answer
        parts = [safe.block(m.content)] if m.content else []
        parts += [f"→ {safe.code(_cut(f'{c.name}({c.arguments_shown})', 60))}" for c in m.tool_calls]
        return "**assistant** " + " ".join(parts)
    if isinstance(m, ToolMessage):
        mark = ":red-badge[error]" if m.is_error else ":green-badge[result]"
        return f"**tool** {safe.code(_cut(m.name, 40))} {mark} {safe.inline(_cut(m.content))}"
    return f"**{m.role}** {safe.inline(_cut(m.content or ''))}"


def _cut(text: str, limit: int = SHOWN_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _newest(lesson: Lesson, run: Run | None) -> None:
    """The messages the newest step appended (the prompt, before the first step), marked as new."""
    with st.container(border=True, key="lesson_new"):
        if run is None:
            st.markdown(f":blue-badge[first message] **user** {safe.inline(lesson.prompt)}")
            return
        first = run.steps[-1].message_count if run.steps else 0
        new = run.messages[first:]
        head = f"**Newest:** {len(new)} message{'s' if len(new) != 1 else ''}, of {len(run.messages)} in the list"
        st.markdown(f":orange-badge[new] {head}")
        for m in new[:SHOWN_MESSAGES]:
            st.markdown(_message_line(m))
        if len(new) > SHOWN_MESSAGES:
            st.caption(f"and {len(new) - SHOWN_MESSAGES} more")


def _taken_up() -> None:
    """The line about a run just taken up from the database: a student whose server stopped sees where they are."""
    said = Saved.get().said
    if said:
        st.info(said, icon=":material/history:")


def _offer(lesson: Lesson) -> None:
    """Before the lesson's first Step here: the user's own last run of it, finished or left, one click away."""
    last = Saved.get().offers.get(lesson.id)
    if last is None:
        return
    stop = f" · {safe.inline(last.stop_reason)}" if last.stop_reason else ""
    st.button(
        f"Reopen your last run of this lesson: {words.plural(last.steps, 'step')}{stop}",
        key="lesson_reopen",
        icon=":material/history:",
        on_click=_reopen,
        help=f"Saved {_time(last.updated_at)}; Step starts a new run instead",
    )


def _code(run: Run | None) -> None:
    """The key lines of each phase the newest step ran: the model phase, then the tools phase."""
    for view in step_views(run):
        with st.container(key=f"lesson_code_{view.phase}"):
            st.caption(view.caption)
            st.html(key_lines_html(view, font_px=14))


def _fork_box(run: Run) -> None:
    with st.container(border=True, key="lesson_fork"):
        st.text_area("The tool result the model will read", value=edited_result(run), key=FORK_TEXT_KEY, height=90)
        st.button(
            "Fork with this result",
            key="lesson_fork_button",
            type="primary",
            icon=":material/call_split:",
            on_click=_fork,
        )


def _mock_box(lesson: Lesson) -> None:
    assert lesson.mock is not None
    with st.container(border=True, key="lesson_mock"):
        st.text_area("The result Rome's call will get", value=lesson.mock.result, key=MOCK_TEXT_KEY, height=68)
        st.button(
            "Mock this result", key="lesson_mock_button", type="primary", icon=":material/science:", on_click=_mock
        )


def main() -> None:
    """Draw the lesson chosen in the picker, running a requested Step first."""
    st.html(PAGE_STYLE)
    session, state = get_session(), LessonState.get()
    _place(state)
    state.restore(WIDGETS)
    lesson = _chosen()
    if st.query_params.get(LESSON_PARAM) != lesson.id:
        st.query_params[LESSON_PARAM] = lesson.id  # a reload, or another server after this one stops, opens it
    run = lesson_run(session, lesson) or _from_saved(session, lesson)
    slot = st.empty()  # always drawn, so the box of a running step never takes the place of the page below it
    if run is not None and session.current_id == run.id and (session.action or session.phase_job is not None):
        with slot.container(border=True, key="lesson_live"):
            actions.run_requested(session, st.empty())  # the time so far and the streamed text, as the step runs
        slot.empty()
    with st.container(key="lesson_page"):
        if _header(lesson, run):  # the click is done here, not lost: the page is drawn again with its step
            said = Saved.get().said
            _step()
            Saved.get().said = said  # the line about the run taken up stays above the step it goes on with
            if session.action:
                st.rerun()
        left, right = st.columns([5, 6], gap="medium")
        with left:
            _narration(session, lesson, run)
            _diagram(run)
            if run is not None and lesson.done(run):
                _onward(lesson)
        with right:
            _taken_up()
            _newest(lesson, run)
            if run is None:
                _offer(lesson)
            if run is not None and lesson.wants_fork(run):
                _fork_box(run)
            if run is not None and lesson.wants_mock(run):
                _mock_box(lesson)
            _code(run)
            if run is not None and lesson.done(run):
                _ending(lesson)
    state.keep(WIDGETS)


main()

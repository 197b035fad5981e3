"""Lesson: a guided run laid out for a projector (1280x720, no scrolling), with a narration for each step.

The diagram with the current node and the edge just taken, the newest messages, the key lines of
both phases of the step that just ran, and what the step sent: all on one screen.
"""

from __future__ import annotations

import streamlit as st

from agentcore.errors import AgentcoreError
from agentcore.messages import AssistantMessage, Message, ToolMessage
from agentcore.run import Run
from ui import actions, safe
from ui.graph import key_lines_html, loop_html, step_views
from ui.lessons import LESSONS, Lesson, edited_result, fork_with_result, get_lesson, step_tokens
from ui.page_state import LessonState
from ui.state import Session, get_session, in_app_words, on_run_changed
from ui.style import announce

LESSON_KEY = "lesson_id"  # the lesson picker
FORK_TEXT_KEY = "lesson_fork_result"
MOCK_TEXT_KEY = "lesson_mock_result"
WIDGETS = {LESSON_KEY: next(iter(LESSONS))}  # kept while another page is open, with their first values
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
    LessonState.get().notice = None
    run = lesson_run(session, lesson)
    if run is None:
        _adopt(session, lesson, lesson.start())
    elif session.current_id != run.id:
        session.add_run(run)
    actions.request("step")


def _restart() -> None:
    """Start the lesson again; its old run stays in the runs library."""
    state = LessonState.get()
    state.runs.pop(_chosen().id, None)
    state.notice = None
    st.session_state.pop(FORK_TEXT_KEY, None)  # the box is filled in again for the new run


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


def _header(lesson: Lesson, run: Run | None) -> None:
    title, pick, step, restart = st.columns([5, 3, 1.3, 1.3], vertical_alignment="center")
    title.markdown(f"### :material/school: {lesson.title}")
    pick.selectbox(
        "Lesson",
        list(LESSONS),
        key=LESSON_KEY,
        format_func=lambda i: f"{list(LESSONS).index(i) + 1}. {LESSONS[i].title}",
        label_visibility="collapsed",
    )
    waits = run is not None and (lesson.wants_fork(run) or lesson.wants_mock(run))
    done = run is not None and (lesson.done(run) or waits or run.stop_reason == "error")
    step.button(
        "Step",
        key="lesson_step",
        type="primary",
        icon=":material/skip_next:",
        disabled=done,
        on_click=_step,
        width="stretch",
    )
    restart.button("Restart", key="lesson_restart", icon=":material/restart_alt:", on_click=_restart, width="stretch")


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
    state.restore(WIDGETS)
    lesson = _chosen()
    run = lesson_run(session, lesson)
    slot = st.empty()  # always drawn, so the box of a running step never takes the place of the page below it
    if run is not None and session.current_id == run.id and (session.action or session.phase_job is not None):
        with slot.container(border=True, key="lesson_live"):
            actions.run_requested(session, st.empty())  # the time so far and the streamed text, as the step runs
        slot.empty()
    with st.container(key="lesson_page"):
        _header(lesson, run)
        left, right = st.columns([5, 6], gap="medium")
        with left:
            _narration(session, lesson, run)
            _diagram(run)
            if run is not None and lesson.done(run):
                _onward(lesson)
        with right:
            _newest(lesson, run)
            if run is not None and lesson.wants_fork(run):
                _fork_box(run)
            if run is not None and lesson.wants_mock(run):
                _mock_box(lesson)
            _code(run)
            if run is not None and lesson.done(run):
                _ending(lesson)
    state.keep(WIDGETS)


main()

"""Playground: step the ReAct loop one phase at a time and watch the message list grow."""

from __future__ import annotations

import time

import streamlit as st

from agentcore.errors import AgentcoreError
from agentcore.hooks.guard import REPEAT, guard_mode, withholds_tools
from agentcore.messages import pending_tool_calls
from agentcore.providers import REGISTRY
from agentcore.run import Run
from agentcore.testing.pinned import last_turn_repeats
from ui import actions, otel, safe, words
from ui.announcement import STOP_LABELS, announcement
from ui.conversation_view import render_conversation
from ui.graph import loop_html, source_html, source_view
from ui.held_view import render_live_holds
from ui.lesson_offer import offer_first_lesson
from ui.lessons import lesson_of
from ui.live import keep_focus
from ui.messages_view import (
    mark_new,
    message_line,
    render_latest,
    render_messages,
    show_newest,
    show_refusal,
    show_tool_call,
)
from ui.next_call_view import render_exports, render_read_only, show_next_call
from ui.page_state import PLAYGROUND_VIEW_KEY
from ui.state import Session, get_session, get_store, in_app_words
from ui.steps_view import render_steps, run_label
from ui.style import announce
from ui.tool_registry import available_tools

STOP_REASONS = {
    "answer": "the model replied without asking for a tool; whether the reply is right is for you to judge",
    "output limit": "the reply reached the most tokens a call may write and was cut off there: raise Max output "
    "tokens in the sidebar, then fork before this step (the Steps tab) to have the reply written again",
    "max_steps": "the step budget was used up",
    "structured": "the final answer matched the schema",
    "error": "the model call failed",
    "cancelled": "stopped by you",
    "stopped": "a hook stopped the run",
}
# how each stop is drawn: an answer in blue, a filled schema in green, a Stop or a used-up budget in orange
STOP_LOOKS = {
    "answer": (":material/flag:", "blue"),
    "structured": (":material/flag:", "green"),
    "cancelled": (":material/pause_circle:", "orange"),
}
SIDEBAR_DRAWN_FOR = "_sidebar_drawn_for"
QUICK_S = 0.3  # a phase that ends within this is drawn by the page's fragment alone, with no live box
PACES = {"no pause": 0.0, "0.5 s": 0.5, "1 s": 1.0, "2 s": 2.0}  # a wait after each phase of Run to end
PACE_KEY = "pace"
VIEWS = ("Messages", "Steps")
# less room above the title than Streamlit's 6rem: a Step's controls, its new messages and the decision panel
# share the first screen at 1280x720
PAGE_STYLE = (
    "<style>.stMainBlockContainer{padding-top:3rem}.st-key-pending h3{padding-top:0.25rem}"
    ".st-key-keep_focus,[data-testid=stElementContainer]:has(> .st-key-keep_focus),"
    "[data-testid=stLayoutWrapper]:has(> .st-key-keep_focus){display:none}</style>"
)
HOW_IT_WORKS = (
    "**The loop.** ① *Model phase*: the whole message list goes to the model, which answers or asks for tools. "
    "② *Tools phase*: each requested tool runs and its result is appended. Repeat until the model answers "
    "without asking for a tool, or the step budget runs out. One **Step** is ① then ②."
)


def _prompt_row(session: Session):
    """The prompt and New run; returns the place of the run picker, drawn once the phase asked for has run
    (drawn before it, it would name each run by its step count of the draw before)."""
    left, right = st.columns([6, 1], vertical_alignment="bottom")
    left.text_input("Prompt", key="prompt", placeholder="Ask something that needs a tool…")
    right.button(
        "New run", key="start", type="primary", icon=":material/add:", on_click=actions.start_run, width="stretch"
    )
    return st.empty()


def _run_picker(session: Session, slot) -> None:
    if len(session.runs) > 1:
        ids = list(session.runs)
        st.session_state["current_run"] = session.current_id
        slot.selectbox(
            "Run",
            ids,
            key="current_run",
            format_func=lambda rid: run_label(session, session.runs[rid]),
            on_change=actions.select_run,
            help="Every run of this session, forks included",
            label_visibility="collapsed",  # each option names its run: the row's room goes to the Step's messages
        )


def _live(session: Session, slot) -> None:
    """Run the requested phase in its slot, showing the time so far and the streamed text, then clear it."""
    with slot.container(border=True, key="live"):
        shown = st.empty()  # the phase's time and streamed text first; its Stop under them
        st.button(
            "Stop",
            key="stop_phase",
            icon=":material/stop_circle:",
            on_click=actions.stop_phase,
            help="Ends the model call at its next streamed piece (its reply is not kept), or the step before its tools",
        )
        for job in actions.run_requested(session, shown):
            if job.run is session.run and len(job.run.messages) > job.before:
                mark_new(job.run, job.before)
    slot.empty()  # the rest of the page is drawn after this, from the changed run: no second script run


def _quick_phase(session: Session) -> bool:
    """Run the requested phase in the page's fragment, if it ends within QUICK_S; True when nothing runs on.

    A phase that quick (the scripted model, a mocked result) needs no live box and no Stop, and the fragment's
    run redraws only the page: the sidebar and the navigation stay as they were. A longer one goes on, on its
    thread, and the app's script run follows it with its live box. A provider that takes an API key starts in
    the app's run, where the sidebar draws first and sets the key typed there (ui.state.set_typed_key).
    """
    job = session.phase_job
    if job is None:
        info = REGISTRY.get(session.run.config.provider) if session.run is not None else None
        if info is None or info.key_env is not None:
            return False
        action, session.action = session.action, None
        job = actions.start_phase(session, action or "step")
        if job is None:
            return True
    if not job.wait(QUICK_S):
        return False
    actions.finish_phase(session, job)
    if job.run is session.run and len(job.run.messages) > job.before:
        mark_new(job.run, job.before)
    _refresh_sidebar_if_changed(session)  # a failed save shows its warning in the sidebar
    return True


def _pause(seconds: float, line) -> None:
    """Wait between two phases, counting down: each update of the line is a point where Stop interrupts."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        line.caption(f"Next phase in {left:.1f} s")
        time.sleep(min(0.1, left))
    line.empty()


def _run_to_end(session: Session) -> None:
    """Run to the end, drawing the diagram and the newest message after each phase, at the chosen pace.

    This runs in the app's own script run, not in the page's fragment: a click on a widget of a fragment
    waits for the script run to end, while a click on Stop, drawn here, interrupts the run at its next
    update, between two phases. The phases done are saved as each ends.
    """
    run = session.run
    assert run is not None
    pause = PACES.get(st.session_state.get(PACE_KEY, ""), 0.0)
    box = st.empty()
    with box.container(border=True, key="live"):
        head, stop = st.columns([5, 1], vertical_alignment="center")
        head.markdown("**Running to the end…** Stop takes effect between phases.")
        stop.button("Stop", key="stop", icon=":material/stop_circle:", on_click=actions.stop, width="stretch")
        bar = st.progress(0.0)
        diagram, newest = st.columns([2, 3], gap="large")
        graph, latest, line = diagram.empty(), newest.empty(), st.empty()
        shown = [len(run.messages)]  # the message count at the last update: what the next phase adds is new

        def progress(r: Run, after_phase: bool = True) -> None:
            budget = max(1, r.config.max_steps)
            bar.progress(
                min(1.0, len(r.steps) / budget), text=f"Step {len(r.steps)} of {budget} · next: {r.next_phase}"
            )
            graph.html(loop_html(r))
            if len(r.messages) > shown[0]:
                mark_new(r, shown[0])
                shown[0] = len(r.messages)
            with latest.container():
                show_newest(r)
            if after_phase and pause and not r.finished:
                _pause(pause, line)

        progress(run, after_phase=False)
        actions.run_to_end(session, progress)
    box.empty()
    _refresh_sidebar_if_changed(session)  # a failed save shows its warning in the sidebar


def _status(session: Session, run: Run) -> None:
    budget = actions.upcoming(session).config.max_steps
    total = run.usage
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Step", f"{len(run.steps)} / {budget}")
    nxt = run.next_phase
    c2.metric("Next", "—" if run.finished else f"{nxt} phase")
    c3.metric("Messages", len(run.messages))
    c4.metric("Tokens", f"{total.total_tokens:,}", help="Input + output over all steps")
    if run.stop_reason and run.stop_reason != "error":
        why = STOP_REASONS.get(run.ending or "", "")
        label = STOP_LABELS.get(run.ending or "", run.ending)
        # not green for an answer: the loop ended, which says nothing of the answer; green for a filled schema,
        # whose shape was checked; a used-up budget or a Stop is an interruption
        icon, colour = STOP_LOOKS.get(run.ending or "", (":material/hourglass_bottom:", "orange"))
        _said_once(f"{icon} Stop reason: :{colour}-badge[{safe.inline(label or '')}] — {why}.", "stop_reason")
    if run.halt is not None and (run.paused or run.stop_reason == "stopped"):
        then = "Step goes on from here without asking that hook again." if run.paused else ""
        if run.paused and run.halt.breakpoint is not None:
            then = "Step or Run to end goes on from here; this breakpoint does not stop it here again."
        st.warning(
            f"{safe.inline(run.halt.words[0].upper() + run.halt.words[1:])}. {then}", icon=":material/front_hand:"
        )
    _loop_guard(run)


def _said_once(line: str, key: str) -> None:
    """Where the run stands, drawn as text in a box and not as an alert: Streamlit's st.info and st.warning are
    live regions, and the page's one live region (`announcement`) already reads it after the Step."""
    with st.container(border=True, key=key):
        st.markdown(line)


def _loop_guard(run: Run) -> None:
    """What the loop guard did in the last tools phase, or, under warn, the model's repeated call."""
    mode = guard_mode(run.config)
    last = run.steps[-1] if run.steps else None
    if mode == "guard" and last is not None:
        repeats = [t for t in last.tool_runs if t.source == REPEAT]
        if repeats:
            names = ", ".join(safe.code(t.name) for t in repeats)
            then = (
                " The next model call goes with no tool to call, so the model has to answer."
                if withholds_tools(run)
                else ""
            )
            st.info(
                f"Loop guard: the model repeated an identical call ({names}); it was not run again, its earlier "
                f"result was returned with a note.{then}",
                icon=":material/repeat:",
            )
        elif last.tools_withheld:
            st.info(
                "Loop guard: this step's model call went with no tool to call, after repeated identical calls.",
                icon=":material/repeat:",
            )
        return
    repeat = last_turn_repeats(run) if mode == "warn" else None
    if repeat is not None and not run.finished:
        st.warning(
            f"The model repeated an identical call: {safe.code(f'{repeat.name}({repeat.arguments})')}, "
            f"made {repeat.count} times so far. A model stuck in a loop runs until the step budget stops it "
            "(the sidebar's Loop guard set to guard answers a repeat from the run).",
            icon=":material/repeat:",
        )


def _controls(session: Session, run: Run) -> None:
    imported = session.held_import(run)
    if imported is not None:
        render_read_only(session, run, imported)
        return
    editing = session.draft is not None
    # a structured answer ends the run for good; a used-up budget can still be raised in the sidebar
    can_model = actions.upcoming(session).can_call_model and not editing
    can_tools = run.next_phase == "tools" and not editing
    show_next_call(session, run)
    bar = st.container(horizontal=True, key="controls")
    bar.button(
        "Step",
        key="step",
        type="primary",
        icon=":material/skip_next:",
        disabled=not (can_model or can_tools),
        on_click=actions.request,
        args=("step",),  # no tooltip: it would cover the next-step line above; How it works says what a Step is
    )
    bar.button("Model phase", key="model_phase", disabled=not can_model, on_click=actions.request, args=("model",))
    bar.button("Tools phase", key="tools_phase", disabled=not can_tools, on_click=actions.request, args=("tools",))
    bar.button(
        "Run to end",
        key="run_to_end",
        icon=":material/fast_forward:",
        disabled=not (can_model or can_tools),
        on_click=actions.start_run_to_end,
    )
    bar.selectbox(
        "Pace",
        list(PACES),
        key=PACE_KEY,
        format_func=lambda pace: f"Pace: {pace}",
        label_visibility="collapsed",
        width=150,
        help="How long Run to end waits after each phase, so that each change can be followed",
    )
    bar.button("Reset", key="reset", icon=":material/restart_alt:", on_click=actions.reset_run, help="Start again")
    render_exports(bar, run)  # the exports share one button, so the controls fit one row at 1280 px
    live_problem = otel.problem()
    if live_problem:
        st.caption(f":material/warning: {safe.inline(live_problem)}")
    if editing:
        st.caption("Apply or discard the edits below before stepping.")
    elif run.next_phase == "model" and actions.upcoming(session).budget_left == 0:
        st.caption("The step budget is used up: raise **Max steps** in the sidebar to go on.")
    elif run.next_phase == "done" and not run.stop_reason:
        st.caption(
            "The list ends with the model's answer, so the loop has nothing to do: delete that answer, or insert "
            "a user message after it, to have the model go on."
        )


def _error(session: Session, run: Run) -> None:
    with st.container(border=True, key="error_box"):
        st.error(f"The model call failed: {safe.block(in_app_words(run.error or ''))}", icon=":material/error:")
        nxt = actions.next_call(session)
        again = f" with {safe.code(nxt.model.label)}" if nxt else ""
        if session.held_import(run) is not None:  # read-only: the panel above says how to go on
            return
        st.caption(f"Nothing in the run was lost. Retry makes the call again{again}, as the sidebar is set now.")
        st.button(
            "Retry", key="retry", type="primary", icon=":material/refresh:", on_click=actions.request, args=("retry",)
        )


def _pending(session: Session, run: Run) -> None:
    calls = pending_tool_calls(run.messages)
    held = session.held_import(run) is not None  # listed to read, with no decision and no button that runs them
    with st.container(border=True, key="pending"):
        st.markdown(
            f"### :material/pause_circle: {len(calls)} tool call{'s' if len(calls) != 1 else ''} waiting",
            help="Approve each call, change its arguments, deny it (the model reads the denial as an error) "
            "or type its result; then run the tools.",
        )
        asked = next((i for i in range(len(run.messages) - 1, -1, -1) if run.messages[i].role == "assistant"), None)
        if asked is not None and run.messages[asked].content:  # what the model said with its calls
            st.markdown(message_line(asked, run.messages[asked], calls=False))
        missing = sorted({call.name for call in calls} - set(available_tools()))
        if missing:
            names = ", ".join(safe.code(name) for name in missing)
            st.caption(
                f":material/help: Not a tool of this app: {names}. Approved, "
                f"{'it answers' if len(missing) == 1 else 'they answer'} with an error the model reads; "
                "Type the result to answer as the tool would have."
            )
        for call in calls:
            args = call.arguments_text
            if held:
                show_tool_call(call, args)
                continue
            # the call and its decision side by side: the panel stays in view with the Step that made it
            what, decision = st.columns([4, 5], vertical_alignment="center")
            with what:
                show_tool_call(call, args)
            choice = decision.radio(
                "Decision",
                ["Approve", "Edit arguments", "Deny", "Type the result"],
                key=f"dec_{call.id}",
                horizontal=True,
                label_visibility="collapsed",
            )
            if choice == "Edit arguments":
                st.text_area("Arguments (JSON object)", value=args, key=f"dec_args_{call.id}", height=80)
                show_refusal(session, f"dec_args_{call.id}")
            elif choice == "Deny":
                st.text_input("Reason told to the model (optional)", key=f"dec_reason_{call.id}")
            elif choice == "Type the result":
                st.text_area("The result the model will read", key=f"dec_result_{call.id}", height=80)
        if held:
            return
        st.button(
            "Run tools with these decisions",
            key="run_tools",
            type="primary",
            icon=":material/play_arrow:",
            disabled=session.draft is not None,
            on_click=actions.request,
            args=("tools",),
        )


def _offer_last_run(session: Session) -> None:
    """A fresh tab starts clean; the run last looked at is one click away."""
    last = session.last_run
    if last is None:
        return
    st.button(
        f"Reopen your last run: {safe.inline(last.title or last.id)}",
        key="reopen",
        icon=":material/history:",
        on_click=actions.reopen,
    )
    steps = f"{last.steps} step{'s' if last.steps != 1 else ''}"
    saved = last.updated_at[:16].replace("T", " ")
    st.caption(f"{steps} on {safe.code(last.models_label or last.provider)} · saved {safe.inline(saved)} UTC")


def _where(run: Run | None) -> None:
    graph, code = st.columns([2, 3], gap="large")
    with graph:
        st.markdown("### Where am I")
        st.html(loop_html(run))  # a drawing, not st.graphviz_chart: nothing to lay out or animate on each Step
        st.caption(HOW_IT_WORKS)
    with code:
        view = source_view(run)
        st.markdown(f"### The loop's code: `Agent.{view.phase}_phase`")
        st.caption(view.caption + " Highlighted lines did the work; numbers are lines in agentcore/loop.py.")
        with st.container(key="source"):
            st.html(source_html(view))
        whole = st.expander("The whole function", key="whole_function", on_change="rerun")
        if whole.open:  # drawn once opened, not on every Step
            with whole:
                st.html(source_html(view, whole=True))


def _lesson_settings(run: Run) -> None:
    """A lesson's run brings the lesson's settings to the sidebar: say so where the playground shows it."""
    lesson = lesson_of(run)
    if lesson is None:
        return
    c = run.config
    st.info(
        f"This is the run of the lesson *{safe.inline(lesson.title)}*, with its settings: the scripted model "
        f"{safe.code(c.model or c.scenario or '')}, {words.plural(c.max_steps, 'step')} at most"
        + (f", breakpoints {safe.code(', '.join(c.breakpoints))}" if c.breakpoints else "")
        + ". The sidebar shows them, and **New run** starts with them: change them there for a run of your own.",
        icon=":material/school:",
    )


def _notice(session: Session, slot) -> None:
    if session.notice:
        slot.error(safe.block(in_app_words(session.notice)), icon=":material/error:")
    elif session.info:
        slot.info(safe.block(session.info), icon=":material/info:")


def _sidebar_key(session: Session) -> tuple:
    """What the sidebar draws from the session: the run on screen, a run to follow, a store error."""
    return (session.current_id, session.sync_sidebar, session.store_error)


def _refresh_sidebar_if_changed(session: Session) -> None:
    """A page-only redraw leaves the sidebar as it was: when what it shows changed, redraw the whole app."""
    if _sidebar_key(session) != st.session_state.get(SIDEBAR_DRAWN_FOR):
        st.rerun(scope="app")


@st.fragment
def _page(session: Session) -> None:
    """Everything below the title: a click here redraws only this part, not the sidebar and the navigation."""
    _refresh_sidebar_if_changed(session)  # a callback may have opened, forked or dropped a run
    picker = _prompt_row(session)
    notice = st.empty()  # filled after a phase runs, so the notice it leaves shows in the same draw
    run = session.run
    if run is None:
        _run_picker(session, picker)
        _notice(session, notice)
        _offer_last_run(session)
        offer_first_lesson(session)
        st.info("Type a prompt and press **New run**, then **Step** to watch one turn of the loop.")
        _where(None)
        return
    if session.running:
        st.rerun(scope="app")  # Run to end was pressed: it runs where its Stop button can interrupt it
    if (session.action or session.phase_job is not None) and not _quick_phase(session):
        # a click on a widget of this fragment waits for the fragment's run to end, so a longer phase runs on in
        # the app's own script run, where a click on its Stop interrupts the page at once and ends the call
        st.rerun(scope="app")
    _run_picker(session, picker)
    _lesson_settings(run)
    _notice(session, notice)
    announce(announcement(run))
    _controls(session, run)
    _status(session, run)
    if run.stop_reason == "error":
        _error(session, run)
    elif run.next_phase == "tools" and session.draft is None:
        _pending(session, run)
    else:
        render_latest(session)  # what the last phase added, in view with the controls: the page stays where it is
        render_conversation(session)  # after an answer, the user's next turn: a person's, or a simulated user's
    opened = session.opened_from if session.opened_from and session.opened_from[0] == run.id else None
    if opened:  # opened from a failing test: what failed first, and its step, not under the loop's source
        st.info(safe.block(opened[1]), icon=":material/science:")
    else:
        _where(run)
    # Only the open tab is drawn: the Steps tab's wire bodies were a third of the page, redrawn on every Step.
    # The labels stay fixed, since the open tab is remembered by its label.
    if session.open_view in VIEWS:  # another page asked for a tab: a failing test's cell opens on its step
        st.session_state[PLAYGROUND_VIEW_KEY], session.open_view = session.open_view, None
    messages, steps = st.tabs(list(VIEWS), key=PLAYGROUND_VIEW_KEY, on_change="rerun")
    if messages.open:
        with messages:
            render_messages(session)
    if steps.open:
        with steps:
            render_steps(session)
    if opened:
        _where(run)


def main() -> None:
    """Draw the playground from the Session."""
    session = get_session()
    st.session_state[SIDEBAR_DRAWN_FOR] = _sidebar_key(session)  # the sidebar was drawn just before this
    st.html(PAGE_STYLE)
    keep_focus()
    st.markdown("## Playground")
    try:
        store = get_store()
    except AgentcoreError:  # a database that cannot be opened is reported where the run is saved
        store = None
    if store is not None:
        render_live_holds(store)  # a call a recording proxy of this person's holds: shown live, with its buttons
    if session.running and session.run is not None:
        _run_to_end(session)
    elif session.run is not None and (session.action or session.phase_job is not None):
        _live(session, st.empty())
        _refresh_sidebar_if_changed(session)  # a failed save shows its warning in the sidebar
    _page(session)


main()

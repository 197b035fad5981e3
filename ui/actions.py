"""What the buttons do. Callbacks change the Session; phases run while the page draws.

Phases are not run inside callbacks: a callback only records the request, and the page
runs it at the top of its next draw, where streamed text and progress can be shown.

A run's config is written from the sidebar's settings in one place, `apply_settings`, which the
callbacks that start a phase call: the sidebar shows a change at once, as the next call's plan
(`upcoming`, `next_call`), and the run takes it when it goes on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from agentcore.errors import AgentcoreError
from agentcore.hooks.examples import check_hook_names
from agentcore.loop import Agent, Event, Observer, ToolDecision
from agentcore.messages import AssistantMessage, Message, ToolMessage, Usage, UserMessage, pending_tool_calls
from agentcore.messages import validate_messages as _validate
from agentcore.providers import FREE_PROVIDERS
from agentcore.providers.base import estimate_request_tokens
from agentcore.providers.llama_state import report_waits
from agentcore.providers.prices import price_call
from agentcore.providers.scripted import SCENARIOS
from agentcore.request import base_request, prepare, request_settings
from agentcore.run import Run, RunConfig
from agentcore.steps import ModelRef

from .live import PhaseJob, PhaseProgress, follow
from .message_editor import RefusedField, edited, parse_object
from .otel import observer as otel_observers
from .state import Action, Session, get_session, make_provider, on_run_changed, reopen_last_run
from .tool_registry import available_tools, resolve_tools

# -- starting, choosing and resetting runs ---------------------------------------------------


def start_run() -> None:
    """Start a new run from the prompt box with the sidebar's settings."""
    session = get_session()
    prompt = (st.session_state.get("prompt") or "").strip()
    if not prompt:
        session.notice = "Type a prompt first."
        return
    run = Run.start(prompt, session.config.run_config())
    session.add_run(run)
    session.notice = session.info = None
    on_run_changed(run)


def start_scenario_run() -> None:
    """Start the sidebar's scenario as a new run with the scenario's own prompt."""
    session = get_session()
    scenario = SCENARIOS.get(session.config.scenario or "")
    if session.config.provider != "scripted" or scenario is None:
        return
    run = Run.start(scenario.prompt, session.config.run_config())
    session.add_run(run)
    session.notice = session.info = None
    on_run_changed(run)


def reset_run() -> None:
    """Start the current run's prompt again as a new run; the old run stays in the list."""
    session = get_session()
    run = session.run
    if run is None:
        return
    prompt = next((m.content for m in run.messages if isinstance(m, UserMessage)), None)
    if prompt is None:
        session.notice = "This run has no user message to start again from."
        return
    fresh = Run.start(prompt, session.config.run_config())
    session.add_run(fresh)
    on_run_changed(fresh)


def reopen() -> None:
    """Open the run offered on a fresh tab: the one last looked at."""
    reopen_last_run(get_session())


def select_run() -> None:
    """Make the run chosen in the run picker current."""
    session = get_session()
    chosen = st.session_state.get("current_run")
    if chosen in session.runs and chosen != session.current_id:
        session.add_run(session.runs[chosen])


def fork_at(step: int) -> None:
    """Continue from just before `step` as a new run; the old run is kept."""
    session = get_session()
    run = session.run
    if run is None:
        return
    try:
        fork = run.fork(step)
    except AgentcoreError as exc:
        session.notice = str(exc)
        return
    session.add_run(fork)
    on_run_changed(fork)


# -- an imported run: read-only until a person chooses who goes on with it -------------------------

READ_ONLY = (
    "This run is an imported session, read-only here: choose a provider in the sidebar, then press Go on with it, "
    "before anything is sent to a model or a tool is run."
)


def go_on() -> None:
    """The person chose the sidebar's provider and model to go on with the imported run on screen."""
    session = get_session()
    if session.run is not None and not _busy(session):
        session.going_on.add(session.run.id)
        session.notice = None


def _held(session: Session) -> bool:
    """Whether the current run may not call a model or run a tool yet: then the page says why, once."""
    if session.held_import() is None:
        return False
    session.notice = READ_ONLY
    session.action, session.running = None, False
    return True


# -- stepping ---------------------------------------------------------------------------------


def request(action: Action) -> None:
    """Ask the page to run a phase on its next draw; for tools, take the decisions from the form."""
    session = get_session()
    if _busy(session) or _held(session):
        return
    session.notice, session.refused = None, None
    apply_settings(session)
    if action in ("tools", "step") and session.run is not None and session.run.next_phase == "tools":
        try:
            session.decisions = collect_decisions(session.run)
        except RefusedField as exc:
            session.refused = (exc.key, str(exc))
            return
    session.action = action


def start_run_to_end() -> None:
    """Step until the run stops, showing progress; Stop ends it between phases."""
    session = get_session()
    if _busy(session) or _held(session):
        return
    session.notice = session.info = None
    apply_settings(session)
    run = session.run
    if run is not None and run.halt is not None and run.paused and run.next_phase == "tools":
        try:  # a breakpoint opened the decision panel: Run to end goes on with its decisions
            session.decisions = collect_decisions(run)
        except RefusedField as exc:
            session.refused = (exc.key, str(exc))
            return
    session.running, session.stop_requested = True, False


def _busy(session: Session) -> bool:
    """Whether a phase still runs on its thread (its script run was interrupted): a click cannot start another."""
    job = session.phase_job
    return job is not None and not job.wait(0)


def stop_phase() -> None:
    """Stop the phase running on its thread: a model call ends at its next streamed piece, its tools do not run."""
    job = get_session().phase_job
    if job is not None:
        job.cancel.set()


def stop() -> None:
    """Stop "Run to end" before its next phase: the click interrupted the run between two phases."""
    session = get_session()
    session.stop_requested = True
    run = session.run
    if session.running and run is not None and not run.finished:
        run.stop_reason = "cancelled"
        on_run_changed(run)
    session.running = False


def collect_decisions(run: Run) -> dict[str, ToolDecision]:
    """The decision on each pending tool call, from its widgets; bad JSON arguments raise RefusedField."""
    decisions: dict[str, ToolDecision] = {}
    for call in pending_tool_calls(run.messages):
        choice = st.session_state.get(f"dec_{call.id}", "Approve")
        if choice == "Deny":
            reason = (st.session_state.get(f"dec_reason_{call.id}") or "").strip() or None
            decisions[call.id] = ToolDecision(action="deny", reason=reason)
        elif choice == "Type the result":
            decisions[call.id] = ToolDecision(
                action="result", content=st.session_state.get(f"dec_result_{call.id}", "")
            )
        elif choice == "Edit arguments":
            key = f"dec_args_{call.id}"
            try:
                arguments = parse_object(st.session_state.get(key, ""), f"{call.name} ({call.id})")
            except ValueError as exc:
                raise RefusedField(key, str(exc)) from None
            decisions[call.id] = ToolDecision(action="edit", arguments=arguments)
    return decisions


def _sidebar_config(session: Session, run: Run) -> RunConfig:
    """The run's config with the sidebar's provider, model, tools, limits and policies: how a run goes on.

    Each step records who answered it, so a switch to another model is on the record. The tools change
    only before a model phase: calls already waiting run with the tools the model was offered.
    """
    cfg = session.config
    update = cfg.settings_update()
    if run.next_phase == "model" and set(cfg.tools) != set(_tool_names(run)):
        update["tools"] = [t.spec() for t in resolve_tools(cfg.tools)]
    return run.config.model_copy(update=update)


def apply_settings(session: Session, **changes: Any) -> None:
    """The one place the current run's config is written from the sidebar: its settings, then a page's `changes`.

    Called by the callbacks that start a phase, never while the sidebar draws. A run the sidebar does not
    show yet (just opened, forked or started by a page) keeps its own config: the sidebar follows it first.
    """
    run = session.run
    if run is None:
        return
    config = run.config if session.sync_sidebar else _sidebar_config(session, run)
    run.config = config.model_copy(update=changes) if changes else config


def _tool_names(run: Run) -> list[str]:
    # tools the app does not have (from an imported run) are kept until the person changes the tools
    available = available_tools()
    return [t.name for t in run.config.tools if t.name in available]


def upcoming(session: Session) -> Run | None:
    """The current run as its next phase will see it: with the sidebar's settings (a view; not saved)."""
    run = session.run
    if run is None or session.sync_sidebar:
        return run
    return run.model_copy(update={"config": _sidebar_config(session, run)})


@dataclass(frozen=True)
class NextCall:
    """Who answers the run's next model call, with which tools, and what changed since its last step."""

    model: ModelRef
    tools: list[str]
    changed: list[str]  # of "model" and "tools": what differs from the run so far


def _calls_no_more(run: Run) -> bool:
    """The run calls the model no more: it filled its schema, or nothing comes next."""
    return run.stop_reason == "structured" or run.next_phase == "done"


def next_call(session: Session) -> NextCall | None:
    """The next model call as the sidebar sets it; None when the run cannot call the model again."""
    run = session.run
    if run is None or _calls_no_more(run):
        return None
    cfg = session.config
    model = ModelRef(cfg.provider, (cfg.scenario or cfg.model) if cfg.provider == "scripted" else cfg.model)
    before = run.answered_by(run.steps[-1]) if run.steps else None
    tools = [t.name for t in resolve_tools(cfg.tools)]
    changed = []
    if before is not None and before != model:
        changed.append("model")
    if run.steps and set(tools) != set(_tool_names(run)):
        changed.append("tools")
    return NextCall(model, tools, changed)


@dataclass(frozen=True)
class CallEstimate:
    """What the next model call would send to a provider that charges for it, estimated before it goes."""

    model: ModelRef
    tokens: int  # the request's input tokens, estimated from its text and tool definitions
    cost: float | None  # USD for those tokens at the model's price; None where no price is known
    after_tools: bool  # the tools phase runs first: its results add to what the call sends


def next_call_estimate(session: Session) -> CallEstimate | None:
    """The next model call's input tokens and their price (genai-prices, as the Cost page prices); None when there
    is no next call or its provider is free (the embedded and scripted models)."""
    nxt, run = next_call(session), upcoming(session)
    return None if nxt is None or run is None else call_estimate(run, nxt.model)


def call_estimate(run: Run, model: ModelRef) -> CallEstimate | None:
    """What `run`'s next model call would send to `model`, and its price; None when its provider is free or the run
    can make no call (the playground's next call, and each column of a comparison, are estimated alike)."""
    if model.provider in FREE_PROVIDERS or _calls_no_more(run):
        return None
    try:
        messages = prepare(run).messages  # the history as the run's context policies would send it
    except AgentcoreError:  # they would ask the model for a summary first: the whole history, the most it sends
        messages = run.messages
    tokens = estimate_request_tokens(base_request(run, messages, request_settings(run.config)))
    cost = price_call(run, model, Usage(input_tokens=tokens))
    return CallEstimate(model, tokens, cost, run.next_phase == "tools")


def _agent(session: Session, run: Run, observers: list[Observer]) -> Agent:
    provider = make_provider(run.config, session.config.provider_options)
    # a run's hooks are names of registered ones; an unknown name (from someone else's file) is a one-line notice
    check_hook_names(run.config.hooks)
    # with OTEL_EXPORTER_OTLP_ENDPOINT set, each step is sent as it finishes (ui.otel)
    observers = [*observers, *otel_observers(run)]
    return Agent(provider, resolve_tools(_tool_names(run)), observers=observers)


def _drive(session: Session, run: Run, drive: Callable[[], object]) -> None:
    """Run `drive` on the current run; a failure is shown once, and the run is saved.

    A failure before the model is reached (a provider that cannot load) is the one-line notice, or,
    on a run that stopped with an error, that run's error in place of the old one: one error on screen.
    """
    try:
        with report_waits(_wait_notice()):
            drive()
    except Exception as exc:  # noqa: BLE001 - a provider that fails to load is shown, not raised
        _failed(session, run, _failure(run, exc))
    on_run_changed(run)


def _failure(run: Run, exc: Exception) -> str:
    """A failure outside the model call, in one line: the library's own words, or the provider and the exception."""
    if isinstance(exc, AgentcoreError):
        return str(exc)
    return f"{run.config.provider}: {type(exc).__name__}: {exc}"


def _wait_notice() -> Callable[[int], None]:
    """A caption shown while a call waits its turn for the embedded model, which answers one call at a time."""
    slot = None

    def on_wait(ahead: int) -> None:
        nonlocal slot
        slot = slot or st.empty()
        if ahead:
            calls = "1 call" if ahead == 1 else f"{ahead} calls"
            slot.caption(f":material/hourglass_top: Waiting for the embedded model: {calls} ahead")
        else:
            slot.empty()

    return on_wait


def _failed(session: Session, run: Run, message: str) -> None:
    if run.stop_reason == "error":
        run.error = message  # this attempt's failure, not the last call's
    else:
        session.notice = message


def start_phase(session: Session, action: Action) -> PhaseJob | None:
    """Start one requested phase, or one step, of the current run on its own thread, for the page to follow.

    The provider and the tools are made here, in the script run (they read the sidebar, a typed key and
    Streamlit's cache); the thread runs only the loop, and tells the job's progress how it goes.
    None when there is nothing to run, or the provider could not be made (that failure is shown).
    """
    run = session.run
    if run is None or _held(session):  # the one gate before a phase: every button that steps comes here
        return None
    decisions, session.decisions = session.decisions, {}
    progress = PhaseProgress("tools" if action in ("tools", "step") and run.next_phase == "tools" else "model")
    try:
        agent = _agent(session, run, [progress.observe])
    except Exception as exc:  # noqa: BLE001 - a provider that fails to load is shown, not raised
        _failed(session, run, _failure(run, exc))
        on_run_changed(run)
        return None

    def drive() -> None:
        with report_waits(progress.on_wait):  # the wait for the embedded model is shown with the phase
            if action in ("model", "retry"):
                agent.model_phase(run, job.cancel)
            elif action == "tools":
                agent.tools_phase(run, decisions)
            else:
                agent.step(run, decisions, cancel=job.cancel)

    session.phase_job = job = PhaseJob(run, drive, progress)
    job.start()
    return job


def finish_phase(session: Session, job: PhaseJob) -> None:
    """After a followed phase has ended: its failure shown once, and its run saved."""
    if session.phase_job is job:
        session.phase_job = None
    if job.failure is not None:
        _failed(session, job.run, _failure(job.run, job.failure))
    on_run_changed(job.run)


def run_requested(session: Session, slot) -> list[PhaseJob]:
    """Run the requested phase, drawing its progress in `slot` until it ends; the phases finished, in order.

    A phase still running from an interrupted script run is followed to its end first: one phase at a time.
    """
    finished = []
    while session.phase_job is not None or session.action:
        job = session.phase_job
        if job is None:
            action, session.action = session.action, None
            job = start_phase(session, action or "step")
            if job is None:
                break
        follow(job, slot)
        finish_phase(session, job)
        finished.append(job)
    return finished


def run_to_end(session: Session, progress: Callable[[Run], None]) -> None:
    """Agent.run on the current run, saving and showing progress after each phase; Stop ends it between phases."""
    run = session.run
    if run is None or _held(session):  # the gate of Run to end and of a replay from a mocked result
        return
    cancel = threading.Event()

    def observe(event: Event) -> None:
        if event.kind == "phase_finished":
            on_run_changed(run)
            progress(run)
        if session.stop_requested:
            cancel.set()

    decisions, session.decisions = session.decisions, {}

    def drive() -> None:
        if run.halt is not None and run.paused:  # a breakpoint or a hook paused it: going on is one step past it
            _agent(session, run, [observe]).step(run, decisions, cancel=cancel)
            apply_settings(session)
        if run.next_phase == "tools" and not run.paused:
            # the waiting calls run with the tools the model was offered; the sidebar's apply from the model phase
            _agent(session, run, [observe]).step(run, cancel=cancel)
            apply_settings(session)
        _agent(session, run, [observe]).run(run, cancel)

    # a click on Stop (or on the sidebar) interrupts the page with Streamlit's own exception, which passes through
    # here: the run stays running, for stop() to end, or for the next draw to go on with
    _drive(session, run, drive)
    session.running = session.stop_requested = False


# -- editing the message list -------------------------------------------------------------------


def _draft(session: Session) -> list[Message]:
    if session.draft is None:
        session.draft = list(session.run.messages) if session.run else []
    return session.draft


EDIT_PREFIX = "edit"  # the keys of the playground's message editor: edit_content_3, edit_save_3


def begin_edit(index: int) -> None:
    """Open the editor of one message."""
    session = get_session()
    _draft(session)
    session.editing, session.refused = index, None


def _drop_unchanged_draft(session: Session) -> None:
    """A draft that holds no change is no edit: nothing is left pending, and stepping goes on."""
    if session.run is not None and session.draft == session.run.messages:
        session.draft = None


def cancel_edit() -> None:
    """Close the editor without changing the message."""
    session = get_session()
    session.editing, session.refused = None, None
    _drop_unchanged_draft(session)


def save_edit(index: int) -> None:
    """Put the editor's content (and tool call arguments) into the draft list."""
    session = get_session()
    draft = _draft(session)
    try:
        draft[index] = edited(EDIT_PREFIX, index, draft[index])
    except RefusedField as exc:
        session.refused = (exc.key, str(exc))  # the editor stays open, the reason shown under the field
        return
    session.editing, session.notice, session.refused = None, None, None
    _drop_unchanged_draft(session)


def delete_message(index: int) -> None:
    """Remove one message from the draft list."""
    session = get_session()
    draft = _draft(session)
    if 0 <= index < len(draft):
        del draft[index]
    session.editing = None


def insert_message() -> None:
    """Insert a message from the insert form into the draft list."""
    session = get_session()
    draft = _draft(session)
    position = int(st.session_state.get("ins_pos", len(draft)))
    role = st.session_state.get("ins_role", "user")
    content = st.session_state.get("ins_content", "")
    if role == "user":
        message: Message = UserMessage(content=content)
    elif role == "assistant":
        message = AssistantMessage(content=content or None)
    else:
        call_id = (st.session_state.get("ins_call_id") or "").strip()
        name = (st.session_state.get("ins_tool_name") or "").strip()
        message = ToolMessage(tool_call_id=call_id, name=name, content=content)
    draft.insert(max(0, min(position, len(draft))), message)


def discard_draft() -> None:
    """Drop every pending edit."""
    session = get_session()
    session.draft, session.editing = None, None


def apply_draft() -> None:
    """Apply the edited list: in place after the last model call, otherwise as a fork.

    The fork ends before the model's first reply after the edit, unless the person keeps the later messages.
    """
    session = get_session()
    run, draft = session.run, session.draft
    if run is None or draft is None or _busy(session):
        return
    violations = _validate(draft)
    if violations:
        session.notice = f"Fix the message list first: {violations[0]}"
        return
    if draft == run.messages:
        discard_draft()
        return
    if run.edit_forks(draft):
        target = run.fork_with_messages(draft, keep_later=bool(st.session_state.get("keep_later")))
        session.add_run(target)
    else:
        run.replace_messages(draft)
        if run.stop_reason in ("answer", "cancelled") and run.next_phase != "done":
            run.stop_reason = None
        target = run
        session.draft, session.editing = None, None
    session.notice = session.info = None
    on_run_changed(target)


# -- comparing from a step --------------------------------------------------------------------

COMPARE_PAGE = "views/compare.py"


def compare_from(run: Run, step: int) -> None:
    """Open Compare on `run` from step `step`: each configuration forks the run just before that step's model call.

    The run is saved first, so each fork is kept under a parent the runs library holds.
    """
    from .page_state import CompareState

    on_run_changed(run)
    CompareState.prefill_from(run, step)
    st.switch_page(COMPARE_PAGE)

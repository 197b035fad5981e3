"""Breakpoints in the sidebar, and mock rules from a tool result: fix it from here on, or replay from here with it.

The specs and rules themselves are agentcore.hooks.specs'; the hooks that act on them, agentcore.hooks.breakpoints's. A spec or
rule a person types is checked here and refused in one line, and everything shown of it is drawn inert.
"""

from __future__ import annotations

import json

import streamlit as st
from pydantic import ValidationError
from streamlit.delta_generator import DeltaGenerator

from agentcore.errors import UsageError
from agentcore.hooks.specs import MockRule, parse_breakpoint
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage
from agentcore.transcript import describe_validation

from . import safe
from .actions import READ_ONLY, apply_settings
from .state import Session, get_session, on_run_changed

BREAKPOINTS_HELP = (
    "One per line; the run pauses there and says which one fired. step:N (before the model call of step N), "
    "tool:NAME (before a call of that tool), args:$.city=Paris or args:$.city~^Pa (a call whose argument is that "
    "value or matches that pattern), tokens:N and cost:USD (once the run passes the limit), repeat (a call "
    "identical to an earlier one), tool-error (before the model reads a tool's error). Run to end stops at each."
)


def breakpoint_settings(sb: DeltaGenerator, session: Session) -> list[str]:
    """The Breakpoints box and the current run's mock rules; the valid specs, each bad one said in a line."""
    text = sb.text_area(
        "Breakpoints", key="cfg_breakpoints", height=68, placeholder="tool:get_weather", help=BREAKPOINTS_HELP
    )
    specs: list[str] = []
    for line in (text or "").splitlines()[:100]:
        if not line.strip():
            continue
        try:
            specs.append(parse_breakpoint(line).spec)
        except UsageError as exc:
            sb.error(safe.block(str(exc)), icon=":material/rule:")
    run = session.run
    if run is not None and run.config.mocks:
        rules = run.config.mocks
        lines = "  \n".join(f":material/science: {safe.code(r.words)}" for r in rules[:5])
        more = f"  \nand {len(rules) - 5} more" if len(rules) > 5 else ""
        sb.markdown(f"**Mock rules of this run**  \n{lines}{more}")
        sb.button("Remove the mock rules", key="mocks_clear", on_click=clear_mocks, icon=":material/delete:")
    return list(dict.fromkeys(specs))


def clear_mocks() -> None:
    """Drop the current run's mock rules: its next calls run their tools."""
    session = get_session()
    if session.run is not None:
        apply_settings(session, mocks=[])
        on_run_changed(session.run)


def _call_of(messages: list, tool_call_id: str) -> tuple[int, ToolCall] | None:
    """The assistant message that made the call, and the call."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, AssistantMessage):
            for call in m.tool_calls:
                if call.id == tool_call_id:
                    return i, call
    return None


def _rule(i: int, m: ToolMessage, call: ToolCall | None) -> MockRule:
    """The rule the form at message `i` sets: its text or error, for these arguments or any; a ValueError if bad."""
    text = st.session_state.get(f"mock_text_{i}", m.content) or ""
    outcome = {"error": text} if st.session_state.get(f"mock_error_{i}", m.is_error) else {"result": text}
    when: list[str] = []
    if st.session_state.get(f"mock_same_{i}", True) and call is not None and not call.arguments_invalid:
        when = [f"$.{key}={json.dumps(value, ensure_ascii=False)}" for key, value in call.arguments.items()]
    try:
        return MockRule(tool=m.name, when=when, **outcome)
    except ValidationError as exc:
        raise ValueError(f"this result cannot be a mock rule: {describe_validation(exc)}") from None


def _asked_rule(session: Session, i: int) -> tuple[int | None, MockRule] | None:
    """The rule the form at tool result `i` sets, and the index of the model's turn that made its call.

    None when message `i` is no tool result, or when the form is bad (then the notice says why).
    """
    run = session.run
    if run is None or not isinstance(run.messages[i], ToolMessage):
        return None
    m = run.messages[i]
    found = _call_of(run.messages[:i], m.tool_call_id)
    try:
        rule = _rule(i, m, found[1] if found else None)
    except ValueError as exc:
        session.notice = str(exc)
        return None
    return (found[0] if found else None), rule


def _with_rule(mocks: list[MockRule], rule: MockRule) -> list[MockRule]:
    """The run's mock rules with `rule` first (the newest rule wins), not twice."""
    return [rule, *[r for r in mocks if r != rule]]


def mock_from_here(i: int) -> None:
    """Add a rule that fixes the result of message `i`'s tool (for its arguments) on every later call."""
    session = get_session()
    asked = _asked_rule(session, i)
    if asked is None:
        return
    run, rule = session.run, asked[1]
    apply_settings(session, mocks=_with_rule(run.config.mocks, rule))
    session.info = f"Mock rule added: {rule.words}. Later calls it matches are not run."
    on_run_changed(run)


def replay_with_mock(i: int) -> None:
    """Fork the run at the call behind message `i`, with its result mocked, and run the fork to its end."""
    session = get_session()
    if session.held_import() is not None:  # the replay runs the fork to its end: not before a person chose who
        session.notice = READ_ONLY
        return
    asked = _asked_rule(session, i)
    if asked is None:
        return
    run, (turn, rule) = session.run, asked
    if turn is None:
        session.notice = "This result answers no call of the run: there is nothing to replay."
        return
    fork = run.fork_with_messages(run.messages[: turn + 1])  # up to the model's turn with the call
    fork.config = fork.config.model_copy(update={"mocks": _with_rule(run.config.mocks, rule)})
    step = fork.steps[-1].index if fork.steps else 1  # the step whose calls these are: its tools run again
    # a breakpoint that paused the run before these tools is where this replay came from: it goes on past it
    came_from = next(
        (h for h in reversed(run.halts) if h.kind == "pause" and h.point == "before_tools" and h.step == step), None
    )
    if came_from is not None:
        fork.halt = came_from.model_copy()
    session.add_run(fork)
    past = f", past the breakpoint {came_from.breakpoint or came_from.hook}" if came_from is not None else ""
    session.info = f"Replaying step {step}'s tools with {rule.words}{past}, then on to the end."
    on_run_changed(fork)
    session.running, session.stop_requested = True, False


def render_mock_form(box: DeltaGenerator, i: int, m: ToolMessage) -> None:
    """Inside a tool result's popover: the result to fix, and the two mock actions."""
    box.text_area("Result the model reads", value=m.content, key=f"mock_text_{i}", height=100)
    box.checkbox("As an error", value=m.is_error, key=f"mock_error_{i}")
    box.checkbox("Only for these arguments", value=True, key=f"mock_same_{i}")
    box.button(
        "Mock this result from here on",
        key=f"mock_{i}",
        icon=":material/science:",
        on_click=mock_from_here,
        args=(i,),
        help="Later calls of this tool (with these arguments) are not run: the model reads this result",
    )
    box.button(
        "Replay from here with this result",
        key=f"mock_replay_{i}",
        icon=":material/replay:",
        on_click=replay_with_mock,
        args=(i,),
        help="A fork that runs this call again with this result mocked, and goes on to the end",
    )

"""The step list with its lineage, one step's details (latency, usage, tool runs) and its wire view."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import streamlit as st

from agentcore.accounting import step_usage
from agentcore.policies import Compaction, compactions
from agentcore.run import Run
from agentcore.secrets import redact_headers
from agentcore.steps import StepRecord
from agentcore.transcript import json_text

from . import actions, safe, words
from .annotate_view import annotate_step
from .blame_view import render_blame
from .state import Session, get_session

HIGHLIGHT_CHARS = 4_000  # the longest wire body shown with JSON highlighting


def lineage(session: Session, run: Run) -> list[Run]:
    """The run's ancestors known to this session, oldest first, ending with the run itself."""
    chain = [run]
    seen = {run.id}
    while chain[0].parent is not None and chain[0].parent.run_id in session.runs:
        parent = session.runs[chain[0].parent.run_id]
        if parent.id in seen:
            break
        chain.insert(0, parent)
        seen.add(parent.id)
    return chain


def inherited_steps(run: Run) -> int:
    """How many of the run's first steps were copied from its parent when it was forked.

    A fork keeps the steps before the one it makes again (`parent.step`), whether or not the parent is
    open in this session.
    """
    if run.parent is None:
        return 0
    return max(0, min(run.parent.step - 1, len(run.steps)))


def run_label(session: Session, run: Run) -> str:
    """A run's name in the picker: its title, step count and where it was forked from."""
    depth = len(lineage(session, run)) - 1
    status = run.ending or run.next_phase  # a reply cut at the output limit is no answer
    return f"{'↳ ' * depth}{run.title or run.id} · {len(run.steps)} step{'s' if len(run.steps) != 1 else ''} · {status}"


def _pick_step(newest: int) -> None:
    chosen = st.session_state.get("inspect_step")
    get_session().inspect_step = None if chosen == newest else chosen


def status_badge(status: int | None) -> str:
    """An HTTP status as a badge with its reason phrase (`200 OK` in green), or says there was none."""
    if status is None:
        return ":gray-badge[no HTTP status]"
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:  # a status outside the standard list
        reason = ""
    colour = "green" if status < 300 else "blue" if status < 400 else "orange" if status < 500 else "red"
    return f":{colour}-badge[{status} {reason}]".replace(" ]", "]")


def _body(label: str, headers: dict[str, str], body: Any, key: str) -> None:
    """One side of the exchange: its headers, and its body as a tree and as JSON text to copy."""
    st.markdown(f"**{label}**")
    if headers:
        st.json(redact_headers(headers), expanded=False)
    tree, text = st.tabs(["Tree", "JSON text"], key=key)
    with tree:
        st.json(body, expanded=1)
    with text:  # st.code has a copy button; a body kept as text (not JSON) is shown as it is
        shown = body if isinstance(body, str) else json_text(body, indent=2)
        # the browser draws a highlighted token as an element of its own, again on each Step: a long body
        # (the whole message list, late in a run) is thousands of them, so it is shown plain
        language = "json" if len(shown) <= HIGHLIGHT_CHARS else None
        st.code(shown, language=language, wrap_lines=True)


def _wire(step: StepRecord) -> None:
    wire = step.wire
    if wire is None:
        st.caption("This provider recorded no wire exchange for this step.")
        return
    st.caption(f"{safe.code(wire.url or '(no URL: in-process)')} {status_badge(wire.status)}")
    left, right = st.columns(2)
    with left:
        _body("Request", wire.request_headers, wire.request, "wire_request")
    with right:
        _body("Response", wire.response_headers, wire.response, "wire_response")


def _hook_effects(step: StepRecord) -> None:
    """What each hook changed in the step, before and after: the wire request is what went out after them."""
    for effect in step.hook_effects:
        st.caption(safe.inline(effect.words))
        left, right = st.columns(2)
        for column, title, value in ((left, "Before", effect.before), (right, "After", effect.after)):
            with column:
                st.markdown(f"**{title}**")
                if isinstance(value, str):  # a result a hook answered, or arguments that are not JSON: text
                    st.code(value, language=None, wrap_lines=True)
                else:  # st.json takes a string as JSON text already, which this often is not
                    st.json(value, expanded=1)


def _tool_wires(step: StepRecord) -> None:
    """Each tool run's own exchange under the model's: an MCP server's tools/call request and response."""
    kept = [(t, t.wire) for t in step.tool_runs if t.wire is not None]
    for i, (t, wire) in enumerate(kept):
        st.markdown(f"**Tool {safe.inline(t.name)}** {safe.code(t.tool_call_id)}: JSON-RPC `tools/call`")
        st.caption(f"Server: {safe.code(wire.url or '(unknown)')}")
        if wire.response is None:
            st.caption("No response was recorded: the call timed out or the server ended first.")
        left, right = st.columns(2)
        with left:
            _body("Request", {}, wire.request, f"tool_wire_request_{i}")
        with right:
            _body("Response", {}, wire.response, f"tool_wire_response_{i}")


def _links(run: Run) -> None:
    """An imported session's origin and its subagent runs, both ways, each by its id to open from Runs."""
    for line in run.link_lines:
        st.caption(f":material/account_tree: {safe.inline(line)}")


def _lineage(session: Session, run: Run) -> None:
    _links(run)
    chain = lineage(session, run)
    if len(chain) < 2:
        return
    names = [safe.inline(r.title or r.id) for r in chain]
    parts = [f"**{name}**" if r is run else name for r, name in zip(chain, names, strict=True)]
    st.markdown(":material/call_split: Lineage: " + " → ".join(parts))
    if run.parent is not None:
        st.caption(
            f"Forked from run {safe.inline(run.parent.run_id)} at step {run.parent.step}; "
            "the original is kept in the run picker."
        )


def _steps_table(run: Run) -> None:
    inherited = inherited_steps(run)
    compacted = {step: point for step, point in compactions(run)}
    rows = [
        {
            "step": s.index,
            "from": "parent run" if s.index <= inherited else "this run",
            "model": run.answered_by(s).label,
            "latency ms": words.number(s.latency_ms),
            "input tok": s.usage.input_tokens,
            "output tok": s.usage.output_tokens,
            "usage": "estimated" if s.estimated else "exact",
            "finish": words.text(s.finish_reason),
            "tools": words.text(", ".join(t.name for t in s.tool_runs)),
            "tool errors": sum(t.is_error for t in s.tool_runs),
            # the divider: from this step on the agent sent its summary, not the history before it
            "context": _compacted_words(compacted.get(s.index), s),
        }
        for s in run.steps
    ]
    st.dataframe(rows, hide_index=True, width="stretch", height=min(38 + 35 * len(rows), 320))


def _compacted_words(point: Compaction | None, step: StepRecord) -> str:
    """A compaction that first applies to this step, in words: who, and the context before and after."""
    if point is None:
        return ""
    before = f"{point.tokens_before:,}" if point.tokens_before is not None else "?"
    return f"compacted by {point.by}: {before} → {step.usage.input_tokens:,} tokens"


def _pick(session: Session, run: Run) -> StepRecord:
    """The step picker: it follows the newest step unless an older one was picked."""
    numbers = [s.index for s in run.steps]
    follow = session.inspect_step not in numbers
    st.session_state["inspect_step"] = numbers[-1] if follow else session.inspect_step
    chosen = st.selectbox("Inspect step", numbers, key="inspect_step", on_change=_pick_step, args=(numbers[-1],))
    return run.steps[numbers.index(chosen)]


def _tool_runs(step: StepRecord) -> None:
    st.markdown("**Tool runs**")
    st.dataframe(
        [
            {
                "tool": t.name,
                "call id": t.tool_call_id,
                "how": f"{t.source} ({t.hook})" if t.hook else t.source,
                "started ms": words.number(t.started_ms),
                "duration ms": words.number(t.duration_ms),
                "error": t.error or ("yes" if t.is_error else ""),
            }
            for t in step.tool_runs
        ],
        hide_index=True,
        width="stretch",
    )


def _step_details(run: Run, step: StepRecord) -> None:
    """One step: latency, usage, its tool runs, Fork, and the wire view."""
    with st.container(border=True):
        m1, m2, m3, m4 = st.columns(4)
        m1.metric("Latency", f"{words.shown(step.latency_ms, ',.0f')} ms")
        usage, estimated = step_usage(run, step.index)  # a step that recorded none: estimated from its text
        m = "~" if estimated else ""  # the one mark for an estimate, everywhere
        m2.metric("Input tokens", f"{m}{usage.input_tokens:,}")
        m3.metric("Output tokens", f"{m}{usage.output_tokens:,}")
        m4.metric("Usage", "estimated" if step.estimated else "exact")
        if step.usage.cache_read_tokens or step.usage.cache_write_tokens:
            st.caption(
                f"Cache: {step.usage.cache_read_tokens:,} read, {step.usage.cache_write_tokens:,} written tokens"
            )
        if step.tool_runs:
            _tool_runs(step)
        fork, compare = st.columns([1, 2])
        fork.button(
            f"Fork from step {step.index}",
            key="fork_step",
            icon=":material/call_split:",
            on_click=actions.fork_at,
            args=(step.index,),
            help="Start a new run from just before this step's model call; this run is kept",
        )
        if compare.button(
            "Compare from here",
            key="compare_from_step",
            icon=":material/compare_arrows:",
            help=f"Ask step {step.index} again on 2 to 4 models side by side, beside what this run did from there",
        ):
            actions.compare_from(run, step.index)
        if step.hook_effects:
            st.markdown("**Hooks**: " + "; ".join(safe.inline(e.words) for e in step.hook_effects))
        with st.expander("Wire view: the exact request and response (credentials removed)"):
            _hook_effects(step)
            if step.tools_withheld:
                st.caption(
                    "The loop guard made this call with no tool to call (tool_choice none where the API has it, "
                    "no tools where it does not; for the embedded model, a grammar with no call), after repeated "
                    "identical calls."
                )
            _wire(step)
            _tool_wires(step)


def render_steps(session: Session) -> None:
    """Draw the lineage, the table of steps, and the chosen step's details with Fork."""
    run = session.run
    if run is None:
        return
    _lineage(session, run)
    if not run.steps:
        st.info("No steps yet: press **Step** to make the first model call.")
        return
    _steps_table(run)
    step = _pick(session, run)
    _step_details(run, step)
    annotate_step(run, step, "playground")
    render_blame(session)

"""The playground's line about the next model call, with what it would cost, and the controls that replace Step
while a run is an imported session no one here chose a provider for; and the run's exports, shared by both."""

from __future__ import annotations

from functools import partial

import streamlit as st

from agentcore.accounting import COST_FORMAT
from agentcore.exports import REPLAY, export_filename, export_json, export_otlp, export_run
from agentcore.messages import reasoning_note
from agentcore.request import settings_note, thinking_note
from agentcore.run import Run
from agentcore.steps import models_label
from agentcore.telemetry import OTLP_JSON, otel_missing

from . import safe, words
from .actions import CallEstimate, go_on, next_call, next_call_estimate, upcoming
from .state import Session


def show_next_call(session: Session, run: Run) -> None:
    """Who answers the next step, and who answered the run so far: a switch in the sidebar shows here first."""
    nxt = next_call(session)
    if nxt is None:
        return
    tools = ", ".join(safe.code(n) for n in nxt.tools) if nxt.tools else "no tools"
    line = f"Next step: {safe.code(nxt.model.label)} with {tools}"
    if run.next_phase == "tools":
        line = f"Next: the tools phase, then {safe.code(nxt.model.label)} with {tools}"
    if run.steps:
        line += f" — the run so far: {safe.code(models_label(run.models))}"
    if nxt.changed:
        line += f" :orange-badge[changed: {' and '.join(nxt.changed)}]"
    st.caption(line)
    say_estimate(next_call_estimate(session))
    note = reasoning_note(run.messages, nxt.model.provider)  # reasoning goes back only to its own provider
    if note:
        st.caption(f":material/psychology: {safe.inline(note)}")
    # the model's documented rules: a setting it refuses, a setting sent for it, thinking it would refuse
    ahead, (provider, model) = upcoming(session) or run, nxt.model
    for line in (settings_note(ahead, provider, model), thinking_note(ahead, provider, model)):
        if line:
            st.caption(f":material/rule: {safe.inline(line)}")


def say_estimate(estimate: CallEstimate | None) -> None:
    """The estimate of a paid call as a caption; nothing for a free one (None)."""
    if estimate is not None:
        st.caption(f":material/payments: {estimate_words(estimate)}")


def estimate_words(estimate: CallEstimate) -> str:
    """The next paid call's estimate in one line, each estimated figure marked with ~."""
    tokens = f"~{estimate.tokens:,} tokens"
    if estimate.after_tools:  # the tools' results are not known yet: the call sends at least this
        tokens = f"more than {tokens}"
    where = safe.code(estimate.model.label)
    if estimate.cost is None:
        cost = "no price is known for it, so its cost is unknown"
    else:
        cost = f"{'more than ' if estimate.after_tools else ''}~{words.shown(estimate.cost, COST_FORMAT, prefix='$')}"
        cost += " for that input, before what its reply costs"
    then = "The model call after the tools" if estimate.after_tools else "The next model call"
    return f"{then} sends {tokens} to {where} (estimated from the text): {cost}."


def render_read_only(session: Session, run: Run, imported: Run) -> None:
    """An imported session, or a fork of one: what it is, and the one control that goes on with it."""
    with st.container(border=True, key="read_only"):
        st.markdown("### :material/lock: Imported: read-only")
        origin = imported.origin
        came = (
            f"a {safe.inline(origin.format)} session, from the file {safe.code(origin.file)}"
            + (f" written by {safe.inline(origin.agent)}" if origin.agent else "")
            if origin is not None
            else "an imported session"
        )
        forked = "" if imported is run else f" (this run is a fork of {safe.code(imported.id)})"
        st.markdown(
            f"This is {came}{forked}. Nothing here sends it to a model or runs its tools until you choose who goes "
            "on with it."
        )
        nxt = next_call(session)
        if nxt is None:
            st.caption("It has ended: insert a user message after its last one to have a model go on.")
            render_exports(st.container(horizontal=True), run)
            return
        st.caption(
            f"To go on, choose a provider and model in the sidebar (now {safe.code(nxt.model.label)}), then press "
            "the button: the scripted and embedded models cost nothing."
        )
        say_estimate(next_call_estimate(session))
        bar = st.container(horizontal=True)
        bar.button(
            f"Go on with {nxt.model.label}",
            key="go_on",
            type="primary",
            icon=":material/play_arrow:",
            on_click=go_on,
        )
        render_exports(bar, run)


def render_exports(bar, run: Run) -> None:
    """The run's exports in one popover of the controls' row."""
    exports = bar.popover("Export", icon=":material/download:", key="exports")
    exports.download_button(
        "Export JSON",
        data=partial(export_json, run),  # built on click: a long run's transcript is megabytes
        file_name=export_filename(run, "json"),
        mime="application/json",
        key="export",
        icon=":material/download:",
        on_click="ignore",
    )
    exports.download_button(
        "Replay HTML",
        data=partial(export_run, run, REPLAY),  # built on click, as the JSON export
        file_name=export_filename(run, REPLAY),
        mime="text/html",
        key="export_replay",
        icon=":material/slideshow:",
        on_click="ignore",
        help="One self-contained page that steps through the run in any browser, offline: to share",
    )
    missing = otel_missing()
    exports.download_button(
        "OpenTelemetry",
        data=partial(export_otlp, run),  # built on click, as the JSON export
        file_name=export_filename(run, OTLP_JSON),
        mime="application/json",
        key="export_otlp",
        icon=":material/timeline:",
        on_click="ignore",
        disabled=missing is not None,
        help=f"Needs the otel extra: pip install 'agentcore[otel]' (missing {missing})"
        if missing
        else "The run's OpenTelemetry GenAI trace with its messages (OTLP-JSON): opens in Jaeger, Tempo and Phoenix, "
        "and imports back on the Runs page",
    )

"""The calls a recording proxy holds (`agentcore proxy --pause`), each with its exact request and four ways on.

**Send** forwards it as the agent sent it; **Edit and send** forwards it with the messages as edited here, in the
message editor the playground edits a run's messages with (ui.message_editor): the proxy writes each new text into the
request in its own dialect and keeps the rest (agentcore.proxy.edits), and the step records the edit. The request's
JSON can be edited whole too, under "Edit the JSON". **Answer with** gives the agent a reply of the text typed here,
which the upstream never sees;
**Fork here** keeps the held conversation as a stored run of one's own, opened in the playground to go on with any
provider. Only the person who started the proxy on this database sees its held calls (agentcore.proxy.control).

The Held calls page draws them with `render_holds`; the playground draws `render_live_holds` above the run, a part
of the page that asks the proxy again every few seconds while a proxy of the person's records into the database,
so a call held while the playground is open shows there without a click.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from agentcore.errors import AgentcoreError
from agentcore.proxy.control import Control, fork_held, proxy_of

from . import safe
from .held_messages import forget, render_held_messages, texts_to_send
from .open_run import follow_open, open_on_click

LIVE_POLL_S = 2.0  # how often the playground asks the proxy for its held calls


def _problem_key(prefix: str) -> str:
    return f"{prefix}_problem"


def _list_field(hold: dict[str, Any]) -> str:
    """The request's field that holds the conversation: Responses' `input`, every other dialect's `messages`."""
    return "input" if hold.get("dialect") == "openai-responses" else "messages"


def _release(prefix: str, url: str, hold: dict[str, Any], action: str) -> None:
    """The buttons' callback: release the held call one way, or say why it could not be."""
    try:
        if action == "edit":
            texts = texts_to_send(prefix, hold)
            if not texts:
                st.session_state[_problem_key(prefix)] = (
                    "No message is edited: open one with its pencil, change its text, then Edit and send."
                )
                return
            Control(url).release(hold["id"], "edit", texts=texts)
        elif action == "json":
            field = _list_field(hold)
            edited = json.loads(st.session_state[f"{prefix}_edit_{hold['id']}"])
            Control(url).release(hold["id"], "edit", body={**hold["request"], field: edited})
        elif action == "answer":
            Control(url).release(hold["id"], "answer", text=st.session_state.get(f"{prefix}_answer_{hold['id']}", ""))
        else:
            Control(url).release(hold["id"], "send")
    except ValueError as exc:
        st.session_state[_problem_key(prefix)] = f"The edited list is not JSON: {exc}"
    except AgentcoreError as exc:
        st.session_state[_problem_key(prefix)] = str(exc)
    else:
        forget(prefix, hold["id"])


def _fork(prefix: str, store: Any, hold: dict[str, Any]) -> None:
    try:
        run = fork_held(store, hold)
    except AgentcoreError as exc:
        st.session_state[_problem_key(prefix)] = str(exc)
        return
    open_on_click(f"{prefix}_open", store, run.id)


def render_hold(store: Any, url: str, hold: dict[str, Any], prefix: str) -> None:
    """One held call: where it is, why it is held, its exact request, and Send, Edit and send, Answer with and
    Fork here; Open the run so far when its run has earlier steps stored."""
    hold_id = hold["id"]
    with st.container(border=True):
        st.markdown(
            f"**Run `{safe.inline(hold['run_id'])}`, step {int(hold['step'])}** ({safe.plain(hold['dialect'])})"
        )
        st.caption(safe.plain(str(hold["reason"])))
        with st.expander("The request as the agent sent it"):
            st.json(hold["request"], expanded=True)
        render_held_messages(prefix, hold)
        field = _list_field(hold)
        with st.expander("Edit the JSON"):
            st.text_area(
                f"The request's `{field}`, to send in its place",
                value=json.dumps(hold["request"].get(field), indent=2, ensure_ascii=False),
                key=f"{prefix}_edit_{hold_id}",
                height=200,
            )
            st.button(
                "Send this JSON", key=f"{prefix}_json_{hold_id}", on_click=_release, args=(prefix, url, hold, "json")
            )
        st.text_input("Answer with", key=f"{prefix}_answer_{hold_id}", placeholder="the reply the agent receives")
        send, edit, answer, fork, earlier = st.columns(5)
        send.button(
            "Send", key=f"{prefix}_send_{hold_id}", on_click=_release, args=(prefix, url, hold, "send"), type="primary"
        )
        edit.button(
            "Edit and send", key=f"{prefix}_edited_{hold_id}", on_click=_release, args=(prefix, url, hold, "edit")
        )
        answer.button(
            "Answer with", key=f"{prefix}_answered_{hold_id}", on_click=_release, args=(prefix, url, hold, "answer")
        )
        fork.button("Fork here", key=f"{prefix}_fork_{hold_id}", on_click=_fork, args=(prefix, store, hold))
        if store.exists(hold["run_id"]):  # a call that starts a run has none stored yet
            earlier.button(
                "Open the run so far",
                key=f"{prefix}_run_{hold_id}",
                on_click=open_on_click,
                args=(f"{prefix}_open", store, hold["run_id"]),
                help="its earlier steps, as recorded; the held call is still waiting",
            )


def _holds(url: str) -> list[dict[str, Any]] | str:
    try:
        return Control(url).holds()
    except AgentcoreError as exc:
        return str(exc)


def render_holds(store: Any, prefix: str = "held") -> None:
    """The Held calls page's body: the proxy's held calls, or why there are none to show."""
    follow_open(f"{prefix}_open")
    problem = st.session_state.pop(_problem_key(prefix), None)
    if problem:
        st.error(safe.block(problem))
    url = proxy_of(store)
    if url is None:
        st.info(
            "No recording proxy of yours records into this runs database. Start one with "
            "`agentcore proxy --pause always` and point your agent at it (docs/proxy.md)."
        )
        return
    st.caption(f"The proxy at {safe.inline(url)}. A held call waits on its agent's open connection.")
    st.button("Refresh", key=f"{prefix}_refresh")
    holds = _holds(url)
    if isinstance(holds, str):
        st.warning(safe.block(holds))
        return
    if not holds:
        st.caption("No call is held now.")
    for hold in holds:
        render_hold(store, url, hold, prefix)


LIVE_PREFIX = "playground_held"


@st.fragment(run_every=LIVE_POLL_S)
def _live_holds(store: Any, url: str) -> None:
    follow_open(f"{LIVE_PREFIX}_open")
    problem = st.session_state.pop(_problem_key(LIVE_PREFIX), None)
    if problem:
        st.error(safe.block(problem))
    holds = _holds(url)
    if isinstance(holds, str) or not holds:
        return  # the playground says nothing of a proxy with no call held, or one that has stopped
    st.markdown(f"**Held by the recording proxy** ({len(holds)}): the agent waits until you release the call.")
    for hold in holds:
        render_hold(store, url, hold, LIVE_PREFIX)


def render_live_holds(store: Any) -> None:
    """The playground's view of the held calls: nothing unless a proxy of this person's records into the database;
    then its held calls, asked for again every LIVE_POLL_S seconds."""
    try:
        url = proxy_of(store)
    except AgentcoreError:
        return
    if url is not None:
        _live_holds(store, url)

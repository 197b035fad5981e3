"""Held calls: the requests `agentcore proxy --pause` holds, each with its exact request and four ways on.

**Send** forwards it as the agent sent it; **Edit and send** forwards the message list as edited here (the step
records the edit); **Answer with** gives the agent a reply of the text typed here, which the upstream never sees;
**Fork here** keeps the held conversation as a stored run of one's own, opened in the playground to go on with any
provider. Only the person who started the proxy on this database sees its held calls (agentcore.proxy.control).
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from agentcore.errors import AgentcoreError
from agentcore.proxy.control import Control, fork_held, proxy_of
from ui import safe
from ui.open_run import follow_open, open_on_click
from ui.state import get_store

OPEN_KEY = "held_open"
PROBLEM_KEY = "held_problem"


def _list_field(hold: dict[str, Any]) -> str:
    """The request's field that holds the conversation: Responses' `input`, every other dialect's `messages`."""
    return "input" if hold.get("dialect") == "openai-responses" else "messages"


def _release(url: str, hold: dict[str, Any], action: str) -> None:
    """The buttons' callback: release the held call one way, or say why it could not be."""
    try:
        if action == "edit":
            field = _list_field(hold)
            edited = json.loads(st.session_state[f"held_edit_{hold['id']}"])
            Control(url).release(hold["id"], "edit", body={**hold["request"], field: edited})
        elif action == "answer":
            Control(url).release(hold["id"], "answer", text=st.session_state.get(f"held_answer_{hold['id']}", ""))
        else:
            Control(url).release(hold["id"], "send")
    except ValueError as exc:
        st.session_state[PROBLEM_KEY] = f"The edited list is not JSON: {exc}"
    except AgentcoreError as exc:
        st.session_state[PROBLEM_KEY] = str(exc)


def _fork(store: Any, hold: dict[str, Any]) -> None:
    try:
        run = fork_held(store, hold)
    except AgentcoreError as exc:
        st.session_state[PROBLEM_KEY] = str(exc)
        return
    open_on_click(OPEN_KEY, store, run.id)


def _held(store: Any, url: str, hold: dict[str, Any]) -> None:
    hold_id = hold["id"]
    with st.container(border=True):
        st.markdown(
            f"**Run `{safe.inline(hold['run_id'])}`, step {int(hold['step'])}** ({safe.plain(hold['dialect'])})"
        )
        st.caption(safe.plain(str(hold["reason"])))
        with st.expander("The request as the agent sent it"):
            st.json(hold["request"], expanded=True)
        field = _list_field(hold)
        st.text_area(
            f"The request's `{field}`, to edit",
            value=json.dumps(hold["request"].get(field), indent=2, ensure_ascii=False),
            key=f"held_edit_{hold_id}",
            height=200,
        )
        st.text_input("Answer with", key=f"held_answer_{hold_id}", placeholder="the reply the agent receives")
        send, edit, answer, fork = st.columns(4)
        send.button("Send", key=f"held_send_{hold_id}", on_click=_release, args=(url, hold, "send"), type="primary")
        edit.button("Edit and send", key=f"held_edited_{hold_id}", on_click=_release, args=(url, hold, "edit"))
        answer.button("Answer with", key=f"held_answered_{hold_id}", on_click=_release, args=(url, hold, "answer"))
        fork.button("Fork here", key=f"held_fork_{hold_id}", on_click=_fork, args=(store, hold))


def main() -> None:
    st.title("Held calls")
    follow_open(OPEN_KEY)
    problem = st.session_state.pop(PROBLEM_KEY, None)
    if problem:
        st.error(safe.block(problem))
    store = get_store()
    url = proxy_of(store)
    if url is None:
        st.info(
            "No recording proxy of yours records into this runs database. Start one with "
            "`agentcore proxy --pause always` and point your agent at it (docs/proxy.md)."
        )
        return
    st.caption(f"The proxy at {safe.inline(url)}. A held call waits on its agent's open connection.")
    st.button("Refresh", key="held_refresh")
    try:
        holds = Control(url).holds()
    except AgentcoreError as exc:
        st.warning(safe.block(str(exc)))
        return
    if not holds:
        st.caption("No call is held now.")
    for hold in holds:
        _held(store, url, hold)


main()

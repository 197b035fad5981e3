"""A held request's messages, each drawn as the playground draws a run's, and the playground's message editor
(ui.message_editor) opened on one with its pencil to change its text.

What is changed is kept per held call, as the new text of each message by its number, until the call is sent: the
proxy writes those texts into the request in the request's own dialect (agentcore.proxy.edits). A message's tool
calls are shown, not edited here; the request's JSON can be edited whole for that (ui.held_view).
"""

from __future__ import annotations

import functools
from typing import Any

import streamlit as st

from agentcore.errors import AgentcoreError
from agentcore.messages import Message
from agentcore.proxy.dialects import dialect_named, read_request

from .message_editor import edited, render_editor
from .messages_view import message_extras, message_header, message_markdown

SHOWN = 6  # the newest messages drawn open; the earlier ones behind an expander
EDITED_BADGE = ":orange-badge[:material/edit: edited]"


def _keys(prefix: str, hold_id: str) -> tuple[str, str, str]:
    """The session keys of one held call's edit: its new texts, the message open in the editor, the editor's own."""
    return f"{prefix}_texts_{hold_id}", f"{prefix}_editing_{hold_id}", f"{prefix}_msg_{hold_id}"


def held_messages(hold: dict[str, Any]) -> list[Message]:
    """The held request's messages as the proxy reads them; none when they do not read."""
    request = hold.get("request")
    if not isinstance(request, dict):
        return []
    try:
        conversation = read_request(dialect_named(str(hold.get("dialect"))), request)
    except AgentcoreError:
        return []
    return [] if conversation.unread else conversation.messages


def _open(prefix: str, hold_id: str, i: int) -> None:
    st.session_state[_keys(prefix, hold_id)[1]] = i


def _close(prefix: str, hold_id: str) -> None:
    st.session_state[_keys(prefix, hold_id)[1]] = None


def _save(prefix: str, hold_id: str, i: int, m: Message) -> None:
    """Keep the editor's text as message `i`'s new text (none when it is the text the agent sent) and close it."""
    texts_key, _, editor = _keys(prefix, hold_id)
    texts = dict(st.session_state.get(texts_key) or {})
    text = edited(editor, i, m, calls=False).content or ""
    if text == (m.content or ""):
        texts.pop(i, None)
    else:
        texts[i] = text
    st.session_state[texts_key] = texts
    _close(prefix, hold_id)


def texts_to_send(prefix: str, hold: dict[str, Any]) -> dict[int, str]:
    """The new texts of the held call's messages, by number; an editor still open counts as saved."""
    texts_key, editing_key, _ = _keys(prefix, hold["id"])
    messages = held_messages(hold)
    open_at = st.session_state.get(editing_key)
    if isinstance(open_at, int) and 0 <= open_at < len(messages):
        _save(prefix, hold["id"], open_at, messages[open_at])
    return dict(st.session_state.get(texts_key) or {})


def forget(prefix: str, hold_id: str) -> None:
    """Drop what was edited of a held call that has been sent."""
    for key in _keys(prefix, hold_id)[:2]:
        st.session_state.pop(key, None)


def _row(prefix: str, hold_id: str, i: int, m: Message, new_text: str | None, editing: bool) -> None:
    _, _, editor = _keys(prefix, hold_id)
    shown = m if new_text is None else m.model_copy(update={"content": new_text})
    with st.container(border=True, key=f"{editor}_row_{i}"):
        row = st.container(horizontal=True, wrap=False, vertical_alignment="top", gap="small")
        head = message_header(i, shown) + (f" &nbsp; {EDITED_BADGE}" if new_text is not None else "")
        row.markdown(head if editing else f"{head}\n\n{message_markdown(shown)}", width="stretch")
        row.button(
            ":material/edit:", key=f"{editor}_open_{i}", help="Edit its text", on_click=_open, args=(prefix, hold_id, i)
        )
        if editing:
            save = functools.partial(_save, prefix, hold_id, i, m)
            render_editor(editor, i, shown, save, functools.partial(_close, prefix, hold_id), calls=False)
        else:
            message_extras(shown)


def render_held_messages(prefix: str, hold: dict[str, Any]) -> None:
    """The held request's messages, the newest open, each with its pencil; the one being edited in the editor."""
    messages = held_messages(hold)
    if not messages:
        st.caption("Its messages do not read as a conversation: edit its JSON to change them.")
        return
    hold_id = hold["id"]
    texts_key, editing_key, _ = _keys(prefix, hold_id)
    texts = st.session_state.get(texts_key) or {}
    editing = st.session_state.get(editing_key)
    st.markdown(f"**Its {len(messages)} messages**: change one's text with its pencil, then **Edit and send**.")
    earlier = max(0, len(messages) - SHOWN)
    if earlier:
        with st.expander(f"{earlier} earlier messages"):
            for i in range(earlier):
                _row(prefix, hold_id, i, messages[i], texts.get(i), editing == i)
    for i in range(earlier, len(messages)):
        _row(prefix, hold_id, i, messages[i], texts.get(i), editing == i)

"""The editor of one message: its text and each tool call's arguments, with Save and Cancel.

The playground's message list opens it on a message of a run (ui.messages_view, saved by ui.actions.save_edit); the
held calls open it on a message of a held request (ui.held_view). Its fields are keyed under a prefix of the caller's,
so editors of both kinds can be on one page; `edited` reads a message back from its fields.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import streamlit as st

from agentcore.errors import TranscriptError
from agentcore.messages import AssistantMessage, Message
from agentcore.transcript import read_json

from . import safe


class RefusedField(ValueError):
    """A value typed in a field that cannot be used; `key` is the field's widget, where the page says why."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def parse_object(text: str, what: str) -> dict[str, Any]:
    """Parse JSON that must be an object; the error names what it was for."""
    try:  # within every reader's limits: a paste nested thousands deep is refused, not a RecursionError
        value = read_json(text or "{}")
    except TranscriptError as exc:
        raise ValueError(f"{what}: the arguments are {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{what}: the arguments must be a JSON object, not {type(value).__name__}")
    return value


def render_editor(
    prefix: str,
    i: int,
    m: Message,
    on_save: Callable[[], None],
    on_cancel: Callable[[], None],
    calls: bool = True,
    refused: tuple[str, str] | None = None,
) -> None:
    """The fields of message `i` (its text; each tool call's arguments unless `calls` is False), and Save and
    Cancel; `refused` is a field's key and why its value was not used, shown under that field."""
    st.text_area("Content", value=m.content or "", key=f"{prefix}_content_{i}", height=120)
    if calls and isinstance(m, AssistantMessage):
        for k, call in enumerate(m.tool_calls):
            raw = call.raw_arguments if call.arguments_invalid else json.dumps(call.arguments, ensure_ascii=False)
            label = f"Arguments of {safe.code(call.name)} ({safe.inline(call.id)})"
            key = f"{prefix}_args_{i}_{k}"
            st.text_area(label, value=raw, key=key, height=80)
            if refused is not None and refused[0] == key:
                st.error(safe.block(refused[1]), icon=":material/error:")
    left, right, _ = st.columns([1, 1, 4])
    left.button("Save", key=f"{prefix}_save_{i}", type="primary", on_click=on_save)
    right.button("Cancel", key=f"{prefix}_cancel_{i}", on_click=on_cancel)


def edited(prefix: str, i: int, m: Message, calls: bool = True) -> Message:
    """Message `i` as its editor's fields say (its calls' arguments too unless `calls` is False); a RefusedField
    names the field whose value cannot be used."""
    content = st.session_state.get(f"{prefix}_content_{i}", m.content or "")
    update: dict[str, Any] = {"content": content}
    if isinstance(m, AssistantMessage):
        update["content"] = content or None
        if calls:
            changed = []
            for k, call in enumerate(m.tool_calls):
                key = f"{prefix}_args_{i}_{k}"
                try:
                    args = parse_object(st.session_state.get(key, ""), f"message {i}, tool call {call.name}")
                except ValueError as exc:
                    raise RefusedField(key, str(exc)) from None
                changed.append(call.model_copy(update={"arguments": args, "raw_arguments": None}))
            update["tool_calls"] = tuple(changed)
    return m.model_copy(update=update)

"""A model turn's reasoning, shown collapsed above the tool calls it led to, with its token count.

Reasoning is model output: its text goes through ui.safe like any message, and the opaque parts
(signatures, encrypted content) are never shown, only said to be there.
"""

from __future__ import annotations

import streamlit as st

from agentcore.messages import AssistantMessage, Message, ReasoningPart, estimate_tokens
from agentcore.run import Run

from . import safe

KIND = {"anthropic": "thinking", "openai-responses": "reasoning", "ollama": "thinking"}


def reported_tokens(run: Run | None, index: int, message: Message | None = None) -> int | None:
    """The reasoning tokens the provider reported for the model turn at `index`, when it reported any.

    With `message`, only when the run's message there is that one (an edited draft may differ).
    """
    if run is None or (message is not None and (index >= len(run.messages) or run.messages[index] != message)):
        return None
    step = next((s for s in run.steps if s.message_count == index), None)
    return (step.usage.reasoning_tokens or None) if step is not None else None


def tokens_label(parts: tuple[ReasoningPart, ...], reported: int | None = None) -> str:
    """`Reasoning · 1,792 tokens` when reported, else an estimate from the readable text."""
    if reported:
        return f"Reasoning · {reported:,} tokens"
    readable = sum(estimate_tokens(p.display_text) for p in parts if p.redacted is None)
    if readable:
        return f"Reasoning · about {readable:,} tokens"
    return "Reasoning · not readable"


def show_reasoning(m: Message, reported: int | None = None) -> None:
    """The reasoning of an assistant turn in a closed expander; nothing for a message without any."""
    if not isinstance(m, AssistantMessage) or not m.reasoning:
        return
    with st.expander(tokens_label(m.reasoning, reported), icon=":material/psychology:", expanded=False):
        for part in m.reasoning:
            _show_part(part)


def _show_part(part: ReasoningPart) -> None:
    kind = KIND.get(part.provider, "reasoning")
    st.caption(f"{safe.inline(part.provider)} {kind}")
    if part.redacted is not None:
        st.markdown("_Redacted by the provider: kept encrypted, and sent back to it as it came._")
    elif part.display_text:
        st.markdown(safe.markdown(part.display_text))
    else:
        st.markdown("_No readable text (the provider omits it); its opaque part is kept and sent back to it._")

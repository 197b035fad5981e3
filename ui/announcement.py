"""What the page's live region reads after a Step: the step, the messages it added and where the run stands,
in words a screen reader reads well (no Markdown marks, no addresses), of bounded length.

Every text here is a model's or a tool's, so untrusted: each message is cut before a pattern reads it, and each
pattern reads a bounded span from any place it starts, so a reply of megabytes of `*a ` or `[[[` costs a Step
no more than its first few thousand characters do.
"""

from __future__ import annotations

import re

from agentcore.messages import Message
from agentcore.run import Run

# the reason as the page says it: an answer is not a right answer, and a reply cut off is not an answer
STOP_LABELS = {"answer": "answered", "output limit": "stopped at the output limit"}

MESSAGE_CHARS = 100  # of each message's words, read aloud
ANNOUNCEMENT_CHARS = 400  # of the messages' words together; where the run stands is never cut off
READ_CHARS = 4000  # of a message's text, read for its words: more than a message's words can use

_LINK = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]{1,20}://|www\.)\S+")
# Markdown a screen reader would read out as marks: emphasis, code spans and fences, headings, quotes, list
# bullets, a link's or an image's brackets (its words are kept). Each span is bounded, and read once (`{m,n}+`
# gives nothing back to what follows, which it could not match anyway): a mark with no close reads on at most that
# far, not to the end of the text
_MARKED = (
    (re.compile(r"!?\[([^\]\n]{0,300}+)\]\([^)\s]{0,500}+(?:\s[^)]{0,300}+)?\)"), r"\1"),
    (re.compile(r"(?m)^[ \t]*(?:#{1,6}[ \t]+|>[ \t]?|[-*+][ \t]+|`{3,}[^\n]*$|~{3,}[^\n]*$)"), ""),
    (re.compile(r"(?<!\w)(\*{1,3}|_{1,3})(?=\S)(.{1,300}?)(?<=\S)\1(?!\w)"), r"\2"),
    (re.compile(r"`+"), ""),
    (re.compile(r"\*{2,}|_{2,}|~~"), ""),
)


def plain_words(text: str) -> str:
    """A model's Markdown as the words it shows, for a screen reader: no asterisk, backtick or hash read out."""
    for pattern, kept in _MARKED:
        text = pattern.sub(kept, text)
    return text


def said(m: Message) -> str:
    """One message in a sentence a screen reader can read: who said it and what, cut short."""
    text = m.content if m.role == "assistant" else m.text
    words = " ".join(plain_words(text[:READ_CHARS] if isinstance(text, str) else "").split())
    cut = words if len(words) <= MESSAGE_CHARS else words[: MESSAGE_CHARS - 1] + "…"
    if m.role == "assistant" and getattr(m, "tool_calls", ()):
        names = ", ".join(c.name for c in m.tool_calls)
        return f"The model asked for {names}." + (f" It said: {cut}" if m.content else "")
    if m.role == "assistant":
        return f"The model answered: {cut}"
    if m.role == "tool":
        return f"Tool {m.name} {'failed' if m.is_error else 'returned'}: {cut}"
    return f"{m.role.capitalize()} message: {cut}"


def announcement(run: Run) -> str:
    """What the last phase did, for the live region: the step, the messages it added, then where the run is
    (the stop reason, a pause, or the next phase), which is never cut off."""
    if not run.steps:
        return f"Run started: {len(run.messages)} messages, no step yet."
    step = run.steps[-1]
    if run.stop_reason == "error":
        end = "The model call failed."
    elif run.stop_reason:
        end = f"Stop reason: {STOP_LABELS.get(run.ending or '', run.ending)}."
    elif run.paused:
        end = "Paused."
    else:
        end = f"Next: the {run.next_phase} phase."
    heard = " ".join(said(m) for m in run.messages[step.message_count :])
    if len(heard) > ANNOUNCEMENT_CHARS:
        heard = heard[: ANNOUNCEMENT_CHARS - 1] + "…"
    text = f"Step {step.index} of {run.config.max_steps}. {heard} {end}".replace("  ", " ")
    return _LINK.sub("(a link)", text)  # read aloud, an address is noise; and no page element carries one

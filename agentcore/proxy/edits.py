"""A person's edit of a held request's messages, written back into the request in its own dialect.

The app shows a held request as agentcore messages (`dialects.read_request`) and a person changes a message's text;
`write_texts` puts each new text where that message's text is in the request as the agent sent it, and keeps every
other byte of the request: its model, options, tools, other messages, and the message's other parts.

Where a message's text is, is found by the same reader that made the messages, not by a second mapping of each
wire format: every text of the request is first replaced with a mark of its own, the marked request is read, and the
marks each message reads as say which texts are its.
"""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import UsageError
from .dialects import Dialect, read_request

# where a text is (the dict or list that holds it, and its key or index), and the part it is of when it is one
# part of a list of parts (that list, and the part's index): what is dropped when a message's text parts become one
Slot = tuple[Any, Any, tuple[list[Any], int] | None]


def write_texts(dialect: Dialect, body: dict[str, Any], texts: Mapping[int, str]) -> dict[str, Any]:
    """The request `body` with the text of message `i` (as `read_request` numbers them) made `texts[i]`.

    A message whose text is in several parts gets the new text in its first part, its other text parts dropped; its
    parts that are not text (an image, a tool call, a tool result of its own) are kept. A UsageError when a message
    is not in the request, has no text to replace, or reads as more than its text parts.
    """
    read = read_request(dialect, body)
    if read.unread:
        raise UsageError(f"the request's messages do not read: {read.unread}")
    for i, text in texts.items():
        if not isinstance(i, int) or not 0 <= i < len(read.messages):
            raise UsageError(f"message #{str(i)[:20]}: the request has {len(read.messages)} messages")
        if not isinstance(text, str):
            raise UsageError(f"message #{i}: the new text is not a string")
    out = copy.deepcopy(body)
    marked = copy.deepcopy(body)
    nonce = uuid.uuid4().hex[:8]
    slots = list(_slots(dialect, out))
    for k, (container, key, _part) in enumerate(_slots(dialect, marked)):
        container[key] = f"<{nonce}:{k}>"
    messages = read_request(dialect, marked).messages
    if len(messages) != len(read.messages):  # a mark changed how the request reads: no place is sure
        raise UsageError("the request's messages cannot be matched to its texts; edit its JSON")
    dropped: list[tuple[list[Any], int]] = []
    for i, text in sorted(texts.items()):
        said = messages[i].content or ""
        marks = [int(k) for k in re.findall(rf"<{nonce}:(\d+)>", said)]
        if not marks:
            raise UsageError(f"message #{i} has no text in the request to replace; edit its JSON")
        if said != "\n".join(f"<{nonce}:{k}>" for k in marks):
            raise UsageError(f"message #{i} holds parts that are not text (an image, a file); edit its JSON")
        container, key, _part = slots[marks[0]]
        container[key] = text
        dropped += [part for k in marks[1:] if (part := slots[k][2]) is not None]
    for parts, j in sorted(dropped, key=lambda part: part[1], reverse=True):
        del parts[j]  # the later parts of a list first, so each index still names its part
    return out


def _slots(dialect: Dialect, body: dict[str, Any]) -> Iterator[Slot]:
    """Each place in the request that holds a non-empty text of its messages, in the order of the request.

    An empty text is no place: marking it would make a message of what the reader skips.
    """
    if dialect.name == "openai-responses":
        yield from _texts(body, "instructions")
        if isinstance(body.get("input"), str):
            yield from _texts(body, "input")
            return
        for item in body.get("input") if isinstance(body.get("input"), list) else []:
            if isinstance(item, dict):
                yield from _texts(item, "content")
                yield from _texts(item, "output")
        return
    if dialect.name == "anthropic":
        yield from _texts(body, "system")
    for message in body.get("messages") if isinstance(body.get("messages"), list) else []:
        if isinstance(message, dict):
            yield from _texts(message, "content")


def _texts(holder: Any, key: Any) -> Iterator[Slot]:
    """The texts of one content field: a string, or a list of text parts (a tool result's own content within)."""
    value = holder.get(key) if isinstance(holder, dict) else None
    if isinstance(value, str):
        if value:
            yield holder, key, None
        return
    for j, part in enumerate(value if isinstance(value, list) else []):
        if isinstance(part, str) and part:
            yield value, j, (value, j)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            if part["text"]:
                yield part, "text", (value, j)
        elif isinstance(part, dict) and part.get("type") == "tool_result":
            yield from _texts(part, "content")

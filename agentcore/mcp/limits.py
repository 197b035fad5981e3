"""What an MCP server can make this process keep: a capped wire record, and only the tail of its stderr.

A server is untrusted, and what it sends is held in memory: each JSON-RPC message kept for the
wire view, the stderr of a stdio server read for error messages. A kept message's strings are
cut as a tool's output is, and a message still too long is kept as cut text, as a provider's
body that is not JSON is; of the stderr file only the end is read. (An HTTP reply's own size is
bounded as it is read: see bounded_http.py.)
"""

from __future__ import annotations

import json
import os
from typing import IO, Any

from ..providers.base import WIRE_TEXT_LIMIT
from ..tool_output import cap_output
from ..tools import DEFAULT_MAX_OUTPUT_CHARS

WIRE_STRING_CHARS = DEFAULT_MAX_OUTPUT_CHARS  # of each string in a kept message: what the model is shown of a result
WIRE_MESSAGE_CHARS = WIRE_TEXT_LIMIT  # of a kept message as JSON text, as of a provider's body that is not JSON


def kept(body: Any) -> Any:
    """A JSON-RPC message as the wire view keeps it: each long string cut, a message still too long as cut text."""
    size = len(json.dumps(body, ensure_ascii=False, default=str))
    if size <= WIRE_MESSAGE_CHARS:
        return body
    body = _cut_strings(body)
    text = json.dumps(body, ensure_ascii=False, default=str)
    if len(text) <= WIRE_MESSAGE_CHARS:
        return body
    return f"{text[:WIRE_MESSAGE_CHARS]}… [cut: {size} characters in all]"


def _cut_strings(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return cap_output(value, WIRE_STRING_CHARS)
    if depth > 64:  # deeper still: left whole, and the message's own cap applies
        return value
    if isinstance(value, dict):
        return {k: _cut_strings(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut_strings(v, depth + 1) for v in value]
    return value


def file_tail(file: IO[bytes], chars: int) -> str:
    """The last `chars` characters of a binary file written as UTF-8, reading only its end."""
    size = os.fstat(file.fileno()).st_size
    file.seek(max(0, size - 4 * chars))  # a character takes at most 4 bytes
    return file.read(4 * chars).decode("utf-8", errors="replace")[-chars:]

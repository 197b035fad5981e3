"""Anthropic prompt caching: `cache_control` breakpoints on the tools, the system prompt and the last turn.

The cache covers the prefix up to each breakpoint, in the order tools → system → messages. A breakpoint on
the last block of the last turn caches the whole request, which the next step sends again as its prefix;
reads are billed at a tenth of the input price, writes at 1.25 times (Anthropic's prompt-caching pricing).
"""

from __future__ import annotations

import copy
from typing import Any

BREAKPOINT = {"type": "ephemeral"}  # the five-minute cache, the API's default
MAX_BREAKPOINTS = 4  # the API refuses a request with more


def place_cache_breakpoints(body: dict[str, Any]) -> dict[str, Any]:
    """A copy of a Messages API body with `cache_control` on the last tool, the system prompt and the last turn."""
    body = copy.deepcopy(body)
    tools = body.get("tools")
    if tools:
        tools[-1]["cache_control"] = dict(BREAKPOINT)
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": dict(BREAKPOINT)}]
    elif isinstance(system, list) and system:
        system[-1]["cache_control"] = dict(BREAKPOINT)
    turns = body.get("messages") or []
    if turns:
        last = turns[-1]
        if isinstance(last.get("content"), str):
            last["content"] = [{"type": "text", "text": last["content"]}]
        blocks = [b for b in last.get("content") or [] if isinstance(b, dict) and b.get("type") != "thinking"]
        if blocks:  # a thinking block cannot carry a breakpoint
            blocks[-1]["cache_control"] = dict(BREAKPOINT)
    return body


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where a body's breakpoints are, as paths like `tools[2]`, `system[0]`, `messages[4].content[1]`."""
    found = [f"tools[{i}]" for i, t in enumerate(body.get("tools") or []) if "cache_control" in t]
    system = body.get("system")
    if isinstance(system, list):
        found += [f"system[{i}]" for i, b in enumerate(system) if isinstance(b, dict) and "cache_control" in b]
    for i, turn in enumerate(body.get("messages") or []):
        content = turn.get("content")
        if isinstance(content, list):
            found += [
                f"messages[{i}].content[{j}]"
                for j, b in enumerate(content)
                if isinstance(b, dict) and "cache_control" in b
            ]
    return found

"""Reading a server's tools: only from a server that offers them, every page of `tools/list`, each tool on its own.

A server that declares no `tools` capability in its `initialize` result has no `tools/list` to call
(the spec's capability negotiation; the SDK's own `python -m mcp.server` answers it "Method not
found"): it offers 0 tools, and a note says so. `tools/list` is paginated: each `nextCursor` is
followed until a page has none, up to `MAX_TOOLS` tools or `MAX_PAGES` pages, with a note when that
cap cuts the listing short. Each listed tool is checked on its own as the page arrives: an entry the
MCP `Tool` type refuses (an inputSchema that is not a JSON object, a name that is not text) is left
out with a note, where the SDK would refuse the whole page, and with it every other tool of the server.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

MAX_TOOLS = 128  # of one server: more than any model is usefully offered at once
MAX_PAGES = 64  # of one listing: a server whose cursors never end is read this far
NOTE_CHARS = 300


def mend_listing(item: Any) -> list[str]:
    """Leave out of a `tools/list` response, in place, each tool the MCP `Tool` type refuses; a note for each."""
    from mcp import types

    result = getattr(getattr(item, "message", None), "result", None)
    listed = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(listed, list):
        return []  # not a tools/list result: nothing to mend
    kept, notes = [], []
    for entry in listed:
        try:
            types.Tool.model_validate(entry)
        except ValidationError as exc:
            name = entry.get("name") if isinstance(entry, dict) else None
            where = ".".join(str(p) for p in exc.errors()[0]["loc"]) or "the entry"
            shown = repr(name)[:64] if isinstance(name, str) else "with no name"
            notes.append(f"tool {shown} left out: its {where} is not as MCP defines it ({exc.errors()[0]['msg']})")
            continue
        kept.append(entry)
    if len(kept) < len(listed):
        result["tools"] = kept
    return [n[:NOTE_CHARS] for n in notes]


async def read_tools(session: Any, capabilities: Any) -> tuple[list[Any], list[str]]:
    """The server's tools (the SDK's Tool objects, each name once) and a note for each thing left out."""
    from mcp import types

    if getattr(capabilities, "tools", None) is None:
        return [], ["it declares no tools capability: 0 tools"]
    first: dict[str, Any] = {}
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
        page = await session.list_tools(params=params)
        for listed in page.tools:
            first.setdefault(listed.name, listed)  # a call names its tool: of two of one name, the first is kept
        cursor = page.next_cursor
        if cursor is None or len(first) > MAX_TOOLS:
            break
    tools = list(first.values())
    if len(tools) > MAX_TOOLS:
        return tools[:MAX_TOOLS], [f"it lists more than {MAX_TOOLS} tools: the first {MAX_TOOLS} are offered"]
    if cursor is not None:
        return tools, [f"tools/list still had more pages after {MAX_PAGES}: the {len(tools)} tools read are offered"]
    return tools, []

"""An MCP server on the official SDK's low-level API whose `tools/list` comes in pages, for the client's tests.

    python tests/support/mcp_servers/paged_mcp_server.py [--tools N] [--page-size K] [--unusable] [--endless] [--no-tools] [--die]

It lists `whoami` (which answers the client's `clientInfo` as the server read it) and N tools
(`t000`, `t001`, ...; each answers `ran tNNN`), K to a page, each page's `nextCursor` the offset of
the next. `--unusable` puts on the first page, among the good ones, tools whose inputSchema cannot
be used: one that is not a JSON object at all, one that is not a valid JSON Schema. `--endless`
answers every page with one more cursor, forever. `--no-tools` serves no tools at all, so it
declares no `tools` capability, as an SDK server with no tool handlers does. `--die` writes a few
lines to stderr, a token among them, and exits before it answers anything.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

OBJECT = {"type": "object", "properties": {}}
SECRET = "sk-paged-0123456789abcdef0123"
NOT_AN_OBJECT = "not_an_object"


class _Unusable:
    """The server's write stream, which sends `not_an_object`'s inputSchema as a string.

    The SDK checks what a handler returns against its own types, so the change is made on the
    way out, after that check: as a server written without the SDK could send it.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def __aenter__(self) -> _Unusable:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)

    async def send(self, item: Any) -> None:
        result = getattr(item.message, "result", None)
        for tool in result.get("tools", []) if isinstance(result, dict) else []:
            if tool.get("name") == NOT_AN_OBJECT:
                tool["inputSchema"] = "oops"
        await self._stream.send(item)


def build(args: argparse.Namespace) -> Any:
    """The server the options describe."""
    from mcp import types
    from mcp.server.lowlevel import Server

    names = ["whoami", *(f"t{i:03d}" for i in range(args.tools))]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        page = [
            types.Tool(name=n, description=f"Tool {n}.", input_schema=OBJECT) for n in names[start:][: args.page_size]
        ]
        if args.unusable and start == 0:
            page.insert(1, types.Tool(name=NOT_AN_OBJECT, description="Bad.", input_schema=OBJECT))  # see _Unusable
            bad = {"type": "object", "properties": {"x": {"type": 12}}}
            page.insert(2, types.Tool(name="not_a_schema", description="Bad too.", input_schema=bad))
        after = start + args.page_size
        more = args.endless or after < len(names)
        return types.ListToolsResult(tools=page, next_cursor=str(after) if more else None)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        text = f"ran {params.name}"
        if params.name == "whoami":
            client = ctx.session.client_params.client_info
            text = json.dumps({"name": client.name, "version": client.version})
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    if args.no_tools:
        return Server("paged-none")
    return Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)


async def main(args: argparse.Namespace) -> None:
    from mcp.server.stdio import stdio_server

    server = build(args)
    async with stdio_server() as (read, write):
        out = _Unusable(write) if args.unusable else write
        await server.run(read, out, server.create_initialization_options())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=5)
    parser.add_argument("--page-size", type=int, default=2)
    parser.add_argument("--unusable", action="store_true")
    parser.add_argument("--endless", action="store_true")
    parser.add_argument("--no-tools", action="store_true")
    parser.add_argument("--die", action="store_true")
    options = parser.parse_args()
    if options.die:  # before the SDK is imported: it dies as soon as it can
        sys.stderr.write("loading the index\n")
        sys.stderr.write(f"FATAL: the token {SECRET} was refused by the backend\n")
        sys.stderr.flush()
        raise SystemExit(3)
    import anyio

    anyio.run(main, options)

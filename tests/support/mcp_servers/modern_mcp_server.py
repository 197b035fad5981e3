"""An MCP server that speaks only the 2026-07-28 revision: stateless, no `initialize` handshake, `server/discover`.

Run as `python tests/support/mcp_servers/modern_mcp_server.py [--speaks VERSION]` (stdio); `--speaks` makes it a server of a revision
no client here knows, which answers both `server/discover` and `initialize` with -32022 naming VERSION alone. Built on the official SDK's low-level server, which serves both
eras; in front of it, the one thing a modern-only server does differently: an `initialize` is answered with the
spec's -32022 error naming the versions it supports, as a server that dropped the handshake answers it.
Its tool `add` adds two numbers, so a test can tell a call that ran.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import UNSUPPORTED_PROTOCOL_VERSION, ErrorData, JSONRPCError, JSONRPCRequest

SUPPORTED = sys.argv[sys.argv.index("--speaks") + 1 :][:1] if "--speaks" in sys.argv else ["2026-07-28"]
REFUSED = {"initialize"} if SUPPORTED == ["2026-07-28"] else {"initialize", "server/discover"}


def build() -> Server:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        schema = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}
        return types.ListToolsResult(tools=[types.Tool(name="add", description="Add a and b.", input_schema=schema)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        total = float(args.get("a", 0)) + float(args.get("b", 0))
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{total:g}")])

    return Server("modern-only", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    server = build()
    async with stdio_server() as (read, write):
        inbox, reader = anyio.create_memory_object_stream[Any](100)

        async def refuse_the_handshake() -> None:
            async with inbox:
                async for item in read:
                    message = getattr(item, "message", None)
                    if isinstance(message, JSONRPCRequest) and message.method in REFUSED:
                        params = message.params or {}
                        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
                        requested = params.get("protocolVersion") or meta.get(
                            "io.modelcontextprotocol/protocolVersion", ""
                        )
                        data = {"supported": SUPPORTED, "requested": requested}
                        error = ErrorData(
                            code=UNSUPPORTED_PROTOCOL_VERSION, message="Unsupported protocol version", data=data
                        )
                        await write.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=message.id, error=error)))
                        continue
                    await inbox.send(item)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(refuse_the_handshake)
            await server.run(reader, write, server.create_initialization_options())
            tasks.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)

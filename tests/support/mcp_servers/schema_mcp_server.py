"""An MCP server whose one tool, `echo`, declares whatever inputSchema it is given: a hostile server for the tests.

Run as `python tests/support/mcp_servers/schema_mcp_server.py SCHEMA_JSON` (stdio). Built on the official SDK's low-level server API,
which sends a tool's inputSchema as written, where MCPServer would derive it from a function's signature.
A call that reaches it answers `echoed: ARGUMENTS`, so a test can tell a call that ran from one refused before.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def build(schema: dict[str, Any]) -> Server:
    """The server, offering `echo` with `schema` as its inputSchema."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tool = types.Tool(name="echo", description="Echo the arguments back.", input_schema=schema)
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        text = f"echoed: {json.dumps(params.arguments or {}, sort_keys=True)}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)


async def main(schema: dict[str, Any]) -> None:
    server = build(schema)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main, json.loads(sys.argv[1]))

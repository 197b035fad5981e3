"""A small MCP server to try agentcore's MCP tools on, built with the official SDK's server API.

`agentcore mcp-demo` serves it over stdio (what `--mcp-stdio "agentcore mcp-demo"` starts);
`agentcore mcp-demo --http 8765` serves it over streamable HTTP at http://127.0.0.1:8765/mcp.
It has a tool that succeeds, one that reports an error, and one that takes its time, so
each way a tool call can end is a click away. It needs the `mcp` extra.
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import __version__

SERVER_NAME = "agentcore-demo"
MAX_SLEEP_S = 60.0


def build_server() -> Any:
    """The demo server with its tools (an `mcp.server.mcpserver.MCPServer`)."""
    import anyio
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(SERVER_NAME, version=__version__, instructions="Demo tools for agentcore.", log_level="WARNING")

    @server.tool()
    def add(a: float, b: float) -> str:
        """Add two numbers."""
        total = a + b
        return str(int(total)) if total == int(total) else str(total)

    @server.tool()
    def word_count(text: str) -> str:
        """Count the words in a text."""
        return f"{len(text.split())} words"

    @server.tool()
    def divide(a: float, b: float) -> str:
        """Divide a by b; dividing by zero is reported as a tool error."""
        if b == 0:
            raise ToolError("cannot divide by zero; give a non-zero b")
        return str(a / b)

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Wait this many seconds (at most 60), then say so."""
        await anyio.sleep(max(0.0, min(seconds, MAX_SLEEP_S)))
        return f"slept {seconds:g} s"

    return server


def serve(http_port: int | None = None, host: str = "127.0.0.1") -> None:
    """Serve the demo over stdio, or over streamable HTTP on `host:http_port` at the path /mcp."""
    server = build_server()
    if http_port is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=http_port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentcore mcp-demo", description="Serve the demo MCP tools.")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve over streamable HTTP on this port")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on with --http")
    args = parser.parse_args(argv)
    serve(args.http, args.host)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

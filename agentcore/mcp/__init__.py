"""Tools from MCP servers: the client (`client`), the server configuration (`config`) and a demo server (`demo`).

What a server may make the client hold is bounded in `limits` and `bounded_http`; the SDK's logging is one line in `logs`.

The `mcp` extra brings the official SDK; without it, configuring a server is a one-line usage error.
"""

from .client import Connection, MCPServerError, MCPTool, close_all, connect, mcp_tools, with_mcp_tools
from .config import ServerConfig, http_server, load_config, parse_config, stdio_server

__all__ = [
    "Connection",
    "MCPServerError",
    "MCPTool",
    "ServerConfig",
    "close_all",
    "connect",
    "http_server",
    "load_config",
    "mcp_tools",
    "parse_config",
    "stdio_server",
    "with_mcp_tools",
]

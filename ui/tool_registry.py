"""The app's tool registry: the built-in toolbox and the tools of the MCP servers named by AGENTCORE_MCP_CONFIG.

The app starts only the servers of that file, read from the environment of the process that
started the app, never a command or URL typed into a page: a person picks their tools, not a
process. The servers are started once per app process and shared by its browser sessions; a
server that dies is started again by the next call to one of its tools.
"""

from __future__ import annotations

import os

import streamlit as st

from agentcore.errors import AgentcoreError
from agentcore.mcp.client import Connection, MCPTool, connect, mcp_tools, require_sdk
from agentcore.mcp.config import load_config
from agentcore.toolbox import TOOLBOX
from agentcore.tools import Tool, ToolSpec

CONFIG_ENV = "AGENTCORE_MCP_CONFIG"


@st.cache_resource(show_spinner="Starting the MCP servers…")
def _started(path: str) -> tuple[list[Connection], list[MCPTool], list[str]]:
    """The servers of the config file that started, their tools, and a line for each that did not."""
    problems: list[str] = []
    try:
        require_sdk()
        configs = load_config(path)
    except AgentcoreError as exc:
        return [], [], [str(exc)]
    started = []
    for config in configs:
        try:
            connection = connect(config)
            started.append(config)
        except AgentcoreError as exc:
            problems.append(str(exc))
        else:  # one that started but offers no tools, or not all it listed, says so here
            problems += [f"MCP server {connection.name}: {note}" for note in connection.notes]
    try:
        tools = mcp_tools(started, taken=list(TOOLBOX))
    except AgentcoreError as exc:
        return [], [], [*problems, str(exc)]
    connections = list({id(t.connection): t.connection for t in tools if t.connection is not None}.values())
    return connections, tools, problems


def servers() -> tuple[list[Connection], list[MCPTool], list[str]]:
    """The configured servers that started, their tools, and a line for each that did not (none without a file)."""
    path = os.environ.get(CONFIG_ENV)
    return _started(path) if path else ([], [], [])


def restart_servers() -> None:
    """Forget the started servers, so that the next look at the tools starts them again."""
    _started.clear()


def available_tools() -> dict[str, Tool]:
    """Every tool the app can offer, by name: the built-in toolbox, then the configured servers' tools."""
    return {**TOOLBOX, **{t.name: t for t in servers()[1]}}


def resolve_tools(names: list[str]) -> list[Tool]:
    """The tools of these names that the app has; a name it lacks (from an imported run) is left out."""
    tools = available_tools()
    return [tools[n] for n in names if n in tools]


def tool_spec(name: str) -> ToolSpec:
    """What the model is told about one of the available tools."""
    return available_tools()[name].spec()

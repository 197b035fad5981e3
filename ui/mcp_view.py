"""MCP servers in the app: the servers of the file named by AGENTCORE_MCP_CONFIG, their tools and their JSON-RPC.

The app starts only the servers of that file, read from the environment of the process that
started the app, never a command or URL typed into a page: a person picks their tools, not a
process. The servers are started once per app process and shared by its browser sessions; a
server that dies is started again by the next call to one of its tools.
"""

from __future__ import annotations

import os

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from agentcore.errors import AgentcoreError
from agentcore.mcp.client import Connection, MCPTool, connect, mcp_tools, require_sdk
from agentcore.mcp.config import load_config
from agentcore.secrets import scrub_text
from agentcore.toolbox import TOOLBOX
from agentcore.tools import Tool, ToolSpec

from . import safe

CONFIG_ENV = "AGENTCORE_MCP_CONFIG"
WIRE_SHOWN = 40


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
            connect(config)
            started.append(config)
        except AgentcoreError as exc:
            problems.append(str(exc))
    try:
        tools = mcp_tools(started, taken=list(TOOLBOX))
    except AgentcoreError as exc:
        return [], [], [*problems, str(exc)]
    connections = list({id(t.connection): t.connection for t in tools if t.connection is not None}.values())
    return connections, tools, problems


def _servers() -> tuple[list[Connection], list[MCPTool], list[str]]:
    path = os.environ.get(CONFIG_ENV)
    return _started(path) if path else ([], [], [])


def available_tools() -> dict[str, Tool]:
    """Every tool the app can offer, by name: the built-in toolbox, then the configured servers' tools."""
    return {**TOOLBOX, **{t.name: t for t in _servers()[1]}}


def resolve_tools(names: list[str]) -> list[Tool]:
    """The tools of these names that the app has; a name it lacks (from an imported run) is left out."""
    tools = available_tools()
    return [tools[n] for n in names if n in tools]


def tool_spec(name: str) -> ToolSpec:
    """What the model is told about one of the available tools."""
    return available_tools()[name].spec()


def render_mcp_servers(container: DeltaGenerator) -> None:
    """The configured servers: where each runs, its tools, its last JSON-RPC messages, and any that failed."""
    connections, tools, problems = _servers()
    if not connections and not problems:
        return
    with container.expander(f"MCP servers ({len(connections)})"):
        st.caption(f"From the file in ${CONFIG_ENV}; a tool call's JSON-RPC is shown below its server.")
        for problem in problems:
            st.warning(safe.block(scrub_text(problem)), icon=":material/dns:")
        for c in connections:
            state = "running" if c.alive else "stopped (its next tool call starts it)"
            names = [t.name for t in tools if t.connection is c]
            st.markdown(f"**{safe.inline(c.name)}** · {state} · {safe.code(scrub_text(c.config.label))}")
            st.caption(safe.inline(", ".join(names) or "no tools"))
            if st.toggle("JSON-RPC", key=f"mcp_wire_{c.name}"):
                st.json(list(c.wire)[-WIRE_SHOWN:], expanded=False)
        st.button("Start the servers again", key="mcp_restart", on_click=_started.clear)

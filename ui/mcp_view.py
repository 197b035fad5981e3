"""The MCP panel in the sidebar: each configured server, its tools, its last JSON-RPC messages, and any that failed.

The servers and their tools come from the app's tool registry (tool_registry.py); this module only draws them.
"""

from __future__ import annotations

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from agentcore.secrets import scrub_text

from . import safe
from .tool_registry import CONFIG_ENV, restart_servers, servers

WIRE_SHOWN = 40


def render_mcp_servers(container: DeltaGenerator) -> None:
    """The configured servers: where each runs, its tools, its last JSON-RPC messages, and any that failed."""
    connections, tools, problems = servers()
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
            if c.speaks:  # the protocol generation and version the session negotiated
                st.caption(safe.inline(f"speaks {c.speaks}"))
            st.caption(safe.inline(", ".join(names) or "no tools"))
            if st.toggle("JSON-RPC", key=f"mcp_wire_{c.name}"):
                st.json(list(c.wire)[-WIRE_SHOWN:], expanded=False)
        st.button("Start the servers again", key="mcp_restart", on_click=restart_servers)

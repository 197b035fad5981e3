"""Both generations of MCP: a server that speaks only the 2026-07-28 revision (stateless, no `initialize`,
`server/discover`) is listed and called as a handshake-era one is, and the app and the CLI say which each speaks.

The modern-only server is built on the official SDK (tests/support/mcp_servers/modern_mcp_server.py); the SDK's own servers speak both
eras, and the npm reference servers (tests/mcp/test_mcp_interop.py) the handshake alone.
"""

from __future__ import annotations

import shlex
import sys

import pytest

pytest.importorskip("mcp", reason="the `mcp` extra is not installed: pip install -e '.[mcp]'")

from support.servers import ROOT

from agentcore.cli.main import main
from agentcore.mcp.client import MCPServerError, connect, mcp_tools
from agentcore.mcp.config import stdio_server
from agentcore.messages import ToolCall

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("stop_servers")]  # each test starts a server process

MODERN = shlex.join([sys.executable, str(ROOT / "tests" / "support" / "mcp_servers" / "modern_mcp_server.py")])
DEMO = shlex.join([sys.executable, "-m", "agentcore.mcp.demo"])


def test_a_modern_only_server_is_listed_by_agentcore_tools_and_says_what_it_speaks(capsys):
    assert main(["tools", "--mcp-stdio", MODERN]) == 0
    printed = capsys.readouterr()
    assert printed.out.splitlines()[0].startswith("add ") and "Add a and b." in printed.out
    assert "speaks MCP 2026-07-28 (stateless, server/discover)" in printed.err


def test_a_modern_only_servers_tool_runs_through_the_loops_tool():
    (add,) = mcp_tools([stdio_server(MODERN)])
    outcome = add.execute(ToolCall(id="c1", name="add", arguments={"a": 2, "b": 40}))
    assert outcome.content == "42" and not outcome.is_error
    connection = add.connection
    assert (connection.era, connection.protocol_version) == ("stateless", "2026-07-28")
    methods = [w["message"].get("method") for w in connection.wire if w["direction"] == "→"]
    assert "initialize" not in methods and "server/discover" in methods  # it never saw the handshake


def test_the_sdks_own_dual_era_server_is_spoken_to_in_the_newest_revision():
    connection = connect(stdio_server(DEMO))
    assert connection.speaks == "MCP 2026-07-28 (stateless, server/discover)"


def test_a_server_of_a_revision_no_one_here_speaks_is_refused_in_one_line_naming_its_versions():
    with pytest.raises(MCPServerError) as refused:
        connect(stdio_server(f"{MODERN} --speaks 2099-01-01"))
    said = str(refused.value)
    assert "\n" not in said and "could not start" in said
    assert "it speaks MCP 2099-01-01" in said and "2026-07-28" in said and "2025-11-25" in said

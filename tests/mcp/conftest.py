"""The MCP tests: servers a test starts end with it."""

from __future__ import annotations

import pytest

from agentcore.mcp.client import close_all


@pytest.fixture
def stop_servers():
    """Close every MCP connection the test opened (each is a server process or an HTTP session)."""
    yield
    close_all()

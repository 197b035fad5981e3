"""Shared fixtures: a scripted agent, and a temporary transcript folder."""

from __future__ import annotations

import pytest
from servers import katan, katan_pool, llama_server  # noqa: F401 - session fixtures of the real peer servers

from agentcore import toolbox


@pytest.fixture(autouse=True)
def _reset_flaky():
    toolbox.reset_flaky()
    yield

"""Shared fixtures: a scripted agent, and a temporary transcript folder."""

from __future__ import annotations

import pytest

from agentcore import toolbox


@pytest.fixture(autouse=True)
def _reset_flaky():
    toolbox.reset_flaky()
    yield

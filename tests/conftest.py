"""Shared fixtures: the real peer servers, a private runs database, a fresh flaky schedule."""

from __future__ import annotations

import os

import pytest
from servers import katan, katan_pool, llama_server  # noqa: F401 - session fixtures of the real peer servers

from agentcore import toolbox


@pytest.fixture(autouse=True, scope="session")
def _session_runs_database(tmp_path_factory):
    # module- and session-scoped fixtures run before the per-test one below: cover them too
    saved = os.environ.get("AGENTCORE_DB")
    os.environ["AGENTCORE_DB"] = str(tmp_path_factory.mktemp("db") / "session-runs.db")
    yield
    if saved is None:
        os.environ.pop("AGENTCORE_DB", None)
    else:
        os.environ["AGENTCORE_DB"] = saved


@pytest.fixture(autouse=True)
def _private_runs_database(tmp_path, monkeypatch):
    # no test may read or write the user's own ~/.agentcore/runs.db
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "default-runs.db"))


@pytest.fixture(autouse=True)
def _reset_flaky():
    toolbox.reset_flaky()
    yield

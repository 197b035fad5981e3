"""The store's tests: a runs database on SQLite, and on a throwaway PostgreSQL cluster."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])  # a real server
def location(request, tmp_path: Path) -> str:
    return str(tmp_path / "runs.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")

"""The runs store's shared backend: PostgreSQL through psycopg 3 (the `postgres` extra), for a team or a class."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any


def _psycopg() -> Any:
    # imported on first use: a SQLite user neither needs the extra nor waits for its import
    try:
        import psycopg
    except ImportError:
        raise ImportError("a postgresql:// database needs psycopg 3: pip install 'agentcore[postgres]'") from None
    return psycopg


# any constant works, as long as every agentcore process takes the same one while it migrates
_MIGRATION_LOCK = 0x61676E74


def _ddl(statement: str) -> str:
    # SQLite's REAL is a double but PostgreSQL's is a float4, which would round every stored cost
    statement = re.sub(r"\bREAL\b", "DOUBLE PRECISION", statement)
    statement = re.sub(r"\bINTEGER\b", "BIGINT", statement)
    return re.sub(r"\s*WITHOUT ROWID", "", statement)


def redact_url(url: str) -> str:
    """The URL with its password replaced, for messages."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


class PostgresBackend:
    """One psycopg connection in autocommit mode; writes run in explicit transactions that lock the run's row."""

    like = "ILIKE"  # PostgreSQL's LIKE is case-sensitive; the library's search is not
    lock_row = " FOR UPDATE"  # a second writer of the same run waits here, then sees the first one's revision
    answered_by = (
        "CASE WHEN models = '[]' THEN provider = ? ELSE EXISTS "
        "(SELECT 1 FROM jsonb_array_elements(models::jsonb) AS m(value) WHERE m.value ->> 0 = ?) END"
    )
    providers_sql = (
        "SELECT provider FROM runs WHERE models = '[]' "
        "UNION SELECT m.value ->> 0 FROM runs, jsonb_array_elements(runs.models::jsonb) AS m(value) ORDER BY 1"
    )

    def __init__(self, url: str) -> None:
        self.url = url
        self.path = url
        self.location = redact_url(url)
        self._conn = self._connect()

    @staticmethod
    def errors() -> tuple[type[Exception], ...]:
        """What the driver raises."""
        return (_psycopg().Error,)

    def _connect(self) -> Any:
        return _psycopg().connect(self.url, autocommit=True, connect_timeout=10)

    def _live(self) -> Any:
        if self._conn.broken:  # the server restarted or the network dropped: the next statement reconnects
            self._conn = self._connect()
        return self._conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement written with `?` placeholders (the store's SQL has no literal % or ?)."""
        return self._live().execute(sql.replace("?", "%s"), params)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction (READ COMMITTED; the rows a save reads are locked with FOR UPDATE)."""
        with self._live().transaction():
            yield

    def schema_version(self) -> int:
        """The number of migrations applied."""
        found = self._live().execute("SELECT to_regclass('agentcore_schema')").fetchone()[0]
        if found is None:
            return 0
        return self._conn.execute("SELECT version FROM agentcore_schema").fetchone()[0]

    def migrate(self, migrations: Sequence[Sequence[str]], newer: Callable[[int], Exception]) -> None:
        """Apply the migrations not applied yet, in one transaction under an advisory lock, so two processes
        starting at once do not both run them."""
        with self.transaction():
            self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            self._conn.execute("CREATE TABLE IF NOT EXISTS agentcore_schema (version INTEGER NOT NULL)")
            found = self._conn.execute("SELECT version FROM agentcore_schema").fetchone()
            if found is None:
                self._conn.execute("INSERT INTO agentcore_schema VALUES (0)")
            version = found[0] if found else 0
            if version > len(migrations):
                raise newer(version)
            for number in range(version, len(migrations)):
                for statement in migrations[number]:
                    self._conn.execute(_ddl(statement))
            self._conn.execute("UPDATE agentcore_schema SET version = %s", (len(migrations),))

    def check(self) -> str:
        """ "ok" when every step belongs to a stored run (PostgreSQL checks its own pages)."""
        orphans = self.execute("SELECT count(*) FROM steps WHERE run_id NOT IN (SELECT id FROM runs)").fetchone()[0]
        return "ok" if orphans == 0 else f"{orphans} steps without a run"

    def close(self) -> None:
        self._conn.close()

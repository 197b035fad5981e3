"""The runs store's embedded backend: one SQLite file in WAL mode, the default."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class SqliteBackend:
    """One SQLite connection: PRAGMA user_version holds the schema version, BEGIN IMMEDIATE serialises writers."""

    like = "LIKE"  # case-insensitive for ASCII already
    lock_row = ""  # BEGIN IMMEDIATE has locked the whole database
    answered_by = (
        "CASE WHEN models = '[]' THEN provider = ? "
        "ELSE EXISTS (SELECT 1 FROM json_each(models) WHERE json_extract(value, '$[0]') = ?) END"
    )
    providers_sql = (
        "SELECT provider FROM runs WHERE models = '[]'{visible} "
        "UNION SELECT json_extract(m.value, '$[0]') FROM runs, json_each(runs.models) AS m "
        "WHERE 1 = 1{visible} ORDER BY 1"
    )

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.execute("PRAGMA secure_delete=ON")  # a deleted run leaves no readable trace

    @staticmethod
    def errors() -> tuple[type[Exception], ...]:
        """What the driver raises."""
        return (sqlite3.Error,)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one statement written with `?` placeholders."""
        return self._db.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement written with `?` placeholders once for each row of values."""
        if rows:
            self._db.executemany(sql, rows)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction, taking the write lock at its start so a read inside it cannot go stale."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def schema_version(self) -> int:
        """The number of migrations applied."""
        return self._db.execute("PRAGMA user_version").fetchone()[0]

    def migrate(self, migrations: Sequence[Sequence[str]], newer: Callable[[int], Exception]) -> None:
        """Apply the migrations not applied yet, each in its own transaction; raise `newer` for a newer schema."""
        version = self.schema_version()
        if version > len(migrations):
            raise newer(version)
        for number in range(version, len(migrations)):
            with self.transaction():
                for statement in migrations[number]:
                    self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {number + 1}")

    def check(self) -> str:
        """SQLite's integrity check: "ok" for a sound database."""
        return self._db.execute("PRAGMA integrity_check").fetchone()[0]

    def close(self) -> None:
        self._db.close()

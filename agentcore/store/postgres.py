"""The runs store's shared backend: PostgreSQL through psycopg 3 (the `postgres` extra), for a team or a class.

A server is named as libpq names one: a `postgresql://` URL, or a key/value string (`host=db password=…`).
Either may hold a password (after `user:` in the URL, in its `?password=` query, or as a key), so every
form of the location a person sees goes through `redact_dsn`, each password is registered as a secret
before the first connection, and a driver's message is cleaned of it: a server that is down or refuses
the password must not put the password on a terminal or a page.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..secrets import register_secret


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
    statement = re.sub(r"\bBLOB\b", "BYTEA", statement)
    return re.sub(r"\s*WITHOUT ROWID", "", statement)


URL_SCHEMES = ("postgresql://", "postgres://")
# libpq's connection keywords (PostgreSQL 17): a location that opens with one of them and `=` is a
# key/value connection string, never a file name
LIBPQ_KEYS = frozenset(
    "host hostaddr port dbname user password passfile require_auth channel_binding connect_timeout "
    "client_encoding options application_name fallback_application_name keepalives keepalives_idle "
    "keepalives_interval keepalives_count tcp_user_timeout replication gssencmode sslmode sslnegotiation "
    "requiressl sslcompression sslcert sslkey sslkeylogfile sslpassword sslcertmode sslrootcert sslcrl sslcrldir "
    "sslsni requirepeer ssl_min_protocol_version ssl_max_protocol_version krbsrvname gsslib gssdelegation "
    "service target_session_attrs load_balance_hosts".split()
)
MASK = "***"
_FIRST_KEY = re.compile(r"\s*([A-Za-z_]+)\s*=")
# one `key = value` pair as libpq reads it: a value in single quotes, or up to the next space; `\` escapes
_PAIR = re.compile(r"\s*([A-Za-z_]+)\s*=\s*(?:'((?:[^'\\]|\\.)*)'|((?:[^\s'\\]|\\.)(?:[^\s\\]|\\.)*)?)")
_SECRET_KEY = re.compile(r"(?:ssl)?password", re.IGNORECASE)
_SECRET_QUERY = re.compile(r"([?&](?:ssl)?password=)([^&#]*)", re.IGNORECASE)
_SHORTEST_CLEANED = 3  # a shorter password is no secret, and replacing it would garble every message


def is_key_value(location: str) -> bool:
    """Whether a location is a libpq key/value connection string (`host=… dbname=…`), well formed or not."""
    first = _FIRST_KEY.match(location)
    return first is not None and first.group(1) in LIBPQ_KEYS


def is_dsn(location: object) -> bool:
    """Whether a database location names a PostgreSQL server: a postgresql:// URL or a key/value string."""
    return isinstance(location, str) and (location.startswith(URL_SCHEMES) or is_key_value(location))


def key_value_pairs(dsn: str) -> list[re.Match[str]] | None:
    """The pairs of a key/value connection string as libpq reads them, or None when it is not well formed."""
    pairs, at = [], 0
    while at < len(dsn.rstrip()):
        found = _PAIR.match(dsn, at)
        if found is None or found.end() == at:
            return None
        pairs.append(found)
        at = found.end()
    return pairs


def _pair_value(pair: re.Match[str]) -> tuple[str, int, int]:
    group = 2 if pair.group(2) is not None else 3
    return pair.group(group) or "", pair.start(group), pair.end(group)


def _url_parts(url: str) -> tuple[int, int, int]:
    """Where a URL's userinfo password starts and ends (equal when it has none), and where its query starts.

    A password should be percent-encoded, but one written raw may hold `@`, `/` or `?`: the userinfo ends at
    the last `@` before the path or before the query, whichever reaches further, so all of it is found.
    """
    start = url.index("://") + 3
    ends = [url.find(mark, start) for mark in "/?"]
    at = max(url.rfind("@", start, end if end != -1 else len(url)) for end in ends)
    colon = url.find(":", start, at) if at != -1 else -1
    query = url.find("?", max(at, start))
    query = len(url) if query == -1 else query
    return (colon + 1, at, query) if colon != -1 else (start, start, query)


def passwords(dsn: str) -> list[str]:
    """The passwords a connection string holds: as written, as the server gets them, and the parts libpq may quote."""
    found: list[str] = []
    if dsn.startswith(URL_SCHEMES):
        start, end, query = _url_parts(dsn)
        if end > start:  # libpq ends the password at its first @ and takes the rest for the host: both in messages
            found += [dsn[start:end], *dsn[start:end].split("@")]
        found += [m.group(2) for m in _SECRET_QUERY.finditer(dsn, query)]
    else:
        for pair in key_value_pairs(dsn) or []:
            if _SECRET_KEY.fullmatch(pair.group(1)):
                value = _pair_value(pair)[0]
                found += [value, re.sub(r"\\(.)", r"\1", value)]
    found += [urllib.parse.unquote(v) for v in found]
    return [v for v in dict.fromkeys(found) if v]


def redact_dsn(dsn: str) -> str:
    """The connection string with every password replaced by `***`, for messages (a URL or key/value form)."""
    if dsn.startswith(URL_SCHEMES):
        start, end, query = _url_parts(dsn)
        if end > start:
            dsn, query = dsn[:start] + MASK + dsn[end:], query - (end - start) + len(MASK)
        return dsn[:query] + _SECRET_QUERY.sub(rf"\1{MASK}", dsn[query:])
    pairs = key_value_pairs(dsn)
    if pairs is None:  # not readable as pairs: nothing after the first password key can be shown safely
        secret = re.search(r"(?:ssl)?password\s*=", dsn, re.IGNORECASE)
        return dsn if secret is None else dsn[: secret.end()] + MASK
    for pair in reversed(pairs):
        if _SECRET_KEY.fullmatch(pair.group(1)):
            _, start, end = _pair_value(pair)
            dsn = dsn[:start] + MASK + dsn[end:]
    return dsn


def clean_message(text: str, dsn: str) -> str:
    """A driver's message about `dsn` on one line, with the DSN's passwords removed in every form it holds."""
    for secret in sorted(passwords(dsn), key=len, reverse=True):
        if len(secret) >= _SHORTEST_CLEANED:
            text = text.replace(secret, MASK)
    return " ".join(text.split())


class PostgresBackend:
    """One psycopg connection in autocommit mode; writes run in explicit transactions that lock the run's row."""

    like = "ILIKE"  # PostgreSQL's LIKE is case-sensitive; the library's search is not
    lock_row = " FOR UPDATE"  # a second writer of the same run waits here, then sees the first one's revision
    answered_by = (
        "CASE WHEN models = '[]' THEN provider = ? ELSE EXISTS "
        "(SELECT 1 FROM jsonb_array_elements(models::jsonb) AS m(value) WHERE m.value ->> 0 = ?) END"
    )
    providers_sql = (
        "SELECT provider FROM runs WHERE models = '[]'{visible} "
        "UNION SELECT m.value ->> 0 FROM runs, jsonb_array_elements(runs.models::jsonb) AS m(value) "
        "WHERE 1 = 1{visible} ORDER BY 1"
    )

    def __init__(self, url: str) -> None:
        if not url.startswith(URL_SCHEMES) and key_value_pairs(url) is None:
            raise ValueError(
                "not a key/value connection string: each setting is key=value, a value with spaces in quotes"
            )
        for secret in passwords(url):
            register_secret(secret)  # removed from whatever is printed, shown or saved from now on
        self.url = url
        self.path = url
        self.location = redact_dsn(url)
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

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement written with `?` placeholders once for each row of values, sent together (psycopg's
        pipeline), not a round trip a row."""
        if rows:
            with self._live().cursor() as cursor:
                cursor.executemany(sql.replace("?", "%s"), rows)

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

"""The runs database's schema: the migrations that build it, one version at a time, and the SQL written once.

Each entry of MIGRATIONS moves the schema one version up; a released entry is never edited, a new one is appended.
The statements use `?` placeholders; the PostgreSQL backend turns them into its own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..errors import AgentcoreError
from ..secrets import redact_fields
from ..steps import ModelRef, describe_models, models_label
from ..transcript import json_text
from .kept import UNCOUNTED

# Each entry moves the schema one version up; never edit a released entry, append a new one.
MIGRATIONS: list[tuple[str, ...]] = [
    (
        """CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            title TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            steps INTEGER NOT NULL,
            messages INTEGER NOT NULL,
            stop_reason TEXT,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cost_usd REAL,
            duration_ms REAL NOT NULL,
            parent_id TEXT,
            parent_step INTEGER,
            search_text TEXT NOT NULL,
            revision INTEGER NOT NULL,
            body TEXT NOT NULL
        )""",
        """CREATE TABLE steps (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (run_id, idx)
        ) WITHOUT ROWID""",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ),
    (
        "CREATE INDEX runs_by_update ON runs(updated_at DESC)",
        "CREATE INDEX runs_by_parent ON runs(parent_id)",
        "CREATE INDEX runs_by_provider ON runs(provider)",
    ),
    # who answered the steps, [[provider, model], ...] in step order; '[]' for a row written before it was kept
    ("ALTER TABLE runs ADD COLUMN models TEXT NOT NULL DEFAULT '[]'",),
    # who saved the run first; NULL for a row written before owners were kept, which anyone may delete
    ("ALTER TABLE runs ADD COLUMN owner TEXT", "CREATE INDEX runs_by_owner ON runs(owner)"),
    # people's labels on steps, kept beside the run (not in its body): labelling is not a new revision of it
    (
        """CREATE TABLE annotations (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            id TEXT NOT NULL,
            step INTEGER NOT NULL,
            author TEXT,
            created_at TEXT NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (run_id, id)
        ) WITHOUT ROWID""",
    ),
    # each `agentcore test` that writes to the database: when, which files and configurations, each cell's trials
    (
        """CREATE TABLE experiments (
            id TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            owner TEXT,
            body TEXT NOT NULL
        )""",
        "CREATE INDEX experiments_by_time ON experiments(created_at DESC)",
    ),
    # each run's tokens, cost and step latencies per answering model (figures.RunFigures), for the library's
    # statistics; NULL for a row written before they were kept, counted from its steps when first asked for
    # and which scanners (agentcore.store.scanners) read which revision of each run, so a scan skips what it has read
    (
        "ALTER TABLE runs ADD COLUMN figures TEXT",
        "CREATE INDEX runs_by_creation ON runs(created_at)",
        """CREATE TABLE scans (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            scanner TEXT NOT NULL,
            revision INTEGER NOT NULL,
            version TEXT NOT NULL,
            PRIMARY KEY (run_id, scanner)
        ) WITHOUT ROWID""",
    ),
    # the same figures as rows the database adds up (kept.py): one per answering model of each run, one per step's
    # latency, each with the run's day, owner and ending (`provider_first`: the run's first row of its provider, so
    # that a run is counted once per provider without DISTINCT), the latencies in the order of each grouping, so a
    # quantile is an index read; `figured` is set once a run's rows are written, and a
    # library saved before them is counted when its statistics are first asked for (kept.UNCOUNTED: those runs)
    (
        """CREATE TABLE run_models (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            day TEXT NOT NULL,
            owner TEXT,
            stop_reason TEXT,
            provider_first INTEGER NOT NULL,
            steps INTEGER NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cache_read_tokens INTEGER NOT NULL,
            cache_write_tokens INTEGER NOT NULL,
            cost_usd REAL,
            estimated INTEGER NOT NULL,
            PRIMARY KEY (run_id, position)
        ) WITHOUT ROWID""",
        """CREATE TABLE step_latencies (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            day TEXT NOT NULL,
            owner TEXT,
            latency_ms REAL NOT NULL,
            PRIMARY KEY (run_id, idx)
        ) WITHOUT ROWID""",
        "CREATE INDEX latencies_by_model ON step_latencies(provider, model, latency_ms)",
        "CREATE INDEX latencies_by_provider ON step_latencies(provider, latency_ms)",
        "CREATE INDEX latencies_by_day ON step_latencies(day, latency_ms)",
        "CREATE INDEX latencies_by_owner ON step_latencies(owner, latency_ms)",
        "ALTER TABLE runs ADD COLUMN figured INTEGER",
        f"CREATE INDEX runs_uncounted ON runs(id) WHERE {UNCOUNTED}",
    ),
    # a step's request and reply bodies as bytes, as its client sent and received them (store/exchanges.py)
    (
        """CREATE TABLE exchanges (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            request BLOB NOT NULL,
            reply BLOB NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (run_id, idx)
        ) WITHOUT ROWID""",
    ),
]
SCHEMA_VERSION = len(MIGRATIONS)

SUMMARY_COLUMNS = (
    "id, title, created_at, updated_at, provider, model, steps, messages, stop_reason, "
    "input_tokens, output_tokens, cost_usd, duration_ms, parent_id, parent_step, owner, models"
)
UPDATED = (
    "title, created_at, updated_at, provider, model, steps, messages, stop_reason, input_tokens, "
    "output_tokens, cost_usd, duration_ms, parent_id, parent_step, search_text, body, models, figures"
)
INSERT = f"INSERT INTO runs (id, {UPDATED}, revision, owner) VALUES ({', '.join('?' * 21)}) ON CONFLICT (id) DO NOTHING"
UPDATE = f"UPDATE runs SET {', '.join(c + ' = ?' for c in UPDATED.split(', '))}, revision = ? WHERE id = ?"
PUT_ANNOTATION = (
    "INSERT INTO annotations (run_id, id, step, author, created_at, body) VALUES (?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (run_id, id) DO NOTHING"
)
ANNOTATIONS_OF = "SELECT body FROM annotations WHERE run_id = ? ORDER BY step, created_at, id"
PUT_STEP = "INSERT INTO steps (run_id, idx, body) VALUES (?, ?, ?) ON CONFLICT (run_id, idx) DO UPDATE SET body = excluded.body"


class StoreError(AgentcoreError):
    """The runs database cannot be used, or a run is not in it."""


class RunChanged(StoreError):
    """Another session saved the run since this one read or saved it: saving now would erase that session's work.

    Reload the run to go on from what is stored, or `run.fork(...)` to keep these changes as a new run.
    """


def dump(data: Any) -> str:
    return json_text(redact_fields(data), separators=(",", ":"))  # the writer removes every known secret


UNSTORABLE = re.compile("[\ud800-\udfff\x00]")


def plain(text: str | None) -> str | None:
    # a summary column is plain text: SQLite cannot store a lone surrogate, PostgreSQL neither that nor a NUL;
    # the body is JSON, which escapes both and keeps them exactly
    return UNSTORABLE.sub("\ufffd", text) if text else text


@dataclass(frozen=True)
class RunSummary:
    """One row of the runs library: what the list shows without loading the transcript.

    `models` are the providers and models that answered the steps, in step order (the configured one
    before a step); `provider` and `model` say them in words, joined by arrows for a mixed run:
    `local → scripted`, `SmolLM2 → weather`.
    """

    id: str
    title: str | None
    created_at: str
    updated_at: str
    provider: str
    model: str
    steps: int
    messages: int
    stop_reason: str | None
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    duration_ms: float
    parent_id: str | None
    parent_step: int | None
    owner: str | None = None
    models: tuple[ModelRef, ...] = ()

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def mixed(self) -> bool:
        """Whether more than one provider or model answered the steps."""
        return len(self.models) > 1

    @property
    def models_label(self) -> str:
        """Who answered, `provider/model` joined by arrows in step order."""
        return models_label(self.models)

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> RunSummary:
        """A summary from the columns of SUMMARY_COLUMNS."""
        *columns, models_json = row
        models = [ModelRef(str(p), str(m)) for p, m in json.loads(models_json or "[]")]
        models = models or [ModelRef(columns[4], columns[5])]
        columns[4], columns[5] = describe_models(models)
        return cls(*columns, models=tuple(models))

"""The runs library: every run saved in an embedded SQLite database as it happens.

One row per run holds the run without its steps plus the summary columns the
library lists; one row per step holds that step's record. Saving rewrites the
run row and only the steps that changed, so saving after every phase of a long
run stays cheap even though each step carries its whole wire request. Each save
is one transaction in WAL mode: a killed process loses at most the phase in flight.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .accounting import run_cost
from .errors import AgentcoreError
from .loop import Event, Observer
from .messages import UserMessage
from .run import ModelRef, Run, StepRecord, describe_models, models_label
from .secrets import redact_fields, scrub_text
from .transcript import FORMAT, VERSION, from_dict, json_text

DEFAULT_PATH = Path("~/.agentcore/runs.db")
LAST_RUN_KEY = "last_run_viewed"

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
]
SCHEMA_VERSION = len(MIGRATIONS)

_SUMMARY_COLUMNS = (
    "id, title, created_at, updated_at, provider, model, steps, messages, stop_reason, "
    "input_tokens, output_tokens, cost_usd, duration_ms, parent_id, parent_step, models"
)
_ROW_COLUMNS = (
    "id, title, created_at, updated_at, provider, model, steps, messages, stop_reason, input_tokens, "
    "output_tokens, cost_usd, duration_ms, parent_id, parent_step, search_text, revision, body, models"
)
# a run's providers are those that answered its steps; before a step recorded one, its configured provider
_ANSWERED_BY = (
    "CASE WHEN models = '[]' THEN provider = ? "
    "ELSE EXISTS (SELECT 1 FROM json_each(models) WHERE json_extract(value, '$[0]') = ?) END"
)
_PROVIDERS = (
    "SELECT provider FROM runs WHERE models = '[]' "
    "UNION SELECT json_extract(m.value, '$[0]') FROM runs, json_each(runs.models) AS m ORDER BY 1"
)


class StoreError(AgentcoreError):
    """The runs database cannot be used, or a run is not in it."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def default_path() -> Path:
    """AGENTCORE_DB if set, else ~/.agentcore/runs.db."""
    env = os.environ.get("AGENTCORE_DB")
    return Path(env).expanduser() if env else DEFAULT_PATH.expanduser()


def _dump(data: Any) -> str:
    return json_text(redact_fields(data), separators=(",", ":"))  # the writer removes every known secret


_SURROGATE = re.compile("[\ud800-\udfff]")


def _plain(text: str | None) -> str | None:
    # a summary column is plain text for SQLite, which cannot store a lone surrogate; the body keeps it exactly
    return _SURROGATE.sub("\ufffd", text) if text and not text.isascii() else text


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
        """A summary from the columns of _SUMMARY_COLUMNS."""
        *columns, models_json = row
        models = [ModelRef(str(p), str(m)) for p, m in json.loads(models_json or "[]")]
        models = models or [ModelRef(columns[4], columns[5])]
        columns[4], columns[5] = describe_models(models)
        return cls(*columns, models=tuple(models))


@dataclass
class ForkNode:
    """A run in a fork tree, with the runs forked from it."""

    run: RunSummary
    children: list[ForkNode] = field(default_factory=list)

    def walk(self, depth: int = 0):
        """Every node of the tree, depth first, with its depth."""
        yield self, depth
        for child in self.children:
            yield from child.walk(depth + 1)


@dataclass
class _Written:
    revision: int
    steps: list[tuple[StepRecord, tuple[Any, ...], str]]


def _signature(step: StepRecord) -> tuple[Any, ...]:
    # a saved step changes in place only by gaining tool runs; a replaced step is a new object
    return (id(step), len(step.tool_runs), id(step.wire), step.usage, step.finish_reason, step.message_count)


class Store:
    """The runs database. Safe to share between threads; every write is one transaction."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else default_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.execute("PRAGMA secure_delete=ON")  # a deleted run leaves no readable trace
            self._migrate()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open the runs database: {exc}") from None
        self._lock = threading.RLock()
        self._written: OrderedDict[str, _Written] = OrderedDict()

    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: schema version {version} is newer than this agentcore reads")
        for number in range(version, SCHEMA_VERSION):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for statement in MIGRATIONS[number]:
                    self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {number + 1}")
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    @property
    def schema_version(self) -> int:
        return self._db.execute("PRAGMA user_version").fetchone()[0]

    def close(self) -> None:
        """Close the connection; the store cannot be used afterwards."""
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- runs --------------------------------------------------------------------------

    def save_run(self, run: Run) -> None:
        """Insert or replace the whole run in one transaction, rewriting only the steps that changed."""
        body = run.model_dump(mode="json", exclude={"steps"})
        body_text = _dump({"format": FORMAT, "version": VERSION, **body})
        first_prompt = next((m.content for m in run.messages if isinstance(m, UserMessage)), "")
        usage = run.usage
        row = {
            "id": run.id,
            "title": _plain(scrub_text(run.title)) if run.title else run.title,
            "created_at": run.created_at,
            "updated_at": _now(),
            "provider": run.config.provider,
            "model": run.config.model,
            "steps": len(run.steps),
            "messages": len(run.messages),
            "stop_reason": run.stop_reason,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cost_usd": run_cost(run),
            "duration_ms": run.duration_ms,
            "parent_id": run.parent.run_id if run.parent else None,
            "parent_step": run.parent.step if run.parent else None,
            "search_text": scrub_text(_plain(first_prompt[:2000])),
            "body": body_text,
            "models": _dump([list(m) for m in run.models]),
        }
        with self._transaction() as db:
            found = db.execute("SELECT revision FROM runs WHERE id = ?", (run.id,)).fetchone()
            revision = (found[0] if found else 0) + 1
            written = self._written.get(run.id)
            if written is None or found is None or written.revision != found[0]:
                written = _Written(revision, [])  # another writer was here: rewrite every step
            db.execute(
                f"INSERT OR REPLACE INTO runs ({_ROW_COLUMNS}) VALUES (:id, :title, :created_at, :updated_at, "
                ":provider, :model, :steps, :messages, :stop_reason, :input_tokens, :output_tokens, :cost_usd, "
                ":duration_ms, :parent_id, :parent_step, :search_text, :revision, :body, :models)"
                if found is None
                else "UPDATE runs SET title=:title, created_at=:created_at, updated_at=:updated_at, "
                "provider=:provider, model=:model, steps=:steps, messages=:messages, stop_reason=:stop_reason, "
                "input_tokens=:input_tokens, output_tokens=:output_tokens, cost_usd=:cost_usd, "
                "duration_ms=:duration_ms, parent_id=:parent_id, parent_step=:parent_step, "
                "search_text=:search_text, revision=:revision, body=:body, models=:models WHERE id=:id",
                {**row, "revision": revision},
            )
            kept: list[tuple[StepRecord, tuple[Any, ...], str]] = []
            for i, step in enumerate(run.steps):
                sig = _signature(step)
                old = written.steps[i] if i < len(written.steps) else None
                if old is not None and old[0] is step and old[1] == sig:
                    kept.append(old)
                    continue
                text = _dump(step.model_dump(mode="json"))
                db.execute("INSERT OR REPLACE INTO steps VALUES (?, ?, ?)", (run.id, i, text))
                kept.append((step, sig, text))
            db.execute("DELETE FROM steps WHERE run_id = ? AND idx >= ?", (run.id, len(run.steps)))
        self._remember(run.id, _Written(revision, kept))

    def _remember(self, run_id: str, written: _Written) -> None:
        with self._lock:
            self._written[run_id] = written
            self._written.move_to_end(run_id)
            while len(self._written) > 16:
                self._written.popitem(last=False)

    def load_data(self, run_id: str) -> dict[str, Any]:
        """The stored run as transcript JSON data (what an export writes)."""
        with self._lock:
            found = self._db.execute("SELECT body FROM runs WHERE id = ?", (run_id,)).fetchone()
            if found is None:
                raise StoreError(f"no run {run_id!r} in {self.path}")
            steps = self._db.execute("SELECT body FROM steps WHERE run_id = ? ORDER BY idx", (run_id,)).fetchall()
        data = json.loads(found[0])
        data["steps"] = [json.loads(s[0]) for s in steps]
        return data

    def load_run(self, run_id: str) -> Run:
        """The stored run, exactly as last saved (wire headers redacted)."""
        run = from_dict(self.load_data(run_id), check_messages=False)
        with self._lock:
            found = self._db.execute("SELECT revision FROM runs WHERE id = ?", (run_id,)).fetchone()
        if found is not None:
            self._remember(run_id, _Written(found[0], []))
        return run

    def exists(self, run_id: str) -> bool:
        """Whether a run with this id is stored."""
        with self._lock:
            return self._db.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is not None

    def summary(self, run_id: str) -> RunSummary | None:
        """One run's library row, or None."""
        with self._lock:
            row = self._db.execute(f"SELECT {_SUMMARY_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        return RunSummary.from_row(row) if row else None

    def list_runs(self, search: str | None = None, provider: str | None = None, limit: int = 500) -> list[RunSummary]:
        """Runs, most recently saved first; `search` matches id, title, models and the first prompt.

        `provider` keeps the runs it answered a step of (or, before a step, is configured for).
        """
        where, params = [], []
        if search and search.strip():
            for word in search.split():
                escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                where.append(
                    "(id || ' ' || coalesce(title, '') || ' ' || model || ' ' || models || ' ' || search_text) "
                    "LIKE ? ESCAPE '\\'"
                )
                params.append(f"%{escaped}%")
        if provider:
            where.append(_ANSWERED_BY)
            params += [provider, provider]
        sql = f"SELECT {_SUMMARY_COLUMNS} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated_at DESC, id LIMIT ?"
        with self._lock:
            rows = self._db.execute(sql, (*params, int(limit))).fetchall()
        return [RunSummary.from_row(r) for r in rows]

    def providers(self) -> list[str]:
        """The providers that answered the stored runs' steps, for the library's filter."""
        with self._lock:
            return [r[0] for r in self._db.execute(_PROVIDERS)]

    def delete_run(self, run_id: str) -> None:
        """Delete a run and its steps; runs forked from it stay, pointing at a missing parent."""
        with self._transaction() as db:
            if db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount == 0:
                raise StoreError(f"no run {run_id!r} in {self.path}")
            db.execute("DELETE FROM steps WHERE run_id = ?", (run_id,))
        with self._lock:
            self._written.pop(run_id, None)

    def set_title(self, run_id: str, title: str) -> None:
        """Rename a run."""
        title = scrub_text(title.strip())
        if not title:
            raise StoreError("a title cannot be empty")
        with self._transaction() as db:
            changed = db.execute(
                "UPDATE runs SET title = ?, body = json_set(body, '$.title', ?), updated_at = ? WHERE id = ?",
                (title, title, _now(), run_id),
            ).rowcount
            if changed == 0:
                raise StoreError(f"no run {run_id!r} in {self.path}")

    def import_run(self, run: Run) -> Run:
        """Store an imported run; an id already taken (or not a plain id) gets a fresh one, so nothing is overwritten."""
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", run.id) or self.exists(run.id):
            run = run.model_copy(update={"id": Run().id})
        self.save_run(run)
        return run

    # -- lineage -----------------------------------------------------------------------

    def children(self, run_id: str) -> list[RunSummary]:
        """The runs forked directly from this one, oldest first."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_SUMMARY_COLUMNS} FROM runs WHERE parent_id = ? ORDER BY created_at, id", (run_id,)
            ).fetchall()
        return [RunSummary.from_row(r) for r in rows]

    def lineage(self, run_id: str) -> list[RunSummary]:
        """The run and its stored ancestors, root first; stops at a parent that is no longer stored."""
        chain: list[RunSummary] = []
        seen: set[str] = set()
        current: str | None = run_id
        while current is not None and current not in seen:
            seen.add(current)
            summary = self.summary(current)
            if summary is None:
                break
            chain.append(summary)
            current = summary.parent_id
        return list(reversed(chain))

    def fork_tree(self, run_id: str) -> ForkNode | None:
        """The whole fork tree the run belongs to, from its oldest stored ancestor down."""
        chain = self.lineage(run_id)
        if not chain:
            return None
        root = ForkNode(chain[0])
        seen = {root.run.id}
        todo = [root]
        while todo:
            node = todo.pop()
            for child in self.children(node.run.id):
                if child.id not in seen:  # an imported cycle must not loop forever
                    seen.add(child.id)
                    node.children.append(ForkNode(child))
                    todo.append(node.children[-1])
        return root

    # -- meta ----------------------------------------------------------------------------

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        """A stored setting, such as the last run the user viewed."""
        with self._lock:
            found = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return found[0] if found else default

    def set_meta(self, key: str, value: str) -> None:
        """Store a setting."""
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(value)))

    # -- saving as a run goes ----------------------------------------------------------

    def saver(self, run: Run) -> Observer:
        """An observer that saves `run` after every completed phase, error and the run's end."""

        def observe(event: Event) -> None:
            if event.run_id == run.id and event.kind in ("phase_finished", "step_finished", "error", "run_finished"):
                self.save_run(run)

        return observe

    def check(self) -> str:
        """SQLite's integrity check: "ok" for a sound database."""
        with self._lock:
            return self._db.execute("PRAGMA integrity_check").fetchone()[0]

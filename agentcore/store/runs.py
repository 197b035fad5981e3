"""The runs library: every run saved as it happens, in SQLite (the default) or PostgreSQL (`postgresql://…`).

One row per run holds the run without its steps plus the summary columns the
library lists; one row per step holds that step's record. Saving rewrites the
run row and only the steps that changed, so saving after every phase of a long
run stays cheap even though each step carries its whole wire request. Each save
is one transaction: a killed process loses at most the phase in flight.

The SQL here is written once, with `?` placeholders; what the two databases say
differently (connecting, the schema version, JSON functions, row locks) lives in
sqlite.py and postgres.py. Each run row has a revision: a save that
started from an older revision than the stored one is refused (see `RunChanged`),
so two sessions saving the same run never silently lose one's work.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..annotations import MAX_NOTE_CHARS, Annotation
from ..messages import UserMessage
from ..run import Run
from ..secrets import scrub_text
from ..steps import StepRecord
from ..transcript import FORMAT, VERSION, from_dict
from .access import Viewer, default_owner, is_teacher
from .exchanges import ExchangesTable
from .experiments import ExperimentsTable
from .figures import RunFigures
from .kept import FiguresTable, keep_rows
from .labels import ALLOW_DELETE_OTHERS, LabelsTable, put_annotations
from .postgres import PostgresBackend, clean_message, is_dsn, redact_dsn
from .schema import (
    ANNOTATIONS_OF,
    INSERT,
    MIGRATIONS,
    PUT_STEP,
    SUMMARY_COLUMNS,
    UPDATE,
    RunChanged,
    RunSummary,
    StoreError,
    dump,
    plain,
)
from .sqlite import SqliteBackend

if TYPE_CHECKING:  # the store saves runs; it never drives the loop
    from ..loop import Event, Observer

DEFAULT_PATH = Path("~/.agentcore/runs.db")
LAST_RUN_KEY = "last_run_viewed"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def is_url(location: str | Path) -> bool:
    """Whether a database location names a PostgreSQL server (a postgresql:// URL or a libpq key/value string,
    `host=… dbname=…`) rather than a SQLite file."""
    return is_dsn(location)


def default_path() -> Path | str:
    """AGENTCORE_DB if set (a file path, a postgresql:// URL or a key/value string), else ~/.agentcore/runs.db."""
    env = os.environ.get("AGENTCORE_DB")
    if env and is_url(env):
        return env
    return Path(env).expanduser() if env else DEFAULT_PATH.expanduser()


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


class Store(LabelsTable, ExperimentsTable, FiguresTable, ExchangesTable):
    """The runs database: a SQLite file, or a PostgreSQL server for a `postgresql://` URL or key/value string.

    Safe to share between threads; every write is one transaction. `owner` (default: AGENTCORE_USER or the
    login name) is recorded on the runs this Store saves first, and is whose runs `delete_run` and `set_title`
    may delete and rename. Every read sees only the runs `viewer` may (agentcore.store.access): with private
    runs on, a student's own; `teacher` (default: whether AGENTCORE_TEACHERS names the owner) sees all.
    """

    def __init__(
        self, path: str | Path | None = None, *, owner: str | None = None, teacher: bool | None = None
    ) -> None:
        where = path if path is not None else default_path()
        server = is_url(where)
        backend = PostgresBackend if server else SqliteBackend
        self.location = redact_dsn(where) if server else str(Path(where).expanduser())
        self.owner = owner or default_owner()
        self.teacher = teacher  # None: as AGENTCORE_TEACHERS says of the owner
        try:
            self._backend = backend(where if server else Path(where).expanduser())
            self._backend.migrate(MIGRATIONS, self._newer)
        except ImportError as exc:
            raise StoreError(f"{self.location}: {exc}") from None
        except ValueError as exc:  # a connection string that cannot be read: the driver is not asked
            raise StoreError(f"{self.location}: {exc}") from None
        except (*backend.errors(), OSError) as exc:
            # PostgreSQL's message runs over lines, and a malformed URL's quotes the part that holds the password
            detail = clean_message(str(exc), where) if server else " ".join(str(exc).split())
            raise StoreError(f"{self.location}: cannot open the runs database: {detail}") from None
        self.path: Path | str = self._backend.path
        self._lock = threading.RLock()
        self._written: OrderedDict[str, _Written] = OrderedDict()
        self._revisions: dict[str, int] = {}  # the revision this Store last read or wrote, per run

    @property
    def viewer(self) -> Viewer:
        """Who reads through this Store, for the visibility rule."""
        return Viewer(self.owner, is_teacher(self.owner) if self.teacher is None else self.teacher)

    def _visible(self, column: str = "owner") -> tuple[str, tuple[str, ...]]:
        # " AND <condition>" for a query that already has a WHERE, with its parameters; "" when all runs are visible
        condition, params = self.viewer.clause(column)
        return (f" AND {condition}", params) if condition else ("", ())

    def _newer(self, version: int) -> StoreError:
        return StoreError(f"{self.location}: schema version {version} is newer than this agentcore reads")

    @property
    def schema_version(self) -> int:
        with self._lock:
            return self._backend.schema_version()

    @property
    def backend(self) -> str:
        """ "sqlite" or "postgresql"."""
        return "postgresql" if isinstance(self._backend, PostgresBackend) else "sqlite"

    def close(self) -> None:
        """Close the connection; the store cannot be used afterwards."""
        with self._lock:
            self._backend.close()

    def _one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        with self._lock:
            return self._backend.execute(sql, params).fetchone()

    def _all(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return list(self._backend.execute(sql, params).fetchall())

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        with self._lock, self._backend.transaction():
            yield self._backend

    def _no_run(self, run_id: str) -> StoreError:
        return StoreError(f"no run {run_id!r} in {self.location}")

    # -- runs --------------------------------------------------------------------------

    def save_run(self, run: Run, *, owner: str | None = None) -> None:
        """Insert or update the whole run in one transaction, rewriting only the steps that changed.

        Raises RunChanged, writing nothing, when another Store (another process or machine) saved the run
        after this one last read or wrote it. `owner` names who owns a run saved here for the first time.
        The run's annotations are not written here: `annotate` keeps each (`import_run`, an imported run's).
        """
        self._save(run, owner or self.owner, _now())

    def _save(self, run: Run, owner: str | None, updated_at: str, annotations: list[Annotation] = ()) -> None:
        # a run's annotations live in their own table (see annotate); `annotations` are an imported run's
        body = run.model_dump(mode="json", exclude={"steps", "annotations"})
        first_prompt = next((m.content for m in run.messages if isinstance(m, UserMessage)), "")
        usage = run.usage
        figures = RunFigures.of(run)  # priced once: the cost column is its total
        values = (
            plain(scrub_text(run.title)) if run.title else run.title,
            run.created_at,
            updated_at,
            run.config.provider,
            run.config.model,
            len(run.steps),
            len(run.messages),
            run.ending,  # what the library says: a reply cut at the output limit is no answer
            usage.input_tokens,
            usage.output_tokens,
            figures.cost_usd,
            run.duration_ms,
            run.parent.run_id if run.parent else None,
            run.parent.step if run.parent else None,
            scrub_text(plain(first_prompt[:2000])),
            dump({"format": FORMAT, "version": VERSION, **body}),
            dump([list(m) for m in run.models]),
            figures.to_json(),
        )
        with self._transaction() as db:
            found = db.execute(f"SELECT revision, owner FROM runs WHERE id = ?{db.lock_row}", (run.id,)).fetchone()
            known = self._revisions.get(run.id)
            if found is not None and known is not None and known != found[0]:
                raise RunChanged(
                    f"run {run.id} was saved elsewhere (revision {found[0]}) since this session read revision "
                    f"{known}: nothing was written; reload it to go on from what is stored, or fork it to keep "
                    "these changes as a new run"
                )
            revision = (found[0] if found else 0) + 1
            written = self._written.get(run.id)
            if written is None or found is None or written.revision != found[0]:
                written = _Written(revision, [])  # another writer was here: rewrite every step
            if found is not None:
                db.execute(UPDATE, (*values, revision, run.id))
            elif db.execute(INSERT, (run.id, *values, revision, owner)).rowcount == 0:
                raise RunChanged(f"run {run.id} was saved elsewhere at the same moment: nothing was written")
            kept: list[tuple[StepRecord, tuple[Any, ...], str]] = []
            for i, step in enumerate(run.steps):
                sig = _signature(step)
                old = written.steps[i] if i < len(written.steps) else None
                if old is not None and old[0] is step and old[1] == sig:
                    kept.append(old)
                    continue
                text = dump(step.model_dump(mode="json"))
                db.execute(PUT_STEP, (run.id, i, text))
                kept.append((step, sig, text))
            db.execute("DELETE FROM steps WHERE run_id = ? AND idx >= ?", (run.id, len(run.steps)))
            keep_rows(db, run.id, figures, run.created_at, found[1] if found else owner, run.ending)
            put_annotations(db, run.id, annotations)
        self._remember(run.id, _Written(revision, kept))

    def _remember(self, run_id: str, written: _Written) -> None:
        with self._lock:
            self._revisions[run_id] = written.revision
            self._written[run_id] = written
            self._written.move_to_end(run_id)
            while len(self._written) > 16:
                self._written.popitem(last=False)

    def load_data(self, run_id: str) -> dict[str, Any]:
        """The stored run as transcript JSON data (what an export writes)."""
        return self._load(run_id)[0]

    def _load(self, run_id: str, *, everyone: bool = False) -> tuple[dict[str, Any], int]:
        visible, params = ("", ()) if everyone else self._visible()
        with self._transaction() as db:  # the run row and its steps as of one moment
            found = db.execute(f"SELECT body, revision FROM runs WHERE id = ?{visible}", (run_id, *params)).fetchone()
            if found is None:
                raise self._no_run(run_id)
            steps = db.execute("SELECT body FROM steps WHERE run_id = ? ORDER BY idx", (run_id,)).fetchall()
            annotations = db.execute(ANNOTATIONS_OF, (run_id,)).fetchall()
        data = json.loads(found[0])
        data["steps"] = [json.loads(s[0]) for s in steps]
        if annotations:
            data["annotations"] = [json.loads(a[0]) for a in annotations]
        return data, found[1]

    def load_run(self, run_id: str) -> Run:
        """The stored run, exactly as last saved (wire headers redacted); this Store may save it over that revision."""
        data, revision = self._load(run_id)
        run = from_dict(data, check_messages=False)
        self._remember(run_id, _Written(revision, []))
        return run

    def read_run(self, run_id: str) -> Run:
        """The stored run to show, export or pin, read without claiming it: unlike load_run, this Store does not
        take its revision as the one it may save over (only opening a run to go on with it does that)."""
        return from_dict(self.load_data(run_id), check_messages=False)

    def exists(self, run_id: str) -> bool:
        """Whether a run with this id is stored and this Store's viewer may see it (else it reads as none)."""
        visible, params = self._visible()
        return self._one(f"SELECT 1 FROM runs WHERE id = ?{visible}", (run_id, *params)) is not None

    def _taken(self, run_id: str) -> bool:
        # whether any run, seen or not, has this id: what a new run's id must avoid, and nothing a reader is told
        return self._one("SELECT 1 FROM runs WHERE id = ?", (run_id,)) is not None

    def summary(self, run_id: str) -> RunSummary | None:
        """One run's library row, or None (also for a run this Store's viewer may not see)."""
        visible, params = self._visible()
        row = self._one(f"SELECT {SUMMARY_COLUMNS} FROM runs WHERE id = ?{visible}", (run_id, *params))
        return RunSummary.from_row(row) if row else None

    def list_runs(
        self,
        search: str | None = None,
        provider: str | None = None,
        limit: int = 500,
        *,
        owner: str | None = None,
        since: str | None = None,
    ) -> list[RunSummary]:
        """Runs, most recently saved first; `search` matches id, title, models and the first prompt.

        `provider` keeps the runs it answered a step of (or, before a step, is configured for); `owner` keeps
        that person's runs; `since` (an ISO time in UTC) the runs saved at or after it. Only the runs this
        Store's viewer may see are listed.
        """
        where, params = self._filters(search, provider, owner)
        if since:
            where.append("updated_at >= ?")
            params.append(since)
        sql = f"SELECT {SUMMARY_COLUMNS} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated_at DESC, id LIMIT ?"
        return [RunSummary.from_row(r) for r in self._all(sql, (*params, int(limit)))]

    def _filters(
        self, search: str | None, provider: str | None, owner: str | None, since: str | None = None
    ) -> tuple[list[str], list[Any]]:
        """The WHERE clauses and parameters of the library's filters, as the Runs page and the statistics read them:
        only the runs this Store's viewer may see, then the filters (`since`: created at or after it)."""
        where: list[str] = []
        params: list[Any] = []
        condition, visible = self.viewer.clause()
        if condition:
            where.append(condition)
            params += visible
        if search and search.strip():
            for word in search.split():
                escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                where.append(
                    "(id || ' ' || coalesce(title, '') || ' ' || model || ' ' || models || ' ' || search_text) "
                    f"{self._backend.like} ? ESCAPE '\\'"
                )
                params.append(f"%{escaped}%")
        if provider:
            where.append(self._backend.answered_by)
            params += [provider, provider]
        if owner:
            where.append("owner = ?")
            params.append(owner)
        if since:
            where.append("created_at >= ?")
            params.append(since)
        return where, params

    def fingerprint(self) -> tuple[Any, ...]:
        """What changes whenever a run this Store's viewer may see is saved, renamed or deleted: a page may keep what
        it read until it does. With `scope`, a key a cache shared between sessions can hold."""
        visible, params = self._visible()
        found = self._one(f"SELECT count(*), max(updated_at), max(revision) FROM runs WHERE 1 = 1{visible}", params)
        return (*self.viewer.scope, *(found or ()))

    def run_ids(
        self,
        search: str | None = None,
        provider: str | None = None,
        *,
        owner: str | None = None,
        since: str | None = None,
    ) -> list[str]:
        """The ids of every run the library's filters keep, oldest first (no limit: what a scan goes over)."""
        where, params = self._filters(search, provider, owner, since)
        sql = "SELECT id FROM runs" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY created_at, id"
        return [r[0] for r in self._all(sql, tuple(params))]

    def figures(
        self,
        search: str | None = None,
        provider: str | None = None,
        *,
        owner: str | None = None,
        since: str | None = None,
    ) -> list[tuple[RunSummary, RunFigures]]:
        """Every run the filters keep, oldest first, with its figures (figures.RunFigures).

        The figures are kept beside each run as it is saved; a row written before they were kept (or by an
        agentcore that counted otherwise) is counted from its steps here, once, and the count kept.
        """
        where, params = self._filters(search, provider, owner, since)
        sql = f"SELECT {SUMMARY_COLUMNS}, figures FROM runs"
        sql += (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY created_at, id"
        out, counted = [], []
        for *row, text in self._all(sql, tuple(params)):
            summary = RunSummary.from_row(tuple(row))
            figures = RunFigures.from_json(text)
            if figures is None:
                figures = RunFigures.of(self.read_run(summary.id))
                counted.append((figures.to_json(), summary.id))
            out.append((summary, figures))
        if counted:  # kept in one transaction: a library of old rows is counted once, not once per run
            with self._transaction() as db:
                for values in counted:
                    db.execute("UPDATE runs SET figures = ?, figured = NULL WHERE id = ?", values)  # rows: again
        return out

    def providers(self) -> list[str]:
        """The providers that answered the steps of the runs this Store's viewer may see, for the library's filter."""
        visible, params = self._visible()
        return [r[0] for r in self._all(self._backend.providers_sql.format(visible=visible), (*params, *params))]

    def owners(self) -> list[str]:
        """Everyone who owns a stored run this Store's viewer may see."""
        visible, params = self._visible()
        sql = f"SELECT DISTINCT owner FROM runs WHERE owner IS NOT NULL{visible} ORDER BY 1"
        return [r[0] for r in self._all(sql, params)]

    def change_mark(self) -> tuple[int, str | None]:
        """How many visible runs there are and when the newest was saved: it moves whenever any of them is saved,
        from any server on the same database, so a live page polls it and reads more only when it moved."""
        visible, params = self._visible()
        found = self._one(f"SELECT count(*), max(updated_at) FROM runs WHERE 1 = 1{visible}", params)
        return (int(found[0]), found[1]) if found else (0, None)

    def delete_run(self, run_id: str, *, user: str | None = None) -> None:
        """Delete a run and its steps; runs forked from it stay, pointing at a missing parent.

        Only the run's owner (`user`, default this Store's owner) may delete it (or rename it), unless the
        deployment sets AGENTCORE_ALLOW_DELETE_OTHERS=1; a run saved before owners were kept has none, and anyone may.
        """
        with self._transaction() as db:
            self._check_owner(db, run_id, user or self.owner, "delete")
            db.execute("DELETE FROM steps WHERE run_id = ?", (run_id,))
            db.execute("DELETE FROM annotations WHERE run_id = ?", (run_id,))
            db.execute("DELETE FROM scans WHERE run_id = ?", (run_id,))
            db.execute("DELETE FROM exchanges WHERE run_id = ?", (run_id,))
            db.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        with self._lock:
            self._written.pop(run_id, None)
            self._revisions.pop(run_id, None)

    def _check_owner(self, db: Any, run_id: str, user: str, action: str) -> None:
        # inside the caller's transaction, with the row locked: the owner cannot change before the write
        found = db.execute(f"SELECT owner FROM runs WHERE id = ?{db.lock_row}", (run_id,)).fetchone()
        if found is None or not self.viewer.may_see(found[0]):
            raise self._no_run(run_id)
        if found[0] not in (None, user) and os.environ.get(ALLOW_DELETE_OTHERS) != "1":
            raise StoreError(
                f"run {run_id} belongs to {found[0]}, not {user}: only its owner may {action} it "
                f"(a deployment that wants otherwise sets {ALLOW_DELETE_OTHERS}=1)"
            )

    def set_title(self, run_id: str, title: str, *, user: str | None = None) -> None:
        """Rename a run (not a new revision: a rename never conflicts with a session stepping the run).

        Only its owner (`user`, default this Store's owner) may, as for `delete_run`.
        """
        title = scrub_text(title.strip())
        if not title:
            raise StoreError("a title cannot be empty")
        with self._transaction() as db:
            self._check_owner(db, run_id, user or self.owner, "rename")
            found = db.execute("SELECT body FROM runs WHERE id = ?", (run_id,)).fetchone()
            body = {**json.loads(found[0]), "title": title}
            db.execute(
                "UPDATE runs SET title = ?, body = ?, updated_at = ? WHERE id = ?",
                (plain(title), dump(body), _now(), run_id),
            )

    def import_run(self, run: Run) -> Run:
        """Store an imported run; an id already taken (or not a plain id) gets a fresh one, so nothing is overwritten."""
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", run.id) or self._taken(run.id):
            run = run.model_copy(update={"id": Run().id})
        # a file names any author it likes: what it brings is labelled by whoever imports it, the name it gave kept
        # in the note, so no one's labels can be made in another's name (only an author removes a label)
        labels = [
            a
            if a.author in (None, self.owner)
            else Annotation.model_validate(
                {
                    **a.model_dump(),
                    "author": self.owner,
                    "note": f"[imported as {a.author}'s] {a.note}"[:MAX_NOTE_CHARS],
                }
            )
            for a in run.annotations
        ]
        run = run.model_copy(update={"annotations": labels})
        self._save(run, self.owner, _now(), run.annotations)
        return run

    def copy_from(self, source: Store) -> tuple[int, int]:
        """Copy every run of `source` that this store lacks, keeping ids, owners and times; (copied, skipped)."""
        copied = skipped = 0
        for run_id, owner, updated_at in source._all("SELECT id, owner, updated_at FROM runs ORDER BY created_at, id"):
            if self._taken(run_id):
                skipped += 1
                continue
            run = from_dict(source._load(run_id, everyone=True)[0], check_messages=False)
            self._save(run, owner, updated_at, run.annotations)
            copied += 1
        return copied, skipped

    # -- lineage -----------------------------------------------------------------------

    def children(self, run_id: str) -> list[RunSummary]:
        """The runs forked directly from this one, oldest first."""
        visible, params = self._visible()
        sql = f"SELECT {SUMMARY_COLUMNS} FROM runs WHERE parent_id = ?{visible} ORDER BY created_at, id"
        rows = self._all(sql, (run_id, *params))
        return [RunSummary.from_row(r) for r in rows]

    def same_prompt(self, run_id: str, limit: int = 20) -> list[RunSummary]:
        """Other runs begun with the same first prompt as this one (the same task), most recently saved first; none
        for a run this Store's viewer may not see."""
        visible, params = self._visible()
        prompt = f"SELECT search_text FROM runs WHERE id = ?{visible}"
        sql = (
            f"SELECT {SUMMARY_COLUMNS} FROM runs WHERE id <> ? AND search_text <> '' AND search_text = ({prompt})"
            f"{visible} ORDER BY updated_at DESC, id LIMIT ?"
        )
        return [RunSummary.from_row(r) for r in self._all(sql, (run_id, run_id, *params, *params, int(limit)))]

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
        found = self._one("SELECT value FROM meta WHERE key = ?", (key,))
        return found[0] if found else default

    def set_meta(self, key: str, value: str) -> None:
        """Store a setting."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, str(value)),
            )

    # -- saving as a run goes ----------------------------------------------------------

    def saver(self, run: Run) -> Observer:
        """An observer that saves `run` after every completed phase, error and the run's end."""

        def observe(event: Event) -> None:
            if event.run_id == run.id and event.kind in ("phase_finished", "step_finished", "error", "run_finished"):
                self.save_run(run)

        return observe

    def check(self) -> str:
        """The database's own consistency check: "ok" for a sound one."""
        with self._lock:
            return self._backend.check()

"""People's labels and scanners' findings on the steps of stored runs, and which revision each scanner read.

Labels live in their own table beside the run, not in its body: labelling is never a new revision of the run, so
it never conflicts with a session stepping it. Every read goes through the viewer's rule (access.py), as the runs'
own do. The Store has these methods (LabelsTable is one of its parts).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from pydantic_core import from_json

from ..annotations import JUDGE_PREFIX, SCANNER_PREFIX, Annotation, by_scanner, check_target, step_calls
from ..transcript import from_dict
from .schema import ANNOTATIONS_OF, PUT_ANNOTATION, SUMMARY_COLUMNS, RunSummary, StoreError, dump, plain

if TYPE_CHECKING:
    from ..run import Run
    from .runs import Store

ALLOW_DELETE_OTHERS = "AGENTCORE_ALLOW_DELETE_OTHERS"


class StoredRun:
    """A run as the database holds it: its body's, its steps' and its annotations' JSON texts."""

    __slots__ = ("annotations", "body", "steps")

    def __init__(self, body: str) -> None:
        self.body, self.steps, self.annotations = body, [], []

    def run(self) -> Run:
        """The Run these texts hold, read as `Store.read_run` reads one (its stored figures trusted, not measured)."""
        data = _loaded(self.body)
        data["steps"] = [_loaded(step) for step in self.steps]
        if self.annotations:
            data["annotations"] = [json.loads(a) for a in self.annotations]
        return from_dict(data, check_messages=False, stored=True)


def annotation_row(run_id: str, a: Annotation) -> tuple[Any, ...]:
    """The values PUT_ANNOTATION writes for one annotation of a run."""
    return (run_id, a.id, a.step, plain(a.author), plain(a.created_at), dump(a.model_dump(mode="json")))


def put_annotations(db: Any, run_id: str, annotations: list[Annotation]) -> None:
    db.executemany(PUT_ANNOTATION, [annotation_row(run_id, a) for a in annotations])


SOURCES = ("people", "scanners")  # whose labels an error analysis counts; a scanner's name counts its own alone


def _from(annotation: Annotation, source: str) -> bool:
    scanner = by_scanner(annotation)
    if source == "people":
        return not scanner
    if source == "scanners":
        return scanner
    if source.startswith(JUDGE_PREFIX):
        return annotation.author == source
    return annotation.author == SCANNER_PREFIX + source.removeprefix(SCANNER_PREFIX)


def _loaded(body: str) -> Any:
    # pydantic's JSON reader takes a run's body in a little over half json's time, but refuses a lone surrogate
    # escape (a text such as "\ud800", which json writes and reads back)
    try:
        return from_json(body)
    except ValueError:
        return json.loads(body)


class LabelsTable:
    """The Store's labels and scans: annotate a step, read and remove labels, keep a scanner's findings."""

    def annotate(self: Store, run_id: str, annotation: Annotation, *, user: str | None = None) -> Annotation:
        """Keep a person's label on a step, or a tool call, of a stored run; returns it with its author.

        Not a new revision of the run: labelling never conflicts with a session stepping it. Anyone may label
        any run (an error analysis is a team's); the author is `user`, default this Store's owner. A step the
        run does not have, or a call that step did not make, is a UsageError.
        """
        run = self.read_run(run_id)
        step = run.steps[annotation.step - 1] if annotation.step <= len(run.steps) else None
        calls = step_calls(run.messages, step.message_count) if step is not None else ()
        check_target(annotation, len(run.steps), [c.id for c in calls])
        annotation = annotation.model_copy(update={"author": user or self.owner})
        with self._transaction() as db:
            if db.execute(f"SELECT 1 FROM runs WHERE id = ?{db.lock_row}", (run_id,)).fetchone() is None:
                raise self._no_run(run_id)
            put_annotations(db, run_id, [annotation])
        return annotation

    def annotations(self: Store, run_id: str) -> list[Annotation]:
        """The run's annotations, by step, oldest first (none for a run this Store's viewer may not see)."""
        if self.summary(run_id) is None:
            return []
        return [Annotation.model_validate_json(r[0]) for r in self._all(ANNOTATIONS_OF, (run_id,))]

    def delete_annotation(self: Store, run_id: str, annotation_id: str, *, user: str | None = None) -> None:
        """Remove an annotation; only its author (`user`, default this Store's owner) may, as for `delete_run`."""
        user = user or self.owner
        visible, params = self._visible()
        with self._transaction() as db:
            if db.execute(f"SELECT 1 FROM runs WHERE id = ?{visible}", (run_id, *params)).fetchone() is None:
                raise self._no_run(run_id)
            sql = f"SELECT author FROM annotations WHERE run_id = ? AND id = ?{db.lock_row}"
            found = db.execute(sql, (run_id, annotation_id)).fetchone()
            if found is None:
                raise StoreError(f"run {run_id} has no annotation {annotation_id[:64]!r}")
            if found[0] not in (None, user) and os.environ.get(ALLOW_DELETE_OTHERS) != "1":
                raise StoreError(
                    f"annotation {annotation_id} is {found[0]}'s, not {user}'s: only its author may remove it"
                )
            db.execute("DELETE FROM annotations WHERE run_id = ? AND id = ?", (run_id, annotation_id))

    def scanned(
        self: Store, run_ids: list[str], unread_by: dict[str, str] | None = None
    ) -> dict[str, tuple[int, dict[str, tuple[int, str]]]]:
        """Each named run's revision, and per scanner author the revision and scanner version it last read.

        Given `unread_by` (scanner author: version), only the runs one of those scanners has not read at the run's
        revision in that version: the database leaves out the runs a scan would skip.
        """
        found: dict[str, tuple[int, dict[str, tuple[int, str]]]] = {}
        visible, params = self._visible("r.owner")
        unread, wanted = "", ()
        if unread_by:
            pairs = " OR ".join(["(c.scanner = ? AND c.version = ?)"] * len(unread_by))
            unread = f" AND (SELECT count(*) FROM scans c WHERE c.run_id = r.id AND c.revision = r.revision AND ({pairs})) < ?"
            wanted = (*(v for pair in unread_by.items() for v in pair), len(unread_by))
        for at in range(0, len(run_ids), 500):
            part = run_ids[at : at + 500]
            sql = (
                "SELECT r.id, r.revision, s.scanner, s.revision, s.version FROM runs r "
                f"LEFT JOIN scans s ON s.run_id = r.id WHERE r.id IN ({', '.join('?' * len(part))}){visible}{unread}"
            )
            for run_id, revision, scanner, read, version in self._all(sql, (*part, *params, *wanted)):
                found.setdefault(run_id, (revision, {}))
                if scanner is not None:
                    found[run_id][1][scanner] = (read, version)
        return found

    def read_runs(self: Store, run_ids: list[str]) -> dict[str, Run]:
        """The stored runs named, read as read_run reads one but in three queries for them all, not three a run.
        A run not stored, or not this viewer's, is left out."""
        return {run_id: stored.run() for run_id, stored in self.stored_runs(run_ids).items()}

    def stored_runs(self: Store, run_ids: list[str]) -> dict[str, StoredRun]:
        """The stored runs named as the database holds them, each read into a Run when asked (`StoredRun.run`): what a
        scan of the library reads a batch at a time, making one Run at a time, so that a batch's runs never pile up
        for the garbage collector. Three queries for them all; a run not stored, or not this viewer's, is left out."""
        if not run_ids:
            return {}
        visible, params = self._visible()
        marks = ", ".join("?" * len(run_ids))
        with self._transaction() as db:  # the runs and their steps as of one moment
            rows = db.execute(f"SELECT id, body FROM runs WHERE id IN ({marks}){visible}", (*run_ids, *params))
            found = {run_id: StoredRun(body) for run_id, body in rows.fetchall()}
            steps = db.execute(
                f"SELECT run_id, body FROM steps WHERE run_id IN ({marks}) ORDER BY run_id, idx", run_ids
            )
            for run_id, body in steps.fetchall():
                if run_id in found:
                    found[run_id].steps.append(body)
            annotations = db.execute(
                f"SELECT run_id, body FROM annotations WHERE run_id IN ({marks}) ORDER BY run_id, step, created_at, id",
                run_ids,
            )
            for run_id, body in annotations.fetchall():
                if run_id in found:
                    found[run_id].annotations.append(body)
        return found

    def replace_findings(
        self, run_id: str, findings: dict[str, list[Annotation]], read: dict[str, tuple[int, str]] | None = None
    ) -> tuple[int, int]:
        """Make each author's annotations in `findings` the whole of that author's labels on the run: (added, removed).

        A scanner's findings have ids derived from what they say, so scanning again adds nothing, and a scanner
        that now finds otherwise has its earlier findings removed. `read` records, per author, the run's revision
        and the scanner's version that found them (see `scanned`). The annotations are the scanners' own
        (`agentcore.store.scanners`), each already checked against the run's steps.
        """
        return self.replace_findings_of([(run_id, findings, read)])

    def replace_findings_of(
        self, scanned: list[tuple[str, dict[str, list[Annotation]], dict[str, tuple[int, str]] | None]]
    ) -> tuple[int, int]:
        """`replace_findings` for several runs in one transaction (a scan writes a batch of runs at a time): the
        runs' rows locked and their earlier findings read in one statement each, every change written as a batch."""
        merged: dict[str, tuple[dict[str, list[Annotation]], dict[str, tuple[int, str]]]] = {}
        for run_id, findings, read in scanned:  # a run named twice: its later findings of an author stand, as in turn
            was_found, was_read = merged.get(run_id, ({}, {}))
            merged[run_id] = ({**was_found, **findings}, {**was_read, **(read or {})})
        if not merged:
            return 0, 0
        ids = list(merged)
        authors = list(dict.fromkeys(author for findings, _ in merged.values() for author in findings))
        gone: list[tuple[str, str]] = []
        new: list[tuple[Any, ...]] = []
        read_rows: list[tuple[str, str, int, str]] = []
        with self._transaction() as db:
            marks = ", ".join("?" * len(ids))
            present = {r[0] for r in db.execute(f"SELECT id FROM runs WHERE id IN ({marks}){db.lock_row}", ids)}
            missing = next((run_id for run_id in ids if run_id not in present), None)
            if missing is not None:
                raise self._no_run(missing)
            kept: dict[str, set[tuple[str, str]]] = {}
            if authors:
                sql = (
                    f"SELECT run_id, author, id FROM annotations WHERE run_id IN ({marks}) "
                    f"AND author IN ({', '.join('?' * len(authors))})"
                )
                for run_id, author, annotation_id in db.execute(sql, (*ids, *authors)).fetchall():
                    kept.setdefault(run_id, set()).add((author, annotation_id))
            for run_id, (findings, read) in merged.items():
                wanted = {
                    (author, a.id): a.model_copy(update={"author": author})
                    for author, found in findings.items()
                    for a in found
                }
                had = {key for key in kept.get(run_id, ()) if key[0] in findings}
                gone += [(run_id, annotation_id) for _, annotation_id in had - wanted.keys()]
                new += [annotation_row(run_id, a) for key, a in wanted.items() if key not in had]
                read_rows += [(run_id, author, rev, version) for author, (rev, version) in read.items()]
            db.executemany("DELETE FROM annotations WHERE run_id = ? AND id = ?", gone)
            db.executemany(PUT_ANNOTATION, new)
            db.executemany(
                "INSERT INTO scans (run_id, scanner, revision, version) VALUES (?, ?, ?, ?) ON CONFLICT "
                "(run_id, scanner) DO UPDATE SET revision = excluded.revision, version = excluded.version",
                read_rows,
            )
        return len(new), len(gone)

    def annotations_by_run(self: Store, run_ids: list[str] | None = None) -> dict[str, list[Annotation]]:
        """The annotations of the runs named (every annotated run when None), by run id; unlabelled runs left out."""
        visible, params = self._visible()
        sql = f"SELECT run_id, body FROM annotations WHERE run_id IN (SELECT id FROM runs WHERE 1 = 1{visible})"
        if run_ids is not None:
            if not run_ids:
                return {}
            sql += f" AND run_id IN ({', '.join('?' * len(run_ids))})"
        found: dict[str, list[Annotation]] = {}
        for run_id, body in self._all(sql + " ORDER BY run_id, step, created_at, id", (*params, *(run_ids or ()))):
            found.setdefault(run_id, []).append(Annotation.model_validate_json(body))
        return found

    def annotated_runs(
        self,
        *,
        provider: str | None = None,
        model: str | None = None,
        owner: str | None = None,
        tag: str | None = None,
        source: str | None = None,
    ) -> list[tuple[RunSummary, list[Annotation]]]:
        """The labelled runs with their annotations, most recently saved first: what an error analysis counts.

        `provider` and `model` keep the runs they answered a step of; `owner` that person's runs; `tag` the runs
        with an annotation that carries that free label; `source` "people" keeps people's labels alone,
        "scanners" the scanners' findings alone (authors `scanner:NAME`), and one scanner's name its own.
        """
        labelled = self.annotations_by_run()
        if source:
            labelled = {k: kept for k, v in labelled.items() if (kept := [a for a in v if _from(a, source)])}
        visible, params = self._visible()
        sql = f"SELECT {SUMMARY_COLUMNS} FROM runs WHERE id IN (SELECT run_id FROM annotations){visible}"
        if owner:
            sql, params = sql + " AND owner = ?", (*params, owner)
        kept = []
        for summary in map(RunSummary.from_row, self._all(sql + " ORDER BY updated_at DESC, id", params)):
            annotations = labelled.get(summary.id, [])
            if not annotations:
                continue
            if provider and all(m.provider != provider for m in summary.models):
                continue
            if model and all(m.model != model for m in summary.models):
                continue
            if tag and all(tag not in a.tags for a in annotations):
                continue
            kept.append((summary, annotations))
        return kept

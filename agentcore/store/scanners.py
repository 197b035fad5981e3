"""Scanners: functions that read a stored run and name what went wrong, each finding kept as a label on its step.

A finding lands on the step where it happened as an annotation whose author is `scanner:NAME` and whose note
is the evidence, so an error analysis counts it beside people's labels and can keep the two apart. A finding
carries a label of the taxonomy where one fits ("looped", "wrong tool", "ignored the result") and a free
label otherwise ("step budget reached").

A scanner is a function from a run to findings: a built-in below, a user's `module:function`, or
`regex:PATTERN`, a regular expression over the replies' text (bounded and timed as pinned tests' patterns
are, a second per reply; with a deadline, a whole scan stops when it passes). Scanning is idempotent: a
finding's id is derived from what it says, and a scan replaces a scanner's earlier findings on a run with its
new ones, so a second scan adds nothing and a changed scanner leaves none of its old findings behind.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import marshal
import os
import pickle
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..accounting import CLEARED, sent_at, step_usage
from ..annotations import LABELS, MAX_NOTE_CHARS, SCANNER_PREFIX, Annotation, check_target, step_calls, step_reply
from ..catalogue import context_window
from ..errors import AgentcoreError, UsageError
from ..hooks.guard import call_key
from ..messages import AssistantMessage, ToolMessage
from ..registry import Registry
from ..run import Run
from ..schemas import SchemaError, compile_pattern, search
from ..secrets import scrub_text

if TYPE_CHECKING:
    from .labels import StoredRun
    from .runs import Store

LOOP_REPEATS = 3  # the same call in this many steps running is a loop
CONTEXT_SHARE = 0.8  # a request past this share of the model's window is a finding
WRITE_BATCH = 200  # runs whose findings are written in one transaction
READ_BATCH = 200  # runs read from the database in one transaction
POOL_RUNS = 5_000  # runs to read from which a scan given more than one process starts them (each imports agentcore)
# a scan's worker process (serve_scans): the interpreter running this one, so the same packages
WORKER = [sys.executable, "-c", "from agentcore.store.scanners import serve_scans; serve_scans()"]
FAILURE_WORDS = ("error", "fail", "cannot", "can't", "could not", "couldn't", "unable", "sorry", "problem")


@dataclass(frozen=True)
class Finding:
    """What a scanner found on step `step` (1-based), or on one tool call of its reply, with the evidence."""

    step: int
    label: str
    evidence: str
    tool_call_id: str | None = None


@dataclass(frozen=True)
class Scanner:
    """A named function from a run to its findings."""

    name: str
    scan: Callable[[Run], Iterable[Finding | dict[str, Any]]] = field(repr=False)
    description: str = ""

    @property
    def author(self) -> str:
        return SCANNER_PREFIX + self.name

    @cached_property
    def version(self) -> str:
        """What the scanner is, as a digest of its function's code and its module's source: a scan rereads a run
        its scanner already read only when this changed (or the run did)."""
        code = getattr(self.scan, "__code__", None)
        module = inspect.getmodule(self.scan)
        try:
            source = inspect.getsource(module) if module is not None else ""
        except (OSError, TypeError):
            source = ""
        digest = hashlib.sha256(marshal.dumps(code) if code is not None else repr(self.scan).encode())
        digest.update(source.encode())
        return digest.hexdigest()[:16]


def _short(call: Any) -> str:
    name, args = call_key(call)
    text = f"{name}({args})"
    return text if len(text) <= 120 else text[:120] + "…"


def _replies(run: Run) -> Iterable[tuple[int, AssistantMessage]]:
    for n, step in enumerate(run.steps, start=1):
        reply = step_reply(run.messages, step.message_count)
        if reply is not None:
            yield n, reply


def _results(run: Run, n: int) -> list[ToolMessage]:
    """The tool results that answered step `n`'s calls: the tool messages after its reply, before the next step."""
    start = run.steps[n - 1].message_count + 1
    end = run.steps[n].message_count if n < len(run.steps) else len(run.messages)
    return [m for m in run.messages[start:end] if isinstance(m, ToolMessage)]


# -- the built-ins -------------------------------------------------------------------------


def scan_loop(run: Run) -> Iterable[Finding]:
    """The same call, with the same arguments, in LOOP_REPEATS or more steps running."""
    streaks: dict[tuple[str, str], list[int]] = {}
    for n, reply in _replies(run):
        keys = {call_key(c): c for c in reply.tool_calls}
        streaks = {k: [*streaks.get(k, []), n] for k in keys}
        for k, steps in streaks.items():
            if len(steps) == LOOP_REPEATS:
                call = keys[k]
                first = ", ".join(map(str, steps))
                evidence = f"{_short(call)} made with the same arguments at steps {first}"
                yield Finding(n, "looped", evidence, call.id)


def scan_ignored_error(run: Run) -> Iterable[Finding]:
    """A tool error the next reply ignored: it made the failed call again, unchanged, or answered as if all went well."""
    for n in range(1, len(run.steps)):
        errors = [r for r in _results(run, n) if r.is_error]
        failed = {c.id: c for c in step_calls(run.messages, run.steps[n - 1].message_count)}
        reply = step_reply(run.messages, run.steps[n].message_count)
        if not errors or reply is None:
            continue
        said = scrub_text(" ".join(errors[0].content.split()))[:200]
        again = {call_key(c): c for c in reply.tool_calls}
        for error in errors:
            call = failed.get(error.tool_call_id)
            if call is not None and call_key(call) in again:
                evidence = f"{_short(call)} failed at step {n} ({said}) and step {n + 1} made it again, unchanged"
                yield Finding(n + 1, "ignored the result", evidence, again[call_key(call)].id)
                break
        else:
            if not reply.tool_calls and not any(w in (reply.content or "").lower() for w in FAILURE_WORDS):
                evidence = f"a tool failed at step {n} ({said}) and step {n + 1} answered without a word of it"
                yield Finding(n + 1, "ignored the result", evidence)


def scan_unknown_tool(run: Run) -> Iterable[Finding]:
    """A call to a tool the run did not offer (a run that records no tools is not judged)."""
    offered = {s.name for s in run.tool_specs}
    if not offered:
        return
    for n, reply in _replies(run):
        for call in reply.tool_calls:
            if call.name not in offered:
                shown = ", ".join(sorted(offered))[:200]
                yield Finding(
                    n, "wrong tool", f"called {call.name[:80]!r}, not one of the tools offered: {shown}", call.id
                )


def scan_step_budget(run: Run) -> Iterable[Finding]:
    """The run stopped because it reached its step budget."""
    if run.stop_reason == "max_steps" and run.steps:
        n = len(run.steps)
        yield Finding(n, "step budget reached", f"the run stopped at its step budget of {run.config.max_steps} steps")


def scan_context(run: Run) -> Iterable[Finding]:
    """The first request past CONTEXT_SHARE of its model's context window (models with a known window only)."""
    for n, step in enumerate(run.steps, start=1):
        who = run.answered_by(step)
        window = context_window(who.provider, who.model)
        if not window:
            continue
        tokens = step_usage(run, n)[0].input_tokens
        if tokens > CONTEXT_SHARE * window:
            evidence = f"step {n} sent {tokens:,} of {who.model}'s {window:,} tokens ({tokens / window:.0%})"
            yield Finding(n, "context over 80%", evidence)
            return


def scan_unread_results(run: Run) -> Iterable[Finding]:
    """An answer given while tool results it had were never in any request: dropped or cleared before it was sent."""
    reshaped = any(s.sent is not None or s.hook_effects for s in run.steps)
    if not reshaped:  # every request sent the whole history: each result was read by the step after it
        return
    read: set[str] = set()
    for n, reply in _replies(run):
        read |= {m.tool_call_id for m in sent_at(run, n) if isinstance(m, ToolMessage) and m.content != CLEARED}
        if reply.tool_calls:
            continue
        history = run.messages[: run.steps[n - 1].message_count]
        unread = [m for m in history if isinstance(m, ToolMessage) and m.tool_call_id not in read]
        if unread:
            names = ", ".join(dict.fromkeys(f"{m.name} ({m.tool_call_id})" for m in unread))[:300]
            yield Finding(n, "answered without reading", f"step {n} answered; never sent to the model: {names}")


def scan_key_in_reply(run: Run) -> Iterable[Finding]:
    """A credential in a reply, found as an import finds what it masks (detectors.secret_kinds): a registered
    secret, an `sk-` key, a Bearer or Basic token, and each kind detect-secrets' chosen plugins know."""
    from ..secrets.detectors import secret_kinds

    replies = list(_replies(run))
    # one reading of every reply first: most runs hold no key, and a key one reply holds is found in the replies
    # joined line by line too (what only the joining makes, read again reply by reply, is no finding)
    if not replies or not secret_kinds("\n".join(reply.text for _, reply in replies)):
        return
    for n, reply in replies:
        kinds = secret_kinds(reply.text)
        if kinds:
            yield Finding(n, "key in reply", f"step {n}'s reply holds text shaped like a key: {', '.join(kinds)}")


def _scanner_of(target: str, found: Any) -> Scanner:
    """A user's scanner, `module:function`: the function takes a Run and returns Findings (or dicts of their fields)."""
    if not callable(found):
        raise UsageError(f"scanner {target[:120]!r} is not a function")
    return Scanner(target, found, (found.__doc__ or "").strip().split("\n")[0])


# the scanners by name: the built-ins, and (named by whoever runs agentcore) a user's module:function
BUILTINS: Registry[Scanner] = Registry(
    "scanner",
    {
        s.name: s
        for s in (
            Scanner("loop", scan_loop, "the same call with the same arguments in 3 steps running"),
            Scanner("ignored_error", scan_ignored_error, "a tool error the next reply ignored"),
            Scanner("unknown_tool", scan_unknown_tool, "a call to a tool the run did not offer"),
            Scanner("step_budget", scan_step_budget, "the run stopped at its step budget"),
            Scanner("context", scan_context, "a request past 80% of the model's context window"),
            Scanner("unread_results", scan_unread_results, "an answer given with tool results never sent to the model"),
            Scanner("key_in_reply", scan_key_in_reply, "text shaped like a key in a reply"),
        )
    },
    _scanner_of,
)


# -- scanners people write ---------------------------------------------------------------------


class ScanStopped(AgentcoreError):
    """A scan that reached its deadline before it read every reply."""


def regex_scanner(pattern: str, *, deadline: float | None = None) -> Scanner:
    """A scanner that finds every reply whose text matches `pattern` (bounded, with a time limit per reply).

    With `deadline` (a `time.monotonic()` value) the scan raises ScanStopped at the first reply it would start
    after then: each reply may take PATTERN_TIMEOUT_S, so a scan over many replies needs a bound of its own.
    """
    try:
        compile_pattern(pattern)
    except SchemaError as exc:
        raise UsageError(f"--scanner regex: {exc}") from None

    def scan(run: Run) -> Iterable[Finding]:
        for n, reply in _replies(run):
            if deadline is not None and time.monotonic() >= deadline:
                raise ScanStopped(f"regex:{pattern[:80]} ran out of time at step {n} of run {run.id}")
            text = reply.content or ""  # what the model wrote, not its tool calls' arguments
            try:
                hit = search(pattern, text)
            except SchemaError as exc:  # too long a text, or too slow: said, not guessed
                yield Finding(n, "regex not applied", str(exc)[:300])
                continue
            if hit:
                yield Finding(n, "regex match", f"step {n}'s reply matches /{pattern[:200]}/")

    return Scanner(f"regex:{pattern}"[:190], scan, f"replies matching /{pattern}/")


def resolve_scanner(spec: str, *, code: bool = False) -> Scanner:
    """A built-in by name, `regex:PATTERN`, or (with `code`: named by whoever runs agentcore) a user's
    `module:function` from an installed module (agentcore.registry)."""
    if spec.startswith("regex:"):
        return regex_scanner(spec.removeprefix("regex:"))
    return BUILTINS.resolve(spec, code=code)


# -- findings as labels ----------------------------------------------------------------------


def _as_finding(scanner: Scanner, item: Finding | dict[str, Any]) -> Finding:
    if isinstance(item, Finding):
        return item
    try:
        return Finding(**item)
    except TypeError as exc:
        raise UsageError(
            f"scanner {scanner.name}: a finding is step, label, evidence (and tool_call_id): {exc}"
        ) from None


def annotation_of(scanner: Scanner, finding: Finding) -> Annotation:
    """The finding as a label on its step: the taxonomy's label where it is one, else a free label; the evidence
    is the note; the id is derived from what the finding says, so the same finding is the same annotation."""
    said = json.dumps([scanner.name, finding.step, finding.tool_call_id, finding.label, finding.evidence])
    label = " ".join(str(finding.label).split())[:40]
    fields: dict[str, Any] = {"labels": [label]} if label in LABELS else {"tags": [label]}
    return Annotation(
        id="f" + hashlib.sha256(said.encode()).hexdigest()[:15],
        step=finding.step,
        tool_call_id=finding.tool_call_id,
        note=scrub_text(str(finding.evidence))[:MAX_NOTE_CHARS],
        author=scanner.author,
        **fields,
    )


def scan_run(run: Run, scanners: Sequence[Scanner]) -> dict[str, list[Annotation]]:
    """Each scanner's findings on the run, as annotations; a finding on a step or call the run lacks is a UsageError."""
    out: dict[str, list[Annotation]] = {}
    for scanner in scanners:
        found = []
        for item in scanner.scan(run) or ():
            annotation = annotation_of(scanner, _as_finding(scanner, item))
            step = run.steps[annotation.step - 1] if annotation.step <= len(run.steps) else None
            calls = step_calls(run.messages, step.message_count) if step is not None else ()
            try:
                check_target(annotation, len(run.steps), [c.id for c in calls])
            except UsageError as exc:
                raise UsageError(f"scanner {scanner.name} on run {run.id}: {exc}") from None
            found.append(annotation)
        out[scanner.author] = list({a.id: a for a in found}.values())
    return out


MAX_LISTED = 1_000  # findings a scan's report names one by one


@dataclass
class ScanReport:
    """What a scan did: runs read (and skipped, read already), findings added and removed, findings per scanner."""

    runs: int = 0
    skipped: int = 0
    added: int = 0
    removed: int = 0
    findings: dict[str, int] = field(default_factory=dict)  # found on the runs read this time
    # each finding on the runs read this time: run id, step, scanner, labels; the first MAX_LISTED, then a count
    found: list[tuple[str, int, str, str]] = field(default_factory=list)
    not_listed: int = 0

    def keep(self, run_id: str, scanner: str, labels: list[Annotation]) -> None:
        """List a run's findings of one scanner, as far as the list goes."""
        for a in labels:
            if len(self.found) < MAX_LISTED:
                self.found.append((run_id, a.step, scanner, ", ".join(a.all_labels)))
            else:
                self.not_listed += 1


def serve_scans() -> None:
    """A scan's worker process (`python -c`, started by `_Workers`): reads the import path and the scanners, then
    batches of stored runs, on stdin; writes each batch's findings (or the error that stopped it) on stdout. What a
    scanner prints goes to stderr: stdout is the scan's alone."""
    results = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    orders = sys.stdin.buffer
    try:
        sys.path[:] = pickle.load(orders)  # this process finds a user's scanner module where the scan's process did
        scanners = pickle.load(orders)
        while True:
            stored = pickle.load(orders)
            try:
                answer: tuple[str, Any] = ("found", [scan_run(s.run(), scanners) for s in stored])
            except Exception as exc:  # noqa: BLE001 - said by the scan's process, as if it had read the runs itself
                answer = ("error", exc)
            try:
                data = pickle.dumps(answer)
            except Exception as exc:  # noqa: BLE001 - an error that cannot be sent is sent as its words
                data = pickle.dumps(("error", AgentcoreError(f"{type(exc).__name__}: {exc}"[:500])))
            results.write(data)
            results.flush()
    except (EOFError, BrokenPipeError, KeyboardInterrupt):  # the scan ended, or stopped: nothing more to say
        return


class _Workers:
    """`count` worker processes of a scan, each sent the scanners once, then one batch of stored runs at a time."""

    def __init__(self, count: int, scanners: Sequence[Scanner]) -> None:
        self._procs: list[subprocess.Popen] = []
        try:
            for k in range(count):
                self._procs.append(subprocess.Popen(WORKER, stdin=subprocess.PIPE, stdout=subprocess.PIPE))
                self.send(k, list(sys.path))
                self.send(k, list(scanners))
        except BaseException:
            self.close()
            raise

    def _stopped(self, k: int) -> AgentcoreError:
        proc = self._procs[k]
        try:
            status = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            status = "none yet"
        return AgentcoreError(f"a scan's worker process stopped (exit status {status})")

    def send(self, k: int, order: Any) -> None:
        """Send worker `k` its next order: the import path, the scanners, then each batch of stored runs."""
        stdin = self._procs[k].stdin
        assert stdin is not None
        try:
            pickle.dump(order, stdin)
            stdin.flush()
        except OSError:  # its end of the pipe closed: the worker is gone
            raise self._stopped(k) from None

    def receive(self, k: int) -> list[dict[str, list[Annotation]]]:
        stdout = self._procs[k].stdout
        assert stdout is not None
        try:
            kind, value = pickle.load(stdout)
        except EOFError:
            raise self._stopped(k) from None
        if kind == "error":
            raise value
        return value

    def close(self) -> None:
        """End every worker: at the end of its orders, or (a scan stopped partway) as it sends what no one reads."""
        for proc in self._procs:
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    try:
                        pipe.close()
                    except OSError:  # a worker gone before its orders were read
                        pass
        for proc in self._procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:  # still in a long batch
                proc.kill()
                proc.wait()


def scan_processes(scanners: Sequence[Scanner], runs: int, processes: int | None) -> int:
    """The processes a scan reading `runs` runs reads them on: `processes` (None: one a core), but one where fewer
    than POOL_RUNS runs are read, or where a scanner cannot be sent to another process (a function made inside
    another, as a regex scanner's is: the scan reads every run itself)."""
    wanted = (os.cpu_count() or 1) if processes is None else processes
    if wanted <= 1 or runs < POOL_RUNS:
        return 1
    try:
        pickle.dumps(list(scanners))
    except (pickle.PicklingError, AttributeError, TypeError):
        return 1
    return wanted


def _findings(
    store: Store, scanners: Sequence[Scanner], run_ids: list[str], processes: int
) -> Iterator[dict[str, list[Annotation]]]:
    """The findings on each run named, in their order, the runs read READ_BATCH at a time. On more than one process,
    each batch's runs are made and scanned in a worker process (`serve_scans`) while this one reads the next batch
    and writes the findings; the scanners go to the workers as what they are (a function, by its module and name),
    so a worker runs only what this process was given."""
    batches = [run_ids[k : k + READ_BATCH] for k in range(0, len(run_ids), READ_BATCH)]

    def read(ids: list[str]) -> list[StoredRun | None]:
        found = store.stored_runs(ids)
        return [found.pop(run_id, None) for run_id in ids]

    def alone(run_id: str) -> dict[str, list[Annotation]]:
        return scan_run(store.read_run(run_id), scanners)  # a run gone since the scan began: this says it is not there

    if processes <= 1:
        for ids in batches:
            for run_id, stored in zip(ids, read(ids), strict=True):
                yield scan_run(stored.run(), scanners) if stored is not None else alone(run_id)
        return

    def each(ids: list[str], there: list[bool], found: list) -> Iterator[dict[str, list[Annotation]]]:
        made = iter(found)
        for run_id, stored in zip(ids, there, strict=True):
            yield next(made) if stored else alone(run_id)

    workers = _Workers(processes, scanners)
    try:
        pending: deque[tuple[list[str], list[bool]]] = deque()  # batch k is worker k % processes's
        for k, ids in enumerate(batches):
            stored = read(ids)
            oldest = None
            if len(pending) == processes:  # every worker busy: the oldest batch's worker is this batch's
                oldest = (*pending.popleft(), workers.receive(k % processes))
            workers.send(k % processes, [s for s in stored if s is not None])
            pending.append((ids, [s is not None for s in stored]))
            if oldest is not None:
                yield from each(*oldest)
        for k in range(len(batches) - len(pending), len(batches)):
            yield from each(*pending.popleft(), workers.receive(k % processes))
    finally:
        workers.close()


def scan_library(
    store: Store,
    scanners: Sequence[Scanner],
    run_ids: Sequence[str],
    progress: Callable[[int, int], None] | None = None,
    *,
    again: bool = False,
    processes: int | None = 1,
) -> ScanReport:
    """Scan the stored runs named and keep each scanner's findings on each run (replacing its earlier ones).

    A run whose revision every scanner already read, in the scanner's present version, is skipped (its findings
    stand); `again` reads every run all the same. `processes` (None: one a core) reads a large scan's runs on
    that many processes (scan_processes); the findings are written here, in the order of `run_ids`, either way.
    """
    report = ScanReport(findings={s.name: 0 for s in scanners})
    ids = list(run_ids)
    # each run to read, with its revision (what each scanner last read of it is the database's to compare)
    state = {
        k: revision
        for k, (revision, _) in store.scanned(ids, None if again else {s.author: s.version for s in scanners}).items()
    }
    to_read = [run_id for run_id in ids if again or run_id in state]
    findings = _findings(store, scanners, to_read, scan_processes(scanners, len(to_read), processes))
    batch: list[tuple[str, dict[str, list[Annotation]], dict[str, tuple[int, str]] | None]] = []

    def write() -> None:
        added, removed = store.replace_findings_of(batch)
        report.added += added
        report.removed += removed
        batch.clear()

    try:
        for i, run_id in enumerate(ids, start=1):
            revision = state.get(run_id)
            if not again and run_id not in state:  # every scanner has read this revision: the database left it out
                report.skipped += 1
            else:
                found = next(findings)
                batch.append((run_id, found, {s.author: (revision, s.version) for s in scanners} if revision else None))
                for scanner in scanners:
                    report.findings[scanner.name] += len(found[scanner.author])
                    report.keep(run_id, scanner.name, found[scanner.author])
                report.runs += 1
            if len(batch) >= WRITE_BATCH or (batch and i == len(ids)):
                write()  # a batch of runs a transaction: a killed scan loses at most one batch, found again next time
            if progress is not None:
                progress(i, len(ids))
    finally:
        findings.close()  # a scan stopped partway stops its worker processes too
    return report

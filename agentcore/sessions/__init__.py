"""The sessions of agents people already use, imported as runs: ATIF trajectories, Claude Code sessions and
Codex rollouts, recognised by their content (agentcore.sessions.atif, .claude_code, .codex).

`read_import` is the one entry of `agentcore runs import` and the Runs page: a session file gives its run and
a run per subagent (linked both ways, Run.subagents and Run.spawned_by); any other file goes to the
transcript and message-list importer (importers.parse_import). Every refusal is one TranscriptError line that
names the file; what a file held and the run does not (unknown line types, snapshots, a call without a
result) is counted in the run's `origin.notes` and said in one line. Every credential is masked by kind as the
runs are read (detectors.mask: a registered secret, a key's shape, what detect-secrets' plugins find, a tool
argument named like a credential), and the note says how many of which kinds; every writer scrubs again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from ..errors import TranscriptError
from ..importers import parse_import
from ..run import Run, SubagentLink
from ..secrets.detectors import Tally, mask
from ..transcript import MAX_FILE_BYTES, describe_validation, one_line, read_json
from .atif import is_atif, read_atif
from .claude_code import is_claude_code, read_claude_code
from .codex import is_codex, read_codex
from .files import Beside, json_lines

SNIFF_LINES = 20  # a JSON Lines file is known by the first records that say what they are


@dataclass
class Imported:
    """What one file gave: the run first, then its subagents' runs; the file's format; the secrets masked."""

    runs: list[Run]
    format: str
    masked: Counter[str] = field(default_factory=Counter)  # distinct values, by kind, in all the runs

    @property
    def notes(self) -> str | None:
        """What was kept aside and how many secrets of which kinds were masked, in one line, or None."""
        from ..secrets.detectors import masked_note

        notes = [n for run in self.runs[:1] if run.origin for n in run.origin.notes]
        sub = sum(len(r.origin.notes) for r in self.runs[1:] if r.origin)
        if sub:
            notes.append(f"and in its subagents {sub} more kinds of line")
        said = [f"kept aside: {'; '.join(notes)}"] if notes else []
        masked = masked_note(self.masked)
        return one_line(". ".join([*said, masked] if masked else said)) if said or masked else None


def read_import(raw: bytes | str, name: str = "upload", folder: Path | None = None) -> Imported:
    """The runs of a file's bytes: a session (ATIF, Claude Code, Codex) or any file parse_import reads.

    `folder` is where the file lies, for the subagent files it names beside itself; None (an upload) reads
    none of them, and says so in the notes.
    """
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    try:
        if len(raw) > MAX_FILE_BYTES:
            raise TranscriptError(f"larger than {MAX_FILE_BYTES // 2**20} MB")
        beside = Beside(folder)
        runs, fmt = _sessions(raw, Path(name).name, beside)
        if runs is None:
            runs, fmt = [parse_import(raw, name)], "agentcore"
        elif beside.notes and runs[0].origin:
            runs[0].origin.notes.extend(dict.fromkeys(beside.notes))
        tally = Tally()
        return Imported([mask(r, tally) for r in runs], fmt, tally.counts)
    except TranscriptError as exc:
        text = str(exc)  # parse_import names the file itself
        raise TranscriptError(one_line(text if text.startswith(f"{name}: ") else f"{name}: {text}")) from None
    except ValidationError as exc:
        raise TranscriptError(one_line(f"{name}: {describe_validation(exc)}")) from None


def _sessions(raw: bytes, name: str, beside: Beside) -> tuple[list[Run] | None, str]:
    if raw.lstrip()[:1] != b"{":
        return None, ""
    first_line = raw.lstrip().split(b"\n", 1)
    if len(first_line) > 1 and first_line[1].strip():
        records, bad = json_lines(raw, beside.budget)
        if records and len(records) * 2 > bad:  # mostly records: a JSON Lines file
            sniff = [r for _, r in records[:SNIFF_LINES]]
            if any(is_codex(r) for r in sniff):
                runs = read_codex([(n, r) for n, r in records if is_codex(r)], name, beside.budget)
                return _noted(runs, bad, len(records) - sum(1 for _, r in records if is_codex(r))), "codex"
            if any(is_claude_code(r) for r in sniff):
                return _noted(read_claude_code(records, name, beside), bad, 0), "claude-code"
            if not any("resourceSpans" in r for r in sniff):  # OTLP bodies a line are the trace importer's
                raise TranscriptError(
                    f"JSON Lines, but neither a Claude Code session nor a Codex rollout: none of the first "
                    f"{SNIFF_LINES} records has either's line types"
                )
    try:
        data = read_json(raw)
    except TranscriptError:
        return None, ""  # the other importer says what is wrong with it
    if is_atif(data):
        return read_atif(data, name, beside), "atif"
    return None, ""


def _noted(runs: list[Run], bad: int, foreign: int) -> list[Run]:
    origin = runs[0].origin
    if origin is not None:
        if bad:
            origin.notes.append(f"{bad} lines not JSON")
        if foreign:
            origin.notes.append(f"{foreign} lines of another format")
    return runs


def store_imported(store: object, imported: Imported) -> list[Run]:
    """Store each run of an import (Store.import_run), its links following any id the store had to change."""
    stored: list[Run] = []
    renamed: dict[str, str] = {}
    for run in imported.runs:
        kept = store.import_run(run)  # type: ignore[attr-defined]
        renamed[run.id] = kept.id
        stored.append(kept)
    if all(old == new for old, new in renamed.items()):
        return stored
    out = []
    for run in stored:
        subagents = [_renamed(link, renamed) for link in run.subagents]
        spawned = _renamed(run.spawned_by, renamed) if run.spawned_by else None
        if subagents != run.subagents or spawned != run.spawned_by:
            run = run.model_copy(update={"subagents": subagents, "spawned_by": spawned})
            store.save_run(run)  # type: ignore[attr-defined]
        out.append(run)
    return out


def _renamed(link: SubagentLink, renamed: dict[str, str]) -> SubagentLink:
    return link.model_copy(update={"run_id": renamed.get(link.run_id, link.run_id)})


__all__ = ["Imported", "read_import", "store_imported"]

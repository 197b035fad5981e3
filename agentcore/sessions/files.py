"""The files an imported session names beside itself (subagent trajectories, a session's subagents folder).

Only files inside the imported file's own folder are read: a name that is absolute, climbs out with `..` or
leads out through a link is not followed, and each file is read by the one bounded reader
(transcript.read_file). Together an import reads at most MAX_FILE_BYTES and makes at most MAX_RUNS runs,
subagents at most MAX_DEPTH levels down, within one Budget of lines, steps, tool calls and messages
(builder.Budget). Nothing is fetched: a URL is a name like any other, not found.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import TranscriptError
from ..transcript import MAX_FILE_BYTES, read_file, read_json
from .builder import Budget

MAX_RUNS = 100  # a parent and its subagents, all levels
MAX_DEPTH = 4  # subagents of subagents


@dataclass
class Beside:
    """Where the imported file lies, and what the import has read and made so far."""

    folder: Path | None
    read_bytes: int = 0
    runs: int = 0
    notes: list[str] = field(default_factory=list)
    budget: Budget = field(default_factory=Budget)

    def path(self, name: str) -> Path | None:
        """The file `name` inside the folder, or None (no folder, outside it, not a file)."""
        if self.folder is None or not name or "\x00" in name or Path(name).is_absolute():
            return None
        root = self.folder.resolve()
        try:
            target = (root / name).resolve()
        except (OSError, RuntimeError):
            return None
        if not target.is_relative_to(root) or not target.is_file():
            return None
        return target

    def read(self, path: Path) -> bytes:
        """A file's bytes within what the import may still read; a TranscriptError names it otherwise."""
        left = MAX_FILE_BYTES - self.read_bytes
        try:
            raw = read_file(path, left)
        except TranscriptError as exc:
            raise TranscriptError(f"{path.name}: {exc} (all the files of one import together)") from None
        self.read_bytes += len(raw)
        return raw

    def another_run(self, depth: int) -> bool:
        """Whether one more subagent run may be made at `depth`; a note says why not when it may not."""
        if depth > MAX_DEPTH:
            self.notes.append(f"subagents nested more than {MAX_DEPTH} levels deep not imported")
            return False
        if self.runs >= MAX_RUNS:
            self.notes.append(f"subagents past {MAX_RUNS} runs not imported")
            return False
        self.runs += 1
        return True


def json_lines(raw: bytes, budget: Budget) -> tuple[list[tuple[int, dict]], int]:
    """The JSON objects of a JSON Lines file with their line numbers (from 1), and how many lines were not one.

    The lines are counted against the import's budget before any is read. Each line is read by
    transcript.read_json, so its depth is bounded; a line cut short (a session still being written) is counted,
    not fatal.
    """
    budget.take("lines", raw.count(b"\n") + 1)
    records: list[tuple[int, dict]] = []
    bad = 0
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            data = read_json(line)
        except TranscriptError:
            bad += 1
            continue
        if isinstance(data, dict):
            records.append((number, data))
        else:
            bad += 1
    return records, bad

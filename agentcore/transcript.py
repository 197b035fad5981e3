"""Transcript JSON, version 1: export and import of a run, exact round trip, no secrets.

Top level: format "agentcore.transcript", version 1, id, title, created_at, config,
messages, steps, stop_reason, error, final_output, parent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .errors import TranscriptError
from .messages import validate_messages
from .run import Run
from .secrets import redact_headers

FORMAT = "agentcore.transcript"
VERSION = 1


def to_dict(run: Run) -> dict[str, Any]:
    """The transcript of a run as plain JSON data; wire headers are redacted once more on the way out."""
    body = run.model_dump(mode="json")
    for step in body["steps"]:
        wire = step.get("wire")
        if wire:
            wire["request_headers"] = redact_headers(wire.get("request_headers") or {})
            wire["response_headers"] = redact_headers(wire.get("response_headers") or {})
    return {"format": FORMAT, "version": VERSION, **body}


def json_text(data: Any, **options: Any) -> str:
    """JSON text that can always be written as UTF-8, read back to the same data.

    Non-ASCII text stays readable; only when the data holds a lone surrogate (undecodable
    bytes from the command line, a JSON \\ud800 escape in an import) is every non-ASCII
    character escaped instead, which JSON reads back exactly.
    """
    text = json.dumps(data, ensure_ascii=False, **options)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(data, ensure_ascii=True, **options)
    return text


def dumps(run: Run, indent: int | None = 2) -> str:
    """The transcript of a run as JSON text."""
    return json_text(to_dict(run), indent=indent)


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("system", "user", "assistant", "tool"):
            continue  # the discriminator tag pydantic adds to the path
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def check_header(data: Any, what: str, format: str, version: int) -> None:
    """Refuse data that is not a JSON object with the expected `format` and `version` fields."""
    if not isinstance(data, dict):
        raise TranscriptError(f"{what} is a JSON object, not {type(data).__name__}")
    if data.get("format") != format:
        raise TranscriptError(f"format: expected {format!r}, found {data.get('format')!r}")
    if data.get("version") != version:
        raise TranscriptError(f"version: this agentcore reads version {version}, found {data.get('version')!r}")


def from_dict(data: Any, *, check_messages: bool = True) -> Run:
    """Validate transcript data and build the Run; a TranscriptError names the field and the reason."""
    check_header(data, "a transcript", FORMAT, VERSION)
    body = {k: v for k, v in data.items() if k not in ("format", "version")}
    try:
        run = Run.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
        raise TranscriptError(f"{_where(first['loc'])}: {first['msg']}{more}") from None
    if check_messages:
        violations = validate_messages(run.messages)
        if violations:
            raise TranscriptError(f"messages[{violations[0].index}]: {violations[0].reason}")
    for step in run.steps:
        if step.message_count > len(run.messages):
            raise TranscriptError(
                f"steps[{step.index - 1}].message_count: {step.message_count} is past the end of messages"
            )
    return run


def loads(text: str | bytes) -> Run:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise TranscriptError(f"not JSON: {exc}") from None
    return from_dict(data)


def load(path: str | Path) -> Run:
    """Read a transcript file; every failure is a TranscriptError with the file's name."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return loads(text)
    except TranscriptError as exc:
        raise TranscriptError(f"{path}: {exc}") from None


def save(run: Run, path: str | Path) -> None:
    """Write the transcript atomically (a temporary file, then a rename)."""
    write_atomic(path, dumps(run))


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write text (as UTF-8) or bytes to a temporary file beside `path`, then rename it over `path`."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a failed or interrupted save leaves the old file and no stray temporary
        raise

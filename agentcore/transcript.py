"""Transcript JSON, version 1: export and import of a run, exact round trip, no secrets.

Top level: format "agentcore.transcript", version 1, id, title, created_at, config,
messages, steps, stop_reason, error, final_output, parent, and annotations (people's labels on
steps, agentcore.annotations) when the run has any.

Every reader of a file (transcripts here, imports, comparison bundles) parses it with
`read_json`, which keeps the limits they share: MAX_FILE_BYTES and MAX_DEPTH. Every writer of a
transcript writes it through `fitted_text`, so that what is written is read back: a run whose
transcript would be larger has its largest wire bodies cut, each to its start and a note.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .errors import TranscriptError
from .messages import MAX_DEPTH, validate_messages
from .providers.base import WIRE_TEXT_LIMIT
from .run import Run
from .secrets import redact_headers, scrub_text

FORMAT = "agentcore.transcript"
VERSION = 1
MAX_FILE_BYTES = 64 * 1024 * 1024  # the most any reader takes, stated in the README


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
    """JSON text that can always be written as UTF-8, read back to the same data, without a known secret.

    Non-ASCII text stays readable; only when the data holds a lone surrogate (undecodable
    bytes from the command line, a JSON \\ud800 escape in an import) is every non-ASCII
    character escaped instead, which JSON reads back exactly. Every file, export and database
    row is written through here, so this is where every registered secret is removed.
    """
    text = json.dumps(data, ensure_ascii=False, **options)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(data, ensure_ascii=True, **options)
    return scrub_text(text)


def dumps(run: Run, indent: int | None = 2) -> str:
    """The transcript of a run as JSON text, within MAX_FILE_BYTES (see fitted_text)."""
    return fitted_text(to_dict(run), indent=indent)


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


def fitted_text(data: dict[str, Any], *, indent: int | None = 2, prepare: Callable[[Any], Any] | None = None) -> str:
    """Transcript data (`to_dict`), `prepare`d, as JSON text a reader takes: within MAX_FILE_BYTES.

    Text over it is written again without indentation, and then, while still over, with the largest wire
    bodies cut, each to its first WIRE_TEXT_LIMIT characters of JSON and a note; the messages are never
    cut. A run over the limit even so is a TranscriptError: no reader would take it.
    """

    def write() -> str:
        return json_text(prepare(data) if prepare else data, indent=indent)

    text = write()
    over = _utf8_size(text) - MAX_FILE_BYTES
    if over > 0 and indent is not None:
        indent = None
        text = write()
        over = _utf8_size(text) - MAX_FILE_BYTES
    if over <= 0:
        return text
    # only a body larger than what is kept of it: the start kept is a JSON string, its quotes escaped
    bodies = sorted((b for b in _wire_bodies(data) if len(b[2]) > 2 * WIRE_TEXT_LIMIT), key=lambda b: -len(b[2]))
    note = f"the file whole would be over the {MAX_FILE_BYTES // 2**20} MB a reader takes"
    while bodies:
        saved = 0
        while bodies and saved < over:
            wire, key, compact = bodies.pop(0)
            wire[key] = f"{compact[:WIRE_TEXT_LIMIT]}… [cut: {len(compact)} characters of JSON in all; {note}]"
            saved += len(compact) - 2 * WIRE_TEXT_LIMIT  # an estimate: the text is written again to check
        text = write()
        over = _utf8_size(text) - MAX_FILE_BYTES
        if over <= 0:
            return text
    raise TranscriptError(
        f"the run is {_utf8_size(text) / 2**20:.1f} MB as a transcript even with its wire bodies cut, "
        f"over the {MAX_FILE_BYTES // 2**20} MB a reader takes"
    )


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _wire_bodies(data: dict[str, Any]) -> list[tuple[dict[str, Any], str, str]]:
    # each request and response of the steps' exchanges and their tools' exchanges, with its compact JSON
    wires = [step.get("wire") for step in data.get("steps") or []]
    wires += [run.get("wire") for step in data.get("steps") or [] for run in step.get("tool_runs") or []]
    return [
        (wire, key, _COMPACT.encode(wire[key]))
        for wire in wires
        if wire
        for key in ("request", "response")
        if wire.get(key) is not None
    ]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "…"


_LINE_BREAKS = {ord(c): repr(c)[1:-1] for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}


def one_line(text: str) -> str:
    """The text with each line break written as its escape, so that a message stays one line."""
    return text.translate(_LINE_BREAKS)


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("system", "user", "assistant", "tool"):
            continue  # the discriminator tag pydantic adds to the path
        elif isinstance(part, str) and part.isidentifier():
            out += f".{part}" if out else part
        else:  # a key of any other shape, an unknown one in the file, is shown quoted
            out += f"[{_shown(part)}]"
    return out or "(top level)"


def check_header(data: Any, what: str, format: str, version: int) -> None:
    """Refuse data that is not a JSON object with the expected `format` and `version` fields."""
    if not isinstance(data, dict):
        raise TranscriptError(f"{what} is a JSON object, not {type(data).__name__}")
    if data.get("format") != format:
        raise TranscriptError(f"format: expected {format!r}, found {_shown(data.get('format'))}")
    found = data.get("version")
    if type(found) is not int or found != version:  # true and 1.0 equal 1 in Python, not in the format
        raise TranscriptError(f"version: this agentcore reads version {version}, found {_shown(found)}")


def describe_validation(exc: ValidationError) -> str:
    """pydantic's first complaint as one line, `where: why`, with how many more there are."""
    first = exc.errors()[0]
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    return f"{_where(first['loc'])}: {one_line(first['msg'])}{more}"


STORED = {"stored": True}


def from_dict(data: Any, *, check_messages: bool = True, stored: bool = False) -> Run:
    """Validate transcript data and build the Run; a TranscriptError names the field and the reason.

    `stored`: the data was read back from the runs database, where each wire exchange was fitted to what a step
    keeps when it was saved, so it is not measured again (a scan of the library reads every run)."""
    if isinstance(data, dict) and "resourceSpans" in data and "format" not in data:
        raise TranscriptError(
            "an OpenTelemetry trace (resourceSpans), not a transcript: import it as a run first "
            "(agentcore runs import FILE, or the Runs page)"
        )
    check_header(data, "a transcript", FORMAT, VERSION)
    body = {k: v for k, v in data.items() if k not in ("format", "version")}
    try:
        run = Run.model_validate(body, context=STORED if stored else None)
    except ValidationError as exc:
        raise TranscriptError(describe_validation(exc)) from None
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


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_ALL_SQUARE = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def read_json(raw: str | bytes) -> Any:
    """JSON data from a file's text (UTF-8, -16 or -32 bytes, or str), within MAX_FILE_BYTES and MAX_DEPTH.

    Every refusal is a TranscriptError that says what is wrong and where.
    """
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_FILE_BYTES:
        raise TranscriptError(f"larger than {MAX_FILE_BYTES // 2**20} MB")
    encoding = json.detect_encoding(raw)
    try:
        text = raw.decode(encoding, "surrogatepass")
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"not JSON: not {encoding} text: {exc.reason} at byte {exc.start}") from None
    _check_depth(raw if encoding.startswith("utf-8") else text.encode("utf-8", "surrogatepass"), text)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise TranscriptError(f"not JSON: {exc}") from None
    if _LONE_SURROGATE.search(text):  # rare: only then is every key looked at
        _check_keys(data)
    return data


# a JSON escape of a surrogate, or one in the text itself: the only ways a lone one reaches a key
_LONE_SURROGATE = re.compile(r"\\[uU][dD][89a-fA-F][0-9a-fA-F]{2}|[\ud800-\udfff]")


def _check_keys(data: Any) -> None:
    """The one text rule for names: a key with a lone surrogate is refused (it names a field, a property, a
    header, and no database or exporter can write it); text values keep theirs, which every writer escapes."""
    todo = [data]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if not key.isascii():
                    try:
                        key.encode("utf-8")
                    except UnicodeEncodeError as exc:
                        raise TranscriptError(
                            f"a key holds a lone surrogate ({key[exc.start]!r}) at character {exc.start}"
                        ) from None
                todo.append(value)
        elif isinstance(item, list):
            todo.extend(item)


def _check_depth(utf8: bytes, text: str) -> None:
    # A fast scan of the brackets outside strings before parsing: json.loads recurses once per
    # level, and data far deeper than MAX_DEPTH cannot be written back
    depth = 0
    for byte in _STRING.sub(b"", utf8).translate(_ALL_SQUARE, _NOT_BRACKETS):
        depth += 1 if byte == 0x5B else -1
        if depth > MAX_DEPTH:
            break
    else:
        return
    depth, where = 0, ""
    for m in _STRING_OR_BRACKET.finditer(text):  # again, slowly, only to say where
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(m.group(), 0)
        if depth > MAX_DEPTH:
            at = m.start()
            where = f": line {text.count(chr(10), 0, at) + 1} column {at - text.rfind(chr(10), 0, at)}"
            break
    raise TranscriptError(f"nested more than {MAX_DEPTH} levels deep{where}")


def loads(text: str | bytes) -> Run:
    """A run from transcript JSON text; every refusal is a TranscriptError."""
    return from_dict(read_json(text))


def read_file(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """A file's bytes, read within `limit`: the one way every reader opens a file a person names.

    Only a regular file is read (a device such as /dev/zero, a FIFO that would block, a folder: refused before it
    is opened), its size is checked on the open handle and the read stops one byte past `limit`, so nothing larger
    is ever held. Every refusal is a one-line TranscriptError without the file's name (the caller adds it).
    """
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise TranscriptError("not a regular file (a device, a pipe or a folder is not read)")
        with open(path, "rb") as f:
            opened = os.fstat(f.fileno())
            if not stat.S_ISREG(opened.st_mode):  # swapped between the two looks
                raise TranscriptError("not a regular file (a device, a pipe or a folder is not read)")
            if opened.st_size > limit:
                raise TranscriptError(f"larger than {limit // 2**20} MB")
            raw = f.read(limit + 1)
    except OSError as exc:
        raise TranscriptError(f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise TranscriptError(f"larger than {limit // 2**20} MB")
    return raw


def load(path: str | Path) -> Run:
    """Read a transcript file; every failure is a TranscriptError with the file's name."""
    path = Path(path)
    try:
        text = read_file(path)
    except TranscriptError as exc:
        raise TranscriptError(f"{path}: {exc}") from None
    try:
        return loads(text)
    except TranscriptError as exc:
        raise TranscriptError(f"{path}: {exc}") from None


def save(run: Run, path: str | Path) -> None:
    """Write the transcript atomically (a temporary file, then a rename)."""
    write_atomic(path, dumps(run))


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write text (as UTF-8) or bytes to a temporary file beside `path`, then rename it over `path`.

    Only a file (or a link, which is replaced) is written over: a rename over a device (`/dev/null`) or a FIFO
    would replace it, so such a path is an OSError before anything is written, as a folder is.
    """
    path = Path(path)
    mode = path.lstat().st_mode if path.exists() or path.is_symlink() else stat.S_IFREG
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode)):  # a folder: the rename refuses it
        raise OSError(errno.EINVAL, "not a regular file; agentcore writes files only", str(path))
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a failed or interrupted save leaves the old file and no stray temporary
        raise

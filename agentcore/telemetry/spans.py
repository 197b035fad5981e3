"""OTLP-JSON read as spans: the file's bodies (one, JSON Lines of them, or Phoenix's snake_case download) and
each span's ids, times, status and attributes as plain values, every limit checked as it is read.

Every refusal is a TranscriptError of one line naming the span and the attribute.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from ..errors import TranscriptError
from ..messages import as_count
from ..transcript import read_json
from . import genai as g

MAX_SPANS = 100_000
MAX_BODIES = 10_000  # JSON Lines of OTLP bodies: the SDK's file exporter writes one per batch of spans
MAX_VALUE_CHARS = 16 * 2**20  # one attribute's value: a whole conversation fits, a runaway one does not
_MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "ollama": "ollama"}
_OI_KIND = "openinference.span.kind"


class Span:
    """One span of the file, read: its ids, name, times (ns), status and attributes (flat, plain values)."""

    def __init__(self, data: dict[str, Any], where: str) -> None:
        self.where = where
        self.trace = _key(data, "traceId", "trace_id")
        self.id = _key(data, "spanId", "span_id")
        self.parent = _key(data, "parentSpanId", "parent_span_id") or ""
        name = data.get("name")
        self.name = name if isinstance(name, str) else ""
        self.start = _nanos(_key(data, "startTimeUnixNano", "start_time_unix_nano"))
        self.end = max(self.start, _nanos(_key(data, "endTimeUnixNano", "end_time_unix_nano")))
        status = data.get("status") if isinstance(data.get("status"), dict) else {}
        self.failed = status.get("code") in (2, "STATUS_CODE_ERROR", "ERROR")
        message = status.get("message")
        self.status_message = message if isinstance(message, str) and message else None
        self.attributes = _attributes(data.get("attributes"), f"{where}.attributes")
        self.annotations = _annotation_events(data.get("events"), f"{where}.events")
        if not isinstance(self.trace, str) or not isinstance(self.id, str) or not self.trace or not self.id:
            raise TranscriptError(f"{where}: a span needs a traceId and a spanId")

    def label(self) -> str:
        return f"span {self.name[:60]!r} ({self.id[:16]})"

    def text(self, key: str) -> str | None:
        value = self.attributes.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise TranscriptError(f"{self.label()}: {key} is a {type(value).__name__}, expected a string")
        return value

    def count(self, *keys: str) -> int:
        """The first of `keys` the span holds, as a count; 0 when it holds none. A value that is no count (negative,
        fractional, infinite, past 10^12, text that is not digits) is refused, as every reader refuses one."""
        for key in keys:
            value = self.attributes.get(key)
            if value is None:
                continue
            digits = isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 19
            number = int(value) if digits else value
            if isinstance(number, int) and not isinstance(number, bool) and as_count(number) == number:
                return number
            raise TranscriptError(f"{self.label()}: {key} is not a count of tokens: {str(value)[:40]!r}")
        return 0

    def json(self, key: str) -> Any:
        """A structured attribute: a JSON string read within every reader's limits, or the value as it came."""
        return json_attribute(self.attributes.get(key), self, key)

    @property
    def call_id(self) -> str | None:
        """The tool call a tool span ran (gen_ai.tool.call.id); None when it names none it can be matched by."""
        value = self.attributes.get(g.TOOL_CALL_ID)
        return value if isinstance(value, str) and value else None

    @property
    def operation(self) -> str:
        op = self.attributes.get(g.OPERATION)
        if isinstance(op, str):
            return op
        kind = self.attributes.get(_OI_KIND)
        if kind == "LLM":
            return "chat"
        if kind == "TOOL":
            return "execute_tool"
        if kind == "AGENT":
            return "invoke_agent"
        return self.name.split(" ", 1)[0] if self.name.startswith(("chat ", "execute_tool ")) else ""

    @property
    def is_model(self) -> bool:
        return self.operation in _MODEL_OPERATIONS

    @property
    def is_tool(self) -> bool:
        return self.operation == "execute_tool"


def _key(data: dict[str, Any], camel: str, snake: str) -> Any:
    return data[camel] if camel in data else data.get(snake)


def _nanos(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return max(0, min(value, 2**63))
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 19:
        return int(value)
    if isinstance(value, str):  # Phoenix's download writes times as ISO text
        try:
            return int(datetime.fromisoformat(value).timestamp() * 1e9)
        except (ValueError, OverflowError):
            return 0
    return 0


def _value(value: Any, where: str, depth: int = 0) -> Any:
    """An OTLP AnyValue as a plain value (camelCase or snake_case keys; a null field is no field)."""
    if depth > 8:
        raise TranscriptError(f"{where}: values nested more than 8 levels deep")
    if not isinstance(value, dict):
        raise TranscriptError(f'{where}: an attribute value is an object such as {{"stringValue": ...}}')
    present = {k: v for k, v in value.items() if v is not None}
    for camel, snake in (("stringValue", "string_value"), ("boolValue", "bool_value"), ("doubleValue", "double_value")):
        if camel in present or snake in present:
            got = present.get(camel, present.get(snake))
            if camel == "stringValue" and isinstance(got, str) and len(got) > MAX_VALUE_CHARS:
                raise TranscriptError(f"{where}: a value of {len(got)} characters, over the {MAX_VALUE_CHARS} kept")
            return got
    if "intValue" in present or "int_value" in present:
        got = present.get("intValue", present.get("int_value"))
        if isinstance(got, str):
            if not re.fullmatch(r"-?\d{1,19}", got):
                raise TranscriptError(f"{where}: intValue {got[:30]!r} is not a 64-bit integer")
            return int(got)
        return got
    for camel, snake in (("arrayValue", "array_value"), ("kvlistValue", "kvlist_value")):
        inner = present.get(camel, present.get(snake))
        if isinstance(inner, dict):
            values = inner.get("values") or []
            if not isinstance(values, list):
                raise TranscriptError(f"{where}: expected a list of values")
            if camel == "arrayValue":
                return [_value(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(values)]
            return _attributes(values, where, depth + 1)
    return None


def _attributes(items: Any, where: str, depth: int = 0) -> dict[str, Any]:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise TranscriptError(f"{where}: expected a list of key-value pairs")
    out = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise TranscriptError(f"{where}[{i}]: an attribute is an object with a string key and a value")
        out[item["key"]] = _value(item.get("value"), f"{where}[{i}] ({item['key'][:60]})", depth)
    return out


# -- the file -------------------------------------------------------------------------


def is_otlp(data: Any) -> bool:
    """Whether parsed JSON data is an OTLP trace body, or Phoenix's span download (`{"data": [span, ...]}`)."""
    if not isinstance(data, dict):
        return False
    if "resourceSpans" in data or "resource_spans" in data:
        return True
    items = data.get("data")
    return isinstance(items, list) and bool(items) and isinstance(items[0], dict) and "span_id" in items[0]


def read_otlp(raw: bytes | str) -> list[dict[str, Any]]:
    """The OTLP bodies of a file: one JSON object, or JSON Lines of them, within every reader's limits."""
    try:
        return [read_json(raw)]
    except TranscriptError as exc:
        if "Extra data" not in str(exc):
            raise
    text = raw.decode("utf-8", "surrogatepass") if isinstance(raw, bytes) else raw
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > MAX_BODIES:  # counted before one is parsed: a file of empty bodies is refused at once
        raise TranscriptError(f"{len(lines):,} lines of OTLP bodies; a file holds at most {MAX_BODIES:,}")
    return [read_json(line) for line in lines]


def spans_of_bodies(bodies: list[Any]) -> list[Span]:
    spans: list[Span] = []
    for b, body in enumerate(bodies):
        where = f"line {b + 1}" if len(bodies) > 1 else "(top level)"
        if not is_otlp(body):
            raise TranscriptError(f"{where}: expected an OTLP trace body with resourceSpans")
        resources = _key(body, "resourceSpans", "resource_spans")
        for r, resource in enumerate(_list(resources, f"{where}.resourceSpans")):
            rwhere = f"resourceSpans[{r}]"
            scopes = _key(resource, "scopeSpans", "scope_spans") if isinstance(resource, dict) else None
            for s, scope in enumerate(_list(scopes, f"{rwhere}.scopeSpans")):
                items = scope.get("spans") if isinstance(scope, dict) else None
                for i, item in enumerate(_list(items, f"{rwhere}.scopeSpans[{s}].spans")):
                    at = f"{rwhere}.scopeSpans[{s}].spans[{i}]"
                    if not isinstance(item, dict):
                        raise TranscriptError(f"{at}: a span is a JSON object")
                    spans.append(Span(item, at))
                    if len(spans) > MAX_SPANS:
                        raise TranscriptError(f"more than {MAX_SPANS} spans in one file")
    return spans


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise TranscriptError(f"{where}: expected a list")
    return value


def spans_of_data(data: Any) -> list[Span]:
    """Spans from OTLP data: an OTLP body, or Phoenix's span download (`{"data": [span, ...]}`)."""
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        if len(data["data"]) > MAX_SPANS:  # counted before one is read, as the OTLP form's are
            raise TranscriptError(f"more than {MAX_SPANS} spans in one file")
        return [Span(item, f"data[{i}]") for i, item in enumerate(data["data"]) if isinstance(item, dict)]
    return spans_of_bodies([data])


MAX_ANNOTATIONS = 1_000  # a span's annotation events read; a person labels a step a few times


def _annotation_events(events: Any, where: str) -> list[tuple[int, dict[str, Any]]]:
    """A span's `agentcore.annotation` events: each one's time (ns) and attributes; other events are left alone."""
    if not isinstance(events, list):
        return []
    found = []
    for i, event in enumerate(events):
        if isinstance(event, dict) and event.get("name") == g.ANNOTATION:
            if len(found) == MAX_ANNOTATIONS:
                raise TranscriptError(f"{where}: more than {MAX_ANNOTATIONS} annotations on one span")
            stamp = _nanos(_key(event, "timeUnixNano", "time_unix_nano"))
            found.append((stamp, _attributes(event.get("attributes"), f"{where}[{i}].attributes")))
    return found


def json_attribute(value: Any, span: Span, key: str) -> Any:
    """An attribute's JSON string read within every reader's limits (None stays None)."""
    if not isinstance(value, str):
        return value
    try:
        return read_json(value)
    except TranscriptError as exc:
        raise TranscriptError(f"{span.label()}: {key} is {exc}") from None

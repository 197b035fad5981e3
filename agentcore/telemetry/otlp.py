"""Runs out as OTLP: an OTLP-JSON file, a send over OTLP/HTTP, and a live export of each step as it finishes.

The file is what an OTLP/HTTP JSON body is (`{"resourceSpans": [...]}`): the SDK's spans encoded by
opentelemetry-proto's encoder, written with protobuf's JSON mapping as OTLP asks (trace and span ids
in hex, enums as numbers), so Jaeger UI, Grafana Tempo and Phoenix load it. Sending uses the OTLP HTTP
exporter; every header value it is given, or reads from OTEL_EXPORTER_OTLP_HEADERS, is registered as
a secret first, so none is ever printed, logged or written.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
from opentelemetry.util.re import parse_env_headers

from ..errors import UsageError
from ..run import Run
from ..secrets import register_headers, register_secret, register_url, scrub_text, split_url
from ..transcript import json_text, one_line
from .export import root_span, run_spans, step_spans

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
HEADERS_ENV = "OTEL_EXPORTER_OTLP_HEADERS"
TRACES_HEADERS_ENV = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
TRACES_PATH = "/v1/traces"
SEND_TIMEOUT_S = 10.0
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def otlp_data(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """Spans as OTLP-JSON data: the body of an OTLP/HTTP JSON request."""
    data = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource in data.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                _hex_ids(span)
                for link in span.get("links", []):
                    _hex_ids(link)
    return data


def _hex_ids(item: dict[str, Any]) -> None:
    # protobuf's JSON mapping writes bytes as base64; OTLP/JSON writes trace and span ids as hex
    for key in _ID_FIELDS:
        if key in item:
            item[key] = base64.b64decode(item[key]).hex()


def otlp_json(run: Run, *, content: bool = False) -> str:
    """The run as an OTLP-JSON file's text, through the writer every export uses (no known secret in it)."""
    return json_text(otlp_data(run_spans(run, content=content)), indent=2)


def traces_url(url: str) -> str:
    """An OTLP/HTTP endpoint as a traces URL: a base such as http://host:4318 gets /v1/traces on its path, as the
    exporter specification builds a signal's URL from a base; a query is kept after it, a fragment dropped."""
    url = url.strip()
    register_url(url)  # its user:password and query values are never printed with it
    if not url.lower().startswith(("http://", "https://")):
        raise UsageError(f"--otlp {scrub_text(url)!r}: expected an http:// or https:// URL")
    parts = split_url(url)
    path = parts.path.rstrip("/")
    if not path.endswith(TRACES_PATH):
        path += TRACES_PATH
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def otlp_headers(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The headers a send carries: OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TRACES_HEADERS, then `extra`;
    every value registered as a secret."""
    headers = dict(parse_env_headers(os.environ.get(HEADERS_ENV, ""), liberal=True))
    headers.update(parse_env_headers(os.environ.get(TRACES_HEADERS_ENV, ""), liberal=True))  # the traces' own win
    headers.update(extra or {})
    for value in headers.values():
        register_secret(value)  # any header may carry a key (Langfuse's is basic auth, others an api key)
    register_headers(headers)
    return headers


class _Reasons(logging.Handler):
    """Keeps what the exporter logs while it sends, so a failure is one line, not a logged traceback."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


_GENERIC = "Failed to export spans batch due to timeout"


def _reason(lines: list[str]) -> str:
    """The cause among what the exporter logged: the system's error (connection refused), else its own words."""
    for line in reversed(lines):
        found = re.search(r"\[Errno -?\d+\] [^\"')]+", line)
        if found:
            return found.group().strip()
    told = [line for line in lines if not line.startswith(_GENERIC)]
    if told:
        return re.sub(r",? ?(encountered while exporting|retrying in).*$", "", told[-1])[:300]
    return "the endpoint did not accept the spans in time"


def _quietly(send: Callable[[], SpanExportResult]) -> tuple[SpanExportResult, list[str]]:
    logger = logging.getLogger("opentelemetry.exporter")
    reasons = _Reasons()
    was = logger.propagate
    logger.addHandler(reasons)
    logger.propagate = False
    try:
        return send(), reasons.lines
    finally:
        logger.removeHandler(reasons)
        logger.propagate = was


def send_spans(spans: Sequence[ReadableSpan], url: str, headers: dict[str, str] | None = None) -> None:
    """Send spans to an OTLP/HTTP endpoint; a failure is a UsageError of one line, its reason scrubbed."""
    target = traces_url(url)
    exporter = OTLPSpanExporter(endpoint=target, headers=otlp_headers(headers), timeout=SEND_TIMEOUT_S)
    try:
        result, reasons = _quietly(lambda: exporter.export(list(spans)))
    finally:
        exporter.shutdown()
    if result != SpanExportResult.SUCCESS:
        why = _reason(reasons)
        raise UsageError(one_line(scrub_text(f"could not send the trace to {target}: {why}")))


def send_run(run: Run, url: str, *, content: bool = False) -> int:
    """Send the run's trace to an OTLP/HTTP endpoint; returns the number of spans sent."""
    spans = run_spans(run, content=content)
    send_spans(spans, url)
    return len(spans)


class LiveExport:
    """Sends each finished step's spans in the background, and the run's root span once it stops.

    Built from OTEL_EXPORTER_OTLP_ENDPOINT (`from_env`); content is sent only when asked for. A failure
    never stops a run: the last one is kept in `problem`, one line, for the page to show.
    """

    def __init__(self, url: str, *, content: bool = False) -> None:
        self.url = traces_url(url)
        self.content = content
        self.problem: str | None = None
        self.sent: set[tuple[str, int]] = set()
        self._lock = threading.Lock()
        exporter = _Recording(self, endpoint=self.url, headers=otlp_headers(), timeout=SEND_TIMEOUT_S)
        self.processor = BatchSpanProcessor(exporter, schedule_delay_millis=500)

    @classmethod
    def from_env(cls, *, content: bool = False) -> LiveExport | None:
        """A live export to OTEL_EXPORTER_OTLP_ENDPOINT, or None when it is not set."""
        url = os.environ.get(ENDPOINT_ENV, "").strip()
        return cls(url, content=content) if url else None

    def step_finished(self, run: Run) -> None:
        """Queue the spans of each step of `run` not sent yet whose phases are over, and the root once it stopped.

        Nothing it meets stops the run: a span that cannot be built is this export's problem, in one line.
        """
        try:
            self._queue(run)
        except Exception as exc:  # noqa: BLE001 - an observer of the loop must never end the run it watches
            detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            self.problem = one_line(scrub_text(f"OpenTelemetry export of run {run.id} failed: {detail}"))

    def _queue(self, run: Run) -> None:
        done = len(run.steps) if run.next_phase == "model" or run.finished else len(run.steps) - 1
        with self._lock:
            for index in range(1, done + 1):
                if (run.id, index) not in self.sent:
                    self.sent.add((run.id, index))
                    for span in step_spans(run, index, content=self.content):
                        self.processor.on_end(span)
            if (run.finished or run.stop_reason is not None) and (run.id, 0) not in self.sent:
                self.sent.add((run.id, 0))
                self.processor.on_end(root_span(run, content=self.content))

    def flush(self, timeout_ms: int = 5000) -> bool:
        """Send what is queued now; whether it went within `timeout_ms`."""
        return self.processor.force_flush(timeout_ms)

    def close(self) -> None:
        self.processor.shutdown()


class _Recording(OTLPSpanExporter):
    """The OTLP HTTP exporter, keeping its last failure as one line on the live export instead of logging it."""

    def __init__(self, live: LiveExport, **options: Any) -> None:
        super().__init__(**options)
        self.live = live

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result, reasons = _quietly(lambda: super(_Recording, self).export(spans))
        except Exception as exc:  # noqa: BLE001 - the batch thread must go on: the failure is the problem line
            result, reasons = SpanExportResult.FAILURE, [f"{type(exc).__name__}: {exc}"]
        if result != SpanExportResult.SUCCESS:
            why = _reason(reasons)
            self.live.problem = one_line(scrub_text(f"OpenTelemetry export to {self.live.url} failed: {why}"))
        else:
            self.live.problem = None
        return result

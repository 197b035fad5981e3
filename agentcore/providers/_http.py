"""What the wire-format providers share: the HTTP transport, the event stream and HttpProvider's one `complete()`.

An adapter keeps only its wire format. A stream reaches it as decoded events, already kept in
the exchange; what it finds wrong in a response it raises as a BadResponse, and HttpProvider
alone builds the ProviderError, with the provider, status, attempt count and exchange.

Retried: connection errors and timeouts, 408, 409, 429, every 5xx (Anthropic's 529
included), unless the server says `x-should-retry: false`; `x-should-retry: true`
retries any status. The wait honours `retry-after-ms` and `retry-after`, else it is
an exponential backoff with jitter, and all waits of one call stay within a budget.
A call as a whole, retries included, stays within its deadline, and what it reads within
the caps on a body and a stream (see `_limits`).
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, NamedTuple

import httpx

from .. import catalogue
from ..errors import ProviderError, UsageError
from ..messages import Violation, validate_messages
from ..secrets import StreamScrubber, redact_headers, register_headers, register_secret, register_url, scrub
from . import ProviderInfo, get_info
from ._limits import (
    ACCEPT_ENCODING,
    DEFAULT_DEADLINE,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_STREAM_BYTES,
    DEFAULT_MAX_STREAM_EVENTS,
    ERROR_BODY_BYTES,
    LIMIT_OPTIONS,
    ResponseReader,
    deadline_error,
    describe,
    snippet,
)
from .base import BaseProvider, ModelRequest, ModelResponse, TextSink, WireExchange, estimate_request_tokens
from .keys import server_key

RETRY_STATUSES = frozenset({408, 409, 429})
REQUEST_ID_HEADERS = ("x-request-id", "request-id", "anthropic-request-id")


class HttpTransport:
    """POSTs JSON for one provider, retrying what is worth retrying and recording the exchange.

    `timeout` bounds each read and `deadline` the whole call: connecting, retries and the whole
    response (seconds). `max_body_bytes` caps a whole body once decompressed, `max_stream_events`
    and `max_stream_bytes` a streamed one. `retry_base` and `retry_cap` shape the backoff (seconds),
    `retry_budget` bounds the sum of all waits of one call, `max_retry_wait` is the longest
    server-asked wait honoured. `transport` (an httpx transport) and `sleep` exist so tests need
    no network and no waiting.
    """

    def __init__(
        self,
        provider: str,
        *,
        timeout: float = 60,
        max_retries: int = 2,
        retry_base: float = 0.5,
        retry_cap: float = 8.0,
        retry_budget: float = 60.0,
        max_retry_wait: float = 60.0,
        deadline: float = DEFAULT_DEADLINE,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_stream_events: int = DEFAULT_MAX_STREAM_EVENTS,
        max_stream_bytes: int = DEFAULT_MAX_STREAM_BYTES,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.provider = provider
        self.max_retries = max(0, int(max_retries))
        self.retry_base = retry_base
        self.retry_cap = retry_cap
        self.retry_budget = retry_budget
        self.max_retry_wait = max_retry_wait
        self.timeout = _positive(provider, "timeout", timeout)
        self.deadline = _positive(provider, "deadline", deadline)
        self.max_body_bytes = _positive(provider, "max_body_bytes", max_body_bytes, int)
        self.max_stream_events = _positive(provider, "max_stream_events", max_stream_events, int)
        self.max_stream_bytes = _positive(provider, "max_stream_bytes", max_stream_bytes, int)
        self.sleep = sleep
        self.client = httpx.Client(headers={"accept-encoding": ACCEPT_ENCODING}, transport=transport)
        self.last_attempts = 0
        self.last_waits: list[float] = []

    def __repr__(self) -> str:
        return f"HttpTransport(provider={self.provider!r}, max_retries={self.max_retries})"

    def post(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[Any, WireExchange]:
        """Send a request and return the decoded JSON body and the exchange; a ProviderError on failure."""
        with self.stream(url, body, headers) as reader:
            return reader.json(), reader.wire

    @contextmanager
    def stream(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> Iterator[ResponseReader]:
        """Open a response (retries happen before the first byte), to be read within the call's limits."""
        deadline_at = time.monotonic() + self.deadline
        register_headers(headers)  # a credential sent in any header is scrubbed from all output from now on
        response, wire = self._send(url, body, headers, deadline_at)
        try:
            yield ResponseReader(self, response, wire, deadline_at)
        finally:
            response.close()

    def error(self, message: str, wire: WireExchange | None, **fields: Any) -> ProviderError:
        """A ProviderError of this provider, carrying the exchange and the attempt count."""
        return ProviderError(message, provider=self.provider, wire=wire, attempts=self.last_attempts, **fields)

    # -- internals ---------------------------------------------------------------------

    def _send(
        self, url: str, body: dict[str, Any], headers: dict[str, str], deadline_at: float
    ) -> tuple[httpx.Response, WireExchange]:
        self.last_attempts = 0
        self.last_waits = []
        waited = 0.0
        for attempt in range(self.max_retries + 1):
            left = deadline_at - time.monotonic()
            if left <= 0:
                raise deadline_error(self, None)
            request = self.client.build_request("POST", url, json=body, headers=headers, timeout=self._timeout(left))
            wire = WireExchange(url=url, request_headers=redact_headers(request.headers), request=body)
            self.last_attempts = attempt + 1
            try:
                response = self.client.send(request, stream=True)
            except httpx.HTTPError as exc:
                if isinstance(exc, httpx.TimeoutException) and time.monotonic() >= deadline_at - 0.01:
                    raise deadline_error(self, wire) from None
                delay = self._backoff(attempt)
                if self._may_retry(attempt, waited, delay, deadline_at):
                    waited += self._wait(delay)
                    continue
                raise self.error(
                    f"cannot reach {url}: {describe(exc)}", wire, type="connection_error", retryable=True
                ) from None
            wire.status = response.status_code
            wire.response_headers = redact_headers(response.headers)
            if response.status_code < 400:
                return response, wire
            text = self._error_body(ResponseReader(self, response, wire, deadline_at))
            retry = _should_retry(response)
            delay = self._retry_delay(attempt, response.headers) if retry else None
            if retry and delay is not None and self._may_retry(attempt, waited, delay, deadline_at):
                waited += self._wait(delay)
                continue
            raise self._status_error(response, text, wire, retryable=retry)
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def _timeout(self, left: float) -> httpx.Timeout:
        # no single read or connect may outlast the call's deadline
        read = min(self.timeout, left)
        return httpx.Timeout(read, connect=min(read, 10.0))

    def _error_body(self, reader: ResponseReader) -> str:
        """An error status's body, cut at ERROR_BODY_BYTES and kept once in the exchange."""
        try:
            raw = reader.body(ERROR_BODY_BYTES, cut=True)
        except ProviderError:
            raw = b""  # broken off or past the deadline: the status is what there is to report
        finally:
            reader.response.close()
        text = raw.decode("utf-8", errors="replace")
        try:
            reader.wire.response = json.loads(text)
        except ValueError:
            reader.wire.keep_body(raw)
        return text

    def _may_retry(self, attempt: int, waited: float, delay: float, deadline_at: float) -> bool:
        return (
            attempt < self.max_retries
            and waited + delay <= self.retry_budget
            and time.monotonic() + delay < deadline_at
        )

    def _wait(self, delay: float) -> float:
        self.last_waits.append(delay)
        self.sleep(delay)
        return delay

    def _backoff(self, attempt: int) -> float:
        # full exponential step, minus up to a quarter of jitter so clients do not retry in lockstep
        return min(self.retry_base * 2**attempt, self.retry_cap) * (1 - 0.25 * random.random())

    def _retry_delay(self, attempt: int, headers: httpx.Headers) -> float | None:
        asked = server_retry_delay(headers)
        if asked is None:
            return self._backoff(attempt)
        if asked > self.max_retry_wait:
            return None  # the server wants longer than a step should hang; fail now, the run can be retried
        return max(asked, 0.0)

    def _status_error(self, response: httpx.Response, text: str, wire: WireExchange, retryable: bool) -> ProviderError:
        message, kind, body_request_id = parse_error_body(response.status_code, response.headers, text)
        asked = server_retry_delay(response.headers)
        if retryable and asked is not None and asked > self.max_retry_wait:
            message += f" (the server asks to retry after {asked:.0f} s)"
        request_id = next((response.headers[h] for h in REQUEST_ID_HEADERS if h in response.headers), None)
        return self.error(
            message,
            wire,
            status=response.status_code,
            type=kind,
            request_id=request_id or body_request_id,
            retryable=retryable,
        )


def _should_retry(response: httpx.Response) -> bool:
    explicit = response.headers.get("x-should-retry", "").strip().lower()
    if explicit in ("true", "false"):
        return explicit == "true"
    return response.status_code in RETRY_STATUSES or response.status_code >= 500


def server_retry_delay(headers: httpx.Headers | dict[str, str]) -> float | None:
    """The wait a server asks for in `retry-after-ms` or `retry-after` (seconds or an HTTP date), if any."""
    headers = httpx.Headers(headers)
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def parse_error_body(status: int, headers: httpx.Headers, text: str) -> tuple[str, str | None, str | None]:
    """Message, type and request id from any vendor's error body, or a one-line summary of a non-JSON one."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error")
        request_id = data.get("request_id") if isinstance(data.get("request_id"), str) else None
        if isinstance(err, dict):
            kind = err.get("type") or err.get("code")
            message = err.get("message") or json.dumps(err)
            return snippet(str(message)), str(kind) if kind else None, request_id
        if isinstance(err, str):  # Ollama: {"error": "..."}
            return snippet(err), None, request_id
        if "detail" in data:  # FastAPI-style servers
            return snippet(json.dumps(data["detail"])), None, request_id
        if "message" in data:
            return snippet(str(data["message"])), None, request_id
    ctype = headers.get("content-type", "no content type").split(";")[0]
    if not text.strip():
        return f"HTTP {status} with an empty body", None, None
    title = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    summary = title.group(1) if title else re.sub(r"<[^>]+>", " ", text)
    return f"HTTP {status} with a non-JSON body ({ctype}): {snippet(summary)}", None, None


class BadResponse(Exception):
    """What a wire format finds wrong in a response, or a failure the response itself reports.

    The mapping functions raise it with no transport at hand; HttpProvider turns it into the
    ProviderError that carries the provider, the status, the attempt count and the exchange.
    """

    def __init__(self, message: str, *, type: str | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.type = type
        self.retryable = retryable


class StreamEvent(NamedTuple):
    """One streamed event: its SSE name (None on NDJSON or an unnamed event), its decoded payload, its text as sent."""

    name: str | None
    data: Any
    text: str


class EventStream:
    """A streamed body's events, each decoded within the call's limits and kept in order as the exchange's response."""

    def __init__(self, reader: ResponseReader) -> None:
        self.reader = reader
        self.wire = reader.wire
        self.events: list[Any] = []
        self.wire.response = self.events
        self.ended = False  # the server's end marker came (Chat Completions' [DONE])

    def sse(self, end: str | None = None) -> Iterator[StreamEvent]:
        """Server-sent events in order; a payload equal to `end` is not an event: it ends them and sets `ended`."""
        for name, text in iter_sse(self.reader.lines()):
            if end is not None and text.strip() == end:
                self.ended = True
                return
            yield self._keep(name, text)

    def ndjson(self) -> Iterator[StreamEvent]:
        """Newline-delimited JSON objects in order; blank lines are skipped."""
        for line in self.reader.lines():
            if line.strip():
                yield self._keep(None, line)

    def _keep(self, name: str | None, text: str) -> StreamEvent:
        data = self.reader.event(text)
        self.events.append(data)
        return StreamEvent(name, data, text)


def iter_sse(lines: Iterator[str]) -> Iterator[tuple[str | None, str]]:
    """Server-sent events from text lines: (event name or None, data) for each event."""
    event: str | None = None
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield event, "\n".join(data)
            event, data = None, []
        elif line.startswith(":"):
            continue  # a comment, used as a keep-alive
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)
    if data:
        yield event, "\n".join(data)


TRANSPORT_OPTIONS = frozenset(
    {"retry_base", "retry_cap", "retry_budget", "max_retry_wait", "transport", "sleep", *LIMIT_OPTIONS}
)


def _positive(provider: str, name: str, value: Any, kind: type[float] | type[int] = float) -> Any:
    """A limit's value as a number above zero; anything else is a UsageError (no limit may be switched off)."""
    try:
        number = kind(value)
    except (TypeError, ValueError, OverflowError):
        number = 0
    if not number > 0:
        raise UsageError(f"{provider}: {name} must be a number above zero, not {value!r}")
    return number


def _configured(value: str | None, env: str | None, default: str | None = None) -> str | None:
    """The explicit value, else the environment variable, else the default; blank counts as unset."""
    if value:
        return value
    return (os.environ.get(env) if env else None) or default


class HttpProvider(BaseProvider, ABC):
    """What the HTTP providers share: settings from the registry, the key in memory only, one `complete()`.

    A wire format fills in `url`, `body`, `parse_response` and `read_stream`, and `headers` where
    its credentials do not go as a bearer token; what it finds wrong in a response it raises as a
    BadResponse, which becomes a ProviderError here.
    """

    extra_options: ClassVar[frozenset[str]] = frozenset()
    # `stream=False` answers in one piece even when text is wanted as it comes: some compatible
    # servers (llama-cpp-python's) report usage only on unstreamed responses
    common_options: ClassVar[frozenset[str]] = frozenset({"stream"})

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60,
        max_retries: int = 2,
        **options: Any,
    ) -> None:
        super().__init__(model)
        info = self.info
        self.base_url = (_configured(base_url, info.base_url_env, info.default_base_url) or "").rstrip("/")
        register_url(self.base_url)  # a proxy's user:password or ?key= in the URL is a credential too
        # memory only: never in repr, wire, transcript or error text; the server's own key only where keys.py lets it go
        self._api_key = api_key or server_key(info, base_url)
        register_secret(self._api_key)
        if not self._api_key and info.key_env and self.official:
            raise UsageError(
                f"{self.name}: no API key; set {info.key_env} or pass one (a compatible server's base URL needs none)"
            )
        unknown = set(options) - TRANSPORT_OPTIONS - self.extra_options - self.common_options
        if unknown:
            raise UsageError(f"{self.name}: unknown option(s) {', '.join(sorted(unknown))}")
        self.options = {k: v for k, v in options.items() if k in self.extra_options}
        self.stream = bool(options.get("stream", True))
        self.http = HttpTransport(
            self.name,
            timeout=timeout,
            max_retries=max_retries,
            **{k: v for k, v in options.items() if k in TRANSPORT_OPTIONS},
        )

    def __repr__(self) -> str:  # never shows a key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def info(self) -> ProviderInfo:
        """This provider's registry entry: its key variable, base URL variable and default URL."""
        return get_info(self.name)

    @property
    def official(self) -> bool:
        """Whether this talks to the vendor's own API (the registry's default URL), not a compatible server."""
        return self.base_url == self.info.default_base_url

    def preflight(self, request: ModelRequest) -> list[Violation]:
        """Rules every tool-calling API enforces: no orphan tool result, no unanswered tool call.

        A setting the model refuses, or a request past its context window, is a UsageError (check_request).
        """
        self.check_request(request)
        return validate_messages(list(request.messages), final=True)

    def check_request(self, request: ModelRequest) -> None:
        """Refuse before sending what the server would answer with a 400: a setting this model does not
        take (the catalogue's rules) or a request larger than its context window."""
        problem = catalogue.check_settings(
            self.name, self.model, request.settings, tools=bool(request.tools)
        ) or catalogue.overflow(self.name, self.model, estimate_request_tokens(request))
        if problem:
            raise UsageError(f"{self.name}: {problem}")

    def complete(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelResponse:
        """One call to the endpoint; streamed when `on_text` is given, unless the `stream` option turned that off.

        A server may echo the request's key back in its answer: every known secret is removed
        from the streamed text and from the response before anything else sees them.
        """
        self.check_request(request)
        sink = StreamScrubber(on_text) if on_text is not None else None
        result = self._call(request, sink)
        if sink is not None:
            sink.close()
        return scrub(result)

    def _call(self, request: ModelRequest, on_text: TextSink | None) -> ModelResponse:
        if on_text is None or not self.stream:
            data, wire = self.http.post(self.url, self.body(request), self.headers())
            with self._reading(wire):
                return self._whole(data, request, wire, on_text)
        with self.http.stream(self.url, self.body(request, stream=True), self.headers()) as reader:
            with self._reading(reader.wire):
                if "application/json" in reader.headers.get("content-type", ""):
                    # some servers answer a streamed request with one plain response (llm-katan with tools)
                    return self._whole(reader.json(), request, reader.wire, on_text)
                return self.read_stream(EventStream(reader), request, on_text)

    @contextmanager
    def _reading(self, wire: WireExchange) -> Iterator[None]:
        """A BadResponse raised while a response is read, as this provider's ProviderError about that response."""
        try:
            yield
        except BadResponse as exc:
            raise self.http.error(
                exc.message, wire, status=wire.status, type=exc.type, retryable=exc.retryable
            ) from None

    def _whole(self, data: Any, request: ModelRequest, wire: WireExchange, on_text: TextSink | None) -> ModelResponse:
        result = self.parse_response(data, request, wire)
        if on_text is not None and result.message.content:
            on_text(result.message.content)  # the whole text as one delta: a page shows it as if streamed
        return result

    # -- what each wire format fills in ------------------------------------------------

    @property
    @abstractmethod
    def url(self) -> str:
        """The endpoint every request is POSTed to."""

    def headers(self) -> dict[str, str]:
        """Request headers: JSON both ways, and the key as a bearer token when there is one."""
        headers = {"content-type": "application/json", "accept": "application/json"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers

    @abstractmethod
    def body(self, request: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
        """The request body this provider sends."""

    @abstractmethod
    def parse_response(self, data: Any, request: ModelRequest, wire: WireExchange) -> ModelResponse:
        """A whole response body as a ModelResponse; a malformed one raises BadResponse."""

    @abstractmethod
    def read_stream(self, stream: EventStream, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """A streamed response as a ModelResponse, each text delta passed to `on_text` as it arrives.

        Its events come decoded, within the limits and already kept in the exchange, from `stream.sse()`
        or `stream.ndjson()`; a malformed or failed one raises BadResponse.
        """

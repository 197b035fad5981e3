"""What one provider call may take: a deadline, a cap on a whole body, caps on a stream.

Every body is read as it arrives and counted, never with `response.read()`: a gzip body is
inflated at most CHUNK bytes at a time, so a small compressed reply cannot balloon in one step,
and the deadline is checked between chunks and between events, so a trickled body cannot
outlast it. Each limit reached is a ProviderError naming the setting that raises it.
"""

from __future__ import annotations

import codecs
import json
import re
import time
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx

from ..errors import ProviderError
from .base import WireExchange

if TYPE_CHECKING:
    from ._http import HttpTransport

DEFAULT_DEADLINE = 600.0  # seconds for one call: connecting, retries and the whole response
DEFAULT_MAX_BODY_BYTES = 32 * 2**20  # a whole (unstreamed) body, once decompressed
DEFAULT_MAX_STREAM_EVENTS = 100_000
DEFAULT_MAX_STREAM_BYTES = 32 * 2**20  # a streamed body, once decompressed
LIMIT_OPTIONS = frozenset({"deadline", "max_body_bytes", "max_stream_events", "max_stream_bytes"})
ERROR_BODY_BYTES = 64 * 1024  # of an error status's body: enough for any vendor's error message
ACCEPT_ENCODING = "gzip, deflate"  # only what is inflated here in bounded steps
CHUNK = 64 * 1024
_NEWLINE = re.compile(r"\r\n|\r|\n")


class ResponseReader:
    """One response of a call, read within the call's limits; a limit reached is a ProviderError."""

    def __init__(
        self, transport: HttpTransport, response: httpx.Response, wire: WireExchange, deadline_at: float
    ) -> None:
        self.transport = transport
        self.response = response
        self.wire = wire
        self.deadline_at = deadline_at
        self.events = 0

    @property
    def headers(self) -> httpx.Headers:
        """The response headers."""
        return self.response.headers

    def json(self) -> Any:
        """The whole body as JSON, kept once in the exchange; a body that is not JSON is a ProviderError."""
        raw = self.body(self.transport.max_body_bytes)
        try:
            data = json.loads(raw)
        except ValueError:
            self.wire.keep_body(raw)
            ctype = self.headers.get("content-type", "?")
            raise self.error(f"the response is not JSON ({ctype}): {snippet(self.wire.response)}") from None
        self.wire.response = data
        return data

    def body(self, cap: int, *, cut: bool = False) -> bytearray:
        """The decompressed body; over `cap` bytes it is cut there if `cut`, else a ProviderError."""
        declared = self.headers.get("content-length", "")
        if not cut and "content-encoding" not in self.headers and declared.isdigit() and int(declared) > cap:
            raise self._too_large(cap)  # no need to read what cannot be accepted
        buffer = bytearray()
        for chunk in self._chunks():
            buffer += chunk
            if len(buffer) > cap:
                if cut:
                    del buffer[cap:]
                    break
                raise self._too_large(cap)
        return buffer  # not bytes(buffer): a copy of a large body is what this module avoids

    def lines(self) -> Iterator[str]:
        """A streamed body's lines (SSE or NDJSON) as they arrive, within `max_stream_bytes` and the deadline."""
        return split_lines(self._stream_chunks())

    def event(self, data: str) -> Any:
        """Decode one streamed JSON payload, counted against `max_stream_events`; malformed is a ProviderError."""
        self.events += 1
        cap = self.transport.max_stream_events
        if self.events > cap:
            raise self.error(
                f"the stream sent more than {cap} events; raise the max_stream_events setting to accept more"
            )
        self._check_deadline()
        try:
            return json.loads(data)
        except ValueError:
            raise self.error(f"a streamed event is not JSON: {snippet(data)}") from None

    def error(self, message: str, **fields: Any) -> ProviderError:
        """A ProviderError about this response, with its status and exchange."""
        return self.transport.error(message, self.wire, status=self.response.status_code, **fields)

    def _stream_chunks(self) -> Iterator[bytes]:
        cap = self.transport.max_stream_bytes
        total = 0
        for chunk in self._chunks():
            total += len(chunk)
            if total > cap:
                raise self.error(
                    f"the stream is over {_size(cap)}; raise the max_stream_bytes setting (now {cap}) to accept more"
                )
            yield chunk

    def _chunks(self) -> Iterator[bytes]:
        try:
            for chunk in decoded_chunks(self.response):
                self._check_deadline()
                yield chunk
        except httpx.TimeoutException as exc:
            if time.monotonic() >= self.deadline_at - 0.01:  # the read's timeout was the time left
                raise self._past_deadline() from None
            raise self.error(f"the response broke off: {describe(exc)}") from None
        except (httpx.DecodingError, zlib.error) as exc:
            encoding = self.headers.get("content-encoding")
            raise self.error(f"the response body cannot be decoded ({encoding}): {exc}") from None
        except httpx.HTTPError as exc:
            raise self.error(f"the response broke off: {describe(exc)}") from None

    def _check_deadline(self) -> None:
        if time.monotonic() > self.deadline_at:
            raise self._past_deadline()

    def _past_deadline(self) -> ProviderError:
        return deadline_error(self.transport, self.wire, status=self.response.status_code)

    def _too_large(self, cap: int) -> ProviderError:
        return self.error(
            f"the response body is over {_size(cap)} decompressed; "
            f"raise the max_body_bytes setting (now {cap}) to accept it"
        )


def deadline_error(transport: HttpTransport, wire: WireExchange | None, **fields: Any) -> ProviderError:
    """The call ran past its deadline: a ProviderError naming the setting."""
    return transport.error(
        f"no complete response within the deadline of {transport.deadline:g} s; "
        "raise the deadline setting to wait longer",
        wire,
        type="deadline_exceeded",
        retryable=True,
        **fields,
    )


def decoded_chunks(response: httpx.Response) -> Iterator[bytes]:
    """The body as it arrives, inflated at most CHUNK bytes at a time; an encoding not asked for is refused."""
    if response.is_stream_consumed:  # built whole in memory (a test's transport): httpx has decoded it
        yield from response.iter_bytes()
        return
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        yield from response.iter_raw()
    elif encoding in ("gzip", "x-gzip", "deflate"):
        yield from _inflate(response.iter_raw(), raw_deflate_ok=encoding == "deflate")
    else:  # br, zstd or stacked codings: their decoders inflate a whole network chunk at once
        raise httpx.DecodingError(f"content-encoding {encoding!r} was not asked for (only {ACCEPT_ENCODING})")


def inflated(inflater: Any, chunk: bytes) -> Iterator[bytes]:
    """The inflated pieces of one compressed chunk, none longer than CHUNK, so a bomb never lands whole in memory."""
    pending = chunk
    while True:
        out = inflater.decompress(pending, CHUNK)
        pending = inflater.unconsumed_tail
        if out:
            yield out
        if not pending and len(out) < CHUNK:
            return


def _inflate(raw: Iterator[bytes], *, raw_deflate_ok: bool) -> Iterator[bytes]:
    inflater: Any = None
    for chunk in raw:
        if inflater is None:
            # `deflate` is zlib-wrapped by the RFC; some servers send it bare, which httpx accepts too
            bare = raw_deflate_ok and not _zlib_header(chunk)
            inflater = zlib.decompressobj(-zlib.MAX_WBITS if bare else zlib.MAX_WBITS | 32)
        yield from inflated(inflater, chunk)
    if inflater is not None:
        tail = inflater.flush()
        if tail:
            yield tail


def _zlib_header(data: bytes) -> bool:
    return len(data) > 1 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0


def split_lines(chunks: Iterator[bytes]) -> Iterator[str]:
    """Text lines from UTF-8 chunks, split on CR, LF or CRLF (SSE's line ends), never on U+2028 in a JSON string."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    partial: list[str] = []
    after_cr = False
    for chunk in chunks:
        text = decoder.decode(chunk)
        if not text:
            continue
        if after_cr and text.startswith("\n"):
            text = text[1:]  # the LF of a CRLF split across chunks
        after_cr = text.endswith("\r")
        parts = _NEWLINE.split(text)
        if len(parts) == 1:
            partial.append(parts[0])
            continue
        yield "".join(partial) + parts[0]
        yield from parts[1:-1]
        partial = [parts[-1]]
    rest = "".join(partial) + decoder.decode(b"", final=True)
    if rest:
        yield rest


def snippet(text: Any, limit: int = 300) -> str:
    """Text on one line, cut at `limit` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


def describe(exc: Exception) -> str:
    """An exception as `Type: detail` on one line."""
    detail = str(exc).strip()
    return f"{type(exc).__name__}: {snippet(detail)}" if detail else type(exc).__name__


def _size(n: int) -> str:
    return f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n} bytes"

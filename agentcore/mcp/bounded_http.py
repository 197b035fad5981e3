"""The HTTP client an MCP server is reached through: every reply bounded once decompressed.

The SDK reads a JSON reply whole (`response.aread()`), so a gzip body of a few hundred KiB could
inflate to gigabytes in memory. Here a response hook hands each reply's raw bytes to an inflater
of our own, which inflates CHUNK bytes at a time, as a provider's replies are read, and stops
past MAX_RESPONSE_BYTES with a StreamError: the SDK answers the request with that error and the
session goes on. An event stream is long-lived and the SDK bounds each of its events, so it is
inflated the same way but not capped as a whole. Only `gzip` and `deflate` are asked for.

It imports the SDK's HTTP library, so it is imported only when an HTTP server is started.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
from mcp.shared._httpx_utils import create_mcp_http_client

from ..providers._limits import ACCEPT_ENCODING, inflated

MAX_RESPONSE_BYTES = 32 * 2**20  # one HTTP reply that is not an event stream, once decompressed


def http_client(headers: dict[str, str] | None) -> httpx2.AsyncClient:
    """The SDK's HTTP client for a streamable HTTP server, with every reply bounded once decompressed."""
    client = create_mcp_http_client(headers={"Accept-Encoding": ACCEPT_ENCODING, **(headers or {})})
    client.event_hooks["response"].append(_bound)
    return client


async def _bound(response: httpx2.Response) -> None:
    """Read the reply through a bounded inflater of our own instead of the HTTP library's decoder."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    # an event stream is long-lived: the SDK bounds each of its events, so only a single reply is capped whole
    streamed = response.headers.get("content-type", "").lower().startswith("text/event-stream")
    response.stream = _BoundedStream(response.stream, encoding, None if streamed else MAX_RESPONSE_BYTES)
    if "content-encoding" in response.headers:
        del response.headers["content-encoding"]  # inflated here: the library must not inflate it again


class _BoundedStream(httpx2.AsyncByteStream):
    """A reply's raw bytes, inflated CHUNK bytes at a time and counted; past the cap, an error the SDK reports."""

    def __init__(self, raw: Any, encoding: str, cap: int | None) -> None:
        self.raw, self.encoding, self.cap = raw, encoding, cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            raise _refused(f"content-encoding {self.encoding!r} was not asked for ({ACCEPT_ENCODING})")
        inflater: Any = None
        total = 0
        async for chunk in self.raw:
            if self.encoding in ("", "identity"):
                pieces: Iterator[bytes] = iter((chunk,))
            else:
                if inflater is None:
                    # `deflate` is zlib-wrapped by the RFC; some servers send it bare
                    bare = self.encoding == "deflate" and not _zlib_header(chunk)
                    inflater = zlib.decompressobj(-zlib.MAX_WBITS if bare else zlib.MAX_WBITS | 32)
                pieces = _inflate(inflater, chunk)
            for piece in pieces:
                total += len(piece)
                if self.cap is not None and total > self.cap:
                    raise _refused(f"the reply is over {self.cap // 2**20} MiB once decompressed")
                yield piece
        tail = inflater.flush() if inflater is not None else b""
        if tail:
            if self.cap is not None and total + len(tail) > self.cap:
                raise _refused(f"the reply is over {self.cap // 2**20} MiB once decompressed")
            yield tail

    async def aclose(self) -> None:
        await self.raw.aclose()


def _inflate(inflater: Any, chunk: bytes) -> Iterator[bytes]:
    """The inflated pieces of one compressed chunk, none longer than CHUNK; a corrupt chunk refuses the reply."""
    try:
        yield from inflated(inflater, chunk)
    except zlib.error as exc:
        raise _refused(f"the reply cannot be decompressed: {exc}") from None


def _refused(why: str) -> Exception:
    """The error for a reply that is not read: a StreamError, which the SDK answers the request with, session intact."""
    return httpx2.StreamError(why)


def _zlib_header(data: bytes) -> bool:
    return len(data) > 1 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0

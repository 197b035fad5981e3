"""One proxied call, from the request line to the recorded step (see agentcore.proxy.server for the rules).

The handler reads `self.proxy`, the running ProxyServer its class was made for: its config, upstream, recorder,
holds and HTTP client.
"""

from __future__ import annotations

import hmac
import json
import re
import time
import urllib.parse
import zlib
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx

from ..errors import UsageError
from ..providers._http import BadResponse
from ..secrets import SECRET_FIELD, redact_headers, register_headers, register_secret
from ..store.exchanges import kept_exchange
from ..transcript import one_line
from .dialects import STREAM_TYPES, Dialect, dialect_of, read_reply, read_request, response_id
from .holds import effects_of, mock_reply
from .recorder import Exchange, exchange_wire

TOKEN_HEADER = "x-agentcore-proxy-token"
CONTROL = "/agentcore/holds"
# not forwarded either way: the connection's own, what httpx sets itself, and the proxy's token
HOP_HEADERS = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "accept-encoding",
        "content-encoding",
        TOKEN_HEADER,
    }
)
QUERY_KEYS = ("key", "api_key", "api-key")
_PATH = re.compile(r"/[A-Za-z0-9._~%/:-]*")


def _plain(raw: bytes, encoding: str, cap: int) -> bytes:
    """A request body as sent, uncompressed (gzip or deflate) within `cap` bytes."""
    if encoding == "identity":
        return raw
    inflate = zlib.decompressobj(47 if encoding == "gzip" else 15)
    try:
        plain = inflate.decompress(raw, cap + 1)
    except zlib.error:
        raise Refused(400, f"the request body is not {encoding}") from None
    if len(plain) > cap or inflate.unconsumed_tail:
        raise Refused(413, f"the request is over {cap} bytes once uncompressed, the most this proxy reads")
    return plain


class Refused(Exception):
    """A request the proxy answers itself: a status and one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def check_path(path: str) -> None:
    """Refuse a path that could name another host or climb out of the upstream's base."""
    if not _PATH.fullmatch(path) or "/../" in f"{path}/" or "/./" in f"{path}/":
        raise Refused(404, "the proxy forwards no such path")


def upstream_target(base: str, path: str) -> str:
    """The upstream's URL for a path: a base that ends in /v1 (a server's OpenAI address, as agents are given it) and a
    path that starts with it are joined once."""
    if base.endswith("/v1") and (path == "/v1" or path.startswith("/v1/")):
        path = path[3:]
    return f"{base}{path}"


def register_fields(body: Any, depth: int = 0) -> None:
    """A key sent in the body (`"api_key": ...`, at any depth outside the messages), registered so that no stored
    byte and no output shows it."""
    if depth > 8 or not isinstance(body, dict):
        return
    for name, value in body.items():
        if name in ("messages", "input", "contents", "content", "tools"):
            continue
        if isinstance(value, str) and SECRET_FIELD.search(str(name)):
            register_secret(value)
        elif isinstance(value, dict):
            register_fields(value, depth + 1)


def register_query(query: str) -> None:
    """A key sent in the query (`?key=`), registered so that no output shows it."""
    for name, value in urllib.parse.parse_qsl(query):
        if name.lower() in QUERY_KEYS:
            register_secret(value)


class Handler(BaseHTTPRequestHandler):
    """The request handler; a subclass per server sets `proxy`."""

    proxy: Any
    protocol_version = "HTTP/1.1"  # keep-alive: every answer has a length or is chunked
    server_version = "agentcore-proxy"
    # the headers and the body go in separate writes: with Nagle's algorithm on, the body would wait for the
    # client's delayed ACK of the headers (about 40 ms a call)
    disable_nagle_algorithm = True

    def do_POST(self) -> None:  # the names http.server calls
        self._serve("POST")

    def do_GET(self) -> None:
        self._serve("GET")

    def log_message(self, format: str, *args: Any) -> None:
        pass  # each call is said once, by _serve, without its query

    def _serve(self, method: str) -> None:
        path, _, query = self.path.partition("?")
        dialect, recorded = dialect_of(path, self.proxy.upstream_name)
        started = time.perf_counter()
        status = 0
        self.placements: list[Any] = []  # this request's places in the runs, each finished however it ends
        try:
            register_headers(dict(self.headers))
            register_query(query)
            if not self._token_ok():
                raise Refused(401, f"the proxy needs its token in the {TOKEN_HEADER} header")
            if path == CONTROL or path.startswith(f"{CONTROL}/"):
                status = self._control(method, path)
                return
            check_path(path)
            raw = self._body() if method == "POST" else b""
            status = self._call(method, dialect, recorded and method == "POST", path, query, raw)
        except Refused as exc:
            status = exc.status
            self._answer(exc.status, dialect.error(exc.status, one_line(str(exc))))
        finally:
            for placed in self.placements:
                if placed is not None:
                    try:
                        self.proxy.recorder.finish(placed)
                    except Exception as exc:  # noqa: BLE001 - the agent has its reply; a failed save is said
                        self.proxy.say(
                            f"the step's bytes were not kept: {type(exc).__name__}: {one_line(str(exc))[:200]}"
                        )
            ms = (time.perf_counter() - started) * 1000
            self.proxy.say(f"{method} {path[:200]} {status} {ms:.0f} ms")

    def _token_ok(self) -> bool:
        token = self.proxy.config.token
        if not token:
            return True
        return hmac.compare_digest(str(self.headers.get(TOKEN_HEADER, "")).encode(), token.encode())

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            self.close_connection = True
            raise Refused(411, "send the request with a content-length")
        try:
            length = int(self.headers.get("content-length") or 0)
        except ValueError:
            self.close_connection = True
            raise Refused(400, "the content-length is not a number") from None
        cap = self.proxy.config.max_request_bytes
        if length < 0 or length > cap:
            self.close_connection = True  # the body is not read: the connection cannot carry another request
            raise Refused(413, f"the request is over {cap} bytes, the most this proxy forwards")
        return self.rfile.read(length)

    def _call(self, method: str, dialect: Dialect, recorded: bool, path: str, query: str, raw: bytes) -> int:
        body: Any = None
        stream = False
        plain = raw  # the body as the client wrote it, uncompressed
        encoding = self.headers.get("content-encoding", "identity").strip().lower()
        if recorded and encoding not in ("identity", "gzip", "deflate"):
            self.proxy.say(f"not recorded: a request body in {encoding[:40]}, which the proxy does not read")
            recorded = False
        if recorded:
            plain = _plain(raw, encoding, self.proxy.config.max_request_bytes)
            try:
                body = json.loads(plain)
            except ValueError:
                raise Refused(400, "the request body is not JSON") from None
            if not isinstance(body, dict):
                raise Refused(400, "the request body is not a JSON object")
            register_fields(body)
            stream = body.get("stream") is True or (dialect.name == "ollama" and body.get("stream") is not False)
        conversation = read_request(dialect, body) if recorded else None
        placed = self.proxy.recorder.place(conversation) if conversation is not None else None
        self.placements.append(placed)
        effects: list[Any] = []
        sent = body
        self.client_body = (plain, encoding)  # what the step keeps as the request, whatever is forwarded
        if placed is not None and self.proxy.holds.pause != "never":
            run = self.proxy.recorder.preview(placed)
            reason = self.proxy.holds.reason(run, placed.step)
            if reason is not None:
                decision = self.proxy.holds.hold(placed.live.run_id, placed.step, reason, dialect, body)
                effects = effects_of(decision, body.get("messages", body.get("input")), self.proxy.holds.limit)
                if decision.action == "answer":
                    reply, ctype = mock_reply(dialect, decision.text or "", str(body.get("model") or ""), stream)
                    self._record(
                        dialect, placed, conversation, path, sent, 200, {"content-type": ctype}, reply, 0.0, effects
                    )
                    self._answer(200, reply, ctype)
                    return 200
                if decision.action == "edit" and decision.body is not None:
                    sent = decision.body
                    raw, encoding = json.dumps(sent).encode(), "identity"
                    conversation = read_request(dialect, sent)
                    # the run keeps what was sent: an edit of an earlier message starts a run of its own
                    placed = self.proxy.recorder.place(conversation)
                    self.placements.append(placed)
        url = upstream_target(self.proxy.base, path) + (f"?{query}" if query else "")
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
        if encoding != "identity":  # the body goes as the client compressed it
            headers["content-encoding"] = encoding
        headers["accept-encoding"] = "identity"  # bytes pass through as they come, and read as they are
        started = time.perf_counter()
        try:
            request = self.proxy.client.build_request(
                method, url, content=raw if method == "POST" else None, headers=headers
            )
            response = self.proxy.client.send(request, stream=True)
        except httpx.TimeoutException:
            raise Refused(504, "the upstream did not answer in time") from None
        except httpx.HTTPError as exc:
            raise Refused(502, f"the upstream cannot be reached ({type(exc).__name__})") from None
        status = response.status_code
        reply_headers = {k: v for k, v in response.headers.items() if k.lower() not in HOP_HEADERS}

        def done(got: bytes) -> None:  # before the reply's last bytes: the agent's next call finds this one's run
            if placed is not None and 200 <= status < 300:
                latency = (time.perf_counter() - started) * 1000
                self._record(dialect, placed, conversation, path, sent, status, reply_headers, got, latency, effects)

        try:
            self._relay(response, done)
        except httpx.HTTPError:  # the upstream broke off after the reply began: the client sees it end short
            self.close_connection = True
        finally:
            response.close()
        return status

    def _relay(self, response: httpx.Response, done: Any) -> None:
        """Send the upstream's reply on, calling `done` with all its bytes before the last of them go: a whole body
        once read (over the cap, or broken off, it is a 502 in the dialect's kind), a stream chunk by chunk as it
        comes (over the cap it is cut short, and `done` is not called)."""
        cap = self.proxy.config.max_reply_bytes
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype not in STREAM_TYPES:
            body = bytearray()
            try:
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > cap:
                        raise Refused(502, f"the upstream's reply is over {cap} bytes, the most this proxy passes on")
            except httpx.HTTPError as exc:
                raise Refused(502, f"the upstream broke off its reply ({type(exc).__name__})") from None
            done(bytes(body))
            self._head(response)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self._head(response)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        kept = bytearray()
        for chunk in response.iter_bytes():
            if not chunk:
                continue
            if len(kept) + len(chunk) > cap:
                self.close_connection = True  # the stream ends unfinished: the client's SDK says so
                self.wfile.flush()
                return
            kept += chunk
            self.wfile.write(f"{len(chunk):X}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()
        done(bytes(kept))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _head(self, response: httpx.Response) -> None:
        self.send_response(response.status_code)
        for name, value in response.headers.items():
            if name.lower() not in HOP_HEADERS:
                self.send_header(name, value)

    def _record(
        self,
        dialect: Dialect,
        placed: Any,
        conversation: Any,
        path: str,
        sent: Any,
        status: int,
        reply_headers: dict[str, str],
        reply: bytes,
        latency: float,
        effects: list[Any],
    ) -> None:
        streamed = reply_headers.get("content-type", "").split(";")[0].strip().lower() in STREAM_TYPES
        try:
            response = read_reply(dialect, reply, streamed, conversation)
        except (BadResponse, ValueError) as exc:
            self.proxy.say(
                f"not recorded: the reply to {path} does not read as {dialect.name} ({one_line(str(exc))[:200]})"
            )
            return
        wire = exchange_wire(
            upstream_target(self.proxy.base, path),
            redact_headers(dict(self.headers)),
            sent,
            status,
            reply_headers,
            response.wire.response if response.wire is not None else None,
        )
        client = self.client_body
        kept = kept_exchange(
            client[0],
            reply,
            request_type=self.headers.get("content-type", ""),
            reply_type=reply_headers.get("content-type", ""),
            request_encoding="" if client[1] == "identity" else client[1],
            limit=self.proxy.config.max_kept_bytes,
        )
        exchange = Exchange(dialect, conversation, wire, response, latency, effects=effects, kept=kept)
        exchange.response_id = response_id(dialect, wire.response)
        try:
            self.proxy.recorder.record(placed, exchange)
        except Exception as exc:  # noqa: BLE001 - the agent has its reply; a failed save is said, not raised
            self.proxy.say(f"not recorded: {type(exc).__name__}: {one_line(str(exc))[:200]}")

    def _control(self, method: str, path: str) -> int:
        """The held calls: GET lists them; POST /agentcore/holds/ID {"action", "body"|"texts"|"text"} releases one."""
        if not self._loopback_client():
            raise Refused(403, "held calls are released from this machine only")
        if method == "GET" and path == CONTROL:
            self._answer(200, json.dumps(self.proxy.holds.listing()).encode())
            return 200
        if method != "POST" or path == CONTROL:
            raise Refused(405, "GET /agentcore/holds, or POST /agentcore/holds/ID")
        try:
            order = json.loads(self._body())
            if not isinstance(order, dict):
                raise ValueError
        except ValueError:
            raise Refused(400, 'a release is a JSON object: {"action": "send" | "edit" | "answer", ...}') from None
        try:
            self.proxy.holds.release(
                path.rsplit("/", 1)[1],
                str(order.get("action")),
                order.get("body"),
                order.get("text"),
                order.get("texts"),
            )
        except UsageError as exc:
            raise Refused(400, str(exc)) from None
        self._answer(200, b'{"released": true}')
        return 200

    def _loopback_client(self) -> bool:
        # and a loopback Host: a web page whose name was pointed at 127.0.0.1 (DNS rebinding) sends its own name
        address = str(self.client_address[0])
        host = urllib.parse.urlsplit(f"//{self.headers.get('host', '')}").hostname or ""
        return (address == "::1" or address.startswith("127.")) and host in ("127.0.0.1", "localhost", "::1")

    def _answer(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

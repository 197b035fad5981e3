"""The proxy's HTTP side: one threaded server on a fixed address, one fixed upstream, one call per request.

A request to a dialect's path (agentcore.proxy.dialects) is read, maybe held (agentcore.proxy.holds), forwarded to
the upstream with the client's own headers (its key included: forwarded, registered as a secret, never kept), and
the reply goes back as it comes: a streamed body (SSE or NDJSON) chunk by chunk as the upstream sends it, a whole
body whole, the upstream's status and headers with it. Then the call is recorded (agentcore.proxy.recorder).
Any other path under the upstream is forwarded the same way and not recorded.

What a client cannot do: choose where the proxy connects (the upstream is fixed at start; a path is only a path),
send more than `max_request_bytes`, make it read more than `max_reply_bytes` of a reply, or reach it from another
machine unless it was started with `allow_remote` and a token the client sends (`x-agentcore-proxy-token`). A
request the proxy refuses gets one line, in the dialect's kind of error, and the proxy goes on serving.
"""

from __future__ import annotations

import ipaddress
import sys
import threading
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from ..errors import UsageError
from ..secrets import redacted_url, register_secret, scrub_text
from ..store.exchanges import KEPT_BYTES
from .control import announce, proxy_of
from .handler import TOKEN_HEADER, Handler
from .holds import DEFAULT_HOLD_LIMIT, Holds
from .recorder import Recorder

UPSTREAMS = {
    "openai": "https://api.openai.com",
    "anthropic": "https://api.anthropic.com",
    "ollama": "http://127.0.0.1:11434",
}
MAX_REQUEST_BYTES = 32 * 2**20
MAX_REPLY_BYTES = 64 * 2**20


@dataclass
class ProxyConfig:
    """Where the proxy listens, where it forwards, what it holds and how much it reads."""

    upstream: str = "openai"
    host: str = "127.0.0.1"
    port: int = 8787
    pause: str | list[str] = "never"  # never, always, or breakpoint specs
    hold_limit: float = DEFAULT_HOLD_LIMIT
    allow_remote: bool = False
    token: str | None = None
    max_request_bytes: int = MAX_REQUEST_BYTES
    max_reply_bytes: int = MAX_REPLY_BYTES
    max_kept_bytes: int = KEPT_BYTES  # of each body a step keeps as bytes (agentcore.store.exchanges)
    timeout: float = 600.0


def upstream_url(upstream: str) -> tuple[str, str]:
    """The upstream's name (a dialect's, or "url") and base URL; a UsageError for anything but http(s) to a host."""
    if upstream in UPSTREAMS:
        return upstream, UPSTREAMS[upstream]
    parts = urllib.parse.urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.query or parts.fragment:
        raise UsageError(f"--upstream {upstream[:80]!r}: openai, anthropic, ollama or an http(s) URL of a server")
    return "url", upstream.rstrip("/")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ProxyServer:
    """The running proxy: `url` to point an agent at, `holds` to release held calls, `close()` to stop."""

    def __init__(self, config: ProxyConfig, store: Any, *, log: Any = None) -> None:
        if not _loopback(config.host) and not config.allow_remote:
            raise UsageError(f"--listen {config.host}: not a loopback address; add --allow-remote and --token")
        if config.allow_remote and not config.token:
            raise UsageError("--allow-remote needs --token, a secret every client sends as " + TOKEN_HEADER)
        if config.token:
            register_secret(config.token)
        self.config = config
        self.store = store
        self.upstream_name, self.base = upstream_url(config.upstream)
        self.recorder = Recorder(store, redacted_url(self.base))
        self.holds = Holds(config.pause, config.hold_limit)
        self.client = httpx.Client(timeout=httpx.Timeout(config.timeout, connect=10.0), follow_redirects=False)
        self.log = log
        self.httpd = _Server((config.host, config.port), _handler(self))
        self.thread: threading.Thread | None = None
        host, port = self.httpd.server_address[:2]
        self.url = f"http://{host}:{port}" if ":" not in str(host) else f"http://[{host}]:{port}"
        try:
            announce(store, self.url)  # where the app finds the control paths of held calls
        except Exception as exc:  # noqa: BLE001 - a store without settings still records runs
            self.say(f"the runs database keeps no settings ({type(exc).__name__}): the app cannot find the proxy")

    def start(self) -> ProxyServer:
        """Serve on a thread of its own."""
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve on this thread until interrupted."""
        self.httpd.serve_forever(0.2)

    def close(self) -> None:
        """Stop serving, say so in the runs database, and close the upstream client."""
        try:
            if proxy_of(self.store) == self.url:
                announce(self.store, "")  # the app shows no proxy that has stopped
        except Exception:  # noqa: BLE001 - a store closed first, or one without settings: nothing to take back
            pass
        if self.thread is not None:
            self.httpd.shutdown()
        self.httpd.server_close()
        self.client.close()

    def say(self, line: str) -> None:
        """One line to the log (stderr unless a log was given), every known secret scrubbed."""
        print(scrub_text(line), file=self.log or sys.stderr, flush=True)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, ConnectionError | TimeoutError):  # a client gone is no news
            print(f"agentcore proxy: {type(exc).__name__}: {scrub_text(str(exc))[:200]}", file=sys.stderr)


def _handler(proxy: ProxyServer) -> type[BaseHTTPRequestHandler]:
    return type("ProxyHandler", (Handler,), {"proxy": proxy})

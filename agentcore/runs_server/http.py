"""The runs server over HTTP as a shared service: per-user stores bounded, Host and Origin checked, the proxy proved.

Each user a request names (by the header the deployment trusts) reads the library through a Store of their
own, which holds a database connection. The server keeps at most STORES_KEPT of them open, the least recently
used closed first; a Store still serving a call is closed when that call ends. (One Store per user, rather
than one connection shared by viewers, keeps the access rule where it lives, in the Store's viewer.)

A server that trusts a user header is whoever that header says to anyone who reaches its port, so it listens on
127.0.0.1 by default. It meets the app's rule (agentcore.store.access.proxy_refusal): bound to another address
with a user header, it starts only with AGENTCORE_PROXY_SECRET set, and then answers a request only when the proxy
added that secret in X-Agentcore-Proxy-Secret (403 otherwise). On every address the Host and Origin headers are
checked (the SDK's DNS-rebinding protection): loopback names and the bound address, and the names the operator
allows (`--allow-host NAME`, AGENTCORE_MCP_ALLOWED_HOSTS), such as the proxy's public name.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import UsageError

STORES_KEPT = 32  # per-user Stores open at once, besides those still serving a call
ALLOWED_HOSTS_ENV = "AGENTCORE_MCP_ALLOWED_HOSTS"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

Key = tuple[str | None, bool | None]


class StorePool:
    """Stores by (owner, teacher), at most `size` open and idle at once: the least recently used is closed first."""

    def __init__(self, open_store: Callable[[str | None, bool | None], Any], size: int = STORES_KEPT) -> None:
        self._open = open_store
        self.size = size
        self._stores: OrderedDict[Key, Any] = OrderedDict()
        self._busy: dict[Key, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._stores)

    @contextmanager
    def lease(self, owner: str | None, teacher: bool | None) -> Iterator[Any]:
        """The Store of this viewer for the length of one call (opened now, or kept from an earlier call)."""
        key = (owner, teacher)
        with self._lock:
            store = self._stores.pop(key, None)
            if store is None:
                store = self._open(owner, teacher)
            self._stores[key] = store
            self._busy[key] = self._busy.get(key, 0) + 1
            closing = self._evicted()
        _close(closing)
        try:
            yield store
        finally:
            with self._lock:
                self._busy[key] -= 1
                if not self._busy[key]:
                    del self._busy[key]
                closing = self._evicted()
            _close(closing)

    def _evicted(self) -> list[Any]:
        # only idle Stores are closed: a busy one counts over the size until its call ends
        out = []
        for key in list(self._stores):
            if len(self._stores) <= self.size:
                break
            if key not in self._busy:
                out.append(self._stores.pop(key))
        return out

    def close(self) -> None:
        """Close every Store (the server is stopping)."""
        with self._lock:
            stores, self._stores = list(self._stores.values()), OrderedDict()
        _close(stores)


def _close(stores: Iterable[Any]) -> None:
    for store in stores:
        store.close()


def allowed_hosts(named: Iterable[str] = ()) -> list[str]:
    """The Host names the operator allows besides loopback: `named` (`--allow-host`) and AGENTCORE_MCP_ALLOWED_HOSTS."""
    found = [*named, *os.environ.get(ALLOWED_HOSTS_ENV, "").replace(",", " ").split()]
    for name in found:
        if not name or any(c in name for c in "/ @*"):
            raise UsageError(f"--allow-host {name[:200]!r}: a host name, with a port or without (no scheme, no *)")
    return list(dict.fromkeys(found))


def transport_security(host: str, port: int, names: Iterable[str] = ()) -> Any:
    """The SDK's Host and Origin check for a server at host:port, allowing loopback, the bound address and `names`."""
    from mcp.server.transport_security import TransportSecuritySettings

    bound = f"[{host}]" if ":" in host and not host.startswith("[") else host
    hosts: list[str] = []
    for name in dict.fromkeys([*LOOPBACK_NAMES, f"{bound}:{port}", *names]):
        with_port = ":" in (name.partition("]")[2] if name.startswith("[") else name)
        hosts += [name] if with_port else [name, f"{name}:*"]  # a proxy's name may come with its own port
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


class ProxyOnly:
    """An ASGI layer that answers 403, in one line, every HTTP request the app's proxy rule refuses."""

    def __init__(self, app: Any, user_header: str, host: str) -> None:
        self.app = app
        self.user_header = user_header
        self.host = host

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        from ..store.access import proxy_refusal

        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            refusal = proxy_refusal(self.user_header, headers, self.host)
            if refusal is not None:
                body = (refusal + "\n").encode()
                head = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
                await send({"type": "http.response.start", "status": 403, "headers": head})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def serve_http(server: Any, host: str, port: int, hosts: Iterable[str], user_header: str | None) -> None:
    """Serve the MCP server's Streamable HTTP app at host:port, Host and Origin checked; with a user header, only
    requests the proxy rule lets through."""
    import uvicorn

    from ..store.access import PROXY_SECRET_ENV, loopback

    if user_header and not loopback(host) and not os.environ.get(PROXY_SECRET_ENV, "").strip():
        raise UsageError(
            f"--http {host}:{port}: a server that takes its users' names from the {user_header} header answers "
            f"its proxy only: listen on 127.0.0.1 behind the proxy, or set {PROXY_SECRET_ENV} and have the proxy "
            "send it in X-Agentcore-Proxy-Secret"
        )
    app: Any = server.streamable_http_app(transport_security=transport_security(host, port, hosts), host=host)
    if user_header:
        app = ProxyOnly(app, user_header, host)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run()

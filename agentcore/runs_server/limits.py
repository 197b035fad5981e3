"""What a client of the runs server may ask of it: the configurations it may name, and the work one call may do.

A client of a shared server is not its operator. It names no file, model path or address of the server's: a
configuration's provider is a registered one (`local` only with its bundled model, never a GGUF path), and its
base URL is one of the addresses the operator set for that provider (its own, or `OPENAI_BASE_URL`, …; see
agentcore.providers.keys) or allowed by name (`--allow-base-url`, AGENTCORE_MCP_ALLOW_BASE_URLS). A stored run
stepped through the server meets the same rule, whoever made it.

An upstream's failure reaches the client as what failed (the provider, the HTTP status, the request id), never
as what the upstream replied: a reply's body can be anything its server chose to say. And one call's work is
bounded in time and in model calls: a comparison, a test run, a scan and a run to its end stop when the time
runs out or the client has gone, and say so.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import ProviderError, UsageError
from ..providers import create_provider, get_info
from ..providers.keys import address, operator_addresses
from ..secrets import redacted_url

ALLOW_BASE_URLS_ENV = "AGENTCORE_MCP_ALLOW_BASE_URLS"
NO_BODY = "the upstream's reply is not shown"


@dataclass(frozen=True)
class Limits:
    """The work one tool call may do: its wall time, its model calls, and a test run's trials."""

    seconds: float = 300.0  # a comparison, a test run, a scan, a run to its end
    calls: int = 100  # model calls: a comparison's configurations x steps, or run_to_end's
    trials: int = 100  # a test run's tests x configurations x trials


def client_gone() -> bool:
    """Whether the request this worker thread serves was cancelled: its client sent a cancel, or went away."""
    import anyio.from_thread

    try:
        anyio.from_thread.check_cancelled()
    except RuntimeError:  # not a worker thread of the server's event loop: nothing to ask
        return False
    except BaseException:  # noqa: BLE001 - the event loop's own cancellation (asyncio's CancelledError)
        return True
    return False


class Deadline:
    """When one tool call's work must stop: its seconds have run out, or its client has gone."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    @property
    def left(self) -> float:
        """Seconds left, never below 0."""
        return max(0.0, self.at - time.monotonic())

    def reached(self) -> str | None:
        """Why the work must stop now, or None while it may go on (asked from the tool's own thread)."""
        if client_gone():
            return "the client went away"
        if self.left <= 0:
            return f"this call's {self.seconds:g} s ran out"
        return None

    @contextmanager
    def cancels(self, event: threading.Event) -> Iterator[None]:
        """Set `event` when the time runs out, while the block runs (for work on threads of its own)."""
        timer = threading.Timer(self.left, event.set)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()


class _QuietProvider:
    """A provider whose failures say what failed (provider, status, request id), not what the upstream replied."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def complete(self, request: Any, on_text: Any = None) -> Any:
        try:
            return self._inner.complete(request, on_text)
        except ProviderError as exc:
            said = NO_BODY if exc.status else f"no reply it could use (connection, deadline or format); {NO_BODY}"
            raise ProviderError(
                said,
                provider=exc.provider,
                status=exc.status,
                request_id=(exc.request_id or "")[:100] or None,
                retryable=exc.retryable,
                attempts=exc.attempts,
            ) from None


@dataclass(frozen=True)
class ClientRules:
    """What a client may name in a configuration: a registered provider, its bundled local model, an allowed address."""

    allowed_urls: tuple[str, ...] = ()  # base URLs the operator allows for any provider, beside each one's own

    @classmethod
    def of(cls, urls: Iterable[str] = ()) -> ClientRules:
        """The rules with the operator's `urls` (`--allow-base-url`) and those in AGENTCORE_MCP_ALLOW_BASE_URLS."""
        named = [*urls, *os.environ.get(ALLOW_BASE_URLS_ENV, "").replace(",", " ").split()]
        found = []
        for url in named:
            normal = address(url)
            if normal is None:
                raise UsageError(f"--allow-base-url {url[:200]!r}: not an http(s) URL")
            found.append(normal)
        return cls(tuple(dict.fromkeys(found)))

    def addresses(self, provider: str) -> tuple[str, ...]:
        """The base URLs a client may name for `provider`."""
        return tuple(dict.fromkeys([*operator_addresses(get_info(provider)), *self.allowed_urls]))

    def check(self, provider: str, model: str | None, base_url: str | None, what: str = "") -> None:
        """A UsageError saying what is allowed when a client may not name this configuration."""
        info = get_info(provider)
        label = what or provider + (f":{model}" if model else "")
        if provider == "local" and model not in (None, "", info.model):
            raise UsageError(
                f"{label[:200]}: a client names no file of the server's: local runs its bundled model "
                f"({info.model}) only"
            )
        if base_url and address(base_url) not in self.addresses(provider):
            allowed = ", ".join(redacted_url(u) for u in self.addresses(provider)) or "none"
            raise UsageError(
                f"{label[:200]}: {redacted_url(base_url)[:200]} is not an address this server calls for "
                f"{provider}: it calls {allowed} (its operator adds one with --allow-base-url)"
            )

    def factory(self, deadline: Deadline) -> Callable[..., Any]:
        """`create_provider` for a client's configuration: checked, its calls within the deadline, its errors quiet."""

        def make(name: str, model: str | None = None, *, base_url: str | None = None, **options: Any) -> Any:
            self.check(name, model, base_url)
            wire = get_info(name).wire
            if wire:
                options["deadline"] = max(1.0, deadline.left)
            made = create_provider(name, model, base_url=base_url, **options)
            return _QuietProvider(made) if wire else made

        return make

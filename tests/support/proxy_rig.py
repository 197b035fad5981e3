"""The recording proxy between an SDK and a stand-in upstream on 127.0.0.1, with a private runs database, and a tap on the
SDK's own HTTP client that keeps the bytes it sent and the bytes it received."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcore.providers._http import iter_sse
from agentcore.proxy import ProxyConfig, ProxyServer
from agentcore.store import Store
from support.stand_in import Reply, StandIn

KEY = "proxy-test-credential-7f3a9c2e41b8d05f"  # no known shape: only its registration hides it


class Tap:
    """Keeps each request's body and each response's body as an SDK's own HTTP client had them."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.received: list[bytes] = []

    def client(self, lib: Any = httpx) -> Any:
        """A client of `lib` (httpx, or httpx2 for the SDKs built on it) whose transport keeps the bytes."""
        tap = self

        class Transport(lib.BaseTransport):
            def __init__(self) -> None:
                self.inner = lib.HTTPTransport()

            def handle_request(self, request: Any) -> Any:
                tap.sent.append(request.read())
                response = self.inner.handle_request(request)
                body = response.read()
                tap.received.append(body)
                skip = ("transfer-encoding", "content-length")
                headers = [(k, v) for k, v in response.headers.items() if k.lower() not in skip]
                return lib.Response(response.status_code, headers=headers, content=body, request=request)

        return lib.Client(transport=Transport())

    def async_client(self, lib: Any = httpx) -> Any:
        """An async client of `lib` that keeps the bytes, for the SDKs' async clients (pydantic-ai's)."""
        tap = self

        class Transport(lib.AsyncBaseTransport):
            def __init__(self) -> None:
                self.inner = lib.AsyncHTTPTransport()

            async def handle_async_request(self, request: Any) -> Any:
                tap.sent.append(await request.aread())
                response = await self.inner.handle_async_request(request)
                body = await response.aread()
                tap.received.append(body)
                skip = ("transfer-encoding", "content-length")
                headers = [(k, v) for k, v in response.headers.items() if k.lower() not in skip]
                return lib.Response(response.status_code, headers=headers, content=body, request=request)

            async def aclose(self) -> None:
                await self.inner.aclose()

        return lib.AsyncClient(transport=Transport())


def events(raw: bytes) -> list[Any]:
    """The JSON events of an SSE or NDJSON body, as a reader keeps them ([DONE] is no event)."""
    text = raw.decode()
    if "data:" not in text:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return [json.loads(data) for _, data in iter_sse(iter(text.splitlines())) if data.strip() != "[DONE]"]


@dataclass
class Rig:
    """A running proxy in front of a stand-in upstream, its database and the SDK's tap."""

    proxy: ProxyServer
    upstream: StandIn
    store: Store
    db: Path
    tap: Tap = field(default_factory=Tap)

    @property
    def url(self) -> str:
        return self.proxy.url

    def runs(self, settle: bool = True) -> list[Any]:
        """The stored runs, oldest first, read back whole, once the calls in flight are recorded (a client may end
        its reading at a stream's last event, before the proxy has read the upstream's end)."""
        if settle:  # not while a call is held: it is in flight until released
            self.proxy.recorder.settle()
        return [self.store.load_run(s.id) for s in reversed(self.store.list_runs())]

    def assert_faithful(self) -> None:
        """Each stored step's request is the bytes the client sent and its reply the bytes the client received,
        read back through the store; the wire view's JSON says the same."""
        steps = [(step, run.id, i) for run in self.runs() for i, step in enumerate(run.steps)]
        steps.sort(key=lambda s: s[0].started_at)
        assert len(steps) == len(self.tap.sent)
        for (step, run_id, i), sent, received in zip(steps, self.tap.sent, self.tap.received, strict=True):
            kept = self.store.exchange(run_id, i)
            assert kept is not None, f"step {i + 1} of run {run_id} kept no bytes"
            assert (kept.request, kept.reply) == (sent, received)
            assert not (kept.request_facts.scrubbed or kept.reply_facts.scrubbed or kept.reply_facts.cut)
            assert step.wire.request == json.loads(sent)
            if step.wire.response_headers.get("content-type", "").startswith(
                ("text/event-stream", "application/x-ndjson")
            ):
                assert step.wire.response == events(received)
            else:
                assert step.wire.response == json.loads(received)

    def assert_no_key(self, *outputs: str) -> None:
        """The key is in no byte of the database (its journal included) and in none of `outputs`."""
        self.store.close()
        for path in self.db.parent.iterdir():
            assert KEY.encode() not in path.read_bytes(), path
        for text in outputs:
            assert KEY not in text


def start_rig(
    tmp_path: Path, replies: list[Reply], log: Any = None, upstream: StandIn | None = None, **config: Any
) -> Iterator[Rig]:
    """A proxy in front of `upstream` (else a stand-in giving `replies`), with a database of its own."""
    with upstream or StandIn(*replies) as upstream:
        db = tmp_path / "db" / "runs.db"
        db.parent.mkdir()
        store = Store(str(db))
        proxy = ProxyServer(ProxyConfig(upstream=upstream.url, port=0, **config), store, log=log).start()
        try:
            yield Rig(proxy, upstream, store, db)
        finally:
            proxy.close()


class Agent:
    """An openai SDK call on a thread of its own, as an agent waiting on a held request."""

    def __init__(self, rig: Any, messages: list[dict[str, Any]], **options: Any) -> None:
        import openai

        sdk = openai.OpenAI(api_key=KEY, base_url=f"{rig.url}/v1", max_retries=0, timeout=60)
        self.result: Any = None
        self.error: BaseException | None = None

        def go() -> None:
            try:
                reply = sdk.chat.completions.create(model="gpt-4o-mini", messages=messages, **options)
                if options.get("stream"):
                    reply = "".join(c.choices[0].delta.content or "" for c in reply if c.choices)
                else:
                    reply = reply.choices[0].message.content
                self.result = reply
            except BaseException as exc:  # noqa: BLE001 - kept for the test to raise
                self.error = exc

        self.thread = threading.Thread(target=go, daemon=True)
        self.thread.start()

    def answer(self) -> Any:
        self.thread.join(30)
        if self.error is not None:
            raise self.error
        return self.result


def held(rig: Any, count: int = 1) -> list[dict[str, Any]]:
    """The proxy's held calls once `count` are held (the agents' requests travel on their own threads)."""
    for _ in range(3000):
        found = rig.proxy.holds.listing()
        if len(found) >= count:
            return found
        time.sleep(0.01)
    raise AssertionError("no call was held")


@pytest.fixture
def rig_of(tmp_path: Path) -> Iterator[Any]:
    """rig_of(*replies, **config): a proxy in front of a stand-in giving `replies`, stopped after the test."""
    started: list[Iterator[Rig]] = []

    def make(*replies: Reply, **config: Any) -> Rig:
        gen = start_rig(tmp_path, list(replies), **config)
        started.append(gen)
        return next(gen)

    yield make
    for gen in started:
        next(gen, None)

"""A stand-in model server on 127.0.0.1: answers each POST with the next recorded reply and keeps the requests.

For wire formats no test peer speaks (the Responses API, thinking blocks): the adapter under test
talks real HTTP to it, and the test reads back exactly what was sent.
"""

from __future__ import annotations

import gzip
import json
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

WIRE = Path(__file__).parents[1] / "fixtures" / "wire"
TYPES = {".json": "application/json", ".sse": "text/event-stream", ".ndjson": "application/x-ndjson"}


class QuietServer(ThreadingHTTPServer):
    """A threaded HTTP server that keeps a handler's error rather than printing it.

    A client that gives up (a time limit under test, a Stop) leaves its handler writing to a closed socket, maybe
    after the test has ended; socketserver would print that to sys.stderr, where the next test on the worker reads it.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.errors: list[BaseException] = []

    def handle_error(self, request: Any, client_address: Any) -> None:
        self.errors.append(sys.exc_info()[1])


# how often a test server's loop looks whether it is asked to stop: leaving one waits for the next look, and tests
# leave several hundred of them
POLL_S = 0.005


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing: a test reads what it needs from its server."""

    def log_message(self, *args: Any) -> None:
        pass


class Served:
    """A test's HTTP server on 127.0.0.1, serving on a thread of its own from entering to leaving: `serve` makes it
    (a subclass's __init__ calls it with its handler), `url` is its address."""

    def serve(self, handler: type[BaseHTTPRequestHandler], path: str = "") -> None:
        self.server = QuietServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{path}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(POLL_S,), daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Reply:
    """One answer: a status, a body and its content type, and any extra headers."""

    body: bytes
    content_type: str = "application/json"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    echo: bool = False  # answer with what the request's last user message says (`echoing`)

    @classmethod
    def chat(cls, text: str) -> Reply:
        """An OpenAI Chat Completions answer of `text`, with the usage a small call reports."""
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "stand-in",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
        }
        return cls(json.dumps(body).encode())

    @classmethod
    def echoing(cls) -> Reply:
        """A Chat Completions answer that says back the last user message of each request: "You asked: ..."."""
        return cls(b"", echo=True)

    def body_for(self, request: Any) -> bytes:
        """The body this reply answers `request` with."""
        if not self.echo:
            return self.body
        users = [m for m in request.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
        said = users[-1].get("content") if users else ""
        if isinstance(said, list):
            said = "\n".join(str(p.get("text", "")) for p in said if isinstance(p, dict))
        return Reply.chat(f"You asked: {said}").body

    @classmethod
    def refused(cls) -> Reply:
        """OpenAI's 401 for a wrong key, as its API words it."""
        body = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
        return cls(json.dumps(body).encode(), status=401)

    @classmethod
    def fixture(cls, name: str, status: int = 200, **headers: str) -> Reply:
        """A fixture file under tests/fixtures/wire as the body, typed by its suffix."""
        path = WIRE / name
        return cls(path.read_bytes(), TYPES[path.suffix], status, headers)


@dataclass
class Seen:
    """One request the server answered: its path, headers and JSON body."""

    path: str
    headers: dict[str, str]
    body: Any


class StandIn(Served):
    """The server: `url` to point a provider at, `seen` the requests in order. Use as a context manager."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.seen: list[Seen] = []
        owner = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:  # the name http.server calls
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.headers.get("content-encoding") == "gzip":
                    raw = gzip.decompress(raw)
                owner.seen.append(Seen(self.path, dict(self.headers), json.loads(raw or b"null")))
                reply = owner.replies.pop(0) if len(owner.replies) > 1 else owner.replies[0]
                body = reply.body_for(owner.seen[-1].body)
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                self.send_header("content-length", str(len(body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

        self.serve(Handler)

    def bodies(self) -> list[Any]:
        """The JSON bodies of the requests, in order."""
        return [s.body for s in self.seen]


def dripping(first: bytes, rest: bytes, go_on: threading.Event, content_type: str = "text/event-stream") -> StandIn:
    """A stand-in whose one reply is streamed in two parts: `first` at once, `rest` only once `go_on` is set (or
    after 10 s), so a test tells a reply passed on as it comes from one held until it ends. `seen` keeps the
    requests; use it as a context manager, as StandIn."""
    stand_in = StandIn(Reply(b""))
    owner = stand_in

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # the name http.server calls
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            owner.seen.append(Seen(self.path, dict(self.headers), json.loads(raw or b"null")))
            self.send_response(200)
            self.send_header("content-type", content_type)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for part in (first, rest):
                if part is rest:
                    owner.waited_out = not go_on.wait(10)  # type: ignore[attr-defined]
                self.wfile.write(f"{len(part):X}\r\n".encode() + part + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.close_connection = True

    stand_in.server.server_close()
    stand_in.serve(Handler)
    return stand_in

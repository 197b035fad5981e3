"""The telemetry tests' receiver: an OTLP/HTTP endpoint on 127.0.0.1 that keeps what it was sent."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from support.stand_in import POLL_S, QuietServer


class _Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver on 127.0.0.1: keeps each request's spans and headers; answers `status`."""

    requests: list[tuple[dict, list]] = []
    bodies: list[bytes] = []
    status = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).bodies.append(body)  # the bytes that left, as they arrived
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = [s for r in request.resource_spans for sc in r.scope_spans for s in sc.spans]
        type(self).requests.append(({k.lower(): v for k, v in self.headers.items()}, spans))
        # a refusal's reason phrase repeats the credential it was sent, as a careless server's may
        self.send_response(self.status, None if self.status == 200 else f"refused {self.headers['Authorization']}")
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def receiver():
    class Handler(_Receiver):
        requests: list = []
        bodies: list = []
        status = 200

    server = QuietServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(POLL_S,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", Handler
    server.shutdown()
    server.server_close()

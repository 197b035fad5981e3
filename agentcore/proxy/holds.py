"""Pause before send: the proxy holds a request until a person releases it, or until the hold limit.

`--pause always` holds every call; breakpoints in agentcore's own syntax (agentcore.hooks.specs, `--pause` once for
each) hold the calls they match: `step:N`, `tokens:N` and `cost:USD` as before a model call of the run (agentcore.hooks.breakpoints),
`tool:NAME`, `args:...` and `repeat` when the previous reply asked for a matching call (the request that carries its
results is held). A held call is released one of three ways: sent as it is, sent with a person's edited request
body, or answered with a mocked reply the upstream never sees; past the hold limit it is sent as it is, and the
step says so. The agent waits on its open connection meanwhile.

The holds are listed and released from Python (`Holds.release`) or through the proxy's own control paths
(`GET /agentcore/holds`, `POST /agentcore/holds/ID`), which only a client on the loopback address may use.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import UsageError
from ..hooks.breakpoints import break_before_model, break_before_tools
from ..hooks.protocol import HookEffect, Pause
from ..hooks.specs import parse_breakpoint
from ..providers.base import ModelRequest
from ..run import Run
from .dialects import Dialect, dialect_named
from .edits import write_texts

DEFAULT_HOLD_LIMIT = 600.0  # seconds a call is held before it is sent as it is
HOOK = "proxy hold"
Action = Literal["send", "edit", "answer"]
ACTIONS: tuple[str, ...] = Action.__args__


@dataclass
class Decision:
    """How a held call goes on: sent as it is, sent as edited (`body`), or answered with `text` (mocked)."""

    action: Action
    body: dict[str, Any] | None = None
    text: str | None = None
    timed_out: bool = False


@dataclass
class Held:
    """One held call: the run and step it will be, why it is held, and the request as the client sent it."""

    id: str
    run_id: str
    step: int
    reason: str
    dialect: str
    request: Any
    since: float = field(default_factory=time.time)
    decision: Decision | None = None
    released: threading.Event = field(default_factory=threading.Event)

    def listing(self) -> dict[str, Any]:
        """What the control path shows of it."""
        return {
            "id": self.id,
            "run_id": self.run_id,
            "step": self.step,
            "reason": self.reason,
            "dialect": self.dialect,
            "request": self.request,
            "since": self.since,
        }


class Holds:
    """The proxy's pause rule and the calls it holds now."""

    def __init__(self, pause: str | Sequence[str] = "never", limit: float = DEFAULT_HOLD_LIMIT) -> None:
        if not limit > 0:
            raise UsageError("--hold-limit must be a number of seconds above 0")
        said = [pause] if isinstance(pause, str) else list(pause)
        self.limit = limit
        self.pause = "always" if "always" in said else "never" if set(said) <= {"never"} else "breakpoints"
        self.specs = [parse_breakpoint(spec).spec for spec in said if spec not in ("never", "always")]
        self.held: dict[str, Held] = {}
        self.lock = threading.Lock()

    def reason(self, run: Run | None, step: int) -> str | None:
        """Why the call that would be step `step` of `run` (None: a new run) is held, or None to send it."""
        if self.pause == "never":
            return None
        if self.pause == "always":
            return "every call is held (--pause always)"
        probe = run if run is not None else Run()
        probe = probe.model_copy(update={"config": probe.config.model_copy(update={"breakpoints": self.specs})})
        if len(probe.steps) + 1 != step:  # the run as stored lags the call: read it as the step it will be
            return None
        found = break_before_model(probe, ModelRequest(messages=tuple(probe.messages)))
        if isinstance(found, Pause):
            return found.reason
        if probe.steps:
            last = probe.messages[probe.steps[-1].message_count]
            calls = list(getattr(last, "tool_calls", ()))
            found = break_before_tools(probe, calls) if calls else calls
            if isinstance(found, Pause):
                return found.reason
        return None

    def hold(self, run_id: str, step: int, reason: str, dialect: Dialect, request: Any) -> Decision:
        """Hold the call until it is released or the limit passes (then it is sent as it is)."""
        held = Held(uuid.uuid4().hex[:12], run_id, step, reason, dialect.name, request)
        with self.lock:
            self.held[held.id] = held
        try:
            if held.released.wait(self.limit) and held.decision is not None:
                return held.decision
            return Decision("send", timed_out=True)
        finally:
            with self.lock:
                self.held.pop(held.id, None)

    def listing(self) -> list[dict[str, Any]]:
        """The calls held now, oldest first."""
        with self.lock:
            return [h.listing() for h in sorted(self.held.values(), key=lambda h: h.since)]

    def release(self, hold_id: str, action: str, body: Any = None, text: Any = None, texts: Any = None) -> None:
        """Release a held call; a UsageError when there is no such hold or the decision is not one.

        An edit sends `body` in place of the request, or the request with the new `texts` of its messages (message
        number to text, as `read_request` numbers them) written into it in its own dialect (agentcore.proxy.edits).
        """
        if action not in ACTIONS:
            raise UsageError(f"action {str(action)[:40]!r}: one of {', '.join(ACTIONS)}")
        if action == "edit" and not isinstance(body, dict) and not isinstance(texts, dict):
            raise UsageError("edit needs the request body to send, a JSON object, or the messages' new texts")
        if action == "answer" and not isinstance(text, str):
            raise UsageError("answer needs the reply's text")
        with self.lock:
            held = self.held.get(hold_id)
            if held is None or held.released.is_set():
                raise UsageError(f"no held call {str(hold_id)[:40]!r}")
            if action == "edit" and not isinstance(body, dict):
                body = write_texts(dialect_named(held.dialect), held.request, _numbered(texts))
            held.decision = Decision(action, body if action == "edit" else None, text if action == "answer" else None)  # type: ignore[arg-type]
            held.released.set()


def _numbered(texts: dict[Any, Any]) -> dict[int, str]:
    """The new texts as sent over JSON, their message numbers written as strings, read back as numbers."""
    try:
        return {int(i): text for i, text in texts.items()}
    except ValueError:
        raise UsageError("the new texts are keyed by the number of their message") from None


def effects_of(decision: Decision, before: Any, limit: float) -> list[HookEffect]:
    """What a person (or the hold limit) did to a held call, as the step's hook effects."""
    if decision.timed_out:
        return [
            HookEffect(hook=HOOK, point="before_model", change=f"held past the limit of {limit:g} s: sent as it was")
        ]
    if decision.action == "edit":
        return [
            HookEffect(
                hook=HOOK,
                point="before_model",
                change="request: edited by a person before it was sent",
                kind="message_list",
                before=before,
                after=decision.body,
            )
        ]
    if decision.action == "answer":
        return [
            HookEffect(
                hook=HOOK,
                point="after_model",
                change="reply: answered by a person with a mocked reply; the upstream was not called",
                kind="reply",
                after=decision.text,
            )
        ]
    return [HookEffect(hook=HOOK, point="before_model", change="held, then sent as it was")]


def mock_reply(dialect: Dialect, text: str, model: str, stream: bool) -> tuple[bytes, str]:
    """A reply of `text` in the dialect's own shape, whole or streamed, and its content type."""
    usage_openai = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    if dialect.name == "openai":
        if not stream:
            body = {
                "id": "chatcmpl-mock",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": usage_openai,
            }
            return json.dumps(body).encode(), "application/json"
        chunk = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
        events = [
            {
                **chunk,
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}],
            },
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage_openai},
        ]
        return _sse([(None, e) for e in events], done=True), "text/event-stream"
    if dialect.name == "openai-responses":
        message = {
            "type": "message",
            "id": "msg_mock",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        response = {
            "id": f"resp_mock_{uuid.uuid4().hex[:8]}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": model,
            "output": [message],
            "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
        }
        if not stream:
            return json.dumps(response).encode(), "application/json"
        done = {"type": "response.completed", "sequence_number": 1, "response": response}
        return _sse([("response.completed", done)]), "text/event-stream"
    if dialect.name == "anthropic":
        message = {
            "id": "msg_mock",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        if not stream:
            return json.dumps(message).encode(), "application/json"
        start = {**message, "content": [], "stop_reason": None}
        events = [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 0},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return _sse(events), "text/event-stream"
    final = {"model": model, "message": {"role": "assistant", "content": text}, "done": True, "done_reason": "stop"}
    if not stream:
        return json.dumps(final).encode(), "application/json"
    return json.dumps(final).encode() + b"\n", "application/x-ndjson"


def _sse(events: list[tuple[str | None, Any]], done: bool = False) -> bytes:
    out = [(f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n" for name, data in events]
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()

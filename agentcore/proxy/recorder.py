"""Each proxied call as a step of a stored run, saved as the reply ends.

Calls are grouped by conversation: a request whose messages begin with an earlier call's messages and its reply
is that run's next step (the longest such run wins), a Responses request naming a `previous_response_id` goes on
from the call that gave it, and any other request starts a run. The run is built by the sessions' builder
(agentcore.sessions.builder), as an imported session's is: the first request's messages are its history, each
reply a turn, the tool results a later request sends back the results of the turn that asked for them. So the run
is an ordinary run everywhere: its steps have usage, model, latency and the wire exchange as the client sent it
and as the upstream answered (headers redacted, every registered secret scrubbed).
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage
from ..providers.base import ModelResponse, WireExchange
from ..run import Run
from ..secrets import scrub
from ..sessions.builder import Result, SessionBuilder, Turn, first_words
from ..steps import now_stamp
from ..store.exchanges import KeptExchange
from .dialects import Conversation, Dialect, key_of

MAX_LIVE_RUNS = 1000  # conversations the proxy remembers, to place a later call; the oldest is forgotten first
FORMAT = "proxy"  # the runs' origin format


@dataclass
class Exchange:
    """One proxied call as it went: what the client sent and what it received, and how long the upstream took."""

    dialect: Dialect
    conversation: Conversation
    wire: WireExchange  # the request as received, the reply as returned (credentials removed)
    response: ModelResponse
    latency_ms: float
    started_at: str = field(default_factory=now_stamp)
    effects: list[Any] = field(default_factory=list)  # HookEffects: what a person did to a held call
    response_id: str | None = None
    kept: KeptExchange | None = None  # the bodies' bytes, as the client sent and received them


class _Builder(SessionBuilder):
    """The sessions' builder, fed one call at a time: a later request's tool results answer the turn before it."""

    def add(self, new: list[Message], first: bool) -> None:
        """What a request adds before its model call: the whole history for a run's first call; else the tool
        results of the last turn, then what the person or the agent said."""
        if first:
            for message in new:
                self.copied(message)
            return
        if self.steps:
            step = self.steps[-1]
            answered = {t.tool_call_id for t in step.tool_runs}
            calls = [c for c in self._calls_of(step) if c.id not in answered]
            for call, result in _results(tuple(calls), new):
                self.used.add(call.id)
                self._result(step, call, result)
        for message in new:
            if isinstance(message, UserMessage):
                self.user(message.content)
            elif isinstance(message, SystemMessage):
                self.system(message.content)
            elif not isinstance(message, ToolMessage):
                self.copied(message)


@dataclass
class _Live:
    """A conversation being recorded: its run's id, its builder and the conversation so far."""

    run_id: str
    created_at: str
    builder: _Builder | None = None
    tools: list[Any] = field(default_factory=list)
    keys: list[tuple[Any, ...]] = field(default_factory=list)  # the conversation so far, replies included
    last_used: float = field(default_factory=time.monotonic)

    @property
    def steps(self) -> list[Any]:
        """The step records so far."""
        return self.builder.steps if self.builder is not None else []


@dataclass(eq=False)
class Placed:
    """Where a request goes: the conversation it continues (or a new one) and what it adds to it; `done` is set
    once the call is recorded or has failed (`Recorder.finish`)."""

    live: _Live
    new: list[Message]
    step: int  # the step this call will be
    keys: list[tuple[Any, ...]] = field(default_factory=list)  # the request's messages, as key_of says them
    done: threading.Event = field(default_factory=threading.Event)
    kept: tuple[str, int, KeptExchange] | None = None  # the step's bytes, written once the reply has gone


FINISH_WAIT = 30.0  # seconds a request waits for an earlier call it continues to be recorded


class Recorder:
    """The proxy's runs: `place` a request, then `record` its exchange and `finish` it; each record saves the run
    whole.

    An agent may send its next request as soon as the reply's last event reaches it, before the proxy has read the
    end of the upstream's body and recorded the call: a request that continues a call still in flight waits for
    that call to be recorded before it is placed.
    """

    def __init__(self, store: Any, upstream: str) -> None:
        self.store = store
        self.upstream = upstream
        self.lives: dict[str, _Live] = {}
        self.by_response: dict[str, str] = {}  # a Responses reply's id → its run's id
        self.in_flight: list[Placed] = []
        self.lock = threading.RLock()  # build, called on its own by the holds, is also called within record

    def place(self, conversation: Conversation) -> Placed:
        """The run this request continues and the messages it adds; a new run when it continues none."""
        keys = [key_of(m) for m in conversation.messages]
        previous = conversation.previous_response_id
        with self.lock:
            earlier = [
                p
                for p in self.in_flight
                if (previous and previous not in self.by_response)
                or (len(p.keys) < len(keys) and keys[: len(p.keys)] == p.keys)
            ]
        for call in earlier:
            call.done.wait(FINISH_WAIT)
        with self.lock:
            placed = self._place(conversation, keys)
            self.in_flight.append(placed)
            return placed

    def _place(self, conversation: Conversation, keys: list[tuple[Any, ...]]) -> Placed:
        previous = conversation.previous_response_id
        live = self.lives.get(self.by_response.get(previous, "")) if previous else None
        if live is not None:
            new = list(conversation.messages)
            if new and isinstance(new[0], SystemMessage):  # instructions are sent again with each request
                new = new[1:]
            return Placed(live, new, len(live.steps) + 1, keys)
        best: _Live | None = None
        for candidate in self.lives.values():
            n = len(candidate.keys)
            if n < len(keys) and keys[:n] == candidate.keys and (best is None or n > len(best.keys)):
                best = candidate
        if best is not None:
            return Placed(best, list(conversation.messages[len(best.keys) :]), len(best.steps) + 1, keys)
        live = _Live(run_id=uuid.uuid4().hex[:12], created_at=now_stamp())
        return Placed(live, list(conversation.messages), 1, keys)

    def settle(self, timeout: float = FINISH_WAIT) -> None:
        """Wait until every call in flight now is recorded or has failed (a held call is in flight until released)."""
        with self.lock:
            calls = list(self.in_flight)
        for call in calls:
            call.done.wait(timeout)

    def finish(self, placed: Placed) -> None:
        """The call is recorded, or will not be: its bytes are kept (after the reply has gone: the agent does not
        wait for a second write), and a request waiting on it is placed now."""
        kept, placed.kept = placed.kept, None
        try:
            if kept is not None:
                self.store.keep_exchange(*kept)
        finally:
            with self.lock:
                if placed in self.in_flight:
                    self.in_flight.remove(placed)
            placed.done.set()

    def record(self, placed: Placed, exchange: Exchange) -> Run:
        """Add the call to its run and save the run; returns the run as stored."""
        with self.lock:
            live = placed.live
            first = live.builder is None
            if live.builder is None:
                live.builder = _Builder(FORMAT, self.upstream, exchange.dialect.name, results={})
            live.builder.add(placed.new, first)
            live.builder.turn(_turn(exchange), {})
            step = live.builder.steps[-1]
            step.wire, step.latency_ms, step.hook_effects = exchange.wire, exchange.latency_ms, list(exchange.effects)
            live.tools = exchange.conversation.tools or live.tools
            live.keys = [*live.keys, *map(key_of, placed.new), key_of(exchange.response.message)]
            live.last_used = time.monotonic()
            self.lives[live.run_id] = live
            if exchange.response_id:
                self.by_response[exchange.response_id] = live.run_id
            while len(self.lives) > MAX_LIVE_RUNS:
                oldest = min(self.lives.values(), key=lambda lv: lv.last_used)
                del self.lives[oldest.run_id]
            run = self.build(live)
            self.store.save_run(run)
            if exchange.kept is not None:
                placed.kept = (run.id, len(run.steps) - 1, exchange.kept)
            return run

    def build(self, live: _Live, builder: _Builder | None = None) -> Run:
        """The run of a conversation's calls so far, built as an imported session's is (its step records are the
        builder's own, so the store rewrites only the steps that changed)."""
        with self.lock:
            builder = builder or live.builder
            assert builder is not None
            run = builder.build(
                title=first_words(builder.messages, "proxied run"), session_id=live.run_id, agent=None, tools=live.tools
            )
        run.id, run.created_at = live.run_id, live.created_at
        return run

    def preview(self, placed: Placed) -> Run | None:
        """The run as a request about to be sent finds it: the steps so far with the tool results and the words
        the request adds (what a `tool-error` breakpoint reads); None for a request that starts a run."""
        with self.lock:
            if placed.live.builder is None:
                return None
            builder = copy.deepcopy(placed.live.builder)  # the live one takes the request only once it is answered
            builder.add(placed.new, first=False)
            return self.build(placed.live, builder)


def _turn(exchange: Exchange) -> Turn:
    reply: AssistantMessage = exchange.response.message
    return Turn(
        texts=[reply.content] if reply.content else [],
        calls=list(reply.tool_calls),
        reasoning=list(reply.reasoning),
        usage=exchange.response.usage,
        estimated=exchange.response.estimated,
        model=exchange.conversation.model or None,
        started_at=exchange.started_at,
        finish_reason=exchange.response.finish_reason,
    )


def _results(calls: tuple[ToolCall, ...], later: list[Message]) -> list[tuple[ToolCall, Result]]:
    """The results a later request sent for `calls`, in its order: matched by call id, else by the tool's name,
    else in order (Ollama's clients answer a call by its tool's name alone)."""
    open_calls = list(calls)
    out: list[tuple[ToolCall, Result]] = []
    for message in later:
        if not isinstance(message, ToolMessage) or not open_calls:
            continue
        match = next((c for c in open_calls if c.id == message.tool_call_id), None)
        match = match or next((c for c in open_calls if c.name == message.name), open_calls[0])
        open_calls.remove(match)
        out.append((match, Result(message.content, message.is_error)))
    return out


def exchange_wire(
    url: str,
    request_headers: dict[str, str],
    request: Any,
    status: int,
    response_headers: dict[str, str],
    response: Any,
) -> WireExchange:
    """The wire view of one call, every registered secret scrubbed from it (headers were redacted by the caller)."""
    return WireExchange(
        url=scrub(url),
        request_headers=request_headers,
        request=scrub(request),
        status=status,
        response_headers=response_headers,
        response=scrub(response),
    )

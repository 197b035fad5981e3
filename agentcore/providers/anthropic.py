"""Anthropic Messages API: system prompt on top, tool results as user content blocks, named SSE events.

Extended thinking: `Settings.thinking_budget` turns it on with that budget (`reasoning_effort` alone asks
for adaptive thinking at that effort). thinking and redacted_thinking blocks become ReasoningParts and go
back verbatim, first in their assistant turn, on every later request to this API.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, assert_never

from .. import catalogue
from ..messages import (
    MAX_COUNT,
    AssistantMessage,
    Message,
    ReasoningPart,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    Violation,
    as_count,
    parse_arguments,
)
from ..tools import ToolSpec
from ._http import BadResponse, EventStream, HttpProvider
from .anthropic_cache import place_cache_breakpoints
from .base import ModelRequest, ModelResponse, TextSink, WireExchange

PROVIDER = "anthropic"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024
STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


def build_body(
    model: str, request: ModelRequest, *, stream: bool = False, max_tokens: int | None = None
) -> dict[str, Any]:
    """The request body: `system` on top, turns alternating, all tool results of a turn in one user message.

    max_tokens is the run's, else `max_tokens` (the provider's option), else room for the thinking a model
    does by default (catalogue.default_max_tokens), else DEFAULT_MAX_TOKENS. With `Settings.cache_breakpoints`,
    prompt caching's breakpoints are placed (see anthropic_cache).
    """
    system = [m.content for m in request.messages if isinstance(m, SystemMessage)]
    limit = (
        request.settings.max_tokens or max_tokens or catalogue.default_max_tokens(PROVIDER, model) or DEFAULT_MAX_TOKENS
    )
    body: dict[str, Any] = {"model": model, "max_tokens": limit}
    if system:
        body["system"] = "\n\n".join(system)
    body["messages"] = messages_to_wire(request.messages)
    if request.tools:
        body["tools"] = [tool_to_wire(t) for t in request.tools]
        if request.tool_choice == "none":
            body["tool_choice"] = {"type": "none"}
        elif request.settings.parallel_tool_calls is False:
            body["tool_choice"] = {"type": "auto", "disable_parallel_tool_use": True}
    if request.settings.temperature is not None:
        body["temperature"] = request.settings.temperature
    add_thinking(body, request.settings.thinking_budget, request.settings.reasoning_effort)
    if stream:
        body["stream"] = True
    return place_cache_breakpoints(body) if request.settings.cache_breakpoints else body


def add_thinking(body: dict[str, Any], budget: int | None, effort: str | None) -> None:
    """The thinking settings: a budget is extended thinking, an effort alone adaptive thinking.

    The budget counts toward max_tokens, so max_tokens is raised above it when it is not already.
    """
    if budget:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if body["max_tokens"] <= budget:
            body["max_tokens"] = budget + body["max_tokens"]
    elif effort and effort != "none":
        body["thinking"] = {"type": "adaptive"}
    if effort and effort != "none":
        body["output_config"] = {"effort": effort}


def reasoning_to_wire(part: ReasoningPart) -> dict[str, Any]:
    """A thinking or redacted_thinking block, exactly as the API returned it."""
    if part.redacted is not None:
        return {"type": "redacted_thinking", "data": part.redacted}
    block: dict[str, Any] = {"type": "thinking", "thinking": part.text}
    if part.signature is not None:
        block["signature"] = part.signature
    return block


def messages_to_wire(messages: tuple[Message, ...] | list[Message]) -> list[dict[str, Any]]:
    """Typed messages as Messages API turns; a user text after tool results joins their turn, after them."""
    turns: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            continue
        if isinstance(m, ToolMessage):
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
            if m.is_error:
                block["is_error"] = True
            last = turns[-1] if turns else None
            if last and last["role"] == "user" and isinstance(last["content"], list):
                last["content"].append(block)
            else:
                turns.append({"role": "user", "content": [block]})
        elif isinstance(m, UserMessage):
            last = turns[-1] if turns else None
            if last and last["role"] == "user" and isinstance(last["content"], list):
                last["content"].append({"type": "text", "text": m.content})  # text must follow the results
            else:
                turns.append({"role": "user", "content": m.content})
        elif isinstance(m, AssistantMessage):
            # this API's own thinking first, unchanged; another provider's reasoning is not sent
            content: list[dict[str, Any]] = [reasoning_to_wire(p) for p in m.reasoning_for(PROVIDER)]
            if m.content:
                content.append({"type": "text", "text": m.content})
            for call in m.tool_calls:
                # the API only takes an object; invalid text from another model goes back as an empty input
                content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
            turns.append({"role": "assistant", "content": content})
        else:
            assert_never(m)
    return turns


def thinking_violations(request: ModelRequest) -> list[Violation]:
    """Extended thinking's rule: in a tool loop, the last assistant turn starts with this API's own thinking.

    The API refuses a thinking request whose tool loop began without thinking (turned on mid-loop, or a
    turn another provider made, whose reasoning is not sent): found here, before anything is paid for.
    """
    messages = request.messages
    if not request.settings.thinking_budget or not messages or not isinstance(messages[-1], ToolMessage):
        return []
    last = next(((i, m) for i, m in reversed(list(enumerate(messages))) if isinstance(m, AssistantMessage)), None)
    if last is None or last[1].reasoning_for(PROVIDER):
        return []  # no turn to check (an orphan result is the shared rules' to report), or its thinking is there
    i = last[0]
    return [
        Violation(
            i,
            "with extended thinking on, Anthropic needs the last assistant turn of a tool loop to start with its "
            "own thinking block, and this one has none; turn thinking on or switch to Anthropic after the loop",
        )
    ]


def tool_to_wire(spec: ToolSpec) -> dict[str, Any]:
    """A tool spec as a Messages API tool (`input_schema`)."""
    return {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}


def parse_usage(data: Any) -> Usage:
    """Usage from a Messages `usage`; input tokens are the uncached, cache-read and cache-write ones together."""
    if not isinstance(data, dict):
        return Usage()
    read = as_count(data.get("cache_read_input_tokens"))
    write = as_count(data.get("cache_creation_input_tokens"))
    details = data.get("output_tokens_details")
    thinking = details.get("thinking_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=min(as_count(data.get("input_tokens")) + read + write, MAX_COUNT),
        output_tokens=as_count(data.get("output_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
        reasoning_tokens=as_count(thinking),
    )


def parse_blocks(blocks: list[Any]) -> AssistantMessage:
    """Content blocks as an AssistantMessage; a tool_use without id or name is a BadResponse."""
    text: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[ReasoningPart] = []
    for k, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            text.append(block.get("text") or "")
        elif kind == "thinking":
            signature = block.get("signature")
            reasoning.append(
                ReasoningPart(
                    provider=PROVIDER,
                    text=_text(block.get("thinking")),
                    signature=signature if isinstance(signature, str) else None,
                )
            )
        elif kind == "redacted_thinking":
            reasoning.append(ReasoningPart(provider=PROVIDER, redacted=_text(block.get("data"))))
        elif kind == "tool_use":
            call_id, name, arguments = block.get("id"), block.get("name"), block.get("input")
            if not call_id:
                raise BadResponse(f"content block {k} (tool_use {name or 'unnamed'}) has no id")
            if not name:
                raise BadResponse(f"content block {k} (tool_use {call_id}) has no name")
            if isinstance(arguments, dict):
                calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
            else:
                raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
                calls.append(parse_arguments(call_id, name, raw))
    content = "".join(text)
    return AssistantMessage(
        content=content or (None if calls else ""), tool_calls=tuple(calls), reasoning=tuple(reasoning)
    )


def _object(value: Any) -> dict[str, Any]:
    # a JSON object from a server as a fresh dict; anything else as an empty one
    return dict(value) if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    # a block's text or opaque data is a string; anything else a server sends is not kept
    return value if isinstance(value, str) else ""


def parse_message(data: Any, wire: WireExchange) -> ModelResponse:
    """A `message` body as a ModelResponse; a malformed body is a BadResponse."""
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise BadResponse("the response is not a message with a content list")
    message = parse_blocks(data["content"])
    reason = data.get("stop_reason")
    return ModelResponse(
        message=message,
        usage=parse_usage(data.get("usage")),
        finish_reason=STOP_REASONS.get(reason, reason),
        wire=wire,
    )


class AnthropicProvider(HttpProvider):
    """The Messages API over httpx."""

    name: ClassVar[str] = PROVIDER
    extra_options: ClassVar[frozenset[str]] = frozenset({"max_tokens", "anthropic_version"})

    @property
    def url(self) -> str:
        """The messages endpoint; a base URL may or may not end in /v1."""
        return f"{self.base_url}/messages" if self.base_url.endswith("/v1") else f"{self.base_url}/v1/messages"

    def headers(self) -> dict[str, str]:
        """Request headers: the key in x-api-key, and the API version."""
        headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "anthropic-version": self.options.get("anthropic_version", API_VERSION),
        }
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def body(self, request: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
        """The request body this provider sends."""
        option = self.options.get("max_tokens")
        return build_body(self.model, request, stream=stream, max_tokens=None if option is None else int(option))

    def preflight(self, request: ModelRequest) -> list[Violation]:
        """The shared rules, plus Anthropic's: the first turn is the user's and roles alternate."""
        found = super().preflight(request)
        previous: tuple[int, str] | None = None
        for i, m in enumerate(request.messages):
            if isinstance(m, SystemMessage):
                continue
            role = "user" if isinstance(m, UserMessage | ToolMessage) else "assistant"
            if previous is None and role != "user":
                found.append(Violation(i, "Anthropic needs the first message after the system prompt to be a user's"))
            if previous and previous[1] == role == "assistant":
                found.append(
                    Violation(
                        i,
                        f"two assistant messages in a row ({previous[0]} and {i}); Anthropic needs turns to alternate",
                    )
                )
            previous = (i, role)
        found.extend(thinking_violations(request))
        found.sort(key=lambda v: v.index)
        return found

    def parse_response(self, data: Any, request: ModelRequest, wire: WireExchange) -> ModelResponse:
        """A `message` body as a ModelResponse."""
        return parse_message(data, wire)

    def read_stream(self, stream: EventStream, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """Named SSE events folded into one message, up to message_stop; an `error` event is a BadResponse."""
        message = _MessageStream(on_text)
        finished = False
        for event in stream.sse():
            fields = event.data if isinstance(event.data, dict) else {}
            kind = fields.get("type", event.name)
            if kind == "error" or event.name == "error":
                raise _stream_error(fields, event.text)
            finished = message.add(kind, fields)
            if finished:
                break
        if not finished:
            raise BadResponse("the stream ended before message_stop")
        return ModelResponse(
            message=parse_blocks(message.content()),
            usage=parse_usage(message.usage),
            finish_reason=STOP_REASONS.get(message.stop_reason, message.stop_reason),
            wire=stream.wire,
        )


@dataclass
class _MessageStream:
    """A streamed message as its events arrive: content blocks by index, their text in pieces, usage, stop reason.

    A block's text, thinking and tool input come as pieces joined once at the end: adding each
    delta to the text so far copies all of it every time, and a long reply has tens of
    thousands of deltas.
    """

    on_text: TextSink
    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    pieces: dict[tuple[int, str], list[str]] = field(default_factory=dict)  # (block index, field): its deltas
    usage: dict[str, Any] = field(default_factory=dict)
    stop_reason: str | None = None

    def add(self, kind: str | None, event: dict[str, Any]) -> bool:
        """Fold one event in; True once the message is complete (message_stop)."""
        # a field of the wrong type from a server is taken as absent
        if kind == "message_start":
            self.usage.update(_object(_object(event.get("message")).get("usage")))
        elif kind == "content_block_start":
            index = event.get("index")
            self.blocks[index if isinstance(index, int) else len(self.blocks)] = _object(event.get("content_block"))
        elif kind == "content_block_delta":
            index = event.get("index")
            self._add_delta(index if isinstance(index, int) else 0, _object(event.get("delta")))
        elif kind == "message_delta":
            reason = _object(event.get("delta")).get("stop_reason")
            self.stop_reason = reason if isinstance(reason, str) else self.stop_reason
            self.usage.update(_object(event.get("usage")))  # cumulative counts: the last one wins
        return kind == "message_stop"

    def _add_delta(self, index: int, delta: dict[str, Any]) -> None:
        block = self.blocks.setdefault(index, {"type": "text", "text": ""})
        if delta.get("type") == "text_delta":
            text = _text(delta.get("text"))
            self._piece(index, "text", block).append(text)
            if text:
                self.on_text(text)
        elif delta.get("type") == "input_json_delta":
            self.pieces.setdefault((index, "input"), []).append(_text(delta.get("partial_json")))
        elif delta.get("type") == "thinking_delta":
            self._piece(index, "thinking", block).append(_text(delta.get("thinking")))
        elif delta.get("type") == "signature_delta":  # one, just before the block ends
            block["signature"] = _text(delta.get("signature"))

    def _piece(self, index: int, key: str, block: dict[str, Any]) -> list[str]:
        # the block's own text from content_block_start comes first
        return self.pieces.setdefault((index, key), [_text(block.get(key))])

    def content(self) -> list[dict[str, Any]]:
        """The content blocks in order, their pieces joined; each tool_use's input parsed from its pieces."""
        for (index, key), pieces in self.pieces.items():
            text = "".join(pieces)
            # tool input that is not an object stays raw for the loop to report
            self.blocks[index][key] = _object_or_raw(text) if key == "input" else text
        return [self.blocks[i] for i in sorted(self.blocks)]


def _stream_error(event: dict[str, Any], text: str) -> BadResponse:
    """An `error` event (`text` as sent); an overload or a server error may be retried."""
    err = event.get("error")
    err = err if isinstance(err, dict) else {}
    return BadResponse(
        f"error in the stream: {err.get('message') or text}",
        type=err.get("type"),
        retryable=err.get("type") in ("overloaded_error", "api_error"),
    )


def _object_or_raw(text: str) -> Any:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) else text

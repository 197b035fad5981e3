"""Ollama's native /api/chat: arguments as objects, tool results named by tool_name, NDJSON streaming.

Thinking: `think` is sent when a reasoning setting asks for it (a level for an effort, else true for a
budget); the reply's `thinking` text becomes a ReasoningPart and goes back as the assistant's `thinking`.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, ClassVar, assert_never

from ..messages import (
    AssistantMessage,
    Message,
    ReasoningPart,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    as_count,
)
from ..messages import parse_arguments as parse_argument_text
from ..tools import ToolSpec
from ._http import BadResponse, EventStream, HttpProvider
from .base import ModelRequest, ModelResponse, Settings, TextSink, WireExchange

PROVIDER = "ollama"
THINK_LEVELS = ("low", "medium", "high", "max")


def message_to_wire(m: Message) -> dict[str, Any]:
    """One typed message as an /api/chat message."""
    if isinstance(m, SystemMessage | UserMessage):
        return {"role": m.role, "content": m.content}
    if isinstance(m, AssistantMessage):
        out: dict[str, Any] = {"role": "assistant", "content": m.content or ""}
        thinking = "".join(p.text for p in m.reasoning_for(PROVIDER))
        if thinking:
            out["thinking"] = thinking
        if m.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "function": {"index": k, "name": c.name, "arguments": c.arguments}}
                for k, c in enumerate(m.tool_calls)
            ]
        return out
    if isinstance(m, ToolMessage):
        # tool_name is what Ollama matches on; newer servers also read tool_call_id
        return {"role": "tool", "content": m.content, "tool_name": m.name, "tool_call_id": m.tool_call_id}
    assert_never(m)


def tool_to_wire(spec: ToolSpec) -> dict[str, Any]:
    """A tool spec in Ollama's (OpenAI-shaped) function form."""
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
    }


def build_body(model: str, request: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
    """The request body; `stream` is always sent because Ollama streams by default."""
    body: dict[str, Any] = {"model": model, "messages": [message_to_wire(m) for m in request.messages]}
    if request.offered_tools:  # Ollama has no tool_choice: an answer is asked for by offering no tools
        body["tools"] = [tool_to_wire(t) for t in request.offered_tools]
    s = request.settings
    options = {
        k: v
        for k, v in (("temperature", s.temperature), ("num_predict", s.max_tokens), ("seed", s.seed))
        if v is not None
    }
    if options:
        body["options"] = options
    think = think_value(s)
    if think is not None:
        body["think"] = think
    body["stream"] = stream
    return body


def think_value(settings: Settings) -> bool | str | None:
    """`think` for the settings: a level for an effort Ollama knows, off for "none", on for a budget; else unset."""
    effort = settings.reasoning_effort
    if effort == "none":
        return False
    if effort is not None:
        return effort if effort in THINK_LEVELS else True
    return True if settings.thinking_budget else None


def parse_usage(data: dict[str, Any]) -> Usage:
    """Usage from the final object's counts (absent when zero)."""
    return Usage(input_tokens=as_count(data.get("prompt_eval_count")), output_tokens=as_count(data.get("eval_count")))


def parse_tool_call(k: int, raw: Any) -> ToolCall:
    """One /api/chat tool call; older servers send no id, so one is made up (ids must be unique in a run)."""
    fn = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(fn, dict) or not fn.get("name"):
        raise BadResponse(f"tool call {k} has no function name")
    call_id = raw.get("id") or f"call_{uuid.uuid4().hex[:12]}"
    arguments = fn.get("arguments")
    if isinstance(arguments, dict):
        return ToolCall(id=str(call_id), name=str(fn["name"]), arguments=arguments)
    text = arguments if isinstance(arguments, str) or arguments is None else json.dumps(arguments)
    return parse_argument_text(str(call_id), str(fn["name"]), text)


def _response(
    content: str, thinking: str, calls: tuple[ToolCall, ...], final: dict[str, Any], wire: WireExchange
) -> ModelResponse:
    reasoning = (ReasoningPart(provider=PROVIDER, text=thinking),) if thinking else ()
    message = AssistantMessage(content=content or (None if calls else ""), tool_calls=calls, reasoning=reasoning)
    reason = final.get("done_reason")
    # Ollama ends a tool-calling turn with "stop" too; the calls decide
    return ModelResponse(
        message=message, usage=parse_usage(final), finish_reason="tool_calls" if calls else reason, wire=wire
    )


def parse_chat(data: Any, wire: WireExchange) -> ModelResponse:
    """A non-streamed /api/chat body as a ModelResponse; a malformed body is a BadResponse."""
    if not isinstance(data, dict) or not isinstance(data.get("message"), dict):
        raise BadResponse("the response has no message")
    if data.get("error"):
        raise BadResponse(str(data["error"]))
    message = data["message"]
    calls = tuple(parse_tool_call(k, c) for k, c in enumerate(message.get("tool_calls") or []))
    return _response(message.get("content") or "", _text(message.get("thinking")), calls, data, wire)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


class OllamaProvider(HttpProvider):
    """Ollama's native chat API over httpx; no key needed (one is sent as a bearer token if given)."""

    name: ClassVar[str] = PROVIDER

    def __init__(self, model: str, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        if "://" not in self.base_url:  # OLLAMA_HOST is often written as host:port
            self.base_url = f"http://{self.base_url}"

    @property
    def url(self) -> str:
        """The /api/chat endpoint."""
        return f"{self.base_url}/api/chat"

    def headers(self) -> dict[str, str]:
        """The shared headers without `accept`: a streamed answer is NDJSON, a whole one JSON."""
        headers = super().headers()
        del headers["accept"]
        return headers

    def body(self, request: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
        """The request body this provider sends."""
        return build_body(self.model, request, stream=stream)

    def parse_response(self, data: Any, request: ModelRequest, wire: WireExchange) -> ModelResponse:
        """A whole /api/chat body as a ModelResponse."""
        return parse_chat(data, wire)

    def read_stream(self, stream: EventStream, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """NDJSON lines: text deltas passed on, whole tool calls collected, usage from the final (done) line."""
        text: list[str] = []
        thinking: list[str] = []
        raw_calls: list[Any] = []
        final: dict[str, Any] | None = None
        for event in stream.ndjson():
            chunk = event.data
            if not isinstance(chunk, dict):
                raise BadResponse("a streamed line is not a JSON object")
            if chunk.get("error"):
                raise BadResponse(f"error in the stream: {chunk['error']}")
            message = chunk.get("message")
            message = message if isinstance(message, dict) else {}
            thinking.append(_text(message.get("thinking")))
            if message.get("content"):
                text.append(message["content"])
                on_text(message["content"])
            raw_calls.extend(message.get("tool_calls") or [])  # each call arrives whole, not in fragments
            if chunk.get("done"):
                final = chunk
                break
        if final is None:
            raise BadResponse("the stream ended before the final (done) line")
        calls = tuple(parse_tool_call(k, c) for k, c in enumerate(raw_calls))
        return _response("".join(text), "".join(thinking), calls, final, stream.wire)

"""OpenAI Chat Completions, and any server that speaks it (vLLM, LM Studio, llama.cpp, Ollama's /v1, Groq)."""

from __future__ import annotations

import json
from typing import Any, ClassVar, assert_never

from .. import catalogue
from ..messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, Usage, UserMessage
from ..messages import parse_arguments as parse_argument_text
from ..tools import ToolSpec
from . import get_info
from ._http import BadResponse, EventStream, HttpProvider
from .base import ModelRequest, ModelResponse, TextSink, WireExchange, estimate_request_tokens, estimate_tokens


def message_to_wire(m: Message) -> dict[str, Any]:
    """One typed message as a Chat Completions message."""
    if isinstance(m, SystemMessage):
        return {"role": "system", "content": m.content}
    if isinstance(m, UserMessage):
        return {"role": "user", "content": m.content}
    if isinstance(m, AssistantMessage):
        out: dict[str, Any] = {"role": "assistant", "content": m.content}
        if m.tool_calls:
            out["tool_calls"] = [call_to_wire(c) for c in m.tool_calls]
        return out
    if isinstance(m, ToolMessage):
        # Chat Completions has no error flag; the loop words failures in the content itself
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    assert_never(m)


def call_to_wire(call: ToolCall) -> dict[str, Any]:
    """A tool call echoed back with the arguments the model wrote, byte for byte (ToolCall.arguments_text)."""
    arguments = call.arguments_text
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}


def tool_to_wire(spec: ToolSpec) -> dict[str, Any]:
    """A tool spec as a Chat Completions function tool."""
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
    }


def max_tokens_field_for(base_url: str | None) -> str:
    """The field of the most tokens to write: `max_completion_tokens` on OpenAI's own API, else `max_tokens`.

    OpenAI deprecated max_tokens, and its reasoning models refuse it; many compatible servers know only
    max_tokens. No base URL, or the registry's default one, is OpenAI's own API.
    """
    official = not base_url or base_url.rstrip("/") == get_info("openai").default_base_url
    return "max_completion_tokens" if official else "max_tokens"


def build_body(
    model: str, request: ModelRequest, *, stream: bool = False, max_tokens_field: str = "max_tokens"
) -> dict[str, Any]:
    """The request body for a ModelRequest; `max_tokens_field` is the one `max_tokens_field_for(base_url)` names.

    The settings go as the catalogue fits them to the model (catalogue.fit_settings): gpt-6-luna offered
    tools is sent reasoning_effort none, the only effort at which it calls tools on Chat Completions.
    """
    body: dict[str, Any] = {"model": model, "messages": [message_to_wire(m) for m in request.messages]}
    if request.tools:
        body["tools"] = [tool_to_wire(t) for t in request.tools]
        if request.tool_choice == "none":
            body["tool_choice"] = "none"
        if request.settings.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = request.settings.parallel_tool_calls
    s = catalogue.fit_settings("openai", model, request.settings, tools=bool(request.tools))
    if s.reasoning_effort is not None:
        body["reasoning_effort"] = s.reasoning_effort
    if s.temperature is not None:
        body["temperature"] = s.temperature
    if s.max_tokens is not None:
        body[max_tokens_field] = s.max_tokens
    if s.seed is not None:
        body["seed"] = s.seed
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def parse_usage(data: Any) -> Usage | None:
    """Usage from a Chat Completions `usage` object; cached tokens are part of the prompt tokens."""
    if not isinstance(data, dict):
        return None
    details = data.get("prompt_tokens_details") or {}
    return Usage(
        input_tokens=int(data.get("prompt_tokens") or 0),
        output_tokens=int(data.get("completion_tokens") or 0),
        cache_read_tokens=int(details.get("cached_tokens") or 0),
        cache_write_tokens=int(details.get("cache_write_tokens") or 0),
    )


def parse_tool_call(k: int, raw: Any) -> ToolCall:
    """One wire tool call as a ToolCall; a call without an id or a name is a BadResponse."""
    fn = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(fn, dict):
        raise BadResponse(f"tool call {k} has no function")
    call_id, name = raw.get("id"), fn.get("name")
    if not call_id:
        raise BadResponse(f"tool call {k} ({name or 'unnamed'}) has no id")
    if not name:
        raise BadResponse(f"tool call {k} ({call_id}) has no function name")
    arguments = fn.get("arguments")
    if isinstance(arguments, dict):  # some compatible servers send an object, not a string
        return ToolCall(id=str(call_id), name=str(name), arguments=arguments)
    return parse_argument_text(str(call_id), str(name), arguments if arguments is None else str(arguments))


def parse_completion(data: Any, request: ModelRequest, wire: WireExchange) -> ModelResponse:
    """A `chat.completion` body as a ModelResponse; a malformed body is a BadResponse."""
    if not isinstance(data, dict):
        raise BadResponse(f"the response is a JSON {type(data).__name__}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise BadResponse("the response has no choices")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise BadResponse("the response's first choice has no message")
    calls = tuple(parse_tool_call(k, c) for k, c in enumerate(message.get("tool_calls") or []))
    content = message.get("content")
    return _response(
        content if isinstance(content, str) else None, calls, choices[0].get("finish_reason"), data, request, wire
    )


def _response(
    content: str | None,
    calls: tuple[ToolCall, ...],
    finish: str | None,
    data: Any,
    request: ModelRequest,
    wire: WireExchange,
) -> ModelResponse:
    if not content and not calls:
        content = ""  # an empty answer is still an answer, not a malformed message
    message = AssistantMessage(content=content or None if calls else content, tool_calls=calls)
    usage = parse_usage(data.get("usage") if isinstance(data, dict) else None)
    estimated = usage is None
    if usage is None:  # some compatible servers omit usage; estimate rather than report zero
        usage = Usage(input_tokens=estimate_request_tokens(request), output_tokens=estimate_tokens(message.text))
    # a forced tool choice ends with finish_reason "stop" even with calls; the calls decide
    return ModelResponse(
        message=message,
        usage=usage,
        estimated=estimated,
        finish_reason="tool_calls" if calls else finish,
        wire=wire,
    )


class OpenAIProvider(HttpProvider):
    """Chat Completions over httpx; with a base URL, any OpenAI-compatible server."""

    name: ClassVar[str] = "openai"

    @property
    def url(self) -> str:
        """The Chat Completions endpoint."""
        return f"{self.base_url}/chat/completions"

    def body(self, request: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
        """The request body this provider sends."""
        return build_body(self.model, request, stream=stream, max_tokens_field=max_tokens_field_for(self.base_url))

    def parse_response(self, data: Any, request: ModelRequest, wire: WireExchange) -> ModelResponse:
        """A `chat.completion` body as a ModelResponse."""
        return parse_completion(data, request, wire)

    def read_stream(self, stream: EventStream, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """SSE chunks up to [DONE]: text deltas passed on, tool-call fragments merged by index, usage from the last."""
        text: list[str] = []
        slots: dict[int, dict[str, Any]] = {}
        usage: Any = None
        finish: str | None = None
        for event in stream.sse(end="[DONE]"):
            chunk = event.data
            if not isinstance(chunk, dict):
                raise BadResponse("a streamed chunk is not a JSON object")
            if chunk.get("error"):
                raise _stream_error(chunk["error"])
            if chunk.get("usage"):
                usage = chunk["usage"]
            for choice in chunk.get("choices") or []:
                if choice.get("index", 0) != 0:
                    continue
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    text.append(delta["content"])
                    on_text(delta["content"])
                for k, piece in enumerate(delta.get("tool_calls") or []):
                    _merge_call(slots.setdefault(piece.get("index", k), {}), piece)
                finish = choice.get("finish_reason") or finish
        if not stream.ended and finish is None:
            raise BadResponse("the stream ended before the response was complete")
        raw_calls = [_joined_call(s) for _, s in sorted(slots.items())]
        calls = tuple(parse_tool_call(k, c) for k, c in enumerate(raw_calls))
        return _response("".join(text) or None, calls, finish, {"usage": usage}, request, stream.wire)


def _stream_error(err: Any) -> BadResponse:
    """An error chunk in the middle of a stream."""
    message = err.get("message", json.dumps(err)) if isinstance(err, dict) else str(err)
    kind = (err.get("type") or err.get("code")) if isinstance(err, dict) else None
    return BadResponse(f"error in the stream: {message}", type=kind)


def _merge_call(slot: dict[str, Any], piece: dict[str, Any]) -> None:
    """Fold one streamed tool-call fragment into its slot (fragments of one call share an index).

    The name and the arguments are kept as pieces and joined once (`_joined_call`): adding each
    fragment to the text so far copies all of it every time.
    """
    if piece.get("id"):
        slot["id"] = piece["id"]
    fn = piece.get("function") or {}
    name, names = fn.get("name"), slot.setdefault("name", [])
    # the first fragment names the call; servers that repeat the name must not double it
    if name and not (len(name) == slot.get("name_length", 0) and "".join(names) == name):
        names.append(name)
        slot["name_length"] = slot.get("name_length", 0) + len(name)
    if fn.get("arguments"):
        slot.setdefault("arguments", []).append(fn["arguments"])


def _joined_call(slot: dict[str, Any]) -> dict[str, Any]:
    """A streamed call's slot as the tool call Chat Completions would have sent whole."""
    name = "".join(slot.get("name", []))
    return {"id": slot.get("id"), "function": {"name": name or None, "arguments": "".join(slot.get("arguments", []))}}

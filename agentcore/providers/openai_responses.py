"""OpenAI Responses API: typed input and output items, flat function tools, named SSE events.

Stateless: every request sends `store: false` and the whole conversation, and asks for
`include: ["reasoning.encrypted_content"]`, so each reasoning item comes back with its encrypted
content and goes back, unchanged, before the message or function calls that followed it.
`Settings.reasoning_effort` sets `reasoning.effort`; either reasoning setting asks for summaries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, assert_never

from ..messages import (
    MAX_ARGUMENT_DEPTH,
    AssistantMessage,
    Message,
    OutputItem,
    ReasoningPart,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    as_count,
    nesting,
    parse_arguments,
)
from ..tools import ToolSpec
from ._http import BadResponse, EventStream, HttpProvider
from ._limits import snippet
from .base import ModelRequest, ModelResponse, TextSink, WireExchange

PROVIDER = "openai-responses"
INCLUDE = ["reasoning.encrypted_content"]
# codes of a failed response or an error event that a later attempt may not meet
RETRYABLE_CODES = frozenset({"server_error", "rate_limit_exceeded", "server_is_overloaded"})


def build_body(model: str, request: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
    """The request body: system text as `instructions`, the conversation as input items, nothing stored."""
    system = [m.content for m in request.messages if isinstance(m, SystemMessage)]
    body: dict[str, Any] = {"model": model}
    if system:
        body["instructions"] = "\n\n".join(system)
    body["input"] = messages_to_wire(request.messages)
    body["store"] = False
    body["include"] = list(INCLUDE)
    s = request.settings
    if request.tools:
        body["tools"] = [tool_to_wire(t) for t in request.tools]
        if request.tool_choice == "none":
            body["tool_choice"] = "none"
        if s.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = s.parallel_tool_calls
    if s.reasoning_effort is not None or s.thinking_budget is not None:
        reasoning: dict[str, Any] = {"summary": "auto"}
        if s.reasoning_effort is not None:
            reasoning = {"effort": s.reasoning_effort, **reasoning}
        body["reasoning"] = reasoning
    if s.temperature is not None:
        body["temperature"] = s.temperature
    if s.max_tokens is not None:
        body["max_output_tokens"] = s.max_tokens
    if stream:
        body["stream"] = True
    return body


def messages_to_wire(messages: tuple[Message, ...] | list[Message]) -> list[dict[str, Any]]:
    """Typed messages as input items; an assistant turn is its own reasoning items, its text, then its calls."""
    items: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            continue  # sent as `instructions`
        if isinstance(m, UserMessage):
            items.append({"role": "user", "content": m.content})
        elif isinstance(m, AssistantMessage):
            items.extend(assistant_to_wire(m))
        elif isinstance(m, ToolMessage):
            items.append({"type": "function_call_output", "call_id": m.tool_call_id, "output": m.content})
        else:
            assert_never(m)
    return items


def assistant_to_wire(m: AssistantMessage) -> list[dict[str, Any]]:
    """An assistant turn as the items this API made, in its order, with their ids and phases.

    The model's own order matters: a reasoning item is refused without the item that followed it
    (langchainjs #9072, continuedev/continue #8933), and newer models link a function call to the
    reasoning before it. Message items go back with their id and `phase` ("preserve and resend phase on
    all assistant messages", the spec's MessagePhase). A turn this API did not make, or whose text or
    calls were edited since, goes back as its reasoning, its text, then its calls.
    """
    reasoning = list(m.reasoning_for(PROVIDER))  # only this API's reasoning goes back; another's is shown, not sent
    order = m.items_for(PROVIDER)
    messages = [i for i in order if i.kind == "message"]
    if (
        not order
        or sum(i.kind == "reasoning" for i in order) != len(reasoning)
        or sum(i.kind == "function_call" for i in order) != len(m.tool_calls)
        or "".join(i.text for i in messages) != (m.content or "")
    ):
        text = [{"role": "assistant", "content": m.content}] if m.content else []
        return [*map(reasoning_to_wire, reasoning), *text, *map(call_to_wire, m.tool_calls)]
    parts, calls = iter(reasoning), iter(m.tool_calls)
    out: list[dict[str, Any]] = []
    for item in order:
        if item.kind == "reasoning":
            out.append(reasoning_to_wire(next(parts)))
        elif item.kind == "function_call":
            out.append(call_to_wire(next(calls)))
        else:
            out.append(message_to_wire(item))
    return out


def message_to_wire(item: OutputItem) -> dict[str, Any]:
    """A message item as the model made it: its id, its content parts as it sent them (or, once its text was
    changed, that text as one output_text part), its phase."""
    content: list[dict[str, Any]] = [{"type": "output_text", "text": item.text, "annotations": []}]
    if (
        item.parts
        and "".join(_part_texts(list(item.parts), ("output_text", "refusal"), "text", "refusal")) == item.text
    ):
        content = [dict(part) for part in item.parts]  # every field the model sent, logprobs included
    if item.id is None:  # an item without an id goes back as a plain assistant message
        out: dict[str, Any] = {"role": "assistant", "content": item.text}
    else:
        out = {"type": "message", "id": item.id, "role": "assistant", "status": "completed", "content": content}
    if item.phase is not None:
        out["phase"] = item.phase
    return out


def reasoning_to_wire(part: ReasoningPart) -> dict[str, Any]:
    """A reasoning item as it came: its id, summary parts, any reasoning text, and the encrypted content."""
    item: dict[str, Any] = {"type": "reasoning"}
    if part.id is not None:
        item["id"] = part.id
    item["summary"] = [{"type": "summary_text", "text": t} for t in part.summary]
    if part.text:
        item["content"] = [{"type": "reasoning_text", "text": part.text}]
    if part.encrypted_content is not None:
        item["encrypted_content"] = part.encrypted_content
    return item


def call_to_wire(call: ToolCall) -> dict[str, Any]:
    """A function_call item echoed back with its `fc_…` id, and the arguments as the model wrote them.

    The item id pairs the call with the reasoning item before it (langchainjs #9082: a replay without
    it was refused); the arguments go back byte for byte (ToolCall.arguments_text).
    """
    item: dict[str, Any] = {"type": "function_call"}
    if call.item_id is not None:
        item["id"] = call.item_id
    item.update(call_id=call.id, name=call.name, arguments=call.arguments_text)
    return item


def tool_to_wire(spec: ToolSpec) -> dict[str, Any]:
    """A flat function tool; `strict` off, since the server's default would demand a closed schema."""
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.parameters,
        "strict": False,
    }


def parse_usage(data: Any) -> Usage:
    """Usage from a response's `usage`: cached tokens within the input, reasoning tokens within the output."""
    if not isinstance(data, dict):
        return Usage()
    inp = data.get("input_tokens_details")
    inp = inp if isinstance(inp, dict) else {}
    out = data.get("output_tokens_details")
    out = out if isinstance(out, dict) else {}
    return Usage(
        input_tokens=as_count(data.get("input_tokens")),
        output_tokens=as_count(data.get("output_tokens")),
        cache_read_tokens=as_count(inp.get("cached_tokens")),
        cache_write_tokens=as_count(inp.get("cache_write_tokens")),
        reasoning_tokens=as_count(out.get("reasoning_tokens")),
    )


def parse_items(items: list[Any]) -> AssistantMessage:
    """Output items as an AssistantMessage; a function_call without call_id or name is a BadResponse."""
    text: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[ReasoningPart] = []
    order: list[OutputItem] = []  # the items in the model's order, to go back in it
    for k, item in enumerate(items):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            texts = _part_texts(item.get("content"), ("output_text", "refusal"), "text", "refusal")
            text.extend(texts)
            item_id, phase, content = item.get("id"), item.get("phase"), item.get("content")
            parts = [p for p in content if isinstance(p, dict)] if isinstance(content, list) else []
            if any(nesting(p, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH for p in parts):
                parts = []  # a part nested past every reader's limit is not kept: the text goes back alone
            order.append(
                OutputItem(
                    provider=PROVIDER,
                    kind="message",
                    id=item_id if isinstance(item_id, str) else None,
                    phase=phase if isinstance(phase, str) else None,
                    text="".join(texts),
                    parts=tuple(parts),
                )
            )
        elif kind == "function_call":
            call_id, name = item.get("call_id"), item.get("name")
            if not call_id or not isinstance(call_id, str):
                raise BadResponse(f"output item {k} (function_call {name or 'unnamed'}) has no call_id")
            if not name or not isinstance(name, str):
                raise BadResponse(f"output item {k} (function_call {call_id}) has no name")
            arguments, item_id = item.get("arguments"), item.get("id")
            call = parse_arguments(call_id, name, arguments if isinstance(arguments, str) else None)
            if isinstance(item_id, str):
                call = call.model_copy(update={"item_id": item_id})
            calls.append(call)
            order.append(OutputItem(provider=PROVIDER, kind="function_call"))
        elif kind == "reasoning":
            reasoning.append(parse_reasoning(item))
            order.append(OutputItem(provider=PROVIDER, kind="reasoning"))
    content = "".join(text)
    return AssistantMessage(
        content=content or (None if calls else ""),
        tool_calls=tuple(calls),
        reasoning=tuple(reasoning),
        items=tuple(order),
    )


def parse_reasoning(item: dict[str, Any]) -> ReasoningPart:
    """A reasoning item as a ReasoningPart; its id and encrypted content are kept exactly."""
    item_id, encrypted = item.get("id"), item.get("encrypted_content")
    return ReasoningPart(
        provider=PROVIDER,
        text="".join(_part_texts(item.get("content"), ("reasoning_text",), "text")),
        summary=tuple(_part_texts(item.get("summary"), ("summary_text",), "text")),
        id=item_id if isinstance(item_id, str) else None,
        encrypted_content=encrypted if isinstance(encrypted, str) else None,
    )


def _part_texts(parts: Any, kinds: tuple[str, ...], *keys: str) -> list[str]:
    # the text of each part of the given kinds; a part that is not an object with string text is skipped
    found: list[str] = []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, dict) and part.get("type") in kinds:
            found.extend(part[k] for k in keys if isinstance(part.get(k), str))
    return found


def parse_response(data: Any, wire: WireExchange) -> ModelResponse:
    """A response object as a ModelResponse; a failed or malformed one is a BadResponse."""
    if not isinstance(data, dict) or not isinstance(data.get("output"), list):
        raise BadResponse("the response is not a response object with an output list")
    if data.get("status") == "failed":
        raise _failure(data.get("error"))
    message = parse_items(data["output"])
    return ModelResponse(
        message=message, usage=parse_usage(data.get("usage")), finish_reason=_finish(data, message), wire=wire
    )


def _finish(data: dict[str, Any], message: AssistantMessage) -> str:
    # there is no finish_reason: calls make a tool turn, an incomplete status says why it stopped
    if data.get("status") == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return "length" if reason in (None, "max_output_tokens") else str(reason)
    return "tool_calls" if message.tool_calls else "stop"


def _failure(error: Any, prefix: str = "") -> BadResponse:
    err = error if isinstance(error, dict) else {}
    code = err.get("code") if isinstance(err.get("code"), str) else None
    message = snippet(err.get("message") or "the response failed with no reason given")
    return BadResponse(f"{prefix}{message}", type=code, retryable=code in RETRYABLE_CODES)


class OpenAIResponsesProvider(HttpProvider):
    """The Responses API over httpx, stateless; any server that speaks it with a base URL."""

    name: ClassVar[str] = PROVIDER

    @property
    def url(self) -> str:
        """The responses endpoint under the base URL (which ends in /v1 for OpenAI)."""
        return f"{self.base_url}/responses"

    def body(self, request: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
        """The request body this provider sends."""
        return build_body(self.model, request, stream=stream)

    def parse_response(self, data: Any, request: ModelRequest, wire: WireExchange) -> ModelResponse:
        """A whole response object as a ModelResponse."""
        return parse_response(data, wire)

    def read_stream(self, stream: EventStream, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """Named SSE events up to response.completed (or .incomplete); an error or failed event is a BadResponse."""
        folded = _ResponseStream(on_text)
        for event in stream.sse():
            fields = event.data if isinstance(event.data, dict) else {}
            kind = fields.get("type") or event.name
            if kind == "error":
                raise _failure(fields, "error in the stream: ")
            if kind == "response.failed":
                response = fields.get("response")
                raise _failure(response.get("error") if isinstance(response, dict) else None)
            if folded.add(kind, fields):
                break
        if folded.final is None:
            raise BadResponse("the stream ended before response.completed")
        message = parse_items(folded.items())
        return ModelResponse(
            message=message,
            usage=parse_usage(folded.final.get("usage")),
            finish_reason=_finish(folded.final, message),
            wire=stream.wire,
        )


@dataclass
class _ResponseStream:
    """A streamed response as its events arrive: finished output items by index, and the final response."""

    on_text: TextSink
    done: dict[int, Any] = field(default_factory=dict)
    final: dict[str, Any] | None = None

    def add(self, kind: str | None, event: dict[str, Any]) -> bool:
        """Fold one event in; True once the response is complete or incomplete."""
        if kind == "response.output_text.delta":
            delta = event.get("delta")
            if isinstance(delta, str) and delta:
                self.on_text(delta)
        elif kind == "response.output_item.done":
            # the finished item: an `added` event's encrypted content may still be incomplete
            index = event.get("output_index")
            self.done[index if isinstance(index, int) else len(self.done)] = event.get("item")
        elif kind in ("response.completed", "response.incomplete"):
            response = event.get("response")
            self.final = response if isinstance(response, dict) else {}
            return True
        return False

    def items(self) -> list[Any]:
        """The output items in order: the finished ones seen, else the final response's own list."""
        if self.done:
            return [self.done[i] for i in sorted(self.done)]
        output = (self.final or {}).get("output")
        return output if isinstance(output, list) else []

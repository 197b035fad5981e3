"""The four wire dialects the proxy speaks: which paths are each's, how a request reads as a conversation, how a
reply (whole or streamed) reads as the model's turn, and how an error is worded so the client's SDK reads it.

Nothing here is a second mapping of a wire format: a reply is read by the provider modules' own parsers
(`parse_completion`, `parse_response`, `parse_message`, `parse_chat` and each provider's `read_stream`), and a
request's messages by the importers' reader of message lists (`importers.from_messages`), the Responses API's
input items and Ollama's messages first written as the Chat Completions list it reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import TranscriptError, UsageError
from ..importers import from_messages, tool_specs_from
from ..messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from ..providers import anthropic, ollama, openai, openai_responses
from ..providers._http import BadResponse, EventStream
from ..providers._limits import split_lines
from ..providers.base import ModelRequest, ModelResponse, WireExchange
from ..run import Run
from ..sessions.builder import text_of
from ..tools import ToolSpec

STREAM_TYPES = ("text/event-stream", "application/x-ndjson")


@dataclass(frozen=True)
class Dialect:
    """One wire format: its name (an agentcore provider's), the paths a client posts it to, its error's shape."""

    name: str
    paths: tuple[str, ...]

    def error(self, status: int, message: str) -> bytes:
        """An error body of this dialect's kind, so the client's SDK raises its own error with `message`."""
        kind = _ERROR_KINDS.get(status, "api_error")
        if self.name == "anthropic":
            body: Any = {"type": "error", "error": {"type": kind, "message": message}}
        elif self.name == "ollama":
            body = {"error": message}
        else:
            body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
        return json.dumps(body).encode()


_ERROR_KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    502: "api_error",
    504: "timeout_error",
}

DIALECTS = (
    Dialect("openai", ("/v1/chat/completions", "/chat/completions")),
    Dialect("openai-responses", ("/v1/responses", "/responses")),
    Dialect("anthropic", ("/v1/messages",)),
    Dialect("ollama", ("/api/chat",)),
)
PASS_THROUGH = Dialect("openai", ())  # any other path: forwarded, its errors in the OpenAI kind, no step recorded


def dialect_named(name: str) -> Dialect:
    """The dialect of this name; a UsageError for a name none has."""
    for dialect in DIALECTS:
        if dialect.name == name:
            return dialect
    raise UsageError(f"no dialect {str(name)[:40]!r}")


def dialect_of(path: str, upstream: str) -> tuple[Dialect, bool]:
    """The dialect of a request to `path` (its query cut off) and whether its call is a step of a run.

    A path no dialect owns is forwarded unrecorded (a model list, Anthropic's token count), its errors worded as
    the upstream's own: Anthropic's for an Anthropic upstream, Ollama's for Ollama's, else OpenAI's.
    """
    for dialect in DIALECTS:
        if path in dialect.paths:
            return dialect, True
    for dialect in DIALECTS:
        if dialect.name == upstream:
            return dialect, False
    return PASS_THROUGH, False


@dataclass
class Conversation:
    """A request read as a conversation: its messages (system first), the tools it offers, the model it names."""

    messages: list[Message]
    tools: list[ToolSpec]
    model: str
    previous_response_id: str | None = None
    unread: str | None = None  # why the messages could not be read, when they could not

    def request(self) -> ModelRequest:
        """The messages as a ModelRequest, for the parsers that estimate usage a reply lacks."""
        return ModelRequest(messages=tuple(self.messages))


def read_request(dialect: Dialect, body: dict[str, Any]) -> Conversation:
    """The conversation a request body holds; a body whose messages do not read is kept with the reason."""
    model = body.get("model") if isinstance(body.get("model"), str) else ""
    previous = body.get("previous_response_id")
    previous = previous if isinstance(previous, str) else None
    try:
        if dialect.name == "openai-responses":
            chat = {"messages": _responses_as_chat(body), "tools": _responses_tools(body.get("tools"))}
        elif dialect.name == "ollama":
            chat = {"messages": _ollama_as_chat(body.get("messages")), "tools": body.get("tools")}
        else:
            chat = {**body, "messages": _text_parts(body.get("messages"))}
        if previous is not None:  # the items go on from a stored response: its calls are not among them
            return Conversation(_going_on(chat["messages"]), tool_specs_from(chat.get("tools")), model, previous)
        run: Run = from_messages(chat)
        return Conversation(list(run.messages), list(run.config.tools), model, previous)
    except (TranscriptError, ValueError, TypeError, AttributeError) as exc:
        why = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        note = UserMessage(content=f"(the proxy could not read this request's messages: {why})")
        return Conversation([note], [], model, previous, unread=why)


# the blocks the message-list reader takes as they are; any other part (an image, a document, a server tool's
# block) is kept as a text line naming it, so a request with one still reads as its conversation
READ_BLOCKS = frozenset({"text", "tool_use", "tool_result", "thinking", "redacted_thinking"})


def _text_parts(messages: Any) -> Any:
    """The messages with every content part the reader does not take written as a text part that names it."""
    if not isinstance(messages, list):
        return messages
    out = []
    for m in messages:
        if isinstance(m, dict) and isinstance(m.get("content"), list):
            parts = []
            for part in m["content"]:
                if isinstance(part, dict) and part.get("type") in READ_BLOCKS:
                    if part.get("type") == "tool_result" and isinstance(part.get("content"), list):
                        part = {**part, "content": text_of(part["content"])}
                    parts.append(part)
                else:
                    parts.append({"type": "text", "text": text_of([part])})
            m = {**m, "content": parts}
        out.append(m)
    return out


def _text(content: Any) -> Any:
    if isinstance(content, list):  # Responses parts: input_text, output_text, refusal
        return "\n".join(
            str(p.get("text") or p.get("refusal") or "") for p in content if isinstance(p, dict) and "type" in p
        )
    return content


def _responses_as_chat(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The Responses API's instructions and input items as a Chat Completions message list."""
    out: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        out.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        return [*out, {"role": "user", "content": items}]
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            raise TranscriptError("an input item is a JSON object")
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "message":
            out.append({"role": item.get("role"), "content": _text(item.get("content"))})
        elif kind == "function_call":
            call = {
                "id": item.get("call_id"),
                "function": {"name": item.get("name"), "arguments": item.get("arguments")},
            }
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            out.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": _text(output)})
        # reasoning and other items: the model's own state, not part of the message list
    return out


def _going_on(chat: list[dict[str, Any]]) -> list[Message]:
    """The messages of a Responses request that goes on from an earlier response: results of calls that response
    made (matched to them by the recorder), the user's words and instructions; nothing else is read."""
    out: list[Message] = []
    for m in chat:
        text = m.get("content") if isinstance(m.get("content"), str) else ""
        if m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str):
            out.append(
                ToolMessage(tool_call_id=m["tool_call_id"], name="(a call of the earlier response)", content=text)
            )
        elif m.get("role") in ("system", "developer") and text:
            out.append(SystemMessage(content=text))
        elif m.get("role") == "user" and text:
            out.append(UserMessage(content=text))
    return out


def _responses_tools(tools: Any) -> list[dict[str, Any]]:
    return [t for t in tools if isinstance(t, dict) and t.get("type") == "function"] if isinstance(tools, list) else []


def _ollama_as_chat(messages: Any) -> list[dict[str, Any]]:
    """Ollama's messages as Chat Completions': each call given an id, each tool result the id of its call."""
    if not isinstance(messages, list):
        raise TranscriptError("messages: expected a list")
    out: list[dict[str, Any]] = []
    open_calls: list[tuple[str, str]] = []  # (id, name) of calls not answered yet, in order
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise TranscriptError(f"messages[{i}]: a message is a JSON object")
        if m.get("role") == "assistant" and m.get("tool_calls"):
            calls = []
            for k, c in enumerate(m["tool_calls"]):
                fn = c.get("function") if isinstance(c, dict) else None
                name = fn.get("name") if isinstance(fn, dict) else None
                call_id = c.get("id") or f"call_{i}_{k}"
                calls.append({"id": call_id, "function": {"name": name, "arguments": (fn or {}).get("arguments")}})
                open_calls.append((call_id, str(name)))
            out.append({"role": "assistant", "content": m.get("content") or None, "tool_calls": calls})
        elif m.get("role") == "tool":
            wanted = m.get("tool_call_id")
            name = m.get("tool_name") or m.get("name")
            match = next((c for c in open_calls if c[0] == wanted), None) or next(
                (c for c in open_calls if c[1] == name), open_calls[0] if open_calls else (wanted or "", name)
            )
            if match in open_calls:
                open_calls.remove(match)
            out.append({"role": "tool", "tool_call_id": match[0], "name": match[1], "content": m.get("content")})
        else:
            out.append({"role": m.get("role"), "content": m.get("content")})
    return out


class _Replayed:
    """A finished stream's bytes as the reader an EventStream reads, so a provider's read_stream parses them."""

    def __init__(self, raw: bytes, wire: WireExchange) -> None:
        self.raw, self.wire = raw, wire

    def lines(self) -> Iterator[str]:
        return split_lines(iter([self.raw]))

    def event(self, text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            return text


_STREAM_READERS = {
    "openai": openai.OpenAIProvider,
    "openai-responses": openai_responses.OpenAIResponsesProvider,
    "anthropic": anthropic.AnthropicProvider,
    "ollama": ollama.OllamaProvider,
}


def read_reply(dialect: Dialect, raw: bytes, streamed: bool, conversation: Conversation) -> ModelResponse:
    """The model's turn in a successful reply's bytes, read by the provider module of its dialect; a reply that
    does not read is a BadResponse. The response's wire holds the JSON body or the list of streamed events."""
    wire = WireExchange()
    request = conversation.request()
    if streamed:
        reader = _STREAM_READERS[dialect.name]
        # read_stream uses nothing of the provider but its wire format: no client, no key, no address
        provider = reader.__new__(reader)
        return provider.read_stream(EventStream(_Replayed(raw, wire)), request, lambda _text: None)  # type: ignore[arg-type]
    try:
        data = json.loads(raw)
    except ValueError:
        raise BadResponse("the reply is not JSON") from None
    wire.response = data
    if dialect.name == "openai":
        return openai.parse_completion(data, request, wire)
    if dialect.name == "openai-responses":
        return openai_responses.parse_response(data, wire)
    if dialect.name == "anthropic":
        return anthropic.parse_message(data, wire)
    return ollama.parse_chat(data, wire)


def response_id(dialect: Dialect, events_or_body: Any) -> str | None:
    """A Responses reply's id (what a later request names as previous_response_id), whole or streamed."""
    if dialect.name != "openai-responses":
        return None
    found = events_or_body if isinstance(events_or_body, list) else [events_or_body]
    for item in found:
        if isinstance(item, dict):
            inner = item.get("response") if isinstance(item.get("response"), dict) else item
            if isinstance(inner.get("id"), str):
                return inner["id"]
    return None


def key_of(message: Message) -> tuple[Any, ...]:
    """What a message says, the same whether the reply or the client's next request wrote it: its role, its text
    and each call's name and arguments (not ids: Ollama's are made up on each side)."""
    if isinstance(message, AssistantMessage):
        calls = tuple((c.name, json.dumps(c.arguments, sort_keys=True)) for c in message.tool_calls)
        return ("assistant", (message.content or "").strip(), calls)
    return (message.role, str(getattr(message, "content", "")).strip())

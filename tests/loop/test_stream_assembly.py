"""Streamed replies of many small deltas: text, thinking, tool input and tool arguments come out exact, and long
streams take time in proportion to their length (each delta is not added to a copy of all before it)."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from agentcore.messages import UserMessage
from agentcore.providers.anthropic import AnthropicProvider
from agentcore.providers.base import ModelRequest
from agentcore.providers.openai import OpenAIProvider
from agentcore.tools import ToolSpec

TOOL = ToolSpec(name="get_weather", description="Weather", parameters={"type": "object", "properties": {}})
REQUEST = ModelRequest(messages=(UserMessage(content="hi"),), tools=(TOOL,))


def served(cls: type, model: str, body: str, events: int) -> Any:
    """A provider whose server streams `body`, with room for `events` events."""
    raw = body.encode()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=raw, headers={"content-type": "text/event-stream"})

    return cls(
        model,
        api_key="sk-test-stream-000000000000",
        transport=httpx.MockTransport(handler),
        max_stream_events=events + 100,
        max_stream_bytes=len(raw) + 1,
    )


def anthropic_stream(blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]]) -> str:
    """Messages API events: each block's start and its deltas, then the message's end."""

    def event(data: dict[str, Any]) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"

    out = [event({"type": "message_start", "message": {"usage": {"input_tokens": 3}}})]
    for index, (start, deltas) in enumerate(blocks):
        out.append(event({"type": "content_block_start", "index": index, "content_block": start}))
        out += [event({"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
        out.append(event({"type": "content_block_stop", "index": index}))
    out.append(event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}))
    out.append(event({"type": "message_stop"}))
    return "".join(out)


def chat_stream(chunks: list[dict[str, Any]]) -> str:
    """Chat Completions chunks, then [DONE]."""
    done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    return "".join(f"data: {json.dumps(c)}\n\n" for c in [*chunks, done]) + "data: [DONE]\n\n"


def call_piece(**function: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "function": function}]}}]}


def test_anthropic_text_thinking_and_tool_input_are_joined_from_their_deltas():
    texts = ["Chec", "king ", "", "the ", "wéather 🌧"]
    thoughts = ["Paris ", "first", "."]
    inputs = ['{"ci', 'ty": "Par', 'is"}']
    thinking = [{"type": "thinking_delta", "thinking": t} for t in thoughts]
    body = anthropic_stream(
        [
            ({"type": "thinking", "thinking": "Hmm. "}, [*thinking, {"type": "signature_delta", "signature": "s"}]),
            ({"type": "text", "text": "» "}, [{"type": "text_delta", "text": t} for t in texts]),
            (
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
                [{"type": "input_json_delta", "partial_json": p} for p in inputs],
            ),
        ]
    )
    seen: list[str] = []
    result = served(AnthropicProvider, "claude-3-5-haiku-latest", body, 20).complete(REQUEST, on_text=seen.append)
    message = result.message
    assert message.content == "» " + "".join(texts)
    assert "".join(seen) == "".join(texts)  # passed on as they came (a tail that may start a key held back)
    (part,) = message.reasoning
    assert (part.text, part.signature) == ("Hmm. Paris first.", "s")
    assert message.tool_calls[0].arguments == {"city": "Paris"}


def test_a_chat_completions_call_is_joined_from_its_fragments_and_a_repeated_name_is_not_doubled():
    chunks = [call_piece(name="get_", arguments='{"ci'), call_piece(name="weather", arguments='ty": ')]
    chunks += [call_piece(name="get_weather", arguments='"Par'), call_piece(name="get_weather", arguments='is"}')]
    result = served(OpenAIProvider, "gpt-4o-mini", chat_stream(chunks), 10).complete(REQUEST, on_text=lambda t: None)
    (call,) = result.message.tool_calls
    assert (call.id, call.name, call.arguments) == ("c1", "get_weather", {"city": "Paris"})


DELTAS = 100_000  # of 100 characters: 10 MB, which took minutes when each delta copied all before it
PIECE = "x" * 99 + "é"


def long_stream(kind: str) -> tuple[type, str, str]:
    if kind == "chat tool arguments":
        chunks = [call_piece(name="get_weather", arguments='{"q": "')]
        chunks += [call_piece(arguments=PIECE)] * DELTAS + [call_piece(arguments='"}')]
        return OpenAIProvider, "gpt-4o-mini", chat_stream(chunks)
    if kind == "anthropic tool input":
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in ['{"q": "', *[PIECE] * DELTAS, '"}']]
        start = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
        return AnthropicProvider, "claude-3-5-haiku-latest", anthropic_stream([(start, deltas)])
    field = "text" if kind == "anthropic text" else "thinking"
    deltas = [{"type": f"{field}_delta", field: PIECE}] * DELTAS
    return AnthropicProvider, "claude-3-5-haiku-latest", anthropic_stream([({"type": field, field: ""}, deltas)])


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind", ["anthropic text", "anthropic thinking", "anthropic tool input", "chat tool arguments"]
)
def test_a_long_stream_of_small_deltas_is_read_in_time_proportional_to_its_length(kind):
    cls, model, body = long_stream(kind)
    started = time.monotonic()
    message = served(cls, model, body, DELTAS + 10).complete(REQUEST, on_text=lambda t: None).message
    elapsed = time.monotonic() - started
    if kind.endswith(("input", "arguments")):
        kept = message.tool_calls[0].arguments["q"]
    else:
        kept = message.content if kind == "anthropic text" else message.reasoning[0].text
    assert kept == PIECE * DELTAS
    assert elapsed < 90, f"{elapsed:.0f} s for {DELTAS} deltas"  # a hang guard: linear takes a few seconds

"""The Messages API adapter: request mapping, response parsing, streaming, bad inputs, pre-flight rules."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from agentcore.errors import ProviderError, UsageError
from agentcore.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from agentcore.providers.anthropic import AnthropicProvider
from agentcore.providers.base import ModelRequest, Settings
from agentcore.tools import ToolSpec

WIRE = Path(__file__).parents[1] / "fixtures" / "wire"
WEATHER = ToolSpec(name="get_weather", description="Weather", parameters={"type": "object", "properties": {}})


def fixture(name: str) -> str:
    return (WIRE / name).read_text(encoding="utf-8")


def provider(*responses: tuple[int, str, str], **kwargs) -> AnthropicProvider:
    """A provider whose server answers with each (status, body, content type) in turn."""
    queue = list(responses)
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        status, body, ctype = queue.pop(0) if len(queue) > 1 else queue[0]
        return httpx.Response(status, content=body.encode(), headers={"content-type": ctype})

    p = AnthropicProvider(
        "claude-3-5-haiku-latest",
        api_key="sk-ant-test-PLANTED",
        transport=httpx.MockTransport(handler),
        retry_base=0.001,
        retry_cap=0.002,
        **kwargs,
    )
    p.seen = seen  # type: ignore[attr-defined]
    return p


def conversation() -> ModelRequest:
    return ModelRequest(
        messages=(
            SystemMessage(content="Be brief."),
            UserMessage(content="Weather in Paris and Rome?"),
            AssistantMessage(
                content="Checking.",
                tool_calls=(
                    ToolCall(id="t1", name="get_weather", arguments={"city": "Paris"}),
                    ToolCall(id="t2", name="get_weather", arguments={"city": "Rome"}),
                ),
            ),
            ToolMessage(tool_call_id="t1", name="get_weather", content="21 C"),
            ToolMessage(tool_call_id="t2", name="get_weather", content="Error: no data", is_error=True),
            UserMessage(content="And tomorrow?"),
        ),
        tools=(WEATHER,),
        settings=Settings(parallel_tool_calls=False),
    )


OK = (200, fixture("anthropic_tool_use.json"), "application/json")


def test_request_puts_system_on_top_and_merges_tool_results_first():
    p = provider(OK)
    p.complete(conversation())
    request = p.seen[0]
    body = json.loads(request.content)
    assert body["system"] == "Be brief." and body["max_tokens"] == 1024
    assert [t["role"] for t in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"][1] == {
        "type": "tool_use",
        "id": "t1",
        "name": "get_weather",
        "input": {"city": "Paris"},
    }
    merged = body["messages"][2]["content"]
    assert [b["type"] for b in merged] == ["tool_result", "tool_result", "text"]
    assert "is_error" not in merged[0] and merged[1]["is_error"] is True
    assert body["tools"][0]["input_schema"] == {"type": "object", "properties": {}}
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["x-api-key"] == "sk-ant-test-PLANTED"
    assert str(request.url) == "https://api.anthropic.com/v1/messages"


def test_response_tool_use_blocks_and_cache_usage():
    result = provider(OK).complete(conversation())
    assert result.message.content == "I'll check both cities."
    assert [c.id for c in result.message.tool_calls] == ["toolu_fx_paris", "toolu_fx_rome"]
    usage = result.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (1320, 1000, 300)
    assert usage.output_tokens == 75 and result.finish_reason == "tool_calls"
    assert result.wire.request_headers["x-api-key"] == "[redacted]"
    assert "sk-ant-test-PLANTED" not in result.wire.model_dump_json() and "PLANTED" not in repr(provider(OK))


def test_stream_assembles_input_json_and_takes_the_last_cumulative_usage():
    deltas: list[str] = []
    p = provider((200, fixture("anthropic_stream_tool_use.sse"), "text/event-stream"))
    result = p.complete(conversation(), on_text=deltas.append)
    assert json.loads(p.seen[0].content)["stream"] is True
    assert deltas == ["Checking ", "the weather."]
    (call,) = result.message.tool_calls
    assert call.id == "toolu_fx_stream" and call.arguments == {"city": "Paris", "unit": "celsius"}
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.cache_read_tokens) == (510, 57, 100)
    assert result.finish_reason == "tool_calls"


def test_stream_with_invalid_input_json_keeps_the_raw_text():
    sse = fixture("anthropic_stream_tool_use.sse").replace('is\\", \\"unit\\": \\"celsius\\"}', "is")
    result = provider((200, sse, "text/event-stream")).complete(conversation(), on_text=lambda t: None)
    assert result.message.tool_calls[0].raw_arguments == '{"city": "Paris'


def test_mid_stream_error_event_is_a_clear_provider_error():
    p = provider((200, fixture("anthropic_stream_error.sse"), "text/event-stream"))
    with pytest.raises(ProviderError) as caught:
        p.complete(conversation(), on_text=lambda t: None)
    assert str(caught.value) == "anthropic 200 overloaded_error: error in the stream: Overloaded"
    assert caught.value.wire.response[-1]["type"] == "error"


def test_stream_cut_off_before_message_stop():
    sse = fixture("anthropic_stream_tool_use.sse").split("event: message_delta")[0]
    with pytest.raises(ProviderError, match="ended before message_stop"):
        provider((200, sse, "text/event-stream")).complete(conversation(), on_text=lambda t: None)


def test_overloaded_529_is_retried_then_succeeds():
    overloaded = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    p = provider((529, overloaded, "application/json"), OK)
    result = p.complete(conversation())
    assert len(p.seen) == 2 and p.http.last_attempts == 2 and result.message.tool_calls


def test_error_body_gives_type_message_and_request_id():
    body = json.dumps(
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "messages.0: unexpected `tool_use_id`"},
            "request_id": "req_011fixture",
        }
    )
    with pytest.raises(ProviderError) as caught:
        provider((400, body, "application/json")).complete(conversation())
    err = caught.value
    assert (err.status, err.type, err.request_id, err.attempts) == (400, "invalid_request_error", "req_011fixture", 1)
    assert str(err) == (
        "anthropic 400 invalid_request_error: messages.0: unexpected `tool_use_id` (request id req_011fixture)"
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ([{"type": "tool_use", "name": "get_weather", "input": {}}], "has no id"),
        ([{"type": "tool_use", "id": "toolu_1", "input": {}}], "has no name"),
        ("just text", "not a message with a content list"),
    ],
)
def test_malformed_message_is_a_provider_error(content, expected):
    body = json.dumps({"type": "message", "content": content, "usage": {}})
    with pytest.raises(ProviderError, match=expected):
        provider((200, body, "application/json")).complete(conversation())


def test_preflight_checks_first_turn_and_alternation():
    p = provider(OK)
    starts_with_assistant = ModelRequest(messages=(SystemMessage(content="s"), AssistantMessage(content="hello")))
    assert any(v.index == 1 and "first message" in v.reason for v in p.preflight(starts_with_assistant))
    two_assistants = ModelRequest(
        messages=(UserMessage(content="hi"), AssistantMessage(content="a"), AssistantMessage(content="b"))
    )
    assert [v.index for v in p.preflight(two_assistants)] == [2]
    assert p.preflight(conversation()) == []


def test_missing_key_for_the_official_api_is_a_usage_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with pytest.raises(UsageError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider("claude-3-5-haiku-latest")


def test_katan_speaks_the_messages_api_streamed_or_not(katan):
    p = AnthropicProvider("echo", base_url=katan.url, api_key="katan-key")
    request = ModelRequest(messages=(SystemMessage(content="s"), UserMessage(content="Weather?")), tools=(WEATHER,))
    for on_text in (None, lambda t: None):
        result = p.complete(request, on_text)
        assert result.message.tool_calls[0].id.startswith("toolu_")
        assert result.finish_reason == "tool_calls" and result.usage.output_tokens > 0
        assert result.wire.url == f"{katan.url}/v1/messages"

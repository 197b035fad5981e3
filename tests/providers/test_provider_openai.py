"""The Chat Completions adapter: request mapping, response parsing, streaming, bad inputs, keys."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from agentcore import transcript
from agentcore.errors import ProviderError, UsageError
from agentcore.loop import Agent
from agentcore.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from agentcore.providers.base import ModelRequest, Settings
from agentcore.providers.openai import OpenAIProvider
from agentcore.run import Run, RunConfig
from agentcore.toolbox import get_tools
from agentcore.tools import ToolSpec

WIRE = Path(__file__).parents[1] / "fixtures" / "wire"
WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
KEY = "sk-test-PLANTED-0123456789abcdef"


def fixture(name: str) -> str:
    return (WIRE / name).read_text(encoding="utf-8")


def provider(handler, **kwargs) -> OpenAIProvider:
    kwargs.setdefault("base_url", "http://compat.test/v1")
    return OpenAIProvider(
        "gpt-4o-mini", transport=httpx.MockTransport(handler), retry_base=0.001, retry_cap=0.002, **kwargs
    )


def reply(status: int, text: str, ctype: str = "application/json", **headers: str):
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, content=text.encode(), headers={"content-type": ctype, **headers})

    handler.seen = seen  # type: ignore[attr-defined]
    return handler


def conversation() -> ModelRequest:
    return ModelRequest(
        messages=(
            SystemMessage(content="Be brief."),
            UserMessage(content="Weather in Paris and Rome?"),
            AssistantMessage(
                content=None,
                tool_calls=(
                    ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"}),
                    ToolCall(id="c2", name="get_weather", raw_arguments='{"city": "Rome"'),
                ),
            ),
            ToolMessage(tool_call_id="c1", name="get_weather", content='{"temp": 21}'),
            ToolMessage(tool_call_id="c2", name="get_weather", content="Error: not JSON", is_error=True),
        ),
        tools=(WEATHER,),
        settings=Settings(temperature=0.2, max_tokens=64, parallel_tool_calls=False),
    )


def test_request_maps_system_as_message_and_arguments_as_json_strings():
    handler = reply(200, fixture("openai_parallel_tool_calls.json"))
    provider(handler).complete(conversation())
    body = json.loads(handler.seen[0].content)
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    calls = body["messages"][2]["tool_calls"]
    assert calls[0]["function"]["arguments"] == '{"city": "Paris"}'
    assert calls[1]["function"]["arguments"] == '{"city": "Rome"'  # invalid text echoed as the model wrote it
    assert body["messages"][4] == {"role": "tool", "tool_call_id": "c2", "content": "Error: not JSON"}
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert body["max_tokens"] == 64 and body["temperature"] == 0.2 and body["parallel_tool_calls"] is False
    assert "stream" not in body


def test_official_endpoint_uses_max_completion_tokens():
    handler = reply(200, fixture("openai_parallel_tool_calls.json"))
    OpenAIProvider("gpt-4o-mini", api_key=KEY, transport=httpx.MockTransport(handler)).complete(conversation())
    body = json.loads(handler.seen[0].content)
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body
    assert str(handler.seen[0].url) == "https://api.openai.com/v1/chat/completions"


def test_parallel_tool_calls_and_cached_tokens_are_parsed():
    result = provider(reply(200, fixture("openai_parallel_tool_calls.json"))).complete(conversation())
    assert [c.id for c in result.message.tool_calls] == ["call_paris01", "call_rome02"]
    assert result.message.tool_calls[1].arguments == {"city": "Rome", "unit": "celsius"}
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.cache_read_tokens) == (1200, 48, 1024)
    assert result.finish_reason == "tool_calls" and not result.estimated


def test_invalid_arguments_are_kept_raw_and_calls_decide_over_finish_reason():
    result = provider(reply(200, fixture("openai_invalid_arguments.json"))).complete(conversation())
    call = result.message.tool_calls[0]
    assert call.arguments_invalid and call.raw_arguments == '{"city": "Paris"'
    assert result.message.content == "Let me check."
    assert result.finish_reason == "tool_calls"  # the wire said "stop"


def test_stream_assembles_parallel_calls_by_index_with_usage_from_the_last_chunk():
    handler = reply(200, fixture("openai_stream_parallel_tool_calls.sse"), "text/event-stream")
    result = provider(handler).complete(conversation(), on_text=lambda t: None)
    body = json.loads(handler.seen[0].content)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert [(c.id, c.arguments) for c in result.message.tool_calls] == [
        ("call_s_paris", {"city": "Paris"}),
        ("call_s_rome", {"city": "Rome"}),
    ]
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.cache_read_tokens) == (150, 40, 64)
    assert len(result.wire.response) == 9  # every chunk is kept for the wire view


def test_stream_sends_each_text_delta_to_on_text():
    deltas: list[str] = []
    result = provider(reply(200, fixture("openai_stream_text.sse"), "text/event-stream")).complete(
        conversation(), on_text=deltas.append
    )
    assert deltas == ["It is ", "sunny in Paris."]
    assert result.message.content == "It is sunny in Paris." and result.finish_reason == "stop"
    assert result.usage.input_tokens == 30


def test_stream_where_every_chunk_repeats_the_name_does_not_double_it():
    chunk = {"index": 0, "id": "call_x", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
    lines = []
    for piece in ('{"city":', ' "Oslo"}'):
        chunk["function"]["arguments"] = piece
        lines.append("data: " + json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [chunk]}}]}))
    lines += ['data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}', "data: [DONE]"]
    sse = "\n\n".join(lines) + "\n\n"
    result = provider(reply(200, sse, "text/event-stream")).complete(conversation(), on_text=lambda t: None)
    assert result.message.tool_calls[0].name == "get_weather"
    assert result.message.tool_calls[0].arguments == {"city": "Oslo"}
    assert result.estimated  # no usage anywhere in that stream


@pytest.mark.parametrize(
    ("status", "body", "ctype", "expected"),
    [
        (200, "<html>oops</html>", "text/html", "not JSON (text/html)"),
        (200, json.dumps({"choices": []}), "application/json", "no choices"),
        (200, "[1, 2]", "application/json", "not an object"),
        (
            200,
            json.dumps({"choices": [{"message": {"tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}}]}),
            "application/json",
            "has no id",
        ),
        (
            200,
            json.dumps({"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}}]}),
            "application/json",
            "has no function name",
        ),
    ],
)
def test_malformed_responses_are_one_line_provider_errors(status, body, ctype, expected):
    with pytest.raises(ProviderError) as caught:
        provider(reply(status, body, ctype)).complete(conversation())
    assert expected in str(caught.value) and "\n" not in str(caught.value)
    assert caught.value.wire is not None and caught.value.wire.status == status


def test_html_error_page_from_a_proxy_is_summarised_after_retries():
    handler = reply(502, fixture("proxy_502.html"), "text/html")
    with pytest.raises(ProviderError) as caught:
        provider(handler, max_retries=2).complete(conversation())
    err = caught.value
    assert err.status == 502 and err.attempts == 3 and len(handler.seen) == 3
    assert str(err) == "openai 502: HTTP 502 with a non-JSON body (text/html): 502 Bad Gateway"


def test_stream_cut_off_in_the_middle_is_a_provider_error():
    cut = "\n\n".join(fixture("openai_stream_parallel_tool_calls.sse").split("\n\n")[:4]) + "\n\n"
    with pytest.raises(ProviderError, match="stream ended before the response was complete") as caught:
        provider(reply(200, cut, "text/event-stream")).complete(conversation(), on_text=lambda t: None)
    assert len(caught.value.wire.response) == 4


def test_error_chunk_in_a_stream_is_a_provider_error():
    sse = 'data: {"error": {"message": "context too long", "type": "invalid_request_error"}}\n\n'
    with pytest.raises(ProviderError, match="error in the stream: context too long") as caught:
        provider(reply(200, sse, "text/event-stream")).complete(conversation(), on_text=lambda t: None)
    assert caught.value.type == "invalid_request_error"


def test_missing_key_for_the_official_api_is_a_usage_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        OpenAIProvider("gpt-4o-mini")


def test_compatible_server_without_a_key_gets_no_authorization_header(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    handler = reply(200, fixture("openai_parallel_tool_calls.json"))
    provider(handler).complete(conversation())
    assert "authorization" not in handler.seen[0].headers


def test_planted_key_never_reaches_wire_transcript_or_repr(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://compat.test/v1")  # the operator's address: the key goes there
    handler = reply(200, fixture("openai_invalid_arguments.json"))
    p = provider(handler)
    assert KEY not in repr(p) and KEY not in repr(p.http)
    run = Run.start("Weather in Paris?", RunConfig(provider="openai", model="gpt-4o-mini", max_steps=1))
    Agent(p, get_tools("get_weather")).run(run)
    assert handler.seen[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent...
    assert run.steps[0].wire.request_headers["authorization"] == "[redacted]"  # ...but never recorded
    assert KEY not in run.steps[0].wire.model_dump_json()
    assert KEY not in transcript.dumps(run)


def test_preflight_names_orphan_results_and_unanswered_calls():
    p = provider(reply(200, "{}"))
    orphan = ModelRequest(
        messages=(UserMessage(content="hi"), ToolMessage(tool_call_id="nope", name="get_weather", content="x"))
    )
    assert [(v.index, "no matching tool call" in v.reason) for v in p.preflight(orphan)] == [(1, True)]
    pending = ModelRequest(
        messages=(
            UserMessage(content="hi"),
            AssistantMessage(tool_calls=(ToolCall(id="c9", name="get_weather", arguments={}),)),
        )
    )
    (violation,) = p.preflight(pending)
    assert violation.index == 1 and "c9" in violation.reason


def test_katan_answers_tool_calls_streamed_or_not(katan):
    p = OpenAIProvider("echo", base_url=f"{katan.url}/v1", api_key="katan-key")
    request = ModelRequest(messages=(UserMessage(content="Weather in Paris?"),), tools=(WEATHER,))
    for on_text in (None, lambda t: None):
        result = p.complete(request, on_text)
        (call,) = result.message.tool_calls
        assert call.name == "get_weather" and call.id.startswith("call_") and "city" in call.arguments
        assert result.usage.input_tokens > 0 and not result.estimated
        assert result.wire.status == 200 and result.wire.request_headers["authorization"] == "[redacted]"
    text = p.complete(ModelRequest(messages=(UserMessage(content="hello there"),)), lambda t: None)
    assert "hello there" in text.message.content and text.finish_reason == "stop"

"""The Ollama /api/chat adapter: object arguments, tool_name on results, NDJSON streaming, errors."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from agentcore.errors import ProviderError
from agentcore.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from agentcore.providers.base import ModelRequest, Settings
from agentcore.providers.ollama import OllamaProvider
from agentcore.tools import ToolSpec

WIRE = Path(__file__).parents[1] / "fixtures" / "wire"
WEATHER = ToolSpec(name="get_weather", description="Weather", parameters={"type": "object", "properties": {}})


def fixture(name: str) -> str:
    return (WIRE / name).read_text(encoding="utf-8")


def provider(status: int, body: str, ctype: str = "application/json", **kwargs) -> OllamaProvider:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, content=body.encode(), headers={"content-type": ctype})

    kwargs.setdefault("base_url", "http://ollama.test:11434")
    p = OllamaProvider("llama3.2", transport=httpx.MockTransport(handler), retry_base=0.001, retry_cap=0.002, **kwargs)
    p.seen = seen  # type: ignore[attr-defined]
    return p


def conversation() -> ModelRequest:
    return ModelRequest(
        messages=(
            SystemMessage(content="Be brief."),
            UserMessage(content="Weather in Tokyo?"),
            AssistantMessage(tool_calls=(ToolCall(id="c1", name="get_weather", arguments={"city": "Tokyo"}),)),
            ToolMessage(tool_call_id="c1", name="get_weather", content="18 C"),
        ),
        tools=(WEATHER,),
        settings=Settings(temperature=0.1, max_tokens=50),
    )


def test_request_sends_object_arguments_tool_name_and_stream_false():
    p = provider(200, fixture("ollama_tool_calls.json"))
    p.complete(conversation())
    body = json.loads(p.seen[0].content)
    assert str(p.seen[0].url) == "http://ollama.test:11434/api/chat"
    assert body["stream"] is False  # Ollama streams unless told not to
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["messages"][2]["tool_calls"][0]["function"]["arguments"] == {"city": "Tokyo"}
    assert body["messages"][3] == {"role": "tool", "content": "18 C", "tool_name": "get_weather", "tool_call_id": "c1"}
    assert body["options"] == {"temperature": 0.1, "num_predict": 50}
    assert body["tools"][0]["function"]["name"] == "get_weather"


def test_response_calls_get_ids_and_usage_comes_from_eval_counts():
    result = provider(200, fixture("ollama_tool_calls.json")).complete(conversation())
    first, second = result.message.tool_calls
    assert first.id.startswith("call_") and first.id != second.id and second.id == "call_ab12cd34"
    assert first.arguments == {"city": "Tokyo"} and second.arguments == {"city": "Osaka", "unit": "celsius"}
    assert (result.usage.input_tokens, result.usage.output_tokens) == (169, 18)
    assert result.finish_reason == "tool_calls"
    assert result.wire.response["total_duration"] == 3244883583  # durations kept in the wire response


def test_ndjson_stream_collects_text_and_whole_tool_calls():
    deltas: list[str] = []
    p = provider(200, fixture("ollama_stream_tool_calls.ndjson"), "application/x-ndjson")
    result = p.complete(conversation(), on_text=deltas.append)
    assert json.loads(p.seen[0].content)["stream"] is True
    assert deltas == ["Let me ", "look."] and result.message.content == "Let me look."
    assert result.message.tool_calls[0].arguments == {"city": "Tokyo"}
    assert (result.usage.input_tokens, result.usage.output_tokens) == (169, 15)
    assert len(result.wire.response) == 4


def test_mid_stream_error_line_is_a_provider_error():
    p = provider(200, fixture("ollama_stream_error.ndjson"), "application/x-ndjson")
    with pytest.raises(ProviderError, match="error in the stream: an error was encountered"):
        p.complete(conversation(), on_text=lambda t: None)


def test_stream_without_the_done_line_is_a_provider_error():
    cut = "\n".join(fixture("ollama_stream_tool_calls.ndjson").splitlines()[:2])
    with pytest.raises(ProviderError, match="ended before the final"):
        provider(200, cut, "application/x-ndjson").complete(conversation(), on_text=lambda t: None)


def test_model_not_found_is_a_one_line_error_without_retry():
    p = provider(404, json.dumps({"error": 'model "llama9" not found, try pulling it first'}))
    with pytest.raises(ProviderError) as caught:
        p.complete(conversation())
    assert str(caught.value) == 'ollama 404: model "llama9" not found, try pulling it first'
    assert len(p.seen) == 1


def test_tool_call_without_a_name_is_a_provider_error():
    body = json.dumps({"message": {"role": "assistant", "tool_calls": [{"function": {"arguments": {}}}]}, "done": True})
    with pytest.raises(ProviderError, match="tool call 0 has no function name"):
        provider(200, body).complete(conversation())


def test_host_comes_from_ollama_host_even_without_a_scheme(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "10.0.0.5:11434")
    assert OllamaProvider("llama3.2").base_url == "http://10.0.0.5:11434"
    monkeypatch.delenv("OLLAMA_HOST")
    assert OllamaProvider("llama3.2").base_url == "http://127.0.0.1:11434"

"""The Responses API adapter: request mapping, response parsing, streaming, reasoning round trips, errors, retries.

The adapter talks HTTP to a stand-in server on 127.0.0.1 that answers with recorded payloads (tests/fixtures/wire).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.stand_in import WIRE, Reply, StandIn

from agentcore.cli.main import main
from agentcore.errors import ProviderError, UsageError
from agentcore.exports import export_request
from agentcore.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from agentcore.providers import create_provider
from agentcore.providers.base import ModelRequest, Settings
from agentcore.providers.openai_responses import OpenAIResponsesProvider
from agentcore.run import Run, RunConfig
from agentcore.tools import ToolSpec

WEATHER = ToolSpec(name="get_weather", description="Weather", parameters={"type": "object", "properties": {}})
QUIET = {"api_key": "sk-test-PLANTED-000000000000", "retry_base": 0.001, "retry_cap": 0.002}


def provider(server: StandIn, model: str = "gpt-5", **options: Any) -> OpenAIResponsesProvider:
    return create_provider("openai-responses", model, base_url=f"{server.url}/v1", **{**QUIET, **options})


def output_items(name: str) -> list[dict[str, Any]]:
    """The finished output items of a fixture: a response's `output`, or a stream's output_item.done items."""
    if name.endswith(".json"):
        return json.loads((WIRE / name).read_text(encoding="utf-8"))["output"]
    events = [json.loads(line[5:]) for line in (WIRE / name).open(encoding="utf-8") if line.startswith("data:")]
    return [e["item"] for e in events if e["type"] == "response.output_item.done"]


def conversation() -> ModelRequest:
    return ModelRequest(
        messages=(
            SystemMessage(content="Be brief."),
            UserMessage(content="Weather in Paris and Rome?"),
            AssistantMessage(
                content="Checking.",
                tool_calls=(
                    ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),
                    ToolCall(id="call_2", name="get_weather", raw_arguments="{city: Rome"),
                ),
            ),
            ToolMessage(tool_call_id="call_1", name="get_weather", content="21 C"),
            ToolMessage(tool_call_id="call_2", name="get_weather", content="Error: bad arguments", is_error=True),
        ),
        tools=(WEATHER,),
        settings=Settings(parallel_tool_calls=False, max_tokens=500, reasoning_effort="low", temperature=0.5),
    )


def test_request_is_stateless_with_flat_tools_and_function_call_items():
    with StandIn(Reply.fixture("openai_responses_final_text.json")) as server:
        provider(server, "served-model").complete(conversation())  # a compatible server's model: no catalogue rules
    seen = server.seen[0]
    body = seen.body
    assert seen.path == "/v1/responses" and seen.headers["authorization"].startswith("Bearer ")
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["instructions"] == "Be brief."
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert (body["max_output_tokens"], body["parallel_tool_calls"], body["temperature"]) == (500, False, 0.5)
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather",
            "parameters": WEATHER.parameters,
            "strict": False,
        }
    ]
    assert body["input"] == [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": "Checking."},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": "{city: Rome"},
        {"type": "function_call_output", "call_id": "call_1", "output": "21 C"},
        {"type": "function_call_output", "call_id": "call_2", "output": "Error: bad arguments"},
    ]
    assert "stream" not in body


def test_response_reasoning_function_call_and_usage():
    with StandIn(Reply.fixture("openai_responses_reasoning_function_call.json")) as server:
        result = provider(server).complete(ModelRequest(messages=(UserMessage(content="Poem"),)))
    reasoning, call = output_items("openai_responses_reasoning_function_call.json")
    message = result.message
    assert result.finish_reason == "tool_calls" and message.content is None
    assert message.tool_calls[0].id == call["call_id"] and message.tool_calls[0].name == "update_plan"
    assert message.tool_calls[0].arguments == json.loads(call["arguments"])
    (part,) = message.reasoning
    assert (part.provider, part.id, part.encrypted_content) == (
        "openai-responses",
        reasoning["id"],
        reasoning["encrypted_content"],
    )
    assert part.summary == tuple(s["text"] for s in reasoning["summary"])
    assert result.usage.model_dump() == {
        "input_tokens": 124,
        "output_tokens": 1926,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "reasoning_tokens": 1792,
    }


def test_response_final_text_counts_cached_tokens():
    with StandIn(Reply.fixture("openai_responses_final_text.json")) as server:
        result = provider(server).complete(ModelRequest(messages=(UserMessage(content="Poem"),)))
    assert result.finish_reason == "stop" and result.message.content.startswith("Softly old fountains")
    assert (result.usage.input_tokens, result.usage.cache_read_tokens) == (2087, 2048)


@pytest.mark.parametrize(
    "fixture", ["openai_responses_reasoning_function_call.json", "openai_responses_stream_reasoning_function_call.sse"]
)
def test_reasoning_items_go_back_unchanged_before_the_function_call(fixture):
    stream = fixture.endswith(".sse")
    with StandIn(Reply.fixture(fixture), Reply.fixture("openai_responses_final_text.json")) as server:
        p = provider(server)
        ask = ModelRequest(messages=(UserMessage(content="Go"),), settings=Settings(reasoning_effort="low"))
        streamed: list[str] = []
        first = p.complete(ask, streamed.append if stream else None)
        results = tuple(ToolMessage(tool_call_id=c.id, name=c.name, content="done") for c in first.message.tool_calls)
        p.complete(ModelRequest(messages=(*ask.messages, first.message, *results), settings=ask.settings))
    follow = server.bodies()[1]["input"]
    sent = [item for item in follow if item.get("type") == "reasoning"]
    expected = [item for item in output_items(fixture) if item["type"] == "reasoning"]
    assert [(s["id"], s["encrypted_content"], s["summary"]) for s in sent] == [
        (e["id"], e["encrypted_content"], e["summary"]) for e in expected
    ]
    kinds = [item.get("type", item.get("role")) for item in follow]
    assert kinds.index("reasoning") < kinds.index("function_call") < kinds.index("function_call_output")
    if stream:
        assert "".join(streamed) == first.message.content == "I’ll check the capital lookup tool for “PotatoLand.”"


def test_stream_keeps_the_finished_encrypted_content_not_the_added_one():
    events = [
        json.loads(line[5:])
        for line in (WIRE / "openai_responses_stream_reasoning_function_call.sse").open()
        if line.startswith("data:")
    ]
    added = next(
        e["item"] for e in events if e["type"] == "response.output_item.added" and e["item"]["type"] == "reasoning"
    )
    done = next(
        e["item"] for e in events if e["type"] == "response.output_item.done" and e["item"]["type"] == "reasoning"
    )
    assert added["encrypted_content"] != done["encrypted_content"]  # the recording itself differs
    with StandIn(Reply.fixture("openai_responses_stream_reasoning_function_call.sse")) as server:
        result = provider(server).complete(ModelRequest(messages=(UserMessage(content="Go"),)), lambda _t: None)
    assert result.message.reasoning[0].encrypted_content == done["encrypted_content"]
    assert result.message.tool_calls[0].arguments == {"country": "PotatoLand"}
    assert (result.usage.output_tokens, result.usage.reasoning_tokens) == (69, 26)
    assert server.bodies()[0]["stream"] is True


def test_stream_with_reasoning_summaries():
    with StandIn(Reply.fixture("openai_responses_stream_reasoning_summary.sse")) as server:
        result = provider(server).complete(ModelRequest(messages=(UserMessage(content="Go"),)), lambda _t: None)
    (expected,) = [i for i in output_items("openai_responses_stream_reasoning_summary.sse") if i["type"] == "reasoning"]
    (part,) = result.message.reasoning
    assert part.summary == tuple(s["text"] for s in expected["summary"]) and len(part.summary) == 4
    assert part.display_text.startswith(part.summary[0])
    assert result.usage.reasoning_tokens == 1408 and result.finish_reason == "stop"


def sse(*events: dict[str, Any]) -> Reply:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return Reply(body.encode(), "text/event-stream")


def test_error_event_and_failed_response_in_the_stream_are_provider_errors():
    with StandIn(sse({"type": "error", "code": "server_error", "message": "The server had an error"})) as server:
        with pytest.raises(ProviderError) as caught:
            provider(server).complete(ModelRequest(messages=(UserMessage(content="Go"),)), lambda _t: None)
    assert "The server had an error" in str(caught.value) and caught.value.retryable
    failed = {
        "type": "response.failed",
        "response": {"status": "failed", "error": {"code": "invalid_prompt", "message": "Bad prompt"}},
    }
    with StandIn(sse({"type": "response.created", "response": {}}, failed)) as server:
        with pytest.raises(ProviderError) as caught:
            provider(server).complete(ModelRequest(messages=(UserMessage(content="Go"),)), lambda _t: None)
    assert "Bad prompt" in str(caught.value) and not caught.value.retryable


def test_stream_cut_off_before_completed():
    with StandIn(sse({"type": "response.created", "response": {}})) as server:
        with pytest.raises(ProviderError, match="ended before response.completed"):
            provider(server).complete(ModelRequest(messages=(UserMessage(content="Go"),)), lambda _t: None)


def test_incomplete_response_is_a_length_stop():
    body = {
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [],
        "usage": {"input_tokens": 5, "output_tokens": 7},
    }
    with StandIn(Reply(json.dumps(body).encode())) as server:
        result = provider(server).complete(ModelRequest(messages=(UserMessage(content="Go"),)))
    assert result.finish_reason == "length" and result.usage.output_tokens == 7


def test_error_body_gives_message_and_type_and_is_not_retried():
    with StandIn(Reply.fixture("openai_responses_error_400.json", status=400, **{"x-request-id": "req_abc"})) as server:
        with pytest.raises(ProviderError) as caught:
            provider(server).complete(ModelRequest(messages=(UserMessage(content="Go"),)))
    err = caught.value
    assert err.status == 400 and err.type == "invalid_request_error" and err.request_id == "req_abc"
    assert "Invalid 'temperature'" in str(err) and len(server.seen) == 1


def test_rate_limit_is_retried_then_succeeds():
    limited = Reply(
        b'{"error": {"message": "slow down", "type": "rate_limit_exceeded"}}',
        status=429,
        headers={"retry-after-ms": "1"},
    )
    with StandIn(limited, Reply.fixture("openai_responses_final_text.json")) as server:
        result = provider(server).complete(ModelRequest(messages=(UserMessage(content="Go"),)))
    assert len(server.seen) == 2 and result.message.content


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("not a list", "not a response object"),
        ([{"type": "function_call", "name": "f", "arguments": "{}"}], "has no call_id"),
        ([{"type": "function_call", "call_id": "call_1", "arguments": "{}"}], "has no name"),
    ],
)
def test_malformed_response_is_a_provider_error(output, expected):
    with StandIn(Reply(json.dumps({"status": "completed", "output": output}).encode())) as server:
        with pytest.raises(ProviderError, match=expected):
            provider(server).complete(ModelRequest(messages=(UserMessage(content="Go"),)))


def test_untrusted_item_fields_of_the_wrong_type_are_not_kept():
    items = [
        {
            "type": "reasoning",
            "id": 5,
            "summary": [{"type": "summary_text", "text": 7}, "x"],
            "encrypted_content": {"a": 1},
        },
        {"type": "message", "content": [{"type": "output_text", "text": None}, {"type": "output_text", "text": "ok"}]},
    ]
    with StandIn(Reply(json.dumps({"status": "completed", "output": items}).encode())) as server:
        result = provider(server).complete(ModelRequest(messages=(UserMessage(content="Go"),)))
    (part,) = result.message.reasoning
    assert (part.id, part.summary, part.encrypted_content, result.message.content) == (None, (), None, "ok")


def test_missing_key_for_the_official_api_is_a_usage_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        create_provider("openai-responses")


def test_export_writes_the_run_as_a_responses_request():
    run = Run.start(
        "Hi",
        RunConfig(
            provider="openai-responses", model="gpt-5.4-mini", system_prompt="Be brief.", reasoning_effort="medium"
        ),
    )
    body = export_request(run, "openai-responses")
    assert body["model"] == "gpt-5.4-mini" and body["store"] is False
    assert body["instructions"] == "Be brief." and body["input"] == [{"role": "user", "content": "Hi"}]
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}


def test_cli_runs_on_the_responses_api_with_a_base_url_and_reasoning_flags(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-PLANTED-000000000000")
    out = tmp_path / "run.json"
    with StandIn(Reply.fixture("openai_responses_stream_final_text.sse")) as server:
        code = main(
            [
                "run",
                "Capital?",
                "--provider",
                "openai-responses",
                "--model",
                "gpt-5",
                "--base-url",
                f"{server.url}/v1",
                "--reasoning-effort",
                "low",
                "--thinking-budget",
                "2000",
                "--no-db",
                "--out",
                str(out),
                "--tools",
                "",
            ]
        )
    assert code == 0, capsys.readouterr().err
    body = server.bodies()[0]
    assert body["reasoning"] == {"effort": "low", "summary": "auto"} and body["stream"] is True
    saved = json.loads(out.read_text())
    assert saved["config"]["reasoning_effort"] == "low" and saved["config"]["thinking_budget"] == 2000
    capsys.readouterr()
    assert main(["export", str(out), "--format", "openai-responses"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported["input"][0] == {"role": "user", "content": "Capital?"} and exported["store"] is False


def test_the_compare_page_shows_the_responses_request_and_the_reasoning_it_passes_back(open_app, monkeypatch):
    from support.app import button, set_up, settle

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    replies = (
        Reply.fixture("openai_responses_reasoning_function_call.json"),
        Reply.fixture("openai_responses_final_text.json"),
    )
    with StandIn(*replies) as server:
        at = set_up(open_app("views/compare.py"), ("openai-responses", f"{server.url}/v1"), ("scripted", "weather"))
        button(at, "Run all").click()
        settle(at)
        assert not at.exception
        at.number_input(key="cmp_wire_step").set_value(2)
        at.run()
    request = next(
        j.value for j in at.main.json if "input" in (json.loads(j.value) if isinstance(j.value, str) else j.value)
    )
    request = json.loads(request) if isinstance(request, str) else request
    assert request["store"] is False and any(item.get("type") == "reasoning" for item in request["input"])
    assert any("Passes back 1 reasoning part" in c.value for c in at.main.caption)

"""What the four HTTP providers share: one event stream, and one way to report a response they cannot read.

Each adapter says only what is wrong; the error it becomes carries the provider, the status, the
attempt count and the exchange with every event read so far, the same for every wire format.
"""

from __future__ import annotations

import json

import httpx
import pytest

from agentcore.errors import ProviderError
from agentcore.messages import UserMessage
from agentcore.providers.anthropic import AnthropicProvider
from agentcore.providers.base import ModelRequest
from agentcore.providers.ollama import OllamaProvider
from agentcore.providers.openai import OpenAIProvider
from agentcore.providers.openai_responses import OpenAIResponsesProvider

REQUEST = ModelRequest(messages=(UserMessage(content="hi"),))
SSE = "text/event-stream"
NDJSON = "application/x-ndjson"
PROVIDERS = {
    "openai": (OpenAIProvider, "http://mock.test/v1"),
    "openai-responses": (OpenAIResponsesProvider, "http://mock.test/v1"),
    "anthropic": (AnthropicProvider, "http://mock.test"),
    "ollama": (OllamaProvider, "http://mock.test"),
}
# per provider: one event that is well formed but not the last, and how the stream is sent
UNFINISHED = {
    "openai": ({"choices": [{"index": 0, "delta": {"content": "Hel"}}]}, None, SSE),
    "openai-responses": ({"type": "response.output_text.delta", "delta": "Hel"}, "response.output_text.delta", SSE),
    "anthropic": ({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}, "message_start", SSE),
    "ollama": ({"message": {"role": "assistant", "content": "Hel"}, "done": False}, None, NDJSON),
}
NOT_READ = {
    "openai": "the response has no choices",
    "openai-responses": "the response is not a response object with an output list",
    "anthropic": "the response is not a message with a content list",
    "ollama": "the response has no message",
}
CUT_OFF = {
    "openai": "the stream ended before the response was complete",
    "openai-responses": "the stream ended before response.completed",
    "anthropic": "the stream ended before message_stop",
    "ollama": "the stream ended before the final (done) line",
}


def provider(name: str, *answers: tuple[int, str, str]):
    """The named provider against a server that gives each answer in turn (the last one from then on)."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        status, text, ctype = answers[min(len(seen), len(answers)) - 1]
        return httpx.Response(status, content=text.encode(), headers={"content-type": ctype})

    cls, base_url = PROVIDERS[name]
    p = cls("m", base_url=base_url, transport=httpx.MockTransport(handler), retry_base=0.001, retry_cap=0.002)
    return p, seen


def stream(name: str, *events: dict) -> str:
    """The events as this provider's stream sends them: SSE (named where the format names them) or NDJSON."""
    _, _, ctype = UNFINISHED[name]
    if ctype == NDJSON:
        return "".join(json.dumps(e) + "\n" for e in events)
    return "".join((f"event: {e['type']}\n" if name != "openai" else "") + f"data: {json.dumps(e)}\n\n" for e in events)


BUSY = (503, json.dumps({"error": {"message": "busy", "type": "server_error"}}), "application/json")


@pytest.mark.parametrize("name", PROVIDERS)
def test_a_whole_response_no_format_can_read_is_an_error_of_that_provider_with_its_status_attempts_and_body(name):
    p, seen = provider(name, BUSY, (200, "{}", "application/json"))
    with pytest.raises(ProviderError) as caught:
        p.complete(REQUEST)
    err = caught.value
    assert (err.provider, err.status, err.attempts, err.type, err.retryable) == (name, 200, 2, None, False)
    assert str(err) == f"{name} 200: {NOT_READ[name]}" and len(seen) == 2
    assert err.wire.status == 200 and err.wire.response == {} and err.wire.request == p.body(REQUEST)


@pytest.mark.parametrize("name", PROVIDERS)
def test_a_stream_cut_off_is_an_error_of_that_provider_keeping_every_event_read(name):
    event, _, ctype = UNFINISHED[name]
    p, seen = provider(name, BUSY, (200, stream(name, event, event), ctype))
    texts: list[str] = []
    with pytest.raises(ProviderError) as caught:
        p.complete(REQUEST, on_text=texts.append)
    err = caught.value
    assert (err.provider, err.status, err.attempts, err.type, err.retryable) == (name, 200, 2, None, False)
    assert str(err) == f"{name} 200: {CUT_OFF[name]}" and len(seen) == 2
    assert err.wire.response == [event, event] and err.wire.request == p.body(REQUEST, stream=True)
    assert texts == (["Hel", "Hel"] if name != "anthropic" else [])


@pytest.mark.parametrize(
    ("name", "event", "message", "kind", "retryable"),
    [
        ("openai", {"error": {"message": "context too long", "code": "context_length_exceeded"}},
         "error in the stream: context too long", "context_length_exceeded", False),
        ("openai-responses", {"type": "error", "code": "server_error", "message": "try again"},
         "error in the stream: try again", "server_error", True),
        ("openai-responses",
         {"type": "response.failed", "response": {"error": {"code": "invalid_prompt", "message": "no"}}},
         "no", "invalid_prompt", False),
        ("anthropic", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
         "error in the stream: Overloaded", "overloaded_error", True),
        ("ollama", {"error": "model ran out of memory"}, "error in the stream: model ran out of memory", None, False),
    ],
)  # fmt: skip
def test_an_error_event_in_a_stream_keeps_its_type_and_whether_it_may_be_retried(name, event, message, kind, retryable):
    first, _, ctype = UNFINISHED[name]
    p, _ = provider(name, (200, stream(name, first, event), ctype))
    with pytest.raises(ProviderError) as caught:
        p.complete(REQUEST, on_text=lambda t: None)
    err = caught.value
    assert (err.provider, err.status, err.message, err.type, err.retryable) == (name, 200, message, kind, retryable)
    assert err.attempts == 1 and err.wire.response == [first, event]


def test_an_anthropic_error_event_without_a_message_is_quoted_as_the_server_sent_it():
    sent = '{"type":"error","error":{"type":"api_error"}}'
    p, _ = provider("anthropic", (200, f"event: error\ndata: {sent}\n\n", SSE))
    with pytest.raises(ProviderError) as caught:
        p.complete(REQUEST, on_text=lambda t: None)
    assert str(caught.value) == f"anthropic 200 api_error: error in the stream: {sent}" and caught.value.retryable


def test_done_ends_a_chat_completions_stream_that_gave_no_finish_reason_and_nothing_after_it_is_read():
    chunk = {"choices": [{"index": 0, "delta": {"content": "Hello"}}]}
    after = {"choices": [{"index": 0, "delta": {"content": " again"}}]}
    p, _ = provider("openai", (200, stream("openai", chunk) + "data: [DONE]\n\n" + stream("openai", after), SSE))
    texts: list[str] = []
    result = p.complete(REQUEST, on_text=texts.append)
    assert result.message.content == "Hello" and texts == ["Hello"] and result.finish_reason is None
    assert result.wire.response == [chunk]  # the end marker is not an event, and is not kept


def test_blank_lines_between_ndjson_lines_are_not_events():
    first, _, _ = UNFINISHED["ollama"]
    done = {"message": {"role": "assistant", "content": "lo"}, "done": True, "done_reason": "stop", "eval_count": 2}
    p, _ = provider("ollama", (200, f"\n{json.dumps(first)}\n\n  \n{json.dumps(done)}\n", NDJSON))
    result = p.complete(REQUEST, on_text=lambda t: None)
    assert result.message.content == "Hello" and result.wire.response == [first, done]


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_base_urls_user_password_and_query_key_are_kept_out_of_the_wire_and_its_errors():
    from agentcore.secrets import forget_secrets

    base_url = "http://proxy-user:proxy-password-0123@llm.example.com/v1?key=url-key-0123456789"
    try:
        p = OpenAIProvider("m", base_url=base_url, transport=httpx.MockTransport(lambda r: httpx.Response(500)))
        with pytest.raises(ProviderError) as caught:
            p.complete(REQUEST)
        shown = f"{caught.value} {caught.value.wire.model_dump_json()}"
        assert "llm.example.com" in shown
        assert "proxy-password-0123" not in shown and "url-key-0123456789" not in shown
    finally:
        forget_secrets()


def test_a_setting_in_a_base_urls_query_is_no_secret_but_a_key_beside_it_is():
    from agentcore.secrets import forget_secrets, scrub_text

    try:
        OpenAIProvider("m", base_url="https://x.example.com/openai?api-version=2024-10-21&api-key=url-key-0123456789")
        assert scrub_text("as of 2024-10-21, with url-key-0123456789") == "as of 2024-10-21, with [redacted]"
    finally:
        forget_secrets()

"""Retries: which failures are retried, how long the waits are, the budget, and the error at the end.

Against a MockTransport (waits recorded, never slept) and against llm-katan's fault flags (tiny real waits).
"""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from agentcore.errors import ProviderError
from agentcore.loop import Agent
from agentcore.messages import UserMessage
from agentcore.providers.anthropic import AnthropicProvider
from agentcore.providers.base import ModelRequest
from agentcore.providers.openai import OpenAIProvider
from agentcore.run import Run, RunConfig
from agentcore.toolbox import get_tools

REQUEST = ModelRequest(messages=(UserMessage(content="hi"),))
ANSWER = json.dumps(
    {
        "choices": [{"message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
)
FAST = {"retry_base": 0.001, "retry_cap": 0.002}


class Script:
    """A fake server answering each request with the next scripted (status, headers) or an exception."""

    def __init__(self, *steps) -> None:
        self.steps = list(steps)
        self.calls = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        if isinstance(step, Exception):
            raise step
        status, headers = step if isinstance(step, tuple) else (step, {})
        if status == 200:
            return httpx.Response(200, content=ANSWER.encode(), headers={"content-type": "application/json"})
        body = json.dumps({"error": {"message": f"failure {status}", "type": "server_error"}})
        return httpx.Response(status, content=body.encode(), headers={"content-type": "application/json", **headers})


def provider(script: Script, waits: list[float] | None = None, **options) -> OpenAIProvider:
    sleep = waits.append if waits is not None else (lambda s: None)
    options = {**FAST, **options}
    return OpenAIProvider(
        "m", base_url="http://mock.test/v1", transport=httpx.MockTransport(script), sleep=sleep, **options
    )


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
def test_retryable_statuses_are_retried_until_success(status):
    script = Script(status, status, 200)
    result = provider(script, max_retries=2).complete(REQUEST)
    assert script.calls == 3 and result.message.content == "hello"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried(status):
    script = Script(status, 200)
    with pytest.raises(ProviderError) as caught:
        provider(script).complete(REQUEST)
    assert script.calls == 1 and caught.value.status == status and not caught.value.retryable


def test_x_should_retry_overrides_the_status():
    no = Script((500, {"x-should-retry": "false"}), 200)
    with pytest.raises(ProviderError):
        provider(no).complete(REQUEST)
    assert no.calls == 1
    yes = Script((400, {"x-should-retry": "true"}), 200)
    assert provider(yes).complete(REQUEST).message.content == "hello" and yes.calls == 2


def test_retry_after_ms_and_retry_after_are_honoured():
    waits: list[float] = []
    script = Script((429, {"retry-after-ms": "250"}), (429, {"retry-after": "2"}), 200)
    provider(script, waits).complete(REQUEST)
    assert waits == [0.25, 2.0]


def test_a_wait_longer_than_allowed_fails_at_once_and_says_so():
    waits: list[float] = []
    script = Script((429, {"retry-after": "3600"}), 200)
    with pytest.raises(ProviderError, match="retry after 3600 s") as caught:
        provider(script, waits).complete(REQUEST)
    assert script.calls == 1 and waits == [] and caught.value.retryable


def test_backoff_grows_exponentially_with_jitter_up_to_the_cap():
    waits: list[float] = []
    script = Script(500)
    with pytest.raises(ProviderError) as caught:
        provider(script, waits, max_retries=5, retry_base=1.0, retry_cap=4.0, retry_budget=1000).complete(REQUEST)
    assert caught.value.attempts == 6 and len(waits) == 5
    for wait, full in zip(waits, [1, 2, 4, 4, 4], strict=True):
        assert 0.75 * full <= wait <= full


def test_the_budget_bounds_the_sum_of_waits(monkeypatch):
    monkeypatch.setattr("agentcore.providers._http.random.random", lambda: 0.0)  # no jitter: each wait is 1 s
    waits: list[float] = []
    script = Script(503)
    with pytest.raises(ProviderError) as caught:
        provider(script, waits, max_retries=10, retry_base=1.0, retry_cap=1.0, retry_budget=2.5).complete(REQUEST)
    assert waits == [1.0, 1.0] and caught.value.attempts == 3


def test_connection_errors_are_retried_then_reported():
    script = Script(httpx.ConnectError("refused"), httpx.ReadTimeout("slow"), 200)
    assert provider(script).complete(REQUEST).message.content == "hello" and script.calls == 3
    dead = Script(httpx.ConnectError("connection refused"))
    with pytest.raises(ProviderError) as caught:
        provider(dead, max_retries=1).complete(REQUEST)
    assert dead.calls == 2 and caught.value.type == "connection_error"
    assert "cannot reach http://mock.test/v1/chat/completions: ConnectError: connection refused" in str(caught.value)
    assert caught.value.wire.request == provider(dead).body(REQUEST)


def test_final_error_carries_status_type_message_request_id_and_redacted_wire():
    script = Script((429, {"x-request-id": "req_abc", "authorization": "Bearer leaked"}))
    p = OpenAIProvider(
        "m",
        base_url="http://mock.test/v1",
        api_key="sk-PLANTED",
        transport=httpx.MockTransport(script),
        sleep=lambda s: None,
        max_retries=1,
        **FAST,
    )
    with pytest.raises(ProviderError) as caught:
        p.complete(REQUEST)
    err = caught.value
    assert str(err) == "openai 429 server_error: failure 429 (request id req_abc)"
    assert err.attempts == 2 and err.wire.status == 429
    assert err.wire.request_headers["authorization"] == "[redacted]"
    assert err.wire.response_headers["authorization"] == "[redacted]"
    assert "PLANTED" not in err.wire.model_dump_json() and "leaked" not in err.wire.model_dump_json()


def test_a_failed_step_leaves_the_run_intact_and_retryable():
    script = Script(500, 500, 200)
    p = provider(script, max_retries=1)
    run = Run.start("hi", RunConfig(provider="openai", model="m"))
    agent = Agent(p, get_tools("get_weather"))
    agent.run(run)
    assert run.stop_reason == "error" and run.error == "openai 500 server_error: failure 500"
    assert len(run.messages) == 1 and run.steps == []
    agent.run(run)  # the same step again: the third request succeeds
    assert run.stop_reason == "answer" and run.final_answer() == "hello" and len(run.steps) == 1


# -- against llm-katan's fault flags -------------------------------------------------------


def katan_provider(server, cls=OpenAIProvider, **options):
    base = f"{server.url}/v1" if cls is OpenAIProvider else server.url
    return cls("echo", base_url=base, api_key="katan-key", **{**FAST, **options})


def test_katan_error_rate_500_exhausts_the_retries(katan_pool):
    server = katan_pool.fresh("--error-rate", "1.0")
    before = server.requests_seen()
    with pytest.raises(ProviderError) as caught:
        katan_provider(server, max_retries=3).complete(REQUEST)
    err = caught.value
    assert (err.status, err.attempts, err.message) == (500, 4, "internal server error")
    assert server.requests_seen() - before == 4  # the server saw every attempt


def test_katan_rate_limit_after_gives_429_on_both_dialects(katan_pool):
    server = katan_pool.fresh("--rate-limit-after", "1")
    assert katan_provider(server).complete(REQUEST).message.content  # the first request is allowed
    with pytest.raises(ProviderError) as caught:
        katan_provider(server, max_retries=2).complete(REQUEST)
    assert caught.value.status == 429 and caught.value.attempts == 3
    with pytest.raises(ProviderError) as caught:
        katan_provider(server, AnthropicProvider, max_retries=1).complete(REQUEST)
    assert str(caught.value) == "anthropic 429 rate_limit_error: rate limit exceeded"
    assert caught.value.attempts == 2 and caught.value.wire.request_headers["x-api-key"] == "[redacted]"


def test_katan_timeout_after_gives_504_and_the_run_records_the_error(katan_pool):
    server = katan_pool.fresh("--timeout-after", "1")
    run = Run.start("Weather in Paris?", RunConfig(provider="openai", model="echo", max_steps=5))
    Agent(katan_provider(server, max_retries=1), get_tools("get_weather")).run(run)
    assert run.stop_reason == "error" and len(run.steps) == 1  # step 1 went through, step 2 hit the 504s
    assert run.error == "openai 504 server_error: upstream request timeout"
    assert run.next_phase == "model"  # ready to retry the model phase


def test_katan_max_inflight_503_is_retried_until_a_slot_frees(katan_pool):
    server = katan_pool.fresh("--max-inflight", "1", "--latency-ms", "800")
    results: list[object] = []
    attempts: list[int] = []

    def call() -> None:
        p = katan_provider(server, max_retries=6, retry_base=0.1, retry_cap=0.4)
        results.append(p.complete(REQUEST))
        attempts.append(p.http.last_attempts)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert len(results) == 2 and sorted(attempts)[0] == 1 and sorted(attempts)[1] >= 2

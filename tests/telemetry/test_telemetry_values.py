"""Trace values a backend can trust: the answering model and the response id as the response names them, for whole
and streamed calls on every dialect; server.port with every server.address; the GenAI schema's newer names."""

from __future__ import annotations

import pytest
from support.stand_in import Reply, StandIn

from agentcore.loop import Agent
from agentcore.policies import ContextPolicies
from agentcore.providers import create_provider
from agentcore.run import Run, RunConfig
from agentcore.tools import ToolSpec

pytest.importorskip("opentelemetry.sdk", reason="the trace needs the otel extra")

from agentcore.telemetry import genai as g
from agentcore.telemetry.export import run_spans

QUIET = {"api_key": "sk-test-PLANTED-000000000000", "retry_base": 0.001, "retry_cap": 0.002}
WEATHER = ToolSpec(name="get_weather", description="Weather", parameters={"type": "object", "properties": {}})
# (provider, model asked for, fixture, the response's own id, the response's own model)
CALLS = [
    ("openai", "gpt-4o-mini", "openai_stream_text.sse", "chatcmpl-fixture-text", "gpt-4o-mini"),
    ("openai", "gpt-4o-mini", "openai_parallel_tool_calls.json", "chatcmpl-fixture-parallel", "gpt-4o-mini-2024-07-18"),
    (
        "anthropic",
        "claude-haiku-4-5",
        "anthropic_stream_tool_use.sse",
        "msg_fixture_stream",
        "claude-3-5-haiku-20241022",
    ),
    ("anthropic", "claude-haiku-4-5", "anthropic_tool_use.json", "msg_fixture_tool_use", "claude-3-5-haiku-20241022"),
    (
        "openai-responses",
        "gpt-5",
        "openai_responses_stream_final_text.sse",
        "resp_0fabc13af1ee0049006a691dffc71481a18c5ea1841dec14ce",
        "gpt-5.5-2026-04-23",
    ),
    (
        "openai-responses",
        "gpt-5",
        "openai_responses_final_text.json",
        "resp_68c42d3fd6a08196bce23d6be960ff8a0e8bc41441c948f6",
        "gpt-5-2025-08-07",
    ),
    ("ollama", "llama3.2", "ollama_stream_tool_calls.ndjson", None, "llama3.2"),  # Ollama's answers carry no id
    ("ollama", "llama3.2", "ollama_tool_calls.json", None, "llama3.2"),
]


def chat_attributes(provider: str, model: str, fixture: str, **config) -> tuple[dict, StandIn]:
    streamed = not fixture.endswith(".json")
    with StandIn(Reply.fixture(fixture)) as server:
        base_url = server.url if provider in ("anthropic", "ollama") else f"{server.url}/v1"
        made = create_provider(provider, model, base_url=base_url, **QUIET)
        run = Run.start("Weather in Paris?", RunConfig(provider=provider, model=model, tools=[WEATHER], **config))
        # an observer makes the call stream, as the app and the CLI do; without one the call is whole
        Agent(made, observers=[lambda _e: None] if streamed else []).model_phase(run)
    assert run.steps, run.error
    (chat,) = [s for s in run_spans(run) if s.name.startswith("chat ")]
    return dict(chat.attributes), server


@pytest.mark.parametrize(("provider", "model", "fixture", "response_id", "answered"), CALLS, ids=[c[2] for c in CALLS])
def test_a_chat_span_names_the_model_that_answered_and_its_response_id(provider, model, fixture, response_id, answered):
    attributes, _ = chat_attributes(provider, model, fixture)
    assert attributes[g.REQUEST_MODEL] == model
    assert attributes.get(g.RESPONSE_MODEL) == answered  # the response's own, not the one asked for
    assert attributes.get(g.RESPONSE_ID) == response_id
    assert attributes[g.REQUEST_STREAM] is (not fixture.endswith(".json"))
    assert attributes[g.SERVER_ADDRESS] == "127.0.0.1" and isinstance(attributes[g.SERVER_PORT], int)


def test_the_port_an_address_implies_is_written_with_it():
    from urllib.parse import urlsplit

    from agentcore.telemetry.export import _port  # the rule itself, for the schemes no test server has

    assert _port(urlsplit("https://api.openai.com/v1/chat/completions")) == 443
    assert _port(urlsplit("http://llm.internal/v1")) == 80
    assert _port(urlsplit("http://127.0.0.1:8080/v1")) == 8080


def test_cache_writes_go_under_the_new_name_and_the_old_one_the_effort_sent_and_a_compacted_request():
    attributes, server = chat_attributes(
        "openai", "gpt-5.6-luna", "openai_parallel_tool_calls.json", policies=ContextPolicies(drop_turns_older_than=1)
    )
    assert server.seen[0].body["reasoning_effort"] == "none"  # tools on Chat Completions: effort none, sent
    assert attributes[g.REQUEST_REASONING_LEVEL] == "none"
    assert g.CACHE_WRITE == "gen_ai.usage.cache_write.input_tokens"
    assert attributes[g.CACHE_WRITE] == attributes[g.CACHE_CREATION]
    assert g.CONVERSATION_COMPACTED not in attributes  # one user turn: nothing older to leave out


def test_a_request_the_policies_compacted_is_marked_so_and_only_then():
    from agentcore.providers.scripted import ScriptedProvider
    from agentcore.toolbox import get_tools

    config = RunConfig(model="research", max_steps=6, policies=ContextPolicies(drop_turns_older_than=1))
    run = Run.start("Research why agents get expensive and what helps.", config)
    Agent(ScriptedProvider("research"), get_tools(["search_notes", "read_note"])).run(run)
    marked = [s.attributes.get(g.CONVERSATION_COMPACTED) for s in run_spans(run) if s.name.startswith("chat ")]
    compacted = [s.sent is not None and "dropped" in s.sent.marks(s.message_count) for s in run.steps]
    assert any(compacted) and marked == [True if c else None for c in compacted]

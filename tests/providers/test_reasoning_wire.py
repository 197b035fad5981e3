"""Reasoning on the wire: each provider's reasoning is kept exactly and goes back unchanged to it, and only to it.

Every round trip talks HTTP to a stand-in server on 127.0.0.1 that answers with recorded payloads
(tests/fixtures/wire) and keeps the requests, so the test reads exactly what the next request carried.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.stand_in import WIRE, Reply, StandIn

from agentcore.cli.main import main
from agentcore.loop import Agent
from agentcore.messages import (
    MESSAGE_LIST,
    AssistantMessage,
    ReasoningPart,
    ToolMessage,
    Usage,
    UserMessage,
    reasoning_not_sent,
    reasoning_note,
    reasoning_sent,
)
from agentcore.providers import create_provider
from agentcore.providers.anthropic import build_body as anthropic_body
from agentcore.providers.anthropic import parse_usage as anthropic_usage
from agentcore.providers.base import ModelRequest, Settings
from agentcore.providers.ollama import build_body as ollama_body
from agentcore.run import Run, RunConfig
from agentcore.store.runs import Store
from agentcore.tools import tool
from agentcore.transcript import load, save

QUIET = {"api_key": "test-key-PLANTED", "retry_base": 0.001, "retry_cap": 0.002}


def sse_events(name: str) -> list[dict[str, Any]]:
    """The JSON payloads of a fixture's SSE events, read independently of the adapters."""
    text = (WIRE / name).read_text(encoding="utf-8")
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def anthropic_reasoning_blocks(name: str) -> list[dict[str, Any]]:
    """The thinking and redacted_thinking blocks a fixture holds, as the API means them to be sent back."""
    if name.endswith(".json"):
        blocks = json.loads((WIRE / name).read_text(encoding="utf-8"))["content"]
        return [b for b in blocks if b["type"] in ("thinking", "redacted_thinking")]
    blocks: dict[int, dict[str, Any]] = {}
    for event in sse_events(name):
        if event["type"] == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
        elif event["type"] == "content_block_delta" and event["delta"]["type"] == "thinking_delta":
            blocks[event["index"]]["thinking"] += event["delta"]["thinking"]
        elif event["type"] == "content_block_delta" and event["delta"]["type"] == "signature_delta":
            blocks[event["index"]]["signature"] = event["delta"]["signature"]
    return [blocks[i] for i in sorted(blocks) if blocks[i]["type"] in ("thinking", "redacted_thinking")]


@tool
def get_user_country() -> str:
    """The country of the user."""
    return "Mexico"


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"{city}: 21 C"


# -- Anthropic ------------------------------------------------------------------------------


def test_anthropic_thinking_goes_back_verbatim_before_the_tool_result():
    with StandIn(
        Reply.fixture("anthropic_thinking_tool_use.json"), Reply.fixture("anthropic_thinking_final_text.json")
    ) as server:
        provider = create_provider("anthropic", "claude-sonnet-4-0", base_url=server.url, **QUIET)
        config = RunConfig(provider="anthropic", tools=[get_user_country.spec()], thinking_budget=3000)
        run = Agent(provider, [get_user_country]).run(Run.start("What is the largest city in my country?", config))
    assert run.stop_reason == "answer"
    first, second = server.bodies()
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 3000} and first["max_tokens"] > 3000
    turn, results = second["messages"][1], second["messages"][2]
    expected = anthropic_reasoning_blocks("anthropic_thinking_tool_use.json")
    assert turn["content"][: len(expected)] == expected  # first in the turn, byte for byte
    assert [b["type"] for b in turn["content"]] == ["thinking", "text", "tool_use"]
    assert results["content"][0]["type"] == "tool_result" and results["content"][0]["content"] == "Mexico"
    assert run.messages[1].reasoning[0].signature == expected[0]["signature"]


@pytest.mark.parametrize(
    "fixture",
    [
        "anthropic_redacted_thinking.json",
        "anthropic_stream_thinking.sse",
        "anthropic_stream_redacted_thinking.sse",
    ],
)
def test_anthropic_thinking_and_redacted_thinking_round_trip_streamed_or_not(fixture):
    with StandIn(Reply.fixture(fixture), Reply.fixture("anthropic_thinking_final_text.json")) as server:
        provider = create_provider("anthropic", "claude-sonnet-4-5", base_url=server.url, **QUIET)
        ask = ModelRequest(messages=(UserMessage(content="Hello?"),), settings=Settings(thinking_budget=2048))
        streamed: list[str] = []
        first = provider.complete(ask, streamed.append if fixture.endswith(".sse") else None)
        follow = ModelRequest(
            messages=(*ask.messages, first.message, UserMessage(content="And then?")), settings=ask.settings
        )
        provider.complete(follow)
    expected = anthropic_reasoning_blocks(fixture)
    assert expected and len(first.message.reasoning) == len(expected)
    sent = server.bodies()[1]["messages"][1]["content"]
    assert sent[: len(expected)] == expected
    if fixture.endswith(".sse"):
        assert "".join(streamed) == (first.message.content or "")  # thinking is not streamed as answer text


def test_anthropic_thinking_settings_and_counted_thinking_tokens():
    ask = (UserMessage(content="Hi"),)
    body = anthropic_body("m", ModelRequest(messages=ask, settings=Settings(thinking_budget=4096, max_tokens=1000)))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096} and body["max_tokens"] == 5096
    adaptive = anthropic_body("m", ModelRequest(messages=ask, settings=Settings(reasoning_effort="high")))
    assert adaptive["thinking"] == {"type": "adaptive"} and adaptive["output_config"] == {"effort": "high"}
    assert "thinking" not in anthropic_body("m", ModelRequest(messages=ask))
    usage = anthropic_usage({"input_tokens": 10, "output_tokens": 50, "output_tokens_details": {"thinking_tokens": 30}})
    assert usage.reasoning_tokens == 30 and usage.output_tokens == 50


# -- Ollama ---------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_ollama_thinking_comes_back_as_the_assistant_thinking(stream):
    fixture = "ollama_stream_thinking_tool_call.ndjson" if stream else "ollama_thinking_tool_calls.json"
    if stream:
        thinking = "".join(json.loads(line)["message"].get("thinking", "") for line in (WIRE / fixture).open())
    else:
        thinking = json.loads((WIRE / fixture).read_text())["message"]["thinking"]
    with StandIn(Reply.fixture(fixture), Reply.fixture("ollama_final_text.json")) as server:
        provider = create_provider("ollama", "qwen3", base_url=server.url, **QUIET)
        ask = ModelRequest(messages=(UserMessage(content="Go"),), settings=Settings(reasoning_effort="high"))
        first = provider.complete(ask, (lambda _t: None) if stream else None)
        results = tuple(ToolMessage(tool_call_id=c.id, name=c.name, content="ok") for c in first.message.tool_calls)
        provider.complete(ModelRequest(messages=(*ask.messages, first.message, *results), settings=ask.settings))
    assert first.message.reasoning == (ReasoningPart(provider="ollama", text=thinking),)
    ask_body, follow_body = server.bodies()
    assert ask_body["think"] == "high"
    assert follow_body["messages"][1]["thinking"] == thinking
    assert follow_body["messages"][1]["tool_calls"]


def test_ollama_think_follows_the_reasoning_settings():
    ask = (UserMessage(content="Hi"),)
    think = [
        ollama_body("m", ModelRequest(messages=ask, settings=s)).get("think", "unset")
        for s in (
            Settings(),
            Settings(thinking_budget=100),
            Settings(reasoning_effort="low"),
            Settings(reasoning_effort="none"),
        )
    ]
    assert think == ["unset", True, "low", False]


# -- a run that moves to another provider ---------------------------------------------------


def test_a_run_that_moves_to_another_provider_keeps_its_reasoning_but_does_not_send_it(tmp_path, capsys):
    with StandIn(Reply.fixture("anthropic_thinking_tool_use.json")) as claude:
        anthropic = create_provider("anthropic", "claude-sonnet-4-0", base_url=claude.url, **QUIET)
        config = RunConfig(provider="anthropic", tools=[get_user_country.spec()])
        run = Run.start("What is the largest city in my country?", config)
        Agent(anthropic, [get_user_country]).step(run)  # the model asks, the tool answers
    with StandIn(Reply.fixture("openai_responses_final_text.json")) as openai:
        responses = create_provider("openai-responses", "gpt-5", base_url=openai.url, **QUIET)
        run.config = run.config.model_copy(update={"provider": "openai-responses"})
        Agent(responses, [get_user_country]).step(run)
    assert run.stop_reason == "answer"
    sent = json.dumps(openai.bodies()[0])
    assert '"reasoning"' not in sent and "signature" not in sent and "thinking" not in sent
    kinds = [item.get("type", item.get("role")) for item in openai.bodies()[0]["input"]]
    assert kinds == ["user", "assistant", "function_call", "function_call_output"]
    kept = run.messages[1].reasoning
    assert kept and kept[0].provider == "anthropic"  # still in the run, for the page to show
    assert reasoning_not_sent(run.messages, "openai-responses") == list(kept)
    assert reasoning_not_sent(run.messages, "anthropic") == []
    assert reasoning_sent(run.messages, "anthropic") == list(kept) and not reasoning_sent(run.messages, "ollama")
    note = reasoning_note(run.messages, "openai-responses")
    assert note is not None and "anthropic" in note and "not sent to openai-responses" in note
    # the CLI says so too when it writes the run as another provider's request
    path = tmp_path / "moved.json"
    save(run, path)
    capsys.readouterr()
    assert main(["export", str(path), "--format", "openai-responses"]) == 0
    out, err = capsys.readouterr()
    assert all(item.get("type") != "reasoning" for item in json.loads(out)["input"])
    assert "not sent to openai-responses" in err
    assert main(["export", str(path), "--format", "anthropic"]) == 0
    out, err = capsys.readouterr()
    assert kept[0].signature in out and "not sent" not in err


def test_responses_reasoning_is_not_sent_to_anthropic():
    part = ReasoningPart(provider="openai-responses", id="rs_1", summary=("s",), encrypted_content="gAAA")
    turn = AssistantMessage(content="Hi.", reasoning=(part,))
    body = anthropic_body("m", ModelRequest(messages=(UserMessage(content="Hi"), turn, UserMessage(content="?"))))
    assert body["messages"][1]["content"] == [{"type": "text", "text": "Hi."}]


# -- kept in transcripts, the database and exports -----------------------------------------


def reasoning_run() -> Run:
    parts = (
        ReasoningPart(provider="anthropic", text="Let me think.", signature="EqEE+/sig=="),
        ReasoningPart(provider="anthropic", redacted="EvgF+/data=="),
        ReasoningPart(provider="openai-responses", id="rs_9", summary=("a", "b"), encrypted_content="gAAAAB-x_y"),
    )
    run = Run.start("Hi", RunConfig(provider="anthropic", thinking_budget=2048, reasoning_effort="low"))
    run.messages.append(AssistantMessage(content="Hello.", reasoning=parts))
    return run


def test_reasoning_survives_the_transcript_and_the_database(tmp_path):
    run = reasoning_run()
    save(run, tmp_path / "t.json")
    assert load(tmp_path / "t.json").messages == run.messages
    store = Store(tmp_path / "runs.db")
    store.save_run(run)
    loaded = store.load_run(run.id)
    assert loaded.messages == run.messages
    assert (loaded.config.thinking_budget, loaded.config.reasoning_effort) == (2048, "low")


def test_a_message_without_reasoning_is_written_as_before():
    assert "reasoning" not in AssistantMessage(content="x").data
    assert "reasoning_tokens" not in Usage(output_tokens=3).model_dump(mode="json")
    assert "thinking_budget" not in RunConfig().model_dump(mode="json")
    assert MESSAGE_LIST.validate_python([{"role": "assistant", "content": "x"}])[0].reasoning == ()
    assert (Usage(reasoning_tokens=2) + Usage(reasoning_tokens=3)).reasoning_tokens == 5


def test_imported_anthropic_thinking_blocks_are_kept():
    from agentcore.importers import from_messages

    body = json.loads((WIRE / "anthropic_thinking_tool_use.json").read_text())
    imported = from_messages(
        [
            {"role": "user", "content": "Where?"},
            {"role": "assistant", "content": body["content"]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": body["content"][2]["id"], "content": "Mexico"}],
            },
        ]
    )
    turn = imported.messages[1]
    assert imported.config.provider == "anthropic"
    assert turn.reasoning == (
        ReasoningPart(
            provider="anthropic", text=body["content"][0]["thinking"], signature=body["content"][0]["signature"]
        ),
    )


def _sse(*events: Any) -> Reply:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return Reply(body.encode(), "text/event-stream")


@pytest.mark.parametrize(
    ("name", "reply"),
    [
        ("anthropic", _sse({"type": "content_block_delta", "index": 0, "delta": "x"}, {"type": "message_stop"})),
        ("anthropic", _sse({"type": "message_start", "message": "x"}, {"type": "message_stop"})),
        (
            "anthropic",
            _sse({"type": "content_block_start", "index": "a", "content_block": 5}, {"type": "message_stop"}),
        ),
        (
            "anthropic",
            _sse({"type": "message_delta", "delta": [], "usage": {"output_tokens": "many"}}, {"type": "message_stop"}),
        ),
        ("ollama", Reply(b'{"message": "x", "done": true, "eval_count": -3}\n', "application/x-ndjson")),
        (
            "openai-responses",
            _sse({"type": "response.completed", "response": {"output": [], "usage": {"input_tokens": "x"}}}),
        ),
    ],
)
def test_streamed_fields_of_the_wrong_type_are_taken_as_absent(name, reply):
    with StandIn(reply) as server:
        provider = create_provider(name, "m", base_url=server.url, **QUIET)
        result = provider.complete(ModelRequest(messages=(UserMessage(content="Hi"),)), lambda _t: None)
    assert result.message.content == "" and result.usage == Usage()


def test_extended_thinking_mid_loop_on_a_turn_without_anthropic_thinking_is_refused_before_sending():
    from agentcore.errors import MessageListError

    with StandIn(Reply.fixture("openai_responses_reasoning_function_call.json")) as openai:
        responses = create_provider("openai-responses", "gpt-5", base_url=openai.url, **QUIET)
        run = Run.start("Plan a poem", RunConfig(provider="openai-responses", tools=[get_user_country.spec()]))
        Agent(responses, [get_user_country]).step(run)  # reasoning + a function call, answered by the tool
    assert run.next_phase == "model" and run.messages[1].reasoning
    with StandIn(Reply.fixture("anthropic_thinking_final_text.json")) as claude:
        anthropic = create_provider("anthropic", "claude-sonnet-4-5", base_url=claude.url, **QUIET)
        thinking = Agent(anthropic, [get_user_country], settings=Settings(thinking_budget=2048))
        with pytest.raises(MessageListError, match="own thinking block"):
            thinking.step(run)
        assert claude.seen == []  # nothing was sent, nothing paid for
        Agent(anthropic, [get_user_country]).step(run)  # without thinking the same turn goes on
    assert run.stop_reason == "answer" and len(claude.seen) == 1

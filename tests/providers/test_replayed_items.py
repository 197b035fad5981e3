"""A model's turn goes back as the model produced it: the Responses API's item ids, order and phase, and the
arguments string byte for byte on both OpenAI APIs.

The fixtures are written from the recorded PotatoLand exchange (a gpt-5.5 tool turn of reasoning, a commentary
message and a function call, then the follow-up request that was accepted) and a recorded Chat Completions call
with compact arguments.
"""

from __future__ import annotations

import json
from typing import Any

from support.stand_in import WIRE, Reply, StandIn

from agentcore import transcript
from agentcore.loop import Agent
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage, parse_arguments
from agentcore.providers import create_provider
from agentcore.providers.openai_responses import messages_to_wire, parse_items
from agentcore.run import Run, RunConfig
from agentcore.tools import tool

QUIET = {"api_key": "sk-test-PLANTED-000000000000", "retry_base": 0.001, "retry_cap": 0.002}
COMPACT = '{"city":"Edinburgh","country":"UK","units":"c"}'


@tool
def get_capital(country: str) -> str:
    """The capital of a country."""
    return "Potato City"


@tool
def get_weather(city: str, country: str = "", units: str = "c") -> str:
    """The weather in a city."""
    return "12 C"


def two_model_calls(name: str, model: str, tools: list[Any], prompt: str, *replies: Reply) -> list[Any]:
    """A run's first step and the model call after it, against a stand-in; the request bodies it received."""
    with StandIn(*replies) as server:
        agent = Agent(create_provider(name, model, base_url=f"{server.url}/v1", **QUIET), tools)
        run = Run.start(prompt, RunConfig(provider=name, model=model))
        agent.step(run)
        agent.model_phase(run)
    return [s.body for s in server.seen]


def test_a_responses_turn_goes_back_with_its_ids_phase_and_the_models_argument_text():
    bodies = two_model_calls(
        "openai-responses",
        "gpt-5.5",
        [get_capital],
        "What is the capital of PotatoLand?",
        Reply.fixture("openai_responses_commentary_function_call.json"),
        Reply.fixture("openai_responses_final_text.json"),
    )
    expected = json.loads((WIRE / "openai_responses_followup_input.json").read_text(encoding="utf-8"))
    assert bodies[1]["input"] == expected


def test_a_streamed_responses_turn_goes_back_the_same_way():
    items = [
        json.loads(line[5:])["item"]
        for line in (WIRE / "openai_responses_stream_reasoning_function_call.sse").open(encoding="utf-8")
        if line.startswith("data:") and '"response.output_item.done"' in line
    ]
    with StandIn(
        Reply.fixture("openai_responses_stream_reasoning_function_call.sse"),
        Reply.fixture("openai_responses_final_text.json"),
    ) as server:
        agent = Agent(
            create_provider("openai-responses", "gpt-5.5", base_url=f"{server.url}/v1", **QUIET), [get_capital]
        )
        agent.observers.append(lambda event: None)  # an observer: the model's text is streamed
        run = Run.start("What is the capital of PotatoLand?", RunConfig(provider="openai-responses", model="gpt-5.5"))
        agent.step(run)
        agent.model_phase(run)
    sent = server.seen[1].body["input"][1:4]
    assert [(s["type"], s["id"]) for s in sent] == [(i["type"], i["id"]) for i in items]
    assert (
        sent[1]["phase"] == "commentary" and sent[2]["arguments"] == items[2]["arguments"] == '{"country":"PotatoLand"}'
    )


def test_items_go_back_in_the_models_order_when_reasoning_comes_between_calls():
    output = [
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e1"},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_capital",
            "arguments": '{"country":"A"}',
        },
        {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "e2"},
        {
            "type": "function_call",
            "id": "fc_2",
            "call_id": "call_2",
            "name": "get_capital",
            "arguments": '{"country":"B"}',
        },
    ]
    sent = messages_to_wire([UserMessage(content="Capitals?"), parse_items(output)])[1:]
    assert [s["id"] for s in sent] == ["rs_1", "fc_1", "rs_2", "fc_2"]
    assert [s["arguments"] for s in sent if s["type"] == "function_call"] == ['{"country":"A"}', '{"country":"B"}']


def test_a_turn_edited_since_goes_back_as_edited_without_the_models_ids_for_what_changed():
    turn = parse_items(json.loads((WIRE / "openai_responses_commentary_function_call.json").read_text())["output"])
    edited_text = turn.model_copy(update={"content": "Looking it up."})
    sent = messages_to_wire([UserMessage(content="Capital?"), edited_text])
    assert {"role": "assistant", "content": "Looking it up."} in sent and "msg_fixture0001commentary" not in str(sent)
    call = turn.tool_calls[0].model_copy(update={"arguments": {"country": "Potatia"}})  # a person's edit
    sent = messages_to_wire([UserMessage(content="Capital?"), turn.model_copy(update={"tool_calls": (call,)})])
    assert sent[-1]["id"] == "fc_fixture0001call" and sent[-1]["arguments"] == '{"country": "Potatia"}'


def test_chat_completions_sends_the_models_own_argument_string_back():
    bodies = two_model_calls(
        "openai",
        "gpt-4o",
        [get_weather],
        "Weather in Edinburgh?",
        Reply.fixture("openai_tool_call_compact_arguments.json"),
    )
    echoed = bodies[1]["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert echoed == COMPACT  # not json.dumps' '{"city": "Edinburgh", ...}'


def test_the_models_text_is_kept_only_where_json_would_be_written_otherwise():
    assert parse_arguments("c1", "f", COMPACT).written_arguments == COMPACT
    assert parse_arguments("c1", "f", '{"city": "Edinburgh"}').written_arguments is None  # json.dumps writes it so
    assert parse_arguments("c1", "f", COMPACT).arguments_text == COMPACT


def test_transcripts_without_the_models_text_load_and_new_ones_keep_it():
    old = Run.start("Weather?", RunConfig(provider="openai", model="gpt-4o"))
    old.append(AssistantMessage(tool_calls=(ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"}),)))
    data = transcript.to_dict(old)
    assert "written_arguments" not in json.dumps(data) and '"items"' not in json.dumps(data)  # written as before
    assert transcript.from_dict(data).messages == old.messages
    turn = parse_items(json.loads((WIRE / "openai_responses_commentary_function_call.json").read_text())["output"])
    new = Run.start("What is the capital of PotatoLand?", RunConfig(provider="openai-responses", model="gpt-5.5"))
    new.append(turn)
    new.append(ToolMessage(tool_call_id=turn.tool_calls[0].id, name="get_capital", content="Potato City"))
    loaded = transcript.loads(transcript.dumps(new))
    assert loaded.messages == new.messages
    assert messages_to_wire(loaded.messages) == json.loads((WIRE / "openai_responses_followup_input.json").read_text())


def test_a_message_items_parts_go_back_with_every_field_the_model_sent_until_its_text_is_changed():
    logprobs = [{"token": "Hi", "logprob": -0.01, "bytes": [72, 105], "top_logprobs": []}]
    annotations = [
        {"type": "url_citation", "url": "https://example.org", "title": "x", "start_index": 0, "end_index": 2}
    ]
    part = {"type": "output_text", "text": "Hi", "annotations": annotations, "logprobs": logprobs}
    item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [part]}
    message = parse_items([item])
    again = transcript.from_dict(transcript.to_dict(Run(messages=[UserMessage(content="q"), message]))).messages[1]
    (sent,) = [w for w in messages_to_wire([again]) if w.get("type") == "message"]
    assert sent["content"] == [part]
    edited = again.model_copy(
        update={"content": "Hello", "items": (again.items[0].model_copy(update={"text": "Hello"}),)}
    )
    (changed,) = [w for w in messages_to_wire([edited]) if w.get("type") == "message"]
    assert changed["content"] == [{"type": "output_text", "text": "Hello", "annotations": []}]


def test_a_part_nested_past_the_readers_limit_is_not_kept_and_the_text_still_goes_back():
    deep: Any = "x"
    for _ in range(200):
        deep = [deep]
    item = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Hi", "logprobs": deep}],
    }
    message = parse_items([item])
    assert message.content == "Hi" and message.items[0].parts == ()
    (sent,) = [w for w in messages_to_wire([message]) if w.get("type") == "message"]
    assert sent["content"] == [{"type": "output_text", "text": "Hi", "annotations": []}]

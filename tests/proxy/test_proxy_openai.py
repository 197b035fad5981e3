"""The openai SDK through the proxy: Chat Completions and Responses, whole and streamed, each call a stored step."""

from __future__ import annotations

import threading

import pytest
from support.proxy_rig import KEY
from support.stand_in import WIRE, Reply, dripping

openai = pytest.importorskip("openai", reason="the openai package is not installed (pip install '.[test]')")


def client(rig):
    return openai.OpenAI(api_key=KEY, base_url=f"{rig.url}/v1", http_client=rig.tap.client(), max_retries=0)


def test_chat_completions_whole_and_streamed_are_steps_of_one_run(rig_of, capsys):
    rig = rig_of(Reply.fixture("openai_parallel_tool_calls.json"), Reply.fixture("openai_stream_text.sse"))
    sdk = client(rig)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    messages = [{"role": "user", "content": "Weather in Paris and London?"}]
    first = sdk.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
    calls = first.choices[0].message.tool_calls
    assert [c.function.name for c in calls] == ["get_weather", "get_weather"]
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages += [{"role": "tool", "tool_call_id": c.id, "content": "sunny"} for c in calls]
    text = "".join(
        chunk.choices[0].delta.content or ""
        for chunk in sdk.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools, stream=True)
        if chunk.choices
    )
    assert text == "It is sunny in Paris."
    [run] = rig.runs()
    assert len(run.steps) == 2
    assert [t.name for t in run.steps[0].tool_runs] == ["get_weather", "get_weather"]
    assert run.messages[-1].content == "It is sunny in Paris."
    assert run.stop_reason == "answer"
    assert run.steps[0].usage.input_tokens > 0
    rig.assert_faithful()
    assert {k.lower(): v for k, v in rig.upstream.seen[0].headers.items()}["authorization"] == f"Bearer {KEY}"
    out = capsys.readouterr()
    rig.assert_no_key(out.out, out.err)


def test_responses_linked_by_previous_response_id_whole_then_streamed(rig_of):
    rig = rig_of(
        Reply.fixture("openai_responses_reasoning_function_call.json"),
        Reply.fixture("openai_responses_stream_final_text.sse"),
    )
    sdk = client(rig)
    tools = [{"type": "function", "name": "update_plan", "parameters": {"type": "object", "properties": {}}}]
    first = sdk.responses.create(model="gpt-5.5", input="Plan the trip.", tools=tools)
    [call] = [item for item in first.output if item.type == "function_call"]
    output = [{"type": "function_call_output", "call_id": call.call_id, "output": "plan updated"}]
    stream = sdk.responses.create(
        model="gpt-5.5", previous_response_id=first.id, input=output, tools=tools, stream=True
    )
    final = [event for event in stream if event.type == "response.completed"]
    assert final and final[0].response.output_text
    [run] = rig.runs()
    assert len(run.steps) == 2
    assert [(t.name, t.is_error) for t in run.steps[0].tool_runs] == [("update_plan", False)]
    assert run.messages[-1].content == final[0].response.output_text
    rig.assert_faithful()


def test_a_request_that_continues_no_conversation_starts_a_run(rig_of):
    rig = rig_of(Reply.chat("one"), Reply.chat("two"))
    sdk = client(rig)
    sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "first question"}])
    sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "another question"}])
    runs = rig.runs()
    assert [len(r.steps) for r in runs] == [1, 1]
    assert [r.messages[-1].content for r in runs] == ["one", "two"]


def test_a_streamed_reply_reaches_the_client_while_the_upstream_is_still_sending(rig_of):
    text = (WIRE / "openai_stream_text.sse").read_bytes()
    events = text.split(b"\n\n")
    go_on = threading.Event()
    upstream = dripping(b"\n\n".join(events[:2]) + b"\n\n", b"\n\n".join(events[2:]), go_on)
    rig = rig_of(upstream=upstream)
    plain = openai.OpenAI(api_key=KEY, base_url=f"{rig.url}/v1", max_retries=0)  # no tap: it reads replies whole
    stream = plain.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Weather?"}], stream=True
    )
    pieces = []
    for chunk in stream:
        pieces.append(chunk.choices[0].delta.content or "" if chunk.choices else "")
        if "It is " in pieces:
            go_on.set()  # the upstream sends the rest only now: the first part came through on its own
    assert "".join(pieces) == "It is sunny in Paris."
    assert upstream.waited_out is False
    [run] = rig.runs()
    assert run.messages[-1].content == "It is sunny in Paris."


def test_a_stateless_responses_conversation_sent_whole_each_time_is_one_run(rig_of):
    # as Codex sends it: store false, the whole input again with the reply's items (reasoning, commentary, call)
    rig = rig_of(
        Reply.fixture("openai_responses_commentary_function_call.json"),
        Reply.fixture("openai_responses_final_text.json"),
    )
    sdk = client(rig)
    tools = [{"type": "function", "name": "get_capital", "parameters": {"type": "object", "properties": {}}}]
    items: list = [{"role": "user", "content": "What is the capital of PotatoLand?"}]
    first = sdk.responses.create(model="gpt-5.5", instructions="Narrate.", input=items, tools=tools, store=False)
    items += [item.model_dump(exclude_none=True) for item in first.output]
    [call] = [item for item in first.output if item.type == "function_call"]
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "Spudville"})
    second = sdk.responses.create(model="gpt-5.5", instructions="Narrate.", input=items, tools=tools, store=False)
    [run] = rig.runs()
    assert len(run.steps) == 2
    assert run.messages[0].content == "Narrate."
    assert [(t.name, t.tool_call_id) for t in run.steps[0].tool_runs] == [("get_capital", call.call_id)]
    assert [m.content for m in run.messages if m.role == "tool"] == ["Spudville"]
    assert run.messages[-1].content == second.output_text
    rig.assert_faithful()


def test_conversations_sent_at_once_each_keep_their_own_run(rig_of):
    rig = rig_of(Reply.chat("an answer"))
    sdk = client(rig)
    asks = [f"question {k}" for k in range(6)]

    def converse(ask: str) -> None:
        messages = [{"role": "user", "content": ask}]
        reply = sdk.chat.completions.create(model="m", messages=messages)
        messages += [reply.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": f"{ask}?"}]
        sdk.chat.completions.create(model="m", messages=messages)

    threads = [threading.Thread(target=converse, args=(ask,)) for ask in asks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    runs = rig.runs()
    assert sorted(run.messages[0].content for run in runs) == asks
    assert all(len(run.steps) == 2 and run.messages[2].content == f"{run.messages[0].content}?" for run in runs)

"""The anthropic SDK through the proxy, streamed, with tools: two calls, one run, the key never kept."""

from __future__ import annotations

import importlib.util

import httpx
import pytest
from support.proxy_rig import KEY
from support.stand_in import Reply

httpx2 = pytest.importorskip("httpx2", reason="the anthropic SDK's HTTP package is not installed")
if importlib.util.find_spec("anthropic") is None:  # imported by the test that calls it: a second and a half to import
    pytest.skip("the anthropic package is not installed (pip install '.[test]')", allow_module_level=True)

TOOLS = [
    {
        "name": "get_weather",
        "description": "The weather in a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}},
    }
]


def test_streamed_tool_use_then_answer_are_one_run(rig_of, capsys):
    rig = rig_of(Reply.fixture("anthropic_stream_tool_use.sse"), Reply.fixture("anthropic_stream_thinking.sse"))
    import anthropic

    sdk = anthropic.Anthropic(api_key=KEY, base_url=rig.url, http_client=rig.tap.client(httpx2), max_retries=0)
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    with sdk.messages.stream(
        model="claude-haiku-4-5", max_tokens=500, system="Be brief.", messages=messages, tools=TOOLS
    ) as s:
        first = s.get_final_message()
    [use] = [b for b in first.content if b.type == "tool_use"]
    assert use.input == {"city": "Paris", "unit": "celsius"}
    messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]})
    messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "18 C"}]})
    with sdk.messages.stream(
        model="claude-haiku-4-5", max_tokens=500, system="Be brief.", messages=messages, tools=TOOLS
    ) as s:
        second = s.get_final_message()
    answer = "".join(b.text for b in second.content if b.type == "text")
    [run] = rig.runs()
    assert len(run.steps) == 2
    assert run.messages[0].content == "Be brief."
    assert [(t.name, t.tool_call_id) for t in run.steps[0].tool_runs] == [("get_weather", use.id)]
    assert run.messages[-1].content == answer
    assert (run.steps[0].usage.input_tokens, run.steps[0].usage.cache_read_tokens) == (510, 100)
    rig.assert_faithful()
    headers = {k.lower(): v for k, v in rig.upstream.seen[1].headers.items()}
    assert KEY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))
    assert not any(KEY in value for value in rig.runs()[0].steps[0].wire.request_headers.values())
    out = capsys.readouterr()
    rig.assert_no_key(out.out, out.err)


def test_images_in_a_request_are_named_and_the_conversation_still_reads(rig_of):
    rig = rig_of(Reply.fixture("anthropic_tool_use.json"), Reply.fixture("anthropic_thinking_final_text.json"))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "What is in this picture?"}, image]}]
    body = {"model": "claude-haiku-4-5", "max_tokens": 100, "tools": TOOLS, "messages": messages}
    first = httpx.post(f"{rig.url}/v1/messages", json=body, headers={"x-api-key": KEY}).json()
    uses = [b for b in first["content"] if b["type"] == "tool_use"]
    messages.append({"role": "assistant", "content": first["content"]})
    results = [
        {"type": "tool_result", "tool_use_id": use["id"], "content": [{"type": "text", "text": "a cat"}, image]}
        for use in uses
    ]
    messages.append({"role": "user", "content": results})
    assert httpx.post(f"{rig.url}/v1/messages", json=body, headers={"x-api-key": KEY}).status_code == 200
    [run] = rig.runs()
    assert len(run.steps) == 2
    assert run.messages[0].content == "What is in this picture?\n[image]"
    assert [m.content for m in run.messages if m.role == "tool"] == ["a cat\n[image]", "a cat\n[image]"]

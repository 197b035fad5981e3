"""The ollama client through the proxy: a streamed tool call (NDJSON), its result, a whole answer; one run."""

from __future__ import annotations

import pytest
from support.stand_in import Reply

ollama = pytest.importorskip("ollama", reason="the ollama package is not installed (pip install '.[test]')")


def test_a_streamed_tool_call_and_its_result_are_one_run(rig_of):
    rig = rig_of(Reply.fixture("ollama_stream_tool_calls.ndjson"), Reply.fixture("ollama_final_text.json"))
    client = ollama.Client(host=rig.url)
    messages = [{"role": "user", "content": "Weather in Tokyo?"}]
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    parts = list(client.chat(model="llama3.2", messages=messages, tools=tools, stream=True))
    calls = [c for p in parts for c in p.message.tool_calls or []]
    assert [(c.function.name, c.function.arguments) for c in calls] == [("get_weather", {"city": "Tokyo"})]
    text = "".join(p.message.content or "" for p in parts)
    messages.append({"role": "assistant", "content": text, "tool_calls": [c.model_dump() for c in calls]})
    messages.append({"role": "tool", "tool_name": "get_weather", "content": "11 C"})
    answer = client.chat(model="llama3.2", messages=messages, tools=tools, stream=False)
    [run] = rig.runs()
    assert len(run.steps) == 2
    assert [(t.name, t.is_error) for t in run.steps[0].tool_runs] == [("get_weather", False)]
    assert [m.content for m in run.messages if m.role == "tool"] == ["11 C"]
    assert run.messages[-1].content == answer.message.content
    assert run.steps[1].usage.input_tokens == 94
    for step, request in zip(run.steps, rig.upstream.seen, strict=True):
        assert step.wire.request == request.body

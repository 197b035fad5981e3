"""The cost page shows the embedded model's cache reads: the prompt tokens a step did not evaluate again."""

from __future__ import annotations

import json

import pytest
from support.embedded import embedded_model

from agentcore import toolbox
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage
from agentcore.providers.base import ModelRequest, Settings
from agentcore.run import Run, RunConfig
from agentcore.steps import StepRecord

local, _ = embedded_model()

pytestmark = pytest.mark.slow  # the real model


def test_the_cost_page_shows_the_local_models_cache_reads(open_app):
    from ui.state import Session

    provider = local.LocalProvider()
    call = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
    messages = [
        UserMessage(content="What is the weather in Paris?"),
        AssistantMessage(tool_calls=(call,)),
        ToolMessage(tool_call_id="call_1", name="get_weather", content='{"temperature": 18.5}'),
    ]
    tools = tuple(t.spec() for t in toolbox.get_tools("get_weather"))
    provider.load().llama.forget()
    steps = []
    for index, upto in ((1, 1), (2, 3)):
        request = ModelRequest(messages=tuple(messages[:upto]), tools=tools, settings=Settings(max_tokens=16))
        usage = provider.complete(request).usage
        steps.append(StepRecord(index=index, usage=usage, message_count=upto))
    run = Run(config=RunConfig(provider="local", model=provider.model), messages=messages, steps=steps)
    read = [s.usage.cache_read_tokens for s in steps]
    assert read[0] == 0 and read[1] > 0
    session = Session()
    session.add_run(run)
    at = open_app("views/cost.py", session=session)
    chart = next(
        json.loads(c.proto.spec)
        for c in at.get("plotly_chart")
        if "Cached tokens" in json.dumps(json.loads(c.proto.spec)["layout"].get("title", ""))
    )
    bars = {trace["name"]: trace["y"] for trace in chart["data"] if trace["type"] == "bar"}
    assert list(bars["cache read (reported)"]) == read
    assert any("did not evaluate again" in c.value for c in at.caption)

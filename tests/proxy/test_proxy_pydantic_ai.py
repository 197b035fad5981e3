"""pydantic-ai's agent runs a three-step tool task through the proxy: one stored run of three steps."""

from __future__ import annotations

import importlib.util
import json

import pytest
from support.proxy_rig import KEY
from support.stand_in import Reply

httpx2 = pytest.importorskip("httpx2", reason="the openai SDK's HTTP package is not installed")
if importlib.util.find_spec("pydantic_ai") is None:  # imported by the test itself: seconds to import
    pytest.skip("pydantic-ai is not installed (pip install '.[test]')", allow_module_level=True)
pytest.importorskip("openai", reason="the openai package is not installed (pip install '.[test]')")


def call(call_id: str, city: str) -> Reply:
    """A Chat Completions reply that calls get_weather for `city`."""
    body = {
        "id": f"chatcmpl-{call_id}",
        "object": "chat.completion",
        "created": 1,
        "model": "stand-in",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49},
    }
    return Reply(json.dumps(body).encode())


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_pydantic_ai_agent_makes_one_run_of_three_steps(rig_of, capsys):
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    rig = rig_of(call("call_1", "Paris"), call("call_2", "London"), Reply.chat("Paris 18 C, London 12 C."))
    provider = OpenAIProvider(base_url=f"{rig.url}/v1", api_key=KEY, http_client=rig.tap.async_client(httpx2))
    model = OpenAIChatModel("gpt-4o-mini", provider=provider)
    agent = Agent(model, instructions="Answer with the weather of each city.")
    seen: list[str] = []

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        seen.append(city)
        return {"Paris": "18 C", "London": "12 C"}[city]

    result = agent.run_sync("Weather in Paris, then London?")
    assert result.output == "Paris 18 C, London 12 C."
    assert seen == ["Paris", "London"]
    [run] = rig.runs()
    assert len(run.steps) == 3
    assert [[(t.name, t.tool_call_id) for t in s.tool_runs] for s in run.steps] == [
        [("get_weather", "call_1")],
        [("get_weather", "call_2")],
        [],
    ]
    assert [m.content for m in run.messages if m.role == "tool"] == ["18 C", "12 C"]
    assert run.stop_reason == "answer"
    rig.assert_faithful()  # each step's bytes are the bytes pydantic-ai's client sent and received
    assert run.steps[-1].wire.response["choices"][0]["message"]["content"] == result.output
    out = capsys.readouterr()
    rig.assert_no_key(out.out, out.err)

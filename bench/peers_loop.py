"""Per-step loop overhead of the peer frameworks; run with bench/.venv/bin/python, never in agentcore's venv.

    bench/.venv/bin/python bench/peers_loop.py langchain 200

Prints one JSON object: the framework, the steps, and the per-step time of each repetition in µs.
Each peer gets its own in-process fake model that returns the same tool calls as agentcore's
scripted replay (see workload.py), so only the framework's own work is measured.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Callable

import workload as w

warnings.filterwarnings("ignore")


def _langchain_model(steps: int):
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage

    class ToolCallingFake(FakeMessagesListChatModel):
        """The listed replies in order; bind_tools is accepted and ignored, as a scripted model should."""

        def bind_tools(self, tools, **kwargs):
            return self

    replies = [
        AIMessage(
            content="",
            tool_calls=[{"name": w.TOOL_NAME, "args": {"key": w.call_key(i)}, "id": w.call_id(i), "type": "tool_call"}],
        )
        for i in range(1, steps + 1)
    ]
    replies.append(AIMessage(content=w.FINAL_ANSWER))
    return ToolCallingFake(responses=replies)


def _langchain_tool():
    from langchain_core.tools import StructuredTool

    return StructuredTool.from_function(w.lookup, name=w.TOOL_NAME, description=w.TOOL_DESCRIPTION)


def langchain_run(steps: int) -> Callable[[], object]:
    """LangChain 1.x `create_agent` over a fake chat model."""
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    agent = create_agent(_langchain_model(steps), tools=[_langchain_tool()])
    config = {"recursion_limit": 2 * steps + 10}
    return lambda: agent.invoke({"messages": [HumanMessage(w.PROMPT)]}, config=config)


def langgraph_run(steps: int) -> Callable[[], object]:
    """LangGraph's prebuilt `create_react_agent` over the same fake chat model."""
    from langchain_core.messages import HumanMessage
    from langgraph.prebuilt import create_react_agent

    agent = create_react_agent(_langchain_model(steps), tools=[_langchain_tool()])
    config = {"recursion_limit": 2 * steps + 10}
    return lambda: agent.invoke({"messages": [HumanMessage(w.PROMPT)]}, config=config)


def pydantic_ai_run(steps: int) -> Callable[[], object]:
    """pydantic-ai's Agent over a FunctionModel that scripts each turn."""
    from pydantic_ai import Agent, Tool
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.usage import UsageLimits

    turn = 0

    def play(messages, info):
        nonlocal turn
        turn += 1
        if turn <= steps:
            return ModelResponse(parts=[ToolCallPart(w.TOOL_NAME, {"key": w.call_key(turn)}, w.call_id(turn))])
        return ModelResponse(parts=[TextPart(w.FINAL_ANSWER)])

    agent = Agent(
        FunctionModel(play),
        tools=[Tool(w.lookup, takes_ctx=False, name=w.TOOL_NAME, description=w.TOOL_DESCRIPTION)],
    )
    limits = UsageLimits(request_limit=None)

    def go():
        nonlocal turn
        turn = 0
        return agent.run_sync(w.PROMPT, usage_limits=limits)

    return go


PEERS = {"langchain": langchain_run, "langgraph": langgraph_run, "pydantic-ai": pydantic_ai_run}


def measure(name: str, steps: int, reps: int) -> list[float]:
    """Per-step µs of `reps` runs, each with a fresh agent and model; one warm-up run first."""
    PEERS[name](steps)()  # warm-up: imports, schema building, first-call caches
    out = []
    for _ in range(reps):
        run = PEERS[name](steps)
        started = time.perf_counter()
        result = run()
        out.append((time.perf_counter() - started) * 1e6 / steps)
        _check(name, result, steps)
    return out


def _check(name: str, result: object, steps: int) -> None:
    # a peer that stopped early would look fast; make sure every step really happened
    if name == "pydantic-ai":
        n = sum(1 for m in result.all_messages() if m.kind == "response")
        text = result.output
    else:
        n = len(result["messages"]) // 2
        text = result["messages"][-1].content
    if n != steps + 1 or text != w.FINAL_ANSWER:
        raise SystemExit(f"{name}: expected {steps + 1} model turns ending in the answer, got {n} ({text!r})")


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in PEERS or not argv[1].isdigit():
        print(f"usage: peers_loop.py {{{'|'.join(PEERS)}}} STEPS", file=sys.stderr)
        return 2
    steps = int(argv[1])
    times = measure(argv[0], steps, w.reps_for(steps))
    print(json.dumps({"framework": argv[0], "steps": steps, "per_step_us": times}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

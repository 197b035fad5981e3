"""Figure 1: loop overhead per step, agentcore vs LangChain, LangGraph, pydantic-ai and a bare dict loop.

agentcore and the bare loop run here (agentcore's venv); the peers run in bench/.venv through
peers_loop.py. Per step = the whole run's wall time divided by the number of tool steps.
"""

from __future__ import annotations

import json
import time

import workload as w
from common import PEERS_PYTHON, Row, median, progress, ratio, run_json, unavailable

FIGURE = "1. loop overhead / step"
PEERS = ("langchain", "langgraph", "pydantic-ai")
PEER_LABELS = {
    "langchain": "LangChain create_agent",
    "langgraph": "LangGraph create_react_agent",
    "pydantic-ai": "pydantic-ai FunctionModel",
}


def agentcore_run(steps: int, timeout_s: float | None = 30.0):
    """A fresh agentcore Agent over ScriptedProvider(replay=[...]); returns the function that runs it.

    With the default 30 s tool time limit each call is handed to a kept worker thread; with
    `timeout_s=None` it runs in the loop's own thread, as in the peers, which have no limit.
    """
    from agentcore import Agent, AssistantMessage, Run, RunConfig, ScriptedProvider, ToolCall, tool

    replay = [
        AssistantMessage(tool_calls=(ToolCall(id=w.call_id(i), name=w.TOOL_NAME, arguments={"key": w.call_key(i)}),))
        for i in range(1, steps + 1)
    ]
    replay.append(AssistantMessage(content=w.FINAL_ANSWER))
    agent = Agent(ScriptedProvider(replay=replay), [tool(w.lookup, name=w.TOOL_NAME, timeout_s=timeout_s)])

    def go():
        run = agent.run(Run.start(w.PROMPT, RunConfig(max_steps=steps + 1)))
        if run.stop_reason != "answer" or len(run.steps) != steps + 1:
            raise RuntimeError(f"agentcore stopped early: {run.stop_reason} after {len(run.steps)} steps")
        return run

    return go


def bare_run(steps: int):
    """The floor: a list of dicts, the whole list JSON-encoded as a request body each step."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": w.TOOL_NAME,
                "description": w.TOOL_DESCRIPTION,
                "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
            },
        }
    ]
    replies = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": w.call_id(i),
                    "type": "function",
                    "function": {"name": w.TOOL_NAME, "arguments": json.dumps({"key": w.call_key(i)})},
                }
            ],
        }
        for i in range(1, steps + 1)
    ]
    replies.append({"role": "assistant", "content": w.FINAL_ANSWER})
    registry = {w.TOOL_NAME: w.lookup}

    def go():
        messages = [{"role": "user", "content": w.PROMPT}]
        for reply in replies:
            json.dumps({"model": "bench", "messages": messages, "tools": tools})
            messages.append(reply)
            for call in reply.get("tool_calls", ()):
                out = registry[call["function"]["name"]](**json.loads(call["function"]["arguments"]))
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": out})
        return messages

    return go


def measure_here(makers: dict[str, object], steps: int) -> dict[str, list[float]]:
    """Per-step µs of fresh runs in this process, the implementations taking turns, after one warm-up each.

    Every other repetition runs them in reverse order, so that none always runs first (or just after another).
    """
    samples: dict[str, list[float]] = {name: [] for name in makers}
    for make in makers.values():
        make(steps)()
    for rep in range(w.reps_for(steps)):
        for name, make in list(makers.items())[:: 1 if rep % 2 == 0 else -1]:
            go = make(steps)
            started = time.perf_counter()
            go()
            samples[name].append((time.perf_counter() - started) * 1e6 / steps)
    return samples


def paired_ratio(slower: list[float], faster: list[float]) -> float:
    """The median of each repetition's ratio: two runs taken one after the other saw the same load on the
    machine, which the ratio of two medians, each from its own moments, does not."""
    return median([a / b for a, b in zip(slower, faster, strict=True)])


def measure(steps_list: tuple[int, ...] = w.STEPS) -> list[Row]:
    """Every implementation at every step count, as table rows with ratios to agentcore."""
    rows: list[Row] = []
    for steps in steps_list:
        progress(f"loop overhead: {steps} steps")
        makers = {"agentcore": agentcore_run, "inline": lambda n: agentcore_run(n, None), "bare": bare_run}
        here = measure_here(makers, steps)
        ours, inline, bare = median(here["agentcore"]), median(here["inline"]), median(here["bare"])
        rows.append(Row(FIGURE, f"agentcore, {steps} steps", ours, "µs", ratio(ours, bare), "of bare dict loop"))
        rows.append(
            Row(
                FIGURE,
                f"agentcore, no tool time limit, {steps} steps",
                inline,
                "µs",
                ratio(inline, bare),
                "of bare dict loop",
            )
        )
        rows.append(
            Row(
                FIGURE,
                f"agentcore default over its fastest path (no tool time limit), {steps} steps",
                paired_ratio(here["agentcore"], here["inline"]),
                "×",
                note="median of each repetition's ratio; the goal is 1.3× at most",
            )
        )
        rows.append(Row(FIGURE, f"bare dict loop, {steps} steps", bare, "µs"))
        for peer in PEERS:
            label = f"{PEER_LABELS[peer]}, {steps} steps"
            if not PEERS_PYTHON.exists():
                rows.append(unavailable(FIGURE, label, "bench/.venv is missing (run `make bench`)"))
                continue
            try:
                data = run_json([str(PEERS_PYTHON), "bench/peers_loop.py", peer, str(steps)])
            except (RuntimeError, OSError, ValueError) as exc:
                rows.append(unavailable(FIGURE, label, str(exc)))
                continue
            theirs = median(data["per_step_us"])
            rows.append(Row(FIGURE, label, theirs, "µs", ratio(theirs, ours), "of agentcore"))
    return rows

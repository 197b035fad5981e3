"""Figure 7: what one tool call costs inline, on a worker thread (the default), and in a worker process (isolated).

The tool does nothing, so each figure is the cost of running a call: validating its arguments,
handing it over, getting its text back. An isolated call pays a round trip through a pipe to a
worker process that is already running; the first isolated call of a process also starts the
worker, measured apart in fresh interpreters.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from common import ROOT, Row, median, progress, ratio

FIGURE = "7. tool isolation / call"
CALLS = 2000
REPS = 7
FIRST_CALL = """
import json, sys, time
sys.path.insert(0, "bench")
from agentcore import ToolCall, tool
import isolation
echo = tool(isolation.echo, isolated=True)
started = time.perf_counter()
outcome = echo.execute(ToolCall(id="c", name="echo", arguments={"text": "ping"}))
assert not outcome.is_error, outcome.content
print(json.dumps({"ms": (time.perf_counter() - started) * 1000}))
"""


def echo(text: str) -> str:
    """Return the text: a tool that costs nothing, so that only the running of the call is measured."""
    return text


def per_call_us(t, calls: int = CALLS) -> float:
    """Mean µs of one call over `calls` calls in a row."""
    from agentcore import ToolCall

    call = ToolCall(id="c", name=t.name, arguments={"text": "ping"})
    started = time.perf_counter()
    for _ in range(calls):
        outcome = t.execute(call)
    took = time.perf_counter() - started
    if outcome.is_error or outcome.content != "ping":
        raise RuntimeError(f"the echo tool failed: {outcome.content}")
    return took * 1e6 / calls


def first_call_ms() -> float:
    """Median ms of the first isolated call in a fresh interpreter: it starts the worker process."""

    def once() -> float:
        done = subprocess.run(
            [sys.executable, "-c", FIRST_CALL], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
        )
        return json.loads(done.stdout.strip().splitlines()[-1])["ms"]

    return median([once() for _ in range(3)])


def measure() -> list[Row]:
    """Inline, thread and process per call, the three taking turns, after one warm-up each."""
    from agentcore import tool

    progress("tool isolation: inline, thread and process calls")
    tools = {
        "inline (timeout_s=None)": tool(echo, timeout_s=None),
        "worker thread (default)": tool(echo),
        "worker process (isolated=True)": tool(echo, isolated=True),
    }
    samples: dict[str, list[float]] = {name: [] for name in tools}
    for t in tools.values():
        per_call_us(t, 50)  # starts the worker thread or process
    for _ in range(REPS):
        for name, t in tools.items():
            samples[name].append(per_call_us(t))
    inline = median(samples["inline (timeout_s=None)"])
    rows = [
        Row(FIGURE, f"{name}, per call", median(values), "µs", ratio(median(values), inline), "of inline")
        for name, values in samples.items()
    ]
    progress("tool isolation: first isolated call in a fresh process")
    rows.append(Row(FIGURE, "isolated, first call of a process (starts the worker)", first_call_ms(), "ms"))
    return rows

"""Figure 2: building the OpenAI and Anthropic request bodies, as JSON bytes, for a 400-message conversation.

The baseline is json.dumps of the same body already held as plain dicts: encoding alone,
the floor that building from typed messages is compared with.
"""

from __future__ import annotations

import json
import time

import workload as w
from common import Row, median, progress, ratio, unavailable

FIGURE = "2. wire encoding, 400 messages"
MESSAGES = 400
REPS = 60


def conversation():
    """A system prompt, a user prompt, and tool-call turns with their results: 400 typed messages."""
    from agentcore import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage

    messages = [SystemMessage(content="You look keys up."), UserMessage(content=w.PROMPT)]
    step = 0
    while len(messages) < MESSAGES:
        step += 1
        call = ToolCall(id=w.call_id(step), name=w.TOOL_NAME, arguments={"key": w.call_key(step)})
        messages.append(AssistantMessage(content=f"Looking up {w.call_key(step)}.", tool_calls=(call,)))
        messages.append(ToolMessage(tool_call_id=call.id, name=w.TOOL_NAME, content=w.lookup(w.call_key(step))))
    return messages[:MESSAGES]


def _time_together(fns: dict[str, object]) -> dict[str, float]:
    """Median µs of each function, taken in turn within every repetition so load hits all alike."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    for _ in range(REPS):
        for name, fn in fns.items():
            started = time.perf_counter()
            fn()
            samples[name].append((time.perf_counter() - started) * 1e6)
    return {name: median(xs) for name, xs in samples.items()}


def measure() -> list[Row]:
    """Median µs to produce each provider's request bytes from typed messages vs from ready plain dicts."""
    progress("wire encoding")
    import importlib

    from agentcore import ModelRequest, tool

    spec = tool(w.lookup, name=w.TOOL_NAME).spec()
    request = ModelRequest(messages=tuple(conversation()), tools=(spec,))
    rows: list[Row] = []
    for vendor, module in (("OpenAI", "openai"), ("Anthropic", "anthropic")):
        try:
            build_body = importlib.import_module(f"agentcore.providers.{module}").build_body
        except (ImportError, AttributeError) as exc:
            rows.append(unavailable(FIGURE, f"{vendor} body", f"agentcore.providers.{module}: {exc}"))
            continue
        # the same body as fresh plain dicts, made outside the timing: the floor is encoding alone
        plain = json.loads(json.dumps(build_body("bench", request)))
        times = _time_together(
            {
                "ours": lambda build_body=build_body: json.dumps(build_body("bench", request)).encode(),
                "plain": lambda plain=plain: json.dumps(plain).encode(),
            }
        )
        base_label = f"{vendor}: json.dumps of the body as plain dicts"
        rows.append(Row(FIGURE, base_label, times["plain"], "µs"))
        label = f"{vendor}: {module}.build_body from typed messages, to bytes"
        rows.append(Row(FIGURE, label, times["ours"], "µs", ratio(times["ours"], times["plain"]), "of json.dumps"))
    return rows

"""Hostile inputs' cost: an OTLP trace of N chat and N tool spans imported, and YAML mock files refused.

    .venv/bin/python bench/hostile_inputs.py            # 2,500 / 5,000 / 10,000 / 50,000 spans, and the YAML cases

Prints seconds and the peak memory the process reached (ru_maxrss) for each case. The trace is written as an
OTLP-JSON file of one run: each chat span names its reply's one tool call, each tool span its call id and result,
and the last chat span holds the history, as a traced agent of that many steps would.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]

from agentcore.errors import TranscriptError  # noqa: E402
from agentcore.telemetry import genai as g  # noqa: E402
from agentcore.telemetry.importer import from_otlp  # noqa: E402

TRACE = "0" * 31 + "1"


def _attr(key: str, value: object) -> dict[str, object]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def trace(steps: int) -> str:
    """An OTLP-JSON trace of one run of `steps` tool steps and a final answer."""
    spans = [
        {
            "traceId": TRACE,
            "spanId": "a" * 16,
            "name": "invoke_agent agentcore",
            "startTimeUnixNano": "1",
            "endTimeUnixNano": str(10 * (steps + 2)),
            "attributes": [_attr(g.OPERATION, "invoke_agent"), _attr(g.CONVERSATION, "bench")],
        }
    ]
    history: list[dict[str, object]] = [{"role": "user", "parts": [{"type": "text", "content": "Go."}]}]
    for n in range(steps + 1):
        last = n == steps
        call = {"type": "tool_call", "id": f"c{n}", "name": "lookup", "arguments": {"n": n}}
        reply = {"role": "assistant", "parts": [{"type": "text", "content": "done"}] if last else [call]}
        attributes = [
            _attr(g.OPERATION, "chat"),
            _attr(g.PROVIDER, "openai"),
            _attr(g.REQUEST_MODEL, "gpt-4o-mini"),
            _attr(g.INPUT_TOKENS, 10 + n),
            _attr(g.OUTPUT_TOKENS, 5),
            _attr(g.OUTPUT_MESSAGES, json.dumps([reply])),
        ]
        if last:
            attributes.append(_attr(g.INPUT_MESSAGES, json.dumps(history)))
        spans.append(
            {
                "traceId": TRACE,
                "spanId": f"{2 * n + 1:016x}",
                "parentSpanId": "a" * 16,
                "name": "chat gpt-4o-mini",
                "startTimeUnixNano": str(10 * n + 2),
                "endTimeUnixNano": str(10 * n + 5),
                "attributes": attributes,
            }
        )
        if last:
            break
        spans.append(
            {
                "traceId": TRACE,
                "spanId": f"{2 * n + 2:016x}",
                "parentSpanId": "a" * 16,
                "name": "execute_tool lookup",
                "startTimeUnixNano": str(10 * n + 6),
                "endTimeUnixNano": str(10 * n + 8),
                "attributes": [
                    _attr(g.OPERATION, "execute_tool"),
                    _attr(g.TOOL_NAME, "lookup"),
                    _attr(g.TOOL_CALL_ID, f"c{n}"),
                    _attr(g.TOOL_RESULT, f"result {n}"),
                ],
            }
        )
        history += [
            reply,
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": f"c{n}", "response": f"result {n}"}]},
        ]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    for steps in (2_500, 5_000, 10_000, 50_000):
        text = trace(steps)
        started = time.perf_counter()
        try:
            run = from_otlp(text)
            said = f"{len(run.steps)} steps"
        except TranscriptError as exc:
            said = f"refused: {exc}"
        took = time.perf_counter() - started
        print(f"otlp import, {steps:>6,} chat + tool span pairs, {len(text) / 1e6:6.1f} MB: {took:6.2f} s, {said}")
    from agentcore.testing.yaml_file import read_yaml

    rule = "- {tool: t, when: ['$.a=1'], result: x}\n"
    for label, count in (("120,000 flow mappings (4.8 MB)", 120_000), ("16 MB of flow mappings", 16 * 2**20 // 40)):
        text = (rule * count).encode()[: 16 * 2**20 - 1]
        started = time.perf_counter()
        try:
            read_yaml(text, max_nodes=64_000)
            said = "read"
        except TranscriptError as exc:
            said = f"refused: {exc}"
        print(f"mock YAML, {label}: {time.perf_counter() - started:.2f} s, {said}")
    print(f"peak memory of the process: {peak_mb():.0f} MB")


if __name__ == "__main__":
    main()

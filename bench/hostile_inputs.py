"""Hostile inputs' cost: an OTLP trace of N chat and N tool spans imported, YAML mock files refused, session files
imported at scale, and the credential detectors over text made to make their patterns backtrack.

    .venv/bin/python bench/hostile_inputs.py            # every case below
    .venv/bin/python bench/hostile_inputs.py sessions   # only the session files, each in a process of its own
    .venv/bin/python bench/hostile_inputs.py detectors  # only the detectors

Prints seconds and the peak memory the process reached (ru_maxrss) for each case. The trace is written as an
OTLP-JSON file of one run: each chat span names its reply's one tool call, each tool span its call id and result,
and the last chat span holds the history, as a traced agent of that many steps would. Each session case runs in a
fresh process, so its peak memory is its own: ATIF trajectories of 5,000 / 10,000 / 20,000 steps, a Claude Code
file of 21 million `{}` lines and one of 199,999 prompts (just under the limit of lines), and the largest real session of each format in ../shared/reference/sessions (read,
never copied) repeated 10 and 100 times with its ids made distinct in each copy.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
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


REFERENCE = Path(__file__).resolve().parent.parent.parent / "shared" / "reference" / "sessions"
LARGEST = {  # the largest real session of each format
    "claude-code": "claude_code/v2.1.39_compaction_trimmed/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
    "codex": "codex/desktop0.104_redacted_rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
    "atif": "atif/nemo_hermes_nemoflow_v1.7_trajectory.json",
}
IDS = frozenset({"id", "uuid", "parentUuid", "tool_use_id", "call_id", "tool_call_id", "source_call_id", "leafUuid"})


def atif_trajectory(steps: int) -> bytes:
    """An ATIF trajectory of a prompt and `steps` agent steps of one call each, every result given."""
    out: list[dict[str, object]] = [{"step_id": 1, "source": "user", "message": "Go."}]
    for n in range(steps):
        call = {"tool_call_id": f"c{n}", "function_name": "lookup", "arguments": {"n": n}}
        result = {"source_call_id": f"c{n}", "content": f"result {n}"}
        out.append(
            {
                "step_id": n + 2,
                "source": "agent",
                "message": "",
                "tool_calls": [call],
                "observation": {"results": [result]},
            }
        )
    return json.dumps(
        {"schema_version": "ATIF-v1.6", "session_id": "bench", "agent": {"name": "bench"}, "steps": out}
    ).encode()


def claude_prompts(count: int) -> bytes:
    """A Claude Code session of `count` lines, each a person's prompt: just under the limit of lines."""
    line = '{"type":"user","uuid":"u%d","sessionId":"s","message":{"role":"user","content":"hi %d"}}'
    return "\n".join(line % (n, n) for n in range(count)).encode()


def _distinct(value: object, copy: int) -> object:
    if isinstance(value, dict):
        return {k: f"{v}-{copy}" if k in IDS and isinstance(v, str) else _distinct(v, copy) for k, v in value.items()}
    if isinstance(value, list):
        return [_distinct(v, copy) for v in value]
    return value


def repeated(fmt: str, times: int) -> bytes:
    """The largest real session of `fmt`, `times` copies of its conversation one after another."""
    raw = (REFERENCE / LARGEST[fmt]).read_bytes()
    if fmt == "atif":
        data = json.loads(raw)
        data["steps"] = [_distinct(s, k) for k in range(times) for s in data["steps"]]
        return json.dumps(data).encode()
    lines = [json.loads(line) for line in raw.splitlines() if line.strip()]
    return b"\n".join(json.dumps(_distinct(line, k)).encode() for k in range(times) for line in lines)


SESSION_CASES: dict[str, Callable[[], tuple[str, bytes]]] = {
    "atif-5000": lambda: ("x.json", atif_trajectory(5_000)),
    "atif-10000": lambda: ("x.json", atif_trajectory(10_000)),
    "atif-20000": lambda: ("x.json", atif_trajectory(20_000)),
    "claude-code-21M-empty-lines": lambda: ("x.jsonl", b"{}\n" * 21_000_000),
    "claude-code-199999-prompts": lambda: ("x.jsonl", claude_prompts(199_999)),
    **{
        f"{fmt}-real-x{times}": (lambda fmt=fmt, times=times: (Path(LARGEST[fmt]).name, repeated(fmt, times)))
        for fmt in LARGEST
        for times in (1, 10, 100)
    },
}


def session_case(name: str) -> None:
    """One session case, in this process: its size, seconds, what it made or why it was refused, peak memory."""
    from agentcore.sessions import read_import

    file, raw = SESSION_CASES[name]()
    started = time.perf_counter()
    try:
        got = read_import(raw, file)
        said = f"{sum(len(r.steps) for r in got.runs):,} steps in {len(got.runs)} runs"
    except TranscriptError as exc:
        said = f"refused: {str(exc)[:90]}"
    took = time.perf_counter() - started
    print(f"{name:>28}, {len(raw) / 1e6:6.1f} MB: {took:6.2f} s, peak {peak_mb():5.0f} MB, {said}", flush=True)


def sessions() -> None:
    if not REFERENCE.is_dir():
        print(f"the real sessions are not here ({REFERENCE}): only the made-up cases")
    for name in SESSION_CASES:
        if "real" in name and not REFERENCE.is_dir():
            continue
        subprocess.run([sys.executable, __file__, "--case", name], check=False)


# text that makes each detector's pattern work hardest: a marker repeated with no end to its shape
DETECTOR_TEXTS = {
    "eyJ repeated, no dot": "eyJ",
    "password words, then assignments": "passwordsecretapi_key" * 3 + " password: 'x'\n",
    "sk- repeated": "xsk-",
    "xoxb- and digit groups": "xoxb-" + "1-" * 40,
    "URL userinfo without @": "://user:pass",
    "AKIA and aws repeated": "AKIA aws key ",
    "private key headers": "-----BEGIN RSA PRIVATE KEY-----",
    "long words of capitals": "MNO" * 10 + ".abcdef.",
    "digits and colons": "12345678:",
    "ordinary prose with quotes": 'The "answer" is 42; see https://example.com/docs for keys. ',
}


def detectors() -> None:
    from agentcore.secrets.detectors import mask_text

    for label, unit in DETECTOR_TEXTS.items():
        times = []
        for size in (1_000_000, 4_000_000):
            text = (unit * (size // len(unit) + 1))[:size]
            started = time.perf_counter()
            mask_text(text)
            times.append(time.perf_counter() - started)
        print(f"detectors, {label:>36}: 1 MB {times[0]:6.2f} s, 4 MB {times[1]:6.2f} s ({times[1] / times[0]:.1f}x)")


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
    if sys.argv[1:2] == ["--case"]:
        session_case(sys.argv[2])
    elif sys.argv[1:2] == ["sessions"]:
        sessions()
    elif sys.argv[1:2] == ["detectors"]:
        detectors()
    else:
        main()
        sessions()
        detectors()

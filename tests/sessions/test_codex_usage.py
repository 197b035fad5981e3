"""Codex usage on the step that made it, whichever order the file writes a call's `token_count` and its items in:
the order is told from the file. The reordered files are written by the test from real rollouts (read from
../shared/reference/sessions/; the tests skip where it is absent).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcore.sessions import read_import

REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "sessions"
ROLLOUTS = {
    "cli0.125": (
        "codex/cli0.125.0_tui_rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.trimmed300.jsonl",
        (4_120_782, 3_004_800, 7_285),
    ),
    "desktop0.104": (
        "codex/desktop0.104_redacted_rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
        (33_810_485, 31_621_504, 133_999),
    ),
}
OUTPUTS = {"reasoning", "function_call", "custom_tool_call", "web_search_call", "local_shell_call"}
pytestmark = pytest.mark.skipif(
    not REFERENCE.is_dir(), reason=f"the real session files are not here ({REFERENCE} is absent)"
)


def is_output(record: dict) -> bool:
    p = record["payload"]
    return record["type"] == "response_item" and (
        p.get("type") in OUTPUTS or (p.get("type") == "message" and p.get("role") == "assistant")
    )


def counts_first(lines: list[str]) -> list[str]:
    """The rollout with each call's new count moved to just before the call's first item, as some CLIs write it."""
    records = [json.loads(line) for line in lines]
    out: list[dict] = []
    start: int | None = None  # where the items of the call being written began in `out`
    seen = None
    for r in records:
        p = r["payload"]
        info = p.get("info") if r["type"] == "event_msg" and p.get("type") == "token_count" else None
        fresh = isinstance(info, dict) and info.get("total_token_usage") != seen
        if fresh and start is not None:
            seen = info["total_token_usage"]
            out.insert(start, r)
            start = None
            continue
        if is_output(r) and start is None:
            start = len(out)
        out.append(r)
    return [json.dumps(r) for r in out]


def usage_of(lines: list[str]) -> list:
    run = read_import("\n".join(lines).encode(), "rollout.jsonl").runs[0]
    return run, [(s.usage, s.estimated) for s in run.steps]


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@pytest.mark.parametrize("name", list(ROLLOUTS))
def test_a_file_that_writes_each_count_before_its_call_gets_each_calls_usage_on_its_own_step(name: str) -> None:
    path, totals = ROLLOUTS[name]
    lines = [line for line in (REFERENCE / path).read_text().splitlines() if line.strip()]
    reordered = counts_first(lines)
    assert reordered != lines and sorted(reordered) == sorted(json.dumps(json.loads(x)) for x in lines)
    run, as_written = usage_of(lines)
    moved, as_moved = usage_of(reordered)
    assert as_moved == as_written
    u = moved.usage
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens) == totals
    assert moved.steps[0].usage.input_tokens > 0 and not moved.steps[0].estimated

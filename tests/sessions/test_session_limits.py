"""The limits of one session import: lines, steps, tool calls and messages counted, a file past one refused in
one line; and the builder's work for a turn not growing with the turns before it.

The limits are set small here; bench/hostile_inputs.py measures the real ones on large files.
"""

from __future__ import annotations

import json

import pytest

from agentcore.errors import TranscriptError
from agentcore.messages import ToolCall
from agentcore.sessions import builder, read_import
from agentcore.sessions.builder import SessionBuilder, Turn


def atif(steps: int, calls: int = 1) -> bytes:
    """An ATIF trajectory of a user's prompt and `steps` agent steps of `calls` calls each, every result given."""
    out = [{"step_id": 1, "source": "user", "message": "Go."}]
    for n in range(steps):
        ids = [f"c{n}_{k}" for k in range(calls)]
        out.append(
            {
                "step_id": n + 2,
                "source": "agent",
                "message": "",
                "tool_calls": [{"tool_call_id": i, "function_name": "lookup", "arguments": {"n": n}} for i in ids],
                "observation": {"results": [{"source_call_id": i, "content": f"result {i}"} for i in ids]},
            }
        )
    return json.dumps({"schema_version": "ATIF-v1.6", "session_id": "s", "agent": {"name": "a"}, "steps": out}).encode()


def claude_lines(count: int) -> bytes:
    line = {"type": "user", "uuid": "u", "sessionId": "s", "message": {"role": "user", "content": "hi"}}
    return b"\n".join(json.dumps({**line, "uuid": f"u{n}"}).encode() for n in range(count))


def refusal(raw: bytes, name: str) -> str:
    with pytest.raises(TranscriptError) as caught:
        read_import(raw, name)
    return str(caught.value)


def test_a_file_of_more_lines_than_the_limit_is_refused_in_one_line_before_any_is_read(monkeypatch):
    monkeypatch.setattr(builder, "MAX_LINES", 50)
    assert len(read_import(claude_lines(50), "ok.jsonl").runs[0].messages) == 50
    said = refusal(claude_lines(51), "many.jsonl")
    assert said == "many.jsonl: more than 50 lines in one import: refused, not read in part"


def test_a_file_of_empty_objects_past_the_limit_is_refused_not_imported_as_an_empty_run(monkeypatch):
    monkeypatch.setattr(builder, "MAX_LINES", 1000)
    said = refusal(b"{}\n" * 5000, "empty.jsonl")
    assert "more than 1,000 lines" in said and "\n" not in said


@pytest.mark.parametrize(
    ("limit", "value", "what"),
    [("MAX_STEPS", 20, "steps"), ("MAX_CALLS", 59, "tool calls"), ("MAX_MESSAGES", 80, "messages")],
)
def test_a_trajectory_past_a_limit_of_what_it_makes_is_refused_by_name(monkeypatch, limit, value, what):
    monkeypatch.setattr(builder, limit, value)
    read_import(atif(10, calls=3), "small.json")  # 10 steps, 30 calls, 41 messages: within every limit
    said = refusal(atif(20 if what != "steps" else 21, calls=3), "big.json")
    assert said == f"big.json: more than {value:,} {what} in one import: refused, not read in part"


def test_the_limits_count_every_run_of_one_import_together(monkeypatch, tmp_path):
    monkeypatch.setattr(builder, "MAX_STEPS", 15)
    parent = json.loads(atif(10))
    parent["subagent_trajectories"] = [{**json.loads(atif(10)), "trajectory_id": "sub"}]
    with pytest.raises(TranscriptError, match="more than 15 steps"):
        read_import(json.dumps(parent).encode(), "parent.json")


def test_a_repeated_call_id_is_told_apart_in_every_later_turn():
    b = SessionBuilder("atif", "f", "openai", {})
    b.user("go")
    for _ in range(4):
        b.turn(Turn(calls=[ToolCall(id="same", name="t")]))
    ids = [c.id for m in b.messages for c in getattr(m, "tool_calls", ())]
    assert ids == ["same", "same#2", "same#3", "same#4"]


def test_a_turn_written_over_many_lines_joins_its_text_blocks_in_order():
    turn = Turn()
    for text in ("", "one", "", "two"):
        turn.add_text(text)
    b = SessionBuilder("claude-code", "f", "anthropic", {})
    b.user("go")
    b.turn(turn)
    assert b.messages[-1].content == "one\n\ntwo"

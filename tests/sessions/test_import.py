"""Importing runs: the project's JSON, OpenAI and Anthropic message lists, refusals, and the runs CLI."""

from __future__ import annotations

import json
import sqlite3
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentcore import AssistantMessage, Run, SystemMessage, ToolMessage, UserMessage
from agentcore.cli.main import main
from agentcore.errors import TranscriptError
from agentcore.exports import export_body, export_json
from agentcore.importers import parse_import
from agentcore.store.runs import Store
from agentcore.transcript import dumps

OPENAI = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris and Rome?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": "{city: Rome"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_a", "content": '{"temp": 21}'},
    {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "Error: bad JSON"}]},
    {"role": "assistant", "content": "Paris is 21 °C."},
]

ANTHROPIC_BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "system": "Be brief.",
    "tools": [{"name": "get_weather", "description": "Weather.", "input_schema": {"type": "object"}}],
    "messages": [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "21"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": [{"type": "text", "text": "down"}],
                    "is_error": True,
                },
                {"type": "text", "text": "And tomorrow?"},
            ],
        },
    ],
}


def test_an_openai_message_list_becomes_a_run_with_raw_arguments_kept() -> None:
    run = parse_import(json.dumps(OPENAI))
    assert run.config.provider == "openai"
    assert isinstance(run.messages[0], SystemMessage) and run.config.system_prompt == "Be brief."
    calls = run.messages[2].tool_calls
    assert calls[0].arguments == {"city": "Paris"} and calls[1].raw_arguments == "{city: Rome"
    assert [m.name for m in run.messages if isinstance(m, ToolMessage)] == ["get_weather", "get_weather"]
    assert run.messages[4].content == "Error: bad JSON"
    assert run.next_phase == "done" and run.steps == []


def test_an_openai_request_body_brings_its_model_and_tools() -> None:
    body = {
        "model": "gpt-4o-mini",
        "messages": OPENAI[1:4] + [{"role": "tool", "tool_call_id": "call_b", "content": "x"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
    }
    run = parse_import(json.dumps(body))
    assert run.config.model == "gpt-4o-mini" and [t.name for t in run.config.tools] == ["get_weather"]
    assert run.next_phase == "model"  # the conversation can be stepped on from here


def test_an_anthropic_body_merges_tool_results_and_reads_the_system_string() -> None:
    run = parse_import(json.dumps(ANTHROPIC_BODY))
    assert run.config.provider == "anthropic" and run.config.model == "claude-sonnet-4-5"
    kinds = [type(m).__name__ for m in run.messages]
    assert kinds == ["SystemMessage", "UserMessage", "AssistantMessage", "ToolMessage", "ToolMessage", "UserMessage"]
    assistant = run.messages[2]
    assert isinstance(assistant, AssistantMessage) and assistant.content == "Checking."
    assert [c.arguments["city"] for c in assistant.tool_calls] == ["Paris", "Rome"]
    assert run.messages[4].is_error and run.messages[4].content == "down"
    assert isinstance(run.messages[5], UserMessage) and run.config.tools[0].parameters == {"type": "object"}


def test_the_projects_own_json_round_trips() -> None:
    run = Run.start("hello")
    assert parse_import(dumps(run)).model_dump() == run.model_dump()


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"{not json", "not JSON"),
        ({"format": "something.else"}, "format: expected"),
        ([{"role": "wizard", "content": "x"}], "messages[0].role"),
        ([{"role": "user", "content": [{"type": "image_url"}]}], "messages[0].content[0]: only text parts"),
        ([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "nope", "content": "x"}], "messages[1]"),
        (
            {"system": "s", "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]},
            "messages[0].content[0].tool_use_id",
        ),
        ({"messages": []}, "messages: a non-empty list"),
        ([{"role": "assistant", "content": "hi"}], "messages[0]: the conversation must start with a user message"),
        (42, "(top level)"),
    ],
)
def test_a_bad_file_is_refused_with_the_field_and_the_reason(data, expected: str) -> None:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    with pytest.raises(TranscriptError) as exc:
        parse_import(raw, "bad.json")
    assert str(exc.value).startswith("bad.json: ") and expected in str(exc.value)


def _dump(path: Path) -> list:
    db = sqlite3.connect(path)
    rows = [db.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in ("runs", "steps", "meta")]
    db.close()
    return rows


def test_importing_a_taken_id_gets_a_new_one_and_leaves_the_stored_run_alone(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    run = Run.start("original")
    store.save_run(run)
    copy = run.model_copy(update={"title": "changed"})
    imported = store.import_run(parse_import(dumps(copy)))
    assert imported.id != run.id and store.load_run(run.id).title == "original"
    hostile = store.import_run(run.model_copy(update={"id": "x'; DROP TABLE runs; --"}))
    assert hostile.id != "x'; DROP TABLE runs; --" and len(store.list_runs()) == 3


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
KEYS = st.sampled_from(["role", "content", "tool_calls", "tool_call_id", "messages", "system", "format", "steps", "id"])
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", "developer", "x"])},
    optional={"content": JSON, "tool_calls": JSON, "tool_call_id": JSON, "name": JSON},
)
HOSTILE = (
    JSON
    | st.lists(MESSAGE, max_size=5)
    | st.fixed_dictionaries({"messages": st.lists(MESSAGE, max_size=5)}, optional={"system": JSON, "tools": JSON})
    | st.builds(lambda k, v: {**json.loads(dumps(Run.start("seed"))), k: v}, KEYS, JSON)
)


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=HOSTILE)
@example(data={"messages": [{"role": "user", "content": "x"}], "tools": True})
def test_a_hostile_import_is_refused_cleanly_or_stored_whole(tmp_path: Path, data) -> None:
    path = tmp_path / "hostile.db"
    store = Store(path)
    if not store.exists("keeper"):
        store.save_run(Run.start("keep me", id="keeper"))
    before = _dump(path)
    try:
        run = parse_import(json.dumps(data).encode(), "h.json")
    except TranscriptError as exc:
        assert str(exc).startswith("h.json: ")
        assert _dump(path) == before
        store.close()
        return
    stored = store.import_run(run)
    assert store.load_run(stored.id).messages == run.messages
    assert store.load_run("keeper").messages[0].content == "keep me"
    store.close()


def test_the_runs_cli_imports_lists_shows_exports_and_deletes(tmp_path: Path, capsys) -> None:
    db = str(tmp_path / "cli.db")
    src = tmp_path / "chat.json"
    src.write_text(json.dumps(ANTHROPIC_BODY))
    assert main(["runs", "import", str(src), "--db", db]) == 0
    run_id = capsys.readouterr().out.split("as run ")[1].split()[0]
    assert main(["runs", "--db", db, "list"]) == 0
    assert run_id in capsys.readouterr().out
    assert main(["runs", "show", run_id, "--db", db]) == 0
    assert "tool get_weather error: down" in capsys.readouterr().out
    assert main(["runs", "export", run_id, "--db", db, "--format", "openai"]) == 0
    assert json.loads(capsys.readouterr().out)["messages"][0] == {"role": "system", "content": "Be brief."}
    out = tmp_path / "both.zip"
    assert main(["runs", "export", run_id, run_id, "--db", db, "--out", str(out), "--format", "anthropic"]) == 0
    stored = Store(db).load_run(run_id)
    with zipfile.ZipFile(out) as archive:  # a run named twice is written once: its transcript and its body
        assert sorted(archive.namelist()) == [f"{run_id}.anthropic.json", f"{run_id}.json"]
        assert archive.read(f"{run_id}.json").decode() == export_json(stored)
        assert archive.read(f"{run_id}.anthropic.json").decode() == export_body(stored, "anthropic")
        assert json.loads(archive.read(f"{run_id}.anthropic.json"))["system"] == "Be brief."
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "tool", "tool_call_id": "x", "content": "y"}]')
    assert main(["runs", "import", str(bad), "--db", db]) == 2
    assert "bad.json: messages[0].tool_call_id" in capsys.readouterr().err
    assert main(["runs", "delete", run_id, "--db", db]) == 0
    assert main(["runs", "show", run_id, "--db", db]) == 2
    assert len(Store(db).list_runs()) == 0


def test_agentcore_run_with_db_saves_the_run(tmp_path: Path, capsys) -> None:
    db = str(tmp_path / "run.db")
    assert main(["run", "--provider", "scripted", "--scenario", "weather", "--db", db]) == 0
    (summary,) = Store(db).list_runs()
    assert summary.stop_reason == "answer" and summary.steps >= 2


def test_a_file_of_another_tools_format_is_named_as_one_agentcore_does_not_read():
    from agentcore.sessions import read_import

    gemini = {
        "sessionId": "s",
        "projectHash": "p",
        "startTime": "2026-01-01T00:00:00Z",
        "messages": [
            {"id": "1", "timestamp": "2026-01-01T00:00:00Z", "type": "user", "content": "hi"},
            {"id": "2", "timestamp": "2026-01-01T00:00:01Z", "type": "gemini", "content": "hello", "model": "g"},
        ],
    }
    with pytest.raises(TranscriptError) as refused:
        read_import(json.dumps(gemini).encode(), "session-1.json")
    said = str(refused.value)
    assert said.startswith("session-1.json: (top level): not a format agentcore reads (a Gemini CLI session")
    assert "role" not in said and "Claude Code session" in said
    with pytest.raises(TranscriptError, match=r"not a format agentcore reads: it reads"):
        read_import(json.dumps([{"kind": "x"}]).encode(), "other.json")
    saved_chat = [  # Gemini CLI's `/chat save` (checkpoint-NAME.json): the Gemini API's contents
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"text": "hello"}, {"functionCall": {"name": "ls", "args": {}}}]},
    ]
    with pytest.raises(TranscriptError) as refused:
        read_import(json.dumps(saved_chat).encode(), "checkpoint-a.json")
    said = str(refused.value)
    assert said.startswith("checkpoint-a.json: (top level): not a format agentcore reads (a Gemini conversation")
    assert "expected" not in said and "Codex rollout" in said
    # a message list whose assistant is called `model` but holds content is refused by its role, as before
    with pytest.raises(TranscriptError, match="role"):
        read_import(json.dumps([{"role": "model", "content": "x"}]).encode(), "odd.json")
    with pytest.raises(TranscriptError, match=r"messages\[1\]\.role"):  # a message list with one bad role: as before
        read_import(json.dumps([{"role": "user", "content": "a"}, {"content": "b"}]).encode(), "list.json")

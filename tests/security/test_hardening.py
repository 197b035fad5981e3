"""Hostile input to the loop, the tools, the writers and the command line: each is refused in one line or survived."""

from __future__ import annotations

import json

import pytest

from agentcore import transcript as tr
from agentcore.cli.main import main
from agentcore.errors import UsageError
from agentcore.loop import Agent, check_final_schema
from agentcore.messages import AssistantMessage, ToolCall, UserMessage
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run, RunConfig
from agentcore.store.runs import Store
from agentcore.tools import tool


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text for this")

    __repr__ = __str__


@tool(timeout_s=None)
def inline_interrupt() -> str:
    """Stands for a Ctrl-C arriving while a tool without a time limit runs in the calling thread."""
    raise KeyboardInterrupt


@tool
def exits() -> str:
    """Calls sys.exit from inside a tool."""
    raise SystemExit(3)


@tool
def unprintable() -> object:
    """Returns a value that cannot be turned into text."""
    return Unprintable()


@tool
def broken_text() -> str:
    """Returns text holding a lone surrogate, as undecodable file names do."""
    return "before \udcff after"


def calling(*names: str) -> list[AssistantMessage]:
    calls = tuple(ToolCall(id=f"c{i}", name=n, arguments={}) for i, n in enumerate(names))
    return [AssistantMessage(content="", tool_calls=calls), AssistantMessage(content="done")]


def run_tools(tools, *names: str, **config) -> Run:
    run = Run.start("go", RunConfig(**config))
    Agent(ScriptedProvider(replay=calling(*names)), tools).run(run)
    return run


def test_ctrl_c_in_an_inline_tool_stops_the_loop_and_leaves_the_call_pending():
    run = Run.start("go", RunConfig())
    agent = Agent(ScriptedProvider(replay=calling("inline_interrupt")), [inline_interrupt])
    with pytest.raises(KeyboardInterrupt):
        agent.run(run)
    assert run.next_phase == "tools"  # resumable: the call was not answered with a made-up error
    assert len(run.steps) == 1


def test_system_exit_inside_a_tool_is_an_error_result_and_the_loop_goes_on():
    run = run_tools([exits], "exits")
    assert run.stop_reason == "answer"
    assert run.messages[2].is_error and "SystemExit: 3" in run.messages[2].content


def test_a_value_that_cannot_be_shown_is_the_tools_error_not_a_crash():
    run = run_tools([unprintable], "unprintable")
    assert run.stop_reason == "answer"
    result = run.messages[2]
    assert result.is_error and "cannot be shown as text" in result.content and "no text for this" in result.content


def test_a_lone_surrogate_in_tool_output_becomes_a_replacement_character(tmp_path):
    run = run_tools([broken_text], "broken_text")
    assert run.messages[2].content == "before \ufffd after"
    tr.save(run, tmp_path / "t.json")
    assert tr.load(tmp_path / "t.json").messages[2].content == "before \ufffd after"


def test_a_lone_surrogate_in_a_message_round_trips_through_the_transcript_and_the_store(tmp_path):
    run = Run.start("prompt with \ud800 inside", RunConfig())
    run.messages.append(AssistantMessage(content="reply \udcff"))
    tr.save(run, tmp_path / "t.json")
    assert tr.load(tmp_path / "t.json") == run
    store = Store(tmp_path / "runs.db")
    store.save_run(run)
    assert store.load_run(run.id).messages == run.messages
    assert store.list_runs()[0].title == "prompt with \ufffd inside"


def test_a_failed_transcript_save_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "taken"
    target.mkdir()
    with pytest.raises(OSError):
        tr.save(Run.start("hi"), target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


@pytest.mark.parametrize(
    ("schema", "words"),
    [([1], "a JSON Schema is a JSON object, not list"), ({"type": "nope"}, "not a valid JSON Schema at type")],
)
def test_an_invalid_final_answer_schema_is_refused_before_the_model_is_called(schema, words):
    with pytest.raises(UsageError, match=words):
        check_final_schema(schema)
    provider = ScriptedProvider(replay=[AssistantMessage(content="never")])
    run = Run.start("go", RunConfig(final_answer_schema={"type": "nope"}))
    with pytest.raises(UsageError, match="final_answer_schema: not a valid JSON Schema"):
        Agent(provider, []).model_phase(run)
    assert run.steps == [] and isinstance(run.messages[-1], UserMessage)


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("[1]", "a JSON Schema is a JSON object, not list"),
        ('{"type": "nope"}', "not a valid JSON Schema"),
        ("[" * 50_000, "nested more than 100 levels deep"),  # past Python's recursion limit
    ],
)
def test_cli_refuses_a_bad_final_schema_in_one_line(tmp_path, capsys, content, words):
    schema = tmp_path / "schema.json"
    schema.write_text(content)
    code, _, err = cli(
        capsys, "run", "--provider", "scripted", "--scenario", "structured", "--final-schema", str(schema)
    )
    assert code == 2
    assert err.count("\n") == 1 and words in err and "Traceback" not in err


def test_cli_refuses_an_unwritable_out_before_running(tmp_path, capsys):
    code, out, err = cli(capsys, "run", "--provider", "scripted", "--scenario", "weather", "--out", str(tmp_path))
    assert code == 2
    assert err == f"agentcore: error: --out {tmp_path}: cannot write: Is a directory\n"
    assert "step 1" not in out  # nothing ran
    assert list(tmp_path.iterdir()) == []


def test_cli_compare_to_an_unwritable_out_is_one_line_and_leaves_no_temporary(tmp_path, capsys):
    out = tmp_path / "out"  # a folder inside the test's own: the temporary would sit beside it, in tmp_path
    out.mkdir()
    code, _, err = cli(
        capsys, "compare", "hi", "--config", "scripted:weather", "--config", "scripted:recovery", "--out", str(out)
    )
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert list(out.iterdir()) == []
    assert list(tmp_path.iterdir()) == [out]  # and no temporary (.out.tmp) beside it


def test_cli_compare_with_an_unknown_provider_is_bad_usage(capsys):
    code, _, err = cli(capsys, "compare", "hi", "--config", "nope", "--config", "scripted:weather")
    assert code == 2 and "unknown provider 'nope'" in err and err.count("\n") == 1


def test_cli_ctrl_c_saves_the_cancelled_run_to_the_transcript_and_the_database(tmp_path, capsys, monkeypatch):
    real = Agent.tools_phase
    seen = []

    def interrupted_second_time(self, run, decisions=None):
        seen.append(1)
        if len(seen) == 2:
            raise KeyboardInterrupt
        return real(self, run, decisions)

    monkeypatch.setattr(Agent, "tools_phase", interrupted_second_time)
    out, db = tmp_path / "t.json", tmp_path / "runs.db"
    code, stdout, err = cli(
        capsys, "run", "--provider", "scripted", "--scenario", "research", "--out", str(out), "--db", str(db)
    )
    assert code == 130
    assert err == "agentcore: interrupted at step 2; every completed phase is saved\n"
    saved = tr.load(out)
    assert saved.stop_reason == "cancelled" and len(saved.steps) == 2 and saved.next_phase == "tools"
    stored = Store(db).load_run(saved.id)
    assert stored.stop_reason == "cancelled" and stored.messages == saved.messages


def test_cli_os_errors_are_one_line(tmp_path, capsys, monkeypatch):
    where = str(tmp_path / "t.json")

    def full_disk(path):
        raise OSError(28, "No space left on device", where)

    monkeypatch.setattr(tr, "load", full_disk)
    code, _, err = cli(capsys, "validate", where)
    assert code == 2 and err == f"agentcore: error: {where}: No space left on device\n"


def test_a_transcript_with_hostile_json_is_one_transcript_error(tmp_path, capsys):
    path = tmp_path / "t.json"
    data = tr.to_dict(Run.start("hi"))
    data["messages"] = [{"role": "user", "content": {"nested": ["not", "text"]}}]
    path.write_text(json.dumps(data))
    code, _, err = cli(capsys, "show", str(path))
    assert code == 2 and err.startswith(f"agentcore: error: {path}: messages[0]") and err.count("\n") == 1

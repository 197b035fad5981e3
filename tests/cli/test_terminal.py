"""The terminal shows text, not control sequences: what a model, a tool or a file holds is made visible, not run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentcore import transcript
from agentcore.cli.main import main
from agentcore.cli.terminal import visible
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage
from agentcore.run import Run, RunConfig

# sets the window title, clears the screen, reverses the text that follows, a C1 CSI, a carriage return
HOSTILE = "\x1b]0;pwned\x07 \x1b[2J \u202eevil\u202c \x9b31m \rover"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def hostile_file(tmp_path: Path) -> Path:
    """A transcript whose prompt, answers, tool call and tool result all hold control sequences."""
    run = Run.start(f"weather? {HOSTILE}", RunConfig(provider="scripted", model="replay"), title=f"t {HOSTILE}")
    call = ToolCall(id="c1", name="get_weather", arguments={"city": f"Paris {HOSTILE}"})
    run.messages += [
        AssistantMessage(content=f"Looking. {HOSTILE}", tool_calls=(call,)),
        ToolMessage(tool_call_id="c1", name="get_weather", content=f"sunny {HOSTILE}"),
        AssistantMessage(content=f"It is sunny. {HOSTILE}"),
    ]
    run.stop_reason, run.error = "answer", f"an old error {HOSTILE}"
    path = tmp_path / "hostile.json"
    transcript.save(run, path)
    return path


def printed(capsys) -> str:
    out = capsys.readouterr()
    return out.out + out.err


def assert_made_visible(text: str) -> None:
    assert not RAW.findall(text), RAW.findall(text)
    assert "\\x1b]0;pwned\\x07" in text and "\\x1b[2J" in text and "\\u202eevil\\u202c" in text


def test_run_prints_a_replayed_model_and_its_tools_as_text(hostile_file, capsys):
    assert main(["run", "--replay", str(hostile_file), "--no-db", "--tools", "get_weather"]) == 0
    text = printed(capsys)
    assert_made_visible(text)
    assert "It is sunny." in text and "\\u009b31m" in text and "\\rover" in text


def test_show_prints_a_transcript_as_text(hostile_file, capsys):
    assert main(["show", str(hostile_file)]) == 0
    text = printed(capsys)
    assert_made_visible(text)
    assert "an old error" in text and "sunny" in text


def test_runs_list_and_show_print_a_stored_run_as_text(hostile_file, tmp_path, capsys):
    db = str(tmp_path / "runs.db")
    assert main(["runs", "import", str(hostile_file), "--db", db]) == 0
    run_id = printed(capsys).split(" as run ")[1].split()[0]
    assert main(["runs", "show", run_id, "--db", db]) == 0
    assert_made_visible(printed(capsys))
    assert main(["runs", "list", "--db", db]) == 0
    listed = printed(capsys)
    assert not RAW.findall(listed) and "\\x1b]0;pwned\\x07" in listed


def test_an_error_naming_a_hostile_file_prints_as_text(tmp_path, capsys):
    missing = tmp_path / f"no-such-{HOSTILE}.json"
    assert main(["show", str(missing)]) == 2
    text = printed(capsys)
    assert "cannot read" in text
    assert_made_visible(text)


def test_json_on_stdout_stays_valid_json_that_reads_back_the_same(hostile_file, tmp_path, capsys):
    db = str(tmp_path / "runs.db")
    assert main(["runs", "import", str(hostile_file), "--db", db]) == 0
    run_id = printed(capsys).split(" as run ")[1].split()[0]
    assert main(["runs", "export", run_id, "--db", db]) == 0
    text = capsys.readouterr().out
    assert not RAW.findall(text)
    exported = transcript.from_dict(json.loads(text))
    assert exported.messages == transcript.load(hostile_file).messages


def test_visible_escapes_control_characters_and_keeps_text():
    assert visible("a\tb\nc") == "a\tb\nc"
    assert visible("Zürich 東京 👩‍💻") == "Zürich 東京 👩‍💻"  # the emoji's zero-width joiner is text
    assert visible("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m"
    assert visible("\x00\x07\x08\r\x7f\x85\x9b") == "\\x00\\x07\\x08\\r\\u007f\\u0085\\u009b"
    assert visible("\u202e\u2066\u200f\u061c") == "\\u202e\\u2066\\u200f\\u061c"
    assert visible("lone \udcff") == "lone \\udcff"

"""The built-in toolbox: safe arithmetic, offline data, ranking, schedules, the sandbox."""

from __future__ import annotations

import json
import time

import pytest

from agentcore import toolbox
from agentcore.errors import UsageError
from agentcore.messages import ToolCall


def run(name, **arguments):
    return toolbox.TOOLBOX[name].execute(ToolCall(id="c", name=name, arguments=arguments))


def test_calculator_computes_and_never_evaluates_code():
    assert run("calculator", expression="(2 + 3) * 4 / sqrt(16)").content.endswith("= 5")
    for hostile in ("__import__('os').system('true')", "open('/etc/passwd')", "[1,2]", "2 ** 99999"):
        outcome = run("calculator", expression=hostile)
        assert outcome.is_error, hostile


def test_weather_is_deterministic_and_says_it_is_simulated():
    first = json.loads(run("get_weather", city="Paris").content)
    assert first == json.loads(run("get_weather", city="Paris").content)
    assert "simulated" in first["note"]
    assert run("get_weather", city="Paris", unit="kelvin").is_error


def test_there_are_at_least_twenty_notes_and_bm25_ranks_the_relevant_one_first():
    assert len(toolbox._notes()) >= 20
    hits = json.loads(run("search_notes", query="why does agent cost grow quadratically").content)
    assert hits[0]["id"] == "quadratic-cost"
    assert "quadratic" in run("read_note", note_id="quadratic-cost").content.lower()
    missing = run("read_note", note_id="caching")
    assert missing.is_error and "Did you mean" in missing.content


def test_flaky_fails_on_a_seeded_schedule_that_repeats():
    first = [run("flaky", message="m", seed=7).is_error for _ in range(8)]
    toolbox.reset_flaky()
    second = [run("flaky", message="m", seed=7).is_error for _ in range(8)]
    assert first == second
    assert any(first) and not all(first)


def test_slow_sleeps_the_time_it_is_given():
    assert run("slow", seconds=0).content == "slept 0 s"
    assert run("slow", seconds=-1).is_error
    started = time.monotonic()
    outcome = run("slow", seconds=0.3)
    took = time.monotonic() - started
    assert outcome.content == "slept 0.3 s" and not outcome.is_error
    assert 0.3 <= took < 5  # it really sleeps, and no longer than asked for by much
    assert 300 <= outcome.duration_ms < 5000


def test_read_file_is_confined_to_the_sandbox(tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_text("hello")
    monkeypatch.setenv("AGENTCORE_SANDBOX", str(tmp_path))
    assert run("read_file", path="a.txt").content == "hello"
    assert run("read_file", path=".").content == "a.txt"
    for escape in ("../etc/passwd", "/etc/passwd", "sub/../../x"):
        outcome = run("read_file", path=escape)
        assert outcome.is_error and "outside the sandbox" in outcome.content, escape
    assert "no file" in run("read_file", path="missing.txt").content


def test_get_tools_rejects_unknown_names():
    assert [t.name for t in toolbox.get_tools("calculator, clock")] == ["calculator", "clock"]
    with pytest.raises(UsageError, match="unknown tool 'nope'"):
        toolbox.get_tools(["nope"])

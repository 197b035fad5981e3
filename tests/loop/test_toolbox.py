"""The built-in toolbox: safe arithmetic, offline data, ranking, schedules, the sandbox."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

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


@pytest.mark.parametrize(
    "bomb",
    ["9**9**9**9", "((9**999)**999)**999", "(9**999)**999", "9**999 * 9**999 * 9**999 * 9**999", "round(7, -10**9)"],
)
def test_calculator_refuses_a_result_too_large_to_compute_before_computing_it(bomb):
    started = time.monotonic()
    outcome = run("calculator", expression=bomb)
    assert time.monotonic() - started < 5  # refused, not left to the time limit
    assert outcome.is_error and outcome.error == "exception"
    assert "too large" in outcome.content or "at most 1000 digits" in outcome.content


def test_calculator_still_computes_large_but_bounded_numbers():
    assert run("calculator", expression="2**100").content == f"2**100 = {2**100}"
    assert run("calculator", expression="(2**5000) * (2**4000)").content.endswith(str(2**9000))
    assert run("calculator", expression="0**10**9").content == "0**10**9 = 0"
    assert run("calculator", expression="2**-3").content == "2**-3 = 0.125"
    assert run("calculator", expression="1.0001**100000").content.startswith("1.0001**100000 = 22015.4")
    too_big_float = run("calculator", expression="10.0**400")
    assert too_big_float.is_error and "OverflowError" in too_big_float.content


def test_read_file_refuses_a_fifo_at_once_instead_of_waiting_for_a_writer(tmp_path, monkeypatch):
    os.mkfifo(tmp_path / "pipe")
    monkeypatch.setenv("AGENTCORE_SANDBOX", str(tmp_path))
    started = time.monotonic()
    outcome = run("read_file", path="pipe")
    assert time.monotonic() - started < 5
    assert outcome.is_error and "not a regular file" in outcome.content


def test_read_file_reads_no_more_than_its_cap_of_a_huge_file(tmp_path, monkeypatch):
    io_stats = Path("/proc/self/io")
    if not io_stats.exists():
        pytest.skip("counting the bytes a process reads needs Linux's /proc/self/io")
    with open(tmp_path / "huge.txt", "wb") as f:
        f.truncate(256 * 1024 * 1024)  # sparse: 256 MiB to read, none of it on disk
    monkeypatch.setenv("AGENTCORE_SANDBOX", str(tmp_path))

    def bytes_read() -> int:
        return int(next(line for line in io_stats.read_text().splitlines() if line.startswith("rchar")).split()[1])

    before = bytes_read()
    text = toolbox.read_file(path="huge.txt")  # in this process, where its reads can be counted
    assert bytes_read() - before < 1_000_000
    assert text.endswith(f"[the file is longer: reading stopped after {toolbox.READ_CAP_BYTES:,} bytes]")
    assert not run("read_file", path="huge.txt").is_error


def test_read_file_does_not_follow_a_link_swapped_in_after_its_check(tmp_path, monkeypatch):
    sandbox, outside = tmp_path / "sandbox", tmp_path / "outside"
    (sandbox / "d").mkdir(parents=True)
    (sandbox / "d" / "x.txt").write_text("harmless")
    outside.mkdir()
    (outside / "x.txt").write_text("TOP SECRET")
    monkeypatch.setenv("AGENTCORE_SANDBOX", str(sandbox))
    real_resolve = Path.resolve

    def resolve_then_swap(self, strict=False):
        resolved = real_resolve(self, strict)
        if resolved.name == "x.txt" and (sandbox / "d").is_dir() and not (sandbox / "d").is_symlink():
            (sandbox / "d").rename(sandbox / "d-old")  # the race: after the check, before the open
            (sandbox / "d").symlink_to(outside)
        return resolved

    monkeypatch.setattr(Path, "resolve", resolve_then_swap)
    try:
        text = toolbox.read_file(path="d/x.txt")  # in this process, where the swap can be timed
    except OSError as exc:
        text = str(exc)
    assert "TOP SECRET" not in text
    assert "link" in text

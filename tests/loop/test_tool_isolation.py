"""A tool can never freeze the process: isolated tools are killed on time, a turn's calls and threads are bounded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agentcore import transcript as tr
from agentcore.loop import Agent
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run, RunConfig
from agentcore.toolbox import calculator
from agentcore.tools import tool


@tool(isolated=True, timeout_s=0.5)
def spin(pid_file: str) -> str:
    """Writes its process id, then computes forever."""
    Path(pid_file).write_text(str(os.getpid()))
    while True:
        pass


@tool(isolated=True)
def where(name: str) -> dict:
    """What the worker process sees of its caller: an environment variable and the working folder."""
    return {"pid": os.getpid(), "value": os.environ.get(name), "cwd": os.getcwd()}


@tool(isolated=True)
def fails(why: str) -> str:
    """Raises."""
    raise ValueError(why)


@tool(isolated=True)
def dies() -> str:
    """Ends its own process without a word."""
    os._exit(7)


def run(t, **arguments):
    return t.execute(ToolCall(id="c1", name=t.name, arguments=arguments))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_an_isolated_tool_that_computes_past_its_time_limit_is_killed(tmp_path):
    from agentcore.workers import PROCESSES

    PROCESSES.close()  # one idle worker left from here: the one `where` starts and `spin` then takes
    worker = json.loads(run(where, name="HOME").content)["pid"]
    pid_file = tmp_path / "pid"
    outcome = run(spin, pid_file=str(pid_file))
    assert outcome.is_error and outcome.error == "timeout"
    assert "spin timed out after 0.5 s and its process was killed" in outcome.content
    # on a busy machine the worker may be killed before it wrote its pid: the pid `where` saw is the one it ran in
    pid = int(pid_file.read_text()) if pid_file.exists() else worker
    assert pid == worker != os.getpid()
    assert not alive(pid)  # killed and reaped: it burns no CPU after the timeout
    assert json.loads(run(where, name="HOME").content)["pid"] != worker  # a new worker serves the next call


def test_an_isolated_tool_runs_in_another_process_and_sees_the_callers_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTCORE_ISOLATION_PROBE", "first")
    monkeypatch.chdir(tmp_path)
    first = json.loads(run(where, name="AGENTCORE_ISOLATION_PROBE").content)
    assert first["pid"] != os.getpid()
    assert (first["value"], first["cwd"]) == ("first", str(tmp_path))
    monkeypatch.setenv("AGENTCORE_ISOLATION_PROBE", "second")
    second = json.loads(run(where, name="AGENTCORE_ISOLATION_PROBE").content)
    assert second["value"] == "second"
    assert second["pid"] == first["pid"]  # the worker is reused between calls


def test_an_isolated_tools_failures_are_error_results_the_model_can_read():
    outcome = run(fails, why="no good")
    assert outcome.is_error and outcome.error == "exception"
    assert outcome.content == "Error: fails raised ValueError: no good"
    outcome = run(dies)
    assert outcome.is_error and "dies ended its process without a result (exit code 7)" in outcome.content
    assert not run(where, name="HOME").is_error


def test_only_a_module_level_function_can_be_isolated():
    with pytest.raises(TypeError, match="module level"):

        @tool(isolated=True)
        def local() -> str:
            """Cannot be imported by name."""
            return "x"


@pytest.mark.slow  # starts the command line's own process
def test_a_calculator_bomb_through_replay_ends_at_once_with_an_error_result(tmp_path):
    bombs = ["9**9**9**9", "((9**999)**999)**999"]
    calls = [ToolCall(id=f"c{i}", name="calculator", arguments={"expression": e}) for i, e in enumerate(bombs)]
    source = Run.start("Compute these.", RunConfig(tools=[calculator.spec()], max_steps=3))
    source.append(AssistantMessage(tool_calls=tuple(calls)))
    for call in calls:
        source.append(ToolMessage(tool_call_id=call.id, name="calculator", content="(recorded)"))
    source.append(AssistantMessage(tool_calls=(ToolCall(id="c9", name="calculator", arguments={"expression": "6*7"}),)))
    source.append(ToolMessage(tool_call_id="c9", name="calculator", content="(recorded)"))
    source.append(AssistantMessage(content="Done."))
    path, out = tmp_path / "bomb.json", tmp_path / "replayed.json"
    tr.save(source, path)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "agentcore", "run", "--replay", str(path), "--no-db", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=40,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert took < 30  # within the calculator's 30 s time limit, not at it
    replayed = tr.load(out)
    results = [m for m in replayed.messages if isinstance(m, ToolMessage)]
    assert [r.is_error for r in results] == [True, True, False]  # and the process went on to the next step
    assert all("result too large" in r.content for r in results[:2])
    assert results[2].content == "6*7 = 42"


def calling(n: int) -> list[AssistantMessage]:
    calls = tuple(ToolCall(id=f"c{i}", name="busy", arguments={}) for i in range(n))
    return [AssistantMessage(tool_calls=calls), AssistantMessage(content="done")]


def concurrency_probe():
    lock, state = threading.Lock(), {"now": 0, "most": 0, "ran": 0}

    @tool
    def busy() -> str:
        """Holds a slot for a moment."""
        with lock:
            state["now"] += 1
            state["ran"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.02)
        with lock:
            state["now"] -= 1
        return "ok"

    return busy, state


def test_a_turn_with_hundreds_of_calls_runs_a_bounded_number_on_bounded_threads():
    busy, state = concurrency_probe()
    run_ = Run.start("go", RunConfig())
    Agent(ScriptedProvider(replay=calling(300)), [busy]).run(run_)
    assert run_.stop_reason == "answer"
    results = [m for m in run_.messages if isinstance(m, ToolMessage)]
    assert len(results) == 300  # every call is answered, in order
    assert [r.tool_call_id for r in results] == [f"c{i}" for i in range(300)]
    assert state["ran"] == 64 and 1 < state["most"] <= 16
    assert not any(r.is_error for r in results[:64])
    refused = results[64:]
    assert all(r.is_error and "refused and not run" in r.content for r in refused)
    assert "calls 65 to 300 were refused" in refused[0].content
    assert {t.error for t in run_.steps[0].tool_runs[64:]} == {"too_many_calls"}
    assert {t.source for t in run_.steps[0].tool_runs[64:]} == {"refused"}


def test_the_per_turn_limits_are_settings_of_the_agent():
    busy, state = concurrency_probe()
    run_ = Run.start("go", RunConfig())
    Agent(ScriptedProvider(replay=calling(10)), [busy], max_tool_calls=6, max_tool_workers=2).run(run_)
    results = [m for m in run_.messages if isinstance(m, ToolMessage)]
    assert state["ran"] == 6 and state["most"] == 2
    assert [r.is_error for r in results] == [False] * 6 + [True] * 4
    assert "calls 7 to 10 were refused" in results[-1].content

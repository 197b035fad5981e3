"""Tool calls on the kept worker threads: a hung call still times out, hung calls never use the workers up,
and the calls of one turn overlap on threads that outlive the turn. A run driven from a thread other than the
main one (the app's script thread) hands each limited call to a worker; in the main thread the time limit is kept
by the timer instead (tests/loop/test_tool_time_limits.py)."""

from __future__ import annotations

import threading

import pytest
from support.threads import off_main

from agentcore import Agent, AssistantMessage, Run, ScriptedProvider, ToolCall, tool
from agentcore.loop import DEFAULT_MAX_TOOL_WORKERS


def turn(name: str, count: int) -> AssistantMessage:
    return AssistantMessage(tool_calls=tuple(ToolCall(id=f"{name}{i}", name=name, arguments={}) for i in range(count)))


def answer() -> AssistantMessage:
    return AssistantMessage(content="done")


@pytest.fixture
def release():
    """Set when the test ends, so that the workers its hung calls kept are let go."""
    event = threading.Event()
    yield event
    event.set()


def hang_tool(release: threading.Event, threads: list[threading.Thread]):
    @tool(timeout_s=0.05)
    def hang() -> str:
        """Waits until the test ends."""
        threads.append(threading.current_thread())
        release.wait(5)
        return "late"

    return hang


@tool(timeout_s=2)
def quick() -> str:
    """Answers at once."""
    return "here"


def test_a_hung_call_times_out_on_a_kept_worker_and_the_run_goes_on(release):
    threads: list[threading.Thread] = []
    provider = ScriptedProvider(replay=[turn("hang", 1), turn("quick", 1), answer()])
    agent = Agent(provider, [hang_tool(release, threads), quick])
    run = off_main(agent.run, Run.start("x"))
    hung, served = run.messages[2], run.messages[4]
    assert hung.is_error and "timed out after 0.05 s" in hung.content
    assert run.steps[0].tool_runs[0].error == "timeout"
    assert (served.content, served.is_error) == ("here", False)
    assert run.stop_reason == "answer"
    # the hung call keeps its worker, a daemon that cannot hold the process open, and is left to it
    assert threads[0].name == "tool-hang" and threads[0].daemon and threads[0].is_alive()


def test_hung_calls_in_a_row_leave_workers_for_the_calls_after_them(release):
    threads: list[threading.Thread] = []
    hung_turns = [turn("hang", 1)] * 4 + [turn("hang", DEFAULT_MAX_TOOL_WORKERS)] * 2
    provider = ScriptedProvider(replay=[*hung_turns, turn("quick", 3), answer()])
    agent = Agent(provider, [hang_tool(release, threads), quick])
    run = off_main(agent.run, Run.start("x"))
    hung = [m for m in run.messages if getattr(m, "name", None) == "hang"]
    assert len(hung) == 4 + 2 * DEFAULT_MAX_TOOL_WORKERS and all(m.is_error for m in hung)
    assert len(threads) == len(hung) and all(t.is_alive() for t in threads)  # every one still holds its worker
    served = [m for m in run.messages if getattr(m, "name", None) == "quick"]
    assert [(m.content, m.is_error) for m in served] == [("here", False)] * 3
    assert run.stop_reason == "answer"


def test_the_calls_of_one_turn_overlap_on_threads_kept_from_the_turn_before():
    met = threading.Barrier(3, timeout=5)
    threads: list[threading.Thread] = []

    @tool(timeout_s=None)  # runs on the thread the turn gave it, not handed on
    def meet() -> str:
        """Waits at a barrier of three."""
        threads.append(threading.current_thread())
        met.wait()
        return "met"

    agent = Agent(ScriptedProvider(replay=[turn("meet", 3), turn("meet", 3), answer()]), [meet])
    run = Run.start("x")
    agent.step(run)
    alive = set(threading.enumerate())
    agent.step(run)
    results = [m for m in run.messages if getattr(m, "name", None) == "meet"]
    assert [(m.content, m.is_error) for m in results] == [("met", False)] * 6  # the barrier was passed twice
    assert len(set(threads[3:])) == 3 and set(threads[3:]) <= alive  # no thread started for the second turn

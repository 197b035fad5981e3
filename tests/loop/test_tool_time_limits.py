"""A tool's time limit where the loop runs in the main thread: kept by the real-time timer (SIGALRM), with no
handoff to a worker thread; and where that way is not open (another thread, a process with a SIGALRM handler or
a timer of its own, a call inside such a call), the worker thread's way, with the same time limit."""

from __future__ import annotations

import signal
import threading
import time

import pytest
from support.threads import off_main

from agentcore import Agent, AssistantMessage, Run, ScriptedProvider, ToolCall, tool
from agentcore.workers import within


def call(t, **arguments):
    return t.execute(ToolCall(id="c1", name=t.name, arguments=arguments))


def timer_untouched() -> bool:
    return signal.getsignal(signal.SIGALRM) is signal.SIG_DFL and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@tool(timeout_s=0.2)
def hang() -> str:
    """Sleeps past its limit."""
    time.sleep(5)
    return "late"


@tool(timeout_s=0.2)
def spin() -> str:
    """Computes past its limit, in Python."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        pass
    return "late"


@tool(timeout_s=0.2)
def swallow() -> str:
    """Sleeps past its limit inside an `except Exception` that would hide a failure."""
    try:
        time.sleep(5)
    except Exception:  # noqa: BLE001 - what a careless tool does
        return "swallowed"
    return "late"


@tool(timeout_s=5)
def named() -> str:
    """Names the thread it runs in."""
    return threading.current_thread().name


def test_a_call_in_the_main_thread_runs_there_and_leaves_no_handler_or_timer_behind():
    assert timer_untouched()
    outcome = call(named)
    assert (outcome.content, outcome.is_error) == (threading.main_thread().name, False)
    assert timer_untouched()  # the 5 s timer was cancelled: it cannot fire later, in the caller's own code


@pytest.mark.parametrize("stuck", [hang, spin, swallow], ids=["sleeping", "computing", "catching Exception"])
def test_a_call_past_its_limit_in_the_main_thread_is_stopped_there(stuck):
    started = time.monotonic()
    outcome = call(stuck)
    assert (outcome.is_error, outcome.error) == (True, "timeout")
    assert outcome.content == f"Error: {stuck.name} timed out after 0.2 s and was stopped."
    assert time.monotonic() - started < 4  # it was stopped, not waited for (each sleeps or spins 5 s)
    assert timer_untouched()


def test_a_call_past_its_limit_elsewhere_is_abandoned_on_its_worker():
    outcome = off_main(call, hang)
    assert (outcome.error, outcome.content) == ("timeout", "Error: hang timed out after 0.2 s and was abandoned.")
    assert off_main(call, named).content == "tool-named"


def test_a_process_with_its_own_sigalrm_handler_keeps_it_and_calls_go_to_workers():
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        assert call(named).content == "tool-named"
        assert call(hang).content == "Error: hang timed out after 0.2 s and was abandoned."
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        deadline = time.monotonic() + 5
        while not fired and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fired == [signal.SIGALRM]  # its handler is still the one called
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_process_with_a_timer_running_keeps_it_and_calls_go_to_workers():
    signal.setitimer(signal.ITIMER_REAL, 100)  # with no handler of its own: it would end the process at 100 s
    try:
        assert call(named).content == "tool-named"
        assert call(hang).error == "timeout"
        assert 90 < signal.getitimer(signal.ITIMER_REAL)[0] <= 100  # neither replaced nor cancelled
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def test_a_call_inside_a_call_goes_to_a_worker_and_the_outer_limit_still_holds():
    @tool(timeout_s=5)
    def inner() -> str:
        """Sleeps within its own limit, past the outer one."""
        time.sleep(2)
        return threading.current_thread().name

    @tool(timeout_s=0.3)
    def outer() -> str:
        """Calls `inner` as an agent-as-tool would."""
        return call(inner).content

    @tool(timeout_s=5)
    def outer_with_time() -> str:
        """Calls `named` within its own limit."""
        return call(named).content

    assert call(outer_with_time).content == "tool-named"  # the timer was the outer call's: the worker's way
    outcome = call(outer)
    assert outcome.content == "Error: outer timed out after 0.3 s and was stopped."
    assert timer_untouched()


def test_a_ctrl_c_in_a_call_in_the_main_thread_stops_the_caller_and_elsewhere_is_the_tools_failure():
    @tool(timeout_s=5)
    def interrupted() -> str:
        """Raises what Ctrl-C raises."""
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        call(interrupted)
    assert timer_untouched()
    outcome = off_main(call, interrupted)
    assert (outcome.is_error, outcome.error) == (True, "exception") and "KeyboardInterrupt" in outcome.content


def test_a_failure_of_the_tool_in_the_main_thread_is_data_for_the_model():
    @tool(timeout_s=5)
    def boom() -> str:
        """Fails."""
        raise ValueError("bad")

    outcome = call(boom)
    assert (outcome.is_error, outcome.error) == (True, "exception") and "ValueError: bad" in outcome.content
    assert timer_untouched()


def test_the_limited_calls_of_one_turn_still_overlap_when_the_loop_runs_in_the_main_thread():
    met = threading.Barrier(2, timeout=5)
    threads: list[str] = []

    @tool(timeout_s=5)
    def meet() -> str:
        """Waits at a barrier of two."""
        threads.append(threading.current_thread().name)
        met.wait()
        return "met"

    turn = AssistantMessage(tool_calls=tuple(ToolCall(id=f"m{i}", name="meet", arguments={}) for i in range(2)))
    agent = Agent(ScriptedProvider(replay=[turn, AssistantMessage(content="done")]), [meet])
    run = agent.run(Run.start("x"))
    results = [m for m in run.messages if getattr(m, "name", None) == "meet"]
    assert [(m.content, m.is_error) for m in results] == [("met", False)] * 2  # both at the barrier at once
    assert threading.main_thread().name in threads  # the main thread took its share, under its timer
    assert timer_untouched()


def test_within_says_where_it_cannot_run_and_then_runs_nothing():
    ran: list[int] = []
    assert within(lambda: ran.append(1), 0) is None
    assert off_main(within, lambda: ran.append(2), 1.0) is None
    assert ran == []
    assert within(lambda: ran.append(3), 1.0) is True and ran == [3]
    assert within(lambda: time.sleep(2), 0.05) is False
    assert timer_untouched()


def test_a_sigalrm_that_comes_when_no_call_is_timed_raises_nothing():
    import agentcore.workers as workers

    workers._on_alarm(signal.SIGALRM, None)  # after the call returned, or sent by another process: ignored
    workers._armed = True
    try:
        with pytest.raises(workers.TimedOut):
            workers._on_alarm(signal.SIGALRM, None)
        assert workers._armed is False  # raised once: a second signal before the call ends raises nothing
        workers._on_alarm(signal.SIGALRM, None)
    finally:
        workers._armed = False

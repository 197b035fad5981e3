"""The rules of tools and of the workers that run them, each at its limit: a spec, an outcome and a tool are values;
a call's duration; a Ctrl-C in a call with no time limit; an isolated call's failures before its tool runs; how
`_Workers.each` shares a batch out and hands failures back; a worker thread's idle exit and daemon status; the
SIGALRM guard around a timed call; a worker process's message framing, its own session, and the idle ones kept.

The hints here are postponed (`from __future__ import annotations`): `@tool` reads them as the objects they name,
a pydantic type (ImportString) and a Literal among them.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import queue
import signal
import struct
import subprocess
import sys
import threading
import time
import types
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, ImportString, ValidationError
from support.threads import off_main

import agentcore
from agentcore import Agent, AssistantMessage, Run, ScriptedProvider, ToolCall, workers
from agentcore import tools as tools_module
from agentcore.tools import Tool, ToolOutcome, ToolSpec, tool
from agentcore.workers import _Process, _Processes, _receive, _Workers, within

ROOT = Path(agentcore.__file__).resolve().parent.parent


@tool(isolated=True)
def imported(target: ImportString) -> str:
    """Names the object that `target` imports (a module does not pickle: it cannot be sent to a worker)."""
    return repr(target)


@tool
def paint(colour: Literal["red", "blue"], coats: int = 1) -> str:
    """Paints the wall."""
    return f"{coats} coat(s) of {colour}"


@tool(isolated=True, timeout_s=0.3)
def sleeps(seconds: float) -> str:
    """Sleeps in its worker process."""
    time.sleep(seconds)
    return "woke"


@tool(isolated=True)
def process_ids() -> dict:
    """The worker process's id, process group and session."""
    return {"pid": os.getpid(), "group": os.getpgid(0), "session": os.getsid(0)}


class Stop(BaseException):
    """Not an Exception: what a Ctrl-C or a TimedOut is to the code that runs a batch."""


class LateQueue:
    """A worker pool's task queue whose caller, once `armed`, is slow to queue a task it has promised to a waiting
    worker: `put` waits until a worker has timed out waiting (as when the caller is preempted in between)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self.armed = False
        self.timed_out = threading.Event()

    def get(self, timeout: float | None = None):
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            self.timed_out.set()
            raise

    def put(self, item) -> None:
        if self.armed:
            self.timed_out.clear()
            self.timed_out.wait(5)
        self._queue.put(item)


def run(t, **arguments):
    return t.execute(ToolCall(id="c1", name=t.name, arguments=arguments))


def frame(data: bytes) -> bytes:
    """A message as `_send` writes it: its length, then its bytes."""
    return struct.pack("<Q", len(data)) + data


def python(script: str) -> subprocess.CompletedProcess:
    """`script` run by a fresh Python that imports this checkout's agentcore."""
    return subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); {script}"],
        capture_output=True,
        text=True,
        timeout=30,
    )


def wait_for(condition, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture(scope="module")
def processes():
    """A private pool of worker processes for this module's isolated calls, closed when the module ends."""
    pool = _Processes(keep=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tools_module, "PROCESSES", pool)
        yield pool
    pool.close()


# -- tools, specs and outcomes -------------------------------------------------------------


def test_a_spec_cannot_be_changed_in_place_so_its_kept_plain_form_and_size_stay_right():
    spec = ToolSpec(name="lookup", description="Look up a key.")
    data, tokens = spec.data, spec.tokens
    with pytest.raises(ValidationError):
        spec.description = "Look up a key and return its record, in full. " * 4
    assert (spec.description, spec.data, spec.tokens) == ("Look up a key.", data, tokens)


def test_a_copy_of_a_spec_shares_its_schema_as_pydantic_s_does_unless_a_deep_copy_is_asked():
    spec = ToolSpec(name="lookup", parameters={"type": "object", "properties": {"key": {"type": "string"}}})
    renamed = spec.model_copy(update={"name": "find"})
    assert renamed.name == "find" and renamed.parameters is spec.parameters  # shallow: nothing is copied twice
    deep = spec.model_copy(update={"name": "find"}, deep=True)
    assert deep.parameters == spec.parameters and deep.parameters is not spec.parameters


def test_an_outcome_is_a_value_that_cannot_be_changed_and_equal_ones_hash_alike():
    outcome = ToolOutcome("7", is_error=False, duration_ms=1.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.content = "8"  # a hook makes a new one (dataclasses.replace) rather than alter the one it got
    assert {outcome: "seen"}[ToolOutcome("7", is_error=False, duration_ms=1.5)] == "seen"


def test_an_answer_given_without_running_the_tool_is_a_plain_result_that_took_no_time():
    assert ToolOutcome.answer("Paris") == ToolOutcome("Paris", is_error=False, duration_ms=0.0, error=None)


def test_a_tool_is_a_value_that_cannot_be_changed_and_can_be_a_key():
    @tool
    def add(a: int, b: int = 2) -> int:
        """Add two integers."""
        return a + b

    with pytest.raises(dataclasses.FrozenInstanceError):
        add.timeout_s = None
    assert {add: "kept"}[add] == "kept" and add in {add}
    assert dataclasses.replace(add, _schema={}) == add  # its schema is derived from its arguments' model


def test_a_tools_repr_names_it_and_its_rules_but_not_its_schema():
    @tool(timeout_s=5)
    def lookup(key: str, limit: int = 10) -> str:
        """Look up a key."""
        return key

    text = repr(lookup)
    assert "name='lookup'" in text and "timeout_s=5" in text
    assert "properties" not in text and "limit" not in text


def test_a_tool_made_directly_as_an_adapter_does_runs_in_this_process_alongside_the_others_of_its_turn():
    met = threading.Barrier(2, timeout=5)
    pids: list[int] = []

    def meet() -> str:  # a closure, as the benchmark adapters' are: no worker process could import it
        pids.append(os.getpid())
        met.wait()
        return "met"

    class NoArguments(BaseModel):
        model_config = ConfigDict(extra="forbid")

    direct = Tool(name="meet", description="Waits at a barrier of two.", fn=meet, args_model=NoArguments)
    turn = AssistantMessage(tool_calls=tuple(ToolCall(id=f"m{i}", name="meet", arguments={}) for i in range(2)))
    agent = Agent(ScriptedProvider(replay=[turn, AssistantMessage(content="done")]), [direct])
    ran = agent.run(Run.start("x"))
    results = [m for m in ran.messages if getattr(m, "name", None) == "meet"]
    assert [(m.content, m.is_error) for m in results] == [("met", False)] * 2  # both at the barrier at once
    assert pids == [os.getpid()] * 2


def test_a_tools_postponed_hints_are_read_as_the_types_they_name():
    assert paint.parameters["properties"]["colour"] == {"enum": ["red", "blue"], "type": "string"}
    assert paint.parameters["required"] == ["colour"]
    assert run(paint, colour="red", coats=2).content == "2 coat(s) of red"
    refused = run(paint, colour="green")
    assert (refused.is_error, refused.error) == (True, "invalid_arguments") and "colour" in refused.content


def test_a_tool_whose_hint_names_nothing_is_refused_when_it_is_made():
    def broken(x: NoSuchType) -> str:  # noqa: F821 - the name is what is missing
        return "never"

    with pytest.raises(Exception, match="NoSuchType"):
        tool(broken)


def test_a_tool_can_still_be_called_as_its_function():
    @tool
    def add(a: int, b: int = 2) -> int:
        """Add two integers."""
        return a + b

    assert add(3, 4) == 7 and add(a=1) == 3


def test_a_tools_description_is_its_docstring_or_empty_without_one():
    @tool
    def documented() -> str:
        """Says hello.

        At length.
        """
        return "hello"

    def bare() -> str:
        return "x"

    assert documented.description == "Says hello.\n\nAt length."
    assert tool(bare).description == "" and tool(bare).spec().description == ""
    assert tool(description="Given.")(bare).description == "Given."


def test_a_calls_duration_is_the_time_it_took_in_milliseconds():
    @tool(timeout_s=None)
    def pause() -> str:
        """Takes 50 ms."""
        time.sleep(0.05)
        return "rested"

    outcome = run(pause)
    assert outcome.content == "rested" and 40 <= outcome.duration_ms < 5000


def test_a_ctrl_c_in_a_call_with_no_time_limit_stops_its_caller_in_any_thread():
    @tool(timeout_s=None)
    def interrupted() -> str:
        """Raises what Ctrl-C raises."""
        raise KeyboardInterrupt

    @tool(timeout_s=5)
    def interrupted_in_time() -> str:
        """Raises what Ctrl-C raises."""
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(interrupted)
    with pytest.raises(KeyboardInterrupt):  # it ran in the calling thread, whose Ctrl-C it is
        off_main(run, interrupted)
    outcome = off_main(run, interrupted_in_time)  # handed to a worker thread: there it is the tool's failure
    assert (outcome.is_error, outcome.error) == (True, "exception") and "KeyboardInterrupt" in outcome.content


# -- isolated tools: what fails before the tool runs -----------------------------------------


def test_arguments_that_cannot_be_sent_to_the_worker_process_are_an_error_and_the_worker_serves_on(processes):
    outcome = run(imported, target="os")
    assert (outcome.is_error, outcome.error) == (True, "exception")
    assert outcome.content.startswith("Error: the arguments for imported cannot be sent to its worker process: ")
    assert "module" in outcome.content  # what pickle said
    assert run(imported, target="os.sep").content == repr(os.sep)  # the worker never saw the job: kept, it serves


def test_a_worker_process_that_cannot_be_started_is_an_error_for_the_model(monkeypatch, tmp_path):
    pool = _Processes(keep=1)
    monkeypatch.setattr(tools_module, "PROCESSES", pool)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python-here"))
    try:
        outcome = run(imported, target="os.sep")
    finally:
        pool.close()
    assert (outcome.is_error, outcome.error) == (True, "exception")
    assert outcome.content.startswith("Error: imported could not be run in a worker process: FileNotFoundError: ")


def test_an_isolated_tool_its_process_cannot_load_is_an_error_for_the_model(processes, monkeypatch):
    module = types.ModuleType("agentcore_rules_made_at_run_time")
    exec('def made() -> str:\n    """Made at run time, in no file."""\n    return "made"\n', module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    made = tool(isolated=True)(module.made)  # importable by name here, but not in another process
    assert made() == "made"
    outcome = run(made)
    assert (outcome.is_error, outcome.error) == (True, "exception")
    assert outcome.content.startswith("Error: made could not be loaded in its process: ModuleNotFoundError: ")


def test_a_worker_process_is_in_a_session_of_its_own_where_a_ctrl_c_at_the_terminal_does_not_reach(processes):
    ids = json.loads(run(process_ids).content)
    assert ids["pid"] != os.getpid()
    assert ids["session"] == ids["group"] == ids["pid"]  # it leads a session and a process group of its own
    assert (ids["session"], ids["group"]) != (os.getsid(0), os.getpgid(0))


def test_a_timed_out_call_is_a_timeout_though_its_replacement_process_cannot_start(monkeypatch):
    pool = _Processes(keep=1)
    monkeypatch.setattr(tools_module, "PROCESSES", pool)
    started = []

    def start_once():
        if started:
            raise OSError("no more processes")
        started.append(_Process())
        pool._all.add(started[0])
        return started[0]

    monkeypatch.setattr(pool, "_start", start_once)
    try:
        outcome = run(sleeps, seconds=30)
    finally:
        pool.close()
    assert (outcome.is_error, outcome.error) == (True, "timeout")
    assert outcome.content == "Error: sleeps timed out after 0.3 s and its process was killed."
    assert started[0].proc.poll() is not None  # the timed-out worker was killed all the same


# -- worker processes: framing and the idle ones kept ---------------------------------------


def test_a_message_from_the_other_process_is_read_whole_or_not_at_all():
    stream = io.BytesIO(frame(b"abc") + frame(b"") + frame(b"last"))
    assert [_receive(stream), _receive(stream), _receive(stream)] == [b"abc", b"", b"last"]
    whole = frame(b"abc")
    for cut in (b"", whole[:1], whole[:7], whole[:8], whole[:-1]):  # a pipe that ended inside a message
        with pytest.raises(EOFError):
            _receive(io.BytesIO(cut))


def test_a_pool_keeps_at_most_keep_idle_workers_and_stops_the_rest():
    pool = _Processes(keep=1)
    try:
        first, second = pool._take(), pool._take()  # none idle: each starts a process
        assert first is not second
        pool._give(first)
        pool._give(second)
        assert first.proc.poll() is None  # kept: exactly `keep` of them
        assert second.proc.poll() is not None  # one past `keep`: killed and reaped
        assert pool._take() is first
    finally:
        pool.close()


# -- worker threads ---------------------------------------------------------------------------


def test_each_runs_every_item_once_however_many_there_are():
    pool = _Workers(idle_s=0.05)
    for count in (0, 1, 2, 3, 5):
        seen: list[int] = []
        pool.each(seen.append, list(range(count)), limit=4)
        assert sorted(seen) == list(range(count))
    threads: list[threading.Thread] = []
    pool.each(lambda _: threads.append(threading.current_thread()), ["only"], limit=4)
    assert threads == [threading.current_thread()]  # one item: the caller's own, no worker


def test_a_base_exception_on_a_worker_is_raised_in_the_caller_once_every_item_has_returned():
    pool = _Workers(idle_s=0.05)
    caller = threading.get_ident()
    met = threading.Barrier(2, timeout=5)  # one item on the caller, the other on a worker
    finished: list[int] = []

    def fn(item: int) -> None:
        met.wait()
        if threading.get_ident() != caller:
            raise Stop
        time.sleep(0.05)
        finished.append(item)

    with pytest.raises(Stop):
        pool.each(fn, [0, 1], limit=2)
    assert len(finished) == 1  # the caller's item ran to its end first


def test_the_callers_own_base_exception_is_raised_at_once_and_the_workers_take_no_more_items():
    pool = _Workers(idle_s=60)
    caller = threading.get_ident()
    worker_busy, release = threading.Event(), threading.Event()
    ran: list[int] = []

    def fn(item: int) -> None:
        if threading.get_ident() == caller:
            worker_busy.wait(10)  # once a worker holds an item
            raise Stop
        worker_busy.set()
        release.wait(5)
        ran.append(item)

    try:
        with pytest.raises(Stop):
            pool.each(fn, list(range(10)), limit=2)
        assert ran == []  # raised while the worker's item still ran, not after it
    finally:
        release.set()
    assert wait_for(lambda: pool._idle == 1)  # the worker is back, waiting for work
    assert len(ran) == 1  # it finished the item it held and took no other


def test_an_idle_worker_leaves_after_idle_s():
    pool = _Workers(idle_s=0.05)
    threads: list[threading.Thread] = []
    assert pool.run(lambda: threads.append(threading.current_thread()), 5)
    threads[0].join(5)
    assert not threads[0].is_alive()


def test_a_waiting_worker_promised_a_task_stays_past_idle_s_for_it():
    pool = _Workers(idle_s=0.2)
    late = LateQueue()
    pool._tasks = late
    ran: list[str] = []
    assert pool.run(lambda: ran.append("first"), 5)
    late.armed = True  # from here a task comes after its worker's wait timed out
    assert pool.run(lambda: ran.append("promised"), 5)
    assert ran == ["first", "promised"]


def test_a_worker_thread_whose_call_hangs_does_not_keep_the_process_from_exiting():
    done = python(
        "import threading; from agentcore.workers import _Workers; "
        "print(_Workers().run(threading.Event().wait, 0.05), flush=True)"
    )
    assert (done.returncode, done.stdout) == (0, "False\n"), done.stderr


# -- the time limit's SIGALRM guard -----------------------------------------------------------


def test_a_sigalrm_before_any_call_was_ever_timed_raises_nothing():
    done = python("import signal; from agentcore import workers; workers._on_alarm(signal.SIGALRM, None); print('ok')")
    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr


def test_a_sigalrm_handled_after_a_timed_call_returned_raises_nothing():
    # the timer can fire as the call returns: its handler then runs in `within`'s own clean-up, after the call
    assert within(lambda: None, 5.0) is True
    workers._on_alarm(signal.SIGALRM, None)
    assert within(lambda: time.sleep(2), 0.05) is False
    workers._on_alarm(signal.SIGALRM, None)

"""Where a tool call runs when it has a time limit: in the main thread itself, under the process's real-time
timer, where that thread calls and nothing else in the process uses the timer; else on a reused worker thread;
or, for an isolated tool, in a reused worker process that the time limit really stops (Python cannot kill a
thread, and a thread that computes holds the GIL)."""

from __future__ import annotations

import atexit
import importlib
import os
import pickle
import queue
import select
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .tool_output import describe, raised, shown

_Item = TypeVar("_Item")


class _Workers:
    """Daemon threads that run tool calls and are reused, since starting a thread costs more than most tools.

    Daemon, because Python cannot kill a thread: a hung call keeps its worker, which is
    abandoned (never joined), and the next call starts a new one, so hung calls never use up
    the pool; a hung worker whose call ends at last waits for work like the others. A worker
    idle for `idle_s` exits, so a burst of concurrent calls does not leave threads behind.
    """

    def __init__(self, idle_s: float = 60.0) -> None:
        self._idle_s = idle_s
        self._reset()

    def _reset(self) -> None:
        # also the child's state after a fork, which copies the counts but none of the threads
        self._tasks: queue.SimpleQueue[tuple[Callable[[], None], threading.Lock]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # waiting workers not yet promised to a queued task

    def run(self, target: Callable[[], None], timeout_s: float | None) -> bool:
        """Run `target` on a worker; True if it finished within `timeout_s` (None: no limit)."""
        return self._hand(target).acquire(timeout=-1 if timeout_s is None else max(timeout_s, 0))

    def each(self, fn: Callable[[_Item], None], items: Sequence[_Item], limit: int) -> None:
        """`fn` over the items side by side, at most `limit` at a time, and back when every one has returned.

        The calling thread takes a share of the items itself and workers the rest. An exception is raised
        here once all have returned, the first item's first; the caller's own Ctrl-C is raised at once, and
        the workers take no further items.
        """
        if len(items) == 1:
            fn(items[0])  # the calling thread's own share, with no lock and no worker: a turn of one call
            return
        queued = iter(enumerate(items))
        taking = threading.Lock()
        failed: dict[int, BaseException] = {}
        stopped = False

        def share(caller: bool = False) -> None:
            while not stopped:
                with taking:
                    taken = next(queued, None)
                if taken is None:
                    return
                index, item = taken
                try:
                    fn(item)
                except Exception as exc:  # noqa: BLE001 - raised in the caller once every item has returned
                    failed[index] = exc
                except BaseException as exc:
                    if caller:
                        raise
                    failed[index] = exc

        lanes = [self._hand(share) for _ in range(min(limit, len(items)) - 1)]
        try:
            share(caller=True)
        except BaseException:
            stopped = True
            raise
        for finished in lanes:
            finished.acquire()
        if failed:
            raise failed[min(failed)]

    def _hand(self, target: Callable[[], None]) -> threading.Lock:
        """Queue `target` for a waiting worker, or a new one when none waits; the lock it releases when done."""
        finished = threading.Lock()
        finished.acquire()
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        self._tasks.put((target, finished))
        if start:
            threading.Thread(target=self._work, name="agentcore-tool", daemon=True).start()
        return finished

    def _work(self) -> None:
        while True:
            try:
                target, finished = self._tasks.get(timeout=self._idle_s)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # nobody counts on this worker: leave
                        self._idle -= 1
                        return
                continue  # a task was promised to the waiting workers and is on its way
            try:
                target()
            finally:
                # book-keeping before the release, so the waiting caller wakes to a worker that is
                # about to block, not one that still holds the GIL
                threading.current_thread().name = "agentcore-tool"
                with self._lock:
                    self._idle += 1
                finished.release()


THREADS = _Workers()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=THREADS._reset)


# -- the main thread: a time limit kept by the real-time timer ---------------------------


class TimedOut(BaseException):
    """Raised inside a call run by `within` when its time limit passes. A BaseException, so that a tool's own
    `except Exception` does not take it for one of its failures; a call that catches it and goes on is not
    stopped by it."""


# the C functions under the signal module's own, which wrap each handler and number in an enum: three of those
# a call cost more than the system calls themselves
try:
    from _signal import ITIMER_REAL as _TIMER
    from _signal import SIG_DFL as _DEFAULT
    from _signal import SIGALRM as _ALARM
    from _signal import getitimer as _getitimer
    from _signal import getsignal as _getsignal
    from _signal import setitimer as _setitimer
    from _signal import signal as _handle
except ImportError:  # no SIGALRM or no setitimer (Windows): calls take the worker-thread way
    _TIMER = None
_armed = False  # a call of `within` is running and its time limit has not yet passed


def _on_alarm(signum: int, frame: Any) -> None:
    global _armed
    if _armed:  # not a signal that came after the call returned, or from another process
        _armed = False
        raise TimedOut


def within(target: Callable[[], None], timeout_s: float) -> bool | None:
    """Run `target` in this thread with SIGALRM due when `timeout_s` passes: True if it returned in time, False
    if the time limit passed first (TimedOut was raised in it, at the point where it was), None if this way is
    not open here and nothing was run.

    Open in the main thread (where Python runs signal handlers) when no other part of the process has a handler
    for SIGALRM or a real-time timer running (a time limit of its own, an enclosing call of this one): such a
    call takes the worker-thread way. A handoff to a thread costs two thread switches a call, more than the
    rest of a step of the loop on a busy machine; the timer costs four system calls. A call blocked in a system
    call (sleep, a socket, a lock, a child process) is woken by the signal; one computing in Python is stopped
    between two of its instructions.
    """
    global _armed
    if (
        _TIMER is None
        or timeout_s <= 0
        or threading.current_thread() is not threading.main_thread()
        or _getsignal(_ALARM) != _DEFAULT
        or _getitimer(_TIMER) != (0.0, 0.0)
    ):
        return None
    _handle(_ALARM, _on_alarm)
    try:
        try:
            _armed = True
            _setitimer(_TIMER, timeout_s)
            target()
            return True
        except TimedOut:
            return False
        finally:
            _armed = False
            _setitimer(_TIMER, 0)
    finally:
        _handle(_ALARM, _DEFAULT)


# -- isolated tools: worker processes ---------------------------------------------------

_START_TIMEOUT_S = 60.0  # how long a new worker process may take to import agentcore and say it is ready
# a worker runs this, not a module of its own: `python -m agentcore.workers` would load this file twice (as
# __main__ and as agentcore.workers), and a multiprocessing child would run the parent's __main__ again
_WORKER_MAIN = "import sys; sys.path.insert(0, {root!r}); from agentcore.workers import serve; serve()"


@dataclass(frozen=True)
class Job:
    """One isolated call as sent to a worker process; everything in it pickles."""

    name: str
    fn: tuple[str, str]  # (module, qualified name): the worker imports the function rather than unpickling it
    kwargs: dict[str, Any]
    max_output_chars: int
    context: tuple[str | None, dict[str, str], list[str]] | None = None  # cwd, environment, sys.path


class ProcessEnded(Exception):
    """A worker process ended (crashed, was killed, exited) or never started, so it gave no answer."""


class Unsendable(Exception):
    """A job that does not pickle (its arguments, most often): the worker never saw it."""


def function_ref(fn: Callable[..., Any]) -> tuple[str, str]:
    return fn.__module__, fn.__qualname__


def check_importable(name: str, fn: Callable[..., Any]) -> None:
    qualname = getattr(fn, "__qualname__", "")
    if getattr(fn, "__module__", "__main__") == "__main__" or not qualname or "<" in qualname:
        raise TypeError(
            f"tool {name}: an isolated tool must be a function defined at module level in an importable "
            "module, so that its worker process can import it by name"
        )


def _resolve(ref: tuple[str, str]) -> Callable[..., Any]:
    module, qualname = ref
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return getattr(found, "fn", found)  # the module holds the Tool that @tool made of the function


def _context() -> tuple[str | None, dict[str, str], list[str]]:
    # what an isolated call sees of its caller, as a call in a thread would, though the worker started earlier
    try:
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    return cwd, dict(os.environ), list(sys.path)


def _send(out: Any, value: Any) -> None:
    # a length before each message, so a message that fails to unpickle does not leave the stream astray
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(struct.pack("<Q", len(data)) + data)
    out.flush()


def _receive(stream: Any) -> bytes:
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError
    (size,) = struct.unpack("<Q", head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return data


def serve() -> None:
    """A worker process's loop: run each job it is sent and send back (text, error kind)."""
    jobs, replies = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    # the pipes are the worker's own: a tool that reads stdin gets nothing, one that prints writes to stderr
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    _send(replies, "ready")
    while True:
        try:
            data = _receive(jobs)
        except EOFError:  # the parent is gone
            return
        try:
            job = pickle.loads(data)
        except Exception as exc:  # noqa: BLE001 - a job that cannot be read is answered, not fatal
            _send(replies, (f"Error: the tool call could not be read by its process: {describe(exc)}", "exception"))
            continue
        _send(replies, _run_job(job))


def _run_job(job: Job) -> tuple[str, str | None]:
    if job.context is not None:
        cwd, env, path = job.context
        if cwd is not None:
            os.chdir(cwd)
        if env != os.environ:
            os.environ.clear()
            os.environ.update(env)
        sys.path[:] = path
    try:
        fn = _resolve(job.fn)
    except Exception as exc:  # noqa: BLE001 - reported to the model like any failure of the tool
        return f"Error: {job.name} could not be loaded in its process: {describe(exc)}", "exception"
    try:
        value = fn(**job.kwargs)
    except BaseException as exc:  # noqa: BLE001 - a tool's failure is data for the model
        return raised(job.name, exc)
    return shown(job.name, value, job.max_output_chars)


class _Process:
    """One worker process, this same Python in its own session (a Ctrl-C is the parent's), and its pipes."""

    def __init__(self) -> None:
        root = str(Path(__file__).resolve().parent.parent)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER_MAIN.format(root=root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        self.ready = False
        self.context: tuple[str | None, dict[str, str], list[str]] | None = None  # as last sent

    def call(self, job: Job, timeout_s: float | None) -> tuple[str, str | None] | None:
        """Send the job and wait for its answer; None if `timeout_s` passed first."""
        if not self.ready:  # its start does not count against the call's time limit
            if self._read(_START_TIMEOUT_S) != "ready":
                raise ProcessEnded(f"it did not start within {_START_TIMEOUT_S:g} s")
            self.ready = True
        context = _context()
        if context != self.context:
            job = Job(job.name, job.fn, job.kwargs, job.max_output_chars, context)
        try:
            data = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - pickling fails with many exception types
            raise Unsendable(describe(exc)) from None
        try:
            self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
            self.proc.stdin.flush()
        except OSError:
            raise self._ended() from None
        self.context = context
        return self._read(timeout_s)

    def _read(self, timeout_s: float | None) -> Any:
        if timeout_s is not None and not select.select([self.proc.stdout], [], [], max(timeout_s, 0))[0]:
            return None
        try:
            return pickle.loads(_receive(self.proc.stdout))
        except (EOFError, OSError):
            raise self._ended() from None

    def _ended(self) -> ProcessEnded:
        try:
            code = self.proc.wait(1)
        except subprocess.TimeoutExpired:
            code = None
        return ProcessEnded(f"exit code {code}")

    def stop(self) -> None:
        """Kill the process and reap it, so that nothing of it is left running."""
        self.proc.kill()
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()


class _Processes:
    """Worker processes for isolated tools, reused between calls; one that runs out of time is killed and replaced.

    A call takes an idle worker or starts one, so concurrent calls run in parallel; up to `keep`
    idle workers wait for the next calls. A worker costs a Python start and an import of agentcore
    (a few hundred ms), which a killed worker's replacement spends while nobody waits for it.
    POSIX only: the wait for an answer is a select() on a pipe.
    """

    def __init__(self, keep: int = 4) -> None:
        self._keep = keep
        self._reset()

    def _reset(self) -> None:
        # also the child's state after a fork: the parent's workers are not this process's to use
        self._lock = threading.Lock()
        self._idle: list[_Process] = []
        self._all: set[_Process] = set()

    def run(self, job: Job, timeout_s: float | None) -> tuple[str, str | None] | None:
        """Run the job in a worker process: (text, error kind), or None if it timed out and was killed."""
        worker = self._take()
        try:
            reply = worker.call(job, timeout_s)
        except Unsendable:
            self._give(worker)  # the worker never saw the job
            raise
        except BaseException:  # it ended, or a Ctrl-C came while it ran: it may be mid-job
            self._stop(worker)
            raise
        if reply is None:
            self._stop(worker)
            try:
                self._give(self._start())  # the replacement starts now, not when the next call needs it
            except OSError:
                pass  # the call timed out all the same; the next call starts one, and says so if it cannot
            return None
        self._give(worker)
        return reply

    def _start(self) -> _Process:
        worker = _Process()
        with self._lock:
            self._all.add(worker)
        return worker

    def _stop(self, worker: _Process) -> None:
        with self._lock:
            self._all.discard(worker)
        worker.stop()

    def _take(self) -> _Process:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.proc.poll() is None:
                    return worker
                self._all.discard(worker)
                worker.stop()  # reaps it
        return self._start()

    def _give(self, worker: _Process) -> None:
        with self._lock:
            if len(self._idle) < self._keep:
                self._idle.append(worker)
                return
        self._stop(worker)

    def close(self) -> None:
        """Kill every worker, busy or idle (at exit: a busy one would run on after its parent)."""
        with self._lock:
            workers, self._all, self._idle = list(self._all), set(), []
        for worker in workers:
            worker.stop()


PROCESSES = _Processes()
atexit.register(PROCESSES.close)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=PROCESSES._reset)

"""Tools from plain Python functions, and the rules for running a tool call.

A tool's name comes from the function, its description from the docstring and
its JSON Schema from the type hints. Every failure (unknown tool, arguments that
are not JSON or fail the schema, an exception, a timeout) becomes a result with
`is_error` set, worded so the model can recover.

A tool runs in a reused worker thread, so that its time limit can be kept; or,
declared `isolated=True`, in a reused worker process, which the time limit really
stops: Python cannot kill a thread, and a thread that computes holds the GIL.
"""

from __future__ import annotations

import atexit
import importlib
import inspect
import json
import os
import pickle
import queue
import re
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model, field_validator

from .messages import MAX_ARGUMENT_DEPTH, ToolCall, nesting

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_OUTPUT_CHARS = 8000


class ToolSpec(BaseModel):
    """What the model is told about a tool: name, description, JSON Schema of its arguments."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}

    @field_validator("parameters")
    @classmethod
    def _shallow(cls, parameters: dict[str, Any]) -> dict[str, Any]:
        # a request body holds the schema a few levels down: bounded here, every request stays writable
        if nesting(parameters, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
            raise ValueError(f"the JSON Schema is nested more than {MAX_ARGUMENT_DEPTH} levels deep")
        return parameters


@dataclass(frozen=True)
class ToolOutcome:
    """What running one tool call produced."""

    content: str
    is_error: bool
    duration_ms: float
    error: str | None = None


@dataclass(frozen=True)
class Tool:
    """A callable the model may ask for, with its schema and execution rules."""

    name: str
    description: str
    fn: Callable[..., Any]
    args_model: type[BaseModel]
    timeout_s: float | None = DEFAULT_TIMEOUT_S  # None: no limit, and the call runs in the calling thread
    sequential: bool = False
    isolated: bool = False  # runs in a worker process, killed when the time limit passes
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    _schema: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def parameters(self) -> dict[str, Any]:
        return self._schema

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def execute(self, call: ToolCall) -> ToolOutcome:
        """Validate the call's arguments, run the function with a timeout, cap the output."""
        started = time.perf_counter()

        def done(content: str, error: str | None = None) -> ToolOutcome:
            ms = (time.perf_counter() - started) * 1000
            return ToolOutcome(content=content, is_error=error is not None, duration_ms=ms, error=error)

        if call.arguments_invalid:
            msg = (
                f"Error: the arguments for {self.name} are not a JSON object: {call.raw_arguments!r}. "
                f"Call {self.name} again with arguments that match its schema."
            )
            return done(msg, "invalid_json")
        try:
            args = self.args_model.model_validate(call.arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
            )
            return done(
                f"Error: invalid arguments for {self.name}: {problems}. Fix them and call it again.",
                "invalid_arguments",
            )
        kwargs = {name: getattr(args, name) for name in type(args).model_fields}
        if self.isolated:
            return done(*self._run_isolated(kwargs))
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = self.fn(**kwargs)
            except BaseException as exc:  # noqa: BLE001 - a tool's failure is data for the model
                box["error"] = exc

        def on_worker() -> None:
            threading.current_thread().name = f"tool-{self.name}"
            target()

        if self.timeout_s is None:
            target()  # no time limit asked for: run in the calling thread, with no handoff at all
            if isinstance(box.get("error"), KeyboardInterrupt):
                # in the calling thread this is the user's Ctrl-C, not the tool's failure: stop the loop
                raise box["error"]
        elif not _WORKERS.run(on_worker, self.timeout_s):
            return done(f"Error: {self.name} timed out after {self.timeout_s:g} s and was abandoned.", "timeout")
        if "error" in box:
            return done(*_raised(self.name, box["error"]))
        return done(*_shown(self.name, box.get("value"), self.max_output_chars))

    def _run_isolated(self, kwargs: dict[str, Any]) -> tuple[str, str | None]:
        """The result text and error kind of a call run in a worker process."""
        job = _Job(self.name, _function_ref(self.fn), kwargs, self.max_output_chars)
        try:
            reply = _PROCESSES.run(job, self.timeout_s)
        except _ProcessEnded as exc:
            return f"Error: {self.name} ended its process without a result ({exc}).", "exception"
        except _Unsendable as exc:
            return f"Error: the arguments for {self.name} cannot be sent to its worker process: {exc}", "exception"
        except OSError as exc:  # a worker process that cannot be started
            return f"Error: {self.name} could not be run in a worker process: {_describe(exc)}", "exception"
        if reply is None:
            return f"Error: {self.name} timed out after {self.timeout_s:g} s and its process was killed.", "timeout"
        return reply


def _raised(name: str, exc: BaseException) -> tuple[str, str]:
    return _utf8_safe(f"Error: {name} raised {_describe(exc)}"), "exception"


def _shown(name: str, value: Any, max_chars: int) -> tuple[str, str | None]:
    """A tool's return value as the capped text the model reads, or the error for a value that cannot be shown."""
    try:
        text = render_output(value)
    except Exception as exc:  # noqa: BLE001 - a value that cannot be shown is the tool's failure, not the loop's
        return f"Error: {name} returned a value that cannot be shown as text: {_describe(exc)}", "exception"
    return cap_output(_utf8_safe(text), max_chars), None


class _Workers:
    """Daemon threads that run tool calls and are reused, since starting a thread costs more than most tools.

    Daemon, because Python cannot kill a thread: a hung call keeps its worker, which is
    abandoned (never joined), and the next call starts a new one. A worker idle for
    `idle_s` exits, so a burst of concurrent calls does not leave threads behind.
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
        finished = threading.Lock()
        finished.acquire()
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        self._tasks.put((target, finished))
        if start:
            threading.Thread(target=self._work, name="agentcore-tool", daemon=True).start()
        return finished.acquire(timeout=-1 if timeout_s is None else max(timeout_s, 0))

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


_WORKERS = _Workers()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WORKERS._reset)


# -- isolated tools: worker processes ---------------------------------------------------

_START_TIMEOUT_S = 60.0  # how long a new worker process may take to import agentcore and say it is ready
# a worker runs this, not a module of its own: `python -m agentcore.tools` would load this file twice (as
# __main__ and as agentcore.tools), and a multiprocessing child would run the parent's __main__ again
_WORKER_MAIN = "import sys; sys.path.insert(0, {root!r}); from agentcore.tools import _serve; _serve()"


@dataclass(frozen=True)
class _Job:
    """One isolated call as sent to a worker process; everything in it pickles."""

    name: str
    fn: tuple[str, str]  # (module, qualified name): the worker imports the function rather than unpickling it
    kwargs: dict[str, Any]
    max_output_chars: int
    context: tuple[str | None, dict[str, str], list[str]] | None = None  # cwd, environment, sys.path


class _ProcessEnded(Exception):
    """A worker process ended (crashed, was killed, exited) or never started, so it gave no answer."""


class _Unsendable(Exception):
    """A job that does not pickle (its arguments, most often): the worker never saw it."""


def _function_ref(fn: Callable[..., Any]) -> tuple[str, str]:
    return fn.__module__, fn.__qualname__


def _check_importable(name: str, fn: Callable[..., Any]) -> None:
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
    return found.fn if isinstance(found, Tool) else found  # the module holds the Tool that @tool made of it


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


def _serve() -> None:
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
            _send(replies, (f"Error: the tool call could not be read by its process: {_describe(exc)}", "exception"))
            continue
        _send(replies, _run_job(job))


def _run_job(job: _Job) -> tuple[str, str | None]:
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
        return f"Error: {job.name} could not be loaded in its process: {_describe(exc)}", "exception"
    try:
        value = fn(**job.kwargs)
    except BaseException as exc:  # noqa: BLE001 - a tool's failure is data for the model
        return _raised(job.name, exc)
    return _shown(job.name, value, job.max_output_chars)


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

    def call(self, job: _Job, timeout_s: float | None) -> tuple[str, str | None] | None:
        """Send the job and wait for its answer; None if `timeout_s` passed first."""
        if not self.ready:  # its start does not count against the call's time limit
            if self._read(_START_TIMEOUT_S) != "ready":
                raise _ProcessEnded(f"it did not start within {_START_TIMEOUT_S:g} s")
            self.ready = True
        context = _context()
        if context != self.context:
            job = _Job(job.name, job.fn, job.kwargs, job.max_output_chars, context)
        try:
            data = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - pickling fails with many exception types
            raise _Unsendable(_describe(exc)) from None
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

    def _ended(self) -> _ProcessEnded:
        try:
            code = self.proc.wait(1)
        except subprocess.TimeoutExpired:
            code = None
        return _ProcessEnded(f"exit code {code}")

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

    def run(self, job: _Job, timeout_s: float | None) -> tuple[str, str | None] | None:
        """Run the job in a worker process: (text, error kind), or None if it timed out and was killed."""
        worker = self._take()
        try:
            reply = worker.call(job, timeout_s)
        except _Unsendable:
            self._give(worker)  # the worker never saw the job
            raise
        except BaseException:  # it ended, or a Ctrl-C came while it ran: it may be mid-job
            self._stop(worker)
            raise
        if reply is None:
            self._stop(worker)
            self._give(self._start())  # the replacement starts now, not when the next call needs it
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


_PROCESSES = _Processes()
atexit.register(_PROCESSES.close)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_PROCESSES._reset)


def render_output(value: Any) -> str:
    """Turn a tool's return value into the text the model reads."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001 - an exception whose str() fails still names its type
        return type(exc).__name__


def _utf8_safe(text: str) -> str:
    # a lone surrogate (from undecodable bytes, or a JSON \ud800 escape) cannot be encoded as UTF-8,
    # so it would break every later write of the run: show it as U+FFFD instead
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def cap_output(text: str, limit: int) -> str:
    """Cut text longer than `limit` characters and say so where the model will see it."""
    if limit <= 0 or len(text) <= limit:
        return text
    return f"{text[:limit]}\n[truncated: showing {limit} of {len(text)} characters]"


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    sequential: bool = False,
    isolated: bool = False,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
) -> Any:
    """Make a Tool of a plain function: `@tool` or `@tool(sequential=True, timeout_s=5)`.

    `timeout_s=None` runs the function in the calling thread with no time limit.
    `isolated=True` runs it in a worker process that is killed when `timeout_s` passes, for
    tools that compute or touch files on the model's say; the function must be defined at
    module level, its arguments must pickle, and each call costs a round trip between processes.
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        tool_name = name or f.__name__
        if isolated:
            _check_importable(tool_name, f)
        doc = inspect.getdoc(f) or ""
        fields: dict[str, Any] = {}
        for pname, param in inspect.signature(f).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"tool {tool_name}: *args and **kwargs cannot be described to a model")
            hint = param.annotation if param.annotation is not inspect.Parameter.empty else Any
            default = param.default if param.default is not inspect.Parameter.empty else ...
            fields[pname] = (hint, default)
        model = create_model(
            f"{tool_name}_arguments",
            __config__=ConfigDict(extra="forbid"),
            **fields,
        )
        schema = model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema.setdefault("properties", {})
        return Tool(
            name=tool_name,
            description=description or doc,
            fn=f,
            args_model=model,
            timeout_s=timeout_s,
            sequential=sequential,
            isolated=isolated,
            max_output_chars=max_output_chars,
            _schema=schema,
        )

    return wrap(fn) if fn is not None else wrap


def unknown_tool_outcome(call: ToolCall, known: list[str]) -> ToolOutcome:
    """The error result for a call to a tool that does not exist."""
    names = ", ".join(sorted(known)) or "none"
    return ToolOutcome(
        content=f"Error: there is no tool named {call.name!r}. Available tools: {names}.",
        is_error=True,
        duration_ms=0.0,
        error="unknown_tool",
    )

"""Tools from plain Python functions, and the rules for running a tool call.

A tool's name comes from the function, its description from the docstring and
its JSON Schema from the type hints. Every failure (unknown tool, arguments that
are not JSON or fail the schema, an exception, a timeout) becomes a result with
`is_error` set, worded so the model can recover.
"""

from __future__ import annotations

import inspect
import json
import os
import queue
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from .messages import ToolCall

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_OUTPUT_CHARS = 8000


class ToolSpec(BaseModel):
    """What the model is told about a tool: name, description, JSON Schema of its arguments."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}


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
            exc = box["error"]
            return done(_utf8_safe(f"Error: {self.name} raised {_describe(exc)}"), "exception")
        try:
            text = render_output(box.get("value"))
        except Exception as exc:  # noqa: BLE001 - a value that cannot be shown is the tool's failure, not the loop's
            return done(
                f"Error: {self.name} returned a value that cannot be shown as text: {_describe(exc)}", "exception"
            )
        return done(cap_output(_utf8_safe(text), self.max_output_chars))


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
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
) -> Any:
    """Make a Tool of a plain function: `@tool` or `@tool(sequential=True, timeout_s=5)`.

    `timeout_s=None` runs the function in the calling thread with no time limit.
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        tool_name = name or f.__name__
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

"""Tools from plain Python functions, and the rules for running a tool call.

A tool's name comes from the function, its description from the docstring and
its JSON Schema from the type hints. Every failure (unknown tool, arguments that
are not JSON or fail the schema, an exception, a timeout) becomes a result with
`is_error` set, worded so the model can recover.

A tool with a time limit runs in the main thread under the real-time timer, where the
loop runs there and nothing else in the process uses the timer, else in a reused worker
thread, so that its time limit can be kept; or, declared `isolated=True`, in a reused
worker process, which the time limit really stops: Python cannot kill a thread, and a
thread that computes holds the GIL.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from .messages import COMPACT_JSON, ShallowObject, ToolCall, estimate_tokens
from .tool_output import describe, raised, shown
from .workers import (
    PROCESSES,
    THREADS,
    Job,
    ProcessEnded,
    TimedOut,
    Unsendable,
    check_importable,
    function_ref,
    within,
)

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_OUTPUT_CHARS = 8000


class ToolSpec(BaseModel):
    """What the model is told about a tool: name, description, JSON Schema of its arguments."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    parameters: ShallowObject = {"type": "object", "properties": {}}
    source: str | None = None  # where the tool came from when not built in, e.g. "mcp:SERVER"

    # A spec is sent with every request of a run: its plain form and size are computed once, as a message's are.

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        copy = super().model_copy(update=update, deep=deep)
        for name in ("data", "tokens"):  # a copy with changes must not keep the original's cached values
            copy.__dict__.pop(name, None)
        return copy

    @cached_property
    def data(self) -> dict[str, Any]:
        """The spec as plain JSON data. Shared: do not mutate."""
        return self.model_dump(mode="json")

    @cached_property
    def tokens(self) -> int:
        """Estimated tokens of the spec as a request carries it: name, description and schema."""
        return estimate_tokens(self.name + self.description + COMPACT_JSON.encode(self.parameters))


@dataclass(frozen=True)
class ToolOutcome:
    """What running one tool call produced."""

    content: str
    is_error: bool
    duration_ms: float
    error: str | None = None

    @classmethod
    def answer(cls, content: str) -> ToolOutcome:
        """A result given without running the tool (a person's, a mock rule's): no time spent."""
        return cls(content, is_error=False, duration_ms=0.0)

    @classmethod
    def refusal(cls, content: str, error: str | None) -> ToolOutcome:
        """An error result given without running the tool; `error` says which kind (ToolRun.error)."""
        return cls(content, is_error=True, duration_ms=0.0, error=error)


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
            except TimedOut:
                raise  # its time limit, kept in this thread by `within`
            except BaseException as exc:  # noqa: BLE001 - a tool's failure is data for the model
                box["error"] = exc

        def on_worker() -> None:
            threading.current_thread().name = f"tool-{self.name}"
            target()

        if self.timeout_s is None:
            target()  # no time limit asked for: run in the calling thread, with no handoff at all
            here = True
        else:
            in_time = within(target, self.timeout_s)  # the main thread: no handoff, the timer keeps the limit
            if in_time is False:
                return done(f"Error: {self.name} timed out after {self.timeout_s:g} s and was stopped.", "timeout")
            here = in_time is True
            if not here and not THREADS.run(on_worker, self.timeout_s):
                return done(f"Error: {self.name} timed out after {self.timeout_s:g} s and was abandoned.", "timeout")
        if here and isinstance(box.get("error"), KeyboardInterrupt):
            # in the calling thread this is the user's Ctrl-C, not the tool's failure: stop the loop
            raise box["error"]
        if "error" in box:
            return done(*raised(self.name, box["error"]))
        return done(*shown(self.name, box.get("value"), self.max_output_chars))

    def _run_isolated(self, kwargs: dict[str, Any]) -> tuple[str, str | None]:
        """The result text and error kind of a call run in a worker process."""
        job = Job(self.name, function_ref(self.fn), kwargs, self.max_output_chars)
        try:
            reply = PROCESSES.run(job, self.timeout_s)
        except ProcessEnded as exc:
            return f"Error: {self.name} ended its process without a result ({exc}).", "exception"
        except Unsendable as exc:
            return f"Error: the arguments for {self.name} cannot be sent to its worker process: {exc}", "exception"
        except OSError as exc:  # a worker process that cannot be started
            return f"Error: {self.name} could not be run in a worker process: {describe(exc)}", "exception"
        if reply is None:
            return f"Error: {self.name} timed out after {self.timeout_s:g} s and its process was killed.", "timeout"
        return reply


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
            check_importable(tool_name, f)
        doc = inspect.getdoc(f) or ""
        fields: dict[str, Any] = {}
        try:  # hints written as text (`from __future__ import annotations`) read as the objects they name
            signature = inspect.signature(f, eval_str=True)
        except Exception:  # noqa: BLE001 - a hint that names nothing here: pydantic says which, as before
            signature = inspect.signature(f)
        for pname, param in signature.parameters.items():
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

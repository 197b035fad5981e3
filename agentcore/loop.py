"""The agent loop: one step is a model phase and a tools phase; `run` is `step` until a stop reason.

Run state is plain data (`Run`); what happens next is derived from its messages:
a user or tool message last means the model phase, an assistant message with
unanswered tool calls means the tools phase, an assistant answer means done.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .errors import MessageListError, ProviderError, UsageError
from .messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    pending_tool_calls,
    validate_messages,
)
from .providers.base import ModelRequest, Provider, Settings, WireExchange
from .tools import Tool, ToolOutcome, ToolSpec, unknown_tool_outcome

StopReason = Literal["answer", "max_steps", "structured", "error", "cancelled"]
Phase = Literal["model", "tools", "done"]
FINAL_ANSWER_TOOL = "final_answer"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class RunConfig(BaseModel):
    """How a run is set up. Holds no credential: keys live only in the provider object."""

    model_config = ConfigDict(extra="forbid")

    provider: str = "scripted"
    model: str = ""
    base_url: str | None = None
    scenario: str | None = None
    system_prompt: str | None = None
    tools: list[ToolSpec] = []
    max_steps: int = Field(default=10, ge=1)
    concurrency: bool = True
    temperature: float | None = None
    final_answer_schema: dict[str, Any] | None = None


class ToolRun(BaseModel):
    """One tool call's execution in a tools phase: timing, error, and how it was resolved."""

    model_config = ConfigDict(extra="forbid")

    tool_call_id: str
    name: str
    duration_ms: float
    is_error: bool
    error: str | None = None
    source: Literal["ran", "denied", "manual"] = "ran"
    started_ms: float = 0.0


class StepRecord(BaseModel):
    """What one model call cost and carried, and the tool runs that followed it."""

    model_config = ConfigDict(extra="forbid")

    index: int
    usage: Usage = Usage()
    estimated: bool = False
    latency_ms: float = 0.0
    finish_reason: str | None = None
    message_count: int = 0  # messages in the list when this step's model call was made
    tool_runs: list[ToolRun] = []
    wire: WireExchange | None = None
    started_at: str = Field(default_factory=_now)


class ForkOrigin(BaseModel):
    """The run and step a fork was taken from."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    step: int


class Run(BaseModel):
    """A whole run as data: config, messages, step records, status and lineage."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    title: str | None = None
    created_at: str = Field(default_factory=_now)
    config: RunConfig = RunConfig()
    messages: list[Message] = []
    steps: list[StepRecord] = []
    stop_reason: StopReason | None = None
    error: str | None = None
    final_output: Any = None
    parent: ForkOrigin | None = None
    _trusted: list[int] = PrivateAttr(default_factory=list)  # ids of messages known valid; a cache, not state

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Run) and self.__dict__ == other.__dict__

    __hash__ = None  # mutable

    @classmethod
    def start(cls, prompt: str, config: RunConfig | None = None, **kwargs: Any) -> Run:
        """A new run: the system prompt (if any) and the user's prompt."""
        config = config or RunConfig()
        messages: list[Message] = []
        if config.system_prompt:
            messages.append(SystemMessage(content=config.system_prompt))
        messages.append(UserMessage(content=prompt))
        return cls(config=config, messages=messages, title=kwargs.pop("title", None) or prompt[:80], **kwargs)

    @property
    def next_phase(self) -> Phase:
        """Which phase runs next, derived from the messages alone."""
        if not self.messages:
            return "done"
        last = self.messages[-1]
        if isinstance(last, AssistantMessage):
            return "tools" if pending_tool_calls(self.messages) else "done"
        return "model"

    @property
    def finished(self) -> bool:
        return self.stop_reason in ("answer", "max_steps", "structured") or self.next_phase == "done"

    @property
    def usage(self) -> Usage:
        return sum((s.usage for s in self.steps), Usage())

    def final_answer(self) -> str | None:
        """The text of the last assistant message when the run ended on an answer."""
        for m in reversed(self.messages):
            if isinstance(m, AssistantMessage):
                return m.content
        return None

    def fork(self, at_step: int) -> Run:
        """A new run that starts again just before step `at_step`'s model call; this run is kept."""
        if not 1 <= at_step <= len(self.steps):
            raise UsageError(f"cannot fork at step {at_step}: the run has {len(self.steps)} steps")
        cut = self.steps[at_step - 1].message_count
        return self._branch(list(self.messages[:cut]), at_step - 1, ForkOrigin(run_id=self.id, step=at_step))

    def fork_with_messages(self, messages: list[Message]) -> Run:
        """A new run over an edited message list; keeps the steps made before the first change."""
        first_change = next(
            (i for i, (a, b) in enumerate(zip(self.messages, messages, strict=False)) if a != b),
            min(len(self.messages), len(messages)),
        )
        kept = sum(1 for s in self.steps if s.message_count < first_change)
        # the step whose reply was edited is where the branch leaves this run
        return self._branch(list(messages), kept, ForkOrigin(run_id=self.id, step=max(kept, 1)))

    def _branch(self, messages: list[Message], keep_steps: int, origin: ForkOrigin) -> Run:
        steps = [s.model_copy(deep=True) for s in self.steps[:keep_steps]]
        title = f"{self.title or 'run'} (fork @ step {origin.step})"
        return Run(config=self.config.model_copy(deep=True), messages=messages, steps=steps, parent=origin, title=title)


EventKind = Literal[
    "step_started",
    "phase_started",
    "text_delta",
    "phase_finished",
    "tool_started",
    "tool_finished",
    "step_finished",
    "run_finished",
    "error",
]


@dataclass(frozen=True)
class Event:
    """Something that happened in the loop, for observers (the CLI, the app)."""

    kind: EventKind
    run_id: str
    step: int
    phase: Phase | None = None
    text: str | None = None
    message: Message | None = None
    tool_call: ToolCall | None = None
    outcome: ToolOutcome | None = None
    error: str | None = None


Observer = Callable[[Event], None]


class ToolDecision(BaseModel):
    """A person's decision on a pending tool call when the run pauses before tools."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["approve", "deny", "result", "edit"] = "approve"
    arguments: dict[str, Any] | None = None  # for "edit": run the tool with these instead
    content: str | None = None  # for "result": this text is the tool's result
    reason: str | None = None  # for "deny": told to the model


class Agent:
    """Runs the loop over a provider and a set of tools, reporting events to observers."""

    def __init__(
        self,
        provider: Provider,
        tools: Iterable[Tool] = (),
        *,
        observers: Sequence[Observer] = (),
        settings: Settings | None = None,
    ) -> None:
        self.provider = provider
        self.tools = {t.name: t for t in tools}
        self.observers = list(observers)
        self.settings = settings or Settings()

    def _emit(self, event: Event) -> None:
        for observer in self.observers:
            observer(event)

    def specs(self, run: Run) -> list[ToolSpec]:
        """The tool specs offered to the model: the run's tools, plus the final-answer tool."""
        specs = list(run.config.tools) if run.config.tools else [t.spec() for t in self.tools.values()]
        if run.config.final_answer_schema is not None:
            specs.append(
                ToolSpec(
                    name=FINAL_ANSWER_TOOL,
                    description="Give the final answer in the required structure. Call it once, when done.",
                    parameters=run.config.final_answer_schema,
                )
            )
        return specs

    def _check(self, run: Run) -> None:
        ids = list(map(id, run.messages))
        if ids == run._trusted:
            return  # unchanged since the loop last validated or appended
        violations = validate_messages(run.messages)
        if violations:
            raise MessageListError(violations)
        run._trusted = ids

    # -- the model phase -------------------------------------------------------------

    def model_phase(self, run: Run) -> Phase:
        """Call the model with the whole message list and append its reply."""
        if run.next_phase != "model":
            raise UsageError(f"the model phase cannot run now: the next phase is {run.next_phase}")
        if len(run.steps) >= run.config.max_steps:
            raise UsageError(f"the step budget of {run.config.max_steps} is used up; raise max_steps to go on")
        self._check(run)
        index = len(run.steps) + 1
        settings = self.settings
        if run.config.temperature is not None and settings.temperature is None:
            settings = settings.model_copy(update={"temperature": run.config.temperature})
        request = ModelRequest.model_construct(
            messages=tuple(run.messages), tools=tuple(self.specs(run)), settings=settings
        )
        preflight = getattr(self.provider, "preflight", None)
        if preflight is not None:
            violations = preflight(request)
            if violations:
                raise MessageListError(violations)
        run.stop_reason, run.error = None, None
        self._emit(Event("step_started", run.id, index))
        self._emit(Event("phase_started", run.id, index, "model"))
        started = time.perf_counter()

        def on_text(delta: str) -> None:
            self._emit(Event("text_delta", run.id, index, "model", text=delta))

        try:
            response = self.provider.complete(request, on_text if self.observers else None)
        except ProviderError as exc:
            return self._fail(run, index, exc.one_line())
        except Exception as exc:  # noqa: BLE001 - a broken provider must not lose the run
            return self._fail(run, index, f"{self.provider.name}: {type(exc).__name__}: {exc}")
        latency = (time.perf_counter() - started) * 1000
        run.steps.append(
            StepRecord(
                index=index,
                usage=response.usage,
                estimated=response.estimated,
                latency_ms=latency,
                finish_reason=response.finish_reason,
                message_count=len(run.messages),
                wire=response.wire,
            )
        )
        run.messages.append(response.message)
        run._trusted.append(id(response.message))
        self._emit(Event("phase_finished", run.id, index, "model", message=response.message))
        if not response.message.tool_calls:
            run.stop_reason = "answer"
            self._emit(Event("step_finished", run.id, index))
        return run.next_phase

    def _fail(self, run: Run, index: int, message: str) -> Phase:
        run.stop_reason, run.error = "error", message
        self._emit(Event("error", run.id, index, "model", error=message))
        return run.next_phase

    # -- the tools phase -------------------------------------------------------------

    def tools_phase(self, run: Run, decisions: dict[str, ToolDecision] | None = None) -> Phase:
        """Run every pending tool call and append each result in call order."""
        calls = pending_tool_calls(run.messages)
        if not calls:
            raise UsageError("the tools phase cannot run now: no tool calls are waiting")
        self._check(run)
        decisions = decisions or {}
        index = len(run.steps)
        calls = self._apply_edits(run, calls, decisions)
        self._emit(Event("phase_started", run.id, index, "tools"))
        phase_start = time.perf_counter()
        results: dict[str, tuple[ToolOutcome, str, float]] = {}

        def execute(call: ToolCall) -> None:
            started = (time.perf_counter() - phase_start) * 1000
            self._emit(Event("tool_started", run.id, index, "tools", tool_call=call))
            outcome, source = self._resolve(run, call, decisions.get(call.id))
            results[call.id] = (outcome, source, started)
            self._emit(Event("tool_finished", run.id, index, "tools", tool_call=call, outcome=outcome))

        for group in self._groups(run, calls):
            if len(group) == 1:
                execute(group[0])
            else:
                with ThreadPoolExecutor(max_workers=len(group), thread_name_prefix="agentcore-tool") as pool:
                    list(pool.map(execute, group))

        structured = False
        step = run.steps[-1] if run.steps else None
        for call in calls:
            outcome, source, started = results[call.id]
            message = ToolMessage(
                tool_call_id=call.id, name=call.name, content=outcome.content, is_error=outcome.is_error
            )
            run.messages.append(message)
            run._trusted.append(id(message))
            if step is not None:
                step.tool_runs.append(
                    ToolRun(
                        tool_call_id=call.id,
                        name=call.name,
                        duration_ms=outcome.duration_ms,
                        is_error=outcome.is_error,
                        error=outcome.error,
                        source=source,
                        started_ms=started,
                    )
                )
            if call.name == FINAL_ANSWER_TOOL and not outcome.is_error and source == "ran":
                structured = True
                run.final_output = call.arguments
        self._emit(Event("phase_finished", run.id, index, "tools"))
        self._emit(Event("step_finished", run.id, index))
        if structured:
            run.stop_reason = "structured"
        elif len(run.steps) >= run.config.max_steps:
            run.stop_reason = "max_steps"
        return run.next_phase

    def _apply_edits(self, run: Run, calls: list[ToolCall], decisions: dict[str, ToolDecision]) -> list[ToolCall]:
        edits = {cid: d.arguments for cid, d in decisions.items() if d.action == "edit" and d.arguments is not None}
        if not edits:
            return calls
        # an argument edit rewrites the pending assistant turn, so the history shows what really ran
        for i in range(len(run.messages) - 1, -1, -1):
            m = run.messages[i]
            if isinstance(m, AssistantMessage):
                new_calls = tuple(
                    c.model_copy(update={"arguments": edits[c.id], "raw_arguments": None}) if c.id in edits else c
                    for c in m.tool_calls
                )
                run.messages[i] = m.model_copy(update={"tool_calls": new_calls})
                break
        run._trusted = []
        return pending_tool_calls(run.messages)

    def _groups(self, run: Run, calls: list[ToolCall]) -> list[list[ToolCall]]:
        """Consecutive calls that may overlap form one group; a sequential tool runs alone."""
        if not run.config.concurrency:
            return [[c] for c in calls]
        groups: list[list[ToolCall]] = []
        current: list[ToolCall] = []
        for call in calls:
            tool = self.tools.get(call.name)
            if tool is not None and tool.sequential:
                if current:
                    groups.append(current)
                    current = []
                groups.append([call])
            else:
                current.append(call)
        if current:
            groups.append(current)
        return groups

    def _resolve(self, run: Run, call: ToolCall, decision: ToolDecision | None) -> tuple[ToolOutcome, str]:
        if decision is not None and decision.action == "deny":
            why = f": {decision.reason}" if decision.reason else ""
            text = (
                f"Error: the user denied this call to {call.name}{why}. Do not call it again with the same arguments."
            )
            return ToolOutcome(text, True, 0.0, "denied"), "denied"
        if decision is not None and decision.action == "result":
            return ToolOutcome(decision.content or "", False, 0.0), "manual"
        if call.name == FINAL_ANSWER_TOOL and run.config.final_answer_schema is not None:
            return self._check_final_answer(run, call), "ran"
        tool = self.tools.get(call.name)
        if tool is None:
            return unknown_tool_outcome(call, list(self.tools)), "ran"
        return tool.execute(call), "ran"

    def _check_final_answer(self, run: Run, call: ToolCall) -> ToolOutcome:
        import jsonschema

        if call.arguments_invalid:
            return ToolOutcome(
                f"Error: the final answer is not a JSON object: {call.raw_arguments!r}. Call final_answer again.",
                True,
                0.0,
                "invalid_json",
            )
        errors = sorted(
            jsonschema.Draft202012Validator(run.config.final_answer_schema).iter_errors(call.arguments),
            key=lambda e: list(e.path),
        )
        if errors:
            problems = "; ".join(f"{'.'.join(map(str, e.path)) or 'answer'}: {e.message}" for e in errors)
            return ToolOutcome(
                f"Error: the final answer does not match the schema: {problems}. Call final_answer again.",
                True,
                0.0,
                "invalid_arguments",
            )
        return ToolOutcome("Final answer accepted.", False, 0.0)

    # -- steps and runs --------------------------------------------------------------

    def step(self, run: Run, decisions: dict[str, ToolDecision] | None = None) -> Phase:
        """One iteration: the model phase, then the tools phase if the model asked for tools.

        If the run is waiting for its tools (paused between phases), the step finishes them.
        """
        if run.next_phase == "model":
            if self.model_phase(run) != "tools" or run.stop_reason == "error":
                return run.next_phase
        if run.next_phase == "tools":
            self.tools_phase(run, decisions)
        return run.next_phase

    def run(self, run: Run, cancel: threading.Event | None = None) -> Run:
        """Step until a stop reason: answer, max_steps, structured, error or cancelled."""
        while run.next_phase != "done" and run.stop_reason not in ("max_steps", "structured"):
            if cancel is not None and cancel.is_set():
                run.stop_reason = "cancelled"
                break
            if run.next_phase == "model":
                if len(run.steps) >= run.config.max_steps:
                    run.stop_reason = "max_steps"
                    break
                self.model_phase(run)
                if run.stop_reason == "error":
                    break
            else:
                self.tools_phase(run)
        self._emit(Event("run_finished", run.id, len(run.steps), error=run.error))
        return run


def resolve_schema(schema: type[BaseModel] | dict[str, Any] | None) -> dict[str, Any] | None:
    """A final-answer schema given as a pydantic model or a JSON Schema dict, as JSON Schema."""
    if schema is None or isinstance(schema, dict):
        return schema
    return schema.model_json_schema()

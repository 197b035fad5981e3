"""The agent loop: one step is a model phase and a tools phase; `run` is `step` until a stop reason.

Run state is plain data (`Run`); what happens next is derived from its messages:
a user or tool message last means the model phase, an assistant message with
unanswered tool calls means the tools phase, an assistant answer means done.

Hooks (agentcore.hooks) run at three points of a step: before the model call, after it, and before the tools. The
breakpoints, the context policies, the loop guard, the mock rules and the run's named hooks are links of the same
chain (agentcore.hooks.chain builds it), so each step is changed or paused in one place; the loop knows only the chain.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import MessageListError, ProviderError, UsageError
from .hooks.chain import ModelChain, model_chain, tools_chain
from .hooks.protocol import (
    AfterModel,
    Answer,
    BeforeModel,
    BeforeTools,
    HookEffect,
    HookFailed,
    HookPoint,
    Passed,
    Pause,
    Refuse,
    hook_names,
    idle,
    refusal_outcome,
    run_hooks,
)
from .messages import AssistantMessage, ToolCall, ToolMessage, pending_tool_calls
from .providers.base import ModelRequest, ModelResponse, Provider, Settings, WireExchange
from .request import base_request, request_settings
from .run import Run
from .schemas import check_final_schema, resolve_schema
from .secrets import StreamScrubber
from .steps import (
    EXECUTED,
    FINAL_ANSWER_TOOL,
    Event,
    Halt,
    Observer,
    Phase,
    StepRecord,
    ToolDecision,
    ToolRun,
    ToolSource,
    decision_source,
)
from .tools import Tool, ToolOutcome, unknown_tool_outcome
from .workers import THREADS

__all__ = ["Agent", "Event", "Observer", "ToolDecision", "check_final_schema", "resolve_schema"]

# a call's outcome, how it was resolved, when it started (ms), and the tool's own wire exchange if it kept one
_Result = tuple[ToolOutcome, ToolSource, float, WireExchange | None]
# a call a before-tools hook answered: its result, how it is recorded, and the hook (None for a built-in's own source)
_Answered = tuple[ToolOutcome, ToolSource, str | None]


DEFAULT_MAX_TOOL_WORKERS = 16
DEFAULT_MAX_TOOL_CALLS = 64


class Agent:
    """Runs the loop over a provider and a set of tools, reporting events to observers.

    A turn runs at most `max_tool_calls` of its tool calls, on at most `max_tool_workers` threads;
    the calls beyond that number are refused with an error result the model reads. `before_model`, `after_model`
    and `before_tools` are code hooks, run in order at their point of each step after the built-in ones and the
    run's named hooks (RunConfig.hooks), in the order agentcore.hooks.chain writes; `hook_time_limit` is the most
    seconds each may take before it fails the step.
    """

    def __init__(
        self,
        provider: Provider,
        tools: Iterable[Tool] = (),
        *,
        observers: Sequence[Observer] = (),
        settings: Settings | None = None,
        max_tool_workers: int = DEFAULT_MAX_TOOL_WORKERS,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        before_model: Sequence[BeforeModel] = (),
        after_model: Sequence[AfterModel] = (),
        before_tools: Sequence[BeforeTools] = (),
        hook_time_limit: float | None = None,
    ) -> None:
        if max_tool_workers < 1 or max_tool_calls < 1:
            raise UsageError("max_tool_workers and max_tool_calls must be at least 1")
        self.provider = provider
        self.tools = {t.name: t for t in tools}
        self.observers = list(observers)
        self.settings = settings or Settings()
        self.max_tool_workers = max_tool_workers
        self.max_tool_calls = max_tool_calls
        self.before_model = list(before_model)
        self.after_model = list(after_model)
        self.before_tools = list(before_tools)
        self.hook_time_limit = hook_time_limit  # seconds a code hook may take; None: no limit
        self._schema_checked: Any = None  # the final-answer schema last found valid

    def _emit(self, *args: Any, **fields: Any) -> None:
        # the Event is built only when someone observes: a run without observers pays nothing per event
        if self.observers:
            event = Event(*args, **fields)
            for observer in self.observers:
                observer(event)

    def _record_tools(self, run: Run) -> None:
        # a run started without tools of its own records the agent's, so its transcript and cost carry them
        if not run.config.tools and self.tools:
            run.config = run.config.model_copy(update={"tools": [t.spec() for t in self.tools.values()]})

    # -- the model phase -------------------------------------------------------------

    def model_phase(self, run: Run, cancel: threading.Event | None = None) -> Phase:
        """Call the model with the whole message list (as the before-model hooks leave it) and append its reply.

        `cancel`, set while the reply streams (an Agent with observers streams it), stops the call at its next
        piece of text: the run stops "cancelled" with nothing appended, every phase before it kept.
        """
        self._check_model_phase(run)
        index = len(run.steps) + 1
        settings = request_settings(run.config, self.settings)  # a resumed run keeps its settings
        chain = model_chain(run, self.provider, self.before_model, self.after_model)
        skip = self._resume(run, "before_model")
        try:
            request = base_request(run, run.messages, settings)
            before = run_hooks("before_model", chain.before, run, request, skip, time_limit=self.hook_time_limit)
        except HookFailed as exc:
            return self._fail(run, index, str(exc))
        if before.halt is not None:
            return self._halt(run, index, "before_model", before)
        self._preflight(before.value)
        if run.stop_reason is not None or run.error is not None:  # a pydantic assignment costs more than the test
            run.stop_reason, run.error = None, None
        self._emit("step_started", run.id, index)
        self._emit("phase_started", run.id, index, "model")
        started = time.perf_counter()
        try:
            response = self._complete(run, index, before.value, cancel)
            after = run_hooks("after_model", chain.after, run, response.message, time_limit=self.hook_time_limit)
        except _CallStopped:
            run.stop_reason = "cancelled"  # the observers hear of it as the run ends (run_finished)
            return run.next_phase
        except (_CallFailed, HookFailed) as exc:
            return self._fail(run, index, str(exc))
        self._record_step(run, index, response, (time.perf_counter() - started) * 1000, chain, before, after)
        message = after.value
        run.append(message)
        self._emit_effects(run, index, "model", run.steps[-1].hook_effects)
        self._emit("phase_finished", run.id, index, "model", message=message)
        # a stop ends the run even on a plain answer; a pause waits before tools, so a reply without calls has none
        if after.halt is not None and (message.tool_calls or not isinstance(after.halt[1], Pause)):
            return self._halt(run, index, "after_model", after)
        if not message.tool_calls:
            run.stop_reason = "answer"
            self._emit("step_finished", run.id, index)
        return run.next_phase

    def _check_model_phase(self, run: Run) -> None:
        """Raise a UsageError unless the model phase can run now; record the agent's tools on a run without any."""
        if run.next_phase != "model":
            raise UsageError(f"the model phase cannot run now: the next phase is {run.next_phase}")
        if run.stop_reason == "structured":
            raise UsageError("the run ended with a structured answer; fork it to go on")
        if not run.can_call_model:
            raise UsageError(f"the step budget of {run.config.max_steps} is used up; raise max_steps to go on")
        run.check_messages()
        self._record_tools(run)
        schema = run.config.final_answer_schema
        if schema is not None and schema is not self._schema_checked:
            check_final_schema(schema)  # before the model is paid to fill a schema nothing could check
            self._schema_checked = schema

    def _preflight(self, request: ModelRequest) -> None:
        """Raise a MessageListError for what the provider would refuse in the request (Provider.preflight)."""
        # preflight is optional in the Provider protocol: a provider of one's own need only implement complete
        preflight = getattr(self.provider, "preflight", None)
        violations = preflight(request) if preflight is not None else None
        if violations:
            raise MessageListError(violations)

    def _complete(
        self, run: Run, index: int, request: ModelRequest, cancel: threading.Event | None = None
    ) -> ModelResponse:
        """The provider's answer to the request, its stream passed to observers; _CallFailed in one line,
        _CallStopped when `cancel` was set while it streamed."""

        def on_text(delta: str) -> None:
            self._emit("text_delta", run.id, index, "model", text=delta)

        # every provider's stream passes one scrubber here, so no known secret reaches an observer, whatever its source
        streamed = StreamScrubber(on_text) if self.observers else None

        def piece(delta: str) -> None:
            # checked at every piece, before the scrubber holds any back; an empty piece (text a provider does not show, a tool call as it is written) lets a Stop end that too
            if cancel is not None and cancel.is_set():
                raise _CallStopped  # out through the provider's stream: the call ends here
            if streamed is not None:
                streamed(delta)

        try:
            response = self.provider.complete(request, piece if streamed is not None else None)
        except _CallStopped:
            raise
        except ProviderError as exc:
            if cancel is not None and cancel.is_set():
                raise _CallStopped from None  # a provider that wraps what its stream raised
            raise _CallFailed(exc.one_line()) from None
        except Exception as exc:  # noqa: BLE001 - a broken provider must not lose the run
            if cancel is not None and cancel.is_set():
                raise _CallStopped from None
            raise _CallFailed(f"{self.provider.name}: {type(exc).__name__}: {exc}") from None
        if streamed is not None:
            streamed.close()
        return response

    def _record_step(
        self,
        run: Run,
        index: int,
        response: ModelResponse,
        latency: float,
        chain: ModelChain,
        before: Passed[ModelRequest],
        after: Passed[AssistantMessage],
    ) -> None:
        """Append the step's record: the call's usage and exchange, what each hook changed, each built-in's own."""
        step = StepRecord(
            index=index,
            provider=getattr(self.provider, "name", None) or run.config.provider,
            model=getattr(self.provider, "model", None) or run.config.model or None,
            usage=response.usage,
            estimated=response.estimated,
            latency_ms=latency,
            finish_reason=response.finish_reason,
            message_count=len(run.messages),
            wire=response.wire,
            hook_effects=before.effects + after.effects,
        )
        chain.keep_records(step, before, after)
        run.steps.append(step)

    def _fail(self, run: Run, index: int, message: str, phase: Phase = "model") -> Phase:
        run.stop_reason, run.error = "error", message
        self._emit("error", run.id, index, phase, error=message)
        return run.next_phase

    def _emit_effects(self, run: Run, index: int, phase: Phase, effects: list[HookEffect]) -> None:
        for effect in effects:
            self._emit("hook_effect", run.id, index, phase, text=effect.words)

    def _resume(self, run: Run, point: HookPoint) -> str | None:
        """Go on from a hook's halt: the hook that halted the run at `point` is not asked again; the halt is cleared."""
        if (halt := run.halt) is not None:
            run.halt = None
        if halt is not None and halt.point == point:
            return halt.hook
        return None

    def _halt(self, run: Run, index: int, point: HookPoint, passed: Passed[Any]) -> Phase:
        """Record a hook's Pause or Stop: the run waits where it is (a pause) or ends (a stop)."""
        assert passed.halt is not None
        name, decision = passed.halt
        kind: Literal["pause", "stop"] = "pause" if isinstance(decision, Pause) else "stop"
        reason = " ".join(str(decision.reason).split()) or "(no reason given)"
        spec = decision.breakpoint if isinstance(decision, Pause) else None
        run.halt = Halt(kind=kind, hook=name, point=point, reason=reason, step=index, breakpoint=spec)
        run.halts.append(run.halt)
        run.stop_reason, run.error = ("stopped" if kind == "stop" else None), None
        self._emit("halted", run.id, index, run.halt.phase, error=run.halt.words)
        return run.next_phase

    # -- the tools phase -------------------------------------------------------------

    def tools_phase(self, run: Run, decisions: dict[str, ToolDecision] | None = None) -> Phase:
        """Run the pending tool calls, refusing those past `max_tool_calls`, and append each result in call order.

        Given `decisions`, or on a run paused before its tools, a person was asked: each call is recorded
        as approved, edited, denied or typed by them. Otherwise the calls are recorded as ran.
        """
        calls = pending_tool_calls(run.messages)
        if not calls:
            raise UsageError("the tools phase cannot run now: no tool calls are waiting")
        run.check_messages()
        asked = decisions is not None or run.paused
        decisions = decisions or {}
        index = len(run.steps)
        skip = self._resume(run, "before_tools")
        # a person saw the calls and chose: a breakpoint has nothing more to show
        chain = tools_chain(run, self.before_tools, decided=asked and skip is None)
        run.stop_reason = None  # going on after a Stop
        calls, originals = self._apply_edits(run, calls, decisions)
        sources = {c.id: decision_source(decisions.get(c.id), c.id in originals, asked) for c in calls}
        # the hooks see the calls no person decided, within the turn's limit: the loop guard first
        undecided = [c for c in calls[: self.max_tool_calls] if c.id not in decisions]
        try:
            hooked = self._before_tools(run, chain, undecided, skip)
        except HookFailed as exc:
            return self._fail(run, index, str(exc), "tools")
        if hooked.halt is not None:
            return self._halt(run, index, "before_tools", hooked.halt)
        if hooked.edits:
            edits = {i: ToolDecision(action="edit", arguments=args) for i, (args, _) in hooked.edits.items()}
            calls, edited = self._apply_edits(run, calls, edits)
            originals.update(edited)
            sources.update(dict.fromkeys(edited, "hook_edited"))
        sources.update({i: source for i, (_, source, _) in hooked.answered.items()})
        self._emit("phase_started", run.id, index, "tools")
        results = self._execute(run, index, calls, decisions, sources, hooked.answered)
        structured = self._append_results(run, calls, results, originals, hooked.names)
        if run.steps and hooked.effects:
            run.steps[-1].hook_effects.extend(hooked.effects)
            self._emit_effects(run, index, "tools", hooked.effects)
        self._emit("phase_finished", run.id, index, "tools")
        self._emit("step_finished", run.id, index)
        if structured:
            run.stop_reason = "structured"
        elif run.finished:
            run.stop_reason = "max_steps"
        return run.next_phase

    def _execute(
        self,
        run: Run,
        index: int,
        calls: list[ToolCall],
        decisions: dict[str, ToolDecision],
        sources: dict[str, ToolSource],
        answered: dict[str, _Answered],
    ) -> dict[str, _Result]:
        """Run each call, overlapping those that may overlap on the kept workers; calls past the cap are refused.

        A call in `answered` is not run: a before-tools hook answered it (the loop guard, with its earlier result).
        """
        phase_start = time.perf_counter()
        results: dict[str, _Result] = {}
        allowed, refused = calls[: self.max_tool_calls], calls[self.max_tool_calls :]
        refused_ids = {c.id for c in refused}

        def execute(call: ToolCall) -> None:
            started = (time.perf_counter() - phase_start) * 1000
            self._emit("tool_started", run.id, index, "tools", tool_call=call)
            if call.id in refused_ids:
                outcome, source = self._refused(len(calls)), "refused"
            elif call.id in answered:
                outcome, source, _ = answered[call.id]
            else:
                outcome, source = self._resolve(run, call, decisions.get(call.id)), sources[call.id]
            results[call.id] = (outcome, source, started, self._tool_wire(call, source))
            # `text` says how the call was resolved (ToolSource): "mocked", "repeat", a person's decision
            self._emit("tool_finished", run.id, index, "tools", tool_call=call, outcome=outcome, text=source)

        for group in self._groups(run, allowed):
            THREADS.each(execute, group, self.max_tool_workers)  # kept threads: a turn starts none of its own
        for call in refused:
            execute(call)
        return results

    def _append_results(
        self,
        run: Run,
        calls: list[ToolCall],
        results: dict[str, _Result],
        originals: dict[str, ToolCall],
        hooks: dict[str, str],
    ) -> bool:
        """Append each result in call order and record its tool run (and the hook that changed or answered it);
        whether a final answer was accepted."""
        structured = False
        step = run.steps[-1] if run.steps else None
        for call in calls:
            outcome, source, started, wire = results[call.id]
            run.append(
                ToolMessage(tool_call_id=call.id, name=call.name, content=outcome.content, is_error=outcome.is_error)
            )
            if step is not None:
                original = originals.get(call.id)
                step.tool_runs.append(
                    ToolRun(
                        tool_call_id=call.id,
                        name=call.name,
                        duration_ms=outcome.duration_ms,
                        is_error=outcome.is_error,
                        error=outcome.error,
                        source=source,
                        original_arguments=None if original is None else original.arguments,
                        original_raw_arguments=None if original is None else original.raw_arguments,
                        started_ms=started,
                        wire=wire,
                        hook=hooks.get(call.id),
                    )
                )
            if call.name == FINAL_ANSWER_TOOL and not outcome.is_error and source in EXECUTED:
                structured = True
                run.final_output = call.arguments
        return structured

    def _before_tools(self, run: Run, hooks: list[Any], calls: list[ToolCall], skip: str | None) -> _Hooked:
        """Ask the before-tools chain, each hook seeing the calls still to run after the ones before it."""
        hooked = _Hooked()
        for hook, name in zip(hooks, hook_names(hooks), strict=True):
            if name == skip:  # it paused the run here: going on means not asking it again
                skip = None
                continue
            if not calls:
                break
            if idle(hook, run):
                continue
            passed = run_hooks("before_tools", [hook], run, calls, names=[name], time_limit=self.hook_time_limit)
            if passed.halt is not None:
                hooked.halt = passed
                return hooked
            hooked.effects.extend(passed.effects)
            still: list[ToolCall] = []
            for call, item in zip(calls, passed.value, strict=True):
                if isinstance(item, Refuse):
                    hooked.answered[call.id] = (refusal_outcome(call, name, item.reason), "hook_refused", name)
                elif isinstance(item, Answer) and item.source is not None:  # a built-in's own record
                    hooked.answered[call.id] = (item.outcome, item.source, None)  # type: ignore[assignment]
                elif isinstance(item, Answer):
                    hooked.answered[call.id] = (item.outcome, "hook_answered", name)
                else:
                    if item is not call and (item.arguments, item.raw_arguments) != (
                        call.arguments,
                        call.raw_arguments,
                    ):
                        hooked.edits[call.id] = (item.arguments, name)
                    still.append(item)
            calls = still
        return hooked

    def _apply_edits(
        self, run: Run, calls: list[ToolCall], decisions: dict[str, ToolDecision]
    ) -> tuple[list[ToolCall], dict[str, ToolCall]]:
        """Put a person's arguments into the pending calls; the calls as they were and the model's changed ones.

        An edit that leaves the arguments as the model gave them changes nothing and is not an edit.
        """
        edits: dict[str, dict[str, Any]] = {}
        for call in calls:
            d = decisions.get(call.id)
            if d is not None and d.action == "edit" and d.arguments is not None:
                if call.arguments_invalid or d.arguments != call.arguments:
                    edits[call.id] = d.arguments
        if not edits:
            return calls, {}
        originals = {c.id: c for c in calls if c.id in edits}
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
        return pending_tool_calls(run.messages), originals

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

    def _tool_wire(self, call: ToolCall, source: ToolSource) -> WireExchange | None:
        """The exchange a tool that talks to a server kept for this call (`exchange_for`), if it ran."""
        exchange_for = getattr(self.tools.get(call.name), "exchange_for", None)
        return exchange_for(call.id) if exchange_for is not None and source in EXECUTED else None

    def _refused(self, asked: int) -> ToolOutcome:
        """The result of a call beyond the turn's limit: not run, and the model is told which calls ran."""
        text = (
            f"Error: this call was refused and not run: the turn asked for {asked} tool calls and at most "
            f"{self.max_tool_calls} run in one turn, so calls {self.max_tool_calls + 1} to {asked} were refused. "
            f"The first {self.max_tool_calls} ran; ask again for the ones still needed, in fewer calls per turn."
        )
        return ToolOutcome.refusal(text, "too_many_calls")

    def _resolve(self, run: Run, call: ToolCall, decision: ToolDecision | None) -> ToolOutcome:
        if decision is not None and decision.action == "deny":
            why = f": {decision.reason}" if decision.reason else ""
            text = (
                f"Error: the user denied this call to {call.name}{why}. Do not call it again with the same arguments."
            )
            return ToolOutcome.refusal(text, "denied")
        if decision is not None and decision.action == "result":
            return ToolOutcome.answer(decision.content or "")
        if call.name == FINAL_ANSWER_TOOL and run.config.final_answer_schema is not None:
            return self._check_final_answer(run, call)
        tool = self.tools.get(call.name)
        if tool is None:
            return unknown_tool_outcome(call, list(self.tools))
        return tool.execute(call)

    def _check_final_answer(self, run: Run, call: ToolCall) -> ToolOutcome:
        from .schemas import SchemaError, schema_errors  # jsonschema and regex load when a schema is first used

        if call.arguments_invalid:
            return ToolOutcome.refusal(
                f"Error: the final answer is not a JSON object: {call.raw_arguments!r}. Call final_answer again.",
                "invalid_json",
            )
        try:
            errors = schema_errors(run.config.final_answer_schema, call.arguments)
        except SchemaError as exc:  # the run's schema, not the answer, is at fault: the model is told, the run goes on
            return ToolOutcome.refusal(
                f"Error: the final answer could not be checked: the final-answer schema cannot be applied: {exc}.",
                "schema_error",
            )
        if errors:
            problems = "; ".join(f"{'.'.join(map(str, e.path)) or 'answer'}: {e.message}" for e in errors)
            return ToolOutcome.refusal(
                f"Error: the final answer does not match the schema: {problems}. Call final_answer again.",
                "invalid_arguments",
            )
        return ToolOutcome.answer("Final answer accepted.")

    # -- steps and runs --------------------------------------------------------------

    def step(
        self, run: Run, decisions: dict[str, ToolDecision] | None = None, cancel: threading.Event | None = None
    ) -> Phase:
        """One iteration: the model phase, then the tools phase if the model asked for tools.

        A run that pauses before tools stops after the model phase; its next step runs the tools.
        `cancel`, when set while the reply streams or between the phases, stops the step before its tools.
        """
        if run.next_phase == "model":
            self.model_phase(run, cancel)
            if run.stop_reason in ("error", "stopped", "cancelled") or run.paused:
                return run.next_phase
            if cancel is not None and cancel.is_set() and run.next_phase == "tools":
                run.stop_reason = "cancelled"
                return run.next_phase
            decisions = None  # calls the model just made were shown to no one: they run as it asked
        if run.next_phase == "tools":
            self.tools_phase(run, decisions)
        return run.next_phase

    def run(self, run: Run, cancel: threading.Event | None = None) -> Run:
        """Step until a stop reason (answer, max_steps, structured, error, cancelled, stopped) or a pause."""
        while not run.finished and not run.paused:
            if cancel is not None and cancel.is_set():
                run.stop_reason = "cancelled"
                break
            self.step(run, cancel=cancel)
            if run.stop_reason in ("error", "cancelled", "stopped"):
                break
        if run.finished and run.stop_reason is None:
            run.stop_reason = "max_steps"  # a run that starts with its budget already used up
        self._emit("run_finished", run.id, len(run.steps), error=run.error)
        return run


class _CallFailed(Exception):
    """The model call failed: the step fails with this one-line message."""


class _CallStopped(Exception):
    """The model call was stopped while its reply streamed (a Stop pressed): the run stops, nothing appended."""


@dataclass
class _Hooked:
    """What the before-tools hooks did: calls they answered or refused, arguments they changed, their effects."""

    answered: dict[str, _Answered] = field(default_factory=dict)
    edits: dict[str, tuple[dict[str, Any], str]] = field(default_factory=dict)  # call id: (arguments, hook)
    effects: list[HookEffect] = field(default_factory=list)
    halt: Passed[Any] | None = None

    @property
    def names(self) -> dict[str, str]:
        """The hook that answered, refused or changed each call (the loop guard's repeats left out)."""
        named = {i: h for i, (_, _, h) in self.answered.items() if h is not None}
        return named | {i: h for i, (_, h) in self.edits.items()}

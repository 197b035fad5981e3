"""A run as OpenTelemetry spans that follow the GenAI conventions: `invoke_agent` → `chat` / `execute_tool`.

One trace per run; the root span `invoke_agent agentcore`, one `chat {model}` child per step's model
call and one `execute_tool {name}` child per tool call, with the times the run recorded. Trace and span
ids derive from the run id, so a run exported twice is the same trace (a backend keeps one copy) and a
fork's link points at its parent's root span. Message content (messages, system prompt, tool
definitions, arguments and results) is written only when asked for (`content=True`).

Needs the `otel` extra (opentelemetry-sdk); nothing here is imported until a run is exported.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from .. import __version__
from ..accounting import sent_at, step_costs
from ..messages import AssistantMessage, Message, SystemMessage, ToolMessage
from ..run import Run
from ..secrets import redacted_url, scrub, scrub_text, split_url
from ..steps import StepRecord, ToolRun
from ..tool_output import utf8_safe
from . import genai as g

AGENT = "agentcore"
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def _id(bits: int, *names: str) -> int:
    digest = hashlib.sha256("/".join(names).encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[: bits // 8], "big") or 1  # an id of all zeros is invalid


def trace_id(run_id: str) -> int:
    """The trace id of a run: the same for every export of it."""
    return _id(128, "agentcore-run", run_id)


def root_span_id(run_id: str) -> int:
    """The span id of a run's `invoke_agent` span."""
    return _id(64, "agentcore-run", run_id, "root")


def _context(run_id: str, span_id: int) -> SpanContext:
    return SpanContext(trace_id(run_id), span_id, is_remote=False, trace_flags=_SAMPLED)


def _nanos(stamp: str | None) -> int | None:
    if not stamp:
        return None
    try:
        return int(datetime.fromisoformat(stamp).timestamp() * 1e9)
    except (ValueError, OverflowError, OSError):
        return None


def _ms(ms: float) -> int:
    return int(ms * 1e6)


class _Builder:
    """Builds one run's spans; `content` says whether messages and arguments are written."""

    def __init__(self, run: Run, content: bool) -> None:
        self.run = run
        self.content = content
        resource = {"service.name": AGENT, "service.version": __version__}
        self.resource = Resource(resource, schema_url=g.CORE_SCHEMA_URL)
        self.scope = InstrumentationScope(g.SCOPE, __version__, schema_url=g.SCHEMA_URL)
        self.root = _context(run.id, root_span_id(run.id))
        self.costs = step_costs(run)
        self.start = _nanos(run.created_at) or 0

    def span(
        self, name: str, span_id: int, kind: SpanKind, start: int, end: int, attributes: dict[str, Any], **extra: Any
    ) -> ReadableSpan:
        # every value is scrubbed of known secrets here, the one place a span's attributes are made, and the
        # status's words too: a send over OTLP carries the spans as they are, not through a file writer's scrub
        # and made writable: a lone surrogate in a title or a message is U+FFFD in a span, which OTLP's protobuf and
        # JSON encoders must be able to write (the transcript keeps the original)
        clean = _writable(scrub({k: v for k, v in attributes.items() if v is not None and v != [] and v != ""}))
        status = extra.get("status")
        if status is not None and status.description:
            extra["status"] = Status(status.status_code, scrub_text(status.description))
        parent = None if span_id == self.root.span_id else self.root
        return ReadableSpan(
            name=name,
            context=_context(self.run.id, span_id),
            parent=parent,
            resource=self.resource,
            attributes=clean,
            kind=kind,
            instrumentation_scope=self.scope,
            start_time=start,
            end_time=max(end, start),
            **extra,
        )

    # -- the step's spans --------------------------------------------------------------

    def step_start(self, step: StepRecord, floor: int) -> int:
        return max(_nanos(step.started_at) or floor, floor)

    def step_spans(self, step: StepRecord, floor: int) -> tuple[list[ReadableSpan], int]:
        """A step's chat span and its tool spans, and when the last of them ended."""
        start = self.step_start(step, floor)
        end = start + _ms(step.latency_ms)
        spans = [self.chat_span(step, start, end)]
        last = end
        for tool_run in step.tool_runs:
            tool_start = end + _ms(tool_run.started_ms)
            tool_end = tool_start + _ms(tool_run.duration_ms)
            spans.append(self.tool_span(step, tool_run, tool_start, tool_end))
            last = max(last, tool_end)
        return spans, last

    def chat_span(self, step: StepRecord, start: int, end: int) -> ReadableSpan:
        run, config = self.run, self.run.config
        who = run.answered_by(step)
        reply = run.messages[step.message_count] if step.message_count < len(run.messages) else None
        wire = step.wire
        remote = who.provider not in g.IN_PROCESS  # an in-process model's wire url names no server
        # split_url: a stored URL's userinfo reads `[redacted]`, which the standard parser takes for an IPv6 host
        address = split_url(wire.url) if remote and wire is not None and wire.url else None
        usage = step.usage
        response_id, response_model = g.response_identity(wire.response) if remote and wire else (None, None)
        attributes: dict[str, Any] = {
            g.OPERATION: "chat",
            g.PROVIDER: g.vendor(who.provider),
            g.RUN_PROVIDER: who.provider,
            g.CONVERSATION: run.id,
            g.REQUEST_MODEL: who.model or config.model,
            g.REQUEST_MAX_TOKENS: config.max_tokens,
            g.REQUEST_TEMPERATURE: config.temperature,
            g.REQUEST_SEED: config.seed,
            # the model that answered, as its response names it (an alias resolves to a dated id); an in-process
            # model is the one asked; a response that names none leaves it out rather than copy the request's
            g.RESPONSE_MODEL: response_model if remote else who.model,
            g.RESPONSE_ID: response_id,
            g.REQUEST_STREAM: isinstance(wire.response, list) if remote and wire is not None else None,
            g.REQUEST_REASONING_LEVEL: _sent_effort(wire.request) if remote and wire is not None else None,
            g.CONVERSATION_COMPACTED: _compacted(step) or None,  # the conventions: true only, never false
            g.FINISH_REASONS: [step.finish_reason] if step.finish_reason else None,
            g.INPUT_TOKENS: usage.input_tokens,
            g.OUTPUT_TOKENS: usage.output_tokens,
            g.CACHE_READ: usage.cache_read_tokens,
            g.CACHE_WRITE: usage.cache_write_tokens,
            g.CACHE_CREATION: usage.cache_write_tokens,
            g.REASONING_TOKENS: usage.reasoning_tokens or None,
            g.SERVER_ADDRESS: _host(address),
            g.SERVER_PORT: _port(address),
            g.STEP_INDEX: step.index,
            g.STEP_ESTIMATED: step.estimated or None,
            g.COST: self.costs[step.index - 1],
            g.STEP_POLICIES: list(step.sent.policies) if step.sent is not None else None,
            g.TOOLS_WITHHELD: step.tools_withheld or None,
        }
        if self.content:
            sent = sent_at(run, step.index)
            attributes[g.INPUT_MESSAGES] = _messages(sent)
            history = run.messages[: step.message_count]
            if step.sent is not None or sent != history:  # the history whole, where the call sent something else
                attributes[g.STEP_HISTORY] = _messages(history)
            if isinstance(reply, AssistantMessage):
                output = g.message_parts(reply)
                if step.finish_reason:
                    output["finish_reason"] = step.finish_reason
                attributes[g.OUTPUT_MESSAGES] = g.dumps([output])
            if config.system_prompt:
                attributes[g.SYSTEM_INSTRUCTIONS] = g.dumps(g.system_parts(config.system_prompt))
            attributes[g.TOOL_DEFINITIONS] = _tool_definitions(run)
            if step.hook_effects:
                attributes[g.STEP_HOOK_EFFECTS] = g.dumps([e.model_dump(mode="json") for e in step.hook_effects])
        kind = SpanKind.INTERNAL if who.provider in g.IN_PROCESS else SpanKind.CLIENT
        name = f"chat {who.model or config.model or who.provider}"
        span_id = _id(64, "agentcore-run", run.id, "step", str(step.index))
        events = self.annotation_events(step, None, end)
        return self.span(name, span_id, kind, start, end, attributes, events=events)

    def tool_span(self, step: StepRecord, tool_run: ToolRun, start: int, end: int) -> ReadableSpan:
        run = self.run
        call = _call_of(run, step, tool_run.tool_call_id)
        result = next(
            (m for m in run.messages if isinstance(m, ToolMessage) and m.tool_call_id == tool_run.tool_call_id), None
        )
        spec = next((t for t in run.tool_specs if t.name == tool_run.name), None)
        mcp = spec is not None and (spec.source or "").startswith("mcp:")
        attributes: dict[str, Any] = {
            g.OPERATION: "execute_tool",
            g.TOOL_NAME: tool_run.name,
            g.TOOL_CALL_ID: tool_run.tool_call_id,
            g.TOOL_TYPE: "extension" if mcp else "function",
            g.CONVERSATION: run.id,
            g.ERROR_TYPE: "tool_error" if tool_run.is_error else None,
            g.DECISION: None if tool_run.source == "ran" else tool_run.source,
            g.TOOL_HOOK: tool_run.hook,
            g.STEP_INDEX: step.index,
        }
        if self.content:
            if call is not None:
                attributes[g.TOOL_ARGUMENTS] = call.arguments_text
            if result is not None:
                attributes[g.TOOL_RESULT] = result.content
            attributes[g.ORIGINAL_ARGUMENTS] = tool_run.original_arguments_text
            attributes[g.ORIGINAL_RESULT] = tool_run.original_content
        status = Status(StatusCode.ERROR, tool_run.error or "") if tool_run.is_error else Status(StatusCode.UNSET)
        span_id = _id(64, "agentcore-run", run.id, "tool", str(step.index), tool_run.tool_call_id)
        events = self.annotation_events(step, tool_run.tool_call_id, end)
        return self.span(
            f"execute_tool {tool_run.name}",
            span_id,
            SpanKind.INTERNAL,
            start,
            end,
            attributes,
            status=status,
            events=events,
        )

    def annotation_events(self, step: StepRecord, call_id: str | None, end: int) -> list[Event]:
        """The annotations on this call, or (call_id None) on the step and on its calls no tool span shows,
        each an `agentcore.annotation` event."""
        ran = {t.tool_call_id for t in step.tool_runs}
        events = []
        for a in self.run.annotations:
            on_chat = a.tool_call_id is None or a.tool_call_id not in ran
            if a.step != step.index or (a.tool_call_id != call_id if call_id is not None else not on_chat):
                continue
            attributes: dict[str, Any] = {
                g.ANNOTATION_ID: a.id,
                g.TOOL_CALL_ID: a.tool_call_id,
                g.ANNOTATION_LABELS: list(a.labels),
                g.ANNOTATION_TAGS: list(a.tags),
                g.ANNOTATION_SCORE: a.score,
                g.ANNOTATION_AUTHOR: a.author,
            }
            if self.content:
                attributes[g.ANNOTATION_NOTE] = a.note
                attributes[g.ANNOTATION_CORRECT_CALL] = g.dumps(a.correct_call.model_dump()) if a.correct_call else None
            clean = scrub({k: v for k, v in attributes.items() if v is not None and v != [] and v != ""})
            events.append(Event(g.ANNOTATION, clean, timestamp=_nanos(a.created_at) or end))
        return events

    # -- the run's span ----------------------------------------------------------------

    def root_span(self, end: int) -> ReadableSpan:
        run, config = self.run, self.run.config
        attributes: dict[str, Any] = {
            g.OPERATION: "invoke_agent",
            g.AGENT_NAME: AGENT,
            g.PROVIDER: g.vendor(config.provider),
            g.RUN_PROVIDER: config.provider,
            g.CONVERSATION: run.id,
            g.REQUEST_MODEL: config.model or None,
            g.INPUT_TOKENS: run.usage.input_tokens,
            g.OUTPUT_TOKENS: run.usage.output_tokens,
            g.RUN_STOP: run.stop_reason,
            g.ERROR_TYPE: "provider_error" if run.stop_reason == "error" else None,
            g.RUN_ERROR: run.error,
            g.COST: None if any(c is None for c in self.costs) else sum(c for c in self.costs if c is not None),
            g.PARENT_RUN: run.parent.run_id if run.parent else None,
            g.PARENT_STEP: run.parent.step if run.parent else None,
        }
        if self.content:
            attributes[g.RUN_TITLE] = run.title
            recorded = config.model_dump(mode="json")
            if config.base_url:  # a transcript written before its credentials were known may still hold them
                recorded["base_url"] = redacted_url(config.base_url)
            attributes[g.RUN_CONFIG] = g.dumps(recorded)
            if run.final_output is not None:
                attributes[g.RUN_FINAL_OUTPUT] = g.dumps(run.final_output)
            if config.system_prompt:
                attributes[g.SYSTEM_INSTRUCTIONS] = g.dumps(g.system_parts(config.system_prompt))
            attributes[g.TOOL_DEFINITIONS] = _tool_definitions(run)
            if run.halt is not None:
                attributes[g.RUN_HALT] = g.dumps(run.halt.model_dump(mode="json"))
            if run.halts:
                attributes[g.RUN_HALTS] = g.dumps([h.model_dump(mode="json") for h in run.halts])
        links = []
        if run.parent is not None:  # the fork's parent run, as a link to its root span
            links.append(Link(_context(run.parent.run_id, root_span_id(run.parent.run_id))))
        status = Status(StatusCode.ERROR, run.error or "") if run.stop_reason == "error" else Status(StatusCode.UNSET)
        return self.span(
            f"invoke_agent {AGENT}",
            self.root.span_id,
            SpanKind.INTERNAL,
            self.start,
            end,
            attributes,
            links=links,
            status=status,
        )


def _writable(value: Any) -> Any:
    if isinstance(value, str):
        return utf8_safe(value)
    if isinstance(value, dict):
        return {k: _writable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_writable(v) for v in value]
    return value


def _host(address: Any) -> str | None:
    try:
        return address.hostname if address else None
    except ValueError:  # a host no parser takes
        return None


def _port(address: Any) -> int | None:
    """The server's port, the scheme's own where the URL implies it (the conventions: with every server.address)."""
    if not address:
        return None
    try:
        port = address.port
    except ValueError:  # a port that is not a number
        return None
    return port if port is not None else {"https": 443, "http": 80}.get(address.scheme)


def _sent_effort(body: Any) -> str | None:
    """The reasoning effort a request body sent, in its dialect's place for it; None when it sent none."""
    if not isinstance(body, dict):
        return None
    places = [body.get("reasoning_effort"), body.get("think")]  # Chat Completions; Ollama's think level
    for nested in ("reasoning", "output_config"):  # the Responses API; Anthropic
        if isinstance(body.get(nested), dict):
            places.append(body[nested].get("effort"))
    return next((p[:32] for p in places if isinstance(p, str) and p), None)


def _compacted(step: StepRecord) -> bool:
    """Whether the step's request left older turns out or summarised them: the context policies compacted it, or
    the agent whose session it was (an imported compaction)."""
    sent = step.sent
    return sent is not None and (
        sent.compaction is not None or any(c.mark in ("dropped", "summarised") for c in sent.changes.values())
    )


def _messages(messages: list[Message]) -> str:
    # the system prompt goes in gen_ai.system_instructions, not in the message list
    return g.dumps([g.message_parts(m) for m in messages if not isinstance(m, SystemMessage)])


def _tool_definitions(run: Run) -> str | None:
    specs = run.tool_specs
    if not specs:
        return None
    return g.dumps(
        [{"type": "function", "name": s.name, "description": s.description, "parameters": s.parameters} for s in specs]
    )


def _call_of(run: Run, step: StepRecord, call_id: str) -> Any:
    reply = run.messages[step.message_count] if step.message_count < len(run.messages) else None
    if isinstance(reply, AssistantMessage):
        return next((c for c in reply.tool_calls if c.id == call_id), None)
    return None


def run_spans(run: Run, *, content: bool = False) -> list[ReadableSpan]:
    """The run's spans: the root `invoke_agent` span first, then each step's `chat` and `execute_tool` spans."""
    builder = _Builder(run, content)
    spans: list[ReadableSpan] = []
    end = builder.start
    for step in run.steps:
        step_spans, end = builder.step_spans(step, end)
        spans.extend(step_spans)
    return [builder.root_span(end), *spans]


def step_spans(run: Run, index: int, *, content: bool = False) -> list[ReadableSpan]:
    """Step `index`'s `chat` span and its `execute_tool` spans, children of the run's root span (live export)."""
    builder = _Builder(run, content)
    step = run.steps[index - 1]
    spans, _ = builder.step_spans(step, builder.step_start(step, builder.start))
    return spans


def root_span(run: Run, *, content: bool = False) -> ReadableSpan:
    """The run's `invoke_agent` span alone, ending with its last step (live export, once the run stops)."""
    return run_spans(run, content=content)[0]

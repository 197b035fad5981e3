"""OTLP-JSON traces read back as runs: the GenAI conventions from any emitter, and OpenInference spans.

A file is an OTLP/HTTP JSON body (`{"resourceSpans": [...]}`), or JSON Lines of them as the SDK's and
the Collector's file exporters write; Phoenix's own span download (snake_case keys) reads too. The
first trace that holds a model call becomes the run: the last model call's input and output messages
are the message list (the whole history where agentcore recorded one), the tool spans answer the calls
still open after it, and each model call is a step with its usage, model and times; each tool span is
a tool run of the step whose reply made the call, with a person's decision where agentcore wrote one,
and each `agentcore.annotation` event on a chat or tool span is a person's label on that step or call.

Every refusal is a TranscriptError of one line naming the span and the attribute. Reading needs no
OpenTelemetry package.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any, get_args

from pydantic import ValidationError

from ..annotations import Annotation
from ..errors import TranscriptError
from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
    validate_messages,
)
from ..run import ForkOrigin, Run, RunConfig
from ..steps import StepRecord, StopReason, ToolRun, ToolSource
from ..tools import ToolSpec
from ..transcript import describe_validation
from . import genai as g
from .spans import PROVIDERS, Span, json_attribute, read_otlp, spans_of_bodies, spans_of_data

# -- spans to a run -------------------------------------------------------------------


def from_otlp(raw: bytes | str) -> Run:
    """A run from an OTLP-JSON file's bytes; a TranscriptError of one line when it cannot be one."""
    bodies = read_otlp(raw)
    return run_from_spans(spans_of_data(bodies[0]) if len(bodies) == 1 else spans_of_bodies(bodies))


# how to record a trace that can be imported: the content is what a run is rebuilt from
WITH_CONTENT = (
    "export it again with its content (agentcore runs export RUN --format otlp-json --content; the app's OpenTelemetry "
    "download has it), or record it with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"
)


def run_from_spans(spans: list[Span]) -> Run:
    """The run recorded by the first trace of `spans` that holds a model call."""
    trace = next((s.trace for s in spans if s.is_model), None)
    if trace is None:
        raise TranscriptError(
            "no model call in the trace: expected a GenAI `chat` span (gen_ai.operation.name) or an OpenInference "
            "LLM span"
        )
    mine = [s for s in spans if s.trace == trace]
    ids = {s.id for s in mine}
    root = next((s for s in mine if s.operation == "invoke_agent"), None) or next(
        (s for s in mine if s.parent not in ids), mine[0]
    )
    return _Reader(root, mine).run()


class _Reader:
    def __init__(self, root: Span, spans: list[Span]) -> None:
        self.root = root
        self.chats = sorted((s for s in spans if s.is_model), key=lambda s: (s.start, s.end))
        self.tools = sorted((s for s in spans if s.is_tool), key=lambda s: (s.start, s.end))
        # each call's tool spans, in time order: a step finds its own without looking at every other step's
        self.tools_of: dict[str, list[tuple[int, Span]]] = {}
        for k, span in enumerate(self.tools):
            if span.call_id is not None:
                self.tools_of.setdefault(span.call_id, []).append((k, span))

    def run(self) -> Run:
        last = self.chats[-1]
        try:
            messages = self.messages(last)
            steps = self.steps(messages)
            config = self.config(messages)
        except g.PartsError as exc:
            raise TranscriptError(f"{last.label()}: {exc}") from None
        except ValidationError as exc:
            raise TranscriptError(f"{last.label()}: {describe_validation(exc)}") from None
        violations = validate_messages(messages)
        if violations:
            raise TranscriptError(f"{last.label()}: the messages it recorded: {violations[0]}")
        root = self.root
        stop = root.text(g.RUN_STOP)
        parent_run, parent_step = root.text(g.PARENT_RUN), root.count(g.PARENT_STEP)
        first = next((m.content for m in messages if isinstance(m, UserMessage)), "")
        try:
            return Run(
                id=self.run_id(),
                title=root.text(g.RUN_TITLE) or f"imported trace: {first[:60]}",
                created_at=_stamp(root.start or last.start),
                config=config,
                messages=messages,
                steps=steps,
                stop_reason=stop if stop in get_args(StopReason) else _stop(messages),
                error=root.text(g.RUN_ERROR),
                final_output=root.json(g.RUN_FINAL_OUTPUT),
                parent=ForkOrigin(run_id=parent_run, step=parent_step) if parent_run else None,
                annotations=self.annotations(steps),
                halt=root.json(g.RUN_HALT),
                halts=root.json(g.RUN_HALTS) or [],
            )
        except ValidationError as exc:
            raise TranscriptError(f"{root.label()}: {describe_validation(exc)}") from None

    def annotations(self, steps: list[StepRecord]) -> list[Annotation]:
        """The people's labels the spans carry: a chat span's on its step, a tool span's on its call."""
        step_of_call = {t.tool_call_id: s.index for s in steps for t in s.tool_runs}
        found = []
        for n, chat in enumerate(self.chats, start=1):
            found += [(chat, n, event) for event in chat.annotations]
        for tool in self.tools:
            if tool.call_id in step_of_call:
                found += [(tool, step_of_call[tool.call_id], event) for event in tool.annotations]
        out = []
        for span, step, (stamp, a) in found:
            correct = json_attribute(a.get(g.ANNOTATION_CORRECT_CALL), span, g.ANNOTATION_CORRECT_CALL)
            try:
                annotation = Annotation.model_validate(
                    {
                        "step": step,
                        "tool_call_id": a.get(g.TOOL_CALL_ID) or (span.call_id if span.is_tool else None),
                        "labels": a.get(g.ANNOTATION_LABELS) or [],
                        "tags": a.get(g.ANNOTATION_TAGS) or [],
                        "score": a.get(g.ANNOTATION_SCORE),
                        "note": a.get(g.ANNOTATION_NOTE) or "",
                        "correct_call": correct,
                        "author": a.get(g.ANNOTATION_AUTHOR),
                        "created_at": _stamp(stamp or span.end),
                        **({"id": a[g.ANNOTATION_ID]} if a.get(g.ANNOTATION_ID) else {}),
                    }
                )
            except ValidationError as exc:
                raise TranscriptError(f"{span.label()}: {g.ANNOTATION}: {describe_validation(exc)}") from None
            out.append(annotation)
        return sorted(out, key=lambda a: (a.step, a.created_at, a.id))  # as the runs database lists them

    def run_id(self) -> str:
        conversation = self.root.attributes.get(g.CONVERSATION)
        if isinstance(conversation, str) and re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", conversation):
            return conversation
        return self.root.trace[:12]

    # -- messages ----------------------------------------------------------------------

    def messages(self, last: Span) -> list[Message]:
        provider = _provider(last)
        names: dict[str, str] = {}
        history = last.json(g.STEP_HISTORY)
        if history is None:
            history = last.json(g.INPUT_MESSAGES)
        output = last.json(g.OUTPUT_MESSAGES)
        if history is None and output is None:
            return _openinference_messages(last, provider)
        if history is None:
            raise TranscriptError(
                f"{last.label()}: holds no {g.INPUT_MESSAGES}: the trace was recorded without message content; "
                + WITH_CONTENT
            )
        messages = g.parts_messages(history, g.INPUT_MESSAGES, provider, names)
        messages += g.parts_messages(output or [], g.OUTPUT_MESSAGES, provider, names)
        system = last.json(g.SYSTEM_INSTRUCTIONS)
        if system is None:
            system = self.root.json(g.SYSTEM_INSTRUCTIONS)
        if system is not None and not any(isinstance(m, SystemMessage) for m in messages):
            messages.insert(0, SystemMessage(content=g.system_text(system, g.SYSTEM_INSTRUCTIONS)))
        return messages + self.open_results(messages)

    def open_results(self, messages: list[Message]) -> list[Message]:
        """The tool spans' results for the calls of the last reply that have none in the messages."""
        reply = messages[-1] if messages else None
        if not isinstance(reply, AssistantMessage):
            return []
        spans = {s.call_id: s for s in self.tools if s.call_id is not None}
        out: list[Message] = []
        for call in reply.tool_calls:
            span = spans.get(call.id)
            result = span.text(g.TOOL_RESULT) if span is not None else None
            if span is None or result is None:
                break  # results go in call order: the first call without one ends them
            failed = span.failed or span.attributes.get(g.ERROR_TYPE) is not None
            out.append(ToolMessage(tool_call_id=call.id, name=call.name, content=result, is_error=failed))
        return out

    # -- steps -------------------------------------------------------------------------

    def steps(self, messages: list[Message]) -> list[StepRecord]:
        replies = [i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)]
        aligned = len(replies) == len(self.chats)
        steps = []
        floor = 0
        for n, chat in enumerate(self.chats, start=1):
            at = replies[n - 1] if aligned else min(max(floor, self.input_count(chat)), len(messages))
            floor = at
            steps.append(self.step(n, chat, at, messages))
        return steps

    def input_count(self, chat: Span) -> int:
        data = chat.json(g.STEP_HISTORY) or chat.json(g.INPUT_MESSAGES)
        system = 1 if chat.attributes.get(g.SYSTEM_INSTRUCTIONS) is not None else 0
        return (len(data) + system) if isinstance(data, list) else 0

    def step(self, index: int, chat: Span, message_count: int, messages: list[Message]) -> StepRecord:
        a = chat.attributes
        usage = Usage(
            input_tokens=chat.count(g.INPUT_TOKENS, "llm.token_count.prompt"),
            output_tokens=chat.count(g.OUTPUT_TOKENS, "llm.token_count.completion"),
            cache_read_tokens=chat.count(g.CACHE_READ, "llm.token_count.prompt_details.cache_read"),
            cache_write_tokens=chat.count(g.CACHE_WRITE, "llm.token_count.prompt_details.cache_write"),
            reasoning_tokens=chat.count(g.REASONING_TOKENS, "llm.token_count.completion_details.reasoning"),
        )
        reasons = a.get(g.FINISH_REASONS) or [a.get("llm.finish_reason")]
        finish = reasons[0] if isinstance(reasons, list) and isinstance(reasons[0], str) else None
        model = a.get(g.RESPONSE_MODEL) or a.get(g.REQUEST_MODEL) or a.get("llm.model_name")
        reply = messages[message_count] if message_count < len(messages) else None
        # in call order, as the loop records them: threads start a step's calls in no fixed order
        calls = dict.fromkeys(c.id for c in reply.tool_calls) if isinstance(reply, AssistantMessage) else {}
        return StepRecord(
            index=index,
            provider=_provider(chat),
            model=model if isinstance(model, str) else None,
            usage=usage,
            estimated=a.get(g.STEP_ESTIMATED) is True,
            latency_ms=(chat.end - chat.start) / 1e6,
            finish_reason=finish,
            message_count=message_count,
            tool_runs=[self.tool_run(s, chat) for c in calls for _, s in self.tools_of.get(c, ())],
            started_at=_stamp(chat.start),
            tools_withheld=a.get(g.TOOLS_WITHHELD) is True,
            hook_effects=chat.json(g.STEP_HOOK_EFFECTS) or [],
        )

    def tool_run(self, span: Span, chat: Span) -> ToolRun:
        a = span.attributes
        source = a.get(g.DECISION)
        original = span.text(g.ORIGINAL_ARGUMENTS)
        original_args = None
        if original is not None:
            try:
                parsed = json.loads(original)
            except (ValueError, RecursionError):
                parsed = None
            original_args = parsed if isinstance(parsed, dict) else None
        failed = span.failed or a.get(g.ERROR_TYPE) is not None
        return ToolRun(
            tool_call_id=span.call_id or "",
            name=span.text(g.TOOL_NAME) or span.name.removeprefix("execute_tool "),
            duration_ms=(span.end - span.start) / 1e6,
            is_error=failed,
            error=span.status_message if failed else None,
            source=source if source in get_args(ToolSource) else "ran",
            original_arguments=original_args,
            original_raw_arguments=original if original is not None and original_args is None else None,
            original_content=span.text(g.ORIGINAL_RESULT),
            started_ms=max(0, span.start - chat.end) / 1e6,
            hook=span.text(g.TOOL_HOOK),
        )

    # -- config ------------------------------------------------------------------------

    def config(self, messages: list[Message]) -> RunConfig:
        recorded = self.root.json(g.RUN_CONFIG)
        if isinstance(recorded, dict):
            return RunConfig.model_validate(recorded)
        first = self.chats[0]
        provider = _provider(first)
        model = first.attributes.get(g.REQUEST_MODEL) or first.attributes.get("llm.model_name")
        temperature = first.attributes.get(g.REQUEST_TEMPERATURE)
        max_tokens = first.attributes.get(g.REQUEST_MAX_TOKENS)
        definitions = first.json(g.TOOL_DEFINITIONS) or self.root.json(g.TOOL_DEFINITIONS) or []
        return RunConfig(
            provider=PROVIDERS.get(provider, "scripted"),  # a model agentcore cannot call is stepped by another
            model=model if isinstance(model, str) else "",
            system_prompt=messages[0].content if messages and isinstance(messages[0], SystemMessage) else None,
            tools=_tool_specs(definitions, first),
            temperature=temperature if _number(temperature) and temperature >= 0 else None,
            max_tokens=max_tokens if _number(max_tokens) and isinstance(max_tokens, int) and 1 <= max_tokens else None,
            max_steps=max(10, len(self.chats) + 1),
        )


def _number(value: Any) -> bool:
    """Whether an attribute holds a number (a boolean is none, though Python counts it an int)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _provider(span: Span) -> str:
    for key in (g.RUN_PROVIDER, g.PROVIDER, g.LEGACY_PROVIDER, "llm.provider", "llm.system"):
        value = span.attributes.get(key)
        if isinstance(value, str) and value:
            return value.removeprefix("agentcore.") if key == g.PROVIDER else value
    return "imported"


def _tool_specs(definitions: Any, span: Span) -> list[ToolSpec]:
    if not isinstance(definitions, list):
        raise TranscriptError(f"{span.label()}: {g.TOOL_DEFINITIONS} is not a list of tools")
    specs = []
    for i, d in enumerate(definitions):
        fn = d.get("function", d) if isinstance(d, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise TranscriptError(f"{span.label()}: {g.TOOL_DEFINITIONS}[{i}] is not a tool with a name")
        parameters = fn.get("parameters") or {"type": "object", "properties": {}}
        description = fn.get("description") if isinstance(fn.get("description"), str) else ""
        try:
            specs.append(ToolSpec(name=fn["name"], description=description, parameters=parameters))
        except ValidationError as exc:
            raise TranscriptError(f"{span.label()}: {g.TOOL_DEFINITIONS}[{i}]: {describe_validation(exc)}") from None
    return specs


def _stamp(nanos: int) -> str:
    try:
        return datetime.fromtimestamp(nanos / 1e9, UTC).isoformat(timespec="milliseconds")
    except (ValueError, OverflowError, OSError):
        return datetime.fromtimestamp(0, UTC).isoformat(timespec="milliseconds")


def _stop(messages: list[Message]) -> StopReason | None:
    last = messages[-1] if messages else None
    return "answer" if isinstance(last, AssistantMessage) and not last.tool_calls else None


# -- OpenInference --------------------------------------------------------------------


def _openinference_messages(span: Span, provider: str) -> list[Message]:
    """The messages of an OpenInference LLM span: `llm.input_messages.N.message.*` then `llm.output_messages`."""
    found = _oi_list(span, "llm.input_messages") + _oi_list(span, "llm.output_messages")
    if not found:
        raise TranscriptError(
            f"{span.label()}: holds neither {g.INPUT_MESSAGES} nor llm.input_messages: the trace was recorded "
            "without message content; " + WITH_CONTENT
        )
    data = []
    for m in found:
        role, content = m.get("role"), m.get("content")
        parts: list[dict[str, Any]] = []
        if isinstance(content, str) and content:
            parts.append({"type": "text", "content": content})
        for item in _numbered(m.get("contents")):
            inner = _mapping(item.get("message_content"))
            if inner.get("type", "text") == "text" and isinstance(inner.get("text"), str):
                parts.append({"type": "text", "content": inner["text"]})
        for item in _numbered(m.get("tool_calls")):
            call = _mapping(item.get("tool_call"))
            fn = _mapping(call.get("function"))
            parts.append(
                {"type": "tool_call", "id": call.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")}
            )
        if role == "tool":
            text = content if isinstance(content, str) else ""
            parts = [{"type": "tool_call_response", "id": m.get("tool_call_id"), "response": text}]
        data.append({"role": role, "parts": parts, **({"name": m["name"]} if isinstance(m.get("name"), str) else {})})
    return g.parts_messages(data, "llm.input_messages", provider, {})


def _mapping(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _numbered(value: Any) -> list[dict[Any, Any]]:
    """The objects of a flattened list (`…tool_calls.0.…`, `…tool_calls.1.…`), in order; anything else none."""
    items = _mapping(value)
    return [items[k] for k in sorted(k for k in items if isinstance(k, int)) if isinstance(items[k], dict)]


def _oi_list(span: Span, prefix: str) -> list[dict[str, Any]]:
    """`prefix.N.message.a.b` attributes as a list of nested dicts, by N (numbers as keys, in order)."""
    items: dict[int, dict[str, Any]] = {}
    for key, value in span.attributes.items():
        if not key.startswith(prefix + "."):
            continue
        path = key[len(prefix) + 1 :].split(".")
        if len(path) < 3 or not path[0].isdigit() or path[1] != "message" or len(path[0]) > 6:
            continue
        node = items.setdefault(int(path[0]), {})
        rest = [int(p) if p.isdigit() and len(p) <= 6 else p for p in path[2:]]
        for part in rest[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[rest[-1]] = value
    return [items[i] for i in sorted(items)]

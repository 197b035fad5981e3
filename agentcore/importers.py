"""Import a run from the project's transcript JSON or from a plain OpenAI- or Anthropic-style message list.

Accepted shapes: a transcript (format "agentcore.transcript"); a list of OpenAI chat
messages (tool_calls with JSON-string arguments, role "tool" results); a list of
Anthropic messages (content blocks, tool_use in assistant turns, tool_result blocks
in user turns); or a whole request body of either with "messages" (Anthropic's
top-level "system", "model" and "tools" are read too). Anthropic thinking and
redacted_thinking blocks, and an assistant message's Ollama-style "thinking" text,
are kept as ReasoningParts. An OTLP-JSON trace (the GenAI conventions or OpenInference)
is read by agentcore.telemetry.importer. Every refusal is a TranscriptError that names the
field and the reason.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from .errors import TranscriptError
from .messages import (
    AssistantMessage,
    Message,
    ReasoningPart,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    parse_arguments,
    validate_messages,
)
from .run import Run, RunConfig
from .telemetry.importer import from_otlp, run_from_spans
from .telemetry.spans import is_otlp, spans_of_data
from .tools import ToolSpec
from .transcript import describe_validation, from_dict, read_json


def _fail(where: str, reason: str) -> TranscriptError:
    return TranscriptError(f"{where}: {reason}")


def _text(value: Any, where: str) -> str:
    """A content field as text: a string, or a list of text parts/blocks."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if not isinstance(value, list):
        raise _fail(where, f"expected a string or a list of text parts, found {type(value).__name__}")
    parts = []
    for i, part in enumerate(value):
        if isinstance(part, str):
            parts.append(part)
            continue
        if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise _fail(f"{where}[{i}]", f"only text parts can be imported, found {kind!r}")
        parts.append(part["text"])
    return "\n".join(parts)


def _str_field(obj: dict[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise _fail(f"{where}.{key}", "a non-empty string is required")
    return value


_ANTHROPIC_BLOCKS = ("tool_use", "tool_result", "thinking", "redacted_thinking")


def _opaque(block: dict[str, Any], key: str, where: str, required: bool = True) -> str | None:
    """A reasoning block's text or opaque field: a string kept exactly, never changed."""
    value = block.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise _fail(f"{where}.{key}", "expected a string")
    return value


def _anthropic_reasoning(block: dict[str, Any], where: str) -> ReasoningPart:
    if block.get("type") == "redacted_thinking":
        return ReasoningPart(provider="anthropic", redacted=_opaque(block, "data", where))
    return ReasoningPart(
        provider="anthropic",
        text=_opaque(block, "thinking", where) or "",
        signature=_opaque(block, "signature", where, required=False),
    )


def _is_anthropic(messages: list[Any], body: dict[str, Any]) -> bool:
    tools = body.get("tools")
    if "system" in body or (
        isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools)
    ):
        return True
    for m in messages:
        if isinstance(m, dict) and isinstance(m.get("content"), list):
            if any(isinstance(b, dict) and b.get("type") in _ANTHROPIC_BLOCKS for b in m["content"]):
                return True
    return False


def _openai_messages(items: list[Any]) -> tuple[list[Message], list[str]]:
    out: list[Message] = []
    where_of: list[str] = []
    names: dict[str, str] = {}
    for i, m in enumerate(items):
        at = f"messages[{i}]"
        if not isinstance(m, dict):
            raise _fail(at, f"a message is a JSON object, not {type(m).__name__}")
        role = m.get("role")
        if role in ("system", "developer"):
            out.append(SystemMessage(content=_text(m.get("content"), f"{at}.content")))
        elif role == "user":
            out.append(UserMessage(content=_text(m.get("content"), f"{at}.content")))
        elif role == "assistant":
            calls = []
            raw_calls = m.get("tool_calls") or []
            if not isinstance(raw_calls, list):
                raise _fail(f"{at}.tool_calls", "expected a list")
            for k, c in enumerate(raw_calls):
                cat = f"{at}.tool_calls[{k}]"
                fn = c.get("function") if isinstance(c, dict) else None
                if not isinstance(fn, dict):
                    raise _fail(f"{cat}.function", "an object with name and arguments is required")
                args = fn.get("arguments")
                if isinstance(args, dict):  # some servers send an object where the spec says a string
                    args = json.dumps(args)
                if args is not None and not isinstance(args, str):
                    raise _fail(f"{cat}.function.arguments", "expected a JSON string")
                call = parse_arguments(_str_field(c, "id", cat), _str_field(fn, "name", f"{cat}.function"), args)
                names[call.id] = call.name
                calls.append(call)
            content = _text(m.get("content"), f"{at}.content") or None
            thinking = _opaque(m, "thinking", at, required=False)  # Ollama's reasoning text
            reasoning = (ReasoningPart(provider="ollama", text=thinking),) if thinking else ()
            out.append(AssistantMessage(content=content, tool_calls=tuple(calls), reasoning=reasoning))
        elif role == "tool":
            call_id = _str_field(m, "tool_call_id", at)
            name = names.get(call_id) or m.get("name")
            if not isinstance(name, str) or not name:
                raise _fail(f"{at}.tool_call_id", f"no earlier assistant message has a tool call {call_id!r}")
            out.append(ToolMessage(tool_call_id=call_id, name=name, content=_text(m.get("content"), f"{at}.content")))
        else:
            raise _fail(f"{at}.role", f"expected system, developer, user, assistant or tool, found {role!r}")
        where_of.append(at)
    return out, where_of


def _anthropic_messages(items: list[Any], system: Any) -> tuple[list[Message], list[str]]:
    out: list[Message] = []
    where_of: list[str] = []
    if system:
        out.append(SystemMessage(content=_text(system, "system")))
        where_of.append("system")
    names: dict[str, str] = {}
    for i, m in enumerate(items):
        at = f"messages[{i}]"
        if not isinstance(m, dict):
            raise _fail(at, f"a message is a JSON object, not {type(m).__name__}")
        role, content = m.get("role"), m.get("content")
        if role not in ("user", "assistant"):
            raise _fail(f"{at}.role", f"expected user or assistant, found {role!r}")
        if isinstance(content, str):
            out.append(UserMessage(content=content) if role == "user" else AssistantMessage(content=content or None))
            where_of.append(at)
            continue
        if not isinstance(content, list):
            raise _fail(f"{at}.content", "expected a string or a list of content blocks")
        texts: list[str] = []
        calls: list[ToolCall] = []
        reasoning: list[ReasoningPart] = []
        for k, b in enumerate(content):
            bat = f"{at}.content[{k}]"
            kind = b.get("type") if isinstance(b, dict) else None
            if kind == "text" and isinstance(b.get("text"), str):
                texts.append(b["text"])
            elif kind in ("thinking", "redacted_thinking") and role == "assistant":
                reasoning.append(_anthropic_reasoning(b, bat))
            elif kind == "tool_use" and role == "assistant":
                args = b.get("input", {})
                if not isinstance(args, dict):
                    raise _fail(f"{bat}.input", "expected a JSON object")
                call = ToolCall(id=_str_field(b, "id", bat), name=_str_field(b, "name", bat), arguments=args)
                names[call.id] = call.name
                calls.append(call)
            elif kind == "tool_result" and role == "user":
                call_id = _str_field(b, "tool_use_id", bat)
                if call_id not in names:
                    raise _fail(f"{bat}.tool_use_id", f"no earlier tool_use block has the id {call_id!r}")
                is_error = b.get("is_error", False)
                if not isinstance(is_error, bool):
                    raise _fail(f"{bat}.is_error", "expected true or false")
                text = _text(b.get("content"), f"{bat}.content")
                out.append(ToolMessage(tool_call_id=call_id, name=names[call_id], content=text, is_error=is_error))
                where_of.append(bat)
            else:
                raise _fail(f"{bat}.type", f"a {role} message cannot hold a {kind!r} block here")
        if role == "assistant":
            out.append(
                AssistantMessage(content="\n".join(texts) or None, tool_calls=tuple(calls), reasoning=tuple(reasoning))
            )
            where_of.append(at)
        elif texts:
            out.append(UserMessage(content="\n".join(texts)))
            where_of.append(at)
    return out, where_of


def tool_specs_from(tools: Any) -> list[ToolSpec]:
    """Tool specs from a list of OpenAI function tools or Anthropic tools (input_schema); a TranscriptError names
    the tool and the field that is wrong."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise _fail("tools", "expected a list")
    specs = []
    for i, t in enumerate(tools):
        fn = t.get("function", t) if isinstance(t, dict) else None
        if not isinstance(fn, dict):
            raise _fail(f"tools[{i}]", "a tool is a JSON object")
        schema = fn.get("parameters", fn.get("input_schema", {"type": "object", "properties": {}}))
        if not isinstance(schema, dict):
            raise _fail(f"tools[{i}].parameters", "expected a JSON Schema object")
        desc = fn.get("description") or ""
        if not isinstance(desc, str):
            raise _fail(f"tools[{i}].description", "expected a string")
        specs.append(ToolSpec(name=_str_field(fn, "name", f"tools[{i}]"), description=desc, parameters=schema))
    return specs


def from_messages(data: Any, title: str | None = None) -> Run:
    """A run from a plain message list or request body, OpenAI or Anthropic style (detected)."""
    body: dict[str, Any] = data if isinstance(data, dict) else {"messages": data}
    items = body.get("messages")
    if not isinstance(items, list) or not items:
        raise _fail("messages", "a non-empty list of messages is required")
    anthropic = _is_anthropic(items, body)
    messages, where_of = _anthropic_messages(items, body.get("system")) if anthropic else _openai_messages(items)
    violations = validate_messages(messages)
    if violations:
        v = violations[0]
        raise _fail(where_of[v.index] if v.index < len(where_of) else "messages", v.reason.split(": ", 1)[-1])
    model = body.get("model")
    config = RunConfig(
        provider="anthropic" if anthropic else "openai",
        model=model if isinstance(model, str) else "",
        system_prompt=messages[0].content if isinstance(messages[0], SystemMessage) else None,
        tools=tool_specs_from(body.get("tools")),
    )
    first = next((m.content for m in messages if isinstance(m, UserMessage)), "imported run")
    return Run(config=config, messages=messages, title=title or f"imported: {first[:70]}")


def _json_lines(raw: bytes | str) -> bool:
    head = raw[:64].lstrip()
    start = b'{"resourceSpans"' if isinstance(head, bytes) else '{"resourceSpans"'
    newline = b"\n" if isinstance(raw, bytes) else "\n"
    return head.startswith(start) and newline in raw.rstrip()


_READS = (
    "it reads an agentcore transcript, a list of messages, a request body with messages, an OTLP trace, an ATIF "
    "trajectory, a Claude Code session or a Codex rollout"
)


def _check_roles(data: Any) -> None:
    """A message list none of whose messages has a role is another tool's format, not a broken message list: it is
    said so (a Gemini CLI session's messages are `type: user` and `type: gemini`, a saved chat's `role: model` with
    `parts`), not refused by a message's role."""
    messages = data if isinstance(data, list) else data.get("messages")
    head = messages[:50] if isinstance(messages, list) else []
    if head and all(isinstance(m, dict) and "role" not in m for m in head):
        gemini = any(m.get("type") == "gemini" for m in head)
        said = " (a Gemini CLI session, by its messages of type gemini)" if gemini else ""
        raise TranscriptError(f"(top level): not a format agentcore reads{said}: {_READS}")
    # Gemini's own contents (Gemini CLI's saved chats, `checkpoint-*.json`): roles `user` and `model`, text in `parts`
    if any(isinstance(m, dict) and m.get("role") == "model" and "parts" in m for m in head):
        said = " (a Gemini conversation, by its messages of role model with parts: Gemini CLI's saved chats write it)"
        raise TranscriptError(f"(top level): not a format agentcore reads{said}: {_READS}")


def parse_import(raw: bytes | str, name: str = "upload") -> Run:
    """A run from an uploaded file's bytes: a transcript, a message list, a request body, or an OTLP-JSON trace.

    The limits of every reader hold (transcript.read_json); every refusal is a TranscriptError.
    """
    try:
        if _json_lines(raw):  # the OpenTelemetry file exporters write one OTLP body a line
            return from_otlp(raw)
        data = read_json(raw)
        if isinstance(data, dict) and "format" in data:
            return from_dict(data)  # it refuses another format by name
        if is_otlp(data):
            return run_from_spans(spans_of_data(data))
        if isinstance(data, list) or (isinstance(data, dict) and "messages" in data):
            _check_roles(data)
            return from_messages(data)
        raise TranscriptError(f"(top level): not a format agentcore reads: {_READS}")
    except TranscriptError as exc:
        raise TranscriptError(f"{name}: {exc}") from None
    except ValidationError as exc:
        raise TranscriptError(f"{name}: {describe_validation(exc)}") from None

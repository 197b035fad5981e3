"""The OpenTelemetry GenAI semantic conventions agentcore writes and reads: names, and messages as parts.

The conventions are in Development status; agentcore emits the names of semantic-conventions v1.41
(SCHEMA_URL) and reads the same names from any emitter. A message is `{"role", "parts"}` with parts
of the conventions' schema: `text`, `tool_call`, `tool_call_response` and `reasoning`. What has no
standard name is under `agentcore.*`.
"""

from __future__ import annotations

import json
from typing import Any, assert_never

from pydantic import ValidationError

from ..messages import (
    AssistantMessage,
    Message,
    OutputItem,
    ReasoningPart,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    parse_arguments,
)

# the GenAI conventions now have a repository and a schema of their own (open-telemetry/semantic-conventions-genai,
# in development); the names written here are that schema's, on the core schema's resource and server attributes
SCHEMA_URL = "https://opentelemetry.io/schemas/gen-ai-dev/1.42.0-dev"
CORE_SCHEMA_URL = "https://opentelemetry.io/schemas/1.44.0"
SCOPE = "agentcore"

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
LEGACY_PROVIDER = "gen_ai.system"  # the name before v1.37; older emitters still write it
CONVERSATION = "gen_ai.conversation.id"
AGENT_NAME = "gen_ai.agent.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_SEED = "gen_ai.request.seed"
REQUEST_STREAM = "gen_ai.request.stream"
REQUEST_REASONING_LEVEL = "gen_ai.request.reasoning.level"
CONVERSATION_COMPACTED = "gen_ai.conversation.compacted"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE = "gen_ai.usage.cache_write.input_tokens"
# the name before the GenAI schema's rename, written beside the new one while backends read it: Phoenix's
# OpenInference mapping (openinference.instrumentation._genai_attributes) reads only this one
CACHE_CREATION = "gen_ai.usage.cache_creation.input_tokens"
REASONING_TOKENS = "gen_ai.usage.reasoning.output_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"

# agentcore's own: what the conventions have no name for
RUN_PROVIDER = "agentcore.provider"  # agentcore's provider name (gen_ai.provider.name is the vendor's)
RUN_TITLE = "agentcore.run.title"
RUN_STOP = "agentcore.run.stop_reason"
RUN_ERROR = "agentcore.run.error"
RUN_CONFIG = "agentcore.run.config"  # the run's config as JSON (content: it holds the system prompt)
RUN_FINAL_OUTPUT = "agentcore.run.final_output"
PARENT_RUN = "agentcore.fork.parent_run_id"
PARENT_STEP = "agentcore.fork.parent_step"
STEP_INDEX = "agentcore.step.index"
STEP_ESTIMATED = "agentcore.step.usage_estimated"
STEP_POLICIES = "agentcore.context.policies"  # the context policies that rewrote this call's request
STEP_HISTORY = "agentcore.history.messages"  # the whole history, where a policy sent something else
TOOLS_WITHHELD = "agentcore.step.tools_withheld"
COST = "agentcore.cost.usd"
DECISION = "agentcore.tool.decision"  # a person's decision on the call, or the loop guard's repeat
ORIGINAL_ARGUMENTS = "agentcore.tool.original_arguments"
ORIGINAL_RESULT = "agentcore.tool.original_result"
TOOL_HOOK = "agentcore.tool.hook"  # the hook that rewrote, refused or answered the call (agentcore.hooks)
STEP_HOOK_EFFECTS = "agentcore.step.hook_effects"  # content: what each hook changed at the step, as JSON
RUN_HALT = "agentcore.run.halt"  # content: the pause or stop the run stands at (a hook's or a breakpoint's), as JSON
RUN_HALTS = "agentcore.run.halts"  # content: every pause or stop on the way, as JSON
IS_ERROR = "agentcore.is_error"  # on a tool_call_response part: the result is an error the model reads
REASONING = "agentcore.reasoning"  # on a reasoning part: the ReasoningPart whole
ITEM_ID = "agentcore.item_id"  # on a tool_call part: the Responses API's function_call item id
ITEMS = "agentcore.items"  # on an assistant message: the provider's output items, in its order
# a person's annotation (agentcore.annotations): an event on its step's chat span or its call's tool span
ANNOTATION = "agentcore.annotation"
ANNOTATION_ID = "agentcore.annotation.id"
ANNOTATION_LABELS = "agentcore.annotation.labels"  # the taxonomy's labels
ANNOTATION_TAGS = "agentcore.annotation.tags"  # free labels
ANNOTATION_SCORE = "agentcore.annotation.score"
ANNOTATION_AUTHOR = "agentcore.annotation.author"
ANNOTATION_NOTE = "agentcore.annotation.note"  # content: a person's words
ANNOTATION_CORRECT_CALL = "agentcore.annotation.correct_call"  # content: {"name": ..., "arguments": {...}} as JSON

# agentcore's provider names as the conventions' well-known gen_ai.provider.name values
VENDOR = {"openai": "openai", "openai-responses": "openai", "anthropic": "anthropic", "ollama": "ollama"}
IN_PROCESS = frozenset({"local", "scripted"})  # models that answer in-process: their chat spans are INTERNAL


def vendor(provider: str) -> str:
    """gen_ai.provider.name for an agentcore provider: the vendor's well-known name, else `agentcore.<name>`."""
    return VENDOR.get(provider, f"agentcore.{provider}")


def dumps(value: Any) -> str:
    """A structured attribute's value as the JSON string the conventions ask for."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "content": text}


def call_part(call: ToolCall) -> dict[str, Any]:
    """A tool call as a `tool_call` part: arguments as an object, or as the model's own text where it kept that
    (not an object, or written otherwise than json.dumps writes it), so the call reads back byte for byte."""
    arguments: Any = call.arguments
    if call.raw_arguments is not None or call.written_arguments is not None:
        arguments = call.arguments_text
    part = {"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments}
    if call.item_id is not None:
        part[ITEM_ID] = call.item_id
    return part


def _reasoning_part(part: ReasoningPart) -> dict[str, Any]:
    # the readable text in the conventions' field; the part whole (signature, encrypted content) beside it,
    # so reasoning goes back to the provider that made it after a round trip
    return {
        "type": "reasoning",
        "content": part.display_text,
        REASONING: part.model_dump(mode="json", exclude_none=True),
    }


def message_parts(message: Message) -> dict[str, Any]:
    """One message as the conventions write it: `{"role", "parts"}` (tool results carry `name` too)."""
    if isinstance(message, SystemMessage | UserMessage):
        return {"role": message.role, "parts": [_text_part(message.content)]}
    if isinstance(message, AssistantMessage):
        parts = [_reasoning_part(p) for p in message.reasoning]
        if message.content:
            parts.append(_text_part(message.content))
        parts.extend(call_part(c) for c in message.tool_calls)
        out: dict[str, Any] = {"role": "assistant", "parts": parts}
        if message.items:
            out[ITEMS] = [i.model_dump(mode="json", exclude_none=True) for i in message.items]
        return out
    if isinstance(message, ToolMessage):
        part: dict[str, Any] = {"type": "tool_call_response", "id": message.tool_call_id, "response": message.content}
        if message.is_error:
            part[IS_ERROR] = True
        return {"role": "tool", "name": message.name, "parts": [part]}
    assert_never(message)


class PartsError(ValueError):
    """A message list in parts that cannot be read; the text says where and why."""


def _content_text(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return dumps(value)  # a structured response or content is kept as its JSON text


def parts_messages(data: Any, where: str, provider: str, names: dict[str, str]) -> list[Message]:
    """Messages from a list in the conventions' parts schema; `names` maps call ids to tool names (filled as read).

    Parts of another type (a blob, a uri, a file) are refused by name: agentcore's messages are text.
    """
    if not isinstance(data, list):
        raise PartsError(f"{where}: expected a list of messages, found {type(data).__name__}")
    out: list[Message] = []
    for i, item in enumerate(data):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise PartsError(f"{at}: a message is a JSON object, not {type(item).__name__}")
        role, parts = item.get("role"), item.get("parts")
        if not isinstance(parts, list):
            raise PartsError(f"{at}.parts: expected a list of parts")
        read = _message(role, parts, at, provider, names, item.get("name"))
        items = item.get(ITEMS)
        if isinstance(items, list) and len(read) == 1 and isinstance(read[0], AssistantMessage):
            read = [read[0].model_copy(update={"items": tuple(_valid(OutputItem, i, f"{at}.{ITEMS}") for i in items)})]
        out.extend(read)
    return out


def _valid(model: Any, data: Any, where: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise PartsError(f"{where}{'.' + field if field else ''}: {first['msg']}") from None


def _message(
    role: Any, parts: list[Any], at: str, provider: str, names: dict[str, str], tool_name: Any
) -> list[Message]:
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[ReasoningPart] = []
    results: list[Message] = []
    for k, part in enumerate(parts):
        pat = f"{at}.parts[{k}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            texts.append(_content_text(part.get("content"), pat))
        elif kind == "reasoning" and role == "assistant":
            whole = part.get(REASONING)
            if isinstance(whole, dict):
                reasoning.append(_valid(ReasoningPart, whole, f"{pat}.{REASONING}"))
            else:
                reasoning.append(ReasoningPart(provider=provider, text=_content_text(part.get("content"), pat)))
        elif kind == "tool_call" and role == "assistant":
            calls.append(_call(part, pat, names))
        elif kind == "tool_call_response" and role in ("tool", "user"):
            call_id = part.get("id")
            if not isinstance(call_id, str) or call_id not in names:
                raise PartsError(f"{pat}.id: no earlier tool call has the id {call_id!r}")
            is_error = part.get(IS_ERROR, False) is True
            content = _content_text(part.get("response", part.get("result")), pat)
            name = names[call_id] if not isinstance(tool_name, str) or not tool_name else tool_name
            results.append(ToolMessage(tool_call_id=call_id, name=name, content=content, is_error=is_error))
        else:
            raise PartsError(f"{pat}.type: a {role!r} message cannot hold a {kind!r} part")
    text = "\n".join(texts)
    if role == "system":
        return [SystemMessage(content=text)]
    if role == "user":
        return [*results, *([UserMessage(content=text)] if texts else [])]
    if role == "assistant":
        return [AssistantMessage(content=text or None, tool_calls=tuple(calls), reasoning=tuple(reasoning))]
    if role == "tool":
        return results
    raise PartsError(f"{at}.role: expected system, user, assistant or tool, found {role!r}")


def _call(part: dict[str, Any], at: str, names: dict[str, str]) -> ToolCall:
    call_id, name = part.get("id"), part.get("name")
    if not isinstance(name, str) or not name:
        raise PartsError(f"{at}.name: a non-empty string is required")
    if not isinstance(call_id, str) or not call_id:
        raise PartsError(f"{at}.id: a non-empty string is required")
    arguments = part.get("arguments")
    if isinstance(arguments, dict):
        call = ToolCall(id=call_id, name=name, arguments=arguments)
    elif isinstance(arguments, str) or arguments is None:
        call = parse_arguments(call_id, name, arguments)
    else:
        call = ToolCall(id=call_id, name=name, raw_arguments=dumps(arguments))
    item_id = part.get(ITEM_ID)
    if isinstance(item_id, str):
        call = call.model_copy(update={"item_id": item_id})
    names[call_id] = name
    return call


def system_parts(text: str) -> list[dict[str, Any]]:
    """The system prompt as gen_ai.system_instructions: a list of parts."""
    return [_text_part(text)]


def system_text(data: Any, where: str) -> str:
    """The system prompt from gen_ai.system_instructions: its text parts joined."""
    if isinstance(data, str):
        return data
    if not isinstance(data, list):
        raise PartsError(f"{where}: expected a list of parts")
    texts = []
    for k, part in enumerate(data):
        if not isinstance(part, dict) or part.get("type") != "text":
            raise PartsError(f"{where}[{k}]: only text parts can be a system prompt")
        texts.append(_content_text(part.get("content"), where))
    return "\n".join(texts)


def response_identity(response: Any) -> tuple[str | None, str | None]:
    """The id and model a provider's response names: a whole body's own, or a stream's (Chat Completions' chunks,
    Anthropic's message_start, the Responses API's response.* events, Ollama's lines); None for what it lacks."""
    found: dict[str, str] = {}

    def take(item: Any) -> None:
        if isinstance(item, dict):
            for key in ("id", "model"):
                value = item.get(key)
                if key not in found and isinstance(value, str) and value:
                    found[key] = value[:256]

    if isinstance(response, dict):
        take(response)
    elif isinstance(response, list):
        for event in response[:4096]:  # the identity comes early: a stream's first events carry it
            if not isinstance(event, dict):
                continue
            if event.get("type") == "message_start":  # Anthropic's
                take(event.get("message"))
            elif isinstance(event.get("response"), dict):  # the Responses API's response.created / .completed
                take(event["response"])
            else:  # a Chat Completions chunk, an Ollama line (a model, no id)
                take(event)
            if len(found) == 2:
                break
    return found.get("id"), found.get("model")

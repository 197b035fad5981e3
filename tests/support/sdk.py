"""The vendors' own SDK types as the judges of the request bodies agentcore sends."""

from __future__ import annotations

import importlib.util
import re
from functools import cache
from typing import Any

import pytest

SDK = {"openai": "openai", "openai-responses": "openai", "anthropic": "anthropic", "ollama": "ollama"}


# free-form JSON inside a body (schemas, arguments): the SDK types hold them as plain dicts
FREE_FORM = frozenset({"parameters", "input_schema", "input", "arguments", "schema", "properties"})


# Fields the Ollama server's own types have (api/types.go: ToolCall.ID, ToolCallFunction.Index,
# Message.ToolCallID) but the ollama package's models do not yet: sent on purpose, accepted by the server.
OLLAMA_SERVER_ONLY = re.compile(r"\.messages\[\d+\]\.(tool_call_id|tool_calls\[\d+\]\.(id|function\.index))")


def needs_sdk(fmt: str) -> None:
    if importlib.util.find_spec(SDK[fmt]) is None:
        pytest.skip(f"the {SDK[fmt]} package is not installed (pip install '.[test]')")


def dropped(sent: Any, kept: Any, path: str = "") -> list[str]:
    """The paths of keys in `sent` that validation did not keep: keys the SDK's types do not know."""
    if isinstance(sent, dict) and isinstance(kept, dict):
        out = [f"{path}.{k}" for k in sent if k not in kept]
        for k in sent.keys() & kept.keys():
            if k not in FREE_FORM:
                out += dropped(sent[k], kept[k], f"{path}.{k}")
        return out
    if isinstance(sent, list) and isinstance(kept, list):
        return [p for i, (a, b) in enumerate(zip(sent, kept, strict=False)) for p in dropped(a, b, f"{path}[{i}]")]
    return []


def _typed_dict(fmt: str, stream: bool) -> Any:
    kind = "Streaming" if stream else "NonStreaming"
    if fmt == "openai":
        from openai.types.chat import completion_create_params as params

        return getattr(params, f"CompletionCreateParams{kind}")
    if fmt == "openai-responses":
        from openai.types.responses import response_create_params as params

        return getattr(params, f"ResponseCreateParams{kind}")
    from anthropic.types import message_create_params as params

    return getattr(params, f"MessageCreateParams{kind}")


def _ollama_kept(body: dict[str, Any]) -> dict[str, Any]:
    """The body as the ollama package's ChatRequest keeps it, its messages, tools and options each checked."""
    from ollama._types import ChatRequest, Message, Options, Tool

    kept = ChatRequest.model_validate(body).model_dump(exclude_unset=True, by_alias=True)
    kept["messages"] = [Message.model_validate(m).model_dump(exclude_unset=True) for m in body.get("messages", [])]
    if "tools" in body:
        kept["tools"] = [Tool.model_validate(t).model_dump(exclude_unset=True) for t in body["tools"]]
    if "options" in body:
        kept["options"] = Options.model_validate(body["options"]).model_dump(exclude_unset=True)
    return kept


@cache
def _adapter(fmt: str, stream: bool) -> Any:
    """A validator of the SDK's request type that checks every item of every list.

    The SDKs declare lists as Iterable, which pydantic validates lazily, as a generator; iterating
    one nested in a union panics in pydantic-core. Built with Iterable read as list, each item is
    validated at once and the result compares with the body.
    """
    from pydantic import TypeAdapter
    from pydantic._internal._generate_schema import GenerateSchema
    from pydantic_core import core_schema

    def eager(self: Any, type_: Any) -> core_schema.CoreSchema:
        return core_schema.list_schema(self.generate_schema(self._get_first_arg_or_any(type_)))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(GenerateSchema, "_iterable_schema", eager)
        return TypeAdapter(_typed_dict(fmt, stream))


def sdk_problems(fmt: str, body: dict[str, Any]) -> list[str]:
    """What the vendor's SDK types refuse in `body`: validation errors, then keys they do not know."""
    from pydantic import ValidationError

    try:
        if fmt == "ollama":
            kept = _ollama_kept(body)
        else:
            kept = _adapter(fmt, bool(body.get("stream"))).validate_python(body)
    except ValidationError as exc:
        return [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5]]
    unknown = [p for p in dropped(body, kept) if not (fmt == "ollama" and OLLAMA_SERVER_ONLY.fullmatch(p))]
    return [f"{path}: not a field of the {SDK[fmt]} SDK's request type" for path in unknown]

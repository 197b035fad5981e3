"""A run's conversation as one provider's request body, built by the same mapping code the adapters send."""

from __future__ import annotations

from typing import Any

from .errors import UsageError
from .messages import AssistantMessage
from .providers.base import ModelRequest, Settings
from .run import Run

FORMATS = ("openai", "openai-responses", "anthropic", "ollama")


def export_request(run: Run, fmt: str, *, model: str | None = None, stream: bool = False) -> dict[str, Any]:
    """The request body `fmt` would receive for the run's messages and tools (the final-answer tool included).

    The model is the run's own when the run used that provider, else the registry's default for it.
    The run's settings go with it (temperature, max tokens, reasoning); reasoning another provider made
    is left out (see ReasoningPart). For Anthropic a finished run exports the request that got its answer:
    a body ending on the assistant's turn is a prefill, which current models reject.
    """
    from .providers import get_info

    if fmt not in FORMATS:
        raise UsageError(f"unknown wire format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if model is None:
        model = run.config.model if run.config.provider == fmt and run.config.model else get_info(fmt).default_model
    specs = run.tool_specs
    messages = tuple(run.messages)
    if fmt == "anthropic" and messages and isinstance(messages[-1], AssistantMessage) and not messages[-1].tool_calls:
        messages = messages[:-1]
    request = ModelRequest(
        messages=messages,
        tools=tuple(specs),
        settings=Settings(
            temperature=run.config.temperature,
            max_tokens=run.config.max_tokens,
            thinking_budget=run.config.thinking_budget,
            reasoning_effort=run.config.reasoning_effort,
        ),
    )
    if fmt == "openai":
        from .providers import openai

        # as the adapter sends it: OpenAI's own API wants max_completion_tokens (reasoning models refuse
        # max_tokens), a compatible server the run was made on the older max_tokens
        compatible = run.config.provider == "openai" and bool(run.config.base_url)
        field = "max_tokens" if compatible else "max_completion_tokens"
        return openai.build_body(model, request, stream=stream, max_tokens_field=field)
    if fmt == "openai-responses":
        from .providers import openai_responses

        return openai_responses.build_body(model, request, stream=stream)
    if fmt == "anthropic":
        from .providers import anthropic

        return anthropic.build_body(model, request, stream=stream)
    from .providers import ollama

    return ollama.build_body(model, request, stream=stream)

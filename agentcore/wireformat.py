"""A run's conversation as one provider's request body, built by the same mapping code the adapters send."""

from __future__ import annotations

from typing import Any

from .errors import UsageError
from .hooks.chain import code_free_request
from .messages import AssistantMessage
from .providers import WIRE_FORMATS, get_info
from .request import base_request, request_settings, settings_refusal, whole_history
from .run import Run

FORMATS = WIRE_FORMATS  # the provider registry's wire formats


def export_request(run: Run, fmt: str, *, model: str | None = None, stream: bool = False) -> dict[str, Any]:
    """The request body `fmt` would receive for the run's messages and tools (the final-answer tool included).

    The model is the run's own when the run used that provider, else the registry's default for it.
    The run's settings go with it as the loop sends them (temperature, max tokens, seed, reasoning, prompt
    caching's breakpoints); reasoning another provider made is left out (see ReasoningPart), and so is thinking
    the model would refuse after what the run's policies changed (request.whole_history). For Anthropic
    a finished run exports the request that got its answer: a body ending on the assistant's turn is a
    prefill, which current models reject. Settings the model refuses (the catalogue's documented rules) are a
    UsageError that says why, not a body its API would answer with a 400.
    """
    if fmt not in FORMATS:
        raise UsageError(f"unknown wire format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if model is None:
        model = run.config.model if run.config.provider == fmt and run.config.model else get_info(fmt).default_model
    messages = tuple(run.messages)
    if fmt == "anthropic" and messages and isinstance(messages[-1], AssistantMessage) and not messages[-1].tool_calls:
        messages = messages[:-1]
    refused = settings_refusal(run, fmt, model)
    if refused:
        raise UsageError(f"not exported: {refused}")
    unbound = whole_history(run, fmt, model)  # thinking a model refuses after what policies changed stays out
    if unbound is not None:
        messages = tuple(unbound.messages(messages))
    # as the run's chain sends it: the loop guard's and the run's named hooks' changes (a redactor's masks) included
    request = code_free_request(run, base_request(run, messages, request_settings(run.config)))
    options: dict[str, Any] = {}
    if fmt == "openai":
        from .providers.openai import max_tokens_field_for

        # as the adapter sends it: the run's own server when it ran on Chat Completions, else OpenAI's API
        options["max_tokens_field"] = max_tokens_field_for(run.config.base_url if run.config.provider == fmt else None)
    return get_info(fmt).body_builder()(model, request, stream=stream, **options)

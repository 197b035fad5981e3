"""A hand-made run whose requests' token estimates are worked out in its docstring, and the prices genai-prices
gives a model: what the accounting tests count and price against."""

from __future__ import annotations

from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from agentcore.messages import AssistantMessage, ToolCall, ToolMessage, Usage, UserMessage
from agentcore.providers.prices import PriceRef
from agentcore.run import Run, RunConfig
from agentcore.steps import StepRecord

MINI = PriceRef("openai", "gpt-4o-mini")


def prices(ref: PriceRef) -> tuple[float, float, float]:
    """Input, cache-read and output USD per token of a model, read from genai-prices."""
    p = calc_price(PriceUsage(input_tokens=1, output_tokens=0), ref.model, provider_id=ref.provider).model_price
    return float(p.input_mtok) / 1e6, float(p.cache_read_mtok) / 1e6, float(p.output_mtok) / 1e6


def _call(i: int) -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall(id=f"c{i}", name="read", arguments={}),))  # "read{}": 2 + 4 = 6


def hand_run(inputs: list[int] | None = None, *, provider: str = "openai", model: str = "gpt-4o-mini") -> Run:
    """Four steps whose requests estimate to 13, 122, 231 and 340 tokens.

    user 36 chars = 9 + 4 overhead = 13; each tool call `read{}` = 2 + 4 = 6; each tool result
    396 chars = 99 + 4 = 103; the final answer 16 chars = 4 + 4 = 8. No tools are offered.
    """
    messages = [UserMessage(content="u" * 36)]
    for i, letter in enumerate("rst", start=1):
        messages += [_call(i), ToolMessage(tool_call_id=f"c{i}", name="read", content=letter * 396)]
    messages.append(AssistantMessage(content="d" * 16))
    inputs = inputs or [13, 122, 231, 340]
    steps = [
        StepRecord(index=i + 1, usage=Usage(input_tokens=n, output_tokens=10), message_count=1 + 2 * i)
        for i, n in enumerate(inputs)
    ]
    return Run(config=RunConfig(provider=provider, model=model), messages=messages, steps=steps)

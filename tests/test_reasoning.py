"""Reasoning in the accounts and on the pages: counted and priced as output, shown beside its tool calls."""

from __future__ import annotations

from agentcore.accounting import Pricer, PriceRef, account
from agentcore.messages import AssistantMessage, ReasoningPart, ToolCall, ToolMessage, Usage, UserMessage
from agentcore.run import Run, RunConfig, StepRecord

THOUGHT = ReasoningPart(provider="anthropic", text="t" * 400, signature="sig")  # about 100 tokens


def thinking_run(usage: Usage) -> Run:
    call = ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})
    messages = [
        UserMessage(content="Weather in Paris?"),
        AssistantMessage(content=None, tool_calls=(call,), reasoning=(THOUGHT,)),
        ToolMessage(tool_call_id="c1", name="get_weather", content="sunny"),
    ]
    step = StepRecord(index=1, usage=usage, message_count=1)
    return Run(config=RunConfig(provider="anthropic", model="claude-haiku-4-5"), messages=messages, steps=[step])


def test_reported_reasoning_tokens_are_part_of_the_priced_output():
    report = account(thinking_run(Usage(input_tokens=50, output_tokens=120, reasoning_tokens=90)))
    step = report.steps[0]
    assert (step.output_tokens, step.reasoning_tokens) == (120, 90)
    assert report.total_reasoning_tokens == 90 and report.to_dict()["total_reasoning_tokens"] == 90
    assert "reasoning_tokens" in step.row()
    pricer = Pricer.find(PriceRef("anthropic", "claude-haiku-4-5"))
    assert step.cost_usd == pricer.price(50, 120)


def test_reasoning_counted_apart_from_the_output_is_still_priced_as_output():
    step = account(thinking_run(Usage(input_tokens=50, output_tokens=10, reasoning_tokens=90))).steps[0]
    assert step.output_tokens == 90


def test_an_estimated_step_counts_the_reasoning_text_as_output():
    step = account(thinking_run(Usage())).steps[0]
    assert step.estimated
    assert step.reasoning_tokens == 100
    assert step.output_tokens > 100  # the tool call and the reasoning

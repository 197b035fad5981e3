"""Accounting's rules at their edges: how a request is split by kind and scaled to the reported input, what a hook's
record changes in what a step sent, when an unrecorded output is estimated, what the cache saved, when a fit exists
and how good it is, and what a report says of itself; each rule on both sides of its limit."""

from __future__ import annotations

import dataclasses

import pytest
from support.accounting import MINI, hand_run, prices

from agentcore.accounting import (
    PARTS,
    CacheSaving,
    account,
    cache_saving,
    fit_polynomial,
    run_cost,
    sent_at,
    step_usage,
)
from agentcore.hooks.protocol import HookEffect
from agentcore.messages import (
    AssistantMessage,
    ReasoningPart,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from agentcore.run import Run, RunConfig
from agentcore.steps import StepRecord
from agentcore.tools import ToolSpec


def with_usage(run: Run, n: int, **usage: int) -> Run:
    """The run with step `n` (1-based) reporting this usage."""
    run.steps[n - 1] = run.steps[n - 1].model_copy(update={"usage": Usage(**usage)})
    return run


def answered(run: Run, *models: tuple[str, str]) -> Run:
    """The run with its steps answered by these providers and models, in order."""
    for step, (provider, model) in zip(run.steps, models, strict=True):
        step.provider, step.model = provider, model
    return run


# -- a request split by kind ----------------------------------------------------------


def test_composition_counts_the_system_prompt_and_an_assistants_text_apart_from_its_calls():
    call = ToolCall(id="c1", name="read", arguments={})
    messages = [
        SystemMessage(content="s" * 20),  # 5 + 4 = 9
        UserMessage(content="u" * 36),  # 9 + 4 = 13
        AssistantMessage(content="x" * 20, tool_calls=(call,)),  # "xxxx…read{}" 26 chars: 7 + 4 = 11, 5 of them text
        ToolMessage(tool_call_id="c1", name="read", content="r" * 396),  # 103
        AssistantMessage(content="d" * 16),
    ]
    steps = [
        StepRecord(index=1, usage=Usage(input_tokens=22, output_tokens=11), message_count=2),
        StepRecord(index=2, usage=Usage(input_tokens=136, output_tokens=4), message_count=4),
    ]
    run = Run(config=RunConfig(provider="openai", model="gpt-4o-mini"), messages=messages, steps=steps)
    first, second = account(run).steps
    assert first.composition == {**dict.fromkeys(PARTS, 0), "system": 9, "user": 13}
    # the reply's text is assistant text, only what its call added is a tool call: 5 + 6 = the message's 11
    assert second.composition == {
        **dict.fromkeys(PARTS, 0),
        "system": 9,
        "user": 13,
        "assistant_text": 5,
        "tool_calls": 6,
        "tool_results": 103,
    }


def test_a_scaled_composition_gives_the_leftover_tokens_to_the_largest_remainders():
    step3 = account(hand_run([13, 122, 100, 340])).steps[2]
    # 13, 12 and 206 of an estimated 231 scaled to 100: 5.63, 5.19 and 89.18, rounded down to 99 tokens in all;
    # the one left over goes to the user part, whose .63 is the largest remainder, not to the largest part
    assert step3.composition == {**dict.fromkeys(PARTS, 0), "user": 6, "tool_calls": 5, "tool_results": 89}
    exact = {"user": 13 * 100 / 231, "tool_calls": 12 * 100 / 231, "tool_results": 206 * 100 / 231}
    for part, share in exact.items():
        assert int(share) <= step3.composition[part] <= int(share) + 1


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        ([], dict.fromkeys(PARTS, 0)),
        ([ToolSpec(name="x", parameters={})], {**dict.fromkeys(PARTS, 0), "tool_specs": 50}),
    ],
    ids=["nothing-estimated", "one-token-estimated"],
)
def test_a_request_that_estimates_to_nothing_keeps_its_reported_input_with_nothing_to_split_it_by(tools, expected):
    # a step recorded before any message: without tools its request estimates to 0 tokens, with the one tool "x{}" to 1
    config = RunConfig(provider="openai", model="gpt-4o-mini", tools=tools)
    run = Run(config=config, messages=[], steps=[StepRecord(index=1, usage=Usage(input_tokens=50, output_tokens=10))])
    report = account(run)
    step = report.steps[0]
    assert (step.input_tokens, step.estimated) == (50, False)
    # an estimate of one token is scaled up to the 50 reported; an estimate of none has no part to scale up
    assert step.composition == expected
    assert report.scales == [50.0 if tools else 1.0]


# -- what a hook's record changes in what a step sent -------------------------------------


def _message(text: str) -> dict:
    return UserMessage(content=text).model_dump(mode="json")


def test_only_a_before_model_hooks_messages_change_what_the_step_sent():
    run = hand_run()
    history = sent_at(run, 3, hooks=False)
    run.steps[2].hook_effects = [
        HookEffect(
            hook="h",
            point="before_model",
            change="request: message 0 changed",
            kind="messages",
            after={"0": _message("short")},
        ),
        # records whose point or kind says they did not change the request's messages, whatever their payload
        HookEffect(hook="h", point="after_model", change="reply changed", kind="message_list", after=[_message("x")]),
        HookEffect(
            hook="h", point="before_model", change="request: tools changed", kind="tools", after={"1": _message("y")}
        ),
    ]
    assert sent_at(run, 3) == [UserMessage(content="short"), *history[1:]]
    assert sent_at(run, 3, hooks=False) == history


def test_a_messages_effect_whose_payload_is_a_whole_list_changes_nothing():
    run = hand_run()
    history = sent_at(run, 3)
    run.steps[2].hook_effects = [
        HookEffect(
            hook="h",
            point="before_model",
            change="request: message 0 changed",
            kind="messages",
            after=[_message("short")],
        ),
    ]
    assert sent_at(run, 3) == history


@pytest.mark.parametrize("past_the_end", [False, True], ids=["last-place", "one-past-the-end"])
def test_a_messages_effect_changes_a_place_in_the_request_and_none_past_its_end(past_the_end):
    run = hand_run()
    history = sent_at(run, 3)  # 5 messages: places 0 to 4
    place = len(history) if past_the_end else len(history) - 1
    run.steps[2].hook_effects = [
        HookEffect(
            hook="h",
            point="before_model",
            change=f"request: message {place} changed",
            kind="messages",
            after={str(place): _message("replaced")},
        ),
    ]
    expected = history if past_the_end else [*history[:-1], UserMessage(content="replaced")]
    assert sent_at(run, 3) == expected
    with_usage(run, 3)  # a step that kept no usage is counted by what it sent: the last result became 6 tokens
    assert step_usage(run, 3)[0].input_tokens == (231 if past_the_end else 231 - 103 + 6)


# -- an output that was not recorded ----------------------------------------------------


@pytest.mark.parametrize("reply_kept", [True, False], ids=["reply-in-the-run", "no-reply-in-the-run"])
def test_an_unrecorded_output_is_estimated_from_the_reply_only_where_the_run_holds_it(reply_kept):
    run = with_usage(hand_run(), 4, input_tokens=340)  # the last step reported its input and no output
    if not reply_kept:
        run.messages = run.messages[:-1]  # the run ends at the last step's call: its reply never came
    assert run.steps[3].message_count == len(run.messages) - (1 if reply_kept else 0)
    usage, estimated = step_usage(run, 4)
    assert (usage.output_tokens, estimated) == ((4, True) if reply_kept else (0, False))  # "d" * 16: 4 tokens
    step = account(run).steps[3]
    assert (step.output_tokens, step.estimated) == (usage.output_tokens, estimated)


def test_an_unrecorded_outputs_estimate_counts_the_replys_reasoning_as_output():
    run = with_usage(hand_run(), 4, input_tokens=340)
    thought = ReasoningPart(provider="anthropic", text="t" * 40)  # 10 tokens of reasoning, then 4 of text
    run.messages[-1] = AssistantMessage(content="d" * 16, reasoning=(thought,))
    usage, estimated = step_usage(run, 4)
    assert (usage.output_tokens, usage.reasoning_tokens, estimated) == (14, 10, True)
    step = account(run).steps[3]
    assert (step.output_tokens, step.reasoning_tokens) == (14, 10)


def test_the_reports_reasoning_total_adds_up_every_steps_reasoning():
    run = with_usage(hand_run(), 2, input_tokens=122, output_tokens=10, reasoning_tokens=5)
    run = with_usage(run, 3, input_tokens=231, output_tokens=10, reasoning_tokens=50)  # raises that step's output
    report = account(run)
    assert [s.reasoning_tokens for s in report.steps] == [0, 5, 50, 0]
    assert report.total_reasoning_tokens == 55 == report.to_dict()["total_reasoning_tokens"]
    assert account(hand_run()).total_reasoning_tokens == 0


# -- what the cache saved ------------------------------------------------------------------


def test_what_the_cache_saved_is_its_share_of_the_cost_without_it():
    run = with_usage(hand_run(), 4, input_tokens=340, output_tokens=10, cache_read_tokens=231)
    saving = cache_saving(run)
    p_in, p_read, p_out = prices(MINI)
    uncached = 706 * p_in + 40 * p_out
    assert saving.uncached_usd == pytest.approx(uncached)
    assert saving.saved_usd == pytest.approx(231 * (p_in - p_read))
    assert saving.saved_share == pytest.approx(231 * (p_in - p_read) / uncached)  # the page's percentage
    assert 0 < saving.saved_share < 1
    assert CacheSaving(0.0, 0.0).saved_share == 0.0  # nothing it would have cost: no share to say


def test_nothing_is_said_saved_by_a_cache_no_priced_step_read_or_wrote():
    assert account(hand_run()).priced and cache_saving(hand_run()) is None  # priced, no cached tokens
    # the free model's step read from its own prompt cache: a free step saves nothing, the priced ones read nothing
    run = answered(
        hand_run(), ("local", "SmolLM2"), ("local", "SmolLM2"), ("openai", "gpt-4o-mini"), ("openai", "gpt-4o-mini")
    )
    run = with_usage(run, 2, input_tokens=122, output_tokens=10, cache_read_tokens=13)
    assert account(run).priced and cache_saving(run) is None
    run = with_usage(run, 3, input_tokens=231, output_tokens=10, cache_read_tokens=122)  # a priced step's read
    assert cache_saving(run).saved_usd > 0


# -- the fit -------------------------------------------------------------------------------


def test_a_fit_needs_exactly_as_many_points_as_coefficients():
    three = fit_polynomial([13, 135, 366])  # a quadratic through three points: exact
    assert [three.at(n) for n in (1, 2, 3)] == pytest.approx([13, 135, 366])
    assert fit_polynomial([13, 135]) is None
    assert fit_polynomial([13, 122], 1).b == pytest.approx(109)
    assert fit_polynomial([13], 1) is None
    run = hand_run()
    run.steps = run.steps[:3]
    report = account(run)
    assert report.fit is not None and report.per_step_fit is not None
    assert "109 more input tokens" in report.explanation()


def test_r2_is_the_share_of_the_spread_about_the_mean_that_the_fit_explains():
    # 1, 1, 2 against a line: 1/3 + n/2 leaves 1/6 of a spread of 2/3 about the mean 4/3 unexplained
    assert fit_polynomial([1, 1, 2], 1).r2 == pytest.approx(0.75)
    # 1, 3, 2: the line 1 + n/2 leaves 1.5 of a spread of 2 unexplained
    assert fit_polynomial([1, 3, 2], 1).r2 == pytest.approx(0.25)


@pytest.mark.parametrize("degree", [1, 2])
def test_a_flat_series_is_fitted_exactly_by_a_flat_line(degree):
    fit = fit_polynomial([122, 122, 122, 122], degree)
    assert fit.r2 == 1.0  # no spread about the mean, and none left: a perfect fit, not a failed one
    assert fit.at(10) == pytest.approx(122)


def test_the_projection_continues_the_fit_for_as_many_steps_as_asked():
    report = account(hand_run())
    # each step sends 109 more than the one before: 449 at step 5 and 558 at step 6
    assert report.project(6) == pytest.approx([13, 135, 366, 706, 1155, 1713])
    assert report.project(1) == pytest.approx([13])
    assert report.project(0) == []


def test_the_explanation_says_the_parabola_is_half_the_per_step_slope():
    report = account(hand_run())
    text = report.explanation()
    assert report.fit.c == pytest.approx(54.5)
    assert "grows like 54.5·n²" in text and "(the fitted c is 54.5)" in text


@pytest.mark.parametrize(("count", "said"), [(0, "Only 0 steps:"), (1, "Only 1 step:"), (2, "Only 2 steps:")])
def test_too_few_steps_for_a_fit_are_counted_in_words(count, said):
    run = hand_run()
    run.steps = run.steps[:count]
    assert account(run).explanation().startswith(f"{said} a quadratic fit needs at least three")


# -- what a report says of itself -----------------------------------------------------------


def test_a_run_without_steps_is_accounted_as_nothing_spent():
    run = Run.start("hi", RunConfig(provider="openai", model="gpt-4o-mini"))
    report = account(run)
    data = report.to_dict()
    assert report.steps == [] and data["steps"] == []
    assert (data["total_input_tokens"], data["total_output_tokens"], data["total_reasoning_tokens"]) == (0, 0, 0)
    assert report.priced and report.total_cost_usd == data["total_cost_usd"] == run_cost(run) == 0.0
    unpriced = account(Run.start("hi", RunConfig(provider="openai", model="no-such-model-anywhere")))
    assert not unpriced.priced and unpriced.total_cost_usd is None  # an unknown price is not a price of nothing
    assert data["fit"] is None and not report.mixed


def test_a_run_is_mixed_from_its_second_model_on():
    one = account(hand_run())
    assert len(one.models) == 1 and not one.mixed and one.to_dict()["mixed"] is False
    two = account(answered(hand_run(), *[("openai", "gpt-4o-mini")] * 3, ("openai", "gpt-4o")))
    assert len(two.models) == 2 and two.mixed and two.to_dict()["mixed"] is True


def test_a_reports_repr_leaves_out_what_each_step_sent_and_how_it_was_priced():
    report = account(hand_run())
    shown = repr(report)
    assert "steps=[StepAccount(" in shown and "fit=Fit(" in shown  # the figures
    # what each step sent is the whole history again and again: a long run's repr would grow with its square
    assert "requests=" not in shown and "r" * 396 not in shown
    assert "scales=" not in shown and "pricers=" not in shown


def test_a_reports_steps_fit_and_saving_are_values_no_reader_can_change():
    run = with_usage(hand_run(), 4, input_tokens=340, output_tokens=10, cache_read_tokens=231)
    report = account(run)
    saving = cache_saving(run, report)
    for value, name in ((report.steps[0], "cost_usd"), (report.fit, "c"), (saving, "cost_usd")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, 0.0)
    # a fit and a saving can be kept as keys: the same numbers are the same value
    assert (
        len({report.fit, fit_polynomial([13, 135, 366, 706]), saving, CacheSaving(*dataclasses.astuple(saving))}) == 2
    )

"""Reasoning in the accounts and on the pages: counted and priced as output, shown beside its tool calls."""

from __future__ import annotations

from agentcore.accounting import account
from agentcore.messages import AssistantMessage, ReasoningPart, ToolCall, ToolMessage, Usage, UserMessage
from agentcore.providers.prices import Pricer, PriceRef
from agentcore.run import Run, RunConfig
from agentcore.steps import StepRecord

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


# -- on the pages ---------------------------------------------------------------------------------

HOSTILE = "Plan: call **get_weather**. ![x](http://evil.invalid/img) <script>window.pwned=1</script>"


def _reasoning_page(text: str, redacted: bool, reported: int | None) -> None:
    import streamlit as st

    from agentcore.messages import AssistantMessage, ReasoningPart, ToolCall
    from ui import reasoning_view

    part = (
        ReasoningPart(provider="anthropic", redacted="opaque")
        if redacted
        else ReasoningPart(provider="anthropic", text=text, signature="s")
    )
    call = ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})
    reasoning_view.show_reasoning(AssistantMessage(content=None, tool_calls=(call,), reasoning=(part,)), reported)
    st.markdown("after")
    reasoning_view.show_reasoning(AssistantMessage(content="no reasoning here"))


def reasoning_page(text: str = HOSTILE, *, redacted: bool = False, reported: int | None = None):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_reasoning_page, kwargs={"text": text, "redacted": redacted, "reported": reported})
    return at.run()


def test_reasoning_is_collapsed_with_its_estimated_token_count_and_drawn_safely():
    from ui import safe

    at = reasoning_page()
    assert not at.exception
    assert len(at.expander) == 1  # the message without reasoning draws nothing
    expander = at.expander[0]
    assert expander.label == f"Reasoning · about {len(HOSTILE) // 4 + 1} tokens"
    assert expander.proto.expanded is False
    bodies = [m.value for m in expander.markdown]
    assert safe.markdown(HOSTILE).strip() in bodies and HOSTILE not in bodies


def test_reported_reasoning_tokens_label_the_expander():
    at = reasoning_page(reported=1792)
    assert at.expander[0].label == "Reasoning · 1,792 tokens"


def test_redacted_reasoning_says_so_and_shows_nothing_opaque():
    at = reasoning_page(redacted=True)
    assert at.expander[0].label == "Reasoning · not readable"
    text = " ".join(m.value for m in at.expander[0].markdown)
    assert "Redacted by the provider" in text and "opaque" not in text


def test_a_step_reports_the_reasoning_tokens_of_its_turn():
    from ui.reasoning_view import reported_tokens

    run = thinking_run(Usage(input_tokens=50, output_tokens=120, reasoning_tokens=90))
    assert reported_tokens(run, 1) == 90
    assert reported_tokens(run, 2) is None and reported_tokens(None, 1) is None


def _compare_column_page() -> None:
    from test_reasoning import thinking_run  # the page runs apart from this module: tests/ is on the path

    from agentcore.messages import Usage
    from ui.messages_view import show_messages

    run = thinking_run(Usage(input_tokens=50, output_tokens=120, reasoning_tokens=90))
    show_messages(list(run.messages), run)


def test_a_compare_column_shows_the_reasoning_with_the_reported_count():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_compare_column_page).run()
    assert not at.exception
    assert [e.label for e in at.expander] == ["Reasoning · 90 tokens"]


def test_the_playground_shows_a_turns_reasoning_collapsed_beside_its_tool_calls(open_app):
    from ui.state import Session

    run = thinking_run(Usage(input_tokens=50, output_tokens=120, reasoning_tokens=90))
    run.config = run.config.model_copy(update={"provider": "scripted", "model": "weather"})
    session = Session()
    session.add_run(run)
    session.sync_sidebar = False
    at = open_app(session=session)
    reasoning = [e for e in at.expander if e.label.startswith("Reasoning")]
    assert [e.label for e in reasoning] == ["Reasoning · 90 tokens"]
    assert reasoning[0].proto.expanded is False
    assert "t" * 400 in [m.value for m in reasoning[0].markdown]


def test_the_playground_says_which_reasoning_the_next_provider_will_not_be_sent(open_app):
    from ui.state import Session

    session = Session()
    session.add_run(thinking_run(Usage(input_tokens=50, output_tokens=120)))
    session.sync_sidebar = False  # the sidebar stays on the scripted model: the next step is not Anthropic's
    at = open_app(session=session)
    notes = [c.value for c in at.caption if "not sent to" in c.value]
    assert len(notes) == 1 and "1 reasoning part from anthropic" in notes[0] and "not sent to scripted" in notes[0]

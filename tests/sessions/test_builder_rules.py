"""The session builder every importer shares, at its limits: a text cut past MAX_TEXT and not at it, where a
compaction's summariser is charged, system lines, a turn with nothing before it, calls without results placed
among the ones with, estimates only where a step has no count, titles, parts of a message, and which provider a
model name means."""

from __future__ import annotations

from agentcore.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from agentcore.policies import PolicyCall
from agentcore.sessions.builder import (
    MAX_TEXT,
    NO_RESULT,
    Result,
    SessionBuilder,
    Turn,
    clip,
    first_words,
    provider_of,
    text_of,
)
from agentcore.steps import Usage


def builder(results: dict[str, Result] | None = None) -> SessionBuilder:
    return SessionBuilder("test", "f.jsonl", "openai", results or {})


def test_a_text_is_kept_whole_up_to_max_text_characters_and_cut_with_a_note_past_it():
    assert clip("x" * MAX_TEXT) == "x" * MAX_TEXT
    assert clip("x" * (MAX_TEXT + 1)) == "x" * MAX_TEXT + f"… [cut: {MAX_TEXT + 1} characters in all]"
    assert Result("r").is_error is False


def test_a_summariser_is_charged_to_the_first_step_after_a_compaction_with_none_yet_and_once():
    b = builder()
    b.user("Hi")
    b.turn(Turn(texts=["one"]))
    call = PolicyCall(provider="anthropic", usage=Usage(input_tokens=9))
    assert b.summariser(call) is False  # no compaction: nowhere to charge it
    b.compact("agent", "auto")
    b.user("again")
    assert b.turn(Turn(texts=["two"])) == 2  # the step number
    b.turn(Turn(texts=["three"]))
    assert b.summariser(call) is True
    assert [len(s.policy_calls) for s in b.steps] == [0, 1, 0]
    assert b.summariser(call) is False  # that compaction's summariser is charged already


def test_a_system_line_is_the_first_message_or_a_user_message_that_says_so_and_blank_ones_are_not_kept():
    b = builder()
    b.system("   ")
    assert b.messages == []
    b.system("Be brief.")
    b.system("Now be verbose.")
    assert b.messages == [SystemMessage(content="Be brief."), UserMessage(content="[system] Now be verbose.")]


def test_a_turn_with_no_user_message_before_it_gets_one_that_says_so_and_a_later_one_does_not():
    b = builder()
    b.system("Be brief.")
    b.turn(Turn(texts=["hello"]))
    b.turn(Turn(texts=["again"]))
    assert [m.text for m in b.messages] == [
        "Be brief.",
        "(the file starts with the model's turn)",
        "hello",
        "again",
    ]
    b = builder()
    b.user("Hi")
    b.turn(Turn(texts=["hello"]))
    assert [m.text for m in b.messages] == ["Hi", "hello"]


def test_calls_without_a_result_are_answered_as_such_in_call_order_among_those_with_one():
    calls = [ToolCall(id=f"c{k}", name="t", arguments={}) for k in range(3)]
    b = builder({"c1": Result("one")})
    b.user("Go")
    b.turn(Turn(texts=[], calls=calls))
    b.user("next")
    results = [m for m in b.messages if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.content, m.is_error) for m in results] == [
        ("c0", NO_RESULT, True),
        ("c1", "one", False),
        ("c2", NO_RESULT, True),
    ]
    assert [t.tool_call_id for t in b.steps[0].tool_runs] == ["c0", "c1", "c2"]
    assert b.skipped["tool calls without a result"] == 2
    assert isinstance(b.messages[1], AssistantMessage) and isinstance(b.messages[-1], UserMessage)


def test_only_a_step_with_no_count_is_estimated_from_its_text():
    b = builder()
    b.user("What is the weather like in Paris today?")
    b.turn(Turn(texts=["a"]))  # no usage: estimated
    b.turn(Turn(texts=["b"], usage=Usage(input_tokens=500, output_tokens=2), estimated=True))  # a count, as marked
    b.turn(Turn(texts=["c"], usage=Usage(input_tokens=0, output_tokens=3)))  # the provider's own count of 0
    run = b.build(title="t", session_id=None, agent=None, tools=[])
    first, second, third = run.steps
    assert first.estimated and first.usage.input_tokens > 0
    assert second.usage.input_tokens == 500
    assert not third.estimated and (third.usage.input_tokens, third.usage.output_tokens) == (0, 3)


def test_a_title_is_the_start_of_the_first_user_message_not_one_the_importer_wrote():
    said = [UserMessage(content="(the file starts with the model's turn)"), UserMessage(content="Fix  the\nbug " * 20)]
    assert first_words(said, "x") == " ".join(("Fix  the\nbug " * 20).split())[:70]
    assert len(first_words(said, "x")) == 70
    assert first_words(said[:1], "session") == "session"


def test_the_parts_of_a_message_are_read_as_text_numbers_kept_and_other_values_dropped():
    assert text_of(7) == "7" and text_of(2.5) == "2.5" and text_of(True) == "True"
    assert text_of({"a": 1}) == "[part]" and text_of(object()) == ""
    assert text_of([{"type": "image"}, {"type": ""}, {"type": "x" * 50}]) == "\n".join(
        ["[image]", "[part]", f"[{'x' * 40}]"]
    )


def test_a_model_name_says_its_provider_by_its_prefix_else_by_its_look():
    assert provider_of("anthropic/claude-x") == ("anthropic", "claude-x")
    assert provider_of("openai/gpt-4o") == ("openai", "gpt-4o")
    assert provider_of("openai/") == ("openai", "openai/")  # a prefix with no model is not one
    assert provider_of("nobody/gpt-4o") == ("openai", "nobody/gpt-4o")
    assert provider_of("anthropic/") == ("anthropic", "anthropic/")
    assert provider_of("Claude-3-opus") == ("anthropic", "Claude-3-opus")
    assert provider_of("claude/opus") == ("anthropic", "claude/opus")  # no provider of that name: the name whole
    assert provider_of("qwen3:8b") == ("ollama", "qwen3:8b")
    assert provider_of("hf.co/org/model:q4") == ("openai", "hf.co/org/model:q4")  # a path is not an Ollama tag
    assert provider_of("gpt-4o") == ("openai", "gpt-4o")

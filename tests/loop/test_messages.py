"""Typed messages, usage arithmetic, argument parsing and the message-list validator."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentcore.messages import (
    MESSAGE_LIST,
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    parse_arguments,
    pending_tool_calls,
    validate_messages,
)


def call(i: str, name: str = "get_weather") -> ToolCall:
    return ToolCall(id=i, name=name, arguments={"city": "Paris"})


def test_usage_adds_field_by_field():
    total = Usage(input_tokens=10, output_tokens=2, cache_read_tokens=4) + Usage(
        input_tokens=5, output_tokens=1, cache_write_tokens=3
    )
    assert total == Usage(input_tokens=15, output_tokens=3, cache_read_tokens=4, cache_write_tokens=3)
    assert total.total_tokens == 18


def test_messages_are_discriminated_by_role_and_frozen():
    data = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "name": "f", "arguments": {"x": 1}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "ok"},
    ]
    messages = MESSAGE_LIST.validate_python(data)
    assert [type(m) for m in messages] == [SystemMessage, UserMessage, AssistantMessage, ToolMessage]
    assert messages[2].tool_calls[0].arguments == {"x": 1}
    with pytest.raises(ValidationError):
        messages[1].content = "changed"
    with pytest.raises(ValidationError):
        MESSAGE_LIST.validate_python([{"role": "robot", "content": "x"}])


def test_parse_arguments_keeps_raw_text_when_not_a_json_object():
    assert parse_arguments("c", "f", '{"a": 1}').arguments == {"a": 1}
    assert parse_arguments("c", "f", "").arguments == {}
    bad = parse_arguments("c", "f", '{"a": 1')
    assert bad.arguments_invalid and bad.raw_arguments == '{"a": 1'
    assert parse_arguments("c", "f", "[1, 2]").raw_arguments == "[1, 2]"


def test_a_well_formed_conversation_has_no_violations():
    messages = [
        SystemMessage(content="s"),
        UserMessage(content="u"),
        AssistantMessage(tool_calls=(call("a"), call("b"))),
        ToolMessage(tool_call_id="b", name="get_weather", content="1"),
        ToolMessage(tool_call_id="a", name="get_weather", content="2"),
        AssistantMessage(content="done"),
    ]
    assert validate_messages(messages, final=True) == []


@pytest.mark.parametrize(
    ("messages", "index", "words"),
    [
        ([UserMessage(content="u"), ToolMessage(tool_call_id="x", name="f", content="r")], 1, "no matching tool call"),
        (
            [UserMessage(content="u"), AssistantMessage(tool_calls=(call("a"),)), UserMessage(content="again")],
            1,
            "never answered",
        ),
        (
            [
                UserMessage(content="u"),
                AssistantMessage(tool_calls=(call("a"),)),
                ToolMessage(tool_call_id="a", name="get_weather", content="1"),
                ToolMessage(tool_call_id="a", name="get_weather", content="2"),
            ],
            3,
            "already has a result",
        ),
        ([UserMessage(content="u"), SystemMessage(content="late")], 1, "system message"),
        ([AssistantMessage(content="hi")], 0, "must start with a user message"),
        ([UserMessage(content="u"), AssistantMessage()], 1, "needs text or tool calls"),
        (
            [
                UserMessage(content="u"),
                AssistantMessage(tool_calls=(call("a"),)),
                ToolMessage(tool_call_id="a", name="other", content="1"),
            ],
            2,
            "is named",
        ),
        (
            [
                UserMessage(content="u"),
                AssistantMessage(tool_calls=(call("a"), call("a"))),
            ],
            1,
            "used twice",
        ),
    ],
)
def test_the_validator_names_the_message_and_the_reason(messages, index, words):
    violations = validate_messages(messages)
    assert violations, "expected a violation"
    assert violations[0].index == index
    assert words in violations[0].reason


def test_unanswered_calls_at_the_end_are_pending_not_wrong_unless_final():
    messages = [UserMessage(content="u"), AssistantMessage(tool_calls=(call("a"), call("b")))]
    assert validate_messages(messages) == []
    assert [c.id for c in pending_tool_calls(messages)] == ["a", "b"]
    assert "never answered" in validate_messages(messages, final=True)[0].reason
    messages.append(ToolMessage(tool_call_id="a", name="get_weather", content="1"))
    assert [c.id for c in pending_tool_calls(messages)] == ["b"]


def test_an_edited_copy_does_not_keep_the_originals_cached_text_and_size():
    original = AssistantMessage(tool_calls=(ToolCall(id="a", name="f", arguments={"x": 1}),))
    assert original.text == 'f{"x":1}' and original.data["tool_calls"][0]["arguments"] == {"x": 1}
    edited = original.model_copy(update={"tool_calls": (ToolCall(id="a", name="f", arguments={"x": 12345}),)})
    assert edited.text == 'f{"x":12345}'
    assert edited.tokens > original.tokens
    assert edited.data["tool_calls"][0]["arguments"] == {"x": 12345}
    assert original.model_dump() == edited.model_dump() | {"tool_calls": original.model_dump()["tool_calls"]}

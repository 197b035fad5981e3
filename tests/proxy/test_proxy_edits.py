"""A person's new text for a held request's message lands where that message's text is, in the request's own
dialect; every other byte of the request is kept."""

from __future__ import annotations

import copy
import json

import pytest

from agentcore.errors import UsageError
from agentcore.proxy.dialects import dialect_named, read_request
from agentcore.proxy.edits import write_texts

CALL = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}

CHAT = {
    "model": "gpt-4o-mini",
    "temperature": 0.2,
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C"},
        {"role": "user", "content": [{"type": "text", "text": "And tomorrow?"}], "name": "ana"},
    ],
    "tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}],
    "metadata": {"trace": "abc"},
}

ANTHROPIC = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "tu_1", "name": "weather", "input": {"city": "Paris"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "tu_1", "content": [{"type": "text", "text": "18 C"}]},
                {"type": "text", "text": "And tomorrow?", "cache_control": {"type": "ephemeral"}},
            ],
        },
    ],
    "tools": [{"name": "weather", "input_schema": {"type": "object"}}],
}

RESPONSES = {
    "model": "gpt-4.1",
    "instructions": "Be brief.",
    "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
        {"type": "function_call", "call_id": "fc_1", "name": "weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "fc_1", "output": "18 C"},
        {"type": "message", "role": "user", "content": "And tomorrow?"},
    ],
    "tools": [{"type": "function", "name": "weather", "parameters": {"type": "object"}}],
    "store": False,
}

OLLAMA = {
    "model": "qwen3:8b",
    "stream": False,
    "options": {"num_ctx": 8192},
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is in this picture?", "images": ["aGVsbG8="]},
        {"role": "assistant", "content": "A cat."},
        {"role": "user", "content": "And its colour?"},
    ],
}


def expect(body: dict, *changes: tuple[tuple, str]) -> dict:
    """`body` with each (path, text) set: what an edit must write, every other byte as it was."""
    out = copy.deepcopy(body)
    for path, text in changes:
        holder = out
        for step in path[:-1]:
            holder = holder[step]
        holder[path[-1]] = text
    return out


def same_bytes(a: dict, b: dict) -> bool:
    return json.dumps(a) == json.dumps(b)  # key order and all: what the upstream would receive


@pytest.mark.parametrize(
    ("name", "body", "index", "path"),
    [
        ("openai", CHAT, 4, ("messages", 4, "content", 0, "text")),
        ("openai", CHAT, 0, ("messages", 0, "content")),
        ("openai", CHAT, 3, ("messages", 3, "content")),
        ("anthropic", ANTHROPIC, 4, ("messages", 2, "content", 1, "text")),
        ("anthropic", ANTHROPIC, 0, ("system", 0, "text")),
        ("anthropic", ANTHROPIC, 3, ("messages", 2, "content", 0, "content", 0, "text")),
        ("anthropic", ANTHROPIC, 2, ("messages", 1, "content", 0, "text")),
        ("openai-responses", RESPONSES, 4, ("input", 3, "content")),
        ("openai-responses", RESPONSES, 0, ("instructions",)),
        ("openai-responses", RESPONSES, 1, ("input", 0, "content", 0, "text")),
        ("openai-responses", RESPONSES, 3, ("input", 2, "output")),
        ("ollama", OLLAMA, 3, ("messages", 3, "content")),
        ("ollama", OLLAMA, 1, ("messages", 1, "content")),
    ],
)
def test_a_message_s_new_text_lands_in_its_place_and_every_other_byte_is_kept(name, body, index, path):
    dialect = dialect_named(name)
    sent = copy.deepcopy(body)
    out = write_texts(dialect, sent, {index: "Weather in <b>Rome</b>?"})
    assert same_bytes(out, expect(body, (path, "Weather in <b>Rome</b>?")))
    assert same_bytes(sent, body)  # the held request itself is not changed
    assert read_request(dialect, out).messages[index].content == "Weather in <b>Rome</b>?"


def test_the_last_user_message_of_each_dialect_reads_back_as_edited_and_the_rest_as_before():
    for name, body in (("openai", CHAT), ("anthropic", ANTHROPIC), ("openai-responses", RESPONSES), ("ollama", OLLAMA)):
        dialect = dialect_named(name)
        before = read_request(dialect, body).messages
        last = max(i for i, m in enumerate(before) if m.role == "user")
        after = read_request(dialect, write_texts(dialect, body, {last: "Weather in Rome?"})).messages
        assert after[last].content == "Weather in Rome?", name
        assert [m for i, m in enumerate(after) if i != last] == [m for i, m in enumerate(before) if i != last], name


def test_two_messages_edited_at_once_each_land_in_their_own_place():
    out = write_texts(dialect_named("openai"), CHAT, {0: "Be terse.", 1: "Weather in Rome?"})
    assert same_bytes(
        out, expect(CHAT, (("messages", 0, "content"), "Be terse."), (("messages", 1, "content"), "Weather in Rome?"))
    )


def test_a_responses_input_that_is_one_string_is_replaced_whole():
    body = {"model": "gpt-4.1", "input": "Weather in Paris?", "stream": True}
    out = write_texts(dialect_named("openai-responses"), body, {0: "Weather in Rome?"})
    assert same_bytes(out, {"model": "gpt-4.1", "input": "Weather in Rome?", "stream": True})


def test_a_message_of_several_text_parts_gets_the_new_text_in_its_first_part_and_keeps_its_other_blocks():
    body = copy.deepcopy(ANTHROPIC)
    body["messages"][2]["content"].append({"type": "text", "text": "In Celsius."})
    out = write_texts(dialect_named("anthropic"), body, {4: "Weather in Rome?"})
    assert out["messages"][2]["content"] == [
        body["messages"][2]["content"][0],  # the tool result, a message of its own, as it was
        {"type": "text", "text": "Weather in Rome?", "cache_control": {"type": "ephemeral"}},
    ]
    assert same_bytes({**out, "messages": out["messages"][:2]}, {**body, "messages": body["messages"][:2]})


def test_an_edit_that_has_no_place_in_the_request_is_refused_not_guessed():
    chat = dialect_named("openai")
    with pytest.raises(UsageError, match="no text in the request"):
        write_texts(chat, CHAT, {2: "I will look."})  # the call's message has no text to replace
    with pytest.raises(UsageError, match="has 5 messages"):
        write_texts(chat, CHAT, {5: "one too far"})
    image = expect(CHAT, (("messages", 4, "content"), [{"type": "text", "text": "This?"}, {"type": "image_url"}]))
    with pytest.raises(UsageError, match="not text"):
        write_texts(chat, image, {4: "That?"})
    with pytest.raises(UsageError, match="do not read"):
        write_texts(chat, {"model": "m", "messages": "not a list"}, {0: "hi"})

"""agentcore's chat format for the embedded model: the prompt it writes, its grammar, and how a reply is read."""

from __future__ import annotations

import pytest

from agentcore import toolbox
from agentcore.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from agentcore.providers.local_chat import ChatStyle, parse_reply, render

TOOLS = tuple(t.spec() for t in toolbox.get_tools("get_weather"))
CALL = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
RUN = (
    UserMessage(content="What is the weather in Paris?"),
    AssistantMessage(tool_calls=(CALL,)),
    ToolMessage(tool_call_id="call_1", name="get_weather", content='{"temperature": 18.5, "unit": "celsius"}'),
)


def test_the_prompt_is_chatml_with_the_tools_in_the_system_turn_and_each_prompt_extends_the_last():
    first, second = render(RUN[:1], TOOLS, ChatStyle()), render(RUN, TOOLS, ChatStyle())
    assert first.startswith("<|im_start|>system\nYou are a helpful assistant.\n\nYou can call these tools:\n")
    assert '{"name":"get_weather","description":"Get today' in first
    assert first.endswith("<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n<|im_start|>assistant\n")
    assert second.startswith(first)  # what the cache holds from one step is the start of the next
    assert second.endswith(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call><|im_end|>\n'
        '<|im_start|>tool\nget_weather result: {"temperature": 18.5, "unit": "celsius"}<|im_end|>\n'
        "<|im_start|>assistant\n"
    )


def test_a_system_message_of_the_run_replaces_the_default_and_no_tools_means_no_list():
    prompt = render((SystemMessage(content="Be brief."), RUN[0]), ())
    assert prompt.startswith("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n")
    assert render(RUN[:1], ()).startswith("<|im_start|>user\n")


def test_the_default_style_sends_a_tool_result_as_plain_lines_in_a_user_turn():
    assert render(RUN, TOOLS).endswith(
        "<|im_start|>user\nget_weather result: \ntemperature: 18.5\nunit: celsius<|im_end|>\n<|im_start|>assistant\n"
    )


def test_the_styles_change_the_role_and_form_of_a_tool_result():
    prompt = render(RUN, TOOLS, ChatStyle(tool_role="user", plain_results=True, instructions=""))
    assert "<|im_start|>user\nget_weather result: \ntemperature: 18.5\nunit: celsius<|im_end|>" in prompt
    assert "To call a tool" not in prompt


def test_a_reply_is_read_as_a_call_or_an_answer():
    call = parse_reply('<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>')
    assert call.tool_calls[0].name == "get_weather" and call.tool_calls[0].arguments == {"city": "Rome"}
    assert parse_reply("  It is sunny.  ").content == "It is sunny."
    assert parse_reply("   ") is None
    cut = parse_reply('<tool_call>{"name": "get_weather", "arguments": {"city": "Ro')  # the token limit
    assert cut.tool_calls[0].name == "get_weather" and cut.tool_calls[0].arguments_invalid


def test_the_grammar_offers_each_tool_and_an_answer_unless_a_call_is_required():
    pytest.importorskip("llama_cpp")
    from llama_cpp.llama_grammar import LlamaGrammar

    from agentcore.providers.local_chat import grammar_text

    both = grammar_text(tuple(t.spec() for t in toolbox.get_tools("get_weather,calculator")))
    assert both.startswith("root ::= agentcore-call | agentcore-answer\n")
    assert '"\\"get_weather\\""' in both and '"\\"calculator\\""' in both
    assert grammar_text(TOOLS, answer=False).startswith("root ::= agentcore-call\n")
    assert r'char ::= [^"\\\x7F\x00-\x1F] |' in both  # a JSON string cannot run on over lines
    LlamaGrammar.from_string(both, verbose=False)  # llama.cpp accepts it

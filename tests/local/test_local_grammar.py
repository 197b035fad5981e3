"""The embedded model's call grammar admits only arguments that fit the tool's schema, and its prompt shows no examples."""

from __future__ import annotations

import ctypes
import json

import pytest
from support.embedded import embedded_model

from agentcore import toolbox
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage
from agentcore.providers.local_chat import (
    MAX_CALLS_PER_REPLY,
    MAX_STRING_CHARS,
    ChatStyle,
    grammar_text,
    parse_reply,
    render,
    without_examples,
)
from agentcore.tools import ToolSpec

ORDER = ToolSpec(
    name="order",
    description="Order an item, e.g. {'item': 'tea', 'count': 2, 'size': 'large'}.",
    parameters={
        "type": "object",
        "properties": {
            "item": {"type": "string", "description": 'What to order, for example "green tea (loose)".'},
            "count": {"type": "integer"},
            "size": {"type": "string", "enum": ["small", "large"]},
        },
        "required": ["item", "count"],
        "additionalProperties": False,
    },
)
SMOLLM2 = ChatStyle(tool_role="user", plain_results=True, call_first=True, tool_format="smollm2")


def _call(arguments: str) -> str:
    return '<tool_call>{"name": "order", "arguments": ' + arguments + "}</tool_call>"


@pytest.fixture(scope="module")
def admits():
    """Whether a grammar lets the model write a text to its end, checked token by token by llama.cpp's own sampler."""
    _, path = embedded_model()
    import llama_cpp

    vocab_only = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)

    def check(grammar: str, text: str) -> bool:
        sampler = llama_cpp.llama_sampler_init_grammar(vocab_only._model.vocab, grammar.encode(), b"root")
        try:
            end = vocab_only.token_eos()  # allowed only where the grammar may end
            for token in [*vocab_only.tokenize(text.encode(), add_bos=False, special=False), end]:
                data = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 0.0, 0.0))
                candidates = llama_cpp.llama_token_data_array(data, 1, -1, False)
                llama_cpp.llama_sampler_apply(sampler, ctypes.byref(candidates))
                if data[0].logit == float("-inf"):
                    return False
                if token != end:
                    llama_cpp.llama_sampler_accept(sampler, token)
            return True
        finally:
            llama_cpp.llama_sampler_free(sampler)

    return check


@pytest.mark.slow
def test_the_grammar_admits_only_calls_whose_arguments_fit_the_schema(admits):
    grammar = grammar_text((ORDER,), answer=False)
    assert admits(grammar, _call('{"item": "tea", "count": 2}'))
    assert admits(grammar, _call('{"item": "tea", "count": -12, "size": "large"}'))
    assert not admits(grammar, _call('{"item": "tea", "count": "2"}'))  # a string where the schema says integer
    assert not admits(grammar, _call('{"item": "tea", "count": 2.5}'))
    assert not admits(grammar, _call('{"item": "tea", "count": 2, "size": "huge"}'))  # not one of the enum
    assert not admits(grammar, _call('{"item": "tea"}'))  # a required property left out
    assert not admits(grammar, _call('{"item": "tea", "count": 2, "colour": "red"}'))  # no other property
    assert not admits(grammar, _call('{"item": "tea\nmore", "count": 2}'))  # a raw newline inside a string
    assert not admits(grammar, '<tool_call>{"name": "other", "arguments": {}}</tool_call>')  # not an offered tool
    assert not admits(grammar, "Two teas.")  # a call is required
    assert admits(grammar_text((ORDER,)), "Two teas.")


@pytest.mark.slow
def test_a_string_argument_the_schema_leaves_unbounded_ends_within_the_bound(admits):
    grammar = grammar_text((ORDER,), answer=False)
    longest = "a" * MAX_STRING_CHARS
    assert admits(grammar, _call(json.dumps({"item": longest, "count": 1})))
    assert not admits(grammar, _call(json.dumps({"item": longest + "a", "count": 1})))


@pytest.mark.slow
def test_smollm2_format_lists_one_to_the_most_calls_a_reply_may_make(admits):
    grammar = grammar_text((ORDER,), answer=False, style=SMOLLM2)
    one = '{"name": "order", "arguments": {"item": "tea", "count": 1}}'
    assert admits(grammar, f"<tool_call>[\n{one}\n]</tool_call>")
    assert admits(grammar, "<tool_call>[\n" + ",\n".join([one] * MAX_CALLS_PER_REPLY) + "\n]</tool_call>")
    assert not admits(grammar, "<tool_call>[\n" + ",\n".join([one] * (MAX_CALLS_PER_REPLY + 1)) + "\n]</tool_call>")
    assert not admits(grammar, "<tool_call>[\n]</tool_call>")
    assert not admits(grammar, f"<tool_call>{one}</tool_call>")  # the list form only


def test_the_model_reads_descriptions_without_their_examples():
    prompt = render((UserMessage(content="Two teas."),), (ORDER, toolbox.TOOLBOX["calculator"].spec()))
    assert "Order an item." in prompt and "What to order." in prompt
    assert "Evaluate an arithmetic expression. Supports" in prompt
    for example in ("e.g.", "for example", "sqrt(16)", "green tea", "'count': 2"):
        assert example not in prompt
    assert "sqrt(16)" in toolbox.TOOLBOX["calculator"].spec().description  # other providers still get it whole


@pytest.mark.parametrize(
    ("description", "shown"),
    [
        (
            'Evaluate an expression, e.g. "(2 + 3) * 4 / sqrt(16)". Supports sqrt.',
            "Evaluate an expression. Supports sqrt.",
        ),
        ("A date (e.g. 2024-01-01) in ISO form.", "A date in ISO form."),
        ("Run a command; for instance `ls -la; pwd`; then stop.", "Run a command; then stop."),
        ("Search the notes, for example: cats (felines) and dogs.", "Search the notes."),
        ("For example, it's fine. Next.", "Next."),
        ("Pick one. For example: tea. Then pay.", "Pick one. Then pay."),
        ("No example here.", "No example here."),
    ],
)
def test_an_example_clause_is_cut_whole_from_a_description(description, shown):
    assert without_examples(description) == shown


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("description", "shown"),
    [
        (" " * 200_000 + "e.g. x", ""),
        ("Pick" + " " * 200_000 + "one.", "Pick" + " " * 200_000 + "one."),
        ("Use it, e.g. " + "x " * 100_000 + "then stop.", "Use it."),
        ("a" + " " * 200_000 + "(e.g. x) b.", "a b."),
        ("x;" + "\t" * 100_000 + "for instance y", "x"),
    ],
    ids=["spaces then an example", "spaces and no example", "a long example", "a bracket after spaces", "a semicolon"],
)
def test_a_description_of_hundreds_of_thousands_of_spaces_is_read_once(description, shown):
    # an MCP server's description: the pattern that began with the spaces read them once per way of sharing
    # them between its two runs of spaces (36 s for 2,000)
    assert without_examples(description) == shown


def test_smollm2_format_writes_calls_as_a_list_and_results_in_tool_response_tags():
    calls = (
        ToolCall(id="call_1", name="order", arguments={"item": "tea", "count": 1}),
        ToolCall(id="call_2", name="order", arguments={"item": "cake", "count": 2}),
    )
    history = (
        UserMessage(content="Tea and two cakes."),
        AssistantMessage(tool_calls=calls),
        ToolMessage(tool_call_id="call_1", name="order", content='{"total": 3}'),
    )
    prompt = render(history, (ORDER,), SMOLLM2)
    assert "<tools>[" in prompt and "]</tools>" in prompt
    listed = (
        '<tool_call>[\n{"name": "order", "arguments": {"item": "tea", "count": 1}},\n'
        '{"name": "order", "arguments": {"item": "cake", "count": 2}}\n]</tool_call>'
    )
    assert listed in prompt
    assert "<|im_start|>user\n<tool_response>\norder result: \ntotal: 3\n</tool_response><|im_end|>" in prompt
    reply = parse_reply(listed)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [(c.name, c.arguments) for c in calls]
    assert len({c.id for c in reply.tool_calls}) == 2


def test_results_in_the_assistant_turn_keep_it_open_and_each_prompt_extends_the_last():
    style = ChatStyle(tool_role="assistant", plain_results=True, call_first=True)
    call = ToolCall(id="call_1", name="order", arguments={"item": "tea", "count": 1})
    history = (
        UserMessage(content="Tea."),
        AssistantMessage(tool_calls=(call,)),
        ToolMessage(tool_call_id="call_1", name="order", content='{"total": 3}'),
    )
    first, second = render(history[:1], (ORDER,), style), render(history, (ORDER,), style)
    assert second.startswith(first)
    assert second.endswith(
        '<|im_start|>assistant\n<tool_call>{"name": "order", "arguments": {"item": "tea", "count": 1}}</tool_call>'
        "\norder result: \ntotal: 3\n"
    )  # no end of turn: the model goes on from the result
    answered = render((*history, AssistantMessage(content="3."), UserMessage(content="More.")), (ORDER,), style)
    assert answered.startswith(second)
    assert answered.endswith("total: 3\n3.<|im_end|>\n<|im_start|>user\nMore.<|im_end|>\n<|im_start|>assistant\n")


def test_the_chatml_function_calling_format_also_sends_descriptions_without_examples():
    pytest.importorskip("llama_cpp")
    from agentcore.errors import UsageError
    from agentcore.providers.base import ModelRequest, Settings
    from agentcore.providers.local import LocalProvider

    try:
        provider = LocalProvider(chat_format="chatml-function-calling", preload=False)
    except UsageError as exc:
        pytest.skip(f"the SmolLM2 model is not installed: {exc}")
    request = ModelRequest(messages=(UserMessage(content="Two teas."),), tools=(ORDER,), settings=Settings())
    (sent,) = provider.build_request(request, stream=False)["tools"]
    assert sent["function"]["description"] == "Order an item."

"""A scripted model reads only what a request adds to its last one, and answers as if it had read the whole.

Each step's wire body, estimated input tokens and choice of reply are compared with those of a fresh provider
that reads the request whole: after a run that grows a turn at a time, a request cut short (a policy dropping
turns, a fork from an earlier step), a message replaced in the middle, and a message rebuilt equal to the one read.
"""

from __future__ import annotations

from agentcore import Agent, Run, RunConfig, ScriptedProvider
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage
from agentcore.providers.base import ModelRequest, estimate_request_tokens
from agentcore.providers.scripted import Read, scripted_response
from agentcore.tools import tool


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def _replay(steps: int) -> list[AssistantMessage]:
    calls = [
        AssistantMessage(tool_calls=(ToolCall(id=f"c{i}", name="lookup", arguments={"key": f"k{i}"}),))
        for i in range(1, steps + 1)
    ]
    return [*calls, AssistantMessage(content="done")]


def _whole(provider: ScriptedProvider, request: ModelRequest):
    """What a provider that never read a request before answers."""
    return ScriptedProvider(replay=provider.replay).complete(request)


def _same(kept: ScriptedProvider, request: ModelRequest) -> None:
    got, want = kept.complete(request), _whole(kept, request)
    assert got.wire.request == want.wire.request
    assert got.wire.request["messages"] == [m.model_dump(mode="json", exclude_none=True) for m in request.messages]
    assert got.usage == want.usage
    assert got.usage.input_tokens == estimate_request_tokens(request)
    assert got.message == want.message


def test_each_step_of_a_growing_run_sends_and_counts_what_a_whole_read_would():
    provider = ScriptedProvider(replay=_replay(4))
    run = Agent(provider, [lookup]).run(Run.start("look up four keys", RunConfig(max_steps=5)))
    assert run.stop_reason == "answer"
    assert len(run.steps) == 5
    for step in run.steps:
        sent = ModelRequest(messages=tuple(run.messages[: step.message_count]), tools=tuple(run.tool_specs))
        fresh = _whole(provider, sent)
        assert step.wire.request == fresh.wire.request
        assert step.usage.input_tokens == fresh.usage.input_tokens == estimate_request_tokens(sent)
    # each step's body is a list of its own: a later step's growth does not reach an earlier step's record
    bodies = [s.wire.request["messages"] for s in run.steps]
    assert [len(b) for b in bodies] == [s.message_count for s in run.steps]
    assert len({id(b) for b in bodies}) == len(bodies)


def test_a_request_cut_short_or_changed_in_the_middle_is_read_again_whole():
    provider = ScriptedProvider(replay=_replay(3))
    run = Agent(provider, [lookup]).run(Run.start("look up three keys", RunConfig(max_steps=4)))
    messages = run.messages[:-1]  # up to the last tool result: the request of the answer
    tools = tuple(run.tool_specs)
    _same(provider, ModelRequest(messages=tuple(messages), tools=tools))
    # shorter: a fork from step 2 asks for the second call again, not the fourth turn
    _same(provider, ModelRequest(messages=tuple(messages[:3]), tools=tools))
    assert provider.complete(ModelRequest(messages=tuple(messages[:3]), tools=tools)).message == _replay(3)[1]
    # the same length with a message in the middle replaced: its text counts, and no earlier read of it
    edited = list(messages)
    edited[2] = ToolMessage(tool_call_id="c1", name="lookup", content="a much longer result " * 20)
    provider.complete(ModelRequest(messages=tuple(messages), tools=tools))
    _same(provider, ModelRequest(messages=tuple(edited), tools=tools))
    # a prompt replaced in front of the same growth: nothing of the last read is kept
    other = [UserMessage(content="something else entirely, and longer"), *messages[1:]]
    _same(provider, ModelRequest(messages=tuple(other), tools=tools))
    # an assistant turn dropped in the middle changes which reply comes next
    dropped = [messages[0], *messages[3:]]
    _same(provider, ModelRequest(messages=tuple(dropped), tools=tools))


def test_a_read_goes_on_from_its_last_only_where_those_messages_begin_the_new_ones():
    first = (UserMessage(content="hi"), AssistantMessage(content="hello"))
    last = Read.of(first)
    assert (last.tokens, last.turns) == (sum(m.tokens for m in first), 1)
    grown = (*first, UserMessage(content="and then?"))
    went_on = Read.of(grown, last)
    assert went_on.data is not last.data  # a new list, its first items those read before
    assert went_on.data == [m.data for m in grown]
    assert all(a is b for a, b in zip(went_on.data, last.data, strict=False))
    assert (went_on.tokens, went_on.turns) == (sum(m.tokens for m in grown), 1)
    # rebuilt equal to what was read: read on from it, as the same messages
    rebuilt = (UserMessage(content="hi"), AssistantMessage(content="hello"), UserMessage(content="and then?"))
    assert Read.of(rebuilt, last).data == went_on.data
    # the last read longer than the request, or not its beginning: read whole
    assert Read.of(first[:1], Read.of(grown)) == Read.of(first[:1])
    changed = (UserMessage(content="hi there, a longer prompt"), *grown[1:])
    read = Read.of(changed, last)
    assert read == Read.of(changed)
    assert read.tokens == sum(m.tokens for m in changed) != went_on.tokens


def test_a_read_of_other_messages_given_with_a_request_is_not_used():
    asked = ModelRequest(messages=(UserMessage(content="the request's own prompt"),))
    other = Read.of((UserMessage(content="another"), AssistantMessage(content="turn")))
    response = scripted_response("replay", asked, AssistantMessage(content="ok"), other)
    assert response.wire.request["messages"] == [{"role": "user", "content": "the request's own prompt"}]
    assert response.usage.input_tokens == estimate_request_tokens(asked)

"""Claude Haiku 5.5 and the context policies: a thinking block goes back only after the prefix it was made on.

Haiku 5.5's overview: "a request that sends a thinking block back after a change to `system`, `tools`, or
earlier `messages` returns a 400 error". A policy changes earlier messages (a result cleared, cut, dropped or
summarised); the turns whose prefix changed go without their thinking, which adaptive thinking accepts, and
the step records which. The model answers each call with the recorded thinking + tool_use turn.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.stand_in import Reply, StandIn

from agentcore import transcript
from agentcore.loop import Agent
from agentcore.policies import ContextPolicies
from agentcore.providers import create_provider
from agentcore.request import thinking_note
from agentcore.run import Run, RunConfig
from agentcore.tools import tool

QUIET = {"api_key": "sk-test-PLANTED-000000000000", "retry_base": 0.001, "retry_cap": 0.002}
HAIKU = "claude-haiku-5-5"
POLICIES = [
    ContextPolicies(keep_tool_results=1),
    ContextPolicies(truncate_tool_results=5),
    ContextPolicies(drop_turns_older_than=2),
    ContextPolicies(summarize_older_than=2),
]


@tool
def get_user_country() -> str:
    """The user's country."""
    return "Mexico, " * 40


def run_steps(model: str, policies: ContextPolicies, steps: int = 4) -> tuple[Run, list[dict[str, Any]]]:
    """`steps` steps on `model` under `policies`; the run, and the bodies of its model calls (not the summariser's)."""
    with StandIn(Reply.fixture("anthropic_thinking_tool_use.json")) as server:
        provider = create_provider("anthropic", model, base_url=server.url, **QUIET)
        run = Run.start("Largest city in my country?", RunConfig(provider="anthropic", model=model, policies=policies))
        agent = Agent(provider, [get_user_country])
        for _ in range(steps):
            agent.step(run)
    assert run.stop_reason is None, run.error
    return run, [s.body for s in server.seen if "tools" in s.body]  # the summariser is offered no tools


def thinking_turns(body: dict[str, Any]) -> list[tuple[int, str]]:
    """(position, tool_use id) of each assistant turn in a body that starts with a thinking block."""
    return [
        (k, next(b["id"] for b in m["content"] if b["type"] == "tool_use"))
        for k, m in enumerate(body["messages"])
        if m["role"] == "assistant" and m["content"][0]["type"] == "thinking"
    ]


def made_by(run: Run) -> dict[str, int]:
    """Each step's reply, by its tool call id, to the step (0-based) whose request produced it."""
    return {run.messages[s.message_count].tool_calls[0].id: n for n, s in enumerate(run.steps)}


@pytest.mark.parametrize("policies", POLICIES, ids=[p.label for p in POLICIES])
def test_every_thinking_block_sent_back_follows_the_prefix_it_was_made_on(policies: ContextPolicies):
    run, bodies = run_steps(HAIKU, policies)
    producer = made_by(run)
    checked = 0
    for body in bodies:
        for k, call_id in thinking_turns(body):
            made_on = bodies[producer[call_id]]
            assert body["messages"][:k] == made_on["messages"], (policies.label, call_id)
            assert (body.get("system"), body["tools"]) == (made_on.get("system"), made_on["tools"])
            checked += 1
    assert checked  # some thinking still goes back: only the turns after a change lose it
    left_out = [i for s in run.steps if s.sent is not None for i in s.sent.thinking_left_out]
    assert bool(left_out) == (policies.truncate_tool_results is None)  # cutting a result once changes nothing later


def test_the_step_records_which_turns_went_without_their_thinking_and_the_transcript_keeps_it():
    run, bodies = run_steps(HAIKU, ContextPolicies(keep_tool_results=1), steps=3)
    # step 3 clears the first result: the turn after it (message 3) goes without its thinking, the first does not
    assert run.steps[2].sent.thinking_left_out == [3]
    assert [m["content"][0]["type"] for m in bodies[2]["messages"] if m["role"] == "assistant"] == ["thinking", "text"]
    assert transcript.loads(transcript.dumps(run)).steps[2].sent.thinking_left_out == [3]
    assert run.messages[3].reasoning  # the history keeps the thinking: only the request went without it


def test_the_playground_line_says_which_turns_the_next_request_sends_without_thinking():
    run, _ = run_steps(HAIKU, ContextPolicies(keep_tool_results=1), steps=2)
    assert thinking_note(run, "anthropic", HAIKU) == (
        "the thinking of 1 turn (message 3) is not sent back: claude-haiku-5-5 refuses a thinking block after "
        "a change to what was sent before it, and the policies changed that"
    )
    assert thinking_note(run, "anthropic", "claude-opus-4-6") is None  # a model without the rule


def test_a_model_without_the_rule_is_sent_all_its_thinking_as_before():
    run, bodies = run_steps("claude-opus-4-6", ContextPolicies(keep_tool_results=1), steps=3)
    assert [m["content"][0]["type"] for m in bodies[2]["messages"] if m["role"] == "assistant"] == ["thinking"] * 2
    assert all(not s.sent.thinking_left_out for s in run.steps if s.sent is not None)


def test_turning_the_policies_off_sends_the_whole_history_without_the_thinking_it_no_longer_follows():
    run, _ = run_steps(HAIKU, ContextPolicies(keep_tool_results=1), steps=3)
    run.config = run.config.model_copy(update={"policies": None})
    with StandIn(Reply.fixture("anthropic_thinking_tool_use.json")) as server:
        Agent(create_provider("anthropic", HAIKU, base_url=server.url, **QUIET), [get_user_country]).step(run)
    firsts = [m["content"][0]["type"] for m in server.seen[0].body["messages"] if m["role"] == "assistant"]
    # the first result is whole again, as the second turn was made on it; the third was made on it cleared
    assert firsts == ["thinking", "thinking", "text"]
    assert run.steps[-1].sent.thinking_left_out == [5]


def test_the_playground_shows_the_line_before_the_next_step(open_app):
    from ui.state import Session

    run, _ = run_steps(HAIKU, ContextPolicies(keep_tool_results=1), steps=2)
    session = Session()
    session.add_run(run)
    at = open_app(session=session)
    lines = [c.value for c in at.caption if "is not sent back" in c.value]
    assert len(lines) == 1 and "the thinking of 1 turn (message 3)" in lines[0]


def test_an_export_of_the_whole_history_leaves_out_the_thinking_the_model_would_refuse():
    from agentcore.exports import export_request

    run, _ = run_steps(HAIKU, ContextPolicies(keep_tool_results=1), steps=3)
    body = export_request(run, "anthropic")  # the whole history, as a request with no policy
    assert [m["content"][0]["type"] for m in body["messages"] if m["role"] == "assistant"] == [
        "thinking",
        "thinking",
        "text",
    ]

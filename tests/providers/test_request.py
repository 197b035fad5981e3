"""What a run's next model call sends (agentcore.request), rule by rule and at each rule's other half: an agent's
own settings against the run's, the call ids a reply gets, the summariser's call and its record, and which turns
go back to Claude Haiku 5.5 without their thinking, said before the step exactly as the step then records it.
"""

from __future__ import annotations

import re
import time

import pytest
from support.stand_in import Reply, StandIn

from agentcore import Agent, Run, RunConfig, ScriptedProvider
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage, Usage, UserMessage
from agentcore.policies import ContextPolicies
from agentcore.providers import create_provider
from agentcore.providers.base import ModelRequest, ModelResponse, Settings
from agentcore.request import (
    distinct_call_ids,
    prepare,
    request_settings,
    summarise,
    thinking_note,
    transcript_text,
    whole_history,
)
from agentcore.toolbox import get_tools
from agentcore.tools import tool

QUIET = {"api_key": "sk-test-PLANTED-000000000000", "retry_base": 0.001, "retry_cap": 0.002}
HAIKU = "claude-haiku-5-5"  # sends a turn's thinking back only after the prefix it was made on
OPUS = "claude-opus-4-6"  # no such rule


@tool
def get_user_country() -> str:
    """The user's country."""
    return "Mexico, " * 40


def haiku_run(policies: ContextPolicies | None, steps: int, prompt: str = "Largest city in my country?", **config):
    """`steps` steps of Claude Haiku 5.5 (a stand-in server answering with a recorded thinking + tool_use turn)."""
    with StandIn(Reply.fixture("anthropic_thinking_tool_use.json")) as server:
        provider = create_provider("anthropic", HAIKU, base_url=server.url, **QUIET)
        run = Run.start(prompt, RunConfig(provider="anthropic", model=HAIKU, policies=policies, **config))
        agent = Agent(provider, [get_user_country])
        for _ in range(steps):
            agent.step(run)
    assert run.stop_reason is None, run.error
    return run


def step_haiku(run: Run) -> None:
    with StandIn(Reply.fixture("anthropic_thinking_tool_use.json")) as server:
        Agent(create_provider("anthropic", HAIKU, base_url=server.url, **QUIET), [get_user_country]).step(run)
    assert run.stop_reason is None, run.error


# -- the settings -----------------------------------------------------------------------


def test_an_agents_own_settings_win_and_the_run_fills_only_what_they_leave_unset():
    config = RunConfig(provider="scripted", model="weather", temperature=0.9, max_tokens=100)
    settings = request_settings(config, Settings(temperature=0.2))
    assert (settings.temperature, settings.max_tokens, settings.seed) == (0.2, 100, None)
    assert request_settings(config) == Settings(temperature=0.9, max_tokens=100)


def test_the_runs_caching_policy_turns_caching_on_and_an_agents_own_caching_stays_on():
    cached = RunConfig(provider="scripted", model="weather", policies=ContextPolicies(cache_breakpoints=True))
    assert request_settings(cached).cache_breakpoints is True
    plain = RunConfig(provider="scripted", model="weather")
    assert request_settings(plain).cache_breakpoints is False
    assert request_settings(plain, Settings(cache_breakpoints=True)).cache_breakpoints is True


# -- the call ids a reply gets ----------------------------------------------------------


def _call(call_id: str, city: str = "Paris") -> ToolCall:
    return ToolCall(id=call_id, name="get_weather", arguments={"city": city})


def test_a_reply_s_repeated_and_empty_call_ids_are_made_distinct_by_the_step_and_a_number():
    history = [UserMessage(content="w?"), AssistantMessage(tool_calls=(_call("a"),))]
    reply = AssistantMessage(tool_calls=(_call("a"), _call("a", "Rome"), _call(""), _call("b"), _call("")))
    ids = [c.id for c in distinct_call_ids(history, reply, 3).tool_calls]
    assert ids == ["a_s3", "a_s3_2", "call_3_s3", "b", "call_5_s3"]


def test_a_reply_whose_ids_are_all_new_is_the_same_message():
    history = [UserMessage(content="w?"), AssistantMessage(tool_calls=(_call("a"),))]
    reply = AssistantMessage(tool_calls=(_call("b"), _call("c")))
    assert distinct_call_ids(history, reply, 2) is reply
    answer = AssistantMessage(content="Sunny.")
    assert distinct_call_ids(history, answer, 2) is answer


def test_a_run_s_call_ids_are_read_again_after_its_message_list_is_edited_in_place_or_replaced():
    # the run keeps the ids it read as its list grew; an edit (the playground's, a hook's) must not leave them stale
    run = Run.start("w?", RunConfig())
    run.append(AssistantMessage(tool_calls=(_call("a"),)))
    run.append(ToolMessage(tool_call_id="a", name="get_weather", content="sunny"))
    assert run.tool_call_ids() == {"a"}
    run.messages[1] = AssistantMessage(tool_calls=(_call("b"),))
    run.messages[2] = ToolMessage(tool_call_id="b", name="get_weather", content="sunny")
    reply = AssistantMessage(tool_calls=(_call("a"), _call("b")))
    assert [c.id for c in distinct_call_ids(run.messages, reply, 2, run.tool_call_ids()).tool_calls] == ["a", "b_s2"]
    run.messages.append(AssistantMessage(tool_calls=(_call("c"),)))  # grown without Run.append
    assert run.tool_call_ids() == {"b", "c"}
    run.replace_messages(run.messages[:1])
    assert run.tool_call_ids() == set()


def test_a_reply_s_ids_are_checked_against_the_run_s_kept_ids_as_against_its_history():
    run = Run.start("w?", RunConfig())
    run.append(AssistantMessage(tool_calls=(_call("a"),)))
    reply = AssistantMessage(tool_calls=(_call("a"), _call("a", "Rome"), _call("")))
    kept = distinct_call_ids(run.messages, reply, 2, run.tool_call_ids())
    assert kept == distinct_call_ids(run.messages, reply, 2)
    assert run.tool_call_ids() == {"a"}  # read, never changed


# -- the summariser's call ---------------------------------------------------------------


class _Summariser:
    """A model of another provider than the run's, answering each call with `text` after `delay` seconds."""

    name, model = "openai", "gpt-4o-mini"

    def __init__(self, text: str | None, delay: float = 0.0) -> None:
        self.text, self.delay, self.requests = text, delay, []

    def complete(self, request: ModelRequest, on_text=None) -> ModelResponse:
        self.requests.append(request)
        time.sleep(self.delay)
        return ModelResponse(message=AssistantMessage(content=self.text), usage=Usage(input_tokens=40, output_tokens=9))


def _scripted_run(steps: int = 2) -> Run:
    provider = ScriptedProvider(scenario="research")
    run = Run.start(provider.scenario.prompt, RunConfig(provider="scripted", model="research", max_steps=30))
    agent = Agent(provider, get_tools(list(provider.scenario.tools)))
    for _ in range(steps):
        agent.step(run)
    return run


def test_the_summary_call_is_recorded_as_the_summarisers_provider_and_model_with_its_time():
    run = _scripted_run()
    summariser = _Summariser("  The agent searched twice.  ", delay=0.05)
    text, call = summarise(run, run.messages, summariser)
    assert text == "The agent searched twice."
    assert (call.provider, call.model, call.summarised) == ("openai", "gpt-4o-mini", len(run.messages))
    assert call.usage == Usage(input_tokens=40, output_tokens=9)
    assert call.cost_usd > 0  # priced as gpt-4o-mini, not as the scripted model the run is on
    assert 50 <= call.latency_ms < 30_000


@pytest.mark.parametrize("said", [None, "", "   \n"])
def test_an_empty_summary_is_said_to_be_one(said):
    text, _ = summarise(_scripted_run(), [UserMessage(content="hello")], _Summariser(said))
    assert text == "(the model wrote no summary)"


def test_a_summariser_without_a_name_is_recorded_as_the_runs_model():
    class Bare:
        def complete(self, request, on_text=None):
            return ModelResponse(message=AssistantMessage(content="ok"))

    run = _scripted_run()
    _, call = summarise(run, run.messages, Bare())
    assert (call.provider, call.model) == ("scripted", "research")


def test_the_summariser_reads_each_turn_as_one_paragraph_with_its_text_and_calls():
    messages = [
        UserMessage(content="Weather in Paris?"),
        AssistantMessage(content="Let me look.", tool_calls=(_call("c1"),)),
        ToolMessage(tool_call_id="c1", name="get_weather", content="18 C"),
        AssistantMessage(tool_calls=(_call("c2", "Rome"),)),
        AssistantMessage(content="Sunny."),
    ]
    assert transcript_text(messages) == (
        "user: Weather in Paris?\n\n"
        'assistant: Let me look. [calls get_weather({"city": "Paris"})]\n\n'
        "tool get_weather result: 18 C\n\n"
        'assistant:  [calls get_weather({"city": "Rome"})]\n\n'
        "assistant: Sunny."
    )


def test_a_summary_asked_for_after_steps_that_had_no_policy_is_the_first_one():
    run = _scripted_run(steps=3)  # steps without a policy: nothing of theirs was summarised
    run.config = run.config.model_copy(update={"policies": ContextPolicies(summarize_older_than=1)})
    summariser = _Summariser("Two searches so far.")
    prepared = prepare(run, summariser)
    assert len(summariser.requests) == 1 and len(prepared.calls) == 1
    assert prepared.sent.summary == "Two searches so far."


# -- thinking Claude Haiku 5.5 would refuse ----------------------------------------------


def test_the_run_s_own_model_decides_the_thinking_when_no_summariser_is_given():
    run = haiku_run(ContextPolicies(keep_tool_results=1), steps=2)
    assert prepare(run).sent.thinking_left_out == [3]  # step 3 clears the first result: the turn after it goes bare


def test_a_summariser_on_the_rule_s_model_decides_the_thinking_of_a_run_on_another():
    run = haiku_run(ContextPolicies(keep_tool_results=1), steps=2)
    run.config = run.config.model_copy(update={"model": OPUS})
    assert prepare(run).sent.thinking_left_out == []  # Opus takes every block back
    haiku = create_provider("anthropic", HAIKU, **QUIET)
    assert prepare(run, haiku).sent.thinking_left_out == [3]


def test_the_whole_history_goes_as_it_is_to_a_model_without_the_rule():
    run = haiku_run(ContextPolicies(keep_tool_results=1), steps=3)
    run.config = run.config.model_copy(update={"policies": None})
    assert whole_history(run, "anthropic", OPUS) is None
    assert whole_history(run, "anthropic", HAIKU).thinking_left_out == [5]
    assert whole_history(haiku_run(None, steps=2), "anthropic", HAIKU) is None  # nothing was ever shaped


def test_a_redactor_after_the_policies_does_not_cost_a_turn_its_thinking():
    """The redactor masks the prompt's address in every request alike: the prefix a turn was made on still holds."""
    prompt = "Largest city in my country? Reply to ada@example.com"
    masked = haiku_run(ContextPolicies(keep_tool_results=1), steps=3, prompt=prompt, hooks=["redact"])
    assert all("[email]" in str(s.hook_effects[0].after) for s in masked.steps)  # each request went masked
    assert [s.sent.thinking_left_out for s in masked.steps] == [[], [], [3]]


POLICIES = [
    ContextPolicies(keep_tool_results=1),
    ContextPolicies(drop_turns_older_than=2),
    ContextPolicies(summarize_older_than=2),
    None,
]


@pytest.mark.parametrize("policies", POLICIES, ids=["keep", "drop", "summarise", "turned-off"])
def test_the_line_before_a_step_names_the_turns_that_step_then_sends_without_thinking(policies):
    run = haiku_run(ContextPolicies(keep_tool_results=1) if policies is None else policies, steps=3)
    run.config = run.config.model_copy(update={"policies": policies})
    for _ in range(2):
        note = thinking_note(run, "anthropic", HAIKU)
        step_haiku(run)
        left_out = run.steps[-1].sent.thinking_left_out if run.steps[-1].sent is not None else []
        named = re.search(r"\(message ([\d, ]+)\)", note).group(1) if note else None
        assert named == (", ".join(map(str, left_out)) or None), (note, left_out)

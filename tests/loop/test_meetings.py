"""Features where they meet, at their exact limits, and both halves of each rule: the loop guard beside a mock rule,
a token breakpoint hit exactly, identical calls in another key order, conditions on numbers and booleans, two
rules on one call, and tools withheld and then given back."""

from __future__ import annotations

import pytest

from agentcore import toolbox
from agentcore.hooks.specs import MockRule
from agentcore.loop import Agent
from agentcore.messages import AssistantMessage, ToolCall
from agentcore.providers.base import ModelRequest
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run, RunConfig

WEATHER = toolbox.get_tools("get_weather")


def call(n: int, **arguments) -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall(id=f"c{n}", name="get_weather", arguments=arguments),))


class Seen(ScriptedProvider):
    """A replay that keeps each request's tool_choice."""

    def __init__(self, turns: list[AssistantMessage]) -> None:
        super().__init__(replay=turns)
        self.choices: list[str] = []

    def complete(self, request: ModelRequest, on_text=None):
        self.choices.append(request.tool_choice)
        return super().complete(request, on_text)


def played(turns: list[AssistantMessage], **config) -> tuple[Run, Seen]:
    provider = Seen(turns)
    run = Run.start("Weather?", RunConfig(max_steps=len(turns), **config))
    Agent(provider, WEATHER).run(run)
    return run, provider


def sources(run: Run) -> list[str]:
    return [t.source for s in run.steps for t in s.tool_runs]


def test_the_guard_answers_a_repeat_of_a_mocked_call_with_the_mocks_result():
    rule = MockRule(tool="get_weather", when=["$.city=Paris"], result="mocked sunshine")
    turns = [call(1, city="Paris"), call(2, city="Paris"), AssistantMessage(content="ok")]
    run, _ = played(turns, loop_guard="guard", mocks=[rule])
    assert sources(run) == ["mocked", "repeat"]  # the guard comes before the mock rules: it answers the repeat
    assert run.messages[4].content.startswith("mocked sunshine") and "Loop guard" in run.messages[4].content


def test_identical_calls_in_another_key_order_are_one_call_to_the_guard_and_to_a_repeat_breakpoint():
    turns = [call(1, city="Paris", unit="c"), call(2, unit="c", city="Paris"), AssistantMessage(content="ok")]
    run, _ = played(turns, loop_guard="guard")
    assert sources(run) == ["ran", "repeat"]
    run, _ = played(turns, loop_guard="off", breakpoints=["repeat"])
    assert run.paused and run.halt.breakpoint == "repeat" and run.halt.step == 2
    different = [call(1, city="Paris", unit="c"), call(2, city="Paris", unit="f"), AssistantMessage(content="ok")]
    run, _ = played(different, loop_guard="guard")
    assert sources(run) == ["ran", "ran"]


def test_a_token_breakpoint_fires_when_the_total_reaches_it_exactly_and_not_before():
    turns = [call(1, city="Paris"), call(2, city="Rome"), AssistantMessage(content="ok")]
    whole, _ = played(turns)
    after_one = whole.steps[0].usage.total_tokens
    at, _ = played(turns, breakpoints=[f"tokens:{after_one}"])
    assert at.paused and at.halt.step == 2 and at.halt.point == "before_model"
    above, _ = played(turns, breakpoints=[f"tokens:{after_one + 1}"])
    assert above.halt is None or above.halt.step != 2  # one token short of the limit: step 2 goes on


@pytest.mark.parametrize(
    ("condition", "arguments", "holds"),
    [
        ("$.n=1", {"n": 1}, True),
        ("$.n=1", {"n": 1.0}, False),  # a float is not the integer written
        ("$.n=1.0", {"n": 1.0}, True),
        ("$.flag=true", {"flag": True}, True),
        ("$.flag=true", {"flag": "true"}, True),  # the text as written matches a string
        ("$.flag=true", {"flag": 1}, False),  # 1 is no boolean
        ("$.flag=false", {"flag": 0}, False),
        ("$.city~^Pa", {"city": "Paris"}, True),
        ("$.city~^Pa", {"city": "Rome"}, False),
        ("$.city=Paris", {}, False),  # no value at the path
    ],
)
def test_a_condition_on_numbers_booleans_and_text_holds_on_its_own_type_only(condition, arguments, holds):
    rule = MockRule(tool="get_weather", when=[condition], result="x")
    assert rule.matches("get_weather", arguments) is holds


def test_of_two_rules_that_match_one_call_the_first_answers_it():
    first = MockRule(tool="get_weather", when=["$.city=Paris"], result="first")
    second = MockRule(tool="get_weather", result="second")
    turns = [call(1, city="Paris"), call(2, city="Rome"), AssistantMessage(content="ok")]
    run, _ = played(turns, mocks=[first, second])
    assert [run.messages[2].content, run.messages[4].content] == ["first", "second"]


def test_the_guard_withholds_tools_after_repeats_and_gives_them_back_once_the_model_moves_on():
    turns = [
        call(1, city="Paris"),
        call(2, city="Paris"),
        call(3, city="Paris"),  # the second repeat: the next call goes with no tool
        AssistantMessage(content="Paris is sunny."),
        call(5, city="Rome"),  # the model moved on (a new question would bring it here): tools are back
        AssistantMessage(content="done"),
    ]
    run = Run.start("Weather?", RunConfig(max_steps=10, loop_guard="guard"))
    provider = Seen(turns)
    agent = Agent(provider, WEATHER)
    agent.run(run)
    assert run.stop_reason == "answer" and [s.tools_withheld for s in run.steps] == [False, False, False, True]
    assert provider.choices == ["auto", "auto", "auto", "none"]
    from agentcore.messages import UserMessage

    run.append(UserMessage(content="And Rome?"))
    agent.run(run)
    assert provider.choices[4] == "auto" and not run.steps[4].tools_withheld  # given back
    assert sources(run)[-1] == "ran"


# -- a user hook on the request, a multi-turn budget, a guardrail path ---------------------------------------


def test_a_user_hook_that_sets_tool_choice_is_what_the_provider_received_and_what_the_step_records():
    def no_tools(run: Run, request: ModelRequest) -> ModelRequest:
        return request.model_copy(update={"tool_choice": "none"})

    provider = Seen([AssistantMessage(content="no tool then")])
    run = Run.start("Weather?", RunConfig(max_steps=2))
    Agent(provider, WEATHER, before_model=[no_tools]).run(run)
    assert provider.choices == ["none"]
    (effect,) = run.steps[0].hook_effects
    assert (effect.hook, effect.kind, effect.before, effect.after) == ("no_tools", "tool_choice", "auto", "none")
    assert not run.steps[0].tools_withheld  # the guard did not withhold them: the hook chose
    provider = Seen([AssistantMessage(content="tools offered")])
    run = Run.start("Weather?", RunConfig(max_steps=2))
    Agent(provider, WEATHER, before_model=[lambda run, request: request]).run(run)
    assert provider.choices == ["auto"] and run.steps[0].hook_effects == []


def test_a_multi_turn_test_whose_first_turn_uses_up_its_budget_still_sends_the_next_turn_with_a_fresh_one():
    from agentcore.testing.pinned import PinnedTest
    from agentcore.testing.runner import play

    test = PinnedTest(name="budget", prompt="Weather in Paris?", tools=["get_weather"], max_steps=2, turns=["Rome?"])
    turns = [call(1, city="Paris"), call(2, city="Lyon"), call(3, city="Rome"), AssistantMessage(content="Rome: rain")]
    run = Run.start(test.prompt, RunConfig(max_steps=test.max_steps, loop_guard="off"))
    play(Agent(ScriptedProvider(replay=turns), WEATHER), run, test)
    users = [m.content for m in run.messages if m.role == "user"]
    assert users == ["Weather in Paris?", "Rome?"]  # the first turn ran out of steps: the second was still sent
    assert len(run.steps) == 4 and run.stop_reason == "answer"  # two steps each: the second turn had its own two
    short = Run.start(test.prompt, RunConfig(max_steps=test.max_steps, loop_guard="off"))
    endless = [call(n, city=f"c{n}") for n in range(1, 6)]
    play(Agent(ScriptedProvider(replay=endless), WEATHER), short, test)
    assert len(short.steps) == 4 and short.stop_reason == "max_steps"  # and no more than its own two


@pytest.mark.parametrize(
    ("path", "refused"),
    [
        ("notes/../../etc/passwd", True),  # climbs out through a folder name
        ("notes\\..\\..\\secrets.txt", True),
        ("..", True),
        ("/etc/passwd", True),
        ("notes/..hidden/file.txt", False),  # a folder whose name starts with two dots stays inside
        ("notes/a..b.txt", False),
        ("notes/today.md", False),
    ],
)
def test_the_guardrail_refuses_a_path_that_climbs_out_and_only_that(path, refused, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTCORE_SANDBOX", str(tmp_path))
    turns = [
        AssistantMessage(tool_calls=(ToolCall(id="c1", name="read_file", arguments={"path": path}),)),
        AssistantMessage(content="ok"),
    ]
    run = Run.start("Read it", RunConfig(max_steps=2, hooks=["guardrail"]))
    Agent(ScriptedProvider(replay=turns), toolbox.get_tools("read_file")).run(run)
    result = run.messages[2]
    assert (run.steps[0].tool_runs[0].source == "hook_refused") is refused
    assert ("climbs out of the sandbox" in result.content) is refused

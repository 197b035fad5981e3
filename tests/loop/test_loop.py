"""The loop: phases, steps, every stop reason, errors as data, concurrency, decisions, forks, events."""

from __future__ import annotations

import threading

import pytest
from pydantic import BaseModel

from agentcore import (
    Agent,
    AssistantMessage,
    ProviderError,
    Run,
    RunConfig,
    ScriptedProvider,
    ToolCall,
    ToolDecision,
    ToolMessage,
    UserMessage,
    resolve_schema,
    tool,
)
from agentcore.errors import MessageListError, UsageError
from agentcore.toolbox import TOOLBOX


def reply(*calls: ToolCall, text: str | None = None) -> AssistantMessage:
    return AssistantMessage(content=text, tool_calls=calls)


def replay(*turns: AssistantMessage) -> ScriptedProvider:
    return ScriptedProvider(replay=list(turns))


class FailingProvider:
    """Fails the first `failures` calls, then answers."""

    name = "failing"
    model = "m"

    def __init__(self, failures: int = 1, error: Exception | None = None) -> None:
        self.failures = failures
        self.error = error or ProviderError("overloaded", provider="failing", status=529, type="overloaded_error")
        self.calls = 0

    def complete(self, request, on_text=None):
        from agentcore import ModelResponse

        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return ModelResponse(message=AssistantMessage(content="recovered"))


def test_answer_stops_the_run_after_one_model_phase():
    agent = Agent(replay(reply(text="hello")))
    run = agent.run(Run.start("hi"))
    assert run.stop_reason == "answer"
    assert run.final_answer() == "hello"
    assert len(run.steps) == 1 and run.steps[0].message_count == 1
    assert run.next_phase == "done"


def test_phases_run_alone_and_step_does_both():
    calc = ToolCall(id="c1", name="calculator", arguments={"expression": "2+2"})
    agent = Agent(replay(reply(calc), reply(text="4")), [TOOLBOX["calculator"]])
    run = Run.start("2+2?")
    assert run.next_phase == "model"
    assert agent.model_phase(run) == "tools"
    assert isinstance(run.messages[-1], AssistantMessage)
    with pytest.raises(UsageError, match="model phase cannot run now"):
        agent.model_phase(run)
    assert agent.tools_phase(run) == "model"
    assert run.messages[-1].content == "2+2 = 4"
    with pytest.raises(UsageError, match="no tool calls are waiting"):
        agent.tools_phase(run)
    assert agent.step(run) == "done"
    assert run.stop_reason == "answer" and len(run.steps) == 2


def test_max_steps_never_ends_with_unanswered_tool_calls():
    agent = Agent(ScriptedProvider(scenario="runaway"), [TOOLBOX["search_notes"]])
    run = agent.run(Run.start("loop", RunConfig(max_steps=3)))
    assert run.stop_reason == "max_steps"
    assert len(run.steps) == 3
    assert isinstance(run.messages[-1], ToolMessage)
    with pytest.raises(UsageError, match="step budget of 3"):
        agent.model_phase(run)


class Verdict(BaseModel):
    topic: str
    score: int


def test_structured_answer_is_validated_and_a_bad_one_goes_back_as_data():
    bad = ToolCall(id="f1", name="final_answer", arguments={"topic": "x"})
    good = ToolCall(id="f2", name="final_answer", arguments={"topic": "x", "score": 3})
    agent = Agent(replay(reply(bad), reply(good)))
    run = Run.start("judge", RunConfig(final_answer_schema=resolve_schema(Verdict)))
    assert "final_answer" in [s.name for s in run.tool_specs]
    agent.run(run)
    assert run.stop_reason == "structured"
    assert run.final_output == {"topic": "x", "score": 3}
    first = run.messages[2]
    assert first.is_error and "score" in first.content and "schema" in first.content


def test_provider_error_stops_the_step_keeps_the_run_and_retry_continues():
    provider = FailingProvider(failures=1)
    agent = Agent(provider)
    run = Run.start("hi")
    before = list(run.messages)
    agent.run(run)
    assert run.stop_reason == "error"
    assert run.error == "failing 529 overloaded_error: overloaded"
    assert run.messages == before and run.steps == []
    assert run.next_phase == "model"
    agent.run(run)  # retry
    assert run.stop_reason == "answer" and run.error is None


def test_an_unexpected_provider_exception_is_an_error_not_a_crash():
    agent = Agent(FailingProvider(failures=1, error=KeyError("choices")))
    run = agent.run(Run.start("hi"))
    assert run.stop_reason == "error" and "KeyError" in run.error


def test_cancel_takes_effect_between_phases():
    cancel = threading.Event()
    agent = Agent(ScriptedProvider(scenario="runaway"), [TOOLBOX["search_notes"]])

    def stop_after_first_model_phase(event):
        if event.kind == "phase_finished" and event.phase == "model":
            cancel.set()

    agent.observers.append(stop_after_first_model_phase)
    run = agent.run(Run.start("loop"), cancel)
    assert run.stop_reason == "cancelled"
    assert run.next_phase == "tools"  # resumable: the pending calls are still there
    cancel.clear()
    agent.observers.clear()
    run.config.max_steps = 2
    agent.run(run, cancel)
    assert run.stop_reason == "max_steps"


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (ToolCall(id="c", name="nope", arguments={}), "unknown_tool"),
        (ToolCall(id="c", name="calculator", raw_arguments="{not json"), "invalid_json"),
        (ToolCall(id="c", name="calculator", arguments={"expr": "1"}), "invalid_arguments"),
        (ToolCall(id="c", name="calculator", arguments={"expression": "1/0"}), "exception"),
    ],
)
def test_tool_failures_are_data_for_the_model(call, error):
    agent = Agent(replay(reply(call), reply(text="ok")), [TOOLBOX["calculator"]])
    run = agent.run(Run.start("x"))
    result = run.messages[2]
    assert isinstance(result, ToolMessage) and result.is_error
    assert run.steps[0].tool_runs[0].error == error
    assert run.stop_reason == "answer"


def test_a_tool_timeout_is_data_for_the_model():
    @tool(timeout_s=0.1)
    def hang() -> str:
        """Hangs."""
        threading.Event().wait(3)
        return "late"

    agent = Agent(replay(reply(ToolCall(id="c", name="hang")), reply(text="ok")), [hang])
    run = agent.run(Run.start("x"))
    assert run.messages[2].is_error and "timed out" in run.messages[2].content


def barrier_tools(parties: int, sequential: bool = False, timeout: float = 5):
    barrier = threading.Barrier(parties, timeout=timeout)

    @tool(sequential=sequential)
    def meet(n: int) -> str:
        """Waits at a barrier: succeeds only if all calls run at the same time."""
        barrier.wait()
        return f"met {n}"

    return meet


def three_calls(name: str = "meet") -> AssistantMessage:
    return reply(*(ToolCall(id=f"c{i}", name=name, arguments={"n": i}) for i in range(3)))


def test_calls_of_one_turn_overlap_and_results_keep_call_order():
    agent = Agent(replay(three_calls(), reply(text="done")), [barrier_tools(3)])
    run = agent.run(Run.start("x"))
    results = run.messages[2:5]
    assert [m.tool_call_id for m in results] == ["c0", "c1", "c2"]
    assert [m.content for m in results] == ["met 0", "met 1", "met 2"]  # the barrier was passed: they overlapped
    assert not any(m.is_error for m in results)


@pytest.mark.parametrize("how", ["run_setting", "sequential_tool"])
def test_concurrency_off_or_a_sequential_tool_runs_calls_one_at_a_time(how):
    meet = barrier_tools(2, sequential=how == "sequential_tool", timeout=0.3)
    config = RunConfig(concurrency=how != "run_setting")
    two = reply(*(ToolCall(id=f"c{i}", name="meet", arguments={"n": i}) for i in range(2)))
    agent = Agent(replay(two, reply(text="done")), [meet])
    run = agent.run(Run.start("x", config))
    # alone at a barrier of two, each call times out: proof that they did not overlap
    assert all(m.is_error for m in run.messages[2:4])


def test_decisions_deny_hand_typed_result_and_edited_arguments():
    calls = (
        ToolCall(id="a", name="calculator", arguments={"expression": "1+1"}),
        ToolCall(id="b", name="calculator", arguments={"expression": "2+2"}),
        ToolCall(id="c", name="calculator", arguments={"expression": "3+3"}),
    )
    agent = Agent(replay(reply(*calls), reply(text="ok")), [TOOLBOX["calculator"]])
    run = Run.start("x")
    agent.model_phase(run)
    agent.tools_phase(
        run,
        {
            "a": ToolDecision(action="deny", reason="not now"),
            "b": ToolDecision(action="result", content="typed by hand"),
            "c": ToolDecision(action="edit", arguments={"expression": "10*10"}),
        },
    )
    a, b, c = run.messages[2:5]
    assert a.is_error and "denied" in a.content and "not now" in a.content
    assert (b.content, b.is_error) == ("typed by hand", False)
    assert c.content == "10*10 = 100"
    assert run.messages[1].tool_calls[2].arguments == {"expression": "10*10"}
    assert [r.source for r in run.steps[0].tool_runs] == ["denied", "typed", "edited"]


def paused_on(*calls: ToolCall) -> tuple[Agent, Run]:
    """An agent over the calculator and a run paused before its tools, waiting on `calls`."""
    agent = Agent(replay(reply(*calls), reply(text="ok")), [TOOLBOX["calculator"]])
    run = Run.start("x", RunConfig(pause_before_tools=True))
    agent.step(run)
    assert run.paused
    return agent, run


def test_each_decision_of_a_person_is_recorded_with_the_models_original_arguments():
    calc = [ToolCall(id=c, name="calculator", arguments={"expression": f"{n}+{n}"}) for n, c in enumerate("abcde")]
    agent, run = paused_on(*calc)
    agent.tools_phase(
        run,
        {
            "b": ToolDecision(action="edit", arguments={"expression": "10*10"}),
            "c": ToolDecision(action="deny", reason="not now"),
            "d": ToolDecision(action="result", content="typed by hand"),
            "e": ToolDecision(action="edit", arguments={"expression": "4+4"}),  # as the model asked: no edit
        },
    )
    runs = run.steps[0].tool_runs
    assert [t.source for t in runs] == ["approved", "edited", "denied", "typed", "approved"]
    assert [t.original_arguments for t in runs] == [None, {"expression": "1+1"}, None, None, None]
    assert run.messages[1].tool_calls[1].arguments == {"expression": "10*10"}  # the edited call is what ran
    assert run.messages[3].content == "10*10 = 100"
    assert runs[1].decision == 'edited by a person; the model asked {"expression": "1+1"}'
    assert all(t.by_person for t in runs)


def test_an_edit_of_arguments_that_were_not_json_keeps_the_models_text():
    agent, run = paused_on(ToolCall(id="a", name="calculator", raw_arguments='{"expression": 2+'))
    agent.tools_phase(run, {"a": ToolDecision(action="edit", arguments={"expression": "2+2"})})
    (t,) = run.steps[0].tool_runs
    assert (t.source, t.original_raw_arguments, t.original_arguments) == ("edited", '{"expression": 2+', {})
    assert t.original_arguments_text == '{"expression": 2+' and run.messages[-1].content == "2+2 = 4"


def test_a_paused_run_stepped_on_without_decisions_records_its_calls_as_approved():
    agent, run = paused_on(ToolCall(id="a", name="calculator", arguments={"expression": "1+1"}))
    agent.step(run)
    assert [t.source for t in run.steps[0].tool_runs] == ["approved"]


@pytest.mark.parametrize("decisions", [None, {}])
def test_calls_that_no_person_was_shown_are_recorded_as_ran(decisions):
    calc = ToolCall(id="a", name="calculator", arguments={"expression": "1+1"})
    agent = Agent(replay(reply(calc), reply(text="ok")), [TOOLBOX["calculator"]])
    run = Run.start("x")
    agent.step(run, decisions)  # the model phase made the call and the same step ran it: nobody saw it
    t = run.steps[0].tool_runs[0]
    assert (t.source, t.original_arguments, t.by_person, t.decision) == ("ran", None, False, None)


def test_an_approved_or_edited_final_answer_ends_the_run_with_it():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    answer = ToolCall(id="f", name="final_answer", arguments={"n": 1})
    agent = Agent(replay(reply(answer)))
    run = Run.start("x", RunConfig(pause_before_tools=True, final_answer_schema=schema))
    agent.step(run)
    agent.tools_phase(run, {"f": ToolDecision(action="edit", arguments={"n": 2})})
    assert run.stop_reason == "structured" and run.final_output == {"n": 2}
    assert run.steps[0].tool_runs[0].original_arguments == {"n": 1}


def test_an_edited_list_that_a_provider_would_reject_is_refused_before_sending():
    provider = FailingProvider(failures=0)
    agent = Agent(provider)
    run = Run.start("x")
    run.messages.append(ToolMessage(tool_call_id="ghost", name="f", content="r"))
    with pytest.raises(MessageListError, match="message 1: tool result for 'ghost'"):
        agent.model_phase(run)
    assert provider.calls == 0 and run.steps == []


def test_a_message_replaced_in_a_list_already_checked_is_checked_again_before_sending():
    agent = Agent(ScriptedProvider(scenario="runaway"), [TOOLBOX["search_notes"]])
    run = Run.start("loop", RunConfig(max_steps=4))
    agent.step(run)  # the list the loop made is known valid
    provider = FailingProvider(failures=0)
    agent = Agent(provider)
    answered = run.messages[-1]
    run.messages[-1] = ToolMessage(tool_call_id="ghost", name=answered.name, content=answered.content)
    with pytest.raises(MessageListError, match="tool result for 'ghost'"):
        agent.model_phase(run)
    assert provider.calls == 0 and len(run.steps) == 1
    run.messages[-1] = answered  # the list as the loop left it goes on
    agent.model_phase(run)
    assert provider.calls == 1


def test_fork_at_a_step_keeps_the_original():
    agent = Agent(ScriptedProvider(scenario="runaway"), [TOOLBOX["search_notes"]])
    run = agent.run(Run.start("loop", RunConfig(max_steps=4)))
    fork = run.fork(3)
    assert fork.parent.run_id == run.id and fork.parent.step == 3
    assert len(fork.steps) == 2 and len(fork.messages) == run.steps[2].message_count
    assert len(run.steps) == 4  # untouched
    agent.run(fork)
    assert fork.stop_reason == "max_steps" and len(fork.steps) == 4 and fork.id != run.id


def test_fork_with_edited_messages_keeps_steps_before_the_edit():
    agent = Agent(ScriptedProvider(scenario="weather"), [TOOLBOX["get_weather"]])
    run = agent.run(Run.start("Weather in Paris?"))
    edited = list(run.messages)
    edited[2] = edited[2].model_copy(update={"content": '{"city": "Paris", "temperature": 99}'})
    fork = run.fork_with_messages(edited)
    assert len(fork.steps) == 1 and fork.messages[2].content.endswith("99}")
    assert fork.parent.step == 2  # step 2 read the edited result: the branch makes it again
    assert run.fork(2).parent == fork.parent and len(run.fork(2).steps) == len(fork.steps)
    assert run.messages[2].content != fork.messages[2].content


def test_a_result_a_person_changed_is_recorded_as_edited_with_what_the_tool_returned():
    calc = [ToolCall(id=c, name="calculator", arguments={"expression": f"{n}+{n}"}) for n, c in enumerate("abc")]
    agent, run = paused_on(*calc)
    agent.tools_phase(run, {"b": ToolDecision(action="deny", reason="not now")})
    edited = list(run.messages)
    for i in (2, 3):  # the approved call's result and the denied call's
        edited[i] = edited[i].model_copy(update={"content": "by hand", "is_error": False})
    assert not run.edit_forks(edited)  # no model call read them yet: the run changes in place
    run.replace_messages(edited)
    a, b, c = run.steps[0].tool_runs
    assert (a.source, a.original_content) == ("edited", "0+0 = 0")  # the tool ran: its own output kept
    assert (b.source, b.original_content) == ("typed", None)  # no tool returned a denial: the result is the person's
    assert (c.source, c.original_content) == ("approved", None)
    assert run.messages[2].content == "by hand"
    stored = Run.model_validate_json(run.model_dump_json())
    assert stored.steps[0].tool_runs[0].original_content == "0+0 = 0"


def test_a_fork_over_a_changed_result_records_it_as_edited():
    agent = Agent(ScriptedProvider(scenario="weather"), [TOOLBOX["get_weather"]])
    run = agent.run(Run.start("Weather in Paris?"))
    edited = list(run.messages)
    edited[2] = edited[2].model_copy(update={"content": '{"city": "Paris", "temperature": 99}'})
    fork = run.fork_with_messages(edited)
    assert fork.steps[0].tool_runs[0].source == "edited"
    assert fork.steps[0].tool_runs[0].original_content == run.messages[2].content
    assert run.steps[0].tool_runs[0].source == "ran"  # the parent keeps its own record


def test_observers_see_every_event_in_order():
    seen = []
    agent = Agent(ScriptedProvider(scenario="weather"), [TOOLBOX["get_weather"]], observers=[seen.append])
    agent.run(Run.start("Weather in Paris and Rome?"))
    kinds = [e.kind for e in seen]
    assert kinds[:3] == ["step_started", "phase_started", "text_delta"]
    assert kinds.count("tool_started") == kinds.count("tool_finished") == 2
    assert kinds.count("step_finished") == 2 and kinds[-1] == "run_finished"
    streamed = "".join(e.text for e in seen if e.kind == "text_delta" and e.step == 1)
    assert streamed == "I'll look up each city at once."


def test_user_can_continue_after_an_answer():
    agent = Agent(replay(reply(text="one"), reply(text="two")))
    run = agent.run(Run.start("first"))
    run.messages.append(UserMessage(content="second"))
    assert run.next_phase == "model"
    agent.run(run)
    assert run.final_answer() == "two" and len(run.steps) == 2


def test_a_run_that_pauses_before_tools_stops_each_step_after_its_model_phase():
    calc = ToolCall(id="c1", name="calculator", arguments={"expression": "2+2"})
    agent = Agent(replay(reply(calc), reply(text="4")), [TOOLBOX["calculator"]])
    run = Run.start("2+2?", RunConfig(pause_before_tools=True))
    assert agent.step(run) == "tools" and run.paused
    assert agent.run(run) is run and run.next_phase == "tools"  # run to end stops at the pause too
    assert agent.step(run) == "model"  # the next step runs the waiting tools, and only them
    assert run.messages[-1].content == "2+2 = 4" and len(run.steps) == 1
    assert agent.step(run) == "done" and run.stop_reason == "answer"


def test_the_run_answers_its_budget_and_a_raised_budget_lets_it_go_on():
    agent = Agent(ScriptedProvider(scenario="runaway"), [TOOLBOX["search_notes"]])
    run = agent.run(Run.start("loop", RunConfig(max_steps=2)))
    assert (run.budget_left, run.can_call_model, run.finished) == (0, False, True)
    run.config.max_steps = 3
    assert (run.budget_left, run.can_call_model, run.finished) == (1, True, False)
    agent.run(run)
    assert run.stop_reason == "max_steps" and len(run.steps) == 3


def test_a_run_started_by_an_agent_records_the_agents_tools():
    from agentcore.accounting import account
    from agentcore.transcript import to_dict

    calc = ToolCall(id="c1", name="calculator", arguments={"expression": "2+2"})
    agent = Agent(replay(reply(calc), reply(text="4")), [TOOLBOX["calculator"]])
    run = agent.run(Run.start("2+2?"))
    assert [s.name for s in run.config.tools] == ["calculator"]
    assert [t["name"] for t in to_dict(run)["config"]["tools"]] == ["calculator"]
    assert account(run).steps[0].composition["tool_specs"] > 0


def test_a_run_with_its_own_tools_keeps_them():
    agent = Agent(replay(reply(text="hi")), [TOOLBOX["calculator"], TOOLBOX["get_weather"]])
    run = agent.run(Run.start("hi", RunConfig(tools=[TOOLBOX["get_weather"].spec()])))
    assert [s.name for s in run.config.tools] == ["get_weather"]
    assert [s.name for s in run.tool_specs] == ["get_weather"]


def test_each_step_records_the_provider_and_model_that_answered_it():
    calc = ToolCall(id="c1", name="calculator", arguments={"expression": "2+2"})
    run = Run.start("2+2?")
    Agent(replay(reply(calc)), [TOOLBOX["calculator"]]).step(run)
    second = ScriptedProvider(scenario="weather")
    Agent(second, [TOOLBOX["calculator"]]).model_phase(run)
    assert [(s.provider, s.model) for s in run.steps] == [("scripted", "replay"), ("scripted", second.model)]


def test_arguments_with_nan_or_infinity_go_back_to_the_model_as_not_json():
    from agentcore.messages import parse_arguments

    call = parse_arguments("c1", "calculator", '{"expression": NaN}')
    assert call.arguments_invalid and call.raw_arguments == '{"expression": NaN}'
    with pytest.raises(ValueError, match="JSON cannot represent"):
        Run(final_output={"score": float("inf")})

"""Hooks around the model call: a user's hook rewrites, refuses, pauses, stops or fails a step, and the record says so."""

from __future__ import annotations

from agentcore import transcript
from agentcore.hooks import Pause, Refuse, Stop
from agentcore.hooks.examples import Guardrail, redact
from agentcore.loop import Agent
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage
from agentcore.providers.base import ModelRequest
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run, RunConfig
from agentcore.tools import tool

ran: list[str] = []


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    ran.append(city)
    return f"looked up {city}"


def weather_turns() -> list[AssistantMessage]:
    call = ToolCall(id="c1", name="lookup", arguments={"city": "Pariss"})
    return [AssistantMessage(content="Looking.", tool_calls=(call,)), AssistantMessage(content="Done.")]


def agent(**hooks) -> Agent:
    return Agent(ScriptedProvider(replay=weather_turns()), [lookup], **hooks)


def start(**config) -> Run:
    ran.clear()
    return Run.start("Weather in Paris?", RunConfig(tools=[lookup.spec()], **config))


def spell_city(run: Run, calls: list[ToolCall]) -> list[ToolCall]:
    return [c.model_copy(update={"arguments": {"city": "Paris"}}) if c.name == "lookup" else c for c in calls]


def test_a_hook_that_rewrites_a_call_runs_the_tool_with_its_arguments_and_the_transcript_keeps_both():
    run = agent(before_tools=[spell_city]).run(start())
    assert ran == ["Paris"] and run.stop_reason == "answer"
    assert run.messages[1].tool_calls[0].arguments == {"city": "Paris"}  # the history shows what ran
    back = transcript.loads(transcript.dumps(run))
    tool_run = back.steps[0].tool_runs[0]
    assert (tool_run.source, tool_run.hook) == ("hook_edited", "spell_city")
    assert tool_run.original_arguments == {"city": "Pariss"}
    effect = back.steps[0].hook_effects[0]
    assert (effect.hook, effect.point) == ("spell_city", "before_tools")
    assert (effect.before, effect.after) == ({"city": "Pariss"}, {"city": "Paris"})
    assert tool_run.badge == "arguments changed by hook spell_city"


def no_paris(run: Run, calls: list[ToolCall]) -> list[ToolCall | Refuse]:
    return [Refuse(c, "Paris is off limits") if "Pariss" in c.arguments.get("city", "") else c for c in calls]


def test_a_hook_that_refuses_a_call_answers_it_with_an_error_the_model_reads_and_the_tool_does_not_run():
    run = agent(before_tools=[no_paris]).run(start())
    assert ran == [] and run.stop_reason == "answer"
    result = next(m for m in run.messages if isinstance(m, ToolMessage))
    assert result.is_error and "refused by no_paris" in result.content and "Paris is off limits" in result.content
    tool_run = run.steps[0].tool_runs[0]
    assert (tool_run.source, tool_run.hook, tool_run.error) == ("hook_refused", "no_paris", "refused_by_hook")
    assert "refused: Paris is off limits" in run.steps[0].hook_effects[0].change


def test_a_hook_that_pauses_names_itself_and_the_next_step_goes_on_without_asking_it_again():
    asked: list[int] = []

    def checkpoint(run: Run, request: ModelRequest) -> ModelRequest | Pause:
        asked.append(len(run.steps))
        return Pause("look before step 2") if len(run.steps) == 1 else request

    a = agent(before_model=[checkpoint])
    run = a.run(start())
    assert run.paused and run.next_phase == "model" and run.stop_reason is None
    assert (run.halt.hook, run.halt.point, run.halt.step) == ("checkpoint", "before_model", 2)
    assert run.halt.words == "paused by hook checkpoint before model: look before step 2"
    assert len(run.steps) == 1 and ran == ["Pariss"]  # the first step is whole
    paused = transcript.loads(transcript.dumps(run))  # a saved paused run resumes where it was
    assert paused.paused and paused.halt == run.halt
    a.step(paused)
    assert paused.stop_reason == "answer" and paused.halt is None and len(paused.steps) == 2
    assert asked == [0, 1]  # it was not asked again for the step it paused


def test_a_hook_that_pauses_after_the_model_waits_before_the_tools_like_pause_before_tools():
    def review(run: Run, message: AssistantMessage) -> AssistantMessage | Pause:
        return Pause("review the calls") if message.tool_calls else message

    a = agent(after_model=[review])
    run = a.run(start())
    assert run.paused and run.next_phase == "tools" and ran == []
    assert run.halt.words == "paused by hook review after model: review the calls"
    a.run(run)  # paused: the run does not go on by itself
    assert ran == []
    a.step(run)
    assert ran == ["Pariss"] and run.steps[0].tool_runs[0].source == "approved"  # a person was asked
    a.run(run)
    assert run.stop_reason == "answer"


def test_a_hook_that_stops_ends_the_run_with_its_reason():
    def budget(run: Run, request: ModelRequest) -> ModelRequest | Stop:
        return Stop("one call is enough") if run.steps else request

    run = agent(before_model=[budget]).run(start())
    assert run.stop_reason == "stopped" and len(run.steps) == 1
    assert run.halt.words == "stopped by hook budget before model: one call is enough"


def test_a_hook_that_raises_fails_the_step_like_a_provider_error_and_keeps_the_run():
    def broken(run: Run, calls: list[ToolCall]) -> list[ToolCall]:
        raise RuntimeError("rule file\nmissing")

    run = agent(before_tools=[broken]).run(start())
    assert run.stop_reason == "error" and run.error == "hook broken (before_tools): RuntimeError: rule file missing"
    assert [m.role for m in run.messages] == ["user", "assistant"] and len(run.steps) == 1  # the model phase is kept
    assert ran == [] and run.next_phase == "tools"
    agent().run(run)  # without the broken hook the run goes on from where it failed
    assert ran == ["Pariss"] and run.stop_reason == "answer"


def test_a_before_model_hook_that_raises_leaves_no_step_and_a_retry_goes_on():
    def broken(run: Run, request: ModelRequest) -> ModelRequest:
        raise ValueError("no")

    run = agent(before_model=[broken]).run(start())
    assert run.stop_reason == "error" and run.error == "hook broken (before_model): ValueError: no"
    assert run.steps == [] and len(run.messages) == 1


def test_a_hook_that_gives_back_the_wrong_kind_fails_the_step_in_one_line():
    run = agent(before_tools=[lambda run, calls: calls[:0]]).run(start())
    assert run.stop_reason == "error" and "one item per pending call" in run.error and "\n" not in run.error


def test_the_redactor_masks_what_is_sent_and_the_run_keeps_the_original():
    provider = ScriptedProvider(replay=[AssistantMessage(content="Noted.")])
    run = Run.start("Mail bob@example.com, card 4111 1111 1111 1111.")
    Agent(provider, before_model=[redact]).run(run)
    sent = run.steps[0].wire.request["messages"][0]["content"]
    assert sent == "Mail [email], card [card number]."
    assert run.messages[0] == UserMessage(content="Mail bob@example.com, card 4111 1111 1111 1111.")
    effect = run.steps[0].hook_effects[0]
    assert (effect.hook, effect.change) == ("redact", "request: message 0 changed")
    assert effect.after["0"]["content"] == sent


def test_the_guardrail_refuses_personal_data_in_arguments_and_lets_the_rest_run():
    call = ToolCall(id="c1", name="lookup", arguments={"city": "alice@example.org"})
    turns = [AssistantMessage(tool_calls=(call,)), AssistantMessage(content="ok")]
    run = start()
    Agent(ScriptedProvider(replay=turns), [lookup], before_tools=[Guardrail()]).run(run)
    assert ran == [] and run.steps[0].tool_runs[0].source == "hook_refused"
    assert run.steps[0].tool_runs[0].hook == "guardrail"
    run = agent().run(start(hooks=["guardrail"]))
    assert ran == ["Pariss"] and run.steps[0].tool_runs[0].source == "ran"


def test_hooks_run_after_the_built_in_ones_and_those_leave_no_hook_effect():
    tools = [lookup]
    config = RunConfig(tools=[lookup.spec()], loop_guard="guard")
    same = ToolCall(id="c1", name="lookup", arguments={"city": "Rome"})
    again = ToolCall(id="c2", name="lookup", arguments={"city": "Rome"})
    turns = [AssistantMessage(tool_calls=(same,)), AssistantMessage(tool_calls=(again,)), AssistantMessage(content="x")]
    seen: list[list[str]] = []

    def watch(run: Run, calls: list[ToolCall]) -> list[ToolCall]:
        seen.append([c.id for c in calls])
        return calls

    ran.clear()
    run = Agent(ScriptedProvider(replay=turns), tools, before_tools=[watch]).run(Run.start("x", config))
    assert seen == [["c1"]]  # the loop guard answered the repeat first: no later hook sees it
    assert [t.source for s in run.steps for t in s.tool_runs] == ["ran", "repeat"]
    assert all(not s.hook_effects for s in run.steps) and run.steps[1].tool_runs[0].hook is None


def test_the_cli_runs_the_example_hooks_by_name_and_records_them_in_the_transcript(tmp_path, capsys):
    from agentcore.cli.main import main

    out = tmp_path / "t.json"
    prompt = "What is the weather in Paris? Write to bob@example.com"
    args = ["run", prompt, "--provider", "scripted", "--scenario", "weather", "--no-db", "--out", str(out)]
    assert main([*args, "--hook", "redact", "--hook", "guardrail"]) == 0
    printed = capsys.readouterr().out
    assert "⚑ hook redact before model: request: message 0 changed" in printed
    run = transcript.load(out)
    assert run.config.hooks == ["redact", "guardrail"]
    assert run.steps[0].wire.request["messages"][0]["content"] == "What is the weather in Paris? Write to [email]"
    assert run.messages[0].content == prompt
    assert main(["show", str(out)]) == 0
    assert 'hook redact before model: request: message 0 changed: {"0":' in capsys.readouterr().out


def test_the_cli_guardrail_refuses_a_replayed_call_and_an_unknown_hook_is_one_line(tmp_path, capsys):
    from agentcore.cli.main import main

    call = ToolCall(id="c1", name="get_weather", arguments={"city": "alice@example.org"})
    source = Run.start("Weather?", RunConfig(tools=[lookup.spec()], hooks=["guardrail"]))
    answered = ToolMessage(tool_call_id="c1", name="get_weather", content="sunny")
    source.messages += [AssistantMessage(tool_calls=(call,)), answered, AssistantMessage(content="Refused, then.")]
    path = tmp_path / "source.json"
    path.write_text(transcript.dumps(source))
    out = tmp_path / "t.json"
    assert main(["run", "--replay", str(path), "--tools", "get_weather", "--no-db", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "⚑ hook guardrail before tools: call c1 (get_weather) refused" in printed
    assert "refused by guardrail" in printed  # the result the model reads
    run = transcript.load(out)
    assert [(t.source, t.hook) for t in run.steps[0].tool_runs] == [("hook_refused", "guardrail")]
    assert main(["run", "x", "--provider", "scripted", "--hook", "nosuch", "--no-db"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown hook 'nosuch'" in err and "guardrail" in err


def test_a_hook_that_stops_after_a_plain_answer_ends_the_run_stopped_and_names_itself():
    def veto(run: Run, message: AssistantMessage) -> AssistantMessage | Stop:
        return Stop("the answer names a person") if not message.tool_calls else message

    run = agent(after_model=[veto]).run(start())
    assert run.stop_reason == "stopped" and run.finished and run.messages[-1].content == "Done."
    assert run.halt.words == "stopped by hook veto after model: the answer names a person"
    assert transcript.loads(transcript.dumps(run)).halts == [run.halt]


def test_a_pause_after_a_plain_answer_has_no_tools_to_wait_before_and_the_run_ends_with_its_answer():
    def look(run: Run, message: AssistantMessage) -> AssistantMessage | Pause:
        return Pause("look at the answer") if not message.tool_calls else message

    run = agent(after_model=[look]).run(start())
    assert run.stop_reason == "answer" and not run.paused and run.halt is None


def test_a_hook_that_raises_with_a_secret_in_its_message_fails_the_step_without_it():
    from agentcore.secrets import forget_secrets, register_secret

    secret = "sk-hook-secret-0123456789abcdef"
    register_secret(secret)

    def leaky(run: Run, request: ModelRequest) -> ModelRequest:
        raise RuntimeError(f"cannot reach https://vault.example.com/?token={secret}")

    try:
        run = agent(before_model=[leaky]).run(start())
        assert run.stop_reason == "error" and run.error.startswith("hook leaky (before_model): RuntimeError")
        assert secret not in run.error and "[redacted]" in run.error
    finally:
        forget_secrets()


def test_a_pause_by_one_of_two_hooks_of_one_name_goes_on_past_that_hook_alone():
    asked: list[str] = []

    def hook(label: str, pauses: bool):
        def check(run: Run, value):
            asked.append(label)
            return Pause(f"{label} wants a look") if pauses and label not in asked[:-1] else value

        check.__name__ = "check"  # two hooks of one name, as two lambdas or two instances of one class are
        return check

    a = agent(before_model=[hook("a", False), hook("b", True)], before_tools=[hook("c", False), hook("d", True)])
    run = a.run(start())
    assert run.paused and run.halt.hook == "check#2" and run.halt.point == "before_model"
    a.step(run)  # went on past b, asking a again
    assert run.paused and run.halt.hook == "check#2" and run.halt.point == "before_tools"
    a.run(run)
    assert run.paused  # a paused run does not go on by itself
    a.step(run)
    a.run(run)
    assert run.stop_reason == "answer" and ran == ["Pariss"]
    assert asked == ["a", "b", "a", "c", "d", "c", "a", "b"]

"""The hook chain is the loop's one extension point: a run's named hooks are data the Agent reads, and what a step
sent has one answer (accounting.sent_at) that the provider-body export, the trace and the Cost page all read."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from agentcore import toolbox
from agentcore.accounting import sent_at, sent_tokens, step_usage
from agentcore.cli.main import main
from agentcore.errors import UsageError
from agentcore.exports import export_request
from agentcore.hooks import HookEffect, breakpoints, examples, guard, mocks, protocol
from agentcore.hooks.chain import ModelChain, model_chain, tools_chain
from agentcore.hooks.specs import MockRule
from agentcore.loop import Agent
from agentcore.messages import AssistantMessage, ReasoningPart, ToolCall, UserMessage
from agentcore.providers.base import ModelRequest, estimate_request_tokens
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run, RunConfig

PROMPT = "What is the weather in Paris? Send it to bob@example.com."
ADDRESS = "bob@example.com"


class Recording(ScriptedProvider):
    """The scripted weather model, keeping each request it was sent."""

    def __init__(self) -> None:
        super().__init__("weather")
        self.requests: list[ModelRequest] = []

    def complete(self, request, on_text=None):
        self.requests.append(request)
        return super().complete(request, on_text)


def redacted(provider=None) -> tuple[Run, Recording]:
    provider = provider or Recording()
    run = Run.start(PROMPT, RunConfig(provider="scripted", model="weather", hooks=["redact"]))
    Agent(provider, toolbox.get_tools("get_weather")).run(run)
    return run, provider


def test_an_agent_over_a_run_whose_config_names_the_redactor_sends_masked_text():
    run, provider = redacted()
    assert run.stop_reason == "answer" and len(provider.requests) == len(run.steps) >= 2
    for request in provider.requests:
        sent = json.dumps([m.model_dump(mode="json") for m in request.messages])
        assert ADDRESS not in sent and "[email]" in sent
    assert run.messages[0].content == PROMPT  # the run keeps the original


def test_without_the_named_hook_the_same_agent_sends_the_address():
    provider = Recording()
    run = Run.start(PROMPT, RunConfig(provider="scripted", model="weather"))
    Agent(provider, toolbox.get_tools("get_weather")).run(run)
    assert ADDRESS in provider.requests[0].messages[-1].content


def test_a_code_hook_runs_after_the_named_ones_and_sees_their_masks():
    seen: list[str] = []

    def spy(run, request):
        seen.append(request.messages[-1].content)
        return request

    run = Run.start(PROMPT, RunConfig(provider="scripted", model="weather", hooks=["redact"]))
    Agent(ScriptedProvider("weather"), toolbox.get_tools("get_weather"), before_model=[spy]).run(run)
    assert seen and "[email]" in seen[0] and ADDRESS not in seen[0]


def test_an_unknown_named_hook_stops_the_step_in_one_line_before_any_call():
    provider = Recording()
    run = Run.start(PROMPT, RunConfig(provider="scripted", model="weather", hooks=["nosuch"]))
    with pytest.raises(UsageError, match="unknown hook 'nosuch'"):
        Agent(provider, toolbox.get_tools("get_weather")).step(run)
    assert provider.requests == [] and run.steps == []


def test_what_a_step_sent_is_the_masked_request_the_model_received():
    run, provider = redacted()
    for n, request in enumerate(provider.requests, 1):
        assert sent_at(run, n) == list(request.messages)
        assert ADDRESS in json.dumps([m.model_dump(mode="json") for m in sent_at(run, n, hooks=False)])
        # the Cost page's input for the step is the estimate of what the model received, not of the history
        usage, estimated = step_usage(run, n)
        assert estimated and usage.input_tokens == estimate_request_tokens(request) == sent_tokens(run, n)


def test_the_cost_pages_input_equals_what_the_trace_says_was_sent():
    pytest.importorskip("opentelemetry.sdk", reason="the trace needs the otel extra")
    from agentcore.telemetry import genai as g
    from agentcore.telemetry.export import run_spans

    run, provider = redacted()
    spans = run_spans(run, content=True)
    chats = [s for s in spans if s.attributes.get(g.STEP_INDEX) is not None and g.INPUT_MESSAGES in s.attributes]
    assert len(chats) == len(run.steps)
    for span in chats:
        n = span.attributes[g.STEP_INDEX]
        traced = span.attributes[g.INPUT_MESSAGES]
        assert ADDRESS not in traced and "[email]" in traced
        sent = [m for m in sent_at(run, n) if m.role != "system"]
        assert json.loads(traced) == json.loads(g.dumps([g.message_parts(m) for m in sent]))
        # the Cost page counts the step by the same messages the span shows (sent_tokens reads sent_at)
        assert step_usage(run, n)[0].input_tokens == sent_tokens(run, n)


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "openai-responses", "ollama"])
def test_the_provider_body_export_of_a_redacted_run_carries_the_mask(fmt):
    run, _ = redacted()
    body = json.dumps(export_request(run, fmt))
    assert ADDRESS not in body and "[email]" in body


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_the_cli_export_of_a_run_made_with_hook_redact_carries_the_mask(tmp_path, capsys, fmt):
    transcript = tmp_path / "run.json"
    args = ["run", PROMPT, "--provider", "scripted", "--scenario", "weather", "--hook", "redact"]
    assert main([*args, "--no-db", "--out", str(transcript)]) == 0
    capsys.readouterr()
    assert main(["export", str(transcript), "--format", fmt]) == 0
    body = capsys.readouterr().out
    assert json.loads(body) and ADDRESS not in body and "[email]" in body


def test_an_older_record_without_a_kind_is_read_by_its_words_and_applied():
    run, _ = redacted()
    data = run.model_dump(mode="json")
    for step in data["steps"]:
        for effect in step.get("hook_effects", []):
            effect.pop("kind")
    again = Run.model_validate(data)
    assert again.steps[0].hook_effects[0].kind == "messages"
    assert sent_at(again, 1) == sent_at(run, 1)


def test_an_effect_whose_payload_is_not_messages_changes_nothing_it_sent():
    run, _ = redacted()
    history = sent_at(run, 1, hooks=False)
    run.steps[0].hook_effects = [
        HookEffect(
            hook="x", point="before_model", change="request: message 0 changed", kind="messages", after={"9": 1}
        ),
        HookEffect(hook="y", point="before_model", change="request: 1 messages became 0", kind="message_list", after=7),
    ]
    assert sent_at(run, 1) == history


def test_the_chain_is_written_in_one_order_named_hooks_before_code_hooks():
    def code(run, value):
        return value

    run = Run.start("q", RunConfig(hooks=["redact", "guardrail"]))
    chain = model_chain(run, None, before=[code], after=[code])
    names = [getattr(h, "name", None) or getattr(h, "__name__", None) for h in chain.before]
    assert names == ["breakpoint", "context_policies", "loop_guard", "redact", "code"]
    assert [getattr(h, "name", None) or h.__name__ for h in chain.after] == ["context_policies", "code"]
    tools = [getattr(h, "name", None) or getattr(h, "__name__", None) for h in tools_chain(run, [code])]
    assert tools == ["breakpoint", "loop_guard", "mock", "guardrail", "code"]
    # a person decided the calls: the breakpoint has nothing more to show, and only it is left out
    decided = [getattr(h, "name", None) or h.__name__ for h in tools_chain(run, [code], decided=True)]
    assert decided == ["loop_guard", "mock", "guardrail", "code"]


def test_a_built_in_the_run_gives_nothing_to_do_is_passed_over_and_one_it_does_is_asked(monkeypatch):
    asked: list[str] = []
    built_ins = [(breakpoints, "BREAK_BEFORE_MODEL"), (breakpoints, "BREAK_BEFORE_TOOLS"), (guard, "BEFORE_MODEL")]
    for module, attr in [*built_ins, (guard, "BEFORE_TOOLS"), (mocks, "MOCK")]:
        builtin = getattr(module, attr)

        def counted(run, value, _hook=builtin.hook, _attr=attr):
            asked.append(_attr)
            return _hook(run, value)

        monkeypatch.setattr(module, attr, dataclasses.replace(builtin, hook=counted))
    tools = toolbox.get_tools("get_weather")
    run = Run.start(PROMPT, RunConfig(provider="scripted", model="weather", loop_guard="warn"))
    Agent(ScriptedProvider("weather"), tools).run(run)
    assert (run.stop_reason, asked) == ("answer", [])  # no breakpoint, no mock rule, a guard that only warns
    config = RunConfig(
        provider="scripted",
        model="weather",
        loop_guard="guard",
        breakpoints=["step:9"],
        mocks=[MockRule(tool="get_weather", result="fixed")],
    )
    run = Run.start(PROMPT, config)
    Agent(ScriptedProvider("weather"), tools).run(run)
    assert set(asked) == {"BREAK_BEFORE_MODEL", "BREAK_BEFORE_TOOLS", "BEFORE_MODEL", "BEFORE_TOOLS", "MOCK"}
    assert {t.source for s in run.steps for t in s.tool_runs} == {"mocked"}


def test_the_loop_names_no_built_in_hook():
    source = (Path(__file__).resolve().parents[2] / "agentcore" / "loop.py").read_text(encoding="utf-8")
    imported = {
        node.module
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module is not None
    }
    assert {"hooks.guard", "hooks.breakpoints", "hooks.mocks", "hooks.context_policies"}.isdisjoint(imported)
    for name in ("LOOP_GUARD_HOOK", "MOCK_HOOK", "BREAKPOINT_HOOK", "PolicyHook", "REPEAT", "MOCKED"):
        assert name not in source


def test_with_redact_and_a_summarising_policy_no_request_the_model_receives_holds_the_address():
    from agentcore.messages import AssistantMessage, ToolCall
    from agentcore.policies import ContextPolicies
    from agentcore.tools import tool

    @tool
    def contact(name: str) -> str:
        """A person's contact."""
        return f"{name} is reached at {ADDRESS}"

    calls = [ToolCall(id=f"c{n}", name="contact", arguments={"name": f"person {n}"}) for n in range(4)]
    turns = [AssistantMessage(tool_calls=(c,)) for c in calls] + [AssistantMessage(content="done")]

    class Replay(Recording):
        def __init__(self) -> None:
            ScriptedProvider.__init__(self, replay=turns)
            self.requests = []

        def complete(self, request, on_text=None):
            self.requests.append(request)
            if request.messages[0].content.startswith("Summarise"):  # the policy's own call: a summary
                from agentcore.providers.base import ModelResponse

                return ModelResponse(message=AssistantMessage(content="they were looked up"))
            return ScriptedProvider.complete(self, request, on_text)

    provider = Replay()
    config = RunConfig(hooks=["redact"], max_steps=8, policies=ContextPolicies(summarize_older_than=1))
    run = Run.start("Who can I reach?", config)
    Agent(provider, [contact]).run(run)  # the replay loses count under the summary: it runs to its budget
    assert run.error is None and len(run.steps) == 8
    summaries = [r for r in provider.requests if r.messages[0].content.startswith("Summarise")]
    assert summaries, "the policy asked for a summary"
    for request in provider.requests:  # the loop's calls and the policy's own summary calls alike
        sent = json.dumps([m.model_dump(mode="json") for m in request.messages])
        assert ADDRESS not in sent
    assert any("[email]" in json.dumps([m.model_dump(mode="json") for m in r.messages]) for r in summaries)
    assert ADDRESS in json.dumps([m.model_dump(mode="json") for m in run.messages])  # the run keeps it


# -- both halves of the redactor's and the chain's rules ----------------------------------------------------


@pytest.mark.parametrize(
    ("number", "masked"),
    [
        ("4111 1111 1111 1111", True),  # test cards of each scheme: every digit from 0 to 9 doubled somewhere
        ("5555 5555 5555 4444", True),
        ("3782 822463 10005", True),
        ("6011 1111 1111 1117", True),
        ("4012 8888 8888 1881", True),
        ("4111 1111 1111 1112", False),  # one digit off: no card
        ("5555 5555 5555 4445", False),
        ("3782 822463 10006", False),
        ("6011 1111 1111 1118", False),
    ],
)
def test_the_redactor_masks_a_number_that_passes_the_luhn_check_and_no_other(number, masked):
    from agentcore.hooks.examples import CARD_MASK, mask

    said = mask(f"pay with {number} today")
    assert (CARD_MASK in said) is masked and (number in said) is not masked


def test_the_redactor_masks_an_address_in_a_reply_and_in_a_calls_arguments_and_keeps_numbers_as_they_are():
    from agentcore.hooks.examples import EMAIL_MASK, redact
    from agentcore.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage

    call = ToolCall(id="c1", name="send", arguments={"to": ADDRESS, "copies": 2, "rate": 0.5, "urgent": True})
    messages = (
        UserMessage(content="mail it"),
        AssistantMessage(content=f"Sending to {ADDRESS}.", tool_calls=(call,)),
        ToolMessage(tool_call_id="c1", name="send", content="sent"),
        AssistantMessage(content="Done, nothing personal here."),
    )
    sent = redact(Run.start("mail it"), ModelRequest(messages=messages)).messages
    assert sent[1].content == f"Sending to {EMAIL_MASK}."
    assert sent[1].tool_calls[0].arguments == {"to": EMAIL_MASK, "copies": 2, "rate": 0.5, "urgent": True}
    assert ADDRESS not in json.dumps([m.model_dump() for m in sent])
    assert sent[3] is messages[3] and sent[0] is messages[0]  # a message with nothing to mask goes as it was
    only_call = AssistantMessage(tool_calls=(call,))  # the address only in the arguments
    (masked,) = redact(Run.start("x"), ModelRequest(messages=(only_call,))).messages
    assert masked.tool_calls[0].arguments["to"] == EMAIL_MASK


@pytest.mark.parametrize(
    ("record", "kind"),
    [
        ({"point": "before_model", "change": "request: message 0 changed"}, "messages"),
        ({"point": "before_model", "change": "request: messages 0, 2 changed"}, "messages"),
        ({"point": "before_model", "change": "request: 3 messages became 2"}, "message_list"),
        ({"point": "before_model", "change": "request: tool_choice changed"}, "tool_choice"),
        ({"point": "before_model", "change": "request: something else changed"}, None),
        ({"point": "before_model", "change": "the tools changed"}, None),  # no "request: ": not a request's words
        ({"point": "before_tools", "change": "request: message 0 changed"}, None),  # a request only before the model
        ({"point": "after_model", "change": "reply changed"}, "reply"),
        ({"point": "before_tools", "change": "get_weather(c1) refused: no"}, "refused"),
        ({"point": "before_model", "change": "request: message 0 changed", "kind": "tool_choice"}, "tool_choice"),
    ],
)
def test_an_older_record_gets_its_kind_from_its_words_only_where_it_has_none(record, kind):
    effect = HookEffect.model_validate({"hook": "h", **record})
    assert effect.kind == kind


def test_a_hooks_effects_name_one_message_or_several():
    from agentcore.messages import UserMessage

    def shout(run, request):
        changed = list(request.messages)
        for i in range(len(changed)):
            changed[i] = changed[i].model_copy(update={"content": changed[i].content.upper()})
        return request.model_copy(update={"messages": tuple(changed)})

    run = Run.start("hello", RunConfig(system_prompt="be brief", max_steps=1))
    Agent(ScriptedProvider("weather"), [], before_model=[shout]).model_phase(run)
    assert [e.change for e in run.steps[0].hook_effects] == ["request: messages 0, 1 changed"]
    run = Run.start("hello", RunConfig(max_steps=1))
    run.messages = [UserMessage(content="HELLO")]  # already upper: only a second message would change
    Agent(ScriptedProvider("weather"), [], before_model=[shout]).model_phase(run)
    assert run.steps[0].hook_effects == []
    run = Run.start("hello", RunConfig(system_prompt="BE BRIEF", max_steps=1))
    Agent(ScriptedProvider("weather"), [], before_model=[shout]).model_phase(run)
    assert [e.change for e in run.steps[0].hook_effects] == ["request: message 1 changed"]


def test_a_failure_line_at_the_limit_is_kept_whole_and_one_past_it_is_cut():
    from agentcore.hooks.protocol import MAX_FAILURE_CHARS, _bounded

    exact = "x" * MAX_FAILURE_CHARS
    assert _bounded(exact) == exact
    longer = _bounded("y" * (MAX_FAILURE_CHARS + 1))
    assert len(longer) == MAX_FAILURE_CHARS and longer.endswith("…")


def test_a_hook_past_its_time_limit_is_left_behind_not_waited_for():
    import threading

    release, finished = threading.Event(), threading.Event()

    def stuck(run, request):
        release.wait(10)
        finished.set()
        return request

    run = Run.start("hello", RunConfig(max_steps=1))
    Agent(ScriptedProvider("weather"), [], before_model=[stuck], hook_time_limit=0.2).model_phase(run)
    try:
        assert run.stop_reason == "error" and "gave no answer within 0.2 s" in run.error
        assert not finished.is_set()  # the step returned while the hook still ran: it was not waited for
    finally:
        release.set()


# -- the hooks target's survivors of make mutate, each a test ---------------------------------------------------

WEATHER_CALL = ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})


@pytest.mark.parametrize(
    "value",
    [
        ModelChain([], []),
        examples.DEFAULT_RULES[0],
        examples.HOOKS["redact"],
        protocol.Pause("why"),
        protocol.Stop("why"),
        protocol.Refuse(WEATHER_CALL, "why"),
        protocol.Answer(WEATHER_CALL, None),
        mocks.MOCK,
    ],
    ids=["ModelChain", "Rule", "NamedHook", "Pause", "Stop", "Refuse", "Answer", "BuiltIn"],
)
def test_what_hooks_give_back_and_the_shared_built_ins_cannot_be_changed_after_the_fact(value):
    # a hook's decision is kept on the run, and the built-ins and rules are one object for every run
    field = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, None)


def test_the_redactor_masks_addresses_in_a_list_argument_and_leaves_a_turn_with_thinking_as_written():
    call = ToolCall(id="c1", name="send", arguments={"to": [ADDRESS, "team"], "n": 2})
    thought = ReasoningPart(provider="anthropic", text="thought", signature="sig")
    thinking = AssistantMessage(content=f"I will write to {ADDRESS}", reasoning=(thought,))
    turns = (UserMessage(content="hi"), AssistantMessage(content="", tool_calls=(call,)), thinking)
    run = Run.start("hi", RunConfig(provider="scripted", model="weather"))
    sent = examples.redact(run, ModelRequest(messages=turns))
    assert sent.messages[1].tool_calls[0].arguments == {"to": [examples.EMAIL_MASK, "team"], "n": 2}
    assert sent.messages[2] is thinking  # its signature covers the text: sent back as written


def test_the_guardrail_reads_arguments_that_were_not_json_as_text():
    call = ToolCall(id="c1", name="send", raw_arguments=f"to {ADDRESS}, not json")
    assert call.arguments_invalid
    assert "e-mail address" in (examples.Guardrail().breach(call) or "")
    assert examples.Guardrail().breach(ToolCall(id="c2", name="send", raw_arguments="not json")) is None


def test_a_built_in_s_failure_is_one_line_after_its_name():
    words = protocol.failure_words("breakpoint")
    assert words(UsageError("no such tool")) == "breakpoint: no such tool"
    assert words(ValueError("bad\n   value")) == "breakpoint: ValueError: bad value"


def test_a_before_tools_hook_giving_back_a_list_of_something_else_fails_the_step_in_one_line():
    run = Run.start("hi", RunConfig(provider="scripted", model="weather"))

    def strings(run, calls):
        return ["get_weather"]

    with pytest.raises(protocol.HookFailed, match=r"^hook strings \(before_tools\): gave back list, not a list of"):
        protocol.run_hooks("before_tools", [strings], run, [WEATHER_CALL])


def test_an_after_model_hook_s_reply_is_an_effect_only_when_it_differs():
    run = Run.start("hi", RunConfig(provider="scripted", model="weather"))
    reply = AssistantMessage(content="Mild.")

    def same(run, message):
        return message.model_copy()

    def louder(run, message):
        return message.model_copy(update={"content": "MILD."})

    assert protocol.run_hooks("after_model", [same], run, reply).effects == []
    [effect] = protocol.run_hooks("after_model", [louder], run, reply).effects
    assert (effect.hook, effect.change, effect.kind) == ("louder", "reply changed", "reply")
    assert (effect.before["content"], effect.after["content"]) == ("Mild.", "MILD.")


def test_the_policies_hook_numbers_a_repeated_call_id_with_the_step_it_makes():
    from agentcore.hooks.context_policies import PolicyHook

    run = Agent(ScriptedProvider(scenario="weather"), toolbox.get_tools("get_weather")).run(
        Run.start("Weather in Paris and Rome?", RunConfig.made_for("scripted", "weather"))
    )
    used = next(c.id for m in run.messages if isinstance(m, AssistantMessage) for c in m.tool_calls)
    again = AssistantMessage(content="", tool_calls=(WEATHER_CALL.model_copy(update={"id": used}),))
    step = len(run.steps) + 1
    assert PolicyHook(None).after_model.hook(run, again).tool_calls[0].id == f"{used}_s{step}"

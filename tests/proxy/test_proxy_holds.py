"""Pause before send: a held call waits on its open connection until it is sent, edited and sent, or answered."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest
from support.proxy_rig import KEY, Agent, held
from support.stand_in import Reply

openai = pytest.importorskip("openai", reason="the openai package is not installed (pip install '.[test]')")

ASK = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}]


def test_a_held_call_sent_with_an_edited_message_gets_the_reply_to_the_edit(rig_of):
    rig = rig_of(Reply.chat("Rome: 25 C"), pause="always")
    agent = Agent(rig, ASK)
    [hold] = held(rig)
    assert hold["request"]["messages"] == ASK and hold["step"] == 1
    assert rig.upstream.seen == []  # nothing goes upstream while the call is held
    edited = {**hold["request"], "messages": [ASK[0], {"role": "user", "content": "Weather in Rome?"}]}
    rig.proxy.holds.release(hold["id"], "edit", body=edited)
    assert agent.answer() == "Rome: 25 C"
    assert rig.upstream.bodies() == [edited]
    [run] = rig.runs()
    step = run.steps[0]
    assert step.wire.request == edited
    assert run.messages[1].content == "Weather in Rome?"
    [effect] = step.hook_effects
    assert (effect.kind, effect.before, effect.after) == ("message_list", ASK, edited)
    kept = rig.store.exchange(run.id, 0)  # the bytes kept are the agent's own; what went instead is the edit
    assert json.loads(kept.request)["messages"] == ASK
    assert json.loads(kept.reply)["choices"][0]["message"]["content"] == "Rome: 25 C"


def test_a_held_call_answered_with_a_mock_never_reaches_the_upstream(rig_of):
    rig = rig_of(Reply.chat("from upstream"), pause="always")
    agents = [Agent(rig, ASK), Agent(rig, ASK, stream=True)]
    holds = held(rig, 2)
    for hold in holds:
        rig.proxy.holds.release(hold["id"], "answer", text="mocked: 20 C")
    assert [a.answer() for a in agents] == ["mocked: 20 C", "mocked: 20 C"]
    assert rig.upstream.seen == []
    runs = rig.runs()
    assert [r.messages[-1].content for r in runs] == ["mocked: 20 C", "mocked: 20 C"]
    assert [r.steps[0].hook_effects[0].kind for r in runs] == ["reply", "reply"]


def test_a_call_held_past_the_limit_is_sent_as_it_was_and_the_step_says_so(rig_of):
    rig = rig_of(Reply.chat("sent anyway"), pause="always", hold_limit=0.05)
    assert Agent(rig, ASK).answer() == "sent anyway"
    [run] = rig.runs()
    [effect] = run.steps[0].hook_effects
    assert "past the limit of 0.05 s" in effect.change
    assert run.steps[0].wire.request["messages"] == ASK


def test_a_tool_breakpoint_holds_the_call_that_carries_that_tools_result(rig_of):
    rig = rig_of(Reply.fixture("openai_parallel_tool_calls.json"), Reply.chat("done"), pause="tool:get_weather")
    first = Agent(rig, ASK).thread
    first.join(30)
    assert rig.proxy.holds.listing() == [] and len(rig.upstream.seen) == 1  # the first call was not held
    reply = rig.upstream.bodies()  # what the stand-in answered: two get_weather calls
    calls = json.loads(Reply.fixture("openai_parallel_tool_calls.json").body)["choices"][0]["message"]
    messages = [
        *ASK,
        calls,
        *({"role": "tool", "tool_call_id": c["id"], "content": "18 C"} for c in calls["tool_calls"]),
    ]
    agent = Agent(rig, messages)
    [hold] = held(rig)
    assert hold["step"] == 2 and "get_weather" in hold["reason"]
    with httpx.Client() as http:  # the control path the app uses
        listed = http.get(f"{rig.url}/agentcore/holds").json()
        assert [h["id"] for h in listed] == [hold["id"]]
        bad = http.post(f"{rig.url}/agentcore/holds/{hold['id']}", json={"action": "launch"})
        assert bad.status_code == 400
        sent = http.post(f"{rig.url}/agentcore/holds/{hold['id']}", json={"action": "send"})
        assert sent.json() == {"released": True}
    assert agent.answer() == "done"
    assert len(reply) == 1 and len(rig.upstream.seen) == 2
    [run] = rig.runs()
    assert len(run.steps) == 2
    assert run.steps[1].hook_effects[0].change == "held, then sent as it was"


def test_a_step_breakpoint_holds_only_that_step(rig_of):
    rig = rig_of(Reply.chat("one"), Reply.chat("two"), pause="step:2")
    assert Agent(rig, ASK).answer() == "one"
    agent = Agent(rig, [*ASK, {"role": "assistant", "content": "one"}, {"role": "user", "content": "and Rome?"}])
    [hold] = held(rig)
    assert hold["step"] == 2
    rig.proxy.holds.release(hold["id"], "send")
    assert agent.answer() == "two"


def test_the_database_names_the_proxy_while_it_runs_and_not_after(rig_of):
    from agentcore.proxy.control import proxy_of

    rig = rig_of(Reply.chat("ok"))
    assert proxy_of(rig.store) == rig.url
    rig.proxy.close()
    assert proxy_of(rig.store) is None


def test_two_breakpoints_hold_at_either(rig_of):
    rig = rig_of(Reply.chat("one"), Reply.chat("two"), pause=["step:2", "args:$.city=Paris,Rome"])
    assert rig.proxy.holds.specs == ["step:2", "args:$.city=Paris,Rome"]
    assert Agent(rig, ASK).answer() == "one"
    agent = Agent(rig, [*ASK, {"role": "assistant", "content": "one"}, {"role": "user", "content": "and Rome?"}])
    [hold] = held(rig)
    assert hold["reason"] == "before the model call of step 2"
    rig.proxy.holds.release(hold["id"], "send")
    assert agent.answer() == "two"


def _in_thread(call: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def go() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - kept for the test to raise
            out["error"] = exc

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    out["thread"] = thread
    return out


def _answered(rig: Any, call: Any) -> Any:
    pending = _in_thread(call)
    [hold] = held(rig)
    rig.proxy.holds.release(hold["id"], "answer", text="mocked: 20 C")
    pending["thread"].join(30)
    if "error" in pending:
        raise pending["error"]
    return pending["value"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_mocked_answer_reads_in_each_sdk(rig_of, stream):
    import anthropic
    import ollama

    rig = rig_of(Reply.chat("from upstream"), pause="always")
    ask = [{"role": "user", "content": "Weather?"}]
    sdk = anthropic.Anthropic(api_key=KEY, base_url=rig.url, max_retries=0)

    def streamed() -> str:
        with sdk.messages.stream(model="c", max_tokens=9, messages=ask) as reply:
            return "".join(reply.text_stream)

    if stream:
        text = _answered(rig, streamed)
    else:
        text = _answered(rig, lambda: sdk.messages.create(model="c", max_tokens=9, messages=ask).content[0].text)
    assert text == "mocked: 20 C"
    responses = openai.OpenAI(api_key=KEY, base_url=f"{rig.url}/v1", max_retries=0).responses
    if stream:
        events = _answered(rig, lambda: list(responses.create(model="m", input="Weather?", stream=True)))
        assert events[-1].response.output_text == "mocked: 20 C"
    else:
        assert _answered(rig, lambda: responses.create(model="m", input="Weather?").output_text) == "mocked: 20 C"
    chat = ollama.Client(host=rig.url).chat
    if stream:
        parts = _answered(rig, lambda: list(chat(model="m", messages=ask, stream=True)))
        assert "".join(p.message.content for p in parts) == "mocked: 20 C"
    else:
        assert _answered(rig, lambda: chat(model="m", messages=ask, stream=False).message.content) == "mocked: 20 C"
    assert rig.upstream.seen == []
    assert sorted(r.messages[-1].content for r in rig.runs()) == ["mocked: 20 C"] * 3


def test_a_tool_error_breakpoint_holds_the_call_that_carries_an_error_result(rig_of):
    import anthropic

    again = Reply.fixture("anthropic_tool_use.json")
    again.body = again.body.replace(b'"toolu_', b'"toolu_again_')  # a second turn's calls have ids of their own
    rig = rig_of(
        Reply.fixture("anthropic_tool_use.json"),
        again,
        Reply.fixture("anthropic_thinking_final_text.json"),
        pause="tool-error",
    )
    sdk = anthropic.Anthropic(api_key=KEY, base_url=rig.url, max_retries=0)
    ask: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]

    def turn(results: list[dict[str, Any]] | None = None) -> Any:
        if results is not None:
            ask.append({"role": "user", "content": results})
        reply = sdk.messages.create(model="claude-haiku-4-5", max_tokens=99, messages=ask)
        ask.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
        return [b.id for b in reply.content if b.type == "tool_use"]

    calls = turn()
    calls = turn([{"type": "tool_result", "tool_use_id": c, "content": "18 C"} for c in calls])
    assert rig.proxy.holds.listing() == []  # a result that is no error holds nothing
    error = [
        {"type": "tool_result", "tool_use_id": c, "content": "the service is down", "is_error": True} for c in calls
    ]
    pending = _in_thread(lambda: turn(error))
    [hold] = held(rig)
    assert hold["step"] == 3 and "is an error" in hold["reason"]
    rig.proxy.holds.release(hold["id"], "send")
    pending["thread"].join(30)
    assert "error" not in pending
    [run] = rig.runs()
    assert len(run.steps) == 3
    assert [t.is_error for t in run.steps[1].tool_runs] == [True] * len(calls)
    assert run.steps[2].hook_effects[0].change == "held, then sent as it was"

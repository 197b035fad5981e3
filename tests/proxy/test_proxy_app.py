"""The Held calls page: an agent waits on a held request while a person edits it, sends it, or forks it."""

from __future__ import annotations

import json

import pytest
from support.proxy_rig import Agent, held
from support.stand_in import Reply

from ui import safe

pytest.importorskip("openai", reason="the openai package is not installed (pip install '.[test]')")

ASK = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}]


def page(open_app, monkeypatch, rig):
    monkeypatch.setenv("AGENTCORE_DB", str(rig.db))
    return open_app("views/held.py")


def edit_text(at, prefix: str, hold_id: str, i: int, text: str) -> None:
    """Open message `i` of the held call in the message editor with its pencil, and type `text` as its content."""
    at.button(key=f"{prefix}_msg_{hold_id}_open_{i}").click().run()
    at.text_area(key=f"{prefix}_msg_{hold_id}_content_{i}").set_value(text)


def test_a_person_edits_the_last_user_message_and_the_agent_gets_the_reply_to_it(rig_of, open_app, monkeypatch):
    rig = rig_of(Reply.echoing(), pause="always")
    agent = Agent(rig, ASK)
    [hold] = held(rig)
    at = page(open_app, monkeypatch, rig)
    assert any("Weather in Paris?" in m.value for m in at.markdown)  # the message as the editor lists it
    edit_text(at, "held", hold["id"], 1, "Weather in Rome?")
    at.button(key=f"held_edited_{hold['id']}").click().run()
    assert not at.exception and not at.error
    assert agent.answer() == "You asked: Weather in Rome?"
    edited = [ASK[0], {"role": "user", "content": "Weather in Rome?"}]
    assert rig.upstream.bodies()[0]["messages"] == edited
    [run] = rig.runs()
    [effect] = run.steps[0].hook_effects
    assert effect.kind == "message_list" and effect.after["messages"] == edited
    assert effect.before == ASK


def test_a_message_saved_in_the_editor_shows_as_edited_and_is_sent_so(rig_of, open_app, monkeypatch):
    rig = rig_of(Reply.echoing(), pause="always")
    agent = Agent(rig, ASK)
    [hold] = held(rig)
    at = page(open_app, monkeypatch, rig)
    edit_text(at, "held", hold["id"], 0, "Answer in French.")
    at.button(key=f"held_msg_{hold['id']}_save_0").click().run()
    assert not [a for a in at.text_area if str(a.key).startswith(f"held_msg_{hold['id']}_content_")]
    assert any("Answer in French." in m.value and "edited" in m.value for m in at.markdown)
    at.button(key=f"held_edited_{hold['id']}").click().run()
    assert agent.answer() == "You asked: Weather in Paris?"
    assert rig.upstream.bodies()[0]["messages"] == [{"role": "system", "content": "Answer in French."}, ASK[1]]


def test_edit_and_send_with_nothing_edited_says_so_and_keeps_the_call_held(rig_of, open_app, monkeypatch):
    rig = rig_of(Reply.chat("sent"), pause="always")
    agent = Agent(rig, ASK)
    [hold] = held(rig)
    at = page(open_app, monkeypatch, rig)
    at.button(key=f"held_edited_{hold['id']}").click().run()
    assert any("No message is edited" in e.value for e in at.error)
    assert rig.proxy.holds.listing()  # still held
    rig.proxy.holds.release(hold["id"], "send")
    assert agent.answer() == "sent"


def test_an_edit_the_request_has_no_place_for_is_said_on_the_page_and_the_call_stays_held(
    rig_of, open_app, monkeypatch
):
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}
    asked = [*ASK, {"role": "assistant", "content": None, "tool_calls": [call]}]
    rig = rig_of(Reply.chat("sent"), pause="always")
    agent = Agent(rig, [*asked, {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}])
    [hold] = held(rig)
    at = page(open_app, monkeypatch, rig)
    edit_text(at, "held", hold["id"], 2, "I will look it up.")  # the call's message: no text in the request
    at.button(key=f"held_edited_{hold['id']}").click().run()
    assert not at.exception
    assert any("no text in the request to replace" in e.value for e in at.error)
    assert rig.proxy.holds.listing()  # still held
    rig.proxy.holds.release(hold["id"], "send")
    assert agent.answer() == "sent"


def test_the_request_s_json_can_still_be_edited_whole_and_sent(rig_of, open_app, monkeypatch):
    rig = rig_of(Reply.echoing(), pause="always")
    agent = Agent(rig, ASK)
    [hold] = held(rig)
    at = page(open_app, monkeypatch, rig)
    edited = [ASK[0], {"role": "user", "content": "Weather in Oslo?"}]
    at.text_area(key=f"held_edit_{hold['id']}").set_value(json.dumps(edited))
    at.button(key=f"held_json_{hold['id']}").click().run()
    assert not at.exception and not at.error
    assert agent.answer() == "You asked: Weather in Oslo?"
    assert rig.upstream.bodies()[0]["messages"] == edited


def test_a_held_message_s_markup_is_shown_as_text_and_sent_back_as_written(rig_of, open_app, monkeypatch):
    hostile = '<img src=x onerror="alert(1)"> <script>alert(2)</script> [click](javascript:alert(3))'
    rig = rig_of(Reply.echoing(), pause="always")
    agent = Agent(rig, [{"role": "user", "content": hostile}])
    [hold] = held(rig)
    at = page(open_app, monkeypatch, rig)
    assert not at.exception
    shown = [m for m in at.markdown if "alert(1)" in m.value]
    assert shown and not any(m.allow_html for m in at.markdown)
    assert all(safe.markdown(hostile).strip() in m.value for m in shown)  # its markup escaped, its link an address
    edit_text(at, "held", hold["id"], 0, hostile + " <b>and Rome</b>")
    at.button(key=f"held_edited_{hold['id']}").click().run()
    assert agent.answer() == f"You asked: {hostile} <b>and Rome</b>"


def test_answer_with_gives_the_agent_the_typed_reply(rig_of, open_app, monkeypatch):
    rig = rig_of(Reply.chat("from upstream"), pause="always")
    agent = Agent(rig, ASK)
    [hold] = held(rig)
    at = page(open_app, monkeypatch, rig)
    at.text_input(key=f"held_answer_{hold['id']}").set_value("It is 18 C.")
    at.button(key=f"held_answered_{hold['id']}").click().run()
    assert agent.answer() == "It is 18 C."
    assert rig.upstream.seen == []


def test_fork_here_keeps_the_held_conversation_as_a_run_and_opens_it(rig_of, open_app, monkeypatch):
    rig = rig_of(Reply.chat("sent"), pause="always")
    agent = Agent(rig, ASK)
    [hold] = held(rig)
    at = page(open_app, monkeypatch, rig)
    at.button(key=f"held_fork_{hold['id']}").click().run()
    assert not at.exception
    [fork] = rig.runs(settle=False)  # the call is still held
    assert [m.content for m in fork.messages] == ["Be brief.", "Weather in Paris?"]
    assert fork.config.provider == "openai" and fork.config.model == "gpt-4o-mini"
    rig.proxy.holds.release(hold["id"], "send")
    assert agent.answer() == "sent"


def test_another_persons_proxy_shows_no_held_call(rig_of, open_app, monkeypatch):
    rig = rig_of(Reply.chat("sent"), pause="always")
    agent = Agent(rig, ASK)
    [hold] = held(rig)
    monkeypatch.setenv("AGENTCORE_USER", "someone-else")
    at = page(open_app, monkeypatch, rig)
    assert not [b for b in at.button if str(b.key).startswith("held_")]
    assert any("No recording proxy of yours" in info.value for info in at.info)
    rig.proxy.holds.release(hold["id"], "send")
    assert agent.answer() == "sent"


def playground(open_app, monkeypatch, rig):
    monkeypatch.setenv("AGENTCORE_DB", str(rig.db))
    return open_app()  # the app opens on the playground


def test_the_playground_shows_a_held_call_and_sends_it_as_edited(rig_of, open_app, monkeypatch):
    rig = rig_of(Reply.echoing(), pause="always")
    agent = Agent(rig, ASK)
    [hold] = held(rig)
    at = playground(open_app, monkeypatch, rig)
    assert any("Held by the recording proxy" in m.value for m in at.markdown)
    for button in ("send", "edited", "answered", "fork"):
        assert at.button(key=f"playground_held_{button}_{hold['id']}")
    edit_text(at, "playground_held", hold["id"], 1, "Weather in Rome?")
    at.button(key=f"playground_held_edited_{hold['id']}").click().run()
    assert not at.exception and not at.error
    assert agent.answer() == "You asked: Weather in Rome?"
    assert rig.upstream.bodies()[0]["messages"] == [ASK[0], {"role": "user", "content": "Weather in Rome?"}]
    at.run()
    assert not [a for a in at.text_area if str(a.key).startswith("playground_held_")]


def test_the_playground_opens_a_held_call_s_run_so_far(rig_of, open_app, monkeypatch):
    rig = rig_of(Reply.chat("Sunny."), Reply.chat("Still sunny."), pause="step:2")
    first = Agent(rig, ASK)
    assert first.answer() == "Sunny."
    then = Agent(rig, [*ASK, {"role": "assistant", "content": "Sunny."}, {"role": "user", "content": "And now?"}])
    [hold] = held(rig)
    assert hold["step"] == 2
    at = playground(open_app, monkeypatch, rig)
    at.button(key=f"playground_held_run_{hold['id']}").click().run()
    assert not at.exception
    assert at.session_state["session"].run.id == hold["run_id"]
    assert [m.content for m in at.session_state["session"].run.messages][-1] == "Sunny."
    rig.proxy.holds.release(hold["id"], "send")
    assert then.answer() == "Still sunny."


def test_the_playground_says_nothing_of_held_calls_without_a_proxy_of_one_s_own(rig_of, open_app, monkeypatch):
    rig = rig_of(Reply.chat("sent"), pause="always")
    agent = Agent(rig, ASK)
    held(rig)
    monkeypatch.setenv("AGENTCORE_USER", "someone-else")
    at = playground(open_app, monkeypatch, rig)
    assert not [a for a in at.text_area if str(a.key).startswith("playground_held_")]
    rig.proxy.holds.release(rig.proxy.holds.listing()[0]["id"], "send")
    assert agent.answer() == "sent"


def test_a_held_request_reads_as_written_its_json_open_and_its_words_unescaped(rig_of, open_app, monkeypatch):
    rig = rig_of(Reply.chat("sent"), pause="always")
    agent = Agent(rig, [{"role": "user", "content": "Wetter in München?"}])
    [hold] = held(rig)
    at = page(open_app, monkeypatch, rig)
    assert "Wetter in München?" in at.text_area(key=f"held_edit_{hold['id']}").value
    [shown] = [j for j in at.json if "messages" in json.loads(j.proto.body)]
    assert shown.proto.expanded
    assert json.loads(shown.proto.body)["messages"][0]["content"] == "Wetter in München?"
    rig.proxy.holds.release(hold["id"], "send")
    assert agent.answer() == "sent"


def test_with_nothing_held_or_the_proxy_gone_the_pages_say_so_and_the_playground_says_nothing(
    rig_of, open_app, monkeypatch
):
    from support.servers import free_port

    from agentcore.proxy.control import announce

    rig = rig_of(Reply.chat("sent"), pause="always")
    at = page(open_app, monkeypatch, rig)
    assert any("No call is held now." in c.value for c in at.caption)
    assert not at.warning
    at = playground(open_app, monkeypatch, rig)
    assert not any("Held by the recording proxy" in m.value for m in at.markdown)
    announce(rig.store, f"http://127.0.0.1:{free_port()}")  # a proxy that stopped without saying so
    at = page(open_app, monkeypatch, rig)
    assert not at.exception
    [warning] = at.warning
    assert "does not answer" in warning.value and "\n" not in warning.value.strip()
    assert not any("No call is held now." in c.value for c in at.caption)
    at = playground(open_app, monkeypatch, rig)
    assert not at.exception
    assert not any("Held by the recording proxy" in m.value for m in at.markdown)

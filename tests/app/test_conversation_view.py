"""The playground's conversation with a user, under AppTest on the scripted model: the person types the user's next
turn after an answer and the agent answers it; a simulated user (a stand-in server on 127.0.0.1) drafts its turn,
which the person sends as it is or types over; each turn shows and keeps its author."""

from __future__ import annotations

from support.app import click, session, start, texts
from support.simulated_user import ends
from support.stand_in import Reply, StandIn

from agentcore.messages import AssistantMessage, UserMessage
from agentcore.store.runs import Store


def _answered(at) -> None:
    click(at, "run_to_end")
    assert session(at).run.stop_reason == "answer"


def _users(run):
    return [m for m in run.messages if isinstance(m, UserMessage)]


def test_the_person_types_the_next_turn_and_the_agent_answers_it(open_app) -> None:
    at = open_app()
    start(at, "weather")
    _answered(at)
    at.text_area(key="conversation_turn").set_value("And what about Oslo?")
    click(at, "send_turn")
    run = session(at).run
    assert [(m.content, m.author.kind) for m in _users(run)][1] == ("And what about Oslo?", "person")
    assert _users(run)[0].author.kind == "person" and run.conversation.user.human
    assert run.stop_reason == "answer" and "Oslo" in run.messages[-1].content  # the agent answered the turn
    assert isinstance(run.messages[-1], AssistantMessage)
    assert ":material/person: person" in texts(at)  # the author beside the turn
    assert Store().load_run(run.id).messages[-1] == run.messages[-1]  # kept as it went


def test_an_empty_turn_is_not_sent(open_app) -> None:
    at = open_app()
    start(at, "weather")
    _answered(at)
    before = len(session(at).run.messages)
    at.text_area(key="conversation_turn").set_value("   ")
    click(at, "send_turn")
    assert len(session(at).run.messages) == before and session(at).notice == "Type the user's next turn first."


def _simulate(at, url: str) -> None:
    at.text_input(key="sim_persona").set_value("A traveller.")
    at.text_input(key="sim_goal").set_value("Know the weather in Oslo.")
    at.text_input(key="sim_model").set_value(f"openai:sim@{url}/v1")
    click(at, "draw_turn")


def test_a_simulated_turn_is_drafted_then_sent_as_it_is_or_typed_over(open_app) -> None:
    with StandIn(Reply.chat("What about Oslo?"), Reply.chat("And Bergen?"), ends('{"reason": "goal met"}')) as sim:
        at = open_app()
        start(at, "weather")
        _answered(at)
        _simulate(at, sim.url)
        assert at.text_area(key="conversation_turn").value == "What about Oslo?"
        click(at, "send_turn")  # sent as drafted: the simulator's turn
        run = session(at).run
        said = _users(run)[-1]
        assert (said.content, said.author.kind, said.author.model) == ("What about Oslo?", "simulator", "openai:sim")
        assert said.author.run_id == run.conversation.simulator_runs[0]
        assert Store().load_run(said.author.run_id).spawned_by.run_id == run.id  # its call, kept and linked
        _simulate(at, sim.url)
        at.text_area(key="conversation_turn").set_value("Actually, Tromsø.")
        click(at, "send_turn")  # typed over the simulator's draft: the person's turn
        said = _users(session(at).run)[-1]
        assert (said.content, said.author.kind, said.author.typed_over) == ("Actually, Tromsø.", "person", "openai:sim")
        _simulate(at, sim.url)  # the simulator ends the conversation
        run = session(at).run
        assert (run.conversation.ended_by, run.conversation.reason) == ("simulator", "goal met")
        assert "conversation_turn" not in [t.key for t in at.text_area]  # no turn is waited for now
        assert "goal met · ended by the simulator" in "".join(str(c.value) for c in at.caption)
        assert len(sim.seen) == 3


def test_a_simulated_user_without_a_usable_model_says_why(open_app) -> None:
    at = open_app()
    start(at, "weather")
    _answered(at)
    at.text_input(key="sim_persona").set_value("A traveller.")
    at.text_input(key="sim_goal").set_value("Know the weather.")
    at.text_input(key="sim_model").set_value("nosuch:model")
    click(at, "draw_turn")
    assert session(at).notice.startswith("The simulated user: user.model: unknown provider")
    at.text_input(key="sim_goal").set_value("")
    click(at, "draw_turn")
    assert session(at).notice.startswith("The simulated user: goal:")

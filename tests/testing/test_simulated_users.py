"""A pinned test's simulated user, against a stand-in simulator server on 127.0.0.1: scripted turns, then the
simulator's, each turn stored with its author and each simulator call a stored run; replayed with no simulator call;
hostile simulator output that ends the conversation or is cut, never a crash or a turn past max_turns."""

from __future__ import annotations

import json

import pytest
from support.simulated_user import AGENT_ANSWER, booking_test, calls, ends
from support.stand_in import Reply, StandIn

from agentcore.messages import UserMessage
from agentcore.store.runs import Store
from agentcore.testing import pinned, users
from agentcore.testing.runner import parse_config, run_matrix
from agentcore.transcript import from_dict, to_dict


def _user_turns(run):
    return [m for m in run.messages if isinstance(m, UserMessage)]


def _play(simulator: StandIn, agent: StandIn, test=None, **options):
    test = test or booking_test(simulator.url)
    matrix = run_matrix([test], [parse_config(f"openai:agent@{agent.url}/v1")], **options)
    return matrix.cells[0][0]


def test_two_scripted_turns_then_the_simulator_until_it_ends_the_conversation(tmp_path) -> None:
    with (
        StandIn(Reply.chat(AGENT_ANSWER)) as agent,
        StandIn(Reply.chat("Friday, 4 of us, at 19:00."), ends('{"reason": "goal met"}')) as simulator,
    ):
        cell = _play(simulator, agent)
    run = cell.run
    turns = _user_turns(run)
    assert [t.content for t in turns[1:3]] == ["It's for a birthday dinner.", "Somewhere quiet, please."]
    assert [t.author.kind for t in turns] == ["script", "script", "script", "simulator"]
    assert turns[3].content == "Friday, 4 of us, at 19:00."
    assert turns[3].author.model == "openai:sim"  # the model, not its address
    assert run.conversation.reason == "goal met" and run.conversation.ended_by == "simulator"
    assert run.conversation.simulated_turns == 1
    # two calls: one wrote the turn, one ended; each a run linked to the conversation, named by the turn it wrote
    assert len(simulator.seen) == 2
    assert run.conversation.simulator_runs == [s.id for s in cell.run.conversation.runs]
    assert all(s.spawned_by.run_id == run.id for s in cell.run.conversation.runs)
    assert turns[3].author.run_id == cell.run.conversation.runs[0].id
    # the simulator reads the conversation with the roles flipped: its own turns as assistant, the agent's as user
    sent = simulator.seen[0].body["messages"]
    assert [m["role"] for m in sent[2:5]] == ["assistant", "user", "assistant"]
    assert sent[2]["content"] == "Hi, I want to book a table." and sent[3]["content"] == AGENT_ANSWER
    assert "A busy parent" in sent[0]["content"] and sent[0]["role"] == "system"
    assert simulator.seen[0].body["seed"] == 7
    # every turn's author and the simulator's runs survive a save and a load, and the transcript's round trip
    store = Store(tmp_path / "runs.db")
    for saved in (run, *cell.run.conversation.runs):
        store.save_run(saved)
    loaded = store.load_run(run.id)
    assert [t.author for t in _user_turns(loaded)] == [t.author for t in turns]
    assert loaded.conversation.model_dump() == run.conversation.model_dump()
    assert from_dict(to_dict(loaded)) == loaded
    assert store.load_run(cell.run.conversation.runs[1].id).spawned_by.run_id == run.id
    said = store.load_run(cell.run.conversation.runs[1].id).link_lines
    assert said == [f"simulated user of run {run.id}, started at its step 4"]


def test_a_recorded_conversation_replays_its_user_turns_with_no_simulator_call() -> None:
    with (
        StandIn(Reply.chat(AGENT_ANSWER)) as agent,
        StandIn(Reply.chat("Friday — 4 of us — at 19:00 ✓"), ends('{"reason": "goal met"}')) as simulator,
    ):
        recorded = _play(simulator, agent).run
    test = booking_test(simulator.url).model_copy(update={"pinned": recorded})
    test = pinned.loads(pinned.dumps(test))  # as a test file keeps it
    with StandIn(Reply.chat(AGENT_ANSWER)) as agent, StandIn(Reply.chat("never asked")) as simulator:
        for mode in ("replay", "auto"):
            cell = _play(simulator, agent, test, users_mode=mode)
            replayed = [json.dumps(t.data, ensure_ascii=False).encode() for t in _user_turns(cell.run)]
            assert replayed == [json.dumps(t.data, ensure_ascii=False).encode() for t in _user_turns(recorded)]
            assert cell.run.conversation.replayed and cell.run.conversation.runs == []
            assert cell.passed, cell.failures
        assert simulator.seen == []  # not one simulator call
        here = test.user.model_copy(update={"model": f"openai:sim@{simulator.url}/v1"})
        for mode in ("replay", "auto"):  # the simulator's address is not what makes a replay
            assert _play(simulator, agent, test.model_copy(update={"user": here}), users_mode=mode).passed
        assert simulator.seen == []
        drawn = _play(simulator, agent, test.model_copy(update={"user": here}), users_mode="simulate")
    assert len(simulator.seen) == 4  # --resimulate: a new user, who never ends here, up to max_turns
    assert _user_turns(drawn.run)[3].content == "never asked"


def test_replaying_a_test_with_no_recorded_conversation_is_refused() -> None:
    from agentcore.errors import UsageError

    with pytest.raises(UsageError, match="no recorded conversation"):
        run_matrix([booking_test("http://127.0.0.1:9")], [parse_config("scripted")], users_mode="replay")
    with pytest.raises(UsageError, match="played by a person"):
        run_matrix([booking_test("http://127.0.0.1:9", model="human")], [parse_config("scripted")])
    with pytest.raises(UsageError, match="user.model"):
        run_matrix([booking_test("http://127.0.0.1:9", model="nosuch:m")], [parse_config("scripted")])


def test_each_trial_draws_its_own_seeded_user() -> None:
    with StandIn(Reply.chat(AGENT_ANSWER)) as agent, StandIn(ends('{"reason": "gave up"}')) as simulator:
        cell = _play(simulator, agent, trials=3)
    assert sorted(s.body["seed"] for s in simulator.seen) == [7, 8, 9]
    assert [t.run.conversation.reason for t in cell.trials] == ["gave up"] * 3


@pytest.mark.parametrize(
    ("reply", "reason", "note"),
    [
        (ends('{"reason": 7}'), "unclear", "gave no reason"),
        (ends("not json at all"), "unclear", "not json at all"),
        (ends('{"reason": "goal met", "extra": 1}'), "goal met", None),
        (calls("book_table"), "simulator failed", "'book_table'"),
        (Reply.chat(""), "simulator failed", "empty turn"),
        (Reply.chat("   \n"), "simulator failed", "empty turn"),
        (Reply(b'{"error": {"message": "bad request"}}', status=400), "simulator failed", "400"),
        (Reply(b"<html>not json", content_type="text/html"), "simulator failed", None),
    ],
)
def test_hostile_simulator_output_ends_the_conversation_saying_why(reply, reason, note) -> None:
    with StandIn(Reply.chat(AGENT_ANSWER)) as agent, StandIn(reply) as simulator:
        cell = _play(simulator, agent)
    record = cell.run.conversation
    assert (record.reason, record.ended_by, record.simulated_turns) == (reason, "simulator", 0)
    assert note is None or note in (record.note or "")
    assert len(_user_turns(cell.run)) == 3 and len(simulator.seen) == 1


def test_a_simulator_that_never_ends_stops_at_max_turns() -> None:
    with StandIn(Reply.chat(AGENT_ANSWER)) as agent, StandIn(Reply.chat("And another thing?")) as simulator:
        cell = _play(simulator, agent, booking_test(simulator.url, max_turns=3))
    record = cell.run.conversation
    assert (record.reason, record.ended_by, record.simulated_turns) == ("turns exhausted", "max_turns", 3)
    assert len(simulator.seen) == 3 and len(_user_turns(cell.run)) == 6


def test_a_huge_simulated_turn_is_cut_and_breaks_the_length_rule() -> None:
    huge = "word " * 400_000  # 2 MB
    with StandIn(Reply.chat(AGENT_ANSWER)) as agent, StandIn(Reply.chat(huge), ends('{"reason": "goal met"}')) as sim:
        cell = _play(sim, agent)
    turn = _user_turns(cell.run)[3]
    assert len(turn.content) == users.MAX_TURN_CHARS
    assert [b.rule for b in cell.run.conversation.breaches] == ["too long"]
    assert cell.run.conversation.reason == "goal met"


def test_the_report_says_turns_goal_ender_and_fidelity() -> None:
    with (
        StandIn(Reply.chat(AGENT_ANSWER)) as agent,
        StandIn(Reply.chat("As an AI assistant I suggest Friday."), ends('{"reason": "goal met"}')) as simulator,
    ):
        cell = _play(simulator, agent)
    said = users.report(cell.run)
    assert said.startswith("4 user turns (3 script, 1 simulator) · 1 simulated turn · goal met")
    assert "ended by the simulator" in said and "simulator broke 1×: instructs" in said


def test_a_transcript_without_a_conversation_is_written_as_before_and_reads_back() -> None:
    from support.runs import scripted_run

    from agentcore.transcript import json_text

    run = scripted_run("weather")
    body = to_dict(run)
    assert "conversation" not in body and all("author" not in m for m in body["messages"])
    text = json_text(body)
    assert json_text(to_dict(from_dict(json.loads(text)))) == text  # byte for byte, as before authors


def test_an_agent_that_answers_only_with_tool_calls_leaves_the_simulator_nothing_to_read_and_nothing_crashes() -> None:
    """Each turn of the agent ends at its step budget on a call with no text: the fidelity rules read the last
    answer that had text (none here), and the conversation goes on to the simulator's end."""
    with (
        StandIn(calls("lookup")) as agent,
        StandIn(Reply.chat("Friday, 4 of us, at 19:00."), ends('{"reason": "goal met"}')) as simulator,
    ):
        cell = _play(simulator, agent)
    run = cell.run
    assert [t.author.kind for t in _user_turns(run)] == ["script", "script", "script", "simulator"]
    assert _user_turns(run)[3].content == "Friday, 4 of us, at 19:00."  # the simulator's, not its last turn again
    assert (run.conversation.reason, run.conversation.ended_by) == ("goal met", "simulator")
    assert len(run.steps) == 12 and run.stop_reason == "max_steps"  # four turns of three steps
    # the simulator is told the agent's turn had no text, after each user turn it read: it answers that
    sent = simulator.seen[0].body["messages"]
    assert [m["role"] for m in sent[-2:]] == ["assistant", "user"] and sent[-1]["content"] == users.SILENT
    assert sum(m["content"] == users.SILENT for m in sent) == 3


def test_a_simulator_run_that_made_no_call_wrote_no_turn() -> None:
    """Its input's last message is no reply of the simulator's: the conversation ends, saying it made no call."""
    from agentcore.messages import AssistantMessage, SystemMessage
    from agentcore.run import Run, RunConfig

    sim = Run(
        config=RunConfig.made_for("openai", "sim", [], None),
        messages=[SystemMessage(content="play"), UserMessage(content="hi"), AssistantMessage(content="my last turn")],
    )
    sim.stop_reason = "answer"
    said = users.read_reply(sim)
    assert isinstance(said, users.Ending) and said.reason == "simulator failed"

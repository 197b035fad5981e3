"""Compare with a simulated user: a pinned test's conversation played on each configuration (stand-in agents and a
stand-in simulator on 127.0.0.1), each column with a conversation of its own, its user seeded alike, every user turn
recorded with its author and the record ending where the simulator called end_conversation; `agentcore compare
--test FILE` prints each column's conversation and refuses a user it cannot play."""

from __future__ import annotations

import json

from support.simulated_user import AGENT_ANSWER, SimulatorServer, booking_test
from support.stand_in import Reply, StandIn

from agentcore.cli.main import main
from agentcore.compare import Comparison, parse_spec
from agentcore.messages import UserMessage
from agentcore.testing import pinned, users
from agentcore.transcript import from_dict

SIMULATED = ["Friday, please.", "Four of us, at 19:00."]
SCRIPTED = ["Hi, I want to book a table.", "It's for a birthday dinner.", "Somewhere quiet, please."]


def _user_turns(run):
    return [m for m in run.messages if isinstance(m, UserMessage)]


def _check_conversation(run) -> None:
    turns = _user_turns(run)
    assert [t.content for t in turns] == [*SCRIPTED, *SIMULATED]
    assert [t.author.kind for t in turns] == ["script"] * 3 + ["simulator"] * 2
    assert {t.author.model for t in turns[3:]} == {"openai:sim"}
    record = run.conversation
    assert (record.reason, record.ended_by, record.simulated_turns) == ("goal met", "simulator", 2)
    assert len(record.simulator_runs) == 3  # two turns written, then end_conversation
    assert [t.author.run_id for t in turns[3:]] == record.simulator_runs[:2]
    assert all(s.spawned_by.run_id == run.id for s in record.runs)


def test_each_column_plays_the_conversation_with_a_user_of_its_own_seeded_alike() -> None:
    with (
        StandIn(Reply.chat(AGENT_ANSWER)) as a,
        StandIn(Reply.chat("Sure, which day?")) as b,
        SimulatorServer(SIMULATED) as simulator,
    ):
        test = booking_test(simulator.url)
        specs = [parse_spec(f"openai:a@{a.url}/v1"), parse_spec(f"openai:b@{b.url}/v1")]
        comparison = Comparison(test.prompt, specs, max_steps=test.max_steps, play=users.playing(test))
        comparison.run_all()
    runs = comparison.runs
    assert runs[0].id != runs[1].id
    for run in runs:
        _check_conversation(run)
    assert set(runs[0].conversation.simulator_runs).isdisjoint(runs[1].conversation.simulator_runs)
    assert len(simulator.seen) == 6 and {body["seed"] for body in simulator.seen} == {7}
    assert len(a.seen) == len(b.seen) == 5  # each agent answered its own five user turns
    # each column's simulator read its own conversation: the agent's answers of that column
    read = [m["content"] for body in simulator.seen for m in body["messages"] if m["role"] == "user"]
    assert AGENT_ANSWER in read and "Sure, which day?" in read
    assert all(c.state == "done" for c in comparison.columns)


def test_step_all_steps_the_agent_alone() -> None:
    with StandIn(Reply.chat(AGENT_ANSWER)) as a, SimulatorServer(SIMULATED) as simulator:
        test = booking_test(simulator.url)
        specs = [parse_spec(f"openai:a@{a.url}/v1"), parse_spec(f"openai:b@{a.url}/v1")]
        comparison = Comparison(test.prompt, specs, play=users.playing(test))
        comparison.step_all()
    assert simulator.seen == [] and all(len(_user_turns(r)) == 1 for r in comparison.runs)


def test_agentcore_compare_test_prints_each_columns_conversation_and_bundles_its_turns(tmp_path, capsys) -> None:
    source, out = tmp_path / "booking.json", tmp_path / "bundle.json"
    with (
        StandIn(Reply.chat(AGENT_ANSWER)) as a,
        StandIn(Reply.chat("Sure, which day?")) as b,
        SimulatorServer(SIMULATED) as simulator,
    ):
        source.write_text(pinned.dumps(booking_test(simulator.url)))
        args = ["compare", "--test", str(source), "--config", f"openai:a@{a.url}/v1", "--config"]
        assert main([*args, f"openai:b@{b.url}/v1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    said = "5 user turns (3 script, 2 simulator) · 2 simulated turns · goal met · ended by the simulator"
    assert printed.count(said) == 2 and "\nconversations\n" in printed
    bundle = json.loads(out.read_text())
    assert bundle["prompt"] == SCRIPTED[0]
    for body in bundle["runs"]:
        _check_conversation(from_dict(body))


def test_agentcore_compare_test_refuses_a_user_it_cannot_play_and_a_prompt_beside_it(tmp_path, capsys) -> None:
    source = tmp_path / "booking.json"
    configs = ["--config", "scripted", "--config", "scripted:weather"]
    source.write_text(pinned.dumps(booking_test("http://127.0.0.1:9", model="human")))
    assert main(["compare", "--test", str(source), *configs]) == 2
    assert "played by a person" in capsys.readouterr().err
    source.write_text(pinned.dumps(booking_test("http://127.0.0.1:9")))
    assert main(["compare", "hello", "--test", str(source), *configs]) == 2
    assert "--test gives the prompt" in capsys.readouterr().err
    assert main(["compare", "--test", str(tmp_path / "none.json"), *configs]) == 2
    assert main(["compare", "--test", str(source), "--from", "abc:1", *configs]) == 2
    assert "give one" in capsys.readouterr().err

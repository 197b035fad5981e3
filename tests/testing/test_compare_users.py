"""Compare with a simulated user: a pinned test's conversation played on each configuration (stand-in agents and a
stand-in simulator on 127.0.0.1), each column with a conversation of its own, its user seeded alike, every user turn
recorded with its author and the record ending where the simulator called end_conversation; `agentcore compare
--test FILE` prints each column's conversation and refuses a user it cannot play."""

from __future__ import annotations

import json

import pytest
from support.simulated_user import AGENT_ANSWER, SimulatorServer, booking_test, calls
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


# -- Compare from step k of a stored conversation --------------------------------------------------------------------


def _stored_conversation(tmp_path, simulator, agent, **user):
    """The booking conversation played once by the stand-in agent and simulator, saved and read back: its run as
    stored, and the Store."""
    from agentcore.store.runs import Store
    from agentcore.testing.runner import parse_config, run_matrix

    matrix = run_matrix([booking_test(simulator.url, **user)], [parse_config(f"openai:agent@{agent.url}/v1")])
    store = Store(tmp_path / "runs.db")
    users.save_conversation(store, matrix.cells[0][0].run)
    return store.load_run(matrix.cells[0][0].run.id), store


def _forks_from(run, step, agent_urls, steps=None):
    from agentcore.compare import Origin

    origin = Origin(run, step, steps)
    specs = [parse_spec(f"openai:{name}@{url}/v1") for name, url in agent_urls]
    comparison = Comparison.from_step(origin, specs, tools=[], play=users.going_on(origin))
    comparison.run_all()
    return comparison


@pytest.mark.parametrize("step", [2, 3])
def test_compare_from_a_scripted_turn_plays_the_later_scripted_turns_then_a_user_of_each_columns_own(
    tmp_path, step
) -> None:
    with StandIn(Reply.chat(AGENT_ANSWER)) as agent, SimulatorServer(SIMULATED) as simulator:
        original, _ = _stored_conversation(tmp_path, simulator, agent)
        assert original.conversation.turn_steps == 3  # the test's step budget of a turn, kept with the record
        called = len(simulator.seen)
        comparison = _forks_from(original, step, [("a", agent.url), ("b", agent.url)])
    for run in comparison.runs:
        _check_conversation(run)  # the scripted turns after step k, then the simulator's two and its end
        assert run.parent.run_id == original.id and run.parent.step == step
        assert run.conversation.turn_steps == 3
    assert len(simulator.seen) - called == 6  # three calls on each column: two turns written, then the end
    assert all(c.state == "done" for c in comparison.columns)


def test_compare_from_a_simulated_turn_writes_only_the_turns_left_of_max_turns(tmp_path) -> None:
    with StandIn(Reply.chat(AGENT_ANSWER)) as agent, SimulatorServer(SIMULATED) as simulator:
        original, _ = _stored_conversation(tmp_path, simulator, agent, max_turns=2)
        assert (original.conversation.reason, original.conversation.simulated_turns) == ("turns exhausted", 2)
        called = len(simulator.seen)
        comparison = _forks_from(original, 4, [("a", agent.url), ("b", agent.url)])  # step 4 answers "Friday"
    for run in comparison.runs:
        turns = _user_turns(run)
        assert [t.content for t in turns] == [*SCRIPTED, *SIMULATED]
        assert [t.author.kind for t in turns] == ["script"] * 3 + ["simulator"] * 2
        # the one turn left of two: written, then the conversation ends with no further call
        record = run.conversation
        assert (record.reason, record.ended_by, record.simulated_turns) == ("turns exhausted", "max_turns", 2)
        assert len(record.simulator_runs) == 1
    assert len(simulator.seen) - called == 2


def test_each_agent_turn_of_a_fork_has_the_conversations_step_budget_the_turn_of_step_k_what_it_had_left(
    tmp_path,
) -> None:
    """An agent that never stops calling a tool uses each turn's three steps: the original makes 15 in five turns.
    From step 5, the second step of turn 2, that turn has two steps left, and every later turn three."""
    with StandIn(calls("lookup", AGENT_ANSWER)) as agent, SimulatorServer(SIMULATED) as simulator:
        original, _ = _stored_conversation(tmp_path, simulator, agent)
        assert len(original.steps) == 15 and original.steps[4].message_count > original.steps[3].message_count
        comparison = _forks_from(original, 5, [("a", agent.url), ("b", agent.url)])
    for run in comparison.runs:
        assert len(run.steps) == 15 and run.stop_reason == "max_steps"
        asked = [i for i, m in enumerate(run.messages) if isinstance(m, UserMessage)]
        # each user turn answered by three steps: the first step after each is at 1, 4, 7, 10, 13
        firsts = [next(k for k, s in enumerate(run.steps, 1) if s.message_count > i) for i in asked]
        assert firsts == [1, 4, 7, 10, 13]
        assert [t.content for t in _user_turns(run)] == [*SCRIPTED, *SIMULATED]


def test_a_set_number_of_steps_or_a_person_as_the_user_leaves_the_agent_to_go_on_alone(tmp_path) -> None:
    from agentcore.compare import Origin

    with StandIn(Reply.chat(AGENT_ANSWER)) as agent, SimulatorServer(SIMULATED) as simulator:
        original, _ = _stored_conversation(tmp_path, simulator, agent)
    assert users.going_on(Origin(original, 2, 1)) is None
    assert users.going_on(Origin(original, 2)) is not None
    person = original.model_copy(deep=True)
    person.conversation.user = person.conversation.user.model_copy(update={"model": "human"})
    assert users.going_on(Origin(person, 2)) is None
    plain = original.model_copy(deep=True)
    plain.conversation = None
    assert users.going_on(Origin(plain, 2)) is None


def test_agentcore_compare_from_a_conversation_goes_on_with_it_and_keeps_the_simulators_runs(tmp_path, capsys) -> None:
    with StandIn(Reply.chat(AGENT_ANSWER)) as agent, SimulatorServer(SIMULATED) as simulator:
        original, store = _stored_conversation(tmp_path, simulator, agent)
        capsys.readouterr()
        configs = ["--config", f"openai:a@{agent.url}/v1", "--config", f"openai:b@{agent.url}/v1"]
        db = str(tmp_path / "runs.db")
        assert main(["compare", "--from", f"{original.id}:3", "--db", db, *configs]) == 0
    printed = capsys.readouterr().out
    assert "the conversation to its end with a simulated user (openai:sim) on each of 2" in printed
    said = "5 user turns (3 script, 2 simulator) · 2 simulated turns · goal met · ended by the simulator"
    assert printed.count(said) == 2 and "\nconversations\n" in printed
    forks = store.children(original.id)
    assert len(forks) == 2
    for fork in forks:
        run = store.load_run(fork.id)
        _check_conversation(run)
        for sim_id in run.conversation.simulator_runs:  # each simulator call kept, linked to the fork
            assert store.load_run(sim_id).spawned_by.run_id == run.id

"""`agentcore test` on a conversation with a simulated user (a stand-in simulator server on 127.0.0.1): it prints
the turns, whether the goal was met and who ended it, keeps the conversation and the simulator's runs; `agentcore
pin` keeps the user; `--replay-users` replays the recorded turns with no simulator call, `--resimulate` draws anew."""

from __future__ import annotations

import json

from support.simulated_user import AGENT_ANSWER, booking_test, ends
from support.stand_in import Reply, StandIn

from agentcore.cli.main import main
from agentcore.messages import UserMessage
from agentcore.store.runs import Store
from agentcore.testing import pinned


def test_a_conversation_is_run_kept_pinned_and_replayed_with_no_simulator_call(tmp_path, capsys) -> None:
    db, source, kept = tmp_path / "runs.db", tmp_path / "booking.json", tmp_path / "pinned.json"
    with (
        StandIn(Reply.chat(AGENT_ANSWER)) as agent,
        StandIn(Reply.chat("Friday, 4 of us, at 19:00."), ends('{"reason": "goal met"}')) as simulator,
    ):
        source.write_text(pinned.dumps(booking_test(simulator.url)))
        config = f"openai:agent@{agent.url}/v1"
        assert main(["test", str(source), "--config", config, "--db", str(db), "--json", str(tmp_path / "r.json")]) == 0
        out = capsys.readouterr().out
        assert len(simulator.seen) == 2
    assert "agent pass · 4 user turns (3 script, 1 simulator) · 1 simulated turn · goal met" in out
    assert "ended by the simulator · simulator faithful" in out
    outcome = json.loads((tmp_path / "r.json").read_text())["cells"][0]["outcomes"][0]
    assert outcome["conversation"].startswith("4 user turns (3 script, 1 simulator) · 1 simulated turn · goal met")
    store = Store(db)
    run_id = out.split("kept as run ")[1].split()[0]
    run = store.load_run(run_id)
    sims = [store.load_run(i) for i in run.conversation.simulator_runs]
    assert [s.spawned_by.run_id for s in sims] == [run_id, run_id]
    assert f"kept as run {run_id} with its simulator's runs {sims[0].id}, {sims[1].id}\n" in out
    assert main(["pin", run_id, "-o", str(kept), "--db", str(db)]) == 0
    test = pinned.load(kept)
    assert test.user == booking_test(simulator.url).user and len(test.turns) == 2

    with StandIn(Reply.chat(AGENT_ANSWER)) as agent, StandIn(Reply.chat("a new turn")) as simulator:
        config = f"openai:agent@{agent.url}/v1"
        capsys.readouterr()
        assert main(["test", str(kept), "--config", config, "--replay-users", "--db", str(db)]) == 0
        out = capsys.readouterr().out
        assert simulator.seen == []
        assert "1 replayed turn · goal met" in out
    replayed = store.load_run(out.split("kept as run ")[1].split()[0])
    assert replayed.conversation.replayed and replayed.id != run_id
    said = [m.content.encode() for m in replayed.messages if isinstance(m, UserMessage)]
    assert said == [m.content.encode() for m in run.messages if isinstance(m, UserMessage)]
    with StandIn(Reply.chat(AGENT_ANSWER)) as agent, StandIn(Reply.chat("a new turn")) as simulator:
        config = f"openai:agent@{agent.url}/v1"
        test.user = test.user.model_copy(update={"model": f"openai:sim@{simulator.url}/v1"})
        kept.write_text(pinned.dumps(test))
        assert main(["test", str(kept), "--config", config, "--resimulate", "--no-db"]) == 0
        assert len(simulator.seen) == 4  # a user who never ends, up to max_turns
        assert "4 simulated turns · goal not met (turns exhausted) · ended by the turn limit" in capsys.readouterr().out
        assert main(["test", str(kept), "--replay-users", "--resimulate", "--no-db"]) == 2
        assert "give one" in capsys.readouterr().err


def test_replaying_users_of_a_test_with_no_recorded_conversation_is_a_usage_error(tmp_path, capsys) -> None:
    source = tmp_path / "booking.json"
    source.write_text(pinned.dumps(booking_test("http://127.0.0.1:9")))
    assert main(["test", str(source), "--config", "scripted", "--replay-users", "--no-db"]) == 2
    assert "no recorded conversation" in capsys.readouterr().err

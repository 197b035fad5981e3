"""The compare page opened from a pinned test with a simulated user (AppTest, the scripted model as the agent, a
stand-in simulator on 127.0.0.1): Run all plays the test's conversation on every column, each with a user of its
own, and each column says how its conversation went; a user played by a person is refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.app import button, comparison, settle
from support.simulated_user import SimulatorServer, booking_test

from agentcore.messages import UserMessage
from agentcore.testing.pinned import dumps

PAGE = "views/compare.py"
SCRIPTED = ["Hi, I want to book a table.", "It's for a birthday dinner.", "Somewhere quiet, please."]
SIMULATED = ["Friday, please.", "Four of us, at 19:00."]
SAID = "5 user turns (3 script, 2 simulator) · 2 simulated turns · goal met · ended by the simulator"
LEAKED = "simulator broke 2×: goal leaked"  # neither scripted agent asks the day or the party: the user gives both


@pytest.fixture
def from_test(open_app, tmp_path: Path, monkeypatch):
    """Open the compare page as the Tests page's Compare button does, from the pinned test given."""
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    monkeypatch.setenv("AGENTCORE_TESTS", str(tmp_path / "suite"))

    def open_(test):
        (tmp_path / "suite").mkdir()
        (tmp_path / "suite" / "booking.json").write_text(dumps(test))
        at = open_app("views/tests.py")
        at.selectbox(key="tests_compare_pick").set_value("booking.json").run()
        at.button(key="tests_compare").click().run()
        assert not at.exception, at.exception
        at.switch_page(PAGE)  # AppTest draws the page it was last sent to, as a browser does after the switch
        for i, scenario in enumerate(["weather", "tool_error"]):
            at.selectbox(key=f"cmp_provider_{i}").set_value("scripted").run()
            at.selectbox(key=f"cmp_scenario_{i}").set_value(scenario).run()
        return at

    return open_


def _played(at):
    """Each column's run, checked to hold the booking conversation: its scripted turns, the simulator's two, its end."""
    runs = [c.run for c in comparison(at).columns]
    for run in runs:
        turns = [m for m in run.messages if isinstance(m, UserMessage)]
        assert [t.content for t in turns] == [*SCRIPTED, *SIMULATED]
        assert [t.author.kind for t in turns] == ["script"] * 3 + ["simulator"] * 2
        assert (run.conversation.ended_by, run.conversation.reason) == ("simulator", "goal met")
    return runs


def test_run_all_plays_the_tests_conversation_on_every_column_and_says_how_each_went(from_test):
    with SimulatorServer(SIMULATED) as simulator:
        at = from_test(booking_test(simulator.url))
        assert any("**Conversation** (the pinned test booking)" in m.value for m in at.markdown)
        button(at, "Run all").click()
        settle(at)
    assert not at.exception, at.exception
    runs = _played(at)
    assert set(runs[0].conversation.simulator_runs).isdisjoint(runs[1].conversation.simulator_runs)
    assert len(simulator.seen) == 6 and {body["seed"] for body in simulator.seen} == {7}  # the same seed on each
    said = [c.value for c in at.main.caption if c.value.startswith((":material/forum:", "simulator, message"))]
    expected = []
    for run in runs:  # under each column's result: its conversation, then each breach of the simulator
        expected.append(f":material/forum: {SAID} · {LEAKED}")
        expected += [f"simulator, message {b.message}: goal leaked: {b.why}" for b in run.conversation.breaches]
    assert said == expected and len(expected) == 6
    assert "gives 'Friday' of the goal before the agent asked for it" in expected[1]


def test_a_user_played_by_a_person_is_refused_in_one_line(from_test):
    at = from_test(booking_test("http://127.0.0.1:9", model="human"))
    (refused,) = [w.value for w in at.warning if "person" in w.value]
    assert refused == (
        "Test booking's user is played by a person, so Compare cannot play it: open the test's run in the "
        "playground, where you take the user's place."
    )
    assert button(at, "Run all").disabled and button(at, "Step all").disabled
    at.text_area(key="cmp_prompt").set_value("What is the weather in Paris?").run()  # no longer the test's task
    assert not button(at, "Run all").disabled and not [w for w in at.warning if "person" in w.value]


def test_runs_per_configuration_play_the_conversation_again(from_test):
    with SimulatorServer(SIMULATED) as simulator:
        at = from_test(booking_test(simulator.url))
        button(at, "Run all").click()
        settle(at)
        at.number_input(key="cmp_repeat_n").set_value(1)
        at.button(key="cmp_repeat").click().run()
    assert not at.exception, at.exception
    (first, again) = at.session_state["compare_state"].repeats
    assert [r.conversation.simulated_turns for r in again.runs] == [2, 2]
    assert {r.id for r in again.runs}.isdisjoint(r.id for r in first.runs)


def test_compare_from_a_step_of_a_stored_conversation_goes_on_with_it_on_every_column(
    open_app, tmp_path: Path, monkeypatch
):
    """The Runs page's Compare from step 2 of a stored conversation: the origin says the conversation goes on; Run all
    plays the scripted turn the original had after step 2, then a simulated user of each column's own; every fork and
    each simulator call is kept in the runs library under its run."""
    from support.app import compare_from_runs_page

    from agentcore.store.runs import Store
    from agentcore.testing import users
    from agentcore.testing.runner import parse_config, run_matrix

    db = tmp_path / "runs.db"
    monkeypatch.setenv("AGENTCORE_DB", str(db))
    with SimulatorServer(SIMULATED) as simulator:
        matrix = run_matrix([booking_test(simulator.url)], [parse_config("scripted:weather")])
        store = Store(db)
        users.save_conversation(store, matrix.cells[0][0].run)
        original = store.load_run(matrix.cells[0][0].run.id)
        called = len(simulator.seen)
        at = compare_from_runs_page(open_app, original, 2, test_run=True)
        going_on = [c.value for c in at.main.caption if c.value.startswith(":material/forum: **Conversation**")]
        assert len(going_on) == 1 and "Run all ends the turn step 2 is in" in going_on[0]
        at.selectbox(key="cmp_provider_1").set_value("scripted").run()
        at.selectbox(key="cmp_scenario_1").set_value("tool_error").run()
        button(at, "Run all").click()
        settle(at)
    assert not at.exception, at.exception
    runs = _played(at)
    for run in runs:
        assert run.parent.run_id == original.id
    assert len(simulator.seen) - called == 6
    said = [c.value for c in at.main.caption if c.value.startswith(":material/forum: 5 user turns")]
    assert len(said) == 2
    kept = {f.id for f in Store(db).children(original.id)}
    assert kept == {r.id for r in runs}
    for run in runs:
        assert all(Store(db).load_run(s).spawned_by.run_id == run.id for s in run.conversation.simulator_runs)

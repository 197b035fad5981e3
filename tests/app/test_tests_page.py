"""The Tests page (AppTest over the app and a real database): pin a run, run the matrix, open a failing cell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcore import Agent, Run, RunConfig, create_provider, toolbox
from agentcore.store.runs import Store
from agentcore.testing.pinned import load

PAGE = "views/tests.py"


@pytest.fixture
def stored_run(tmp_path: Path, monkeypatch) -> Run:
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    monkeypatch.setenv("AGENTCORE_TESTS", str(tmp_path / "suite"))
    tools = toolbox.get_tools("get_weather")
    run = Run.start("Weather in Paris and Rome?", RunConfig(provider="scripted", model="weather"))
    Agent(create_provider("scripted", "weather", scenario="weather"), tools).run(run)
    Store(tmp_path / "runs.db").save_run(run)
    return run


def test_pin_as_test_writes_a_file_that_proposes_the_run_tool_sequence(stored_run, open_app, tmp_path) -> None:
    at = open_app(PAGE)
    assert "No test files" in at.info[0].value
    at.selectbox(key="tests_pin").set_value(stored_run.id).run()
    (shown,) = at.main.json  # the proposed expectations, before pinning
    proposed = json.loads(shown.value)
    assert [(c["name"], c["args"]) for c in proposed["tool_calls"]["calls"]] == [
        ("get_weather", {"equals": {"city": "Paris"}}),
        ("get_weather", {"equals": {"city": "Rome"}}),
    ]
    at.button(key="tests_pin_button").click().run()
    assert not at.exception
    (path,) = (tmp_path / "suite").iterdir()
    test = load(path)
    assert [c.name for c in test.expect.tool_calls.calls] == ["get_weather", "get_weather"]
    assert json.loads(path.read_bytes())["expect"] == proposed  # the file holds what the page proposed
    assert list(at.dataframe[0].value["file"]) == [path.name]


def test_the_matrix_shows_each_cell_and_a_failing_cell_opens_its_run_at_the_departing_step(
    stored_run, open_app, tmp_path
) -> None:
    at = open_app(PAGE)
    at.selectbox(key="tests_pin").set_value(stored_run.id).run()
    at.button(key="tests_pin_button").click().run()
    at.text_area(key="tests_configs").set_value("replay\nscripted:runaway").run()
    at.button(key="tests_run").click().run()
    assert not at.exception
    assert [s.value for s in at.success if s.value == "pass"] == ["pass"]
    (failure,) = [e.value for e in at.error]
    assert failure.startswith("FAIL: tool") and "weather" in failure
    saved = Store(tmp_path / "runs.db").list_runs()
    assert len(saved) == 2, "the failing run is kept in the runs library"
    at.button(key="tests_open_0_1").click().run()
    assert not at.exception
    session = at.session_state["session"]
    assert session.run.config.model == "runaway" and session.inspect_step == 1
    # the playground opens on its Steps tab with that step picked, not on the newest messages
    assert at.session_state["playground_view"] == "Steps"
    assert at.selectbox(key="inspect_step").value == 1


def test_a_bad_configuration_is_said_in_one_line(stored_run, open_app) -> None:
    at = open_app(PAGE)
    at.selectbox(key="tests_pin").set_value(stored_run.id).run()
    at.button(key="tests_pin_button").click().run()
    at.text_area(key="tests_configs").set_value("nosuch:model").run()
    at.button(key="tests_run").click().run()
    assert "unknown provider 'nosuch'" in at.error[0].value


def test_pinning_a_run_that_did_not_finish_warns_first(stored_run, open_app, tmp_path) -> None:
    tools = toolbox.get_tools("get_weather")
    open_run = Run.start("Weather in Oslo?", RunConfig(provider="scripted", model="weather"))
    Agent(create_provider("scripted", "weather", scenario="weather"), tools).step(open_run)
    assert open_run.stop_reason is None
    Store(tmp_path / "runs.db").save_run(open_run)
    at = open_app(PAGE)
    at.selectbox(key="tests_pin").set_value(stored_run.id).run()
    assert not at.warning  # it ended on its answer
    at.selectbox(key="tests_pin").set_value(open_run.id).run()
    (warning,) = at.warning
    assert "did not finish" in warning.value and "still open after 1 step" in warning.value


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_two_tests_pinned_from_the_same_prompt_get_different_names(stored_run, open_app, tmp_path) -> None:
    at = open_app(PAGE)
    at.selectbox(key="tests_pin").set_value(stored_run.id).run()
    at.button(key="tests_pin_button").click().run()
    at.button(key="tests_pin_button").click().run()
    assert not at.exception
    names = sorted(load(p).name for p in (tmp_path / "suite").iterdir())
    assert names == ["Weather in Paris and Rome?", "Weather in Paris and Rome? (2)"]
    assert sorted(at.dataframe[0].value["test"]) == names


def test_the_default_test_folder_is_in_the_users_agentcore_folder(open_app, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("AGENTCORE_TESTS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    at = open_app(PAGE)
    assert at.text_input(key="tests_folder").value == str(tmp_path / "home" / ".agentcore" / "tests")


def test_a_test_opens_in_compare_with_its_task_and_its_expected_answer(stored_run, open_app, tmp_path) -> None:
    from agentcore.testing.pinned import AnswerExpect, dumps, propose

    test = propose(stored_run, name="weather in two cities")
    test.expect.answer = AnswerExpect(contains=["Paris", "Lima"])  # Lima: no answer of this run holds it
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "two-cities.json").write_text(dumps(test))
    at = open_app(PAGE)
    assert at.button(key="tests_compare").disabled  # nothing chosen yet
    at.selectbox(key="tests_compare_pick").set_value("two-cities.json").run()
    at.button(key="tests_compare").click().run()
    assert not at.exception, at.exception
    assert at.text_area(key="cmp_prompt").value == "Weather in Paris and Rome?"
    assert at.multiselect(key="cmp_tools").value == ["get_weather"]
    assert (at.selectbox(key="cmp_provider_0").value, at.selectbox(key="cmp_scenario_0").value) == (
        "scripted",
        "weather",
    )
    shown = [m.value for m in at.markdown if "Expected answer" in m.value]
    assert shown == [
        ":material/task_alt: **Expected answer** (the pinned test weather in two cities): contains `Paris`, `Lima`"
    ]
    at.switch_page("views/compare.py")  # AppTest draws the page it was last sent to, as a browser does after the switch
    at.selectbox(key="cmp_provider_1").set_value("scripted").run()  # the second column: not the embedded model
    at.selectbox(key="cmp_scenario_1").set_value("tool_error").run()
    next(b for b in at.main.button if b.label == "Run all").click()
    at.run()
    assert at.session_state["compare_state"].comparison.wait(timeout=60), "the columns did not finish"
    at.run()
    assert not at.exception, at.exception
    marks = [m.value for m in at.markdown if "not contain it]" in m.value or "contains the expected answer]" in m.value]
    assert marks == [  # the pinned model's column answers about Paris, the calculator's about neither city
        ":orange-badge[:material/close: does not contain it] `Lima` missing",
        ":orange-badge[:material/close: does not contain it] `Paris`, `Lima` missing",
    ]


def test_two_suites_in_subfolders_are_listed_by_their_paths_and_run_together(stored_run, open_app, tmp_path) -> None:
    from agentcore.exports import export_test
    from agentcore.testing import pinned

    test = pinned.propose(stored_run)
    for suite, name in (("a", "first"), ("b/deeper", "second")):
        folder = tmp_path / "suite" / suite
        folder.mkdir(parents=True)
        (folder / f"{name}.json").write_text(export_test(test.model_copy(update={"name": name})))
    (tmp_path / "suite" / ".hidden").mkdir()
    (tmp_path / "suite" / ".hidden" / "skipped.json").write_text(export_test(test))
    at = open_app(PAGE)
    assert list(at.dataframe[0].value["file"]) == ["a/first.json", "b/deeper/second.json"]
    at.button(key="tests_run").click().run()
    assert not at.exception
    assert [s.value for s in at.success] == ["pass", "pass"]  # both suites' tests, one matrix
    assert any(h.value.startswith("Matrix: 2 of 2 passed") for h in at.header)


def test_a_stop_leaves_the_cells_not_started_not_run_and_keeps_those_that_ended(stored_run) -> None:
    import threading

    from agentcore.testing import pinned
    from agentcore.testing.runner import parse_config, run_matrix

    tests = [pinned.propose(stored_run).model_copy(update={"name": f"t{k}"}) for k in range(3)]
    cancel, seen = threading.Event(), []

    def ended(row, column, cell):
        seen.append((row, column, cell.passed))
        cancel.set()  # Stop pressed as the first cell ends

    matrix = run_matrix(tests, [parse_config("replay")], on_cell=ended, cancel=cancel, max_workers=1)
    assert seen[0] == (0, 0, True) and len(seen) == 3  # each cell is reported as it ends, the stopped ones too
    assert matrix.cells[0][0].passed
    assert [c.first_failure for c in (matrix.cells[1][0], matrix.cells[2][0])] == [
        "stopped: not run: the test run was stopped"
    ] * 2
    assert "STOPPED" in matrix.table()
    untouched = run_matrix(tests, [parse_config("replay")], cancel=threading.Event())
    assert untouched.passed  # a Stop not pressed stops nothing

"""Pinned tests: the file format, each expectation (a pass and a fail), replay and live, the matrix, JUnit, the CLI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from agentcore.cli.main import main
from agentcore.errors import TranscriptError, UsageError
from agentcore.loop import Agent
from agentcore.messages import AssistantMessage, ToolCall, Usage
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run, RunConfig
from agentcore.store.runs import Store
from agentcore.testing import pinned
from agentcore.testing.pinned import Expectations, check, last_turn_repeats, propose, repeated_calls
from agentcore.testing.runner import REPLAY, departure_step, junit_xml, parse_config, run_cell, run_matrix
from agentcore.tools import tool

# the schema Jenkins' xunit plugin reads JUnit reports with (a copy; its source is named in the file)
JUNIT_XSD = Path(__file__).parents[1] / "fixtures" / "junit-10.xsd"


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def played(*turns: AssistantMessage, usage: Usage | None = None, final_output=None) -> Run:
    """A run whose model turns are `turns`, the tools run for real."""
    run = Run.start("find things", RunConfig(max_steps=10))
    Agent(ScriptedProvider(replay=list(turns)), [lookup]).run(run)
    if usage is not None:
        for step in run.steps:
            step.usage = usage
    if final_output is not None:
        run.final_output = final_output
    return run


def calls(*pairs: tuple[str, dict], turn: int = 1) -> AssistantMessage:
    made = tuple(ToolCall(id=f"c{turn}_{i}", name=n, arguments=a) for i, (n, a) in enumerate(pairs))
    return AssistantMessage(content=None, tool_calls=made)


def answer(text: str) -> AssistantMessage:
    return AssistantMessage(content=text)


RUN = played(
    calls(("lookup", {"key": "a"}), ("lookup", {"key": "b"}), turn=1),
    calls(("lookup", {"key": "c"}), turn=2),
    answer('The answer is {"n": 42}'),
)


def failures(expect: dict, run: Run = RUN, cost: float | None = None) -> list[str]:
    return [str(f) for f in check(Expectations.model_validate(expect), run, cost)]


# -- each expectation: a pass and a fail ---------------------------------------------------

A, B, C = ({"name": "lookup", "args": {"equals": {"key": k}}} for k in "abc")


@pytest.mark.parametrize(
    ("mode", "good", "bad"),
    [
        ("exact", [A, B, C], [A, C]),
        ("in_order", [A, C], [C, A]),
        ("any_order", [C, A, B], [C, A]),
        ("contains", [C, A], [A, A]),
    ],
)
def test_a_trajectory_mode_passes_and_fails(mode, good, bad):
    assert failures({"tool_calls": {"mode": mode, "calls": good}}) == []
    found = failures({"tool_calls": {"mode": mode, "calls": bad}})
    assert len(found) == 1 and found[0].startswith(f"tool_calls ({mode})")


@pytest.mark.parametrize(
    ("good", "bad"),
    [
        ({"equals": {"key": "a"}}, {"equals": {"key": "a", "x": 1}}),
        ({"subset": {"key": "a"}}, {"subset": {"key": "z"}}),
        ({"regex": {"key": "^[a]$"}}, {"regex": {"key": "^z"}}),
        ({"schema": {"type": "object", "required": ["key"]}}, {"schema": {"type": "object", "required": ["nope"]}}),
    ],
)
def test_an_argument_matcher_passes_and_fails(good, bad):
    expect = {"tool_calls": {"mode": "contains", "calls": [{"name": "lookup", "args": good}]}}
    assert failures(expect) == []
    expect["tool_calls"]["calls"][0]["args"] = bad
    assert "not found" in failures(expect)[0]


def test_any_order_fails_a_list_of_the_same_length_that_misses_a_call():
    # the run called a, b and c: each expected call needs a call of its own, so a twice leaves b unexpected
    for bad in ([A, A, C], [C, B, B]):
        found = failures({"tool_calls": {"mode": "any_order", "calls": bad}})
        assert len(found) == 1 and "not found among: lookup, lookup, lookup" in found[0], found


def test_an_argument_regex_matches_inside_the_value():
    run = played(calls(("lookup", {"key": "the city of Paris, France"})), answer("done"))
    for pattern in ("Paris", r"city of \w+,", "France$", "^the"):
        expect = {"tool_calls": {"mode": "exact", "calls": [{"name": "lookup", "args": {"regex": {"key": pattern}}}]}}
        assert failures(expect, run) == [], pattern
    expect["tool_calls"]["calls"][0]["args"]["regex"]["key"] = "London"
    assert failures(expect, run) == [
        "tool_calls (exact): call 1: argument 'key' = the city of Paris, France does not match /London/"
    ]


def test_forbidden_tools():
    assert failures({"forbidden_tools": ["delete"]}) == []
    assert failures({"forbidden_tools": ["lookup"]}) == ["forbidden_tools: the run called lookup"]


def test_repeated_identical_calls_are_bounded():
    looping = played(*(calls(("lookup", {"key": "a"}), turn=i) for i in range(1, 4)), answer("done"))
    assert [str(r) for r in repeated_calls(looping)] == ['lookup({"key": "a"}) × 3']
    assert failures({"max_repeated_calls": 3}, looping) == []
    assert failures({"max_repeated_calls": 2}, looping) == ['max_repeated_calls: lookup({"key": "a"}) × 3, over 2']
    assert repeated_calls(RUN) == []


def test_the_last_turn_repeating_a_call_is_a_live_signal():
    looping = Run.start("q")
    agent = Agent(ScriptedProvider(replay=[calls(("lookup", {"key": "a"}), turn=i) for i in range(1, 4)]), [lookup])
    agent.step(looping)
    assert last_turn_repeats(looping) is None
    agent.step(looping)
    assert str(last_turn_repeats(looping)) == 'lookup({"key": "a"}) × 2'


def test_steps_and_stop_reason():
    assert failures({"max_steps": 3, "stop_reason": ["answer"]}) == []
    assert failures({"max_steps": 2}) == ["max_steps: the run took 3 steps, over 2"]
    assert failures({"stop_reason": ["max_steps"]}) == ["stop_reason: answer is not max_steps"]


@pytest.mark.parametrize(
    ("good", "bad"),
    [
        ({"contains": ["answer is"]}, {"contains": ["question"]}),
        ({"regex": r"\d+"}, {"regex": r"^\d+$"}),
    ],
)
def test_the_answer_text_passes_and_fails(good, bad):
    assert failures({"answer": good}) == []
    assert failures({"answer": bad})[0].startswith("answer: ")


def test_a_structured_answer_fills_a_schema_or_fails():
    run = played(answer("{}"), final_output={"n": 42})
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert failures({"answer": {"schema": schema}}, run) == []
    schema["properties"]["n"]["type"] = "string"
    assert failures({"answer": {"schema": schema}}, run) == [
        "answer: the answer does not fill the schema: 42 is not of type 'string'"
    ]


def test_token_and_cost_ceilings():
    run = played(answer("hi"), usage=Usage(input_tokens=100, output_tokens=7))
    assert failures({"max_input_tokens": 100, "max_output_tokens": 7, "max_cost_usd": 0.01}, run, cost=0.01) == []
    assert failures({"max_input_tokens": 99, "max_output_tokens": 6, "max_cost_usd": 0.001}, run, cost=0.01) == [
        "max_input_tokens: 100 tokens is over the ceiling of 99 tokens",
        "max_output_tokens: 7 tokens is over the ceiling of 6 tokens",
        "max_cost_usd: 0.01 $ is over the ceiling of 0.001 $",
    ]


# -- the file format -----------------------------------------------------------------------


def test_a_proposed_test_round_trips_as_json_and_yaml_and_passes_on_its_own_run():
    test = propose(RUN, "lookups")
    assert [c.name for c in test.expect.tool_calls.calls] == ["lookup"] * 3
    assert check(test.expect, RUN) == []
    again = pinned.loads(pinned.dumps(test))
    assert again.expect == test.expect and again.pinned.messages == RUN.messages
    assert json.loads(pinned.dumps(test))["expect"]["tool_calls"]["mode"] == "in_order"
    assert pinned.loads(pinned.dumps(test, yaml_format=True), yaml_format=True).expect == test.expect


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"format": "agentcore.test", "version": 2, "prompt": "q"}, "version: this agentcore reads version 1"),
        ({"format": "agentcore.transcript", "version": 1}, "format: expected 'agentcore.test'"),
        ({"format": "agentcore.test", "version": 1, "prompt": "q", "expect": {"max_stpes": 2}}, "expect.max_stpes"),
        ({"format": "agentcore.test", "version": 1, "prompt": "q", "expect": {"answer": {"regex": "("}}}, "regex"),
        ({"format": "agentcore.test", "version": 1}, "prompt: Field required"),
    ],
)
def test_a_bad_test_file_is_refused_in_one_line(body, says):
    with pytest.raises(TranscriptError, match=says.replace("(", r"\(")):
        pinned.loads(json.dumps(body))


def test_yaml_aliases_are_refused():
    text = "format: agentcore.test\nversion: 1\nprompt: &p q\nname: *p\n"
    with pytest.raises(TranscriptError, match="aliases"):
        pinned.loads(text, yaml_format=True)


# -- replay and live -----------------------------------------------------------------------


def weather_run() -> Run:
    from agentcore import toolbox

    run = Run.start("What is the weather in Paris and Rome?", RunConfig(provider="scripted", model="weather"))
    Agent(ScriptedProvider("weather"), toolbox.get_tools("get_weather")).run(run)
    return run


def test_replay_passes_when_tools_and_loop_are_unchanged_and_fails_when_a_tool_changes():
    test = propose(weather_run(), "weather")
    assert run_cell(test, parse_config(REPLAY)).passed

    @tool(name="get_weather")
    def broken(city: str, unit: str = "celsius") -> str:
        """A changed tool."""
        raise RuntimeError("the weather service moved")

    cell = run_cell(test, parse_config(REPLAY), tools=[broken])
    assert not cell.passed and cell.failures[0].expectation == "replay"
    assert "message 2 (tool get_weather) differs" in cell.first_failure
    assert cell.departed_at == 1  # the first step's tools phase made the difference


def test_live_mode_runs_a_provider_and_reports_where_it_departed():
    test = propose(weather_run(), "weather")
    assert run_cell(test, parse_config("scripted:weather")).passed
    cell = run_cell(test, parse_config("scripted:runaway"))
    assert not cell.passed and cell.departed_at == 1 and cell.run.config.provider == "scripted"


def test_departure_step_is_the_step_whose_phase_first_differs():
    assert departure_step(RUN, RUN) is None
    other = played(calls(("lookup", {"key": "a"}), ("lookup", {"key": "b"}), turn=1), answer("no more"))
    assert departure_step(RUN, other) == 2


@pytest.mark.slow
def test_the_matrix_runs_scripted_and_a_stand_in_server_concurrently(katan, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "katan-test-key-000")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{katan.url}/v1")  # the operator's address: the server's key goes there
    test = propose(weather_run(), "weather")
    specs = [parse_config(REPLAY), parse_config("scripted:weather"), parse_config(f"openai:echo@{katan.url}/v1")]
    matrix = run_matrix([test, test.model_copy(update={"name": "again"})], specs)
    assert matrix.configs == ["replay", "scripted:weather", f"openai:echo@{katan.url}/v1"]
    marks = [[c.passed for c in row] for row in matrix.cells]
    assert marks == [[True, True, False], [True, True, False]]  # the echo server never answers the question
    katan_cell = matrix.cells[0][2]
    assert katan_cell.run.steps[0].provider == "openai" and katan_cell.first_failure
    table = matrix.table().splitlines()
    assert table[0].split() == ["test", "replay", "scripted:weather", f"openai:echo@{katan.url}/v1"]
    assert table[1].split() == ["weather", "pass", "pass", "FAIL"]
    check_junit(ET.fromstring(junit_xml(matrix)), tests=6, failed=2)


def check_junit(root: ET.Element, tests: int, failed: int, errors: int = 0) -> None:
    """The report is valid under Jenkins' junit-10.xsd, and its counts match its testcases.

    The schema checks the shape (testsuites > testsuite[name, tests, failures, errors] > testcase[name] >
    failure | error | system-out); the counts it leaves as strings, so they are checked here:
    a missed expectation is a `<failure>`, a run that could not reach a verdict an `<error>`."""
    xmlschema = pytest.importorskip("xmlschema", reason="the JUnit schema check needs xmlschema (the test extra)")
    xmlschema.validate(root, xmlschema.XMLSchema(JUNIT_XSD))
    assert root.tag == "testsuites" and int(root.get("tests")) == tests
    assert (int(root.get("failures")), int(root.get("errors"))) == (failed, errors)
    found = {"failure": 0, "error": 0}
    for suite in root:
        cases = list(suite)
        assert int(suite.get("tests")) == len(cases) and float(suite.get("time")) >= 0
        assert int(suite.get("failures")) == sum(c.find("failure") is not None for c in cases)
        assert int(suite.get("errors")) == sum(c.find("error") is not None for c in cases)
        for case in cases:
            assert case.get("classname") and len(case.findall("failure") + case.findall("error")) <= 1
            float(case.get("time"))
            for kind in found:
                found[kind] += case.find(kind) is not None
    assert found == {"failure": failed, "error": errors}


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_junit_says_a_provider_that_cannot_be_reached_is_an_error_and_a_missed_expectation_a_failure(monkeypatch):
    from support.servers import free_port

    monkeypatch.setenv("OPENAI_API_KEY", "refused-test-key-000")
    test = propose(weather_run(), "weather")
    refused = f"openai:gpt-4o-mini@http://127.0.0.1:{free_port()}/v1"  # nothing listens there: connection refused
    matrix = run_matrix([test], [parse_config(c) for c in (REPLAY, "scripted:runaway", refused)])
    (replayed, missed, unreached) = matrix.cells[0]
    assert (replayed.passed, missed.errored, unreached.errored) == (True, False, True)
    assert matrix.table().splitlines()[1].split() == ["weather", "pass", "FAIL", "ERROR"]
    root = ET.fromstring(junit_xml(matrix))
    check_junit(root, tests=3, failed=1, errors=1)
    (error,) = root.iter("error")
    assert error.get("type") == "provider" and "cannot reach" in error.get("message")
    (failure,) = root.iter("failure")
    assert failure.get("type") == "expectation" and failure.get("message").startswith("tool_calls")


# -- the command line ----------------------------------------------------------------------


@pytest.fixture
def pinned_files(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    transcript = tmp_path / "weather-run.json"
    assert main(["run", "--provider", "scripted", "--scenario", "weather", "--out", str(transcript), "--no-db"]) == 0
    folder = tmp_path / "suite"
    folder.mkdir()
    assert main(["pin", str(transcript), "-o", str(folder / "weather.json"), "--name", "weather"]) == 0
    return folder


def test_pin_then_test_passes_in_replay_and_exits_0(pinned_files, tmp_path, capsys):
    junit = tmp_path / "junit.xml"
    assert main(["test", str(pinned_files), "--junit", str(junit)]) == 0
    out = capsys.readouterr().out
    assert "weather  pass" in out and "1 of 1 passed" in out
    check_junit(ET.parse(junit).getroot(), tests=1, failed=0)


def test_a_failing_test_exits_1_saves_its_run_and_points_at_its_diff(pinned_files, tmp_path, capsys):
    junit = tmp_path / "junit.xml"
    code = main(
        ["test", str(pinned_files), "--config", "replay", "--config", "scripted:runaway", "--junit", str(junit)]
    )
    assert code == 1
    out = capsys.readouterr().out
    assert "FAIL weather × scripted:runaway: tool_calls (in_order)" in out
    check_junit(ET.parse(junit).getroot(), tests=2, failed=1)
    saved = Store(str(tmp_path / "runs.db")).list_runs()
    assert len(saved) == 1 and saved[0].title.endswith("(failed)")
    diff_command = next(line for line in out.splitlines() if "diff: agentcore test" in line).split("diff: agentcore ")[
        1
    ]
    assert main(diff_command.split()) == 0
    assert "diverge at message 1" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args",
    [
        ["test", "no/such/folder"],
        ["test", "SUITE", "--config", "nosuch:model"],
        ["test", "SUITE", "--config", "replay:x"],
        ["pin", "no-such-run", "-o", "x.json"],
    ],
)
def test_bad_input_exits_2(pinned_files, args, capsys):
    args = [str(pinned_files) if a == "SUITE" else a for a in args]
    assert main(args) == 2
    assert capsys.readouterr().err.startswith("agentcore: error: ")


def test_a_broken_test_file_exits_2_naming_the_file(pinned_files, capsys):
    (pinned_files / "broken.json").write_text('{"format": "agentcore.test", "version": 1}')
    assert main(["test", str(pinned_files)]) == 2
    assert "broken.json: prompt: Field required" in capsys.readouterr().err


def test_a_tool_unknown_to_the_toolbox_is_bad_input():
    test = propose(RUN)
    with pytest.raises(UsageError, match="unknown tool 'lookup'"):
        run_matrix([test], [parse_config(REPLAY)])

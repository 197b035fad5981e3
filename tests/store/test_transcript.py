"""Transcript JSON v1: the documented names, exact round trip, clear refusals, no secrets."""

from __future__ import annotations

import json
import os
import stat

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentcore import Agent, Run, RunConfig, ScriptedProvider, ToolDecision, WireExchange
from agentcore import transcript as tr
from agentcore.errors import TranscriptError
from agentcore.toolbox import TOOLBOX, get_tools


def finished_run(scenario: str = "recovery") -> Run:
    tools = get_tools(list(ScriptedProvider(scenario=scenario).scenario.tools))
    config = RunConfig(provider="scripted", model=scenario, tools=[t.spec() for t in tools], system_prompt="Be brief.")
    agent = Agent(ScriptedProvider(scenario=scenario), tools)
    return agent.run(Run.start("What is 17 * 23 + 4?", config))


def test_the_transcript_has_the_documented_names():
    data = tr.to_dict(finished_run())
    assert data["format"] == "agentcore.transcript" and data["version"] == 1
    for key in ("id", "config", "messages", "steps", "stop_reason", "parent"):
        assert key in data
    for key in ("provider", "model", "system_prompt", "tools", "max_steps", "concurrency"):
        assert key in data["config"]
    assert data["config"]["tools"][0]["parameters"]["type"] == "object"
    roles = [m["role"] for m in data["messages"]]
    assert roles[:3] == ["system", "user", "assistant"]
    call = data["messages"][2]["tool_calls"][0]
    assert set(call) >= {"id", "name", "arguments"}
    tool = next(m for m in data["messages"] if m["role"] == "tool")
    assert set(tool) >= {"tool_call_id", "name", "content", "is_error"}
    step = data["steps"][0]
    assert set(step["usage"]) == {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"}
    assert step["estimated"] is True and step["index"] == 1 and "latency_ms" in step
    assert step["tool_runs"][0]["error"] == "invalid_json" and "duration_ms" in step["tool_runs"][0]
    assert data["stop_reason"] == "answer" and data["parent"] is None


@pytest.mark.parametrize("scenario", ["weather", "recovery", "research", "runaway", "structured"])
def test_round_trip_is_exact(scenario, tmp_path):
    run = finished_run(scenario)
    path = tmp_path / "t.json"
    tr.save(run, path)
    again = tr.load(path)
    assert again == run
    assert tr.to_dict(again) == tr.to_dict(run)
    fork = run.fork(1)
    assert tr.loads(tr.dumps(fork)).parent == fork.parent


def decided_run() -> Run:
    """The weather run paused before its tools, its three calls approved, edited and typed by a person."""
    tools = get_tools(["get_weather"])
    config = RunConfig(provider="scripted", model="weather", tools=[t.spec() for t in tools], pause_before_tools=True)
    agent = Agent(ScriptedProvider(scenario="weather"), tools)
    run = agent.run(Run.start("Weather in Paris, Rome and Tokyo?", config))
    first, second, third = run.messages[-1].tool_calls
    agent.tools_phase(
        run,
        {
            second.id: ToolDecision(action="edit", arguments={"city": "Kyoto"}),
            third.id: ToolDecision(action="result", content="sunny"),
        },
    )
    return run


def test_a_persons_decisions_round_trip_through_the_transcript(tmp_path):
    run = decided_run()
    tr.save(run, tmp_path / "t.json")
    data = json.loads((tmp_path / "t.json").read_text())
    runs = data["steps"][0]["tool_runs"]
    assert [t["source"] for t in runs] == ["approved", "edited", "typed"]
    assert runs[1]["original_arguments"] == {"city": "Rome"} and runs[0]["original_arguments"] is None
    again = tr.load(tmp_path / "t.json")
    assert again == run and again.steps[0].tool_runs[1].original_arguments == {"city": "Rome"}


def test_a_result_typed_by_hand_in_an_older_file_loads_as_typed():
    data = tr.to_dict(decided_run())
    tool_run = data["steps"][0]["tool_runs"][2]
    tool_run["source"] = "manual"  # what files written before the decisions were named say
    del tool_run["original_arguments"], tool_run["original_raw_arguments"]
    assert tr.from_dict(data).steps[0].tool_runs[2].source == "typed"


def test_no_secret_reaches_the_transcript():
    run = finished_run("weather")
    run.steps[0].wire = WireExchange(
        url="https://api.example.test/v1",
        request_headers={"Authorization": "Bearer sk-planted-secret-123", "x-api-key": "sk-planted-secret-123"},
        request={"model": "m"},
        response_headers={"set-cookie": "sk-planted-secret-123"},
    )
    assert "sk-planted-secret-123" not in tr.dumps(run)


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda d: d.update(format="other"), "format: expected 'agentcore.transcript'"),
        (lambda d: d.update(version=2), "version: this agentcore reads version 1"),
        (lambda d: d["messages"][1].update(role="robot"), "messages[1]"),
        (lambda d: d["messages"][2].update(content=None, tool_calls=[]), "messages[2]: an assistant message needs"),
        (lambda d: d["steps"][0]["usage"].update(input_tokens="many"), "steps[0].usage.input_tokens"),
        (lambda d: d["config"].update(max_steps=0), "config.max_steps"),
        (
            lambda d: d["messages"].insert(2, {"role": "tool", "tool_call_id": "x", "name": "f", "content": ""}),
            "no matching",
        ),
        (lambda d: d.update(stop_reason="exploded"), "stop_reason"),
    ],
)
def test_malformed_transcripts_are_refused_naming_the_field(mutate, words):
    data = tr.to_dict(finished_run())
    mutate(data)
    with pytest.raises(TranscriptError) as err:
        tr.from_dict(data)
    assert words in str(err.value)
    assert "\n" not in str(err.value)


def test_unreadable_files_are_clear_errors(tmp_path):
    with pytest.raises(TranscriptError, match="cannot read"):
        tr.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(TranscriptError, match="bad.json: not JSON"):
        tr.load(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(TranscriptError, match="a transcript is a JSON object"):
        tr.load(bad)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(json_values)
def test_arbitrary_json_is_refused_with_a_transcript_error(value):
    with pytest.raises(TranscriptError):
        tr.from_dict(value)


_BASE = tr.to_dict(finished_run("weather"))


@st.composite
def hostile_edits(draw) -> tuple[dict, list]:
    """The weather transcript with one place in it, 1 to 5 keys deep, set to another JSON value.

    The place is drawn from the transcript itself (or is a new key in one of its objects), so
    every example reaches the load instead of naming a place that does not exist.
    """
    data = json.loads(json.dumps(_BASE))
    depth = draw(st.integers(min_value=1, max_value=5))
    container: dict | list = data
    path: list = []
    while True:
        if isinstance(container, dict):
            key = draw(st.sampled_from([*sorted(container), None]))
            if key is None:  # a key the format does not have
                key = draw(st.text(min_size=1, max_size=8).filter(lambda k, taken=container: k not in taken))
        else:
            key = draw(st.integers(min_value=0, max_value=len(container) - 1))
        path.append(key)
        child = container.get(key) if isinstance(container, dict) else container[key]
        if len(path) == depth or not isinstance(child, dict | list) or not child:
            break
        container = child
    container[key] = draw(_like(child) | json_values)
    return data, path


def _like(value: object) -> st.SearchStrategy:
    """Values of the same JSON kind as `value`: edits a transcript may well survive, so the round trip is checked."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(min_value=0, max_value=10**9)
    if isinstance(value, float):
        return st.floats(min_value=0, max_value=1e9)
    if isinstance(value, str):
        return st.text(max_size=40)
    if value is None:
        return st.none()
    return json_values


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(edit=hostile_edits())
def test_hostile_edits_either_load_cleanly_or_fail_with_a_transcript_error(edit):
    data, path = edit
    try:
        run = tr.from_dict(data)
    except TranscriptError as exc:
        event("refused")
        assert str(exc)
    else:
        event("loaded")
        assert tr.from_dict(tr.to_dict(run)) == run


def test_tools_of_a_transcript_resolve_against_the_toolbox():
    data = tr.to_dict(finished_run("weather"))
    assert [t["name"] for t in data["config"]["tools"]] == ["get_weather"]
    assert TOOLBOX["get_weather"].spec().model_dump() == data["config"]["tools"][0]


@pytest.mark.parametrize(("index", "words"), [(7, "step 1 has index 7"), (0, "step 1 has index 0")])
def test_a_step_numbered_out_of_place_is_refused_naming_the_step(index, words):
    data = {
        "format": "agentcore.transcript",
        "version": 1,
        "messages": [{"role": "user", "content": "hi"}],
        "steps": [{"index": index, "message_count": 1}],
    }
    with pytest.raises(TranscriptError) as err:
        tr.from_dict(data)
    assert str(err.value).startswith("steps: ") and words in str(err.value)
    assert "\n" not in str(err.value)


def test_forks_keep_their_steps_numbered_in_order():
    run = finished_run()
    for fork in (run.fork(2), run.fork_with_messages(run.messages[:-1])):
        assert [s.index for s in fork.steps] == list(range(1, len(fork.steps) + 1))
        assert tr.from_dict(tr.to_dict(fork)) == fork


def test_a_write_over_a_device_fifo_or_folder_is_refused_and_leaves_it_as_it_was(tmp_path, capsys):
    from agentcore.cli.main import main
    from agentcore.transcript import write_atomic

    fifo, folder = tmp_path / "fifo", tmp_path / "folder"
    os.mkfifo(fifo)
    folder.mkdir()
    with pytest.raises(OSError, match="not a regular file"):
        write_atomic(fifo, "{}")
    with pytest.raises(IsADirectoryError):
        write_atomic(folder, "{}")
    run = Run.start("hi", RunConfig(scenario="weather", model="weather"))
    tr.save(run, tmp_path / "run.json")
    assert main(["pin", str(tmp_path / "run.json"), "-o", str(fifo), "--force"]) != 0
    assert "not a regular file" in capsys.readouterr().err
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and folder.is_dir()
    write_atomic(tmp_path / "plain.json", "{}")  # a new file, and one written over, as before
    write_atomic(tmp_path / "plain.json", "[]")
    assert (tmp_path / "plain.json").read_text() == "[]"

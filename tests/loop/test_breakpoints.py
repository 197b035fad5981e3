"""Breakpoints and tool mocks: each kind of breakpoint pauses the run where it says and names itself, a step goes on
past it, a mock rule answers a call without running it, and the command line stops, saves and exits 5."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess

import pytest

from agentcore import toolbox, transcript
from agentcore.cli.main import main
from agentcore.errors import UsageError
from agentcore.hooks.specs import MockRule, parse_breakpoint
from agentcore.loop import Agent
from agentcore.messages import AssistantMessage, ToolCall, Usage
from agentcore.providers.scripted import ScriptedProvider, get_scenario
from agentcore.run import Run, RunConfig
from agentcore.steps import StepRecord


def scenario_run(name: str, **config) -> tuple[Agent, Run]:
    sc = get_scenario(name)
    tools = toolbox.get_tools(sc.tools)
    cfg = RunConfig(scenario=name, tools=[t.spec() for t in tools], loop_guard="warn", **config)
    return Agent(ScriptedProvider(scenario=name), tools), Run.start(sc.prompt, cfg)


@pytest.mark.parametrize(
    ("scenario", "spec", "steps", "point", "words"),
    [
        ("weather", "tool:get_weather", 1, "before_tools", 'get_weather({"city": "Paris"})'),
        ("weather", "step:2", 1, "before_model", "before the model call of step 2"),
        ("weather", "args:$.city=Rome", 1, "before_tools", 'get_weather({"city": "Rome"})'),
        ("weather", "args:$.city~^To", 1, "before_tools", 'get_weather({"city": "Tokyo"})'),
        ("weather", "tokens:50", 1, "before_model", "tokens after step 1, past 50"),
        ("runaway", "repeat", 2, "before_tools", "the same call was made before"),
        ("tool_error", "tool-error", 1, "before_model", "tool result from calculator is an error"),
    ],
)
def test_each_breakpoint_pauses_where_it_says_and_names_itself(scenario, spec, steps, point, words):
    agent, run = scenario_run(scenario, breakpoints=[spec])
    agent.run(run)
    assert run.paused and run.stop_reason is None
    assert (run.halt.breakpoint, run.halt.point, len(run.steps)) == (spec, point, steps)
    assert words in run.halt.words and f"breakpoint {spec}" in run.halt.words
    agent.step(run)  # goes on: the same breakpoint does not stop the same call again
    assert run.halt is None or run.halt.step > steps
    saved = transcript.loads(transcript.dumps(run))
    assert saved.halts[0].breakpoint == spec  # the hit stays in the transcript after the run went on


@pytest.mark.parametrize("spec", ["args:$.note=tool:get_weather", "args:$.mode=repeated", "args:$.q~step: 2"])
def test_a_condition_whose_value_reads_like_a_kind_is_one_breakpoint(spec):
    assert parse_breakpoint(spec).kind == "args"


def test_a_run_with_no_matching_breakpoint_runs_to_its_answer():
    agent, run = scenario_run("weather", breakpoints=["tool:calculator", "args:$.city=Oslo", "step:9", "tool-error"])
    agent.run(run)
    assert run.stop_reason == "answer" and run.halts == []


def test_run_to_end_stops_at_each_hit_and_a_step_goes_on():
    agent, run = scenario_run("runaway", breakpoints=["repeat"], max_steps=4)
    hits = 0
    while not run.finished:
        agent.run(run)
        if run.paused:
            hits += 1
            agent.step(run)
    assert hits == 3 and len(run.halts) == 3  # steps 2, 3 and 4 repeat step 1's call


def test_a_cost_breakpoint_fires_once_when_the_run_passes_its_limit():
    call = ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})
    again = call.model_copy(update={"id": "c2"})
    turns = [AssistantMessage(content="", tool_calls=(call,)), AssistantMessage(content="", tool_calls=(again,))]
    turns.append(AssistantMessage(content="Sunny."))
    run = Run.start("Weather?", RunConfig(provider="openai", model="gpt-4o", breakpoints=["cost:0.001"]))
    agent = Agent(ScriptedProvider(replay=turns), toolbox.get_tools(["get_weather"]))
    agent.step(run)
    run.steps[0] = StepRecord(index=1, provider="openai", model="gpt-4o", usage=Usage(input_tokens=1000))
    agent.run(run)
    assert run.halt is not None and run.halt.breakpoint == "cost:0.001" and "past $0.001" in run.halt.words
    agent.run(run)
    assert run.paused  # still where it stopped until a person steps
    agent.step(run)
    agent.run(run)  # past the limit already: the next model call is not stopped at again
    assert run.stop_reason == "answer" and len(run.halts) == 1 and len(run.steps) == 3


def test_a_call_a_person_already_decided_is_not_stopped_at_again():
    agent, run = scenario_run("weather", breakpoints=["tool:get_weather"], pause_before_tools=True)
    agent.run(run)
    assert run.paused and run.halt is None  # paused before tools: the person sees the calls
    agent.tools_phase(run, {})
    assert [t.source for t in run.steps[0].tool_runs] == ["approved"] * 3 and run.halts == []


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("tool", "needs a value"),
        ("step:zero", "whole number"),
        ("cost:-1", "above 0"),
        ("args:city=Paris", "starts with a JSON path"),
        ("args:$.city~(a", "not a valid regular expression"),
        ("args:$.city~(a{1000}){1000}", "too large"),
        ("bogus:1", "the kinds are"),
        ("repeat:2", "takes no value"),
        ("tool:get_weather args:$.city=Rome", r"one breakpoint per line \('tool:get_weather' and 'args:\$.city=Rome'"),
        ("tool:get_weather, step:2", "one breakpoint per line"),
        ("step:2 repeat", "one breakpoint per line"),
    ],
)
def test_a_bad_spec_is_refused_in_one_line(spec, words):
    with pytest.raises(UsageError, match=words) as caught:
        parse_breakpoint(spec)
    assert "\n" not in str(caught.value)
    with pytest.raises(ValueError):
        RunConfig(breakpoints=[spec])


def test_a_mock_rule_answers_matching_calls_and_the_others_run():
    rules = [
        MockRule(tool="get_weather", when=["$.city=Rome"], result="Rome: snow"),
        MockRule(tool="get_weather", when="$.city~^To", error="offline"),
    ]
    agent, run = scenario_run("weather", mocks=rules)
    agent.run(run)
    results = {m.tool_call_id: m for m in run.messages if m.role == "tool"}
    sources = {t.tool_call_id: t.source for t in run.steps[0].tool_runs}
    assert sources == {"call_1_0": "ran", "call_1_1": "mocked", "call_1_2": "mocked"}
    assert results["call_1_1"].content == "Rome: snow" and not results["call_1_1"].is_error
    assert results["call_1_2"].content == "offline" and results["call_1_2"].is_error
    assert run.steps[0].tool_runs[1].badge.startswith("mocked")
    assert transcript.loads(transcript.dumps(run)).config.mocks == rules


def test_a_mock_rule_needs_one_outcome_and_valid_conditions():
    for bad in (
        {"tool": "t"},
        {"tool": "t", "result": "a", "error": "b"},
        {"tool": "t", "when": "city", "result": "a"},
    ):
        with pytest.raises(ValueError):
            MockRule.model_validate(bad)


def test_a_breakpoint_stops_a_call_before_a_mock_answers_it():
    agent, run = scenario_run(
        "weather", breakpoints=["tool:get_weather"], mocks=[MockRule(tool="get_weather", result="fixed")]
    )
    agent.run(run)
    assert run.paused and not any(m.role == "tool" for m in run.messages)
    agent.run(run)
    agent.step(run)
    assert [t.source for t in run.steps[0].tool_runs] == ["mocked"] * 3


def cli(*args: str) -> subprocess.CompletedProcess:
    """The command line, run in this process: its exit code and what it printed on stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_the_cli_stops_at_a_breakpoint_saves_the_run_names_it_and_exits_5(tmp_path):
    out = tmp_path / "t.json"
    done = cli(
        "run", "--provider", "scripted", "--scenario", "weather", "--no-db", "--out", str(out), "--break", "step:2"
    )
    assert done.returncode == 5, done.stderr
    assert "breakpoint: step:2 hit at step 2" in done.stdout and "stop: paused after 1 step ·" in done.stdout
    saved = transcript.load(out)
    assert saved.halt.breakpoint == "step:2" and len(saved.steps) == 1


def test_the_cli_reads_mock_rules_from_json_and_yaml(tmp_path):
    pytest.importorskip("yaml", reason="YAML mock files need PyYAML (the test extra)")
    rule = {"tool": "get_weather", "when": "$.city=Paris", "result": "Paris: 40 degrees"}
    (tmp_path / "m.json").write_text(json.dumps([rule]))
    (tmp_path / "m.yaml").write_text("- tool: get_weather\n  when: $.city=Paris\n  result: 'Paris: 40 degrees'\n")
    for name in ("m.json", "m.yaml"):
        out = tmp_path / f"{name}.out.json"
        done = cli(
            "run",
            "--provider",
            "scripted",
            "--scenario",
            "weather",
            "--no-db",
            "--out",
            str(out),
            "--mock",
            str(tmp_path / name),
        )
        assert done.returncode == 0, done.stderr
        assert "mocked: 1 tool call answered by a mock rule" in done.stdout
        assert "✓ get_weather [mocked] (0 ms): Paris: 40 degrees" in done.stdout  # marked as it happens
        saved = transcript.load(out)
        assert [t.source for t in saved.steps[0].tool_runs] == ["mocked", "ran", "ran"]


def test_the_cli_refuses_a_bad_spec_or_mock_file_in_one_line(tmp_path):
    (tmp_path / "bad.json").write_text('[{"tool": "get_weather"}]')
    for extra in (["--break", "tool:"], ["--mock", str(tmp_path / "bad.json")], ["--mock", str(tmp_path / "none")]):
        done = cli("run", "--provider", "scripted", "--scenario", "weather", "--no-db", *extra)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_pinned_test_with_mocks_plays_them_and_keeps_them_through_pin(tmp_path):
    from agentcore.testing import pinned

    test = {
        "format": "agentcore.test",
        "version": 1,
        "name": "rome mocked",
        "prompt": "What is the weather in Paris, Rome and Tokyo?",
        "tools": ["get_weather"],
        "mocks": [{"tool": "get_weather", "when": "$.city=Rome", "result": "Rome: snow"}],
        "expect": {"answer": {"contains": ["Rome: snow"]}},
    }
    (tmp_path / "t.json").write_text(json.dumps(test))
    done = cli("test", str(tmp_path / "t.json"), "--config", "scripted:weather")
    assert done.returncode == 0, done.stdout + done.stderr
    del test["mocks"]
    (tmp_path / "t.json").write_text(json.dumps(test))
    assert cli("test", str(tmp_path / "t.json"), "--config", "scripted:weather").returncode == 1  # no mock, no snow
    agent, run = scenario_run("weather", mocks=[MockRule(tool="get_weather", result="fixed")])
    agent.run(run)
    kept = pinned.loads(pinned.dumps(pinned.propose(run)))
    assert kept.mocks == run.config.mocks


def test_a_mocked_call_is_marked_in_every_export():
    from agentcore.exports import REPLAY, export_json, export_run
    from agentcore.steps import MOCKED_WORDS

    agent, run = scenario_run("weather", mocks=[MockRule(tool="get_weather", when="$.city=Rome", result="snow")])
    agent.run(run)
    assert '"source": "mocked"' in export_json(run)
    assert MOCKED_WORDS in export_run(run, REPLAY)
    pytest.importorskip("opentelemetry", reason="the OpenTelemetry export needs the otel extra")
    from agentcore.exports import export_otlp
    from agentcore.telemetry.importer import from_otlp

    trace = export_otlp(run)
    assert '"mocked"' in trace
    back = from_otlp(trace)
    assert [t.source for t in back.steps[0].tool_runs] == ["ran", "mocked", "ran"]


def replay_run(turns: list[AssistantMessage], **config) -> tuple[Agent, Run]:
    """A run whose model's turns are `turns`, with the weather tool."""
    run = Run.start("Weather?", RunConfig(**config))
    return Agent(ScriptedProvider(replay=turns), toolbox.get_tools(["get_weather"])), run


def weather_calls(*cities: str) -> list[AssistantMessage]:
    """One turn per city, each calling get_weather for it, then the answer."""
    turns = [
        AssistantMessage(content="", tool_calls=(ToolCall(id=f"c{n}", name="get_weather", arguments={"city": c}),))
        for n, c in enumerate(cities, 1)
    ]
    return [*turns, AssistantMessage(content="Sunny.")]


def test_a_tokens_breakpoint_fires_when_the_run_reaches_its_limit_exactly_and_only_then():
    agent, run = replay_run(weather_calls("Paris", "Paris"), breakpoints=["tokens:50"])
    agent.step(run)
    run.steps[0] = StepRecord(index=1, provider="scripted", model="m", usage=Usage(input_tokens=40, output_tokens=10))
    agent.run(run)
    assert run.halt is not None and "used 50 tokens after step 1, past 50" in run.halt.words
    agent.step(run)
    agent.run(run)  # the run had reached 50 before step 2 already: the limit was passed once, at step 1
    assert run.stop_reason == "answer" and len(run.halts) == 1


@pytest.mark.parametrize(("length", "shown"), [(120, 'get_weather({"city": "' + "x" * 108 + '"})'), (121, None)])
def test_a_calls_arguments_are_shown_whole_up_to_120_characters_then_cut(length, shown):
    city = "x" * (length - 12)
    agent, run = replay_run(weather_calls(city), breakpoints=["tool:get_weather"])
    agent.run(run)
    words = run.halt.words
    if shown is None:
        args = json.dumps({"city": city})
        shown = f"get_weather({args[:119]}…)"
    assert f"call {shown} [c1]" in words


def test_a_repeat_breakpoint_next_to_a_tool_breakpoint_still_stops_a_repeated_call():
    agent, run = replay_run(weather_calls("Paris", "Paris"), breakpoints=["tool:calculator", "repeat"])
    agent.run(run)
    assert run.halt.breakpoint == "repeat" and len(run.steps) == 2


def test_an_args_breakpoint_past_the_end_of_a_list_or_of_another_type_does_not_hold():
    from agentcore.hooks.specs import parse_condition

    assert not parse_condition("$.stops[1]=Rome").holds({"stops": ["Paris"]})
    assert parse_condition("$.stops[0]=Paris").holds({"stops": ["Paris"]})
    assert not parse_condition("$.n=1").holds({"n": True}) and not parse_condition("$.n=1").holds({"n": 1.0})
    assert parse_condition("$.n=1").holds({"n": 1}) and parse_condition("$.n=01").holds({"n": "01"})


@pytest.mark.parametrize(
    ("spec", "takes"),
    [
        ("step:1", True),
        ("step:0", False),
        (f"tokens:{10**12 - 1}", True),
        (f"tokens:{10**12}", False),
        ("cost:" + "0" * 494 + "1", True),  # 500 characters
        ("cost:" + "0" * 495 + "1", False),
        ("args:$" + ".a" * 16 + "=1", True),
        ("args:$" + ".a" * 17 + "=1", False),
    ],
)
def test_a_spec_is_taken_up_to_its_limits_and_refused_past_them(spec, takes):
    if takes:
        assert parse_breakpoint(spec).spec == spec
    else:
        with pytest.raises(UsageError):
            parse_breakpoint(spec)


@pytest.mark.parametrize(("result", "said"), [("r" * 80, "r" * 80), ("r" * 81, "r" * 80 + "…")])
def test_a_mock_rules_words_show_80_characters_of_its_result(result, said):
    assert MockRule(tool="t", when="$.a=1", result=result).words == f"t when $.a=1 → {said}"


def test_a_condition_without_a_value_or_a_pattern_after_its_path_is_refused_in_one_line():
    from agentcore.hooks.specs import parse_condition

    for text in ("$.city", "$.stops[0]", "$"):
        with pytest.raises(UsageError, match="no = value or ~ pattern after the path"):
            parse_condition(text)


def test_a_condition_is_taken_up_to_500_characters_and_refused_past_them():
    from agentcore.hooks.specs import MAX_SPEC_CHARS, parse_condition

    longest = "$.city=" + "P" * (MAX_SPEC_CHARS - len("$.city="))
    assert len(longest) == MAX_SPEC_CHARS and parse_condition(longest).holds({"city": longest[7:]})
    with pytest.raises(UsageError, match=f"longer than {MAX_SPEC_CHARS} characters"):
        parse_condition(longest + "P")


def test_a_condition_on_an_argument_the_call_lacks_does_not_hold_even_against_null():
    from agentcore.hooks.specs import parse_condition

    assert not parse_condition("$.units=null").holds({"city": "Paris"})
    assert parse_condition("$.units=null").holds({"city": "Paris", "units": None})


def test_a_pattern_reads_an_object_as_json_with_its_keys_sorted_and_its_letters_as_written():
    from agentcore.hooks.specs import parse_condition

    assert parse_condition("$.place~Zürich").holds({"place": {"city": "Zürich"}})  # not Z\u00fcrich
    assert parse_condition('$.place~^\\{"a": 2, "b": 1\\}$').holds({"place": {"b": 1, "a": 2}})


def test_a_calls_arguments_are_shown_with_their_letters_as_written():
    agent, run = replay_run(weather_calls("Zürich"), breakpoints=["tool:get_weather"])
    agent.run(run)
    assert 'call get_weather({"city": "Zürich"}) [c1]' in run.halt.words


def test_a_pattern_condition_holds_on_a_value_up_to_the_searchable_length_and_not_past_it():
    from agentcore.hooks.specs import parse_condition
    from agentcore.schemas import MAX_PATTERN_INPUT_CHARS

    condition = parse_condition("$.q~a$")
    assert condition.holds({"q": "b" * (MAX_PATTERN_INPUT_CHARS - 1) + "a"})
    # one character more and the pattern is not applied: the condition is unmet, and no error ends the run
    assert not condition.holds({"q": "b" * MAX_PATTERN_INPUT_CHARS + "a"})
    rule = MockRule(tool="search", when=["$.q~a$"], result="mocked")
    assert rule.matches("search", {"q": "b" * 10 + "a"})
    assert not rule.matches("search", {"q": "b" * MAX_PATTERN_INPUT_CHARS + "a"})


def test_a_parsed_spec_is_shared_through_its_cache_so_it_cannot_be_changed():
    import dataclasses

    from agentcore.hooks.specs import parse_condition

    condition = parse_condition("$.city=Paris")
    assert parse_condition("$.city=Paris") is condition  # one object for every run that names it
    with pytest.raises(dataclasses.FrozenInstanceError):
        condition.raw = "Rome"
    breakpoint_ = parse_breakpoint("args:$.city=Paris")
    with pytest.raises(dataclasses.FrozenInstanceError):
        breakpoint_.spec = "step:1"
    rule = MockRule(tool="get_weather", result="18 C")
    with pytest.raises(ValueError, match="frozen"):
        rule.result = "changed"
    assert parse_condition("$.city=Paris").raw == "Paris" and rule.result == "18 C"

"""Comparisons: columns run at the same time (proved by a rendezvous), lockstep steps, errors kept per column,
the summary, the wire side by side, the bundle, and `agentcore compare`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from typing import ClassVar

import pytest
from support.app import holds_text

from agentcore import toolbox
from agentcore.compare import (
    ColumnSpec,
    Comparison,
    format_table,
    load_bundle,
    parse_spec,
    wire_requests,
)
from agentcore.errors import ProviderError, TranscriptError, UsageError
from agentcore.messages import AssistantMessage, ToolCall, Usage
from agentcore.providers import create_provider, local_available
from agentcore.providers.base import BaseProvider, ModelResponse, WireExchange
from agentcore.transcript import from_dict

PROMPT = "What is the weather in Paris?"
SECRET = "sk-compare-secret-7f3a9c"


def closed_port() -> int:
    """A port nobody listens on: bound, then released."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rendezvous(BaseProvider):
    """Answers only once every column has arrived at the same call: it proves overlap, never timing.

    Run one after another, the first column would wait alone, the barrier would break, and that
    column would end in an error.
    """

    name: ClassVar[str] = "rendezvous"

    def __init__(self, model: str, barrier: threading.Barrier, turns: int = 1) -> None:
        super().__init__(model)
        self.barrier = barrier
        self.turns = turns

    def complete(self, request, on_text=None) -> ModelResponse:
        self.barrier.wait(timeout=20)
        done = sum(isinstance(m, AssistantMessage) for m in request.messages)
        if done + 1 < self.turns:
            call = ToolCall(id=f"call_{done}", name="get_weather", arguments={"city": "Paris"})
            message = AssistantMessage(content="Looking.", tool_calls=(call,))
        else:
            message = AssistantMessage(content=f"{self.model} says 19 degrees.")
        return ModelResponse(
            message=message,
            usage=Usage(input_tokens=10 * (done + 1), output_tokens=3),
            wire=WireExchange(url=f"test://{self.model}", request={"model": self.model, "n": len(request.messages)}),
        )


class Broken(BaseProvider):
    """Fails like a provider whose server is down, until `healed` is set."""

    name: ClassVar[str] = "broken"

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.healed = False

    def complete(self, request, on_text=None) -> ModelResponse:
        if not self.healed:
            raise ProviderError("the server is down", provider=self.name, status=503, type="overloaded")
        return ModelResponse(message=AssistantMessage(content="back again"))


def factory_of(providers: dict[str, object]):
    def factory(name, model=None, *, base_url=None, api_key=None, **options):
        if name in providers:
            return providers[name]
        return create_provider(name, model, base_url=base_url, api_key=api_key, **options)

    return factory


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("scripted:weather", ColumnSpec("scripted", "weather")),
        ("local", ColumnSpec("local")),
        (
            "openai:gpt-4o-mini@http://127.0.0.1:8000/v1",
            ColumnSpec("openai", "gpt-4o-mini", "http://127.0.0.1:8000/v1"),
        ),
        ("ollama:llama3.2:1b@http://h:11434", ColumnSpec("ollama", "llama3.2:1b", "http://h:11434")),
        ("anthropic@http://127.0.0.1:9", ColumnSpec("anthropic", None, "http://127.0.0.1:9")),
    ],
)
def test_a_config_is_provider_model_and_base_url(text, spec):
    assert parse_spec(text) == spec
    assert parse_spec(spec.name) == spec


@pytest.mark.parametrize("text", ["", ":weather", "openai@", "  "])
def test_a_malformed_config_is_a_one_line_usage_error(text):
    with pytest.raises(UsageError, match=r"PROVIDER\[:MODEL\]\[@BASE_URL\]"):
        parse_spec(text)


@pytest.mark.parametrize("n", [1, 5])
def test_a_comparison_takes_two_to_four_configurations(n):
    with pytest.raises(UsageError, match="2 to 4 configurations"):
        Comparison(PROMPT, [ColumnSpec("scripted")] * n)


def test_step_all_calls_every_provider_at_the_same_time():
    barrier = threading.Barrier(2)
    providers = {"a": Rendezvous("a", barrier), "b": Rendezvous("b", barrier)}
    comparison = Comparison(PROMPT, [ColumnSpec("a"), ColumnSpec("b")], factory=factory_of(providers))
    comparison.step_all()
    assert [c.run.stop_reason for c in comparison.columns] == ["answer", "answer"], [
        c.error for c in comparison.columns
    ]
    assert [c.run.final_answer() for c in comparison.columns] == ["a says 19 degrees.", "b says 19 degrees."]


def test_run_all_overlaps_every_step_of_every_column():
    barrier = threading.Barrier(3)
    providers = {name: Rendezvous(name, barrier, turns=3) for name in "abc"}
    comparison = Comparison(
        PROMPT,
        [ColumnSpec(n) for n in "abc"],
        tools=toolbox.get_tools("get_weather"),
        factory=factory_of(providers),
    )
    comparison.run_all()
    assert [c.state for c in comparison.columns] == ["done"] * 3, [c.error for c in comparison.columns]
    assert [len(c.run.steps) for c in comparison.columns] == [3, 3, 3]
    assert not comparison.running and comparison.finished


def test_step_all_advances_each_unfinished_column_one_iteration():
    specs = [parse_spec("scripted:weather"), parse_spec("scripted:runaway")]
    comparison = Comparison(PROMPT, specs, tools=toolbox.get_tools("get_weather,search_notes"), max_steps=3)
    seen = []
    for _ in range(4):
        comparison.step_all()
        seen.append([(len(c.run.steps), c.state) for c in comparison.columns])
    assert seen == [
        [(1, "ready"), (1, "ready")],
        [(2, "done"), (2, "ready")],
        [(2, "done"), (3, "done")],
        [(2, "done"), (3, "done")],
    ]
    assert [c.run.stop_reason for c in comparison.columns] == ["answer", "max_steps"]
    assert comparison.start("step") and not comparison.running  # nothing left to start


def test_a_failing_provider_never_stops_the_others_and_its_column_can_retry():
    broken = Broken("down")
    comparison = Comparison(
        PROMPT,
        [parse_spec("scripted:weather"), ColumnSpec("broken")],
        tools=toolbox.get_tools("get_weather"),
        factory=factory_of({"broken": broken}),
    )
    comparison.run_all()
    good, bad = comparison.columns
    assert good.state == "done" and good.run.stop_reason == "answer"
    assert bad.state == "error"
    assert bad.error == "broken 503 overloaded: the server is down"
    assert [m.role for m in bad.run.messages] == ["user"]  # the run is intact, ready to retry
    broken.healed = True
    comparison.step_all()
    assert bad.state == "done" and bad.run.final_answer() == "back again"
    assert len(good.run.steps) == 2  # the finished column was not stepped again


def test_a_provider_that_cannot_be_made_is_its_columns_error_only():
    comparison = Comparison(PROMPT, [parse_spec("scripted:weather"), parse_spec("scripted:nope"), parse_spec("nope")])
    comparison.run_all()
    states = [(c.state, c.error) for c in comparison.columns]
    assert states[0] == ("done", None)
    assert states[1][0] == "error" and "unknown scenario 'nope'" in states[1][1]
    assert states[2][0] == "error" and "unknown provider 'nope'" in states[2][1]
    assert [r["stop_reason"] for r in comparison.summary()] == ["answer", "error", "error"]


def test_the_summary_has_steps_stop_tokens_cost_latency_tool_errors_and_answer():
    specs = [parse_spec("scripted:recovery"), parse_spec("scripted:weather")]
    comparison = Comparison("What is 17 * 23 + 4?", specs, tools=toolbox.get_tools("calculator,get_weather"))
    comparison.run_all()
    recovery, weather = comparison.summary()
    assert recovery["config"] == "scripted:recovery"
    assert (recovery["steps"], recovery["stop_reason"], recovery["tool_errors"]) == (4, "answer", 2)
    assert "395" in recovery["final_answer"]
    assert recovery["input_tokens"] == sum(s.usage.input_tokens for s in comparison.columns[0].run.steps) > 0
    assert recovery["estimated"] is True and recovery["cost_usd"] == 0.0  # the scripted model is free
    assert recovery["ms_per_step"] == pytest.approx(recovery["total_ms"] / 4, abs=0.1)
    assert weather["tool_errors"] == 0 and weather["steps"] == 2
    table = format_table([recovery, weather])
    assert table.splitlines()[0].split()[:3] == ["config", "steps", "stop"]
    assert "scripted:recovery" in table and "After two failed attempts" in table


def test_the_series_accumulates_tokens_step_by_step():
    barrier = threading.Barrier(2)
    providers = {n: Rendezvous(n, barrier, turns=3) for n in "ab"}
    comparison = Comparison(
        PROMPT,
        [ColumnSpec("a"), ColumnSpec("b")],
        tools=toolbox.get_tools("get_weather"),
        factory=factory_of(providers),
    )
    comparison.run_all()
    rows = [r for r in comparison.series() if r["config"] == "a"]
    assert [r["cumulative_tokens"] for r in rows] == [13, 13 + 23, 13 + 23 + 33]
    assert all(r["cost_usd"] is None for r in rows)  # an unknown provider has no price: unknown, not zero


def test_the_request_of_each_provider_at_a_step_side_by_side():
    specs = [parse_spec("scripted:weather"), parse_spec("scripted:runaway")]
    comparison = Comparison(PROMPT, specs, tools=toolbox.get_tools("get_weather,search_notes"), max_steps=3)
    comparison.run_all()
    second = wire_requests(comparison.runs, 2)
    assert [r["scenario"] for r in second] == ["weather", "runaway"]
    assert [m["role"] for m in second[0]["messages"]] == ["user", "assistant", "tool"]
    assert wire_requests(comparison.runs, 3) == [None, comparison.runs[1].steps[2].wire.request]


def test_the_bundle_round_trips_and_no_key_reaches_it_or_outlives_the_call():
    seen_keys = []

    def factory(name, model=None, *, base_url=None, api_key=None, **options):
        seen_keys.append((name, api_key == SECRET))  # keep no copy of the key itself
        return create_provider(name, model, base_url=base_url, api_key=api_key, **options)

    url = f"http://127.0.0.1:{closed_port()}/v1"
    comparison = Comparison(
        PROMPT,
        [parse_spec("scripted:weather"), ColumnSpec("openai", "gpt-4o-mini", url)],
        tools=toolbox.get_tools("get_weather"),
        api_keys={1: SECRET},
        provider_options={"max_retries": 0},
        factory=factory,
    )
    comparison.run_all({1: SECRET})
    assert ("openai", True) in seen_keys  # the typed key did reach the provider for the call
    openai_column = comparison.columns[1]
    assert openai_column.state == "error" and "cannot reach" in openai_column.error
    assert openai_column.agent is None  # the provider holding the key was dropped when the call ended
    assert not holds_text(comparison, SECRET)
    bundle = comparison.bundle()
    text = json.dumps(bundle)
    assert SECRET not in text
    assert (bundle["format"], bundle["version"], bundle["prompt"]) == ("agentcore.comparison", 1, PROMPT)
    assert [from_dict(r).config.provider for r in bundle["runs"]] == ["scripted", "openai"]
    prompt, labels, runs = load_bundle(json.loads(text))
    assert prompt == PROMPT and labels == [c.label for c in comparison.columns]
    assert runs[0].messages == comparison.runs[0].messages and runs[1].error == openai_column.run.error


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda b: b.update(format="agentcore.transcript"), "format: expected 'agentcore.comparison'"),
        (lambda b: b.update(version=2), "version: this agentcore reads version 1"),
        (lambda b: b.update(runs=[]), "runs: expected a non-empty list"),
        (lambda b: b["runs"][1]["messages"].insert(1, {"role": "robot"}), "runs[1]: messages[1]: Input tag 'robot'"),
    ],
)
def test_a_bad_bundle_is_refused_with_the_field_and_the_reason(mutate, words):
    comparison = Comparison(PROMPT, [parse_spec("scripted:weather"), parse_spec("scripted:runaway")], max_steps=1)
    comparison.step_all()
    bundle = json.loads(json.dumps(comparison.bundle()))
    mutate(bundle)
    with pytest.raises(TranscriptError) as info:
        load_bundle(bundle)
    assert str(info.value).startswith(words)


# -- the command line ----------------------------------------------------------------


def agentcore(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentcore", *args], capture_output=True, text=True, timeout=180, cwd=cwd
    )


def test_cli_compare_runs_scripted_configurations_and_writes_the_bundle(tmp_path, capsys):
    from agentcore.cli.main import main

    out = tmp_path / "b.json"
    code = main(
        ["compare", PROMPT, "--config", "scripted:weather", "--config", "scripted:runaway"]
        + ["--tools", "get_weather,search_notes", "--max-steps", "2", "--out", str(out)]
    )
    printed = capsys.readouterr().out
    assert code == 0
    lines = printed.splitlines()
    weather = next(line for line in lines if line.startswith("scripted:weather "))
    runaway = next(line for line in lines if line.startswith("scripted:runaway "))
    assert weather.split()[1:3] == ["2", "answer"] and runaway.split()[1:3] == ["2", "max_steps"]
    _, labels, runs = load_bundle(json.loads(out.read_text()))
    assert labels == ["scripted:weather", "scripted:runaway"] and [r.stop_reason for r in runs] == [
        "answer",
        "max_steps",
    ]


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_cli_compare_keeps_going_past_a_failing_configuration_and_exits_4(tmp_path, capsys):
    from agentcore.cli.main import main

    out = tmp_path / "b.json"
    dead = f"openai:gpt-4o-mini@http://127.0.0.1:{closed_port()}/v1"
    code = main(["compare", PROMPT, "--config", "scripted:weather", "--config", dead, "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 4
    assert "cannot reach" in captured.err and "Traceback" not in captured.err
    data = json.loads(out.read_text())
    assert [r["stop_reason"] for r in data["runs"]] == ["answer", "error"]


def _compare_runs(url: str, runs: int) -> list[str]:
    return ["compare", "What is 17 × 23?", "--config", f"openai:stand-in@{url}/v1", "--config", "scripted:weather"] + [
        "--tools",
        "none",
        "--runs",
        str(runs),
        "--expect",
        "391",
    ]


def test_cli_compare_with_runs_shows_every_runs_row_named_by_its_run_and_the_summary_reads_those_rows(
    capsys, monkeypatch
):
    from support.stand_in import Reply, StandIn

    from agentcore.cli.main import main

    monkeypatch.setenv("OPENAI_API_KEY", "stand-in-key-0123456789")
    # run 1 refused, run 2 right, run 3 wrong: the last run is fine, the first is not
    with StandIn(Reply.refused(), Reply.chat("17 × 23 = 391."), Reply.chat("17 × 23 = 381.")) as server:
        code = main(_compare_runs(server.url, 3))
    captured = capsys.readouterr()
    out = captured.out
    assert code == 4, "a run that failed fails the comparison, whichever run it was"
    assert "error: run 1 of 3: openai:stand-in@" in captured.err and "Incorrect API key" in captured.err
    rows = {line.split(": ", 1)[0]: line for line in out.splitlines() if line.startswith("run ")}
    assert "each of the 3 runs, configuration by configuration" in out
    mine = [line for line in out.splitlines() if line.startswith("run ") and "openai:stand-in" in line]
    assert [line.split(": ", 1)[0] for line in mine] == ["run 1 of 3", "run 2 of 3", "run 3 of 3"]
    assert "401" in mine[0] and "391" in mine[1] and "381" in mine[2]
    assert sum(" answer " in line for line in mine) == 2 and len(rows) == 3
    assert not [line for line in out.splitlines() if line.startswith("openai:stand-in@") and " answer " in line]
    summary = out.split("over 3 runs of each configuration\n", 1)[1].splitlines()
    stand_in = next(line for line in summary if line.startswith("openai:stand-in"))
    assert stand_in.split()[1:3] == ["2/3", "1/3"]  # what the three rows above say: two answers, one holds 391
    assert "for 3 runs, one after another" in out
    # one run, at the limit: its own table, unnamed, and its wall time, as before
    with StandIn(Reply.chat("17 × 23 = 391.")) as server:
        assert main(_compare_runs(server.url, 1)) == 0
    out = capsys.readouterr().out
    assert not [line for line in out.splitlines() if line.startswith("run ")]
    assert next(line for line in out.splitlines() if line.startswith("openai:stand-in@")).split()[2] == "answer"
    assert "one after another" not in out and "slowest configuration" in out


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["compare", PROMPT, "--config", "scripted:weather"], "2 to 4 configurations, got 1"),
        (["compare", PROMPT, "--config", "scripted", "--config", "@x"], "expected PROVIDER[:MODEL][@BASE_URL]"),
        (["compare", PROMPT, "--config", "scripted", "--config", "scripted", "--tools", "nope"], "unknown tool"),
    ],
)
def test_cli_compare_usage_errors_are_one_line_and_exit_2(args, words, capsys):
    from agentcore.cli.main import main

    assert main(args) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


@pytest.mark.slow
def test_cli_compare_on_the_scripted_and_local_providers(tmp_path):
    ok, why = local_available()
    if not ok:
        pytest.skip(why)
    done = agentcore(
        "compare", PROMPT, "--config", "scripted:weather", "--config", "local", "--tools", "get_weather",
        "--max-steps", "2", "--out", "b.json", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    _, labels, runs = load_bundle(json.loads((tmp_path / "b.json").read_text()))
    assert labels == ["scripted:weather", "local"]
    local = runs[1]
    assert local.config.provider == "local" and local.stop_reason in ("answer", "max_steps") and local.steps
    assert local.steps[0].usage.input_tokens > 0 and not local.steps[0].estimated  # llama.cpp counts its tokens
    assert "local" in done.stdout and "wall time" in done.stdout


@pytest.mark.slow
def test_real_adapters_side_by_side_against_two_slow_servers(katan_pool):
    fast = katan_pool.fresh("--latency-ms", "100", "--max-concurrent", "4")
    slow = katan_pool.fresh("--latency-ms", "300", "--max-concurrent", "4")
    specs = [ColumnSpec("openai", "echo", f"{fast.url}/v1"), ColumnSpec("anthropic", "echo", slow.url)]
    keys = {0: SECRET, 1: SECRET}
    comparison = Comparison(PROMPT, specs, tools=toolbox.get_tools("get_weather"), max_steps=2, api_keys=keys)
    comparison.run_all(keys)
    assert [c.state for c in comparison.columns] == ["done", "done"], [c.error for c in comparison.columns]
    openai_body, anthropic_body = wire_requests(comparison.runs, 2)
    # the same conversation in two dialects: a tool result is its own message in one, a content block in the other
    assert openai_body["messages"][-1]["role"] == "tool"
    assert anthropic_body["messages"][-1]["content"][0]["type"] == "tool_result"
    assert SECRET not in json.dumps(comparison.bundle())


def test_cancel_stops_a_running_column_before_its_next_phase():
    entered, gate = threading.Event(), threading.Event()

    class Gate(BaseProvider):
        name: ClassVar[str] = "gate"

        def complete(self, request, on_text=None) -> ModelResponse:
            entered.set()
            gate.wait(timeout=20)
            call = ToolCall(id=f"call_{len(request.messages)}", name="get_weather", arguments={"city": "Rome"})
            return ModelResponse(message=AssistantMessage(tool_calls=(call,)))

    comparison = Comparison(
        PROMPT,
        [ColumnSpec("gate"), parse_spec("scripted:weather")],
        tools=toolbox.get_tools("get_weather"),
        factory=factory_of({"gate": Gate("gate")}),
    )
    assert comparison.start("run")
    assert entered.wait(timeout=20)
    assert comparison.columns[0].state == "running" and not comparison.start("run")  # busy: not started twice
    comparison.cancel()
    gate.set()
    assert comparison.wait(timeout=20)
    gated, weather = comparison.columns
    assert gated.run.stop_reason == "cancelled" and len(gated.run.steps) == 1 and gated.state == "ready"
    assert weather.run.stop_reason in ("answer", "cancelled") and weather.error is None  # Stop asks every column


class SettingsSeen(BaseProvider):
    """Answers at once, keeping the settings of each request it was sent."""

    name: ClassVar[str] = "settings-seen"

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.seen: list[tuple] = []

    def complete(self, request, on_text=None) -> ModelResponse:
        s = request.settings
        self.seen.append((s.temperature, s.max_tokens, s.seed))
        return ModelResponse(message=AssistantMessage(content="19 degrees."))


def test_a_columns_settings_are_recorded_in_its_run_and_sent_from_there():
    providers = {"a": SettingsSeen("a"), "b": SettingsSeen("b")}
    specs = [ColumnSpec("a", temperature=0.2, max_tokens=50, seed=7), ColumnSpec("b", seed=8)]
    comparison = Comparison(PROMPT, specs, factory=factory_of(providers))
    comparison.step_all()
    assert providers["a"].seen == [(0.2, 50, 7)] and providers["b"].seen == [(None, None, 8)]
    config = comparison.columns[0].run.config
    assert (config.temperature, config.max_tokens, config.seed) == (0.2, 50, 7)  # an export of the run sends them too


def test_an_expected_answer_is_checked_by_containment_and_only_for_its_own_prompt():
    from agentcore.compare import ExpectedAnswer

    tools = [toolbox.TOOLBOX["calculator"]]
    specs = [ColumnSpec("scripted", "tool_error"), ColumnSpec("scripted", "recovery")]
    pinned = ExpectedAnswer(("= 391",), "the pinned test times", "What is 17 × 23?")
    comparison = Comparison("What is 17 × 23?", specs, tools=tools, expected=pinned)
    comparison.run_all()
    assert comparison.expected is pinned  # a pinned test's expectation wins over the scenario's own ("391")
    assert [r["contains_expected"] for r in comparison.summary()] == [True, False]
    assert pinned.missing({"answer": "391"}) == ["= 391"] and pinned.missing(None) is None
    # asked something else, the pinned test's answer is not applied; no scenario declares one for that prompt
    other = Comparison("What is 2 + 2?", specs, tools=tools, expected=pinned)
    assert other.expected is None
    assert [r["contains_expected"] for r in other.summary()] == [None, None]
    # a scenario's own prompt brings the answer the scenario declares
    own = Comparison("What is 17 * 23 + 4?", specs, tools=tools)
    assert own.expected is not None and own.expected.contains == ("395",) and "recovery" in own.expected.source

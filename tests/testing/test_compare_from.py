"""Compare from step k of a stored run: each configuration forks the run just before step k's model call, with
the run's own tools, settings, policies, hooks and mocks, and the forks go on in lockstep beside the original."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from typing import ClassVar

import pytest

from agentcore import toolbox
from agentcore.accounting import sent_at
from agentcore.compare import ColumnSpec, Comparison, Origin, load_bundle, parse_spec
from agentcore.errors import ProviderError, UsageError
from agentcore.hooks.specs import MockRule
from agentcore.loop import Agent
from agentcore.messages import AssistantMessage, Usage
from agentcore.policies import ContextPolicies
from agentcore.providers import create_provider
from agentcore.providers.base import BaseProvider, ModelResponse
from agentcore.providers.scripted import SCENARIOS
from agentcore.run import Run, RunConfig
from agentcore.store.runs import Store

RESEARCH = SCENARIOS["research"]
SECRET = "sk-compare-from-secret-4b1e"


def research_run(prompt: str = RESEARCH.prompt, **fields) -> Run:
    """The scripted research scenario run to its answer (ten steps reading notes, without policies)."""
    tools = toolbox.get_tools(list(RESEARCH.tools))
    run = Run.start(prompt, RunConfig.made_for("scripted", "research", tools, **fields))
    Agent(create_provider("scripted", "research"), tools).run(run)
    assert run.stop_reason == "answer" and len(run.steps) >= 5
    return run


class Recording(BaseProvider):
    """Answers every call with a plain reply, and keeps each request it was sent."""

    name: ClassVar[str] = "recording"

    def __init__(self) -> None:
        super().__init__("recorder")
        self.requests: list = []

    def complete(self, request, on_text=None) -> ModelResponse:
        self.requests.append(request)
        return ModelResponse(
            message=AssistantMessage(content="the recorder's answer"), usage=Usage(input_tokens=7, output_tokens=3)
        )


def test_each_fork_keeps_the_history_up_to_step_ks_call_names_its_parent_and_makes_one_step():
    run = research_run()
    before = run.model_dump_json()
    specs = [parse_spec("scripted:research"), parse_spec("scripted:weather")]
    comparison = Comparison.from_step(Origin(run, 4, steps=1), specs, tools=toolbox.get_tools(list(RESEARCH.tools)))
    comparison.step_to_end()
    cut = run.steps[3].message_count
    for column in comparison.columns:
        fork = column.run
        assert (fork.parent.run_id, fork.parent.step) == (run.id, 4)
        assert fork.messages[:cut] == run.messages[:cut]
        assert len(fork.steps) == 4 and [s.index for s in fork.steps] == [1, 2, 3, 4]
        assert [s.model_dump() for s in fork.steps[:3]] == [s.model_dump() for s in run.steps[:3]]
        assert fork.config.tools == run.config.tools and fork.config.max_steps == 4
    research, weather = (c.run for c in comparison.columns)
    assert (research.config.provider, research.config.model) == ("scripted", "research")
    assert (weather.config.provider, weather.config.scenario) == ("scripted", "weather")
    # the same model asked step 4 again says what the original said there
    assert research.messages[cut] == run.messages[cut]
    assert run.model_dump_json() == before  # the original itself is never changed


def test_the_recorded_call_is_asked_again_as_it_was_sent_with_its_policies_and_hooks():
    email = "ada@example.org"
    run = research_run(
        f"{RESEARCH.prompt} Write to {email}.", policies=ContextPolicies(keep_tool_results=1), hooks=["redact"]
    )
    recorder = Recording()

    def factory(provider, model, **_):
        return recorder if provider == "recording" else create_provider(provider, model)

    comparison = Comparison.from_step(
        Origin(run, 5, steps=1), [ColumnSpec("recording", "recorder"), parse_spec("scripted:research")], factory=factory
    )
    comparison.step_to_end()
    (request,) = recorder.requests
    # what step 5 sent, under the run's policies (older tool results left out) and its hook (the address masked)
    assert list(request.messages) == sent_at(run, 5)
    assert email not in json.dumps([m.model_dump() for m in request.messages])
    assert any("[email]" in (m.content or "") for m in request.messages)
    assert [t.name for t in request.tools] == [t.name for t in run.config.tools]
    fork = comparison.columns[0].run
    assert sent_at(fork, 5) == sent_at(run, 5) and fork.config.policies == run.config.policies
    assert fork.config.hooks == ["redact"]


def test_without_steps_each_fork_goes_on_to_the_end_of_the_runs_budget():
    run = research_run(max_steps=12)
    origin = Origin(run, 2)
    comparison = Comparison.from_step(origin, [parse_spec("scripted:research"), parse_spec("scripted:research")])
    comparison.step_to_end()
    assert origin.budget == 12
    for column in comparison.columns:
        assert column.run.config.max_steps == 12
        assert column.run.stop_reason == "answer" and len(column.run.steps) == 10


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_configuration_that_cannot_take_the_history_fails_in_one_line_and_the_others_finish():
    tools = toolbox.get_tools(["get_weather"])
    huge = MockRule(tool="get_weather", result="rain, " * 40_000)  # three results of 240,000 characters each
    run = Run.start(
        "What is the weather in Paris, Rome and Tokyo?", RunConfig.made_for("scripted", "weather", tools, mocks=[huge])
    )
    Agent(create_provider("scripted", "weather"), tools).run(run)
    specs = [parse_spec("openai:gpt-4o-mini@http://127.0.0.1:9/v1"), parse_spec("scripted:weather")]
    comparison = Comparison.from_step(Origin(run, 2), specs, tools=tools, api_keys={0: SECRET})
    comparison.step_to_end()
    failed, done = comparison.columns
    assert failed.state == "error" and "\n" not in failed.error
    assert "context window of 128,000" in failed.error and len(failed.run.steps) == 1  # no call was made
    assert done.state == "done" and done.run.stop_reason == "answer" and len(done.run.steps) == 2
    assert SECRET not in json.dumps(comparison.bundle())


class Down(BaseProvider):
    """A server that is down: every call fails, and is counted."""

    name: ClassVar[str] = "down"

    def __init__(self) -> None:
        super().__init__("down")
        self.calls = 0

    def complete(self, request, on_text=None) -> ModelResponse:
        self.calls += 1
        raise ProviderError("the server is down", provider=self.name, status=503, type="overloaded")


def test_a_column_that_failed_is_not_asked_again_while_the_others_go_on_to_their_end():
    down = Down()

    def factory(provider, model, **_):
        return down if provider == "down" else create_provider(provider, model)

    comparison = Comparison.from_step(
        Origin(research_run(), 3), [ColumnSpec("down", "down"), parse_spec("scripted:research")], factory=factory
    )
    comparison.step_to_end()
    failed, finished = comparison.columns
    assert down.calls == 1 and failed.state == "error" and "the server is down" in failed.error
    assert finished.run.stop_reason == "answer" and len(finished.run.steps) == 10


@pytest.mark.parametrize(
    ("step", "steps", "words"), [(0, None, "no step 0"), (11, None, "no step 11"), (3, 0, "not 0")]
)
def test_a_step_the_run_does_not_have_is_refused_in_one_line(step, steps, words):
    with pytest.raises(UsageError, match=words):
        Origin(research_run(), step, steps)


def test_the_summary_series_and_bundle_count_from_step_k_with_the_original_first():
    run = research_run()
    comparison = Comparison.from_step(Origin(run, 8), [parse_spec("scripted:research"), parse_spec("scripted:weather")])
    comparison.step_to_end()
    original, research, weather = comparison.summary()
    assert original["config"] == "original (scripted:research)" and original["steps"] == 3
    assert original["input_tokens"] == sum(s.usage.input_tokens for s in run.steps[7:])
    assert research["steps"] == 3 and weather["steps"] == 1
    assert research["input_tokens"] == original["input_tokens"]  # the same model from the same place
    assert {row["step"] for row in comparison.series()} == {8, 9, 10}
    rows = comparison.step_rows()
    assert [r["config"] for r in rows] == ["original (scripted:research)", "scripted:research", "scripted:weather"]
    assert rows[0]["tool_calls"] == rows[1]["tool_calls"] and rows[0]["tool_calls"]
    bundle = json.loads(json.dumps(comparison.bundle()))
    assert bundle["from"] == {"run_id": run.id, "step": 8}
    prompt, labels, runs = load_bundle(bundle)
    assert prompt == RESEARCH.prompt and labels[0] == "original (scripted:research)" and runs[0].id == run.id


def test_the_summary_says_why_each_run_stopped_in_words_a_used_budget_with_the_steps_it_was_given():
    run = research_run()
    specs = [parse_spec("scripted:research"), parse_spec("scripted:weather")]
    comparison = Comparison.from_step(Origin(run, 4, steps=1), specs, tools=toolbox.get_tools(list(RESEARCH.tools)))
    comparison.step_to_end()
    original, research, weather = comparison.summary()
    assert (research["stop_reason"], research["stop"]) == ("max_steps", "made the 1 step it was given from step 4")
    assert original["stop"] == "answered" and weather["stop"] == "answered"
    fresh = Comparison("Go on forever.", [parse_spec("scripted:runaway")] * 2, max_steps=3)
    fresh.step_to_end()
    assert [row["stop"] for row in fresh.summary()] == ["made the 3 steps it was given"] * 2


# -- the command line ------------------------------------------------------------------


def agentcore(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentcore", *args], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.fixture
def stored_research(tmp_path) -> tuple[str, Run]:
    db = str(tmp_path / "runs.db")
    run = research_run()
    Store(db).save_run(run)
    return db, run


@pytest.mark.slow
def test_cli_compare_from_step_4_stores_one_fork_per_configuration_and_prints_the_reply(stored_research, katan):
    import os

    db, run = stored_research
    env = {**os.environ, "OPENAI_API_KEY": SECRET}
    done = agentcore(
        "compare", "--from", f"{run.id}:4", "--config", "scripted:research", "--config", f"openai:echo@{katan.url}/v1",
        "--steps", "1", "--db", db, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    store = Store(db)
    forks = store.children(run.id)
    assert len(forks) == 2 and {f.parent_step for f in forks} == {4}
    cut = run.steps[3].message_count
    for summary in forks:
        fork = store.read_run(summary.id)
        assert fork.messages[:cut] == run.messages[:cut] and len(fork.steps) == 4
    echo = next(store.read_run(f.id) for f in forks if store.read_run(f.id).config.provider == "openai")
    reply = echo.messages[cut]
    assert isinstance(reply, AssistantMessage) and (reply.content or reply.tool_calls)
    # its reply is printed beside the original's step 4, under its own configuration
    block = done.stdout.split(f"openai:echo@{katan.url}/v1 · openai:echo", 1)[1].split("\n\n", 1)[0]
    said = [f"{c.name}({c.arguments_text})" for c in reply.tool_calls] + ([reply.content] if reply.content else [])
    assert said and all(text[:200] in block for text in said), block
    assert "original (scripted:research)" in done.stdout and "search_notes" in done.stdout
    with sqlite3.connect(db) as raw:
        assert SECRET not in json.dumps(raw.execute("SELECT * FROM runs").fetchall())
    assert SECRET not in done.stdout + done.stderr
    shown = agentcore("runs", "show", run.id, "--db", db)
    assert shown.returncode == 0 and "forks (2):" in shown.stdout
    assert f"{echo.id} at step 4 · scripted/research → openai/echo · 4 steps" in shown.stdout


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_cli_compare_from_saves_a_failing_configurations_fork_and_exits_4(stored_research):
    db, run = stored_research
    done = agentcore(
        "compare", "--from", f"{run.id}:4", "--config", "scripted:weather", "--config", "nosuch-model-provider-x:m",
        "--db", db,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1  # an unknown provider is bad usage
    done = agentcore(
        "compare", "--from", f"{run.id}:9", "--config", "scripted:research", "--config", "openai:m@http://127.0.0.1:9/v1",
        "--db", db, env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": SECRET, "HOME": str(db) + ".home"},
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    assert len(Store(db).children(run.id)) == 2  # the failed fork is kept with its error, nothing is lost
    assert "error: openai:m@http://127.0.0.1:9/v1" in done.stderr


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--from", "nocolon"], "expected RUN_ID:K"),
        (["--from", "abc:x"], "expected RUN_ID:K"),
        (["--from", "nosuchrun:2"], "no run 'nosuchrun'"),
        (["--from", "RUN:11"], "there is no step 11"),
        (["--from", "RUN:2", "--steps", "0"], "--steps must be at least 1"),
        (["a prompt", "--from", "RUN:2"], "give no prompt"),
        (["a prompt", "--steps", "1"], "go with --from"),
        ([], "needs a prompt, or --from"),
    ],
)
def test_cli_compare_from_usage_errors_are_one_line_and_exit_2(stored_research, args, words):
    db, run = stored_research
    args = [a.replace("RUN", run.id) for a in args]
    db_args = ["--db", db] if "--from" in args else []
    done = agentcore("compare", *args, "--config", "scripted:weather", "--config", "scripted:research", *db_args)
    assert done.returncode == 2, done.stdout
    assert words in done.stderr and done.stderr.count("\n") == 1

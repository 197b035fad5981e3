"""The models' documented rules: a body the SDK types accept can still be refused by the model it is sent to.

The cases are the vendors' own (tests/fixtures/model_rules.json, each with its source). A setting the model
refuses is one line before anything is sent, on every path that builds a body: a run, a comparison column, a
pinned test, an export. Where there is one right answer it is sent instead (gpt-6-luna offered tools on Chat
Completions gets reasoning effort none), and the playground says so.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from support.sdk import needs_sdk, sdk_problems
from support.stand_in import Reply, StandIn

from agentcore import catalogue, transcript
from agentcore.cli.main import main
from agentcore.compare import ColumnSpec, Comparison
from agentcore.errors import UsageError
from agentcore.exports import export_zip
from agentcore.loop import Agent
from agentcore.messages import UserMessage
from agentcore.providers import create_provider
from agentcore.providers.base import ModelRequest, Settings
from agentcore.run import Run, RunConfig
from agentcore.testing.pinned import PinnedTest
from agentcore.testing.runner import run_cell
from agentcore.toolbox import get_tools
from agentcore.tools import ToolSpec

CASES = json.loads((Path(__file__).parents[1] / "fixtures" / "model_rules.json").read_text(encoding="utf-8"))["cases"]
WEATHER = ToolSpec(name="get_weather", description="Weather", parameters={"type": "object", "properties": {}})
QUIET = {"api_key": "sk-test-PLANTED-000000000000", "retry_base": 0.001, "retry_cap": 0.002}
ANSWERS = {
    "openai": "openai_parallel_tool_calls.json",
    "openai-responses": "openai_responses_final_text.json",
    "anthropic": "anthropic_thinking_final_text.json",
}


def provider_at(server: StandIn, name: str, model: str) -> Any:
    base_url = server.url if name == "anthropic" else f"{server.url}/v1"
    return create_provider(name, model, base_url=base_url, **QUIET)


def dig(body: dict[str, Any], path: str) -> Any:
    for key in path.split("."):
        body = body[key]
    return body


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_each_documented_case_is_refused_before_sending_or_sent_as_the_model_takes_it(case: dict[str, Any]):
    """All 23 cases through the adapter: a refusal is one line and no request; an accepted body carries `sent`."""
    name, model = case["provider"], case["model"]
    request = ModelRequest(
        messages=(UserMessage(content="Weather in Paris?"),),
        tools=(WEATHER,) if case["tools"] else (),
        settings=Settings(**case["settings"]),
    )
    with StandIn(Reply.fixture(ANSWERS[name])) as server:
        provider = provider_at(server, name, model)
        if case["refused"] is not None:
            with pytest.raises(UsageError) as refused:
                provider.complete(request)
        else:
            provider.complete(request)
    if case["refused"] is not None:
        assert case["refused"] in str(refused.value) and "\n" not in str(refused.value)
        assert str(refused.value).startswith(f"{name}: {model} ")
        assert server.seen == []
        return
    body = server.seen[0].body
    for path, value in case["sent"].items():
        assert dig(body, path) == value, path
    needs_sdk(name)
    if name == "anthropic":  # the anthropic SDK's types have no temperature (the API version it sends refuses it)
        body = {k: v for k, v in body.items() if k != "temperature"}
    assert sdk_problems(name, body) == []


def test_the_table_covers_every_catalogue_model_with_a_documented_rule():
    """Each current model of the catalogue that has documented rules appears in the table; the table's cases are
    both accepted and refused."""
    tabled = {(c["provider"], c["model"]) for c in CASES}
    ruled = [
        (provider, m.id)
        for provider in ("openai", "anthropic")
        for m in catalogue.models(provider)
        if m.current and catalogue.model_rules(provider, m.id) != catalogue.NO_RULES
    ]
    for model in ("gpt-5.6-luna", "gpt-5.6-terra", "gpt-5.6-sol", "gpt-6-sol", "gpt-6-astra", "gpt-6-luna"):
        assert ("openai", model) in ruled
    missing = [
        (p, m) for p, m in ruled if (p, m) not in tabled and not (p == "openai" and ("openai-responses", m) in tabled)
    ]
    assert missing == []
    assert catalogue.model_rules("anthropic", "claude-haiku-5-5").thinking_bound_to_prefix
    assert {c["refused"] is None for c in CASES} == {True, False}


def test_a_run_with_tools_on_the_default_openai_model_sends_effort_none_and_says_so():
    run = Run.start("Weather in Paris?", RunConfig(provider="openai", model="gpt-6-luna", tools=[WEATHER]))
    from agentcore.request import settings_note

    assert settings_note(run, "openai", "gpt-6-luna") == (
        "reasoning_effort none is sent: gpt-6-luna calls tools on Chat Completions only at effort none"
    )
    with StandIn(Reply.fixture("openai_parallel_tool_calls.json")) as server:
        Agent(provider_at(server, "openai", "gpt-6-luna")).model_phase(run)
    assert server.seen[0].body["reasoning_effort"] == "none"
    assert run.steps[0].wire.request["reasoning_effort"] == "none"  # what the step sent says so too
    assert (
        settings_note(
            run.model_copy(update={"config": run.config.model_copy(update={"tools": []})}), "openai", "gpt-6-luna"
        )
        is None
    )


def test_a_comparison_column_whose_settings_the_model_refuses_fails_before_any_call():
    with StandIn(Reply.fixture("openai_responses_final_text.json")) as server:
        spec = ColumnSpec("openai-responses", "gpt-6-luna", base_url=f"{server.url}/v1", temperature=0.5)
        comparison = Comparison(
            "Weather in Paris?", [spec, ColumnSpec("scripted", "weather")], api_keys={0: QUIET["api_key"]}
        )
        refused = comparison.columns[0]
        assert refused.state == "error"
        assert refused.error == (
            "openai-responses: gpt-6-luna takes temperature only at reasoning effort none, and this request "
            "reasons at 'medium': leave temperature unset, or set the effort to none"
        )
        comparison.run_all(api_keys={0: QUIET["api_key"]})
    assert server.seen == []
    assert comparison.columns[1].run.stop_reason == "answer"  # the other column is not held up


def test_a_pinned_test_on_a_model_that_refuses_its_settings_fails_at_setup_without_a_call():
    test = PinnedTest(name="weather", prompt="Weather in Paris?", tools=["get_weather"], temperature=0.3)
    with StandIn(Reply.fixture("anthropic_thinking_final_text.json")) as server:
        spec = ColumnSpec("anthropic", "claude-haiku-5-5", base_url=server.url)
        cell = run_cell(test, spec, factory=lambda *a, **kw: create_provider(*a, **{**kw, **QUIET}))
    assert server.seen == []
    assert [(f.expectation, f.message) for f in cell.failures] == [
        ("setup", "anthropic: claude-haiku-5-5 takes the default temperature (1) only: leave it unset")
    ]
    assert cell.errored  # kept from running: an error, not a failed expectation


@pytest.fixture
def scripted_run(tmp_path: Path) -> Path:
    """A finished scripted run with tools, saved as a transcript."""
    path = tmp_path / "run.json"
    assert main(["run", "--provider", "scripted", "--scenario", "weather", "--out", str(path)]) == 0
    return path


@pytest.mark.parametrize(
    ("setting", "line"),
    [
        (
            {"temperature": 0.3},
            "not exported: anthropic: claude-haiku-5-5 takes the default temperature (1) only: leave it unset",
        ),
        (
            {"thinking_budget": 2048},
            "not exported: anthropic: claude-haiku-5-5 takes adaptive thinking only: set a reasoning effort "
            "instead of a thinking budget",
        ),
    ],
)
def test_an_export_the_model_would_refuse_says_why_instead_of_printing_the_body(
    scripted_run: Path, setting: dict[str, Any], line: str, capsys
):
    run = transcript.load(scripted_run)
    run.config = run.config.model_copy(update=setting)
    scripted_run.write_text(transcript.dumps(run), encoding="utf-8")
    capsys.readouterr()
    assert main(["export", str(scripted_run), "--format", "anthropic"]) != 0
    out, err = capsys.readouterr()
    assert out == "" and err == f"agentcore: error: {line}\n"
    # the same run exports for a model that takes these settings
    assert main(["export", str(scripted_run), "--format", "anthropic", "--model", "claude-opus-4-6"]) == 0


def test_a_zip_of_runs_holds_the_reason_in_place_of_a_refused_body(scripted_run: Path):
    run = transcript.load(scripted_run)
    hot = run.model_copy(update={"id": "hot", "config": run.config.model_copy(update={"temperature": 0.3})})
    data = export_zip([run, hot], ("anthropic",))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = set(archive.namelist())
        assert f"{run.id}.anthropic.json" in names and "hot.anthropic.txt" in names
        assert "takes the default temperature (1) only" in archive.read("hot.anthropic.txt").decode()


def test_the_default_claude_model_is_given_room_to_think_and_answer():
    tools = tuple(t.spec() for t in get_tools(["get_weather"]))
    ask = ModelRequest(messages=(UserMessage(content="Weather?"),), tools=tools)
    with StandIn(Reply.fixture("anthropic_thinking_final_text.json")) as server:
        provider_at(server, "anthropic", "claude-haiku-5-5").complete(ask)
        provider_at(server, "anthropic", "claude-haiku-4-5").complete(ask)  # no thinking by default: as before
        provider_at(server, "anthropic", "claude-haiku-5-5").complete(
            ask.model_copy(update={"settings": Settings(max_tokens=300)})  # the run's own limit wins
        )
    assert [s.body["max_tokens"] for s in server.seen] == [catalogue.THINKING_MAX_TOKENS, 1024, 300]


@pytest.mark.parametrize(
    ("name", "settings", "line"),
    [
        ("openai", {}, "reasoning_effort none is sent: gpt-6-luna calls tools on Chat Completions only at effort none"),
        (
            "openai-responses",
            {"temperature": 0.5},
            "openai-responses: gpt-6-luna takes temperature only at reasoning effort none, and this request reasons "
            "at 'medium': leave temperature unset, or set the effort to none",
        ),
    ],
)
def test_the_playground_says_what_is_sent_for_the_model_or_why_it_would_refuse(
    open_app, name: str, settings: dict[str, Any], line: str
):
    from ui.state import Session

    tools = [t.spec() for t in get_tools(["get_weather"])]
    run = Run.start("Weather in Paris?", RunConfig(provider=name, model="gpt-6-luna", tools=tools, **settings))
    session = Session()
    session.add_run(run)  # the sidebar follows the run: the next step is gpt-6-luna's
    at = open_app(session=session)
    assert [c.value for c in at.caption if "gpt-6-luna" in c.value and ":material/rule:" in c.value] == [
        f":material/rule: {line}"
    ]

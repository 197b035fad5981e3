"""Exports: transcripts, request bodies, zips and comparison bundles, all written by the one JSON writer."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import ClassVar

import httpx
import pytest

from agentcore import Agent, AssistantMessage, Run, RunConfig, create_provider, providers, transcript
from agentcore.cli.main import main
from agentcore.compare_report import load_bundle, make_bundle
from agentcore.exports import (
    FORMATS,
    REPLAY,
    WIRE_FORMATS,
    export_body,
    export_bundle,
    export_csv,
    export_filename,
    export_json,
    export_otlp,
    export_request,
    export_run,
    export_test,
    export_zip,
)
from agentcore.policies import ContextPolicies
from agentcore.providers.anthropic_cache import breakpoints
from agentcore.providers.base import BaseProvider, ModelRequest, ModelResponse, Usage, WireExchange
from agentcore.registry import Registry
from agentcore.store.runs import Store
from agentcore.telemetry import OTLP_JSON
from agentcore.testing import pinned
from agentcore.toolbox import get_tools

PROMPT = "weather in \ud800 Paris?"  # the CLI takes undecodable bytes in argv as a lone surrogate


def surrogate_run() -> Run:
    run = Run.start(PROMPT, RunConfig(provider="scripted", model="weather"))
    run.messages.append(AssistantMessage(content="reply \udcff"))
    return run


def test_a_transcript_export_with_a_lone_surrogate_is_utf8_and_reads_back_exactly() -> None:
    run = surrogate_run()
    text = export_json(run)
    assert transcript.loads(text.encode("utf-8")) == run


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
def test_a_request_body_export_with_a_lone_surrogate_is_utf8_and_reads_back_exactly(fmt: str) -> None:
    run = surrogate_run()
    text = export_body(run, fmt)
    assert json.loads(text.encode("utf-8")) == export_request(run, fmt)


def test_a_zip_export_with_a_lone_surrogate_holds_every_format() -> None:
    run = surrogate_run()
    with zipfile.ZipFile(io.BytesIO(export_zip([run], FORMATS))) as archive:
        members = {name: archive.read(name).decode("utf-8") for name in archive.namelist()}
    assert sorted(members) == sorted([f"{run.id}.json"] + [f"{run.id}.{fmt}.json" for fmt in WIRE_FORMATS])
    assert transcript.loads(members[f"{run.id}.json"]) == run
    assert json.loads(members[f"{run.id}.openai.json"]) == export_request(run, "openai")


def test_a_comparison_bundle_with_a_lone_surrogate_is_utf8_and_loads_back() -> None:
    runs = [surrogate_run(), surrogate_run()]
    text = export_bundle(make_bundle(PROMPT, runs, ["scripted:weather", "scripted:weather #2"]))
    prompt, labels, loaded = load_bundle(json.loads(text.encode("utf-8")))
    assert prompt == PROMPT and labels == ["scripted:weather", "scripted:weather #2"] and loaded == runs


def test_exports_keep_non_ascii_text_readable() -> None:
    run = Run.start("Wetter in Zürich, 東京?")
    assert "Zürich, 東京" in export_json(run)
    assert "Zürich, 東京" in export_body(run, "anthropic")


def test_exports_leave_out_a_key_found_in_the_environment(monkeypatch) -> None:
    key = "sk-exported-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    run = Run.start(f"my key is {key}")
    for text in (export_json(run), export_body(run, "openai"), export_bundle(make_bundle("p", [run], ["a"]))):
        assert key not in text and "[redacted]" in text  # as the store writes it: saved, then exported, the same


def test_the_cli_exports_a_stored_run_with_a_lone_surrogate(tmp_path: Path, capsys) -> None:
    run = surrogate_run()
    db = str(tmp_path / "runs.db")
    Store(db).save_run(run)
    out = tmp_path / "run.json"
    assert main(["runs", "export", run.id, "--db", db, "--out", str(out)]) == 0
    assert transcript.load(out) == run
    assert main(["runs", "export", run.id, "--db", db, "--format", "ollama"]) == 0
    assert json.loads(capsys.readouterr().out) == export_request(run, "ollama")
    zipped = tmp_path / "runs.zip"
    assert main(["runs", "export", run.id, "--db", db, "--out", str(zipped), "--format", "anthropic"]) == 0
    with zipfile.ZipFile(zipped) as archive:
        assert sorted(archive.namelist()) == [f"{run.id}.anthropic.json", f"{run.id}.json"]
    assert main(["export", str(out), "--format", "openai"]) == 0
    assert json.loads(capsys.readouterr().out) == export_request(run, "openai")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


def test_compare_out_writes_a_bundle_for_a_prompt_with_a_lone_surrogate(tmp_path: Path) -> None:
    out = tmp_path / "bundle.json"
    configs = ["--config", "scripted:weather", "--config", "scripted:weather"]
    assert main(["compare", PROMPT, *configs, "--out", str(out)]) == 0
    prompt, _, runs = load_bundle(json.loads(out.read_bytes()))
    assert prompt == PROMPT and [r.messages[0].content for r in runs] == [PROMPT, PROMPT]


# -- an exported body is the body the run's provider was sent ----------------------------------

CALL_THEN_ANSWER = {
    "openai": (
        {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10},
        },
        {
            "choices": [{"message": {"role": "assistant", "content": "Sunny."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 80, "completion_tokens": 3},
        },
    ),
    "anthropic": (
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 50, "output_tokens": 10},
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": "Sunny."}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 80, "output_tokens": 3},
        },
    ),
}


def answered_run(fmt: str, base_url: str | None) -> Run:
    """A two-step run (a tool call, then the answer) on `fmt`'s provider, its answers scripted at the HTTP layer."""
    replies = iter(CALL_THEN_ANSWER[fmt])
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=next(replies)))
    provider = create_provider(
        fmt,
        "gpt-4o-mini" if fmt == "openai" else "claude-haiku-4-5",
        base_url=base_url,
        api_key="test-key",
        transport=transport,
        stream=False,
    )
    config = RunConfig(
        provider=fmt,
        model=provider.model,
        base_url=base_url,
        system_prompt="Be brief.",
        max_steps=3,
        temperature=0.2,
        max_tokens=300,
        seed=7 if fmt == "openai" else None,
        policies=ContextPolicies(cache_breakpoints=True),
    )
    run = Run.start("What is the weather in Paris?", config)
    Agent(provider, get_tools(["get_weather"])).run(run)
    assert [s.wire is not None for s in run.steps] == [True, True] and run.stop_reason == "answer", run.error
    return run


@pytest.mark.parametrize(
    ("fmt", "base_url"),
    [
        ("anthropic", None),
        ("openai", None),
        ("openai", "https://api.openai.com/v1"),  # the official API named by its URL
        ("openai", "http://compat.test/v1"),  # a compatible server
    ],
)
def test_each_steps_exported_body_is_the_body_it_sent(fmt: str, base_url: str | None, monkeypatch) -> None:
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    run = answered_run(fmt, base_url)
    for step in run.steps:
        assert export_request(run.fork(step.index), fmt) == step.wire.request, step.index


def test_an_anthropic_export_of_a_cached_run_carries_the_cache_control_that_was_sent(monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    run = answered_run("anthropic", None)
    sent = run.steps[-1].wire.request
    assert breakpoints(sent) == ["tools[0]", "system[0]", "messages[2].content[0]"]
    assert export_request(run, "anthropic") == sent  # a finished run exports the request that got its answer


@pytest.mark.parametrize(
    ("base_url", "field"),
    [
        (None, "max_completion_tokens"),
        ("https://api.openai.com/v1/", "max_completion_tokens"),
        ("http://compat.test/v1", "max_tokens"),
    ],
)
def test_an_openai_export_names_max_tokens_as_the_request_sent_did(base_url, field, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    run = answered_run("openai", base_url)
    for body in (run.steps[0].wire.request, export_request(run, "openai")):
        assert body[field] == 300 and body["seed"] == 7
        assert len(body.keys() & {"max_tokens", "max_completion_tokens"}) == 1


class BodyKeyProvider(BaseProvider):
    """A test-only model whose recorded request body holds a credential-named field, as a compatible server's may."""

    name: ClassVar[str] = "bodykey"

    def __init__(self, model: str | None = None, **_: object) -> None:
        super().__init__(model or "m")

    def complete(self, request: ModelRequest, on_text=None) -> ModelResponse:
        body = {
            "model": self.model,
            "api_key": BODY_KEY,
            "messages": [m.model_dump(mode="json") for m in request.messages],
        }
        return ModelResponse(
            message=AssistantMessage(content="done"),
            usage=Usage(input_tokens=3, output_tokens=1),
            wire=WireExchange(url="http://127.0.0.1:9/v1/chat/completions", request=body, status=200),
        )


BODY_KEY = "hunter2-correct-horse"  # no key's shape and never registered: only the field name gives it away


def test_run_out_writes_the_runs_page_export_with_credential_fields_blanked(tmp_path: Path, monkeypatch) -> None:
    registry = Registry("provider", providers.REGISTRY)
    registry.register("bodykey", providers.ProviderInfo("bodykey", f"{__name__}:BodyKeyProvider", "m", ("m",), "test"))
    monkeypatch.setattr(providers, "REGISTRY", registry)
    out, db = tmp_path / "run.json", tmp_path / "runs.db"
    assert main(["run", "hello", "--provider", "bodykey", "--out", str(out), "--db", str(db)]) == 0
    written = out.read_bytes()
    assert BODY_KEY.encode() not in written
    assert json.loads(written)["steps"][0]["wire"]["request"]["api_key"] == "[redacted]"
    (summary,) = Store(db).list_runs()
    assert written.decode() == export_json(Store(db).load_run(summary.id))  # byte for byte the Runs page's export


# -- what each download is named, and a table as CSV ----------------------------


def test_an_exports_file_name_says_its_kind_and_keeps_only_what_is_safe_of_the_run_id() -> None:
    run = Run.start("hi")
    kinds = ("json", "openai", REPLAY, OTLP_JSON, "cost", "comparison")
    assert [export_filename(run, kind).removeprefix(f"agentcore-run-{run.id}") for kind in kinds] == [
        ".json",
        ".openai.json",
        ".html",
        ".otlp.json",
        ".cost.csv",
        ".comparison.json",
    ]
    with pytest.raises(ValueError, match="no export of kind 'pdf'"):
        export_filename(run, "pdf")
    for run_id, name in [("../etc/passwd", "_etc_passwd"), ("..", "run"), ("a" * 70, "a" * 64), ("r\x00 1", "r__1")]:
        assert export_filename(run.model_copy(update={"id": run_id}), "json") == f"agentcore-run-{name}.json"


def test_a_csv_export_has_the_first_rows_keys_as_its_header_an_empty_cell_for_none_and_no_secret(monkeypatch) -> None:
    key = "sk-exported-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    assert export_csv([]) == ""
    assert export_csv([{"step": 1, "cost": None}, {"step": 2, "cost": f"key {key}"}]) == (
        "step,cost\n1,\n2,key [redacted]\n"
    )


WEATHER_PROMPT = "What is the weather in Paris, Rome and Tokyo?"


def weather_run() -> Run:
    tools = get_tools("get_weather")
    run = Run.start(WEATHER_PROMPT, RunConfig.made_for("scripted", "weather", tools))
    Agent(create_provider("scripted", "weather"), tools).run(run)
    return run


def test_each_kind_of_run_export_is_that_kind_and_a_trace_holds_the_messages_unless_asked_not_to() -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra (opentelemetry-sdk) is not installed")
    run = weather_run()
    otlp = export_run(run, OTLP_JSON)
    assert otlp == export_otlp(run)
    assert "resourceSpans" in json.loads(otlp)
    assert WEATHER_PROMPT in otlp  # by default a trace export holds the messages
    bare = export_run(run, OTLP_JSON, content=False)
    assert "resourceSpans" in json.loads(bare)
    assert WEATHER_PROMPT not in bare
    assert WEATHER_PROMPT not in export_otlp(run, content=False)
    atif = json.loads(export_run(run, "atif"))
    assert atif["schema_version"] == "ATIF-v1.7"
    assert atif["steps"][0]["message"] == WEATHER_PROMPT
    with zipfile.ZipFile(io.BytesIO(export_zip([run], (OTLP_JSON,)))) as archive:
        assert WEATHER_PROMPT in archive.read(f"{run.id}.otlp.json").decode()
    with zipfile.ZipFile(io.BytesIO(export_zip([run], (OTLP_JSON,), content=False))) as archive:
        assert WEATHER_PROMPT not in archive.read(f"{run.id}.otlp.json").decode()


def test_a_pinned_test_exports_as_json_unless_yaml_is_asked_for() -> None:
    test = pinned.propose(weather_run())
    as_json = json.loads(export_test(test))
    assert as_json["prompt"] == WEATHER_PROMPT
    yaml_text = export_test(test, yaml_format=True)
    with pytest.raises(json.JSONDecodeError):
        json.loads(yaml_text)
    assert pinned.loads(yaml_text, yaml_format=True).prompt == WEATHER_PROMPT

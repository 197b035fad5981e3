"""The app's OpenTelemetry: the playground's and the runs page's OTLP-JSON downloads, the runs page importing a
trace, and every step sent as it finishes to OTEL_EXPORTER_OTLP_ENDPOINT (a receiver on 127.0.0.1)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otel extra is not installed")

from support.app import click, session, start
from support.runs import weather_run

from agentcore.importers import parse_import
from agentcore.store.runs import Store
from agentcore.telemetry.otlp import otlp_json


def test_the_playgrounds_opentelemetry_download_is_the_runs_trace_with_its_messages(open_app, downloads):
    at = open_app()
    run = start(at)
    click(at, "step")
    at.run()  # `downloads` sees the buttons drawn from here on
    trace = downloads.data(at.download_button(key="export_otlp"))
    names = [s["name"] for r in json.loads(trace)["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]
    assert names[:2] == ["invoke_agent agentcore", "chat weather"]
    assert parse_import(trace).messages == run.messages  # with content: it imports back


def test_steps_are_sent_as_they_finish_when_an_endpoint_is_set(open_app, receiver, monkeypatch):
    url, handler = receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    import ui.otel

    at = open_app()
    start(at)
    click(at, "step")
    click(at, "step")
    live = ui.otel._export()
    assert live.flush()
    names = [s.name for _, spans in handler.requests for s in spans]
    assert names.count("chat weather") == 2 and names[-1] == "invoke_agent agentcore"
    assert not any(
        a.key == "gen_ai.input.messages" for _, spans in handler.requests for s in spans for a in s.attributes
    )
    assert session(at).run.stop_reason == "answer"


@pytest.mark.slow  # the OTLP exporter retries a refused send until its 10 s timeout
def test_a_failing_live_export_is_one_line_on_the_page_and_the_run_goes_on(open_app, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
    import ui.otel

    at = open_app()
    start(at)
    click(at, "step")
    ui.otel._export().flush(timeout_ms=20000)
    at.run()
    shown = [c.value for c in at.caption if "OpenTelemetry export" in c.value]
    assert shown and "Connection refused" in shown[0] and len(session(at).run.steps) == 1


def test_the_runs_page_imports_a_trace_and_offers_each_run_as_one(open_app, downloads, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    run = weather_run()
    at = open_app("views/runs.py")
    at.file_uploader[0].set_value(("run.otlp.json", otlp_json(run, content=True).encode(), "application/json")).run()
    assert any("Imported run.otlp.json" in s.value for s in at.success)
    assert Store(tmp_path / "runs.db").load_run(run.id).messages == run.messages
    at.selectbox(key="runs_selected").set_value(run.id).run()
    assert parse_import(downloads.data(at.download_button(key="runs_dl_otlp"))).messages == run.messages

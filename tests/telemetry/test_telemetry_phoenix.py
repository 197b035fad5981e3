"""A real OpenTelemetry receiver: Arize Phoenix, started on 127.0.0.1, receives a run over OTLP/HTTP, and its own
REST API reads the spans back: their names and kinds, token counts and tool calls; the OpenInference spans Phoenix
keeps import back as the same run.

Phoenix lives in its own venv (`make test` builds .venv-phoenix: its pins conflict with agentcore's), or wherever
AGENTCORE_PHOENIX names its `phoenix` command."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otel extra is not installed")

from support.runs import decided_run, weather_run

from agentcore.cli.main import main
from agentcore.importers import parse_import
from agentcore.store.runs import Store

ROOT = Path(__file__).resolve().parents[2]
PHOENIX = Path(os.environ.get("AGENTCORE_PHOENIX") or ROOT / ".venv-phoenix" / "bin" / "phoenix")
STARTUP_S = 300  # its first start migrates a fresh database: about a minute on two cores

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    if not PHOENIX.exists():
        pytest.skip(f"Arize Phoenix is not installed at {PHOENIX} (make test builds .venv-phoenix)")
    work = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (work / "phoenix.log").open("wb")
    process = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"Phoenix exited with {process.returncode}: {(work / 'phoenix.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"Phoenix did not answer within {STARTUP_S} s")
            time.sleep(1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _spans_of_trace(url: str, trace_id: str, count: int, path: str = "spans") -> list[dict]:
    """The trace's spans as Phoenix's REST API gives them, once it has `count` of them (it ingests in the background)."""
    deadline = time.monotonic() + 60
    while True:
        data = httpx.get(f"{url}/v1/projects/default/{path}", params={"limit": 1000}, timeout=10).json()["data"]
        found = [s for s in data if (s.get("context") or {}).get("trace_id", s.get("trace_id")) == trace_id]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def test_phoenix_receives_a_run_over_otlp_http_and_reads_back_its_spans_tokens_and_tool_calls(
    phoenix, tmp_path, capsys
):
    from agentcore.telemetry.export import trace_id

    run = decided_run()
    db = str(tmp_path / "runs.db")
    Store(db).save_run(run)
    assert main(["runs", "export", run.id, "--db", db, "--otlp", phoenix, "--content"]) == 0
    assert f"sent run {run.id} to {phoenix}/v1/traces" in capsys.readouterr().out
    expected = 1 + len(run.steps) + sum(len(s.tool_runs) for s in run.steps)
    spans = _spans_of_trace(phoenix, f"{trace_id(run.id):032x}", expected)
    by_name: dict[str, list[dict]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    assert sorted(by_name) == ["chat weather", "execute_tool get_weather", "invoke_agent agentcore"]
    assert len(by_name["chat weather"]) == len(run.steps) and len(by_name["execute_tool get_weather"]) == 3
    chats = sorted(by_name["chat weather"], key=lambda s: s["start_time"])
    assert {s["span_kind"] for s in chats} == {"LLM"}  # Phoenix read them as model calls
    for chat, step in zip(chats, run.steps, strict=True):
        assert chat["attributes"]["llm.token_count.prompt"] == step.usage.input_tokens
        assert chat["attributes"]["llm.token_count.completion"] == step.usage.output_tokens
    tools = by_name["execute_tool get_weather"]
    assert {s["span_kind"] for s in tools} == {"TOOL"}
    assert sorted(s["attributes"]["gen_ai.tool.call.id"] for s in tools) == sorted(
        t.tool_call_id for t in run.steps[0].tool_runs
    )
    decisions = sorted(s["attributes"].get("agentcore.tool.decision") for s in tools)
    assert decisions == ["denied", "edited", "typed"]


def test_the_openinference_spans_phoenix_keeps_import_back_as_the_same_run(phoenix, tmp_path):
    from agentcore.telemetry.export import trace_id
    from agentcore.telemetry.otlp import send_run

    run = weather_run()
    send_run(run, phoenix, content=True)
    expected = 1 + len(run.steps) + sum(len(s.tool_runs) for s in run.steps)
    spans = _spans_of_trace(phoenix, f"{trace_id(run.id):032x}", expected, "spans/otlpv1")
    assert len(spans) == expected
    # only what Phoenix itself wrote in OpenInference's names: llm.input_messages, llm.output_messages, tokens
    for span in spans:
        span["attributes"] = [a for a in span["attributes"] if not a["key"].startswith(("gen_ai.", "agentcore."))]
    assert any(a["key"].startswith("llm.input_messages.") for s in spans for a in s["attributes"])
    path = tmp_path / "phoenix-spans.json"
    path.write_text(__import__("json").dumps({"data": spans}))
    back = parse_import(path.read_bytes(), str(path))
    assert back.messages == run.messages
    assert [s.usage.input_tokens for s in back.steps] == [s.usage.input_tokens for s in run.steps]

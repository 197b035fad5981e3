"""Whole loops through the CLI against real servers, and `agentcore export` of the transcripts they leave."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentcore import catalogue, transcript
from agentcore.cli.main import main
from agentcore.messages import AssistantMessage, ToolMessage

pytestmark = pytest.mark.slow
PLANTED = "sk-PLANTED-peer-key-7f3a9c"


def agentcore(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the real `agentcore` command line in a child process."""
    full_env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.endswith("_BASE_URL")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "agentcore", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
    )


def test_llama_cpp_server_runs_a_tool_loop_through_the_cli(llama_server, tmp_path):
    out = tmp_path / "llama.json"
    done = agentcore(
        "run",
        "What is the weather in Paris? Use the get_weather tool.",
        "--provider",
        "openai",
        "--base-url",
        f"{llama_server.url}/v1",
        "--model",
        "smollm2",
        "--tools",
        "get_weather",
        "--max-steps",
        "3",
        "--max-tokens",
        "48",
        "--no-stream",  # llama-cpp-python reports usage only on whole responses
        "--temperature",
        "0",
        "--out",
        str(out),
    )
    assert done.returncode in (0, 3), done.stderr  # an answer, or the step budget: both are a finished loop
    run = transcript.load(out)
    assert run.stop_reason in ("answer", "max_steps") and 1 <= len(run.steps) <= 3
    replies = [m for m in run.messages if isinstance(m, AssistantMessage)]
    assert len(replies) == len(run.steps)
    assert replies[-1].content or replies[-1].tool_calls
    for step in run.steps:
        assert not step.estimated and step.usage.input_tokens > 0 and step.usage.output_tokens > 0
        assert step.wire.status == 200 and "stream" not in step.wire.request
        assert "authorization" not in {k.lower() for k in step.wire.request_headers}  # no key, no header
    calls = [c for m in replies for c in m.tool_calls]
    results = [m for m in run.messages if isinstance(m, ToolMessage)]
    assert len(results) == len(calls)  # every call the model made got a result
    steps = len(run.steps)
    assert f"stop: {run.ending} after {steps} step{'s' * (steps != 1)} ·" in done.stdout  # a reply cut off says so


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
def test_katan_tool_loop_through_the_cli_reaches_the_step_budget(katan, tmp_path, dialect):
    out = tmp_path / f"{dialect}.json"
    base = katan.url if dialect == "anthropic" else f"{katan.url}/v1"
    done = agentcore(
        "run",
        "Weather in Paris?",
        "--provider",
        dialect,
        "--base-url",
        base,
        "--model",
        "echo",
        "--tools",
        "get_weather",
        "--max-steps",
        "3",
        "--out",
        str(out),
        env={f"{dialect.upper()}_API_KEY": PLANTED},
    )
    assert done.returncode == 3, done.stderr  # katan always calls a tool when offered one
    run = transcript.load(out)
    assert run.stop_reason == "max_steps" and len(run.steps) == 3
    assert sum(isinstance(m, ToolMessage) for m in run.messages) == 3
    assert all(s.usage.output_tokens > 0 and not s.estimated for s in run.steps)
    key_header = "x-api-key" if dialect == "anthropic" else "authorization"
    assert all(s.wire.request_headers[key_header] == "[redacted]" for s in run.steps)
    assert PLANTED not in out.read_text() and PLANTED not in done.stdout + done.stderr
    # the third request carried the whole history: 1 user + 2 x (assistant + tool result)
    messages = run.steps[2].wire.request["messages"]
    assert [m["role"] for m in messages][:2] == ["user", "assistant"] and len(messages) == 5
    if dialect == "anthropic":
        assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
        assert messages[2]["content"][0]["type"] == "tool_result"


def test_export_prints_each_wire_form_from_one_transcript(katan, tmp_path, capsys, monkeypatch):
    out = tmp_path / "run.json"
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLANTED)
    args = ["run", "Weather in Rome?", "--provider", "anthropic", "--base-url", katan.url, "--model", "echo"]
    assert main([*args, "--tools", "get_weather", "--system", "Be brief.", "--max-steps", "2", "--out", str(out)]) == 3
    capsys.readouterr()
    bodies = {}
    for fmt in ("openai", "anthropic", "ollama"):
        assert main(["export", str(out), "--format", fmt]) == 0
        bodies[fmt] = json.loads(capsys.readouterr().out)
    run = transcript.load(out)
    sent = {k: v for k, v in run.steps[-1].wire.request.items() if k != "stream"}  # same mapping code
    exported = bodies["anthropic"]
    assert exported["messages"][: len(sent["messages"])] == sent["messages"]
    assert {k: v for k, v in exported.items() if k != "messages"} == {k: v for k, v in sent.items() if k != "messages"}
    assert bodies["anthropic"]["system"] == "Be brief." and bodies["anthropic"]["model"] == "echo"
    assert bodies["anthropic"]["messages"][2]["content"][0]["type"] == "tool_result"
    assert bodies["openai"]["messages"][0] == {"role": "system", "content": "Be brief."}
    assert isinstance(bodies["openai"]["messages"][2]["tool_calls"][0]["function"]["arguments"], str)
    # the run was not an OpenAI one: the default model, the catalogue's
    assert bodies["openai"]["model"] == catalogue.default_model("openai") != "echo"
    assert bodies["ollama"]["messages"][3]["tool_name"] == "get_weather"
    assert isinstance(bodies["ollama"]["messages"][2]["tool_calls"][0]["function"]["arguments"], dict)
    assert all(b["tools"][0]["function"]["name"] == "get_weather" for b in (bodies["openai"], bodies["ollama"]))
    assert all(PLANTED not in json.dumps(b) for b in bodies.values())


def test_export_rejects_an_unknown_format_in_one_line(tmp_path, capsys):
    path = Path(tmp_path / "missing.json")
    assert main(["export", str(path), "--format", "gemini"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gemini" in err

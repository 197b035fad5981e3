"""MCP tools against the bundled demo server (the official SDK's server API), over stdio and streamable HTTP."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the `mcp` extra is not installed: pip install -e '.[mcp]'")

from support.servers import ROOT, free_port

from agentcore.errors import UsageError
from agentcore.mcp.client import MCPServerError, close_all, connect, mcp_tools
from agentcore.mcp.config import ServerConfig, http_server, load_config, parse_config, stdio_server
from agentcore.messages import AssistantMessage, ToolCall
from agentcore.secrets import scrub_text

DEMO = f"{shlex.quote(sys.executable)} -m agentcore.mcp.demo"


def start_http_demo(log: Path) -> tuple[subprocess.Popen, str]:
    """The demo server over streamable HTTP on 127.0.0.1 and a free port, once it accepts connections."""
    port = free_port()
    handle = log.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentcore.mcp.demo", "--http", str(port)],
        stdout=handle,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the demo server exited: {log.read_text(errors='replace')[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}/mcp"
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the demo server did not listen in time")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=5)


@pytest.fixture(scope="module")
def http_demo(tmp_path_factory):
    proc, url = start_http_demo(tmp_path_factory.mktemp("mcp") / "demo.log")
    yield url
    close_all()
    stop(proc)


@pytest.fixture(scope="module", params=["stdio", "http"])
def demo_tools(request, http_demo):
    """The demo server's tools, by name, over each transport."""
    config = stdio_server(DEMO) if request.param == "stdio" else http_server(http_demo)
    return {t.name: t for t in mcp_tools([config])}


def call(tool, arguments, call_id="call_1"):
    return tool.execute(ToolCall(id=call_id, name=tool.name, arguments=arguments))


@pytest.mark.slow  # starts MCP servers
def test_listing_gives_each_tool_its_schema_and_server(demo_tools):
    assert {"add", "divide", "sleep", "word_count"} <= set(demo_tools)
    spec = demo_tools["add"].spec()
    assert spec.parameters["required"] == ["a", "b"]
    assert spec.parameters["properties"]["a"]["type"] == "number"
    assert spec.source == "mcp:agentcore-demo"


@pytest.mark.slow  # starts MCP servers
def test_a_successful_call_is_its_text_and_its_jsonrpc_is_recorded(demo_tools):
    outcome = call(demo_tools["add"], {"a": 2, "b": 3}, "call_ok")
    assert (outcome.content, outcome.is_error) == ("5", False)
    exchange = demo_tools["add"].connection.exchange("call_ok")
    assert [w["direction"] for w in exchange] == ["→", "←"]
    assert exchange[0]["message"]["method"] == "tools/call"
    params = exchange[0]["message"]["params"]
    assert (params["name"], params["arguments"]) == ("add", {"a": 2, "b": 3})
    # the 2026-07-28 revision: every request names its protocol version (no session holds it)
    assert params["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert exchange[1]["message"]["result"]["content"] == [{"type": "text", "text": "5"}]
    methods = [w["message"].get("method") for w in demo_tools["add"].connection.wire]
    # the SDK's server speaks both generations: over stdio and Streamable HTTP alike, the newest is chosen
    assert methods[:2] == ["server/discover", None] and "tools/list" in methods and "initialize" not in methods
    assert demo_tools["add"].connection.speaks == "MCP 2026-07-28 (stateless, server/discover)"


@pytest.mark.slow  # starts MCP servers
def test_an_is_error_result_is_an_error_the_model_reads(demo_tools):
    outcome = call(demo_tools["divide"], {"a": 1, "b": 0})
    assert outcome.is_error and outcome.error == "tool_error"
    assert outcome.content.startswith("Error: ") and "cannot divide by zero" in outcome.content


@pytest.mark.slow  # starts MCP servers
def test_arguments_that_fail_the_schema_are_refused_before_any_call(demo_tools):
    tool = demo_tools["add"]
    outcome = call(tool, {"a": "two"}, "call_bad")
    assert outcome.is_error and outcome.error == "invalid_arguments"
    assert "'b' is a required property" in outcome.content and "'two' is not of type 'number'" in outcome.content
    assert tool.connection.exchange("call_bad") == []
    not_json = tool.execute(ToolCall(id="x", name="add", raw_arguments="{oops"))
    assert not_json.error == "invalid_json"


@pytest.mark.slow  # starts MCP servers
def test_a_slow_call_hits_its_time_limit_and_the_server_goes_on(demo_tools):
    slow = replace(demo_tools["sleep"], timeout_s=0.3)
    started = time.monotonic()
    outcome = call(slow, {"seconds": 10})
    assert time.monotonic() - started < 3
    assert outcome.is_error and outcome.error == "timeout" and "timed out after 0.3 s" in outcome.content
    assert call(demo_tools["add"], {"a": 1, "b": 1}).content == "2"


def _children_marked(mark: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if f"AGENTCORE_TEST_MARK={mark}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.slow  # starts MCP servers
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finds the server's process through /proc")
def test_a_stdio_server_killed_mid_call_is_an_error_result_and_is_started_again():
    mark = f"doomed-{os.getpid()}"  # this test's server only, whatever else runs on the machine
    config = replace(stdio_server(DEMO), env=(("AGENTCORE_TEST_MARK", mark),))
    tools = {t.name: t for t in mcp_tools([config])}
    (pid,) = _children_marked(mark)
    threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()
    started = time.monotonic()
    outcome = call(tools["sleep"], {"seconds": 20})
    assert time.monotonic() - started < 5
    assert outcome.is_error and outcome.error == "server_error" and "ended during the call" in outcome.content
    assert call(tools["add"], {"a": 4, "b": 4}).content == "8"  # the next call starts it again
    assert tools["add"].connection.starts == 2
    tools["add"].connection.close()


@pytest.mark.slow  # starts MCP servers
def test_an_http_server_killed_mid_call_is_an_error_result(tmp_path):
    proc, url = start_http_demo(tmp_path / "demo.log")
    try:
        tools = {t.name: t for t in mcp_tools([http_server(url)])}
        threading.Timer(0.5, proc.kill).start()
        started = time.monotonic()
        outcome = call(tools["sleep"], {"seconds": 20})
        assert time.monotonic() - started < 10
        assert outcome.is_error and outcome.error in ("server_error", "timeout")
        again = call(tools["add"], {"a": 1, "b": 2})  # nothing listens now: a restart fails, as a result
        assert again.is_error and "could not start" in again.content
    finally:
        stop(proc)


@pytest.mark.slow  # starts MCP servers
def test_a_name_two_servers_share_is_namespaced_by_server(http_demo):
    configs = [replace(stdio_server(DEMO), name="alpha"), replace(http_server(http_demo), name="beta")]
    names = {t.name: t for t in mcp_tools(configs, taken=["word_count"])}
    assert {"alpha__add", "beta__add", "alpha__word_count", "beta__word_count"} <= set(names)
    assert "add" not in names
    assert call(names["beta__add"], {"a": 1, "b": 1}).content == "2"
    assert names["alpha__add"].spec().source == "mcp:alpha"


@pytest.mark.slow  # starts MCP servers
def test_the_agent_loop_runs_an_mcp_tool_end_to_end(demo_tools, tmp_path):
    from agentcore.loop import Agent
    from agentcore.providers.scripted import ScriptedProvider
    from agentcore.run import Run
    from agentcore.transcript import load, save

    turns = [
        AssistantMessage(tool_calls=(ToolCall(id="c1", name="add", arguments={"a": 20, "b": 22}),)),
        AssistantMessage(content="The sum is 42."),
    ]
    agent = Agent(ScriptedProvider(replay=turns), [demo_tools["add"]])
    run = agent.run(Run.start("What is 20 + 22?"))
    assert run.stop_reason == "answer"
    result = next(m for m in run.messages if m.role == "tool")
    assert (result.content, result.is_error) == ("42", False)
    save(run, tmp_path / "run.json")
    assert load(tmp_path / "run.json").config.tools[0].source == "mcp:agentcore-demo"


def test_the_config_file_takes_the_common_mcp_servers_shape(tmp_path, monkeypatch):
    monkeypatch.setenv("DEMO_MCP_TOKEN", "tok-0123456789abcdef")
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "demo": {"command": "python", "args": ["-m", "agentcore.mcp.demo"], "timeout": 5},
                    "remote": {
                        "url": "http://127.0.0.1:1/mcp",
                        "headers": {"Authorization": "Bearer ${DEMO_MCP_TOKEN}"},
                    },
                    "off": {"command": "nothing", "disabled": True},
                }
            }
        )
    )
    demo, remote = load_config(path)
    assert (demo.name, demo.command, demo.args, demo.timeout_s) == ("demo", "python", ("-m", "agentcore.mcp.demo"), 5)
    assert remote.url == "http://127.0.0.1:1/mcp"
    assert dict(remote.headers)["Authorization"] == "Bearer tok-0123456789abcdef"
    assert "tok-0123456789abcdef" not in scrub_text("sent Bearer tok-0123456789abcdef")  # a header is a secret
    with pytest.raises(UsageError, match="SSE transport"):
        parse_config({"mcpServers": {"old": {"type": "sse", "url": "http://x/sse"}}})
    with pytest.raises(UsageError, match="mcpServers"):
        parse_config({"servers": {}})
    with pytest.raises(UsageError, match="NOT_SET_ANYWHERE"):
        parse_config({"mcpServers": {"a": {"url": "http://x/mcp", "headers": {"X": "${NOT_SET_ANYWHERE}"}}}})


def test_a_server_that_cannot_start_is_a_clear_error_not_a_hang():
    started = time.monotonic()
    with pytest.raises(MCPServerError, match="could not start"):
        connect(ServerConfig(command="/nonexistent/mcp-server"))
    with pytest.raises(MCPServerError, match="could not start"):
        connect(http_server(f"http://127.0.0.1:{free_port()}/mcp"))
    assert time.monotonic() - started < 10


@pytest.mark.slow  # starts MCP servers
def test_the_tools_command_lists_a_servers_tools_with_their_schemas(capsys):
    from agentcore.cli.main import main

    assert main(["tools", "--mcp-stdio", DEMO]) == 0
    out = capsys.readouterr().out
    assert "add" in out and "mcp:agentcore-demo" in out and '"required"' in out


@pytest.mark.slow  # starts MCP servers
def test_the_app_offers_the_tools_of_the_configured_servers(open_app, monkeypatch, tmp_path):
    from ui import tool_registry

    path = tmp_path / "mcp.json"
    command = {"command": sys.executable, "args": ["-m", "agentcore.mcp.demo"]}
    path.write_text(json.dumps({"mcpServers": {"demo": command, "broken": {"command": "/nonexistent/server"}}}))
    monkeypatch.setenv(tool_registry.CONFIG_ENV, str(path))
    tool_registry.restart_servers()
    try:
        at = open_app()
        picker = next(w for w in at.multiselect if w.key == "cfg_tools")
        assert {"calculator", "add", "divide"} <= set(picker.options)
        shown = " ".join(m.value for m in at.markdown) + " ".join(w.value for w in at.warning)
        assert "demo" in shown and "broken" in shown and "could not start" in shown
        assert [t.name for t in tool_registry.resolve_tools(["add", "calculator", "gone"])] == ["add", "calculator"]
        picker.set_value(["add"]).run()
        at.text_input(key="prompt").set_value("add 2 and 3").run()
        at.button(key="start").click().run()
        session = at.session_state["session"]
        assert [t.name for t in session.run.config.tools] == ["add"]  # the run offers the server's tool
        from ui import actions

        agent = actions._agent(session, session.run, [])
        assert list(agent.tools) == ["add"]  # and the agent that steps it can run that tool
        assert agent.tools["add"].execute(ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3})).content == "5"
    finally:
        tool_registry.restart_servers()


def _added(tool, secret: str):
    """A run through the Agent loop in which the model asks `tool` (the demo's word_count) about a secret."""
    from agentcore.loop import Agent
    from agentcore.providers.scripted import ScriptedProvider
    from agentcore.run import Run

    turns = [
        AssistantMessage(tool_calls=(ToolCall(id="wc1", name=tool.name, arguments={"text": f"key {secret}"}),)),
        AssistantMessage(content="Two words."),
    ]
    return Agent(ScriptedProvider(replay=turns), [tool]).run(Run.start("Count the words."))


@pytest.fixture(scope="module")
def secret_run():
    """A run whose MCP server was started with a secret in its environment, which the model then repeats."""
    secret = "sk-mcp-wire-0123456789abcdef"
    config = replace(stdio_server(DEMO), name="keyed", env=(("DEMO_API_KEY", secret),))
    tool = next(t for t in mcp_tools([config]) if t.name == "word_count")
    return _added(tool, secret), secret


@pytest.mark.slow  # starts MCP servers
def test_a_tool_run_records_its_tools_call_request_and_response_secrets_removed(secret_run, tmp_path):
    from agentcore.transcript import load, save

    run, secret = secret_run
    (tool_run,) = run.steps[0].tool_runs
    assert tool_run.wire is not None and "agentcore.mcp.demo" in tool_run.wire.url
    assert tool_run.wire.request["method"] == "tools/call"
    assert tool_run.wire.request["params"]["name"] == "word_count"
    assert tool_run.wire.response["result"]["content"] == [{"type": "text", "text": "2 words"}]
    assert tool_run.wire.response["id"] == tool_run.wire.request["id"]
    save(run, tmp_path / "run.json")
    loaded = load(tmp_path / "run.json").steps[0].tool_runs[0].wire
    assert loaded == tool_run.wire
    assert secret not in loaded.model_dump_json() and "key " in loaded.request["params"]["arguments"]["text"]


def test_a_tool_run_without_a_wire_loads_as_before():
    from agentcore.steps import ToolRun

    old = ToolRun.model_validate({"tool_call_id": "c1", "name": "add", "duration_ms": 1.0, "is_error": False})
    assert old.wire is None


@pytest.mark.slow  # starts MCP servers
def test_the_step_detail_shows_each_tool_runs_jsonrpc(secret_run, open_app):
    from ui.state import Session

    run, secret = secret_run
    session = Session()
    session.add_run(run)
    session.inspect_step = 1  # the step whose tools ran; the picker otherwise follows the newest
    at = open_app(session=session, view="Steps")
    shown = " ".join(m.value for m in at.markdown)
    assert "tools/call" in shown and "word_count" in shown
    bodies = [b for b in [*(j.value for j in at.json), *(c.value for c in at.code)] if "jsonrpc" in b]
    assert len(bodies) == 4  # the request and the response, each as a tree and as text
    assert any('"tools/call"' in b for b in bodies) and any("2 words" in b for b in bodies)
    assert not any(secret in b for b in bodies)


@pytest.mark.slow  # starts MCP servers
def test_agentcore_test_runs_a_pinned_test_on_the_servers_tools(tmp_path, capsys):
    from agentcore.cli.main import main
    from agentcore.loop import Agent
    from agentcore.providers.scripted import ScriptedProvider
    from agentcore.run import Run
    from agentcore.testing import pinned

    turns = [
        AssistantMessage(tool_calls=(ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3}),)),
        AssistantMessage(content="5"),
    ]
    add = next(t for t in mcp_tools([stdio_server(DEMO)]) if t.name == "add")
    run = Agent(ScriptedProvider(replay=turns), [add]).run(Run.start("2 + 3?"))
    path = tmp_path / "adds.json"
    path.write_text(pinned.dumps(pinned.propose(run, "adds")))
    assert main(["test", str(path), "--no-db", "--mcp-stdio", DEMO]) == 0
    assert "1 of 1 passed" in capsys.readouterr().out

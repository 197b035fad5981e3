"""agentcore against the reference MCP servers from the npm registry, which no one here wrote.

`@modelcontextprotocol/server-everything` over stdio and Streamable HTTP, `-filesystem` and `-memory`
over stdio, at the versions pinned in tests/npm-mcp/package.json (.ci/run installs them; a test
installs them when they are missing and npm is there). Each is listed and called through
`agentcore tools`, `agentcore run` and the library, and what a server did is checked where the
server keeps it: a file it read, the graph it wrote to disk.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the `mcp` extra is not installed: pip install -e '.[mcp]'")

from support.servers import ROOT, free_port

from agentcore.cli.main import main
from agentcore.mcp.client import close_all, mcp_tools
from agentcore.mcp.config import http_server, stdio_server
from agentcore.messages import AssistantMessage, ToolCall

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("stop_servers")]  # each test starts Node servers

NPM_DIR = ROOT / "tests" / "npm-mcp"
BIN = NPM_DIR / "node_modules" / ".bin"
LOOPBACK = NPM_DIR / "loopback.cjs"


@pytest.fixture(scope="module")
def npm_bin() -> Path:
    """The servers' executables, installed from the lock file first if they are missing."""
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node and npm are not installed: the reference MCP servers come from the npm registry")
    if not (BIN / "mcp-server-everything").exists():
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=NPM_DIR,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"npm ci in {NPM_DIR} failed: {done.stderr[-2000:]}"
    return BIN


def server(npm_bin: Path, name: str, *args: str) -> str:
    return shlex.join([str(npm_bin / f"mcp-server-{name}"), *args])


def call(tool, arguments):
    return tool.execute(ToolCall(id="c1", name=tool.name, arguments=arguments))


def listed_lines(out: str) -> list[str]:
    """The name-and-description lines of `agentcore tools` (each is followed by its schema, indented)."""
    return [line for line in out.splitlines() if line[:1].isalnum()]


def test_everything_over_stdio_is_listed_aligned_and_called(npm_bin, capsys):
    everything = server(npm_bin, "everything")
    assert main(["tools", "--mcp-stdio", everything]) == 0
    lines = listed_lines(capsys.readouterr().out)
    names = [line.split()[0] for line in lines]
    assert {"echo", "get-sum", "get-annotated-message"} <= set(names)
    columns = {re.match(r"\S+\s+", line).end() for line in lines}
    assert len(columns) == 1, "every description starts in one column"
    assert any(re.match(r"get-annotated-message {2,}Demonstrates", line) for line in lines)
    tools = {t.name: t for t in mcp_tools([stdio_server(everything)])}
    assert call(tools["echo"], {"message": "hello"}).content == "Echo: hello"
    assert call(tools["get-sum"], {"a": 2, "b": 40}).content == "The sum of 2 and 40 is 42."
    # a handshake-era server: the probe for the newer revision goes unanswered as modern, and the handshake follows
    assert tools["echo"].connection.speaks == "MCP 2025-11-25 (initialize handshake)"
    refused = call(tools["get-sum"], {"a": "two"})
    assert refused.error == "invalid_arguments" and "'b' is a required property" in refused.content


@pytest.fixture(scope="module")
def everything_http(npm_bin, tmp_path_factory):
    """server-everything in its Streamable HTTP mode, on 127.0.0.1 only, once it accepts connections."""
    port = free_port()
    log = tmp_path_factory.mktemp("everything") / "server.log"
    env = {**os.environ, "PORT": str(port), "NODE_OPTIONS": f'--require "{LOOPBACK}"'}
    with log.open("wb") as handle:
        proc = subprocess.Popen(
            [str(npm_bin / "mcp-server-everything"), "streamableHttp"],
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"server-everything exited: {log.read_text(errors='replace')[-2000:]}"
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        else:
            pytest.fail("server-everything did not listen in time")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        close_all()
        proc.kill()
        proc.wait(timeout=10)


def test_everything_over_streamable_http_is_listed_and_called(everything_http, capsys):
    assert main(["tools", "--mcp-url", everything_http]) == 0
    assert {"echo", "get-sum"} <= {line.split()[0] for line in listed_lines(capsys.readouterr().out)}
    tools = {t.name: t for t in mcp_tools([http_server(everything_http)])}
    assert call(tools["echo"], {"message": "over http"}).content == "Echo: over http"
    exchange = tools["echo"].connection.exchange("c1")
    assert [w["message"].get("method") for w in exchange] == ["tools/call", None]
    assert tools["echo"].connection.speaks == "MCP 2025-11-25 (initialize handshake)"


def test_a_run_chooses_and_calls_a_reference_servers_tool_by_the_name_it_was_listed_under(npm_bin, tmp_path):
    from agentcore.loop import Agent
    from agentcore.providers.scripted import ScriptedProvider
    from agentcore.run import Run
    from agentcore.transcript import load, save

    turns = [
        AssistantMessage(tool_calls=(ToolCall(id="c1", name="echo", arguments={"message": "from the loop"}),)),
        AssistantMessage(content="It echoed."),
    ]
    save(Agent(ScriptedProvider(replay=turns), []).run(Run.start("Echo something.")), tmp_path / "played.json")
    out = tmp_path / "run.json"
    args = ["run", "--replay", str(tmp_path / "played.json"), "--no-db", "--out", str(out), "--tools", "echo"]
    assert main([*args, "--mcp-stdio", server(npm_bin, "everything")]) == 0
    run = load(out)
    assert [(t.name, t.source) for t in run.config.tools] == [("echo", "mcp:mcp-servers_everything")]
    result = next(m for m in run.messages if m.role == "tool")
    assert (result.content, result.is_error) == ("Echo: from the loop", False)
    assert run.steps[0].tool_runs[0].wire.request["method"] == "tools/call"


def test_filesystem_reads_inside_its_root_refuses_outside_and_its_clashing_name_is_one_name(npm_bin, tmp_path, capsys):
    root = tmp_path / "root"
    root.mkdir()
    (root / "note.txt").write_text("written by the test\n", encoding="utf-8")
    filesystem = server(npm_bin, "filesystem", str(root))
    tools = {t.name: t for t in mcp_tools([stdio_server(filesystem)])}
    assert call(tools["read_text_file"], {"path": str(root / "note.txt")}).content == "written by the test\n"
    outside = call(tools["read_text_file"], {"path": str(tmp_path / "elsewhere.txt")})
    assert outside.is_error and outside.error == "tool_error" and "outside allowed directories" in outside.content
    # its read_file meets the built-in read_file: one server-qualified name, to list and to choose
    assert main(["tools", "--mcp-stdio", filesystem]) == 0
    names = [line.split()[0] for line in listed_lines(capsys.readouterr().out)]
    qualified = "secure-filesystem-server__read_file"
    assert qualified in names and "read_file" not in names
    replayed = tmp_path / "played.json"
    from agentcore.loop import Agent
    from agentcore.providers.scripted import ScriptedProvider
    from agentcore.run import Run
    from agentcore.transcript import load, save

    turns = [
        AssistantMessage(tool_calls=(ToolCall(id="c1", name=qualified, arguments={"path": str(root / "note.txt")}),)),
        AssistantMessage(content="Read."),
    ]
    save(Agent(ScriptedProvider(replay=turns), []).run(Run.start("Read the note.")), replayed)
    out = tmp_path / "run.json"
    args = ["run", "--replay", str(replayed), "--no-db", "--out", str(out), "--tools", f"{qualified},read_file"]
    assert main([*args, "--mcp-stdio", filesystem]) == 0
    run = load(out)
    assert [t.name for t in run.config.tools] == [qualified, "read_file"]
    assert next(m for m in run.messages if m.role == "tool").content == "written by the test\n"


def test_memory_keeps_what_a_tool_call_wrote_in_its_own_file(npm_bin, tmp_path):
    graph = tmp_path / "memory.jsonl"
    config = tmp_path / "mcp.json"
    memory = {"command": str(npm_bin / "mcp-server-memory"), "env": {"MEMORY_FILE_PATH": str(graph)}}
    config.write_text(json.dumps({"mcpServers": {"memory": memory}}), encoding="utf-8")
    from agentcore.mcp.config import load_config

    tools = {t.name: t for t in mcp_tools(load_config(config))}
    entity = {"name": "agentcore", "entityType": "project", "observations": ["steps the ReAct loop"]}
    created = call(tools["create_entities"], {"entities": [entity]})
    assert not created.is_error, created.content
    stored = [json.loads(line) for line in graph.read_text(encoding="utf-8").splitlines()]
    assert [(s["name"], s["observations"]) for s in stored] == [("agentcore", ["steps the ReAct loop"])]
    found = call(tools["search_nodes"], {"query": "ReAct"})
    assert '"agentcore"' in found.content and tools["search_nodes"].spec().source == "mcp:memory"

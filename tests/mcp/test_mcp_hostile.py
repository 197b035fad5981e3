"""MCP servers that attack the client: stray stdout, floods, gzip bombs, huge results, clashing names, secrets in URLs.

Each server is tests/support/mcp_servers/hostile_mcp.py (raw JSON-RPC, over stdio or streamable HTTP on 127.0.0.1),
started by the test that needs it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import socket
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the `mcp` extra is not installed: pip install -e '.[mcp]'")

from support.servers import ROOT, free_port

from agentcore.mcp.client import mcp_tools
from agentcore.mcp.config import ServerConfig, http_server, parse_config, stdio_server
from agentcore.mcp.limits import WIRE_MESSAGE_CHARS, kept
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage
from agentcore.run import Run
from agentcore.secrets import scrub_text
from agentcore.transcript import save

HOSTILE = (
    f"{shlex.quote(sys.executable)} {shlex.quote(str(ROOT / 'tests' / 'support' / 'mcp_servers' / 'hostile_mcp.py'))}"
)
MiB = 2**20

pytestmark = pytest.mark.usefixtures("stop_servers")  # each test's servers end with it


def hostile(*flags: str, name: str | None = None) -> ServerConfig:
    """The hostile server over stdio, with these flags."""
    return stdio_server(" ".join([HOSTILE, *flags]), name=name)


def start_http(tmp_path: Path, *flags: str) -> tuple[subprocess.Popen, int]:
    """The hostile server over streamable HTTP on 127.0.0.1, once it accepts connections."""
    port = free_port()
    log = (tmp_path / f"hostile-{port}.log").open("wb")
    cmd = [
        sys.executable,
        str(ROOT / "tests" / "support" / "mcp_servers" / "hostile_mcp.py"),
        "--http",
        str(port),
        *flags,
    ]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, port
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the hostile server did not listen in time")


def replay_file(path: Path, tool: str, arguments: dict) -> Path:
    """A transcript whose one assistant turn calls `tool`, for `agentcore run --replay`."""
    run = Run.start("go")
    run.messages.append(AssistantMessage(tool_calls=(ToolCall(id="c1", name=tool, arguments=arguments),)))
    run.messages.append(ToolMessage(tool_call_id="c1", name=tool, content="(replayed)"))
    run.messages.append(AssistantMessage(content="done"))
    save(run, path)
    return path


def agentcore(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentcore", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )


def call(tool, arguments, call_id="c1"):
    return tool.execute(ToolCall(id=call_id, name=tool.name, arguments=arguments))


# -- what the SDK logs --------------------------------------------------------------


@pytest.mark.slow  # starts MCP servers
def test_a_server_that_writes_non_json_on_stdout_costs_no_traceback_on_stderr(tmp_path):
    replay = replay_file(tmp_path / "echo.json", "echo", {"text": "still answered"})
    done = agentcore("run", "--replay", str(replay), "--no-db", "--mcp-stdio", f"{HOSTILE} --noise")
    assert done.returncode == 0, done.stderr
    assert "✓ echo" in done.stdout and "still answered" in done.stdout
    assert "Traceback" not in done.stderr
    # one line for all of the stray lines (three kinds, before each of its three answers), naming the server
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentcore: MCP server ") and "JSONRPC" in lines[0]


# -- what a server can make the client hold -------------------------------------------


@pytest.mark.slow  # starts MCP servers
def test_a_server_that_floods_its_stderr_and_dies_costs_only_the_tail_of_it():
    (flood,) = [t for t in mcp_tools([hostile()]) if t.name == "flood"]
    tracemalloc.start()
    try:
        outcome = call(flood, {"mb": 64})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert outcome.is_error and outcome.error == "server_error"
    assert "the last words of the flood" in outcome.content  # the tail is what the message shows
    assert peak < 8 * MiB, f"{peak / MiB:.1f} MiB held to read the end of 64 MiB of stderr"


@pytest.mark.slow  # starts MCP servers
def test_a_gzip_bomb_in_an_http_reply_is_refused_past_the_cap_not_inflated_whole(tmp_path):
    from agentcore.mcp.bounded_http import MAX_RESPONSE_BYTES
    from agentcore.mcp.client import MCPServerError

    proc, port = start_http(tmp_path, "--bomb-mb", "128")
    try:
        tracemalloc.start()
        try:
            with pytest.raises(MCPServerError, match="over 32 MiB once decompressed"):
                mcp_tools(parse_config({"mcpServers": {"bomb": {"url": f"http://127.0.0.1:{port}/mcp"}}}))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    finally:
        proc.kill()
        proc.wait(timeout=5)
    assert peak < MAX_RESPONSE_BYTES + 16 * MiB, f"{peak / MiB:.0f} MiB held for a 128 MiB bomb"


@pytest.mark.slow  # starts MCP servers
def test_an_http_reply_in_gzip_under_the_cap_is_read_whole(tmp_path):
    proc, port = start_http(tmp_path, "--bomb-mb", "2")
    try:
        (tool,) = mcp_tools(parse_config({"mcpServers": {"zipped": {"url": f"http://127.0.0.1:{port}/mcp"}}}))
    finally:
        proc.kill()
        proc.wait(timeout=5)
    assert tool.name == "t" and tool.description == "z" * 2000  # inflated, then cut as every description is


@pytest.mark.slow  # starts MCP servers
def test_a_huge_tool_result_is_kept_in_the_wire_view_cut_as_the_model_sees_it(tmp_path):
    (big,) = [t for t in mcp_tools([hostile()]) if t.name == "big"]
    outcome = call(big, {"size": 10 * MiB}, "huge")
    assert len(outcome.content) < 9000 and "[truncated: showing 8000 of" in outcome.content
    wire = big.exchange_for("huge")
    text = wire.response["result"]["content"][0]["text"]
    assert text.startswith("bbbb") and text.endswith(f"[truncated: showing 8000 of {10 * MiB} characters]")
    assert wire.response["id"] == wire.request["id"]
    assert all(len(json.dumps(w)) < 2 * WIRE_MESSAGE_CHARS for w in big.connection.wire)


def test_a_message_too_long_even_with_its_strings_cut_is_kept_as_cut_text():
    small = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "5"}]}}
    assert kept(small) is small
    many = {"jsonrpc": "2.0", "id": 2, "result": {"items": ["x"] * 100_000}}
    cut = kept(many)
    assert isinstance(cut, str) and len(cut) < WIRE_MESSAGE_CHARS + 100
    assert cut.startswith('{"jsonrpc": "2.0", "id": 2') and cut.endswith("characters in all]")


# -- names ---------------------------------------------------------------------------


@pytest.mark.slow  # starts MCP servers
def test_tool_names_that_clash_once_cleaned_or_cut_are_made_unique_the_same_way_each_time():
    tools = mcp_tools([hostile("--names")], taken=["echo"])
    by_remote: dict[str, list] = {}
    for t in tools:
        by_remote.setdefault(t.remote_name, []).append(t)
    names = [t.name for t in tools]
    assert len(names) == len(set(names)) and all(len(n) <= 64 for n in names)

    def suffix(remote: str) -> str:
        return hashlib.sha256(f"hostile/{remote}".encode()).hexdigest()[:6]

    assert by_remote["echo"][0].name == "hostile__echo"  # a name a toolbox tool has taken, as before
    assert by_remote["a<b"][0].name == "hostile__a_b"
    assert by_remote["a>b"][0].name == f"hostile__a_b_{suffix('a>b')}"
    long1, long2 = by_remote["n" * 64 + "1"][0], by_remote["n" * 64 + "2"][0]
    assert long1.name == ("hostile__" + "n" * 64)[:64]
    assert long2.name == f"{long1.name[:57]}_{suffix('n' * 64 + '2')}"
    # a call goes to the tool it was made for
    assert call(by_remote["a>b"][0], {}).content == "Error: no tool a>b"


@pytest.mark.slow  # starts MCP servers
def test_a_tool_listed_twice_under_one_name_is_offered_once():
    dups = [t for t in mcp_tools([hostile("--names")]) if t.remote_name == "dup"]
    assert [(t.name, t.description) for t in dups] == [("dup", "The first dup.")]


# -- what the app draws ----------------------------------------------------------------


@pytest.mark.slow  # starts MCP servers
def test_the_sidebar_draws_a_servers_tool_descriptions_as_text_that_fetches_and_reorders_nothing(
    open_app, monkeypatch, tmp_path
):
    from ui import tool_registry

    path = tmp_path / "mcp.json"
    command = [sys.executable, str(ROOT / "tests" / "support" / "mcp_servers" / "hostile_mcp.py"), "--names"]
    path.write_text(json.dumps({"mcpServers": {"hostile": {"command": command[0], "args": command[1:]}}}))
    monkeypatch.setenv(tool_registry.CONFIG_ENV, str(path))
    tool_registry.restart_servers()
    try:
        at = open_app()
        picker = next(w for w in at.multiselect if w.key == "cfg_tools")
        titled = ("hostile__" + "n" * 64)[:64]
        a_b = [n for n in picker.options if n.startswith("hostile__a_b")]
        picker.set_value([*a_b, titled]).run()
        assert not at.exception, at.exception
        texts = [t.value for t in at.text]
        assert "Less. ![x](http://127.0.0.1:9/desc.png?d=stolen)" in texts  # as written, as text
        assert "Titled ![x](http://127.0.0.1:9/desc.png?d=stolen)" in texts  # a tool's title when it has no description
        assert "More safe\\u202etxt.exe\\u202c" in texts  # the override shown, not obeyed
        drawn = [m.value for m in at.markdown] + [c.value for c in at.caption] + texts
        assert not any("](http" in d for d in drawn if d not in texts)  # no Markdown image or link anywhere
        assert not any("\u202e" in d for d in drawn)
    finally:
        tool_registry.restart_servers()


# -- secrets in a server's URL ---------------------------------------------------------


@pytest.mark.slow  # starts MCP servers
def test_credentials_in_an_mcp_url_are_written_nowhere(tmp_path):
    userinfo, query_key, env_token = "userpass-0123456789", "querykey-0123456789", "envtoken-0123456789abcdef"
    proc, port = start_http(tmp_path)
    try:
        # a variable in the path: only its registration as a secret keeps it out, the label shows paths
        url = f"http://agent:{userinfo}@127.0.0.1:{port}/mcp/${{MCP_URL_TOKEN}}?api_key={query_key}"
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"remote": {"url": url}}}))
        replay = replay_file(tmp_path / "echo.json", "echo", {"text": "hello"})
        out, db, page = tmp_path / "run.json", tmp_path / "runs.db", tmp_path / "replay.html"
        env = {**os.environ, "MCP_URL_TOKEN": env_token}
        done = agentcore(
            "run", "--replay", str(replay), "--out", str(out), "--db", str(db), "--mcp-config", str(config), env=env
        )
        assert done.returncode == 0, done.stderr
        run_id = json.loads(out.read_text())["id"]
        exported = agentcore("runs", "export", run_id, "--db", str(db), "--format", "html", "--out", str(page))
        assert exported.returncode == 0, exported.stderr
    finally:
        proc.kill()
        proc.wait(timeout=5)
    wire = json.loads(out.read_text())["steps"][0]["tool_runs"][0]["wire"]
    assert wire["url"] == f"http://[redacted]@127.0.0.1:{port}/mcp/[redacted]?api_key=[redacted]"
    assert wire["response"]["result"]["content"] == [{"type": "text", "text": "hello"}]
    written = {
        "transcript": out.read_bytes(),
        "database": b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*")),
        "replay page": page.read_bytes(),
        "stdout and stderr": (done.stdout + done.stderr + exported.stdout + exported.stderr).encode(),
    }
    assert len(written["database"]) > 0 and b"hello" in written["replay page"]
    for secret in (userinfo, query_key, env_token):
        for where, data in written.items():
            assert secret.encode() not in data, f"{secret} in the {where}"


def test_an_mcp_urls_credentials_are_registered_as_secrets_and_its_label_shows_none():
    http_server("http://agent:p%40ss-0123456789@127.0.0.1:1/mcp?api_key=querykey%2B0123456789&baretoken-0123456789")
    said = scrub_text("user agent, p@ss-0123456789 and p%40ss-0123456789, querykey+0123456789, baretoken-0123456789")
    assert said == "user agent, [redacted] and [redacted], [redacted], [redacted]"
    # a credential too short to be registered is still not shown where the server is named
    short = http_server("http://u:pw@127.0.0.1:1/mcp?k=v&flag#frag")
    assert short.label == "http://[redacted]@127.0.0.1:1/mcp?k=[redacted]&[redacted]#[redacted]"

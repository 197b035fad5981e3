"""How agentcore reads an MCP server's tools and introduces itself, against SDK servers written for these tests.

Every page of `tools/list` (to a cap, said in a note), a listed tool MCP's types refuse left out alone,
a server with no `tools` capability (the SDK's own `mcp.server` among them) as 0 tools and a note, a
server that dies at start said with the end of its stderr, `clientInfo` as the server reads it, and
`--tools` choosing built-in and MCP tools alike.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import replace

import pytest

pytest.importorskip("mcp", reason="the `mcp` extra is not installed: pip install -e '.[mcp]'")

from support.servers import ROOT

import agentcore
from agentcore.cli.main import main
from agentcore.mcp.client import MCPServerError, connect, mcp_tools
from agentcore.mcp.config import stdio_server
from agentcore.mcp.listing import MAX_PAGES, MAX_TOOLS
from agentcore.messages import AssistantMessage, ToolCall

pytestmark = [
    pytest.mark.slow,
    pytest.mark.usefixtures("stop_servers"),
]  # each test starts MCP servers, Python processes of their own
PAGED = f"{shlex.quote(sys.executable)} {shlex.quote(str(ROOT / 'tests' / 'support' / 'mcp_servers' / 'paged_mcp_server.py'))}"
# the SDK's own `python -m mcp.server` (a Server with no handlers), on asyncio: its __main__ asks for trio
SDK_SERVER = f"{shlex.quote(sys.executable)} -c 'import anyio; from mcp.server.__main__ import main; anyio.run(main)'"
SECRET = "sk-paged-0123456789abcdef0123"  # what paged_mcp_server.py --die writes on its stderr


def paged(options: str = ""):
    return stdio_server(f"{PAGED} {options}")


def call(tool, arguments=None):
    return tool.execute(ToolCall(id="c1", name=tool.name, arguments=arguments or {}))


def sent(connection, method: str) -> list[dict]:
    return [w["message"] for w in connection.wire if w["direction"] == "→" and w["message"].get("method") == method]


def test_every_page_of_tools_list_is_read_and_a_tool_of_the_last_page_runs(capfd):
    tools = {t.name: t for t in mcp_tools([paged("--tools 9 --page-size 2")])}
    assert list(tools) == ["whoami", *(f"t{i:03d}" for i in range(9))]
    connection = tools["t008"].connection
    cursors = [m.get("params", {}).get("cursor") for m in sent(connection, "tools/list")]
    assert cursors == [None, "2", "4", "6", "8"] and connection.notes == []
    assert call(tools["t008"]).content == "ran t008"
    assert "not listed" not in capfd.readouterr().err  # the SDK knows the tool: its page was read through it


def test_a_listing_past_the_cap_is_cut_with_a_note():
    many = connect(paged("--tools 300 --page-size 50"))
    assert len(many.tools) == MAX_TOOLS and many.tools[-1].name == f"t{MAX_TOOLS - 2:03d}"
    assert many.notes == [f"it lists more than {MAX_TOOLS} tools: the first {MAX_TOOLS} are offered"]
    assert len(sent(many, "tools/list")) == 3  # reading stops once the cap is passed
    endless = connect(paged("--endless --tools 1 --page-size 1"))
    assert [t.name for t in endless.tools] == ["whoami", "t000"]
    assert len(sent(endless, "tools/list")) == MAX_PAGES
    assert endless.notes == [f"tools/list still had more pages after {MAX_PAGES}: the 2 tools read are offered"]


def test_a_tool_mcp_refuses_is_left_out_alone_with_a_note_and_the_wire_shows_it_as_sent():
    tools = {t.name: t for t in mcp_tools([paged("--unusable --tools 3 --page-size 10")])}
    assert {"whoami", "t000", "t001", "t002"} <= set(tools) and "not_an_object" not in tools
    connection = tools["t000"].connection
    (note,) = connection.notes
    assert note.startswith("tool 'not_an_object' left out: its inputSchema is not as MCP defines it")
    assert call(tools["t000"]).content == "ran t000"  # the SDK's own check of the call reads the listing again
    (answer,) = [w["message"] for w in connection.wire if "tools" in w["message"].get("result", {})][:1]
    listed = {t["name"]: t for t in answer["result"]["tools"]}
    assert listed["not_an_object"]["inputSchema"] == "oops"


def test_a_server_without_the_tools_capability_offers_no_tools_and_a_note(capsys):
    for command in (SDK_SERVER, f"{PAGED} --no-tools"):
        connection = connect(stdio_server(command))
        assert connection.tools == [] and connection.notes == ["it declares no tools capability: 0 tools"]
        assert sent(connection, "tools/list") == []  # never asked: the spec's capability negotiation
    assert main(["tools", "--mcp-stdio", SDK_SERVER]) == 0
    out, err = capsys.readouterr()
    assert out == "" and err == "agentcore: note: MCP server mcp: it declares no tools capability: 0 tools\n"


def test_a_server_that_dies_at_start_is_said_with_the_end_of_its_stderr_secrets_removed(capsys):
    config = replace(paged("--die"), env=(("PAGED_API_KEY", SECRET),))  # a secret-named variable is registered
    with pytest.raises(MCPServerError) as caught:
        connect(config)
    said = str(caught.value)
    assert "could not start" in said and "Connection closed" in said
    assert "its stderr ends: loading the index | FATAL: the token [redacted] was refused by the backend" in said
    assert SECRET not in said
    assert main(["tools", "--mcp-stdio", f"{PAGED} --die"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "FATAL: the token [redacted] was refused" in line and SECRET not in line


def test_agentcore_introduces_itself_by_name_and_version():
    (whoami,) = [t for t in mcp_tools([paged()]) if t.name == "whoami"]
    assert json.loads(call(whoami).content) == {"name": "agentcore", "version": agentcore.__version__}


def test_tools_chooses_a_listed_mcp_tool_as_it_chooses_a_built_in_one(tmp_path, capsys):
    from agentcore.loop import Agent
    from agentcore.providers.scripted import ScriptedProvider
    from agentcore.run import Run
    from agentcore.transcript import load, save

    assert main(["tools", "--mcp-stdio", PAGED]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line[:1].isalnum()]
    assert "t001" in listed
    turns = [
        AssistantMessage(tool_calls=(ToolCall(id="c1", name="t001", arguments={}),)),
        AssistantMessage(content="Done."),
    ]
    save(Agent(ScriptedProvider(replay=turns), []).run(Run.start("Run t001.")), tmp_path / "played.json")
    out = tmp_path / "replayed.json"
    args = ["run", "--replay", str(tmp_path / "played.json"), "--no-db", "--out", str(out)]
    assert main([*args, "--tools", "t001,calculator", "--mcp-stdio", PAGED]) == 0
    run = load(out)
    assert [t.name for t in run.config.tools] == ["t001", "calculator"]
    result = next(m for m in run.messages if m.role == "tool")
    assert (result.content, result.is_error) == ("ran t001", False)
    assert main(["run", "--provider", "scripted", "--no-db", "--tools", "nope", "--mcp-stdio", PAGED]) == 2
    err = capsys.readouterr().err
    assert "unknown tool 'nope'" in err and "calculator" in err and "t001" in err

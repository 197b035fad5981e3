"""A proxied run is a run like any other: `agentcore scan` reads it and labels what it finds, and the MCP runs
server lists it and reads it, its steps and the scanner's label included, with the client's key nowhere."""

from __future__ import annotations

import json
import os
import sys

import anyio
import pytest
from support.proxy_rig import KEY
from support.stand_in import Reply

from agentcore.cli.main import main

openai = pytest.importorskip("openai", reason="the openai package is not installed (pip install '.[test]')")
pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[mcp]'")

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def calls(name: str) -> Reply:
    """A Chat Completions reply that calls `name`, a tool the request may not offer."""
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": name, "arguments": "{}"}}],
    }
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "stand-in",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35},
    }
    return Reply(json.dumps(body).encode())


def proxied_run(rig) -> str:
    """An agent offered get_weather calls get_time through the proxy, is told so, and answers: the run's id."""
    sdk = openai.OpenAI(api_key=KEY, base_url=f"{rig.url}/v1", max_retries=0)
    messages = [{"role": "user", "content": "What time is it in Lisbon?"}]
    first = sdk.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": "call_1", "content": "Error: no tool get_time"})
    sdk.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    [run] = rig.runs()
    assert run.origin.format == "proxy" and len(run.steps) == 2
    return run.id


def test_a_proxied_run_is_scanned_like_any_run(rig_of, capsys):
    rig = rig_of(calls("get_time"), Reply.chat("It is noon in Lisbon."))
    run_id = proxied_run(rig)
    assert main(["scan", "--db", str(rig.db)]) == 0
    out = capsys.readouterr().out
    assert f"run {run_id} step 1: unknown_tool: wrong tool" in out
    labels = rig.store.annotations(run_id)
    assert [(a.step, a.labels, a.author) for a in labels] == [(1, ["wrong tool"], "scanner:unknown_tool")]


@pytest.mark.slow  # the server runs in a process of its own
def test_the_mcp_runs_server_lists_and_reads_a_proxied_run(rig_of, tmp_path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    rig = rig_of(calls("get_time"), Reply.chat("It is noon in Lisbon."))
    run_id = proxied_run(rig)
    assert main(["scan", "--db", str(rig.db)]) == 0
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentcore", "mcp-server", "--db", str(rig.db)],
        env={**os.environ, "AGENTCORE_USER": rig.store.owner},
        cwd=str(tmp_path),
    )

    async def session_script():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.call_tool("list_runs", {"text": "Lisbon"})
            read_run = await session.call_tool("get_run", {"run_id": run_id, "step": 1})
            return listed, read_run

    listed, read_run = anyio.run(session_script)
    assert not listed.is_error and not read_run.is_error
    assert [r["run_id"] for r in listed.structured_content["runs"]] == [run_id]
    data = read_run.structured_content
    assert data["config"]["tools"] == ["get_weather"]
    assert data["step"]["tool_calls"] == ["get_time"] and data["step"]["tool_errors"] == 0
    assert [(m["role"], m.get("content")) for m in data["messages"]][-1] == ("tool", "Error: no tool get_time")
    assert [(a["step"], a["labels"]) for a in data["labels"]] == [(1, ["wrong tool"])]
    assert KEY not in json.dumps([listed.structured_content, data])

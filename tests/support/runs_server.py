"""The MCP runs server over streamable HTTP on 127.0.0.1, and a client of it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agentcore import toolbox
from agentcore.loop import Agent
from agentcore.providers import create_provider
from agentcore.providers.scripted import SCENARIOS
from agentcore.run import Run, RunConfig
from agentcore.store.runs import Store
from support.servers import free_port


def research_run(owner: str, db: Path, prompt: str | None = None) -> Run:
    scenario = SCENARIOS["research"]
    tools = toolbox.get_tools(list(scenario.tools))
    run = Run.start(prompt or scenario.prompt, RunConfig.made_for("scripted", "research", tools))
    Agent(create_provider("scripted", "research"), tools).run(run)
    Store(db, owner=owner).save_run(run)
    return run


def start_http(db: Path, cwd: Path, *extra: str, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "agentcore", "mcp-server", "--db", str(db), "--http", f"127.0.0.1:{port}", *extra],
        cwd=cwd,
        env={**os.environ, "AGENTCORE_USER": "ada", **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    import socket

    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return process, f"http://127.0.0.1:{port}/mcp"
        if process.poll() is not None:
            raise AssertionError(process.stderr.read().decode())
        time.sleep(0.2)
    process.kill()
    raise AssertionError("the server did not listen")


def on_http(url: str, script, headers: dict | None = None):
    import httpx2

    async def main():
        async with httpx2.AsyncClient(headers=headers or {}, timeout=60) as client:
            async with streamable_http_client(url, http_client=client) as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await script(session)

    return anyio.run(main)

"""`agentcore blame` against a stand-in server whose step 3 asks for the right city with a known chance: each
fork's printed interval holds that chance, and step 3 is blamed."""

from __future__ import annotations

import json
import re

import pytest
from support.chance_server import ChanceServer

from agentcore import Agent, Run, RunConfig
from agentcore.cli import main
from agentcore.providers import create_provider
from agentcore.store.runs import Store
from agentcore.toolbox import get_tools

CHANCE = 0.7
PROMPT = "What is the weather in Paris, Rome and Tokyo, one city at a time?"


def failing_run(server: ChanceServer) -> Run:
    """The server's run with no chance of the right city: its step 3 asks for Kyoto."""
    tools = get_tools("get_weather")
    run = Run.start(PROMPT, RunConfig.made_for("openai", "stand-in", tools, server.url))
    Agent(create_provider("openai", "stand-in", base_url=server.url, api_key="test-key"), tools).run(run)
    assert run.stop_reason == "answer" and "Kyoto" in run.final_answer()
    return run


@pytest.mark.long  # 200 model calls over HTTP: a few seconds on two cores
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_printed_rates_hold_the_known_chance_and_step_3_is_blamed(seed, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    db, out = str(tmp_path / "runs.db"), tmp_path / "blame.json"
    with ChanceServer(0.0, seed=seed) as server:
        run = failing_run(server)
        Store(db).save_run(run)
        server.chance, server.generation = CHANCE, "again"
        calls = server.calls
        assert main(["blame", run.id, "--expect", "Tokyo", "--trials", "20", "--db", db, "--json", str(out)]) == 0
        assert server.calls - calls == 20 * (4 + 3 + 2 + 1)  # as many model calls as were counted first
    printed = capsys.readouterr().out
    assert "200 model calls as the run went" in printed.splitlines()[0]
    rows = re.findall(r"step (\d): (\d+)/20 passed · rate (\S+) · 95% (\S+)–(\S+)", printed)
    assert [int(r[0]) for r in rows] == [1, 2, 3, 4]
    for step, passed, rate, low, high in rows[:3]:  # forks that make step 3 again: right with the known chance
        assert float(low) <= CHANCE <= float(high), (step, passed)
        assert float(low) <= float(rate) <= float(high)
    assert rows[3][1] == "0"  # forks that keep the run's Kyoto never pass
    assert "blamed: step 3" in printed
    data = json.loads(out.read_text())
    assert data["blamed_step"] == 3 and data["config"] == f"openai:stand-in@{server.url}"
    forks = Store(db).children(run.id)
    assert len(forks) == 80 and {f.parent_step for f in forks} == {1, 2, 3, 4}

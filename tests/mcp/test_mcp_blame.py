"""The runs server's `blame` tool over stdio: the same arguments as `agentcore blame`, a bounded answer, every fork
saved under the run, and hostile arguments as one-line tool errors."""

from __future__ import annotations

import os
import sys

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[mcp]'")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from support.runs import scripted_run

from agentcore.exports import export_test
from agentcore.store.runs import Store
from agentcore.testing import pinned


def on_stdio(db, cwd, script):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentcore", "mcp-server", "--db", str(db)],
        env={**os.environ, "AGENTCORE_USER": "ada"},
        cwd=str(cwd),
    )

    async def main():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await script(session)

    return anyio.run(main)


async def call(session, **arguments):
    """The blame tool's structured answer, or its error text."""
    result = await session.call_tool("blame", arguments)
    if result.is_error:
        return "error: " + " ".join(part.text for part in result.content if getattr(part, "text", None))
    return result.structured_content


@pytest.fixture
def stored(tmp_path):
    db = tmp_path / "runs.db"
    run = scripted_run("wrong_city")
    Store(db).save_run(run, owner="ada")
    return db, run


@pytest.mark.long  # a server process over stdio
def test_blame_names_step_3_and_saves_each_fork_under_the_run(stored, tmp_path):
    db, run = stored
    (tmp_path / "tour.json").write_text(export_test(pinned.propose(scripted_run("city_by_city"), "tour")))

    async def script(session):
        return (
            await call(session, run_id=run.id, expect="Tokyo", configuration="scripted:city_by_city", trials=7),
            await call(session, run_id=run.id, test="tour.json", configuration="scripted:city_by_city", bisect=True),
            await call(session, run_id=run.id, expect="Kyoto"),
        )

    every, halved, passing = on_stdio(db, tmp_path, script)
    assert every["blamed_step"] == 3 and every["fall"] == 1.0 and every["stopped"] is None
    assert [(r["step"], r["passed"], r["trials"]) for r in every["rates"]] == [
        (1, 7, 7),
        (2, 7, 7),
        (3, 7, 7),
        (4, 0, 7),
    ]
    low, high = every["rates"][3]["wilson_95"]
    assert low == 0.0 and 0.35 < high < 0.36
    assert "Kyoto" in every["reply"] and "Tokyo" in every["instead"][0]["reply"]
    assert all(len(r["run_ids"]) == 5 and r["more_run_ids"] == 2 for r in every["rates"])  # bounded
    assert halved["blamed_step"] == 3 and halved["forks"] == 3 and halved["grader"] == "the test tour.json"
    assert passing["run_passed"] is True and passing["blamed_step"] is None and passing["rates"] == []
    forks = Store(db).children(run.id)
    assert len(forks) == 4 * 7 + 3 * 5 and {f.parent_step for f in forks} == {1, 2, 3, 4}


@pytest.mark.long  # a server process over stdio
def test_hostile_arguments_are_one_line_tool_errors_and_nothing_is_made(stored, tmp_path):
    db, run = stored
    folder = tmp_path / "server"
    folder.mkdir()

    async def script(session):
        return [
            await call(session, run_id=run.id),
            await call(session, run_id=run.id, expect="Tokyo", test="t.json"),
            await call(session, run_id=run.id, test="../outside.json"),
            await call(session, run_id="no-such-run", expect="Tokyo"),
            await call(session, run_id=run.id, expect="Tokyo", trials=100),
            await call(session, run_id=run.id, expect="Tokyo", steps=[9]),
            await call(session, run_id=run.id, expect="Tokyo", steps=[0]),
            await call(session, run_id=run.id, expect="Tokyo", configuration="openai:gpt-4o@http://10.1.2.3:8080/v1"),
            await call(session, run_id=run.id, expect="Tokyo", configuration="local:/etc/passwd"),
        ]

    answers = on_stdio(db, folder, script)
    for answer in answers:
        assert isinstance(answer, str) and answer.startswith("error: "), answer
        assert "\n" not in answer and "Traceback" not in answer and len(answer) < 700, answer
    assert "give `expect`" in answers[0] and "give `expect`" in answers[1]
    assert "outside the server's folder" in answers[2] and "no run 'no-such-run'" in answers[3]
    assert "over the ceiling of 100" in answers[4] and "there is no step 9" in answers[5]
    assert "steps[0]" in answers[6] and "not an address this server calls" in answers[7]
    assert "names no file of the server's" in answers[8]
    assert Store(db).children(run.id) == []

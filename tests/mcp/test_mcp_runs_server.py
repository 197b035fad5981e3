"""`agentcore mcp-server`: the runs library and the loop over MCP, driven by the official SDK's client over stdio and
Streamable HTTP and by the MCP Inspector's CLI from npm; hostile arguments are one-line tool errors, outputs are
bounded, someone else's run is never changed, and over HTTP the user comes from the header the deployment names."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[mcp]'")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from support.runs_server import on_http, research_run, start_http

from agentcore import toolbox
from agentcore.annotations import LABELS
from agentcore.loop import Agent
from agentcore.messages import UserMessage
from agentcore.providers import create_provider
from agentcore.run import Run, RunConfig
from agentcore.store.runs import Store

INSPECTOR = Path(__file__).parents[1] / "npm-mcp" / "node_modules" / ".bin" / "mcp-inspector"
TOOLS = {
    "list_runs",
    "get_run",
    "fork_run",
    "step_run",
    "run_to_end",
    "compare_from",
    "annotate_step",
    "pin_test",
    "run_tests",
}


@pytest.fixture
def library(tmp_path):
    db = tmp_path / "runs.db"
    return db, research_run("ada", db)


def stdio_params(db: Path, cwd: Path, user: str = "ada") -> StdioServerParameters:
    env = {**os.environ, "AGENTCORE_USER": user}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "agentcore", "mcp-server", "--db", str(db)], env=env, cwd=str(cwd)
    )


async def call(session: ClientSession, tool: str, **arguments):
    """A tool's structured result, or its error text when the call failed (isError)."""
    result = await session.call_tool(tool, arguments)
    if result.is_error:
        return "error: " + " ".join(part.text for part in result.content if getattr(part, "text", None))
    return result.structured_content


def on_stdio(db: Path, cwd: Path, script, user: str = "ada"):
    async def main():
        async with stdio_client(stdio_params(db, cwd, user)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await script(session)

    return anyio.run(main)


async def fork_step_and_read(session: ClientSession, run_id: str) -> tuple[dict, dict, dict]:
    listed = await call(session, "list_runs", text="research")
    assert run_id in [r["run_id"] for r in listed["runs"]]
    fork = await call(session, "fork_run", run_id=run_id, step=2)
    stepped = await call(session, "step_run", run_id=fork["run_id"])
    read = await call(session, "get_run", run_id=fork["run_id"])
    return fork, stepped, read


def check_fork(db: Path, run: Run, fork: dict, stepped: dict, read: dict) -> None:
    assert fork["parent"] == {"run_id": run.id, "step": 2}
    assert stepped["new_messages"] >= 1 and len(stepped["steps"]) == 2  # the kept step and the new one
    assert read["parent"] == {"run_id": run.id, "step": 2}
    store = Store(db)
    assert [c.id for c in store.children(run.id)] == [fork["run_id"]]
    kept = store.read_run(fork["run_id"])
    assert (
        len(kept.steps) == 2
        and kept.messages[: run.steps[1].message_count] == run.messages[: run.steps[1].message_count]
    )


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_over_stdio_a_client_lists_forks_steps_and_reads_a_run_back_and_the_fork_is_stored(library, tmp_path):
    db, run = library

    async def script(session):
        tools = {t.name for t in (await session.list_tools()).tools}
        assert tools >= TOOLS
        return await fork_step_and_read(session, run.id)

    fork, stepped, read = on_stdio(db, tmp_path, script)
    check_fork(db, run, fork, stepped, read)
    assert Store(db).summary(fork["run_id"]).owner == "ada"  # owned by the server's user


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_over_streamable_http_the_same_session_works_and_the_server_listens_on_loopback(library, tmp_path):
    db, run = library
    process, url = start_http(db, tmp_path)
    try:
        fork, stepped, read = on_http(url, lambda s: fork_step_and_read(s, run.id))
        check_fork(db, run, fork, stepped, read)
        listening = subprocess.run(["ss", "-ltnp"], capture_output=True, text=True).stdout if shutil.which("ss") else ""
        port = url.split(":")[2].split("/")[0]
        mine = [line for line in listening.splitlines() if f":{port} " in line]
        assert all("127.0.0.1:" in line for line in mine)
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_over_http_with_a_user_header_each_call_is_that_users_and_one_without_it_is_refused(library, tmp_path):
    db, run = library
    process, url = start_http(db, tmp_path, "--user-header", "X-Forwarded-User")
    try:
        refused = on_http(url, lambda s: call(s, "fork_run", run_id=run.id, step=2))
        assert refused.startswith("error: ") and "not signed in" in refused and "X-Forwarded-User" in refused
        fork = on_http(url, lambda s: call(s, "fork_run", run_id=run.id, step=2), {"X-Forwarded-User": "grace"})
        assert Store(db).summary(fork["run_id"]).owner == "grace"
        bad = on_http(url, lambda s: call(s, "list_runs"), {"X-Forwarded-User": "<script>"})
        assert "not signed in" in bad
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_someone_elses_run_is_stepped_as_ones_own_fork_and_theirs_is_left_as_it_was(tmp_path):
    db = tmp_path / "runs.db"
    tools = toolbox.get_tools(["get_weather"])
    theirs = Run.start("What is the weather in Paris?", RunConfig.made_for("scripted", "weather", tools))
    Store(db, owner="ada").save_run(theirs)

    async def script(session):
        return await call(session, "step_run", run_id=theirs.id)

    stepped = on_stdio(db, tmp_path, script, user="bob")
    assert stepped["run_id"] != theirs.id and stepped["parent"]["run_id"] == theirs.id
    store = Store(db)
    assert store.read_run(theirs.id).steps == [] and store.summary(stepped["run_id"]).owner == "bob"


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_with_private_runs_a_student_cannot_see_anothers_run_and_a_teacher_can(tmp_path, monkeypatch):
    db = tmp_path / "runs.db"
    theirs = research_run("ada", db, prompt="Ada's private question about costs")
    monkeypatch.setenv("AGENTCORE_PRIVATE_RUNS", "1")
    monkeypatch.setenv("AGENTCORE_TEACHERS", "grace")

    async def script(session):
        return (
            await call(session, "list_runs"),
            await call(session, "get_run", run_id=theirs.id),
            await call(session, "fork_run", run_id=theirs.id, step=2),
            await call(session, "compare_from", run_id=theirs.id, step=2, configurations=["scripted", "scripted"]),
        )

    listed, read, fork, compared = on_stdio(db, tmp_path, script, user="bob")
    assert listed["runs"] == []
    for answer in (read, fork, compared):
        assert answer.endswith(f": no run '{theirs.id}' in the runs database"), answer  # as for a run never made
        assert "Ada" not in answer
    listed, read, *_ = on_stdio(db, tmp_path, script, user="grace")
    assert [r["run_id"] for r in listed["runs"]] == [theirs.id] and read["run_id"] == theirs.id


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_hostile_arguments_are_one_line_tool_errors_and_the_server_goes_on(library, tmp_path):
    db, run = library
    orphan = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "nope", "name": "x", "content": "r"}]

    async def script(session):
        answers = [
            await call(session, "get_run", run_id="no-such-run"),
            await call(session, "get_run", run_id=run.id, step=0),
            await call(session, "get_run", run_id=run.id, step=999),
            await call(session, "fork_run", run_id=run.id, step=-3),
            await call(
                session, "fork_run", run_id=run.id, step=1, messages=[{"role": "user", "content": "x" * 2_100_000}]
            ),
            await call(session, "fork_run", run_id=run.id, step=1, messages=orphan),
            await call(session, "fork_run", run_id=run.id, step=1, messages=[{"role": "wizard", "content": 1}]),
            await call(session, "list_runs", limit=10**9),
            await call(session, "compare_from", run_id=run.id, step=2, configurations=["nosuchprovider:x", "scripted"]),
            await call(session, "pin_test", run_id=run.id, path="../../outside.json"),
            await call(session, "annotate_step", run_id=run.id, step=1, labels=["good", "wrong tool"]),
            await call(session, "annotate_step", run_id=run.id, step=1, labels=[]),
        ]
        after = await call(session, "list_runs")
        return answers, after

    folder = tmp_path / "server" / "folder"  # ../../outside.json names a file in this test's own folder
    folder.mkdir(parents=True)
    answers, after = on_stdio(db, folder, script)
    for answer in answers:
        assert isinstance(answer, str) and answer.startswith("error: "), answer
        assert "\n" not in answer and "Traceback" not in answer and len(answer) < 700
    assert "no run 'no-such-run'" in answers[0] and "no step 999" in answers[2]
    assert "outside the server's folder" in answers[9] and not (tmp_path / "outside.json").exists()
    assert "labels: List should have at least 1 item" in answers[11]  # an empty label list is no label
    assert [r["run_id"] for r in after["runs"]] == [run.id]  # nothing was made by the refused calls


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_each_tools_arguments_have_a_description_bounds_and_enums_and_a_bad_one_is_one_line_naming_it(
    library, tmp_path
):
    db, run = library
    bad = [
        ("list_runs", "limit", {"limit": 0}),
        ("list_runs", "label", {"label": "mistake"}),
        ("get_run", "step", {"run_id": run.id, "step": 0}),
        ("get_run", "run_id", {}),
        ("fork_run", "step", {"run_id": run.id, "step": -3}),
        ("step_run", "phase", {"run_id": run.id, "phase": "everything"}),
        ("compare_from", "configurations", {"run_id": run.id, "step": 1, "configurations": ["scripted"]}),
        ("annotate_step", "labels", {"run_id": run.id, "step": 1, "labels": []}),
        ("annotate_step", "labels", {"run_id": run.id, "step": 1, "labels": [], "note": "a note alone"}),
        ("annotate_step", "labels[0]", {"run_id": run.id, "step": 1, "labels": ["nonsense"]}),
        ("stats", "since", {"since": "yesterday"}),
        ("run_tests", "trials", {"path": ".", "trials": 0}),
    ]

    async def script(session):
        tools = {t.name: t.input_schema for t in (await session.list_tools()).tools}
        answers = [await call(session, tool, **arguments) for tool, _, arguments in bad]
        return tools, answers

    tools, answers = on_stdio(db, tmp_path, script)
    for name, schema in tools.items():
        assert "ctx" not in schema["properties"]
        for argument, spec in schema["properties"].items():
            assert spec.get("description"), f"{name}.{argument} has no description"

    def argument(tool: str, name: str) -> dict:
        spec = tools[tool]["properties"][name]
        return next((s for s in spec.get("anyOf", []) if s.get("type") != "null"), spec) | {
            k: v for k, v in spec.items() if k != "anyOf"
        }

    assert (argument("list_runs", "limit")["minimum"], argument("list_runs", "limit")["maximum"]) == (1, 200)
    assert argument("get_run", "step")["minimum"] == 1 and argument("fork_run", "step")["minimum"] == 1
    assert argument("step_run", "phase")["enum"] == ["step", "model", "tools"]
    assert argument("stats", "by")["enum"] == ["provider", "model", "day", "owner", "label", "tag"]
    labels = argument("annotate_step", "labels")
    assert labels["minItems"] == 1 and set(labels["items"]["enum"]) == set(LABELS)
    assert set(argument("list_runs", "label")["enum"]) == {"", *LABELS}
    configurations = argument("compare_from", "configurations")
    assert (configurations["minItems"], configurations["maxItems"]) == (2, 4)
    assert argument("run_tests", "trials")["minimum"] == 1 and argument("run_tests", "trials")["maximum"] >= 100
    assert argument("stats", "since")["pattern"]

    for (tool, name, _), answer in zip(bad, answers, strict=True):
        assert isinstance(answer, str), (tool, answer)
        assert answer.startswith(f"error: Error executing tool {tool}: {name}: "), answer
        assert "\n" not in answer and "errors.pydantic.dev" not in answer and len(answer) < 500, answer
    assert Store(db).annotations(run.id) == []  # the refused labels were not kept


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_fork_with_a_mock_rule_reads_the_mocked_result_when_stepped(tmp_path):
    db = tmp_path / "runs.db"
    tools = toolbox.get_tools(["get_weather"])
    run = Run.start("What is the weather in Paris, Rome and Tokyo?", RunConfig.made_for("scripted", "weather", tools))
    Agent(create_provider("scripted", "weather"), tools).run(run)
    Store(db, owner="ada").save_run(run)
    mock = {"tool": "get_weather", "when": ["$.city=Paris"], "result": "snow, -40 C"}

    async def script(session):
        fork = await call(session, "fork_run", run_id=run.id, step=1, mocks=[mock])
        bad = await call(session, "fork_run", run_id=run.id, step=1, mocks=[{"tool": "no such tool!", "result": "x"}])
        return fork, await call(session, "step_run", run_id=fork["run_id"]), bad

    fork, stepped, bad = on_stdio(db, tmp_path, script)
    results = {m["content"] for m in stepped["messages"] if m["role"] == "tool"}
    assert "snow, -40 C" in results and len(results) == 3  # Paris mocked, Rome and Tokyo ran
    kept = Store(db).read_run(fork["run_id"])
    assert [t.source for t in kept.steps[0].tool_runs].count("mocked") == 1
    assert bad.startswith("error: ") and "\n" not in bad


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_long_texts_come_back_cut_with_a_note(tmp_path):
    db = tmp_path / "runs.db"
    run = research_run("ada", db, prompt="Research this: " + "long words " * 20_000)

    async def script(session):
        return await call(session, "get_run", run_id=run.id, step=1)

    read = on_stdio(db, tmp_path, script)
    first = next(m for m in read["messages"] if m["role"] == "user")
    assert len(first["content"]) < 2_100 and "more characters not shown" in first["content"]
    assert isinstance(run.messages[0], UserMessage) and len(run.messages[0].content) > 200_000


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_pin_a_run_as_a_test_and_run_it_through_the_server(library, tmp_path):
    db, run = library

    async def script(session):
        pinned = await call(session, "pin_test", run_id=run.id, path="tests/research.json")
        again = await call(session, "pin_test", run_id=run.id, path="tests/research.json")
        ran = await call(session, "run_tests", path="tests", configurations=["scripted:research", "scripted:weather"])
        labelled = await call(session, "annotate_step", run_id=run.id, step=2, labels=["wrong arguments"], note="n")
        return pinned, again, ran, labelled

    pinned, again, ran, labelled = on_stdio(db, tmp_path, script)
    assert Path(pinned["path"]) == tmp_path / "tests" / "research.json" and pinned["tool_calls"] > 0
    assert again.startswith("error: ") and "exists" in again
    assert ran["cells"] == 2 and ran["passed"] == 1  # the research model passes its own pinned run, weather does not
    assert {r["config"] for r in ran["results"]} == {"scripted:research", "scripted:weather"}
    assert labelled["author"] == "ada" and [a.labels for a in Store(db).annotations(run.id)] == [["wrong arguments"]]


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_stats_and_scan_through_the_server_are_the_commands_figures_and_labels(tmp_path):
    db = tmp_path / "runs.db"
    research_run("ada", db)
    tools = toolbox.get_tools(["search_notes"])
    runaway = Run.start(
        "Find out what a step budget is.", RunConfig.made_for("scripted", "runaway", tools, max_steps=6)
    )
    Agent(create_provider("scripted", "runaway"), tools).run(runaway)
    Store(db, owner="ada").save_run(runaway)

    async def script(session):
        return (
            await call(session, "stats", by="model"),
            await call(session, "scan"),
            await call(session, "scan"),
            await call(session, "scan", scanners=["os:system"]),
        )

    figures, first, second, refused = on_stdio(db, tmp_path, script)
    printed = subprocess.run(
        [sys.executable, "-m", "agentcore", "stats", "--by", "model", "--json", "--db", str(db)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert figures["groups"] == json.loads(printed.stdout)["groups"] and len(figures["groups"]) == 2
    assert first["added"] > 0 and second["added"] == 0  # a second scan adds nothing
    loops = [a for a in Store(db).annotations(runaway.id) if a.author == "scanner:loop"]
    assert loops, "the runaway run is not named a loop"
    assert refused.startswith("error: ") and "code is loaded only when whoever runs agentcore names it" in refused


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_the_transcript_resource_is_the_runs_export(library, tmp_path):
    db, run = library

    async def script(session):
        templates = await session.list_resource_templates()
        found = await session.read_resource(f"agentcore://runs/{run.id}/transcript")
        return [t.uri_template for t in templates.resource_templates], found.contents[0].text

    templates, text = on_stdio(db, tmp_path, script)
    assert "agentcore://runs/{run_id}/transcript" in templates and "agentcore://runs/{run_id}/replay" in templates
    assert json.loads(text)["id"] == run.id


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@pytest.mark.skipif(not INSPECTOR.exists(), reason="the MCP Inspector is not installed: npm ci --prefix tests/npm-mcp")
def test_the_mcp_inspector_cli_lists_and_calls_the_tools(library, tmp_path):
    db, run = library
    command = [str(INSPECTOR), "--cli", sys.executable, "-m", "agentcore", "mcp-server", "--db", str(db)]
    env = {**os.environ, "AGENTCORE_USER": "ada", "MCP_CATALOG_PATH": str(tmp_path / "catalog.json")}
    listed = subprocess.run([*command, "--method", "tools/list"], capture_output=True, text=True, timeout=120, env=env)
    assert listed.returncode == 0, listed.stderr
    assert {t["name"] for t in json.loads(listed.stdout)["tools"]} >= TOOLS
    called = subprocess.run(
        [*command, "--method", "tools/call", "--tool-name", "get_run", "--tool-arg", f"run_id={run.id}"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert result["structuredContent"]["run_id"] == run.id and not result.get("isError")


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_the_server_says_its_name_and_agentcores_version_to_a_client(tmp_path):
    import agentcore

    async def script(session):
        return session.server_info

    info = on_stdio(tmp_path / "runs.db", tmp_path, script)
    assert (info.name, info.version) == ("agentcore-runs", agentcore.__version__) and info.version

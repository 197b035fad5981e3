"""`agentcore mcp-server` as a shared service, tried as a hostile client would: a client names no file or address
of the server's, an upstream's reply is not quoted back, each call's work is bounded and stops, each user's
Store is pooled and closed, resources read as the requesting user, Host and Origin are checked, a server that
trusts a user header answers its proxy only, and a failure is one line to the client and one line to the log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[mcp]'")

import httpx2
from mcp.server.mcpserver.exceptions import ToolError
from support.runs_server import on_http, research_run, start_http
from support.servers import free_port
from support.stand_in import Reply, StandIn

from agentcore.loop import Agent
from agentcore.messages import AssistantMessage, UserMessage
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run, RunConfig
from agentcore.runs_server import tools as runs_tools
from agentcore.runs_server.http import StorePool
from agentcore.runs_server.limits import ClientRules, Limits
from agentcore.runs_server.server import build_server
from agentcore.store.runs import Store

SECRET_BODY = "internal-service-says-hunter2"


@pytest.fixture(autouse=True)
def _no_operator_addresses(monkeypatch):
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OLLAMA_HOST", "AGENTCORE_MCP_ALLOW_BASE_URLS"):
        monkeypatch.delenv(name, raising=False)


def call(server, tool: str, **arguments):
    """A tool's structured result through the server in this process (each call on a worker thread, as served),
    or its error text."""

    async def main():
        return await server.call_tool(tool, arguments)

    try:
        result = anyio.run(main)
    except ToolError as exc:  # what the client reads as an isError result
        return f"error: {exc}"
    return result.structured_content


def openai_reply(text: str) -> Reply:
    body = {
        "id": "c1",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    return Reply(json.dumps(body).encode())


# -- what a client may name ----------------------------------------------------------------------


def test_a_client_names_no_file_and_no_address_the_operator_did_not_allow(tmp_path, monkeypatch):
    db = tmp_path / "runs.db"
    run = research_run("ada", db)
    monkeypatch.chdir(tmp_path)  # the server's folder, where a client's test files are
    server = build_server(str(db))
    with StandIn(openai_reply("hi")) as listening:
        hostile = [
            ["local:/etc/shadow", "scripted"],
            ["local:/no/such/model.gguf", "scripted"],
            [f"openai:gpt-4o-mini@{listening.url}/v1", "scripted"],
            ["openai:gpt-4o-mini@http://169.254.169.254/latest", "scripted"],
        ]
        answers = [call(server, "compare_from", run_id=run.id, step=2, configurations=c) for c in hostile]
        pinned = call(server, "pin_test", run_id=run.id, path="tests/t.json")
        tests = call(server, "run_tests", path="tests", configurations=[f"openai@{listening.url}/v1"])
        assert listening.seen == []
    assert "error" not in pinned
    for answer in [*answers[:2]]:
        assert answer.startswith("error: ") and "names no file of the server's" in answer, answer
        assert "shadow" not in answer.replace("local:/etc/shadow", "") and "root" not in answer
    for answer in [*answers[2:], tests]:
        assert answer.startswith("error: ") and "is not an address this server calls" in answer, answer
        assert "https://api.openai.com/v1" in answer and "--allow-base-url" in answer  # what is allowed
    assert [r.id for r in Store(db).list_runs()] == [run.id]  # no fork was made


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_an_allowed_address_is_called_and_its_error_body_is_not_quoted_back(tmp_path):
    db = tmp_path / "runs.db"
    run = research_run("ada", db)
    failing = Reply(json.dumps({"error": {"message": SECRET_BODY, "type": SECRET_BODY}}).encode(), status=500)
    with StandIn(failing) as upstream:
        server = build_server(str(db), rules=ClientRules.of([f"{upstream.url}/v1"]))
        compared = call(
            server, "compare_from", run_id=run.id, step=2, configurations=[f"openai:m@{upstream.url}/v1", "scripted"]
        )
        assert upstream.seen, "the allowed address was not called"
    assert SECRET_BODY not in json.dumps(compared)
    error = compared["forks"][0]["error"]
    assert "500" in error and "not shown" in error
    fork = Store(db).read_run(compared["forks"][0]["run_id"])
    assert SECRET_BODY not in (fork.error or "")


def test_a_stored_run_that_names_another_address_is_not_stepped_and_get_run_shows_the_address(tmp_path):
    db = tmp_path / "runs.db"
    with StandIn(openai_reply("hi")) as listening:
        run = Run.start("hello", RunConfig.made_for("openai", "gpt-4o-mini", [], f"{listening.url}/v1"))
        Store(db, owner="ada").save_run(run)
        server = build_server(str(db))
        stepped = call(server, "step_run", run_id=run.id)
        to_end = call(server, "run_to_end", run_id=run.id)
        read = call(server, "get_run", run_id=run.id)
        assert listening.seen == []
    for answer in (stepped, to_end):
        assert answer.startswith("error: ") and f"run {run.id}'s configuration" in answer, answer
    assert read["config"]["base_url"] == f"{listening.url}/v1"


def test_a_stored_run_goes_on_with_its_own_model_and_get_run_names_it_with_a_scenario_left_in_its_config(tmp_path):
    db = tmp_path / "runs.db"
    with StandIn(openai_reply("hi")) as upstream:
        config = RunConfig.made_for("openai", "gpt-4o-mini", [], f"{upstream.url}/v1", scenario="weather")
        run = Run.start("hello", config)
        Store(db, owner="ada").save_run(run)
        server = build_server(str(db), rules=ClientRules.of([f"{upstream.url}/v1"]))
        read = call(server, "get_run", run_id=run.id)
        stepped = call(server, "step_run", run_id=run.id)
        assert [s.body["model"] for s in upstream.seen] == ["gpt-4o-mini"]
    assert read["config"]["model"] == "gpt-4o-mini"  # the model its next call goes to, not the scripted scenario
    assert stepped["stop_reason"] == "answer" and stepped["new_messages"] == 1


# -- each call's work is bounded ------------------------------------------------------------------


def test_a_test_run_and_a_comparison_are_counted_before_any_model_call(library_with_tests):
    server, run = library_with_tests
    too_many = call(server, "run_tests", path="tests", trials=101)
    five = call(server, "run_tests", path="tests", configurations=["replay"] * 5)
    steps = call(server, "compare_from", run_id=run.id, step=1, configurations=["scripted"] * 4, steps=26)
    assert "1 tests x 1 configurations x 101 trials is 101 runs, over this server's 100" in too_many
    assert "configurations: List should have at most 4 items" in five  # refused by the schema
    assert "4 configurations x 26 steps is 104 model calls" in steps
    within = call(server, "run_tests", path="tests", trials=3)
    assert within["passed"] == 1 and within["stopped"] is None


@pytest.fixture
def library_with_tests(tmp_path, monkeypatch):
    db = tmp_path / "runs.db"
    run = research_run("ada", db)
    monkeypatch.chdir(tmp_path)
    server = build_server(str(db))
    assert "error" not in call(server, "pin_test", run_id=run.id, path="tests/research.json")
    return server, run


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_comparison_on_a_slow_upstream_stops_when_the_calls_time_runs_out(tmp_path):
    db = tmp_path / "runs.db"
    run = research_run("ada", db)
    with StandIn(openai_reply("late")) as upstream:
        upstream.server.RequestHandlerClass.do_POST = _answer_late(upstream.server.RequestHandlerClass.do_POST)
        server = build_server(str(db), rules=ClientRules.of([f"{upstream.url}/v1"]), limits=Limits(seconds=1.5))
        compared = call(
            server, "compare_from", run_id=run.id, step=2, configurations=[f"openai:m@{upstream.url}/v1", "scripted"]
        )
    assert "ran out" in compared["stopped"]
    assert len(compared["forks"]) == 2 and Store(db).summary(compared["forks"][1]["run_id"]) is not None


def _answer_late(do_post):
    def late(self):
        time.sleep(20)
        do_post(self)

    return late


def replies_run(texts: list[str]) -> Run:
    """One run whose steps reply with `texts`, a user turn between each."""
    run = Run.start("Say something.", RunConfig.made_for("scripted", "weather", [], max_steps=len(texts)))
    agent = Agent(ScriptedProvider(replay=[AssistantMessage(content=t) for t in texts]), [])
    for i in range(len(texts)):
        if i:
            run.append(UserMessage(content="And again."))
            run.stop_reason = None
        agent.run(run)
    return run


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_catastrophic_regex_scan_over_300_replies_stops_at_its_bound_and_frees_its_thread(tmp_path):
    db = tmp_path / "runs.db"
    # each reply a text of its own, so every one takes the pattern's whole second: unbounded, 300 s
    run = replies_run(["a" * 40 + str(i) + "!" for i in range(300)])
    Store(db, owner="ada").save_run(run)
    assert len(run.steps) == 300
    server = build_server(str(db), limits=Limits(seconds=1.0))
    answers: list = []
    caller = threading.Thread(target=lambda: answers.append(call(server, "scan", scanners=["regex:(a|aa)+$"])))
    caller.start()
    caller.join(60)
    assert not caller.is_alive() and answers, "the scan did not stop"
    report = answers[0]
    assert "ran out" in report["stopped"] and report["runs"] == 0  # the run was not read to its end
    scanning = [t for t in threading.enumerate() if any("scanners.py" in f.f_code.co_filename for f in _frames(t))]
    assert scanning == []  # no thread is still in the scanner
    again = call(server, "scan", scanners=["loop"])  # and the server goes on
    assert again["stopped"] is None and again["runs"] == 1


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_scan_stops_when_its_client_cancels_the_call(tmp_path, monkeypatch):
    db = tmp_path / "runs.db"
    store = Store(db, owner="ada")
    for i in range(10):  # a second a run, with a deadline far away
        store.save_run(replies_run(["a" * 40 + str(i) + "!"]))
    monkeypatch.setattr(runs_tools, "SCAN_CHUNK", 1)
    server = build_server(str(db), limits=Limits(seconds=300))

    async def cancelled():
        with anyio.move_on_after(1.5):  # the client gives up: the SDK cancels the call's task
            await server.call_tool("scan", {"scanners": ["regex:(a|aa)+$"]})

    anyio.run(cancelled)
    labelled = [a for run_id in store.run_ids() for a in store.annotations(run_id) if a.author.startswith("scanner:")]
    assert len(labelled) < 10  # it did not go on to the end
    assert not [t for t in threading.enumerate() if any("scanners.py" in f.f_code.co_filename for f in _frames(t))]


def _frames(thread: threading.Thread):
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        yield frame
        frame = frame.f_back


# -- per-user Stores -------------------------------------------------------------------------------


def test_300_user_names_keep_the_open_stores_at_the_bound_and_close_the_evicted(tmp_path):
    db = tmp_path / "runs.db"
    opened: list[Store] = []

    def open_store(owner, teacher):
        opened.append(Store(db, owner=owner, teacher=teacher))
        return opened[-1]

    pool = StorePool(open_store, size=8)
    with pool.lease("held", None) as held:  # the least recently used, but serving a call: kept open
        for i in range(300):
            with pool.lease(f"user{i}", None) as store:
                assert store.owner == f"user{i}" and store.run_ids() == []
            assert len(pool) == min(i + 2, 8)
        assert held.run_ids() == []
        with pool.lease("user299", None) as again:
            assert again is opened[-1]  # the most recent is kept, not opened anew
    with pool.lease("one more", None):  # the call ended: now the least recently used is closed first
        pass
    assert len(opened) == 302 and len(pool) == 8
    kept = set(map(id, pool._stores.values()))
    closed = [s for s in opened if id(s) not in kept]
    assert len(closed) == 294 and any(s is held for s in closed)
    for store in closed:
        with pytest.raises(Exception, match="closed"):
            store.run_ids()
    pool.close()
    with pytest.raises(Exception, match="closed"):
        opened[-1].run_ids()


# -- over HTTP -------------------------------------------------------------------------------------


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_resources_read_as_the_requesting_user_and_a_failed_read_is_one_line(tmp_path):
    db = tmp_path / "runs.db"
    theirs = research_run("ada", db)
    mine = research_run("bob", db)
    env = {"AGENTCORE_PRIVATE_RUNS": "1", "AGENTCORE_TEACHERS": "ada"}
    process, url = start_http(db, tmp_path, "--user-header", "X-Forwarded-User", env=env)

    async def read(session, run_id):
        try:
            found = await session.read_resource(f"agentcore://runs/{run_id}/transcript")
        except Exception as exc:  # noqa: BLE001 - the client's error is what is checked
            return f"error: {exc}"
        return json.loads(found.contents[0].text)["id"]

    try:
        bob = {"X-Forwarded-User": "bob"}
        assert on_http(url, lambda s: read(s, mine.id), bob) == mine.id
        refused = on_http(url, lambda s: read(s, theirs.id), bob)
        nobody = on_http(url, lambda s: read(s, mine.id))
        assert on_http(url, lambda s: read(s, mine.id), {"X-Forwarded-User": "ada"}) == mine.id  # a teacher
    finally:
        process.terminate()
        _, err = process.communicate(timeout=10)
    assert refused.startswith("error: ") and f"no run '{theirs.id}'" in refused
    assert "not signed in" in nobody and "X-Forwarded-User" in nobody
    log = err.decode().splitlines()
    assert not any("Traceback" in line for line in log), log
    assert len([line for line in log if theirs.id in line]) == 1, log


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_host_and_origin_are_checked_and_the_operator_allows_its_proxys_name(tmp_path):
    db = tmp_path / "runs.db"
    process, url = start_http(db, tmp_path, "--allow-host", "agents.example.org")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    heads = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    try:

        def status(**headers: str) -> int:
            return httpx2.post(url, json=body, headers={**heads, **headers}, timeout=30).status_code

        rebound = status(host="evil.example")
        foreign = status(origin="https://evil.example")
        proxied = status(host="agents.example.org", origin="https://agents.example.org")
        local = status()
    finally:
        process.terminate()
        process.wait(10)
    assert rebound == 421 and foreign == 403
    assert proxied not in (403, 421) and local not in (403, 421)


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_a_server_that_trusts_a_user_header_off_loopback_needs_the_proxys_secret(tmp_path, monkeypatch):
    db = tmp_path / "runs.db"
    research_run("ada", db)
    monkeypatch.delenv("AGENTCORE_PROXY_SECRET", raising=False)
    refused = subprocess.run(
        [sys.executable, "-m", "agentcore", "mcp-server", "--db", str(db), "--http", f"0.0.0.0:{free_port()}",
         "--user-header", "X-Forwarded-User"],
        capture_output=True, text=True, timeout=20, env={**os.environ, "AGENTCORE_USER": "ada"},
    )  # fmt: skip
    assert refused.returncode != 0 and "AGENTCORE_PROXY_SECRET" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    secret = "s3cret-the-proxy-adds-0123456789"
    env = {"AGENTCORE_PROXY_SECRET": secret}
    process, url = start_http(db, tmp_path, "--user-header", "X-Forwarded-User", env=env)
    try:
        forged = httpx2.post(url, json={}, headers={"X-Forwarded-User": "ada"}, timeout=30)
        wrong = httpx2.post(url, json={}, headers={"X-Agentcore-Proxy-Secret": "guess"}, timeout=30)
        proxied = on_http(
            url,
            lambda s: s.call_tool("list_runs", {}),
            {"X-Forwarded-User": "ada", "X-Agentcore-Proxy-Secret": secret},
        )
    finally:
        process.terminate()
        process.wait(10)
    assert forged.status_code == 403 and wrong.status_code == 403
    assert "did not come through the server's proxy" in forged.text and secret not in forged.text
    assert not proxied.is_error and len(proxied.structured_content["runs"]) == 1


def test_the_tools_and_resources_of_a_shared_server_are_the_ones_listed_here():
    """A new tool or resource is a new row in the tests above: what it may name, what bounds it, whose it reads."""
    server = build_server()  # on the test's private database

    async def names():
        tools = await server.list_tools()
        templates = await server.list_resource_templates()
        return {t.name for t in tools}, {t.uri_template for t in templates}

    tools, resources = anyio.run(names)
    assert tools == {
        "list_runs", "get_run", "fork_run", "step_run", "run_to_end", "compare_from",
        "annotate_step", "stats", "scan", "pin_test", "run_tests", "blame",
    }  # fmt: skip
    assert resources == {"agentcore://runs/{run_id}/transcript", "agentcore://runs/{run_id}/replay"}

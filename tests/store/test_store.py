"""The runs store on both backends (SQLite; PostgreSQL when a throwaway server can be started): round trips,
saving as a run goes, lineage, migrations, kill -9 safety, concurrent writers, owners, no secrets on disk."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentcore import (
    Agent,
    AssistantMessage,
    ModelResponse,
    Run,
    RunConfig,
    ToolDecision,
    Usage,
    WireExchange,
    cli,
    create_provider,
    toolbox,
)
from agentcore.accounting import run_cost
from agentcore.exports import export_body, export_json, export_zip
from agentcore.providers.scripted import get_scenario
from agentcore.store import LAST_RUN_KEY, MIGRATIONS, SCHEMA_VERSION, RunChanged, Store, StoreError

PLANTED = "sk-planted-0123456789abcdefSECRET"


def scripted_run(scenario: str = "research", max_steps: int = 10, observers=()) -> tuple[Agent, Run]:
    sc = get_scenario(scenario)
    tools = toolbox.get_tools(",".join(sc.tools))
    config = RunConfig(provider="scripted", model=scenario, scenario=scenario, tools=[t.spec() for t in tools])
    config.max_steps = max_steps
    run = Run.start(sc.prompt, config)
    return Agent(create_provider("scripted", scenario, scenario=scenario), tools, observers=list(observers)), run


def made_by(run: Run, provider: str, model: str) -> Run:
    """The run as if `provider`'s `model` had answered every step."""
    run.config.provider, run.config.model = provider, model
    for step in run.steps:
        step.provider, step.model = provider, model
    return run


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])  # a real server
def location(request, tmp_path: Path) -> str:
    """A test's runs database: a SQLite file, or a database of its own on the session's PostgreSQL cluster."""
    return str(tmp_path / "runs.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")


@pytest.fixture
def store(location: str) -> Store:
    s = Store(location)
    yield s
    s.close()


def test_a_saved_run_loads_back_equal_after_a_restart(location: str) -> None:
    agent, run = scripted_run()
    agent.run(run)
    first = Store(location)
    first.save_run(run)
    first.close()
    again = Store(location)
    loaded = again.load_run(run.id)
    assert loaded.model_dump() == run.model_dump()
    assert again.check() == "ok"
    assert again.schema_version == SCHEMA_VERSION


def test_the_saver_observer_keeps_the_stored_run_equal_to_the_live_one_after_every_phase(store: Store) -> None:
    seen: list[int] = []
    agent, run = scripted_run("weather")

    def check(event) -> None:
        if event.kind == "phase_finished":
            stored = store.load_run(run.id)
            assert stored.messages == run.messages
            seen.append(len(stored.steps))

    agent.observers = [store.saver(run), check]
    store.save_run(run)
    agent.run(run)
    assert seen and seen == sorted(seen)
    assert store.load_run(run.id).model_dump() == run.model_dump()
    assert store.summary(run.id).stop_reason == "answer"


def test_steps_are_rewritten_when_another_writer_changed_the_run(location: str) -> None:
    agent, run = scripted_run()
    agent.run(run)
    a, b = Store(location), Store(location)
    a.save_run(run)
    b.delete_run(run.id)
    a.save_run(run)  # a's memory of written steps is stale: every step must be written again
    assert len(b.load_run(run.id).steps) == len(run.steps)


def test_editing_a_step_in_place_and_truncating_are_saved(store: Store) -> None:
    agent, run = scripted_run()
    agent.run(run)
    store.save_run(run)
    run.steps = run.steps[:3]
    run.messages = run.messages[: run.steps[-1].message_count + 1]
    store.save_run(run)
    loaded = store.load_run(run.id)
    assert len(loaded.steps) == 3 and loaded.messages == run.messages


def test_the_library_row_holds_the_runs_price_from_accounting_and_its_duration(store: Store) -> None:
    agent, run = scripted_run("weather")
    made_by(agent.run(run), "anthropic", "claude-3-5-haiku-latest")
    run.steps[0].latency_ms = 120.0
    run.steps[0].tool_runs[0].started_ms, run.steps[0].tool_runs[0].duration_ms = 5.0, 30.0
    store.save_run(run)
    row = store.summary(run.id)
    assert row.cost_usd == run_cost(run) and row.cost_usd > 0
    assert row.duration_ms == run.duration_ms >= 120.0 + 35.0
    made_by(run, "anthropic", "no-such-model-xyz")
    store.save_run(run)
    assert store.summary(run.id).cost_usd is None  # an unknown price, not a free run


def test_list_search_filter_title_and_delete(store: Store) -> None:
    a1, r1 = scripted_run("research")
    a2, r2 = scripted_run("weather")
    a1.run(r1)
    made_by(a2.run(r2), "openai", "gpt-4o-mini")
    store.save_run(r1)
    store.save_run(r2)
    assert {r.id for r in store.list_runs()} == {r1.id, r2.id}
    assert [r.id for r in store.list_runs(search="expensive")] == [r1.id]
    assert [r.id for r in store.list_runs(provider="openai")] == [r2.id]
    assert store.list_runs(search="100%_") == []  # LIKE wildcards are literal
    assert store.summary(r2.id).cost_usd > 0 and store.summary(r1.id).cost_usd == 0.0
    store.set_title(r1.id, "Renamed run")
    assert store.load_run(r1.id).title == "Renamed run"
    assert [r.id for r in store.list_runs(search="renamed")] == [r1.id]
    with pytest.raises(StoreError):
        store.set_title(r1.id, "   ")
    store.delete_run(r1.id)
    assert not store.exists(r1.id)
    with pytest.raises(StoreError, match="no run"):
        store.load_run(r1.id)
    with pytest.raises(StoreError, match="no run"):
        store.delete_run(r1.id)
    assert store.check() == "ok"


class Answering:
    """A provider that answers at once, as `name`'s `model` would, with reported usage."""

    def __init__(self, name: str, model: str) -> None:
        self.name, self.model = name, model

    def complete(self, request, on_text=None) -> ModelResponse:
        return ModelResponse(
            message=AssistantMessage(content="Sunny."), usage=Usage(input_tokens=500, output_tokens=20)
        )


def test_a_run_continued_on_another_model_is_listed_as_mixed(store: Store, capsys) -> None:
    agent, run = scripted_run("weather")
    agent.step(run)  # the scripted model asks for the weather; its tools run
    run.config = run.config.model_copy(update={"provider": "openai", "model": "gpt-4o-mini"})
    Agent(Answering("openai", "gpt-4o-mini")).step(run)  # continued on another model, which answers
    _, single = scripted_run("weather")
    Agent(create_provider("scripted", "weather", scenario="weather"), toolbox.get_tools("get_weather")).run(single)
    store.save_run(run)
    store.save_run(single)
    row = store.summary(run.id)
    assert row.mixed and row.models == (("scripted", "weather"), ("openai", "gpt-4o-mini"))
    assert (row.provider, row.model) == ("scripted → openai", "weather → gpt-4o-mini")
    assert row.cost_usd == run_cost(run) and row.cost_usd > 0  # the answer is priced; the scripted step is free
    one = store.summary(single.id)
    assert not one.mixed and (one.provider, one.model, one.models) == (
        "scripted",
        "weather",
        (("scripted", "weather"),),
    )
    assert [r.id for r in store.list_runs(provider="openai")] == [run.id]  # a provider that answered a step
    assert {r.id for r in store.list_runs(provider="scripted")} == {run.id, single.id}
    assert store.providers() == ["openai", "scripted"]
    assert [r.id for r in store.list_runs(search="gpt-4o-mini")] == [run.id]
    assert cli.main(["runs", "list", "--db", str(store.path)]) == 0
    assert "scripted/weather → openai/gpt-4o-mini (mixed)" in capsys.readouterr().out


def test_a_persons_decisions_are_kept_in_the_database(store: Store) -> None:
    tools = toolbox.get_tools("get_weather")
    config = RunConfig(provider="scripted", model="weather", tools=[t.spec() for t in tools], pause_before_tools=True)
    run = Run.start("Weather in Paris, Rome and Tokyo?", config)
    agent = Agent(create_provider("scripted", "weather", scenario="weather"), tools, observers=[store.saver(run)])
    agent.run(run)
    paris, rome, tokyo = run.messages[-1].tool_calls
    decisions = {
        rome.id: ToolDecision(action="edit", arguments={"city": "Kyoto"}),
        tokyo.id: ToolDecision(action="deny"),
    }
    agent.tools_phase(run, decisions)
    stored = store.load_run(run.id).steps[0].tool_runs
    assert [t.source for t in stored] == ["approved", "edited", "denied"]
    assert stored[1].original_arguments == {"city": "Rome"} and stored == run.steps[0].tool_runs


def test_fork_tree_lineage_and_children(store: Store) -> None:
    agent, root = scripted_run()
    agent.run(root)
    fork = root.fork(3)
    agent.run(fork)
    grandchild = fork.fork(4)
    for r in (root, fork, grandchild):
        store.save_run(r)
    assert [r.id for r in store.children(root.id)] == [fork.id]
    assert [r.id for r in store.lineage(grandchild.id)] == [root.id, fork.id, grandchild.id]
    tree = store.fork_tree(grandchild.id)
    assert [(n.run.id, depth) for n, depth in tree.walk()] == [(root.id, 0), (fork.id, 1), (grandchild.id, 2)]
    store.delete_run(fork.id)
    assert [r.id for r in store.lineage(grandchild.id)] == [grandchild.id]


def test_meta_remembers_the_last_run(store: Store) -> None:
    assert store.get_meta(LAST_RUN_KEY) is None
    store.set_meta(LAST_RUN_KEY, "abc")
    store.set_meta(LAST_RUN_KEY, "def")
    assert store.get_meta(LAST_RUN_KEY) == "def"


def test_default_path_comes_from_the_environment_or_home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "env" / "x.db"))
    assert Store().path == tmp_path / "env" / "x.db"
    monkeypatch.delenv("AGENTCORE_DB")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    s = Store()
    assert s.path == tmp_path / "home" / ".agentcore" / "runs.db" and s.path.exists()


def test_an_old_schema_is_migrated_and_a_newer_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        db.execute(statement)
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()
    s = Store(path)
    assert s.schema_version == SCHEMA_VERSION
    names = {r[0] for r in s._backend.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "runs_by_parent" in names
    s.close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer"):
        Store(path)


def test_a_row_written_before_the_models_were_kept_lists_its_configured_model(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    db = sqlite3.connect(path)
    for statement in (*MIGRATIONS[0], *MIGRATIONS[1]):
        db.execute(statement)
    db.execute(
        "INSERT INTO runs VALUES ('old1', 'an old run', 't0', 't0', 'openai', 'gpt-4o', 1, 3, 'answer', "
        "10, 5, 0.001, 12.0, NULL, NULL, 'hello', 1, '{}')"
    )
    db.execute("PRAGMA user_version = 2")
    db.commit()
    db.close()
    s = Store(path)
    row = s.summary("old1")
    assert (row.provider, row.model, row.models, row.mixed) == ("openai", "gpt-4o", (("openai", "gpt-4o"),), False)
    assert [r.id for r in s.list_runs(provider="openai")] == ["old1"] and s.providers() == ["openai"]
    s.close()


def test_a_planted_api_key_never_reaches_the_database_or_any_export(location: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    agent, run = scripted_run("weather")
    agent.run(run)
    run.config.provider, run.config.model = "openai", "gpt-4o-mini"
    run.steps[0].wire = WireExchange(
        url="https://api.example.test/v1/chat/completions",
        request_headers={"Authorization": f"Bearer {PLANTED}", "X-Api-Key": PLANTED},
        request={"model": "gpt-4o-mini", "api_key": PLANTED},
        response_headers={"set-cookie": PLANTED, "x-request-id": "req_1"},
        response={"note": f"echo {PLANTED}"},
    )
    run.messages[0] = run.messages[0].model_copy(update={"content": f"my key is {PLANTED}"})
    s = Store(location)
    s.save_run(run)
    s.set_title(run.id, "a title")
    loaded = s.load_run(run.id)
    exports = [export_json(loaded), export_zip([loaded], ("json", "openai", "anthropic"))]
    exports += [export_body(loaded, f) for f in ("openai", "anthropic")]
    if s.backend == "sqlite":
        files = [p.read_bytes() for p in tmp_path.iterdir()]  # the database, its WAL and shared memory
    else:  # every row of every table, as PostgreSQL prints it
        tables = ("runs", "steps", "meta")
        files = [r[0].encode() for t in tables for r in s._backend.execute(f"SELECT t::text FROM {t} AS t").fetchall()]
    assert files and all(PLANTED.encode() not in blob for blob in files)
    import io
    import zipfile

    for blob in exports:
        if isinstance(blob, bytes):
            with zipfile.ZipFile(io.BytesIO(blob)) as z:
                blob = "".join(z.read(n).decode() for n in z.namelist())
        assert PLANTED not in blob and "[redacted]" in blob
    assert loaded.steps[0].wire.response_headers["x-request-id"] == "req_1"


KILL_SCRIPT = textwrap.dedent(
    """
    import sys
    from agentcore import Agent, AssistantMessage, ModelResponse, Run, RunConfig, ToolCall, Usage, toolbox
    from agentcore.store.runs import Store

    class SlowCaller:
        name, model = "scripted", "slow"

        def complete(self, request, on_text=None):
            n = sum(m.role == "assistant" for m in request.messages) + 1
            call = ToolCall(id=f"call_{n}", name="slow", arguments={"seconds": 0.25})
            return ModelResponse(message=AssistantMessage(content=f"turn {n}", tool_calls=(call,)), usage=Usage(input_tokens=n))

    store = Store(sys.argv[1])
    tools = toolbox.get_tools("slow")
    run = Run.start("wait a lot", RunConfig(provider="scripted", model="slow", tools=[t.spec() for t in tools], max_steps=200))

    def report(event):
        if event.kind == "phase_finished" and event.phase == "tools":
            print(f"saved {len(run.steps)}", flush=True)

    Agent(SlowCaller(), tools, observers=[store.saver(run), report]).run(run)
    """
)


@pytest.mark.slow  # starts a Python process and kills it
def test_a_process_killed_mid_run_leaves_every_completed_phase_readable(location: str, tmp_path: Path) -> None:
    script = tmp_path / "slow_run.py"
    script.write_text(KILL_SCRIPT)
    db = location
    proc = subprocess.Popen([sys.executable, str(script), db], stdout=subprocess.PIPE, text=True)
    completed = 0
    try:
        for line in proc.stdout:
            completed = int(line.split()[1])
            if completed >= 3:
                break
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL and completed >= 3
    s = Store(db)
    assert s.check() == "ok"
    (summary,) = s.list_runs()
    run = s.load_run(summary.id)
    assert len(run.steps) >= completed
    for step in run.steps[:completed]:
        assert [t.name for t in step.tool_runs] == ["slow"]
        assert run.messages[step.message_count].tool_calls[0].id == f"call_{step.index}"
    results = [m for m in run.messages if m.role == "tool"]
    assert len(results) >= completed and not any(m.is_error for m in results)


def test_a_session_saving_over_a_revision_it_never_saw_is_refused_and_writes_nothing(location: str) -> None:
    agent, run = scripted_run()
    agent.run(run)
    Store(location).save_run(run)
    mine, theirs = Store(location), Store(location)
    mine_run, theirs_run = mine.load_run(run.id), theirs.load_run(run.id)
    theirs_run.title = "their edit"
    theirs.save_run(theirs_run)
    mine_run.steps, mine_run.title = mine_run.steps[:2], "my edit"
    with pytest.raises(RunChanged, match="saved elsewhere .* reload it .* or fork it"):
        mine.save_run(mine_run)
    stored = Store(location).load_run(run.id)
    assert stored.title == "their edit" and len(stored.steps) == len(run.steps)
    again = mine.load_run(run.id)  # after a reload the session goes on from what is stored
    again.title = "my edit"
    mine.save_run(again)
    assert Store(location).load_run(run.id).title == "my edit"


RACE_SCRIPT = textwrap.dedent(
    """
    import sys
    from agentcore.store.runs import RunChanged, Store

    store = Store(sys.argv[1])
    run = store.load_run(sys.argv[2])
    run.title = sys.argv[3]
    run.steps = run.steps[: int(sys.argv[4])]
    print("loaded", flush=True)
    sys.stdin.readline()  # both writers hold the same revision; the test releases them together
    try:
        store.save_run(run)
        print("saved", flush=True)
    except RunChanged as exc:
        print(f"refused: {exc}", flush=True)
    """
)


@pytest.mark.slow  # starts two Python processes, three times
def test_two_processes_saving_the_same_run_at_once_one_wins_and_the_other_is_refused(
    location: str, tmp_path: Path
) -> None:
    agent, run = scripted_run()
    agent.run(run)
    script = tmp_path / "race.py"
    script.write_text(RACE_SCRIPT)
    for round_ in range(3):
        Store(location).save_run(run)  # a Store that never read the run writes it whole: every round starts alike
        writers = {
            name: subprocess.Popen(
                [sys.executable, str(script), location, run.id, name, str(keep)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for name, keep in ((f"A{round_}", 2), (f"B{round_}", 4))
        }
        assert all(p.stdout.readline().strip() == "loaded" for p in writers.values())
        for p in writers.values():
            p.stdin.write("go\n")
            p.stdin.flush()
        said = {name: p.communicate(timeout=60)[0].strip() for name, p in writers.items()}
        winners = [name for name, line in said.items() if line == "saved"]
        assert len(winners) == 1, said
        (loser,) = set(said) - set(winners)
        assert said[loser].startswith(f"refused: run {run.id} was saved elsewhere"), said
        stored = Store(location).load_run(run.id)
        assert stored.title == winners[0] and len(stored.steps) == (2 if winners[0].startswith("A") else 4)


def test_runs_carry_their_owner_and_only_the_owner_deletes_unless_allowed(location: str, monkeypatch) -> None:
    ada, bob = Store(location, owner="ada"), Store(location, owner="bob")
    _, mine = scripted_run("weather")
    _, theirs = scripted_run("weather")
    ada.save_run(mine)
    bob.save_run(theirs)
    ada.save_run(bob.load_run(theirs.id))  # saving another's run does not take it over
    assert {r.id: r.owner for r in ada.list_runs()} == {mine.id: "ada", theirs.id: "bob"}
    assert [r.id for r in ada.list_runs(owner="ada")] == [mine.id] and ada.owners() == ["ada", "bob"]
    with pytest.raises(StoreError, match="belongs to bob, not ada.*AGENTCORE_ALLOW_DELETE_OTHERS=1"):
        ada.delete_run(theirs.id)
    assert ada.exists(theirs.id)
    monkeypatch.setenv("AGENTCORE_ALLOW_DELETE_OTHERS", "1")
    ada.delete_run(theirs.id)
    assert not bob.exists(theirs.id)


def test_only_the_owner_renames_a_run_unless_allowed(location: str, monkeypatch) -> None:
    monkeypatch.delenv("AGENTCORE_ALLOW_DELETE_OTHERS", raising=False)
    ada, bob = Store(location, owner="ada"), Store(location, owner="bob")
    _, theirs = scripted_run("weather")
    bob.save_run(theirs)
    with pytest.raises(StoreError, match="belongs to bob, not ada: only its owner may rename it"):
        ada.set_title(theirs.id, "taken over")
    with pytest.raises(StoreError, match="belongs to bob, not mallory"):
        bob.set_title(theirs.id, "taken over", user="mallory")
    assert bob.summary(theirs.id).title == bob.load_data(theirs.id)["title"] == theirs.title
    bob.set_title(theirs.id, "Bob's weather")
    assert ada.summary(theirs.id).title == "Bob's weather"
    monkeypatch.setenv("AGENTCORE_ALLOW_DELETE_OTHERS", "1")  # a deployment that lets anyone delete lets anyone rename
    ada.set_title(theirs.id, "renamed by ada")
    assert bob.summary(theirs.id).title == "renamed by ada"


def test_the_owner_comes_from_agentcore_user(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("AGENTCORE_USER", "grace")
    s = Store(tmp_path / "runs.db")
    _, run = scripted_run("weather")
    s.save_run(run)
    assert s.owner == "grace" and s.summary(run.id).owner == "grace"


def test_a_postgresql_url_in_agentcore_db_selects_postgresql(pg_url: str, monkeypatch) -> None:
    monkeypatch.setenv("AGENTCORE_DB", pg_url)
    s = Store()
    assert s.backend == "postgresql" and s.path == pg_url and s.schema_version == SCHEMA_VERSION


def test_runs_copy_moves_a_sqlite_library_to_postgresql_keeping_ids_owners_and_forks(
    tmp_path: Path, pg_url: str, capsys
) -> None:
    source = Store(tmp_path / "runs.db", owner="ada")
    agent, root = scripted_run()
    agent.run(root)
    fork = root.fork(3)
    for r in (root, fork):
        source.save_run(r)
    source.set_title(root.id, "the root")
    argv = ["runs", "copy", "--from", str(tmp_path / "runs.db"), "--to", pg_url]
    assert cli.main(argv) == 0
    assert "copied 2 runs" in capsys.readouterr().out
    target = Store(pg_url)
    assert target.load_run(root.id).model_dump() == source.load_run(root.id).model_dump()
    assert [r.id for r in target.children(root.id)] == [fork.id]
    assert {r.owner for r in target.list_runs()} == {"ada"}
    assert [(r.id, r.updated_at) for r in target.list_runs()] == [(r.id, r.updated_at) for r in source.list_runs()]
    assert cli.main(argv) == 0  # again: nothing is copied twice
    assert "copied 0 runs, skipped 2" in capsys.readouterr().out


def test_a_bad_postgresql_url_is_a_store_error_without_the_password(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as caught:
        Store("postgresql://ada:hunter2@127.0.0.1:1/nowhere")
    assert "hunter2" not in str(caught.value)


def test_the_runs_page_lists_my_runs_until_asked_for_everyones(open_app, monkeypatch) -> None:
    monkeypatch.setenv("AGENTCORE_USER", "ada")
    _, mine = scripted_run("weather")
    _, theirs = scripted_run("research")
    Store(os.environ["AGENTCORE_DB"], owner="ada").save_run(mine)
    Store(os.environ["AGENTCORE_DB"], owner="bob").save_run(theirs)
    at = open_app("views/runs.py")
    assert list(at.dataframe[0].value["id"]) == [mine.id]
    at.toggle(key="runs_mine").set_value(False).run()
    table = at.dataframe[0].value
    assert dict(zip(table["id"], table["owner"], strict=True)) == {mine.id: "ada", theirs.id: "bob"}

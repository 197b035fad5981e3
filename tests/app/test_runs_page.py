"""The runs library page (AppTest over the app and a real database) and the run diff."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from agentcore import Agent, Run, RunConfig, create_provider, toolbox, transcript
from agentcore.diff import diff_runs
from agentcore.messages import AssistantMessage
from agentcore.providers.scripted import ScriptedProvider, get_scenario
from agentcore.store.runs import LAST_RUN_KEY, Store

PAGE = "views/runs.py"


def _run(scenario: str) -> tuple[Agent, Run]:
    sc = get_scenario(scenario)
    tools = toolbox.get_tools(",".join(sc.tools))
    run = Run.start(sc.prompt, RunConfig(provider="scripted", model=scenario, tools=[t.spec() for t in tools]))
    return Agent(create_provider("scripted", scenario, scenario=scenario), tools), run


@pytest.fixture
def library(tmp_path: Path, monkeypatch) -> tuple[Store, Run, Run, Run]:
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    store = Store(tmp_path / "runs.db")
    agent, root = _run("research")
    agent.run(root)
    fork = root.fork(2)
    fork.messages.append(fork.messages[-1].model_copy(update={"content": "Look at caching instead."}))
    fork.messages.pop(-2)
    agent.run(fork)
    weather_agent, other = _run("weather")
    weather_agent.run(other)
    for r in (root, fork, other):
        store.save_run(r)
    return store, root, fork, other


@pytest.fixture
def page(open_app):
    """The app opened on the runs page, in a new browser session."""
    return lambda: open_app(PAGE)


def test_the_library_lists_every_run_and_filters_by_search_and_provider(library, page) -> None:
    store, root, fork, other = library
    at = page()
    assert not at.exception
    table = at.dataframe[0].value
    assert set(table["id"]) == {root.id, fork.id, other.id}
    assert set(table.columns) >= {"title", "provider", "model", "steps", "stop", "tokens", "cost ($)", "time (s)"}
    at.text_input(key="runs_search").set_value("paris").run()
    assert list(at.dataframe[0].value["id"]) == [other.id]
    at.text_input(key="runs_search").set_value("").run()
    at.selectbox(key="runs_provider").set_value("scripted").run()
    assert len(at.dataframe[0].value) == 3


def test_a_title_is_edited_and_a_delete_needs_confirmation(library, page) -> None:
    store, root, fork, other = library
    at = page()
    at.selectbox(key="runs_selected").set_value(other.id).run()
    at.text_input(key=f"runs_title_{other.id}").set_value("Weather check").run()
    at.button(key=f"runs_rename_{other.id}").click().run()
    assert store.summary(other.id).title == "Weather check"
    at.button(key="runs_delete").click().run()
    assert store.exists(other.id) and any("for good" in w.value for w in at.warning)
    at.button(key="runs_delete_no").click().run()
    assert store.exists(other.id)
    at.button(key="runs_delete").click().run()
    at.button(key="runs_delete_yes").click().run()
    assert not store.exists(other.id)
    assert other.id not in set(at.dataframe[0].value["id"])


def test_the_fork_tree_and_the_diff_show_where_a_fork_diverges(library, page) -> None:
    store, root, fork, other = library
    at = page()
    at.selectbox(key="runs_selected").set_value(fork.id).run()
    tree = " ".join(m.value for m in at.markdown)
    assert root.id in tree and fork.id in tree and "forked at step 2" in tree
    assert at.selectbox(key=f"runs_diff_{fork.id}").value == root.id  # the parent is the default comparison
    cut = root.steps[1].message_count - 1  # the fixture edited the last tool result before the fork point
    assert any(f"share the first {cut} messages" in i.value for i in at.info)
    rows = at.dataframe[1].value
    assert list(rows["change"])[:cut] == [""] * cut and rows["change"].iloc[cut] != ""
    at.button(key=f"runs_view_{root.id}").click().run()
    assert at.selectbox(key="runs_selected").value == root.id


def test_opening_a_run_makes_it_current_and_remembers_it(library, page) -> None:
    store, root, fork, other = library
    at = page()
    at.selectbox(key="runs_selected").set_value(root.id).run()
    at.button(key="runs_open_current").click().run()
    assert not at.exception
    assert store.get_meta(LAST_RUN_KEY) == root.id
    session = at.session_state["session"]  # the playground's state: the one place the current run lives
    assert session.run.id == root.id and session.run.messages == root.messages
    assert any("Playground" in m.value for m in at.main.markdown)  # and the app went there
    assert at.main.metric[0].value == f"{len(root.steps)} / {root.config.max_steps}"
    fresh = page()  # a new session's picker is on the table's first row; the playground offers the last run
    assert fresh.selectbox(key="runs_selected").value == fresh.dataframe[0].value["id"].iloc[0] != root.id


def test_an_upload_is_imported_and_a_bad_one_refused_without_changes(library, page, tmp_path: Path) -> None:
    store, root, fork, other = library
    at = page()
    body = {"messages": [{"role": "user", "content": "imported hello"}, {"role": "assistant", "content": "hi"}]}
    at.file_uploader[0].set_value(("chat.json", json.dumps(body).encode(), "application/json")).run()
    assert any("Imported chat.json" in s.value for s in at.success)
    assert len(store.list_runs()) == 4
    bad = [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "zz", "content": "y"}]
    at.file_uploader[0].set_value(("bad.json", json.dumps(bad).encode(), "application/json")).run()
    assert any("bad.json: messages[1]" in e.value for e in at.error)
    assert len(store.list_runs()) == 4


def test_diff_of_identical_runs_and_of_a_fork() -> None:
    agent, run = _run("research")
    agent.run(run)
    same = diff_runs(run, run)
    assert same.identical and all(r.kind == "same" for r in same.rows)
    fork = run.fork(3)
    agent.run(fork)
    d = diff_runs(run, fork)
    # the scripted model is deterministic: the fork goes on exactly as the run did
    assert d.identical and d.diverged_at is None and [r.kind for r in d.rows] == ["same"] * len(run.messages)
    assert d.summary() == "The two runs have the same messages."
    assert d.related == f"{fork.id} is a fork of {run.id} at step 3"
    # a fork that another model goes on with diverges at its first new message, the fork point
    answered = run.fork(3)
    early = [m for m in run.messages if isinstance(m, AssistantMessage)][:2] + [AssistantMessage(content="Enough.")]
    Agent(ScriptedProvider(replay=early), list(agent.tools.values())).run(answered)
    d = diff_runs(run, answered)
    assert d.diverged_at == run.steps[2].message_count == 5 and not d.identical
    assert [r.kind for r in d.rows] == ["same"] * 5 + ["changed"] + ["only_a"] * (len(run.messages) - 6)
    assert d.rows[5].b_text.endswith("Enough.") and d.summary().startswith("They share the first 5 messages")
    shorter = run.fork(2)
    d = diff_runs(run, shorter)
    assert d.diverged_at == run.steps[1].message_count
    assert {r.kind for r in d.rows[d.diverged_at :]} == {"only_a"}
    edited = run.fork_with_messages(
        [*run.messages[:3], run.messages[3].model_copy(update={"content": "changed result"}), *run.messages[4:]],
        keep_later=True,
    )
    d = diff_runs(run, edited)
    assert [(r.kind, r.a_index) for r in d.rows if r.kind != "same"] == [("changed", 3)]
    assert "changed result" in d.rows[3].b_text


def test_a_fresh_app_session_over_the_same_database_offers_the_last_run(library, open_app) -> None:
    store, root, fork, other = library
    store.set_meta(LAST_RUN_KEY, fork.id)
    app = open_app()
    session = app.session_state["session"]
    assert session.run is None and session.last_run.id == fork.id  # a fresh tab starts clean, one click away
    app.button(key="reopen").click().run()
    assert not app.exception
    session = app.session_state["session"]
    assert session.run is not None and session.run.id == fork.id
    assert session.run.model_dump() == store.load_run(fork.id).model_dump()


def test_the_exports_are_the_stored_run_as_a_transcript_request_bodies_and_a_zip(library, page, downloads) -> None:
    store, root, fork, other = library
    at = page()
    at.selectbox(key="runs_selected").set_value(fork.id).run()
    stored = store.load_run(fork.id)
    exported = transcript.loads(downloads.data(at.download_button(key="runs_dl_json")))
    assert exported.id == fork.id and exported.parent == fork.parent
    assert exported.messages == stored.messages and len(exported.steps) == len(stored.steps)
    json_buttons = [b for b in at.download_button if b.key != "runs_dl_html"]  # the replay page is HTML
    bodies = {b.key.removeprefix("runs_dl_"): json.loads(downloads.data(b)) for b in json_buttons}
    assert set(bodies) >= {"json", "openai", "anthropic", "ollama"}
    assert [m["role"] for m in bodies["openai"]["messages"]] == [m.role for m in stored.messages]
    assert [m["role"] for m in bodies["ollama"]["messages"]] == [m.role for m in stored.messages]
    answer = stored.messages[-1].content
    for fmt in ("openai", "anthropic", "ollama"):
        assert stored.messages[0].content in json.dumps(bodies[fmt]["messages"][0]), fmt
    for fmt in ("openai", "ollama"):
        assert answer in json.dumps(bodies[fmt]["messages"][-1]), fmt
    # to Anthropic a body ending on the answer is a prefill: the export is the request that got the answer
    assert bodies["anthropic"]["messages"][-1]["role"] == "user" and answer not in json.dumps(bodies["anthropic"])
    at.multiselect[0].set_value([root.id, other.id]).run()
    with zipfile.ZipFile(io.BytesIO(downloads.data(at.download_button(key="runs_zip")))) as bundle:
        assert sorted(bundle.namelist()) == sorted([f"{root.id}.json", f"{other.id}.json"])
        runs = {name: transcript.loads(bundle.read(name)) for name in bundle.namelist()}
    assert runs[f"{root.id}.json"].messages == store.load_run(root.id).messages
    assert runs[f"{other.id}.json"].messages == store.load_run(other.id).messages


def _saved(store: Store, title: str, answer: str, **config) -> Run:
    """A stored one-step run whose answer is `answer`."""
    from agentcore.messages import AssistantMessage, Usage, UserMessage
    from agentcore.steps import StepRecord

    run = Run(
        config=RunConfig(**{"provider": "scripted", "model": "weather", **config}),
        messages=[UserMessage(content="Tell me a long story."), AssistantMessage(content=answer)],
        steps=[StepRecord(index=1, usage=Usage(input_tokens=12, output_tokens=300), message_count=1)],
        title=title,
    )
    store.save_run(run)
    return run


def test_the_diff_names_the_runs_by_title_and_a_cut_cell_shows_the_change(tmp_path, monkeypatch, page) -> None:
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    store = Store(tmp_path / "runs.db")
    story = "Once upon a time " + "and then " * 60
    before = _saved(store, "Before the edit", story + "the OLD ending.")
    after = _saved(store, "After the edit", story + "the NEW ending.")
    at = page()
    at.selectbox(key="runs_selected").set_value(after.id).run()
    at.selectbox(key=f"runs_diff_{after.id}").set_value(before.id).run()
    assert not at.exception
    table = at.dataframe[1].value
    changed = table[table["change"] == "≠"].iloc[0]
    # the answers differ after 557 characters: the cells show that part, not only the same beginning
    assert "OLD ending" in changed["Before the edit"] and "NEW ending" in changed["After the edit"]
    assert changed["Before the edit"].startswith("…") and len(changed["Before the edit"]) <= 300
    assert list(table.columns)[1:] == ["Before the edit", "After the edit"]  # no column of message numbers


def test_the_library_writes_counts_in_words_and_a_dash_for_an_unknown_cost(tmp_path, monkeypatch, page) -> None:
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    store = Store(tmp_path / "runs.db")
    unpriced = _saved(store, "No price", "Hello.", provider="openai", model="no-such-model")
    at = page()
    assert not at.exception
    table = at.dataframe[0].value
    assert table["cost ($)"].iloc[0] == "—"
    assert not {"None", "nan"} & {str(v) for v in table.to_numpy().ravel()}
    label = at.selectbox(key="runs_selected").format_func(unpriced.id)
    assert " · 1 step · " in label
    assert any(" · 1 step · " in c.value for c in at.caption)


def test_test_and_lesson_runs_are_listed_only_when_asked_for(library, page) -> None:
    store, root, fork, other = library
    lesson = _saved(store, "Lesson: The loop itself", "It is sunny.")
    test = _saved(store, "test weather · scripted", "It is sunny.")
    at = page()
    assert not at.exception
    assert set(at.dataframe[0].value["id"]) == {root.id, fork.id, other.id}
    assert lesson.id not in at.selectbox(key="runs_selected").options
    at.toggle(key="runs_made").set_value(True).run()
    assert set(at.dataframe[0].value["id"]) == {root.id, fork.id, other.id, lesson.id, test.id}
    fresh = page()
    assert len(fresh.dataframe[0].value) == 3  # hidden again in a new session


def test_compare_with_defaults_to_a_fork_of_a_run_that_has_no_parent(library, page) -> None:
    store, root, fork, other = library
    at = page()
    at.selectbox(key="runs_selected").set_value(root.id).run()
    assert at.selectbox(key=f"runs_diff_{root.id}").value == fork.id
    at.selectbox(key="runs_selected").set_value(other.id).run()  # unrelated to any: none chosen, and a prompt to choose
    assert at.selectbox(key=f"runs_diff_{other.id}").value is None
    assert any("choose a run to compare with" in c.value for c in at.caption)
    assert len(at.dataframe) == 1  # no diff drawn against a run nobody chose


def test_compare_with_defaults_to_the_newest_run_of_the_same_prompt_never_a_newer_unrelated_import(
    library, page
) -> None:
    store, root, fork, other = library
    agent, again = _run("weather")
    agent.run(again)
    store.save_run(again)  # the same prompt as `other`, saved after it
    imported = _saved(store, "Imported Codex session", "Done.", provider="codex", model="gpt-5-codex")
    at = page()
    at.selectbox(key="runs_selected").set_value(other.id).run()
    assert at.selectbox(key=f"runs_diff_{other.id}").options[0].endswith(imported.id)  # the newest run of all
    assert at.selectbox(key=f"runs_diff_{other.id}").value == again.id
    assert not at.exception and len(at.dataframe) == 2  # the diff is drawn
    at.selectbox(key="runs_selected").set_value(imported.id).run()  # a prompt of its own, no fork: nothing chosen
    assert at.selectbox(key=f"runs_diff_{imported.id}").value is None


def test_a_run_answered_by_two_models_names_each_with_its_provider(tmp_path, monkeypatch, page) -> None:
    from agentcore.steps import StepRecord

    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    store = Store(tmp_path / "runs.db")
    run = _saved(store, "Switched", "It is sunny.")
    run.messages.append(run.messages[0].model_copy(update={"content": "And tomorrow?"}))
    run.messages.append(AssistantMessage(content="Also sunny."))
    run.steps[0].provider, run.steps[0].model = "scripted", "weather"
    run.steps.append(StepRecord(index=2, provider="local", model="smollm2-135m", message_count=3))
    store.save_run(run)
    at = page()
    assert not at.exception
    label = at.selectbox(key="runs_selected").format_func(run.id)
    assert "scripted/weather → local/smollm2-135m" in label
    assert any("scripted/weather → local/smollm2-135m" in c.value for c in at.caption)


def test_an_imported_lesson_run_is_listed_and_chosen_whatever_the_filters_hid(library, page) -> None:
    store, root, fork, other = library
    from ui.lessons import LESSONS

    lesson = LESSONS["loop"]
    run = lesson.start()
    Agent(create_provider("scripted", lesson.scenario, scenario=lesson.scenario), toolbox.get_tools("get_weather")).run(
        run
    )
    at = page()
    at.selectbox(key="runs_selected").set_value(other.id).run()
    at.text_input(key="runs_search").set_value("research").run()  # a filter the import does not match
    at.file_uploader[0].set_value(("lesson.json", transcript.dumps(run).encode(), "application/json")).run()
    assert any("Imported lesson.json" in s.value for s in at.success)
    imported = next(r for r in store.list_runs() if r.title == run.title)
    assert at.toggle(key="runs_made").value is True and at.text_input(key="runs_search").value == ""
    assert at.selectbox(key="runs_selected").value == imported.id  # the imported run, not the one chosen before
    assert at.header[0].value.endswith(run.title)


def test_an_uploaded_session_is_imported_with_its_subagent_and_downloads_as_atif(library, page, downloads) -> None:
    store = library[0]
    at = page()
    atif_file = Path(__file__).parents[1] / "fixtures" / "sessions" / "atif_embedded.json"
    at.file_uploader[0].set_value(("trajectory.json", atif_file.read_bytes(), "application/json")).run()
    notice = next(s.value for s in at.success if "Imported trajectory.json" in s.value)
    assert "with 1 subagent runs linked to it" in notice
    run_id = notice.split("as run ")[1].split(",")[0]
    at.selectbox(key="runs_selected").set_value(run_id).run()
    exported = json.loads(downloads.data(at.download_button(key="runs_dl_atif")))
    assert exported["schema_version"] == "ATIF-v1.7" and exported["trajectory_id"] == run_id
    sub = store.load_run(exported["subagent_trajectories"][0]["trajectory_id"])
    assert sub.spawned_by.run_id == run_id and sub.spawned_by.tool_call_id == "c2"


def test_a_teachers_run_picker_starts_on_the_tables_first_row_whoever_viewed_a_run_last(
    tmp_path: Path, open_app, monkeypatch
) -> None:
    """The teacher sees several students' runs; a student's last viewed run is not the picker's default."""
    monkeypatch.setenv("AGENTCORE_TEACHERS", "tina")
    db = tmp_path / "class.db"
    monkeypatch.setenv("AGENTCORE_DB", str(db))
    runs = {}
    for owner, scenario in (("ada", "weather"), ("bob", "research"), ("ada", "recovery")):
        agent, run = _run(scenario)
        agent.run(run)
        Store(db, owner=owner).save_run(run)
        runs[scenario] = run
    Store(db, owner="bob").set_meta(LAST_RUN_KEY, runs["weather"].id)  # a student opened one, not the newest
    monkeypatch.setenv("AGENTCORE_USER", "tina")
    at = open_app(PAGE)
    first = list(at.dataframe[0].value["id"])
    assert len(first) == 3 and first[0] != runs["weather"].id
    assert at.selectbox(key="runs_selected").value == first[0]
    at.selectbox(key="runs_owner").set_value("ada").run()  # one student's runs: still the first row
    mine = list(at.dataframe[0].value["id"])
    assert at.selectbox(key="runs_selected").value == mine[0] and set(mine) == {
        runs["weather"].id,
        runs["recovery"].id,
    }

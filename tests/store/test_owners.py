"""Who owns which run in the app: a typed or header-given name, and two tabs saving the same run (AppTest, real database)."""

from __future__ import annotations

import asyncio
import importlib
import os
import random

import pytest
from support.servers import ROOT

from agentcore import Agent, Run, RunConfig, create_provider, toolbox
from agentcore.providers.scripted import get_scenario
from agentcore.store.runs import LAST_RUN_KEY, Store
from ui.state import USER_HEADER_ENV, NotSignedIn, resolve_user, valid_name

PLAYGROUND, RUNS = "views/playground.py", "views/runs.py"


def open_runaway(store: Store) -> Run:
    """An open run of the scripted `runaway` scenario, one step in, saved and offered to the next tab."""
    sc = get_scenario("runaway")
    tools = toolbox.get_tools(",".join(sc.tools))
    config = RunConfig(provider="scripted", model="runaway", scenario="runaway", tools=[t.spec() for t in tools])
    run = Run.start(sc.prompt, config.model_copy(update={"max_steps": 20}))
    Agent(create_provider("scripted", "runaway", scenario="runaway"), tools).step(run)
    store.save_run(run)
    store.set_meta(LAST_RUN_KEY, run.id)
    return run


def tab_on(open_app, run: Run):
    """A new browser tab that takes the offer to reopen `run`."""
    at = open_app()
    assert at.session_state["session"].last_run.id == run.id
    at.button(key="reopen").click().run()
    assert at.session_state["session"].run.id == run.id
    return at


def test_two_tabs_stepping_the_same_run_the_second_save_is_refused_and_can_be_kept_as_a_fork(open_app) -> None:
    store = Store(os.environ["AGENTCORE_DB"])
    run = open_runaway(store)
    first, second = tab_on(open_app, run), tab_on(open_app, run)
    first.button(key="step").click().run()
    first.button(key="step").click().run()
    assert store.summary(run.id).steps == 3
    second.button(key="step").click().run()
    assert not second.exception
    assert any("another tab" in e.value for e in second.error)  # said on the page, in one line
    assert store.summary(run.id).steps == 3  # the first tab's work is not overwritten
    assert store.load_data(run.id)["messages"] == first.session_state["session"].run.model_dump(mode="json")["messages"]
    second.button(key="keep_as_new_run").click().run()
    kept = second.session_state["session"].run
    assert kept.id != run.id and store.summary(kept.id).parent_id == run.id and store.summary(kept.id).steps == 2


def test_looking_at_a_run_in_the_library_does_not_let_a_stale_tab_save_over_it(open_app) -> None:
    store = Store(os.environ["AGENTCORE_DB"])
    run = open_runaway(store)
    stale, other = tab_on(open_app, run), tab_on(open_app, run)
    other.button(key="step").click().run()
    other.button(key="step").click().run()
    stale.switch_page(RUNS).run()
    stale.selectbox(key="runs_selected").set_value(run.id).run()  # shows and exports what is stored now
    stale.switch_page(PLAYGROUND).run()
    stale.button(key="step").click().run()
    assert any("another tab" in e.value for e in stale.error)
    assert store.summary(run.id).steps == 3
    assert store.load_data(run.id)["messages"] == other.session_state["session"].run.model_dump(mode="json")["messages"]


def test_proposing_a_pinned_test_of_a_run_does_not_let_a_stale_tab_save_over_it(open_app) -> None:
    store = Store(os.environ["AGENTCORE_DB"])
    run = open_runaway(store)
    stale, other = tab_on(open_app, run), tab_on(open_app, run)
    other.button(key="step").click().run()
    stale.switch_page("views/tests.py").run()
    stale.selectbox(key="tests_pin").set_value(run.id).run()  # reads what is stored now, to propose a test
    assert not stale.exception, stale.exception
    stale.switch_page(PLAYGROUND).run()
    stale.button(key="step").click().run()
    assert any("another tab" in e.value for e in stale.error)
    assert store.summary(run.id).steps == 2


def test_a_typed_name_owns_the_runs_started_and_a_name_with_markup_is_refused(open_app, monkeypatch) -> None:
    monkeypatch.setenv("AGENTCORE_USER", "server")
    monkeypatch.delenv(USER_HEADER_ENV, raising=False)
    at = open_app()
    at.text_input(key="user_name").set_value("<img src=x onerror=alert(1)>").run()
    assert any("Name not changed" in e.value for e in at.sidebar.error)
    assert at.session_state["session"].user is None and at.text_input(key="user_name").value == ""
    at.text_input(key="user_name").set_value("  Ada Lovelace ").run()
    at.button(key="start").click().run()
    run_id = at.session_state["session"].current_id
    store = Store(os.environ["AGENTCORE_DB"])
    assert store.summary(run_id).owner == "Ada Lovelace"
    Store(os.environ["AGENTCORE_DB"], owner="bob").save_run(Run.start("Someone else's run"))
    at.switch_page(RUNS).run()
    assert list(at.dataframe[0].value["id"]) == [run_id]
    assert "Ada Lovelace" in at.toggle(key="runs_mine").label


def test_deleting_someone_elses_run_is_refused_on_the_runs_page(open_app, monkeypatch) -> None:
    monkeypatch.setenv("AGENTCORE_USER", "ada")
    monkeypatch.delenv("AGENTCORE_ALLOW_DELETE_OTHERS", raising=False)
    theirs = Run.start("Bob's question")
    Store(os.environ["AGENTCORE_DB"], owner="bob").save_run(theirs)
    Store(os.environ["AGENTCORE_DB"], owner="ada").save_run(Run.start("Ada's question"))
    at = open_app(RUNS)
    at.toggle(key="runs_mine").set_value(False).run()
    at.selectbox(key="runs_selected").set_value(theirs.id).run()
    at.button(key="runs_delete").click().run()
    at.button(key="runs_delete_yes").click().run()
    assert any("only its owner may delete it" in e.value for e in at.error)
    assert not any("AGENTCORE_" in e.value for e in at.error)  # no server setting shown to the page's user
    assert Store(os.environ["AGENTCORE_DB"]).exists(theirs.id)


def test_renaming_someone_elses_run_is_refused_on_the_runs_page(open_app, monkeypatch) -> None:
    monkeypatch.setenv("AGENTCORE_USER", "ada")
    monkeypatch.delenv("AGENTCORE_ALLOW_DELETE_OTHERS", raising=False)
    theirs = Run.start("Bob's question")
    Store(os.environ["AGENTCORE_DB"], owner="bob").save_run(theirs)
    at = open_app(RUNS)
    at.toggle(key="runs_mine").set_value(False).run()
    at.selectbox(key="runs_selected").set_value(theirs.id).run()
    at.text_input(key=f"runs_title_{theirs.id}").set_value("Ada's now")
    at.button(key=f"runs_rename_{theirs.id}").click().run()
    assert any("Title not saved: " in e.value and "only its owner may rename it" in e.value for e in at.error)
    assert not any("AGENTCORE_" in e.value for e in at.error)  # no server setting shown to the page's user
    assert Store(os.environ["AGENTCORE_DB"]).summary(theirs.id).title == theirs.title
    assert at.text_input(key=f"runs_title_{theirs.id}").value == theirs.title  # the box shows the title kept


def test_the_header_name_wins_when_configured_and_without_a_valid_one_no_name_is_taken(monkeypatch) -> None:
    monkeypatch.setenv("AGENTCORE_USER", "server")
    monkeypatch.delenv(USER_HEADER_ENV, raising=False)
    headers = {"X-Forwarded-User": "grace"}
    assert resolve_user(headers, None) == (
        "server",
        "the server's default (AGENTCORE_USER)",
        False,
        False,
    )  # not configured
    assert resolve_user({}, "ada") == ("ada", "typed here, for this browser session", False, False)
    monkeypatch.setenv(USER_HEADER_ENV, "X-Forwarded-User")
    assert resolve_user(headers, "ada") == ("grace", "from the X-Forwarded-User header", True, False)
    for sent in ({}, {"X-Forwarded-User": ""}, {"X-Forwarded-User": "<b>grace</b>"}, {"X-Forwarded-User": "x" * 65}):
        for typed in ("ada", None):  # neither a typed name nor the server's default stands in for the header
            with pytest.raises(NotSignedIn, match="X-Forwarded-User header"):
                resolve_user(sent, typed)


@pytest.mark.parametrize("sent", [None, "", "DOMAIN\\grace", "a:b", "<b>grace</b>"])
def test_without_a_valid_name_in_the_configured_header_the_app_is_refused_in_one_line(
    open_app, monkeypatch, sent: str | None
) -> None:
    monkeypatch.setenv("AGENTCORE_USER", "server")
    monkeypatch.setenv(USER_HEADER_ENV, "X-Forwarded-User")
    headers = {} if sent is None else {"X-Forwarded-User": sent}
    monkeypatch.setattr("ui.state.request_headers", lambda: headers)
    theirs = Run.start("Grace's question")
    Store(os.environ["AGENTCORE_DB"], owner="grace").save_run(theirs)
    for page in (None, RUNS):
        at = open_app(page)
        (refusal,) = at.error
        assert refusal.value.startswith("Not signed in: this app takes your name from the X-Forwarded-User header")
        assert "\n" not in refusal.value
        assert not at.text_input and not at.button and not at.dataframe  # no name to type, nothing to press or list
    assert [(r.id, r.owner) for r in Store(os.environ["AGENTCORE_DB"]).list_runs()] == [(theirs.id, "grace")]


def test_a_valid_name_in_the_configured_header_owns_the_runs_and_no_name_can_be_typed(open_app, monkeypatch) -> None:
    monkeypatch.setenv("AGENTCORE_USER", "server")
    monkeypatch.setenv(USER_HEADER_ENV, "X-Forwarded-User")
    monkeypatch.setattr("ui.state.request_headers", lambda: {"X-Forwarded-User": "grace"})
    at = open_app()
    assert not at.error and "user_name" not in [w.key for w in at.text_input]
    assert any("Signed in as **grace** (from the X-Forwarded-User header)" in c.value for c in at.sidebar.caption)
    at.button(key="start").click().run()
    assert Store(os.environ["AGENTCORE_DB"]).summary(at.session_state["session"].current_id).owner == "grace"


@pytest.mark.parametrize("bad", ["", "   ", "<b>a</b>", "a/../b", "[x](http://e.com)", "-rf", "a\nb", "é" * 65])
def test_a_name_is_letters_digits_and_a_few_marks(bad: str) -> None:
    with pytest.raises(ValueError, match="a name is 1 to 64"):
        valid_name(bad)
    assert (
        valid_name(" Grace Hopper ") == "Grace Hopper"
        and valid_name("ada.l+ops@example.org") == "ada.l+ops@example.org"
    )


def test_opening_someone_elses_run_steps_an_own_copy_and_leaves_theirs_alone(open_app, monkeypatch) -> None:
    monkeypatch.setenv("AGENTCORE_USER", "ada")
    theirs = open_runaway(Store(os.environ["AGENTCORE_DB"], owner="bob"))
    at = open_app(RUNS)
    at.toggle(key="runs_mine").set_value(False).run()
    at.selectbox(key="runs_selected").set_value(theirs.id).run()
    at.button(key="runs_open_current").click().run()
    copy = at.session_state["session"].run
    assert copy.id != theirs.id and copy.parent.run_id == theirs.id and copy.messages == theirs.messages
    assert any("your own copy" in e.value for e in at.error)
    at.switch_page(PLAYGROUND).run()  # where the browser now is
    at.button(key="step").click().run()
    store = Store(os.environ["AGENTCORE_DB"])
    assert store.summary(theirs.id).steps == 1 and store.summary(theirs.id).owner == "bob"
    assert store.summary(copy.id).steps == 2 and store.summary(copy.id).owner == "ada"


@pytest.mark.slow
def test_a_real_server_saves_each_tabs_runs_under_the_name_in_its_header(tmp_path, monkeypatch) -> None:
    """Over Streamlit's own websocket, as browsers behind an authenticating proxy: the header's name, or no app."""
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    class_load = importlib.import_module("class_load")  # its websocket client is a browser tab's protocol
    monkeypatch.setenv("AGENTCORE_USER", "server")
    db = tmp_path / "runs.db"
    proc, url = class_load.start_app(db, "scripted", tmp_path / "app.log")  # AGENTCORE_USER_HEADER=X-Bench-User
    try:
        grace = asyncio.run(class_load.learner(url, "grace", 1, 0.0, 0.0, random.Random(1)))
        assert not grace.problems and len(grace.latencies) == 1
        mallory = asyncio.run(class_load.learner(url, "<b>mallory</b>", 1, 0.0, 0.0, random.Random(1)))
        assert mallory.problems[0].startswith(
            "error box: Not signed in: this app takes your name from the X-Bench-User"
        )
        assert not mallory.latencies  # no New run button to press, no Step
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    store = Store(db)
    assert {r.owner: r.steps for r in store.list_runs()} == {"grace": 1}


def test_your_name_does_not_offer_the_servers_login_account(open_app, monkeypatch) -> None:
    monkeypatch.delenv("AGENTCORE_USER", raising=False)
    monkeypatch.delenv(USER_HEADER_ENV, raising=False)
    monkeypatch.setattr("getpass.getuser", lambda: "root")
    at = open_app()
    field = at.text_input(key="user_name")
    assert field.value == "" and field.placeholder == "type your name"
    assert "root" not in field.help
    monkeypatch.setenv("AGENTCORE_USER", "ada")  # a name the deployment chose is offered
    at.run()
    assert at.text_input(key="user_name").placeholder == "ada"


@pytest.mark.parametrize("failure", [KeyError("uid 4242"), OSError("no login name")])
def test_a_process_with_no_login_name_saves_its_runs_as_anonymous(tmp_path, monkeypatch, failure) -> None:
    def no_login() -> str:
        raise failure

    monkeypatch.delenv("AGENTCORE_USER", raising=False)
    monkeypatch.setattr("getpass.getuser", no_login)  # a bare container: no passwd entry for the uid
    store = Store(tmp_path / "runs.db")
    run = Run.start("hi", RunConfig())
    store.save_run(run)
    assert store.owner == "anonymous" and [r.owner for r in store.list_runs()] == ["anonymous"]
    monkeypatch.setenv("AGENTCORE_USER", "ada")  # the deployment's name comes first, login or none
    assert Store(tmp_path / "other.db").owner == "ada"

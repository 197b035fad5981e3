"""An imported session in the playground: read-only until a person chooses who goes on with it, and an estimate
of the next call before any call a provider charges for."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.app import click, session

from agentcore.messages import Usage
from agentcore.providers.base import ModelRequest, estimate_request_tokens
from agentcore.providers.prices import price_call
from agentcore.sessions import read_import, store_imported
from agentcore.steps import ModelRef
from agentcore.store.runs import Store

ROLLOUT = Path(__file__).parents[1] / "fixtures" / "sessions" / "codex_rollout.jsonl"
STEPPERS = ("step", "model_phase", "tools_phase", "run_to_end", "run_tools", "retry")


@pytest.fixture
def imported(tmp_path, monkeypatch):
    """A Codex rollout that ends on a call of write_stdin, a tool this app does not have, stored in the library."""
    lines = ROLLOUT.read_text().splitlines()[:9]  # up to the first call and its token count: no result yet
    raw = "\n".join(lines).replace('"exec_command"', '"write_stdin"')
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    (run,) = store_imported(Store(tmp_path / "runs.db"), read_import(raw, "rollout.jsonl"))
    assert run.next_phase == "tools" and run.messages[-1].tool_calls[0].name == "write_stdin"
    return run


def _keys(at) -> set[str]:
    return {b.key for b in at.button}


def _captions(at) -> str:
    return "\n".join(c.value for c in at.caption)


def test_an_imported_session_opens_read_only_until_a_person_chooses_who_goes_on(imported, open_app):
    at = open_app("views/runs.py")
    at.selectbox(key="runs_selected").set_value(imported.id).run()
    click(at, "runs_open_current")  # the Runs page opens it in the playground
    run = session(at).run
    assert run.id == imported.id and any("Imported: read-only" in m.value for m in at.main.markdown)
    # nothing on the page would send it to a model or run its tools: no Step, no Approve, no Run
    assert not _keys(at) & set(STEPPERS) and not [r for r in at.radio if r.key.startswith("dec_")]
    assert "Not a tool of this app: `write_stdin`" in _captions(at)
    assert "go_on" in _keys(at)
    kept = session(at)
    kept.sync_sidebar = True  # on in the playground itself, as a tab opened on it (AppTest reruns the Runs page)
    at = open_app(session=kept)
    # a click that reached the page anyway (another tab's, a stale form) is refused at the one gate
    before = list(run.messages)
    session(at).action = "tools"
    at.run()
    assert run.messages == before and "read-only here" in (session(at).notice or "")
    # the person chooses a model in the sidebar, and is told what its next call would cost before going on
    assert at.selectbox(key="cfg_model").value == "gpt-5.5"  # the sidebar shows the run's own
    chosen = next(m for m in at.selectbox(key="cfg_model").options if m != "gpt-5.5")
    at.selectbox(key="cfg_model").set_value(chosen).run()
    expected = estimate_request_tokens(ModelRequest(messages=tuple(run.messages)))
    cost = price_call(run, ModelRef("openai-responses", chosen), Usage(input_tokens=expected))
    assert cost is not None and cost > 0
    told = _captions(at)
    assert f"more than ~{expected:,} tokens to `openai-responses/{chosen}`" in told
    assert f"more than ~${cost:,.6f} for that input" in told
    assert at.button(key="go_on").label == f"Go on with openai-responses/{chosen}"
    click(at, "go_on")
    assert session(at).held_import() is None
    assert {"step", "run_tools"} <= _keys(at) and at.radio(key="dec_call_1").value == "Approve"
    assert f"~{expected:,} tokens" in _captions(at)  # the estimate stays by the Step that would send it


def test_a_fork_of_an_imported_session_stays_read_only(imported, open_app):
    from ui.state import Session

    kept = Session()
    kept.add_run(imported)
    fork = imported.fork_with_messages(list(imported.messages[:-1]))
    kept.add_run(fork)
    at = open_app(session=kept)
    assert session(at).held_import() is imported
    assert not _keys(at) & set(STEPPERS) and "go_on" in _keys(at)
    assert any(f"a fork of `{imported.id}`" in m.value for m in at.main.markdown)


def test_every_step_that_would_call_a_paid_model_shows_its_estimate_first(open_app):
    at = open_app()
    at.selectbox(key="cfg_provider").set_value("openai").run()
    model = at.selectbox(key="cfg_model").value
    click(at, "start")
    run = session(at).run
    expected = estimate_request_tokens(ModelRequest(messages=tuple(run.messages), tools=tuple(run.tool_specs)))
    cost = price_call(run, ModelRef("openai", model), Usage(input_tokens=expected))
    assert cost is not None and cost > 0
    told = _captions(at)
    assert f"The next model call sends ~{expected:,} tokens to `openai/{model}`" in told
    assert f"~${cost:,.6f} for that input" in told
    # a free model's call is not priced
    at.selectbox(key="cfg_provider").set_value("scripted").run()
    assert "The next model call sends" not in _captions(at)


def test_a_copy_of_someone_elses_imported_session_opens_read_only(tmp_path, monkeypatch, open_app):
    raw = "\n".join(ROLLOUT.read_text().splitlines()[:9])
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    (theirs,) = store_imported(Store(tmp_path / "runs.db", owner="alice"), read_import(raw, "rollout.jsonl"))
    at = open_app()
    at.query_params["run"] = theirs.id  # a link to alice's run, opened by this session's user
    at.switch_page("views/runs.py").run()
    assert at.selectbox(key="runs_selected").value == theirs.id
    click(at, "runs_open_current")  # opens one's own copy of it, forked from its end
    kept = session(at)
    copy = kept.run
    assert copy.id != theirs.id and copy.origin is None and copy.parent.run_id == theirs.id
    assert kept.held_import(copy).id == theirs.id
    kept.sync_sidebar = True
    at = open_app(session=kept)
    assert not _keys(at) & set(STEPPERS) and "go_on" in _keys(at)
    assert any(f"a fork of `{theirs.id}`" in m.value for m in at.main.markdown)


def test_retry_of_a_failed_call_to_a_paid_model_shows_its_estimate(open_app):
    from agentcore.providers import REGISTRY
    from agentcore.run import Run, RunConfig
    from ui.state import Session

    model = REGISTRY["anthropic"].default_model
    run = Run.start("What is the weather in Paris?", RunConfig(provider="anthropic", model=model))
    run.stop_reason, run.error = "error", "anthropic: 529 overloaded"
    kept = Session()
    kept.add_run(run)
    at = open_app(session=kept)
    assert at.button(key="retry")
    expected = estimate_request_tokens(ModelRequest(messages=tuple(run.messages)))
    # said once, over Step and Retry alike
    assert _captions(at).count(f"The next model call sends ~{expected:,} tokens to `anthropic/{model}`") == 1

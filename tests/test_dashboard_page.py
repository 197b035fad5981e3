"""The Dashboard page (AppTest over the app and a real database): the library's figures, filters, and opening a run."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_stats import FIVE, scripted_run

from agentcore.stats import library_stats
from agentcore.store.runs import Store

PAGE = "views/dashboard.py"


@pytest.fixture
def library(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    store = Store(tmp_path / "runs.db")
    runs = [scripted_run(s) for s in FIVE]
    for run in runs:
        store.save_run(run)
    return store, runs


def test_the_dashboard_shows_the_figures_by_model_and_filters_as_the_runs_page(library, open_app):
    store, runs = library
    at = open_app(PAGE)
    table = at.dataframe[0].value
    by_model = {g.key["model"]: g for g in library_stats(store, ["model"])}
    assert list(table["model"]) == list(by_model)
    assert list(table["input"]) == [g.input_tokens for g in by_model.values()]
    assert at.metric[0].value == "5"
    at.text_input(key="dash_search").set_value("weather").run()
    assert list(at.dataframe[0].value["model"]) == ["scripted/weather"]
    assert at.metric[0].value == "2"


def test_the_most_expensive_run_opens_in_the_playground(library, open_app):
    store, runs = library
    at = open_app(PAGE)
    expensive = at.dataframe[1].value
    assert len(expensive) == len(runs)
    research = next(r for r in runs if r.config.scenario == "research")
    at.selectbox(key="dash_open_pick").set_value(research.id).run()
    at.button(key="dash_open").click().run()
    assert not at.exception
    assert at.session_state["session"].run.id == research.id

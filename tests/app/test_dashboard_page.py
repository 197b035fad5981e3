"""The Dashboard page (AppTest over the app and a real database): the library's figures, filters, and opening a run."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.runs import FIVE, scripted_run

from agentcore.store.runs import Store
from agentcore.store.stats import library_stats

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
    store.save_run(scripted_run("weather"))  # a run saved since: the page reads the library again
    at.run()
    assert at.metric[0].value == "3"


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


def test_the_error_analysis_scans_the_filtered_runs_and_filters_findings_apart_from_peoples_labels(library, open_app):
    from agentcore.annotations import make_annotation

    store, runs = library
    weather = next(r for r in runs if r.config.scenario == "weather")
    runaway = next(r for r in runs if r.config.scenario == "runaway")
    store.annotate(weather.id, make_annotation(step=1, labels=["good"]))
    at = open_app("views/errors.py")
    at.button(key="errors_scan").click().run()
    assert not at.exception
    assert any("Scanned 5 runs: 2 findings added, 0 removed" in s.value for s in at.success)
    steps = at.dataframe[1].value
    assert sorted(steps["source"]) == ["person", "scanner", "scanner"]
    assert set(steps[steps["source"] == "scanner"]["id"]) == {runaway.id}
    at.selectbox(key="errors_source").set_value("scanners").run()
    assert "good" not in list(at.dataframe[0].value["label"])
    at.selectbox(key="errors_source").set_value("loop").run()
    assert list(at.dataframe[0].value["label"]) == ["looped"]
    at.selectbox(key="errors_source").set_value("people").run()
    assert list(at.dataframe[0].value["label"]) == ["good"]
    at.selectbox(key="errors_source").set_value("All").run()
    at.button(key="errors_scan").click().run()  # again: nothing new
    assert any("0 findings added, 0 removed" in s.value for s in at.success)
    # a finding opens its run at its step
    pick = next(k for k in at.selectbox(key="errors_open_pick").options if "looped" in k)
    at.selectbox(key="errors_open_pick").select(pick).run()
    at.button(key="errors_open").click().run()
    assert at.session_state["session"].run.id == runaway.id


def test_the_scan_goes_over_the_runs_the_filters_keep(library, open_app):
    from agentcore.annotations import make_annotation

    store, runs = library
    research = next(r for r in runs if r.config.scenario == "research")
    store.annotate(research.id, make_annotation(step=1, tags=["reading"]))
    at = open_app("views/errors.py")
    at.selectbox(key="errors_tag").set_value("reading").run()
    at.button(key="errors_scan").click().run()
    assert any("Scanned 1 run: 0 findings added" in s.value for s in at.success)


def test_a_run_deleted_after_it_was_listed_is_one_line_and_the_page_stays(library, open_app):
    store, runs = library
    at = open_app(PAGE)
    gone = runs[0]
    at.selectbox(key="dash_open_pick").set_value(gone.id).run()
    store.delete_run(gone.id)  # from another tab, between the list and the click
    at.button(key="dash_open").click().run()
    assert not at.exception
    (error,) = at.error
    assert error.value.startswith("Cannot open that run: ") and gone.id in error.value and "\n" not in error.value
    assert at.session_state["session"].run is None
    assert at.title[0].value == "Dashboard"  # still the dashboard: no page switch

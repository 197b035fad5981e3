"""Which step broke it? on the playground's Steps view: the chart of pass rate by fork step, the blamed step
highlighted, every fork saved, a passing run told so, and a bad configuration as one line."""

from __future__ import annotations

import json

import pytest
from support.app import click, session

from agentcore.store.runs import Store


@pytest.fixture
def failed(open_app, steps_tab):
    """The app with the wrong_city run finished, its Steps view open."""
    at = open_app()
    at.selectbox(key="cfg_scenario").set_value("wrong_city").run()
    click(at, "start")
    click(at, "run_to_end")
    return steps_tab(at)


def ask(at, expect: str, config: str = "scripted:city_by_city", trials: int = 2):
    at.number_input(key="blame_trials").set_value(trials)
    at.text_input(key="blame_config").set_value(config)
    at.text_input(key="blame_expect").set_value(expect)
    next(b for b in at.button if b.label == "Which step broke it?").click().run()
    assert not at.exception, at.exception
    return at


@pytest.mark.long  # a whole app draw per click
def test_the_chart_shows_the_rate_falling_at_step_3_and_every_fork_is_saved(failed):
    run = session(failed).run
    assert failed.text_input(key="blame_config").value == "scripted:wrong_city"  # the run's own, to begin with
    at = ask(failed, "Tokyo")
    [spec] = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "fork" in c.proto.spec]
    rates, blamed = spec["data"]
    assert rates["x"] == [1, 2, 3, 4] and rates["y"] == [1.0, 1.0, 1.0, 0.0]
    assert [row[2] for row in rates["customdata"]] == [False, False, True, False]
    assert blamed["x"] == [3] and blamed["name"] == "blamed: step 3"
    shown = "\n".join(str(m.value) for m in at.markdown)
    assert "Blamed: step 3" in shown and "Kyoto" in shown and "Tokyo" in shown
    assert len(Store().children(run.id)) == 8
    # each point opens its forks: step 4's second trial, in the playground
    at.selectbox(key="blame_fork_step").set_value(4).run()
    at.selectbox(key="blame_fork_run").select_index(1).run()
    fork_id = at.selectbox(key="blame_fork_run").value
    assert fork_id in [c.id for c in Store().children(run.id) if c.parent_step == 4]
    next(b for b in at.button if b.label == "Open this fork").click().run()
    assert not at.exception, at.exception
    opened = session(at).run
    assert opened.id == fork_id and opened.parent.run_id == run.id and opened.parent.step == 4


@pytest.mark.long  # a whole app draw per click
def test_a_passing_run_is_told_so_and_a_bad_configuration_is_one_line(failed):
    at = ask(failed, "Paris")
    assert any("passes" in s.value and "nothing to blame" in s.value for s in at.success)
    assert not at.get("plotly_chart") or all("fork" not in c.proto.spec for c in at.get("plotly_chart"))
    at = ask(at, "Tokyo", config="nosuch-provider-x")
    assert any("unknown provider" in e.value for e in at.error)

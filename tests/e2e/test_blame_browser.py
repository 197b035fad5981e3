"""Which step broke it?, in a real headless Chromium: a failing run opened from the runs library, the question asked
on its Steps view, and the blamed step read from the chart's own data."""

from __future__ import annotations

import pytest
from support.browser import WAIT, app_over_runs, expect, idle, open_steps
from support.runs import scripted_run

from agentcore.store.runs import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHARTS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(g => ({
    title: g.layout.title.text,
    traces: g.data.map(t => ({name: t.name, x: [...t.x], y: [...t.y]})),
}))"""
DRAWN = """() => [...document.querySelectorAll('.js-plotly-plot')]
    .some(g => ((g.layout && g.layout.title && g.layout.title.text) || '').includes('fork step'))"""


def test_a_failing_run_is_asked_which_step_broke_it_and_the_chart_blames_step_3(tmp_path, browser):
    run = scripted_run("wrong_city")
    server = app_over_runs(tmp_path, [run])
    try:
        page = open_steps(browser, server.url)
        page.get_by_test_id("stExpander").locator("summary").filter(has_text="Which step broke it?").click()
        form = page.get_by_test_id("stForm")
        expect(form.get_by_role("textbox", name="Configuration")).to_have_value("scripted:wrong_city", timeout=WAIT)
        form.get_by_role("spinbutton", name="Trials per fork").fill("2")
        form.get_by_role("textbox", name="Configuration").fill("scripted:city_by_city")
        form.get_by_role("textbox", name="Expected text in the answer").fill("Tokyo")
        form.get_by_test_id("stFormSubmitButton").get_by_role("button").click()
        expect(page.get_by_text("Blamed: step 3")).to_be_visible(timeout=WAIT)
        idle(page)
        page.wait_for_function(DRAWN, timeout=WAIT)  # Plotly draws the chart after the page is idle
        [chart] = [c for c in page.evaluate(CHARTS) if "fork step" in c["title"]]
        rates, blamed = chart["traces"]
        assert rates["x"] == [1, 2, 3, 4] and rates["y"] == [1, 1, 1, 0]
        assert blamed["name"] == "blamed: step 3" and blamed["x"] == [3]
        forks = Store(tmp_path / "runs.db").children(run.id)
        assert len(forks) == 8 and {f.parent_step for f in forks} == {1, 2, 3, 4}
        page.close()
    finally:
        server.stop()

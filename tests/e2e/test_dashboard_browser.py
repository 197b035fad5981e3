"""The Dashboard page in a real headless Chromium: its charts hold the figures `agentcore stats --json` prints."""

from __future__ import annotations

import json

import pytest
from support.browser import WAIT, app_over_runs, expect
from support.runs import priced_run, scripted_run

from agentcore.cli.main import main

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def dashboard_app(tmp_path_factory):
    """The app over five scripted runs and two priced OpenAI runs, one of them reading from the prompt cache."""
    runs = [scripted_run(s) for s in ("weather", "weather", "runaway", "tool_error", "research")]
    runs += [priced_run([(1000, 100, 0, 100.0), (2000, 100, 1500, 300.0)]), priced_run([(800, 20, 0, 50.0)])]
    workdir = tmp_path_factory.mktemp("dashboard-app")
    server = app_over_runs(workdir, runs)
    yield server.url, str(workdir / "runs.db")
    server.stop()


def _figure(page, key: str) -> list[dict]:
    """The traces of the plotly chart drawn under the element keyed `key`: x, y and name, as the page holds them."""
    # the script run is over and plotly has drawn the figure: a chart read mid-run may be replaced under the reader
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
    selector = f".st-key-{key} .js-plotly-plot"
    page.wait_for_function(
        f"() => {{ const el = document.querySelector('{selector}'); return el && el.data; }}", timeout=WAIT
    )
    return page.locator(selector).evaluate(
        "el => el.data.map(t => ({name: t.name, x: Array.from(t.x), y: Array.from(t.y)}))"
    )


def _stats(capsys, db: str, by: str) -> dict[str, dict]:
    capsys.readouterr()
    assert main(["stats", "--db", db, "--by", by, "--json"]) == 0
    return {g["key"][by]: g for g in json.loads(capsys.readouterr().out)["groups"]}


def test_the_dashboards_charts_hold_the_figures_of_agentcore_stats(dashboard_app, browser, capsys):
    url, db = dashboard_app
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{url}/dashboard")
    by_model, by_provider = _stats(capsys, db, "model"), _stats(capsys, db, "provider")

    [cache] = _figure(page, "dash_cache")
    assert dict(zip(cache["x"], cache["y"], strict=True)) == pytest.approx(
        {m: g["cache_hit_rate"] for m, g in by_model.items()}
    )
    assert cache["y"][cache["x"].index("openai/gpt-4o-mini")] == pytest.approx(1500 / 3800)

    tokens = {t["name"]: sum(t["y"]) for t in _figure(page, "dash_tokens_time")}
    assert tokens == {m: g["input_tokens"] + g["output_tokens"] for m, g in by_model.items()}
    cost = {t["name"]: sum(t["y"]) for t in _figure(page, "dash_cost_time")}
    assert cost == pytest.approx({m: g["cost_usd"] for m, g in by_model.items()})
    assert cost["openai/gpt-4o-mini"] > 0

    [answered] = _figure(page, "dash_cost_answered")
    assert dict(zip(answered["x"], answered["y"], strict=True)) == pytest.approx(
        {p: g["cost_per_answered_run"] for p, g in by_provider.items()}
    )
    page.close()

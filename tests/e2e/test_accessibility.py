"""axe-core on every page of the app and on the replay file, in a real headless Chromium at 1280x720.

axe-core (npm, pinned in tests/npm-mcp/package-lock.json) is injected into each page as it stands: the
playground fresh and after a Step (the message list, then the Steps tab with the wire JSON), with the
tools paused (the decision panel), each other page with a run in the database, the lesson after its
first Step, Compare after Run all and from a stored run's step, every page again over an empty runs
database (what a first visit shows: no run, no table, no chart), Compare there after one Step all, and
the replay file exported from a run. A serious or critical violation fails the test, as
does a heading out of order or a table header with no name; the message lists every violation found, with
its impact, rule, the elements and what axe says is wrong.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.browser import (
    VIEWPORT,
    WAIT,
    app_over_runs,
    check_axe,
    choose,
    expect,
    idle,
    runaway_run,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# the playground is the root; app.py lists them (class: a teacher's, and the app's user here is one)
PAGES = ("lesson", "runs", "cost", "dashboard", "compare", "tests", "errors", "class")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The app on the scripted model over a database holding two runs, so the Runs page has a table and a diff,
    and a labelled step, so Error analysis has a chart. Its user teaches, and the runs are another's: the class
    page has a student's row to show."""
    from agentcore.annotations import make_annotation
    from agentcore.store.runs import Store

    runs = [runaway_run(messages, 10) for messages in (5, 7)]
    for run in runs:
        run.title = f"A runaway run of {len(run.messages)} messages"
    workdir = tmp_path_factory.mktemp("a11y-app")
    server = app_over_runs(workdir, runs, AGENTCORE_USER="tina", AGENTCORE_TEACHERS="tina")
    Store(workdir / "runs.db").annotate(runs[1].id, make_annotation(step=1, labels=["looped"], note="a repeat"))
    yield server.url
    server.stop()


def test_the_playground_passes_axe_before_and_after_a_step(app, browser, axe_source):
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(app)
    expect(page.locator(".st-key-start button")).to_be_visible(timeout=WAIT)
    idle(page)
    check_axe(page, axe_source, "a fresh playground")
    page.locator(".st-key-start button").click()
    step = page.get_by_role("button", name="Step", exact=True)
    expect(step).to_be_enabled(timeout=WAIT)
    step.click()
    expect(page.get_by_test_id("stMetricValue").first).to_have_text("1 / 10", timeout=WAIT)
    idle(page)
    check_axe(page, axe_source, "the playground after a Step")
    page.get_by_role("tab", name="Steps").click()
    idle(page)
    check_axe(page, axe_source, "the playground's Steps tab after a Step")
    page.close()


def test_the_decision_panel_passes_axe(app, browser, axe_source):
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(app)
    expect(page.locator(".st-key-start button")).to_be_visible(timeout=WAIT)
    idle(page)
    page.get_by_test_id("stSidebar").get_by_text("Pause before tools").click()
    idle(page)
    page.locator(".st-key-start button").click()
    page.get_by_role("button", name="Step", exact=True).click()
    expect(page.locator(".st-key-pending")).to_be_visible(timeout=WAIT)
    idle(page)
    check_axe(page, axe_source, "the playground paused before its tools")
    page.close()


def _lesson_step(page) -> str:
    """The lesson's first Step: the newest messages and both phases' code are drawn."""
    page.locator(".st-key-lesson_step button").click()
    expect(page.locator(".st-key-lesson_diagram")).to_contain_text("Step 1:", timeout=WAIT)
    return "the lesson after its first Step"


def _compare_run(page) -> str:
    """Run both columns to their end on a scenario's own prompt and show the bundle: the expected answer and each
    column's mark, charts, wire JSON and a code block of fixed height, which scrolls."""
    choose(page, page.locator(".st-key-cmp_provider_1").get_by_role("combobox"), "scripted")
    idle(page)
    # the weather scenario's own prompt: the expected answer it declares is shown, and each column is marked
    prompt = page.get_by_label("Prompt (the same for every configuration)")
    prompt.fill("What is the weather in Paris, Rome and Tokyo?")
    prompt.press("Control+Enter")
    expect(page.locator(".st-key-cmp_expected")).to_contain_text("Expected answer", timeout=WAIT)
    idle(page)
    page.get_by_role("button", name="Run all").click()
    expect(page.get_by_role("button", name="New comparison")).to_be_enabled(timeout=WAIT)
    idle(page)
    expect(page.get_by_text("contains the expected answer").first).to_be_visible()
    page.get_by_text("Show the bundle JSON").click()
    expect(page.locator(".stCode pre").last).to_be_visible(timeout=WAIT)
    return "the compare page after Run all, with its bundle shown"


THEN = {"lesson": _lesson_step, "compare": _compare_run}  # what fills a page further after its first look


@pytest.fixture(scope="module")
def empty_app(tmp_path_factory):
    """The app over a runs database that holds nothing yet, its user a teacher, so the class page is drawn too."""
    server = app_over_runs(tmp_path_factory.mktemp("a11y-empty"), AGENTCORE_USER="tina", AGENTCORE_TEACHERS="tina")
    yield server.url
    server.stop()


def _compare_step(page) -> str:
    """One Step all on the page's first configurations: each column partway, its messages, the summary and the
    wire JSON of step 1."""
    page.get_by_role("button", name="Step all").click()
    expect(page.get_by_role("heading", name="Summary")).to_be_visible(timeout=WAIT)
    return "the compare page after one Step all"


@pytest.mark.parametrize("path", ("", *PAGES))
def test_each_page_passes_axe_over_an_empty_runs_database(empty_app, browser, axe_source, path):
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{empty_app}/{path}")
    expect(page.get_by_test_id("stSidebar")).to_be_visible(timeout=WAIT)
    idle(page)
    check_axe(page, axe_source, f"the {path or 'playground'} page over an empty runs database")
    if path == "compare":
        where = _compare_step(page)
        idle(page)
        check_axe(page, axe_source, where)
    page.close()


@pytest.mark.parametrize("path", PAGES)
def test_each_page_passes_axe(app, browser, axe_source, path):
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{app}/{path}")
    expect(page.get_by_test_id("stSidebar")).to_be_visible(timeout=WAIT)
    idle(page)
    check_axe(page, axe_source, f"the {path} page")
    if path in THEN:
        where = THEN[path](page)
        idle(page)
        check_axe(page, axe_source, where)
    page.close()


def test_compare_from_a_stored_runs_step_passes_axe(app, browser, axe_source):
    """From the Runs page's Compare from here: the origin's box, then the original beside each fork after Run all.

    Last of the tests over `app`: the forks it saves would be more rows on the Runs and class pages."""
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{app}/runs")
    expect(page.get_by_role("button", name="Compare from here")).to_be_visible(timeout=WAIT)
    idle(page)
    page.get_by_role("button", name="Compare from here").click()
    expect(page.locator(".st-key-cmp_origin")).to_contain_text("From step 1 of run", timeout=WAIT)
    idle(page)
    check_axe(page, axe_source, "the compare page set up from step 1 of a stored run")
    choose(page, page.locator(".st-key-cmp_provider_1").get_by_role("combobox"), "scripted")
    idle(page)
    page.get_by_role("button", name="Run all").click()
    expect(page.get_by_role("heading", name="Summary")).to_be_visible(timeout=WAIT)
    expect(page.locator(".st-key-cmp_original")).to_be_visible()
    idle(page)
    check_axe(page, axe_source, "the compare page from step 1 of a stored run after Run all")
    page.close()


def test_the_replay_file_passes_axe(browser, axe_source, tmp_path):
    from agentcore.exports import REPLAY, export_run

    file = tmp_path / "replay.html"
    file.write_text(export_run(runaway_run(7, 10), REPLAY), "utf-8")
    context = browser.new_context(viewport=VIEWPORT, bypass_csp=True)  # the file's own policy forbids any script
    page = context.new_page()
    page.goto(Path(file).as_uri())
    expect(page.locator("body")).not_to_be_empty()
    page.wait_for_timeout(300)
    check_axe(page, axe_source, "the replay file")
    page.keyboard.press("End")  # the last frame: every message and step drawn
    page.wait_for_timeout(300)
    check_axe(page, axe_source, "the replay file at its last frame")
    context.close()

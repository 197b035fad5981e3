"""Compare from here, in a real headless Chromium: from the playground's Steps view at step 3 of a stored run, the
Compare page starts its columns at step 3, with the original's own continuation beside them, and each fork is kept
in the runs library under its parent."""

from __future__ import annotations

import pytest
from support.browser import WAIT, app_over_runs, choose, expect, idle, open_steps

from agentcore import toolbox
from agentcore.loop import Agent
from agentcore.providers import create_provider
from agentcore.providers.scripted import SCENARIOS
from agentcore.run import Run, RunConfig
from agentcore.store.runs import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def research_run() -> Run:
    scenario = SCENARIOS["research"]
    tools = toolbox.get_tools(list(scenario.tools))
    run = Run.start(scenario.prompt, RunConfig.made_for("scripted", "research", tools), title="notes research")
    Agent(create_provider("scripted", "research"), tools).run(run)
    return run


def test_compare_from_step_3_starts_the_columns_there_beside_the_original(tmp_path, browser):
    run = research_run()
    server = app_over_runs(tmp_path, [run])
    try:
        page = open_steps(browser, server.url)
        picker = page.locator(".st-key-inspect_step").get_by_role("combobox")
        picker.click()
        picker.press("Control+a")
        picker.type("3")
        picker.press("Enter")
        expect(page.get_by_role("button", name="Fork from step 3")).to_be_visible(timeout=WAIT)
        idle(page)
        page.get_by_role("button", name="Compare from here").click()

        origin = page.locator(".st-key-cmp_origin")
        expect(origin).to_contain_text(f"From step 3 of run {run.id}", timeout=WAIT)
        idle(page)
        # the first column is the model that answered step 3; the second, the scripted model on another scenario
        provider = page.locator(".st-key-cmp_provider_1").get_by_role("combobox")
        choose(page, provider, "scripted")
        idle(page)
        page.get_by_role("button", name="Run all").click()
        expect(page.get_by_role("heading", name="Summary")).to_be_visible(timeout=WAIT)
        idle(page)
        # the original's column: its own messages from step 3's reply on, nothing before it
        original = page.locator(".st-key-cmp_original")
        reply = run.messages[run.steps[2].message_count]
        first_call = reply.tool_calls[0]
        expect(original).to_contain_text(first_call.name)
        assert run.messages[0].content not in original.inner_text()  # the prompt is before step 3: not shown
        # each fork's column says where it started, and the summary counts from step 3 on
        expect(page.get_by_text("from step 3 · step", exact=False).first).to_be_visible()
        table = page.get_by_test_id("stDataFrame").first
        expect(table).to_be_visible()
        store = Store(tmp_path / "runs.db")
        forks = store.children(run.id)
        assert len(forks) == 2 and {f.parent_step for f in forks} == {3}
        cut = run.steps[2].message_count
        for summary in forks:
            fork = store.read_run(summary.id)
            assert fork.messages[:cut] == run.messages[:cut] and len(fork.steps) >= 3
        page.close()
    finally:
        server.stop()

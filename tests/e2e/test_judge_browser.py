"""A judge's call, in a real headless Chromium: a pinned test whose judge (a stand-in on 127.0.0.1) fails the run, run
on the Tests page; the failing cell opens the judge's call in the playground, where its reason is read."""

from __future__ import annotations

import pytest
from support.browser import VIEWPORT, WAIT, app_over_runs, expect, idle
from support.judge_server import JudgeServer
from testing.test_judges import judge, temperatures, write_test

from agentcore.store.runs import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_the_judges_call_opens_in_the_playground_from_the_failing_cell_with_its_reason(tmp_path, browser):
    suite = tmp_path / "suite"
    suite.mkdir()
    with JudgeServer(temperatures) as judge_server:
        write_test(suite, "recovery", judge(judge_server))
        server = app_over_runs(tmp_path, AGENTCORE_TESTS=str(suite))
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(f"{server.url}/tests")
            run = page.get_by_role("button", name="Run tests")
            expect(run).to_be_enabled(timeout=WAIT)
            idle(page)
            run.click()
            expect(page.get_by_text("FAIL: judge temps: fail: no temperature in the answer")).to_be_visible(
                timeout=WAIT
            )
            idle(page)
            page.get_by_role("button", name="Open judge temps's call").click()
            said = page.get_by_text("Judge temps's call on test recovery × replay: fail: no temperature in the answer")
            expect(said).to_be_visible(timeout=WAIT)
            idle(page)
            assert judge_server.calls == 1
            store = Store(tmp_path / "runs.db")
            (call,) = [s for s in store.list_runs() if s.title.startswith("judge temps")]
            assert store.read_run(call.id).judge_of.judge == "temps"
            # the call is an ordinary run of the playground: its final answer holds the reason, step by step
            page.get_by_role("tab", name="Messages").click()
            idle(page)
            expect(page.get_by_text("no temperature in the answer").first).to_be_visible(timeout=WAIT)
            page.screenshot(path=str(tmp_path / "judge-call.png"))
            page.close()
        finally:
            server.stop()

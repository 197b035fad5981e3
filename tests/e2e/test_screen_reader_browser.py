"""What a keyboard and screen-reader user meets, in a real headless Chromium: the live region after each Step,
icons kept from assistive technology, a message's menu named for its message and its actions reached by the
keyboard, the focus on a page's heading after moving to it, a visible focus ring on links; axe-core on every page
of a fresh install (no run, no test); and the Annotate form, which starts empty on each step and after each Save."""

from __future__ import annotations

import re

import pytest
from support.browser import VIEWPORT, WAIT, app_over_runs, check_axe, expect, idle

from agentcore.store.runs import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = ("", "lesson", "runs", "cost", "dashboard", "compare", "tests", "errors")  # "": the playground


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """The app as a new user first opens it: an empty runs database and no test files."""
    workdir = tmp_path_factory.mktemp("fresh-app")
    server = app_over_runs(workdir, AGENTCORE_TESTS=str(workdir / "tests"))
    yield server.url, workdir
    server.stop()


def _stepped(browser, url: str, steps: int = 1):
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(url)
    start = page.locator(".st-key-start button")
    expect(start).to_be_visible(timeout=WAIT)
    idle(page)
    start.click()
    step = page.get_by_role("button", name="Step", exact=True)
    for n in range(1, steps + 1):
        expect(step).to_be_enabled(timeout=WAIT)
        idle(page)
        step.click()
        expect(page.get_by_test_id("stMetricValue").first).to_have_text(re.compile(rf"^{n} / \d+$"), timeout=WAIT)
    idle(page)
    return page, step


def test_every_page_of_a_fresh_install_passes_axe(fresh, browser, axe_source):
    url, _ = fresh
    page = browser.new_page(viewport=VIEWPORT)
    for path in PAGES:
        page.goto(f"{url}/{path}")
        expect(page.get_by_test_id("stSidebar")).to_be_visible(timeout=WAIT)
        idle(page)
        check_axe(page, axe_source, f"the {path or 'playground'} page of a fresh install")
    page.close()


def test_after_each_step_the_live_region_reads_the_new_messages_and_then_the_stop_reason(fresh, browser):
    url, _ = fresh
    page, step = _stepped(browser, url)
    assert page.evaluate("() => document.querySelectorAll('#ac-live-host').length") == 1
    region = page.evaluate(
        "() => [window.agentcoreLive.getAttribute('role'), window.agentcoreLive.getAttribute('aria-live')]"
    )
    assert region == ["status", "polite"]

    def heard() -> str:
        return page.evaluate("() => window.agentcoreLive.textContent")

    page.wait_for_function("() => window.agentcoreLive.textContent.startsWith('Step 1 of ')", timeout=WAIT)
    first = heard()
    assert re.match(r"^Step 1 of \d+\. The model asked for get_weather", first)
    assert "Tool get_weather returned: " in first and first.endswith("Next: the model phase.")  # never cut off
    # the words it repeats are not found twice on the page: a text search does not reach into the region
    assert page.get_by_text("Next: the model phase.").count() == 0
    n = 1
    while step.is_enabled() and n < 10:
        n += 1
        step.click()
        expect(page.get_by_test_id("stMetricValue").first).to_have_text(re.compile(rf"^{n} / \d+$"), timeout=WAIT)
        idle(page)
    page.wait_for_function(f"() => window.agentcoreLive.textContent.startsWith('Step {n} of ')", timeout=WAIT)
    last = heard()
    assert "The model answered:" in last and last.endswith("Stop reason: answered.") and last != first
    # said once: the page draws the stop reason as text, in no alert or status of its own that would say it again
    expect(page.get_by_text("Stop reason:")).to_be_visible(timeout=WAIT)
    assert page.locator('[role="status"], [role="alert"]').filter(has_text="Stop reason").count() == 0
    page.close()


FOCUSED = """() => { const e = document.activeElement;
    const box = e && e.closest ? e.closest('[class*="st-key-"]') : null;
    return box ? [...box.classList].find(c => c.startsWith('st-key-')) : (e ? e.tagName : null); }"""


def test_the_focus_stays_on_step_and_after_the_step_that_ends_the_run_moves_to_new_run(fresh, browser):
    url, _ = fresh
    page, step = _stepped(browser, url, steps=0)
    n = 0
    while True:
        expect(step).to_be_enabled(timeout=WAIT)
        step.focus()
        page.keyboard.press("Enter")  # as a keyboard user steps
        n += 1
        expect(page.get_by_test_id("stMetricValue").first).to_have_text(re.compile(rf"^{n} / \d+$"), timeout=WAIT)
        idle(page)
        if not step.is_enabled():
            break
        page.wait_for_function(f"() => ({FOCUSED})() === 'st-key-step'", timeout=WAIT)  # kept on Step
    # the Step that ended the run disabled its own button: the focus goes to the next action, not the page's start
    page.wait_for_function(f"() => ({FOCUSED})() === 'st-key-start'", timeout=WAIT)
    page.close()


def test_icons_are_hidden_from_assistive_technology(fresh, browser):
    url, _ = fresh
    page, _ = _stepped(browser, url)
    # an icon in Markdown (the new messages' badge, a tool call's) is written as an image named "<name> icon"
    icons = 'span[role="img"][aria-label$=" icon"]'
    expect(page.locator(f'.st-key-latest {icons}[aria-label="fiber_new icon"]').first).to_be_attached()
    spoken = page.evaluate(
        f"""() => [...document.querySelectorAll('{icons}:not([aria-hidden="true"])')]
            .filter(i => {{ const o = i.closest('button, a, [role="button"], [role="tab"]');
                           if (!o) return true;
                           let rest = o.textContent;
                           for (const j of o.querySelectorAll('span[role="img"], [data-testid="stIconMaterial"]'))
                               rest = rest.replace(j.textContent, '');
                           return rest.trim() !== ''; }})
            .map(i => i.getAttribute('aria-label'))"""
    )
    assert spoken == []  # none is read out, but one that is all a button's name
    page.close()


def test_a_messages_menu_is_named_for_the_message_and_its_actions_take_the_focus(fresh, browser):
    url, _ = fresh
    page, _ = _stepped(browser, url)
    menu = page.get_by_role("button", name="Actions on message #1", exact=True)  # an icon alone: "more_vert icon"
    expect(menu).to_be_visible(timeout=WAIT)
    menu.focus()
    page.keyboard.press("Enter")
    opened = page.get_by_role("dialog", name="Actions on message #1", exact=True)
    expect(opened).to_be_visible(timeout=WAIT)
    # its actions are drawn at the end of the page: the focus goes to the first, and from it to the editor
    expect(opened.get_by_role("button", name="Edit", exact=True)).to_be_focused(timeout=WAIT)
    page.keyboard.press("Enter")
    expect(page.locator(".st-key-msg_1 textarea").first).to_be_focused(timeout=WAIT)
    expect(opened).to_have_count(0)
    page.close()


def test_moving_to_another_page_puts_the_focus_on_its_heading_and_links_show_a_focus_ring(fresh, browser):
    url, _ = fresh
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(url)
    expect(page.get_by_test_id("stSidebar")).to_be_visible(timeout=WAIT)
    idle(page)
    page.get_by_test_id("stSidebarNavLink").filter(has_text="Runs").click()
    expect(page.get_by_role("heading", name="Runs", level=1)).to_be_visible(timeout=WAIT)
    idle(page)
    page.wait_for_function(
        "() => document.activeElement && document.activeElement.tagName === 'H1'"
        " && document.activeElement.textContent.trim() === 'Runs'",
        timeout=WAIT,
    )
    # back from the heading, the keyboard reaches the navigation's links: a link's ring is drawn, 2 px and solid
    ring = None
    for _ in range(15):
        page.keyboard.press("Shift+Tab")
        ring = page.evaluate(
            "() => { const e = document.activeElement; if (!e || e.tagName !== 'A') return null;"
            " const s = getComputedStyle(e); return [s.outlineStyle, s.outlineWidth]; }"
        )
        if ring:
            break
    assert ring == ["solid", "2px"]
    page.close()


def test_the_annotate_form_labels_two_steps_and_each_keeps_only_its_own_label(fresh, browser):
    url, workdir = fresh
    page, step = _stepped(browser, url, steps=2)
    page.get_by_role("tab", name="Steps").click()
    idle(page)

    def form(n: int, field: str):
        return page.locator(f'[class*="st-key-annotate_playground_"][class*="_{n}_{field}"]')

    def pick_step(n: int) -> None:
        picker = page.locator(".st-key-inspect_step").get_by_role("combobox")
        picker.click()
        picker.press("Control+a")
        picker.type(str(n))
        picker.press("Enter")
        expect(page.get_by_text(f"Annotate step {n}", exact=True)).to_be_visible(timeout=WAIT)
        idle(page)
        page.get_by_text(f"Annotate step {n}", exact=True).click()
        expect(form(n, "note").locator("textarea")).to_be_visible(timeout=WAIT)
        idle(page)  # a redraw still running would empty the form as it is filled

    def label(n: int, name: str, note: str = "") -> None:
        box = form(n, "labels").get_by_role("combobox")
        box.click()
        box.fill(name)  # the whole name at once: typed key by key, a key lost to a redraw narrows to another label
        expect(page.get_by_role("option")).to_have_count(1, timeout=WAIT)  # the list narrowed to the label alone
        expect(page.get_by_role("option", name=name, exact=True)).to_be_visible(timeout=WAIT)
        box.press("Enter")
        box.press("Escape")
        expect(form(n, "labels").get_by_role("button", name=re.compile(r"^Remove "))).to_have_count(1)
        expect(form(n, "labels")).to_contain_text(name)
        if note:
            form(n, "note").locator("textarea").fill(note)
        form(n, "save").get_by_role("button").click()
        expect(page.get_by_text(f"Annotated step {n}.")).to_be_visible(timeout=WAIT)
        idle(page)

    pick_step(1)
    label(1, "wrong arguments", note="asked for the wrong city")
    expect(form(1, "note").locator("textarea")).to_have_value("")  # Save empties the form
    pick_step(2)
    expect(form(2, "note").locator("textarea")).to_have_value("")  # another step: nothing carried over
    expect(form(2, "labels")).not_to_contain_text("wrong arguments")
    label(2, "good")
    store = Store(workdir / "runs.db")
    found = sorted((a for r in store.list_runs() for a in store.annotations(r.id)), key=lambda a: a.step)
    assert [(a.step, a.labels, a.note) for a in found] == [
        (1, ["wrong arguments"], "asked for the wrong city"),
        (2, ["good"], ""),
    ]
    page.close()


def test_an_imported_session_opens_read_only_with_the_estimate_and_passes_axe(fresh, browser, axe_source):
    from pathlib import Path

    from agentcore.sessions import read_import, store_imported

    url, workdir = fresh  # last in this module: the library is no longer empty after it
    rollout = Path(__file__).parents[1] / "fixtures" / "sessions" / "codex_rollout.jsonl"
    raw = "\n".join(rollout.read_text().splitlines()[:9])  # a session left on a call with no result
    (run,) = store_imported(Store(workdir / "runs.db"), read_import(raw, "rollout.jsonl"))
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{url}/runs?run={run.id}")
    opener = page.locator(".st-key-runs_open_current button")
    expect(opener).to_be_visible(timeout=WAIT)
    idle(page)
    opener.click()
    panel = page.locator(".st-key-read_only")
    expect(panel).to_contain_text("Imported: read-only", timeout=WAIT)
    idle(page)
    expect(panel).to_contain_text(re.compile(r"sends more than ~[\d,]+ tokens to openai-responses/gpt-5\.5"))
    expect(panel.get_by_role("button", name="Go on with openai-responses/gpt-5.5")).to_be_enabled()
    for name in ("Step", "Run to end", "Run tools with these decisions"):
        assert page.get_by_role("button", name=name, exact=True).count() == 0, name
    check_axe(page, axe_source, "the playground on an imported session, read-only")
    page.close()

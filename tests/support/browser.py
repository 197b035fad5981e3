"""The browser tests' shared parts: Debian's Chromium through Playwright, the app over a runs database, waits."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from support.servers import ROOT, start_app

# Chromium's headless shell where Debian's chromium-headless-shell is installed (.ci/run installs it): the same Blink
# and V8 as the browser, what Playwright itself runs headless, without the full browser's display pipeline; a page
# costs it about a sixth less CPU (tests/e2e/test_accessibility.py alone: 106 CPU-s against 126). Else Debian's
# chromium, the browser itself.
SHELL = Path("/usr/bin/chromium-headless-shell")
CHROMIUM = SHELL if SHELL.exists() else Path("/usr/bin/chromium")


CHROMIUM_ARGS = [
    # text laid out as the browser lays it out: the headless shell hints glyphs fully by default, which widens text
    # enough to wrap a row of buttons the browser keeps on one line (the decision panel then ended 37 px below 720)
    "--font-render-hinting=none",
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


if not CHROMIUM.exists():
    pytest.skip(
        "no Chromium at /usr/bin/chromium-headless-shell or /usr/bin/chromium (install the Debian package "
        "chromium-headless-shell or chromium)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


expect = sync_api.expect


# the most a browser test waits for what a load or a click makes the page show (milliseconds): each wait ends at the
# event it waits for, so this is a ceiling, not a pause; with a second suite on the same two cores a page took past
# 30 s to draw, and a wait shorter than that failed tests whose behaviour held
WAIT = 120_000


def runaway_run(messages: int, budget: int):
    """An open `runaway` run of `messages` messages made by agentcore's loop, with a step budget of `budget`."""
    from agentcore import Agent, Run, RunConfig, ScriptedProvider
    from agentcore.toolbox import TOOLBOX

    run = Run.start("Find out what a step budget is.", RunConfig(scenario="runaway", model="runaway", max_steps=budget))
    run.config = run.config.model_copy(update={"tools": [TOOLBOX["search_notes"].spec()]})
    agent = Agent(ScriptedProvider(scenario="runaway"), [TOOLBOX["search_notes"]])
    while len(run.messages) < messages:
        agent.step(run)
    return run


def app_over_runs(workdir: Path, runs=(), **env: str) -> object:
    """The app on the scripted model over a runs database in `workdir` holding `runs`, with `env` set.

    No file watcher: the server must not reload the app's modules when a file in the tree changes mid-test.
    """
    from agentcore.store.runs import Store

    store = Store(workdir / "runs.db")
    for run in runs:
        store.save_run(run)
    base = {
        "AGENTCORE_PROVIDER": "scripted",
        "AGENTCORE_DB": str(workdir / "runs.db"),
        "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none",
    }
    return start_app(workdir, {**base, **env})


def new_run(browser, url: str):
    """Open the app, press New run, and return the page, its Step button and its step counter."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    start = page.locator(".st-key-start button")
    expect(start).to_be_visible(timeout=WAIT)
    start.click()
    step = page.get_by_role("button", name="Step", exact=True)
    expect(step).to_be_enabled(timeout=WAIT)
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
    return page, step, page.get_by_test_id("stMetricValue").first


ARTIFACTS = ROOT / "test-artifacts"


NPM_DIR = ROOT / "tests" / "npm-mcp"  # the tests' npm packages, axe-core among them; .ci/run installs them
AXE = NPM_DIR / "node_modules" / "axe-core" / "axe.min.js"
REPORT = ARTIFACTS / "accessibility.txt"  # every page's violations, whatever their impact


VIEWPORT = {"width": 1280, "height": 720}


FAILING = ("serious", "critical")


# rules of lesser impact that every page meets, kept so: a screen reader's outline of headings, named columns
ALSO_FAILING = ("heading-order", "empty-table-header")


def choose(page, box, option: str | None = None, *, nth: int | None = None) -> None:
    """Open the select box `box` and pick the option named `option` (or the `nth` one), once the page is idle.

    A redraw that lands between the click that opens the list and the click on an option closes the list (the
    CI machine saw it: an imported session's step picker, 30 s waiting for an option no longer drawn), so the list is
    opened again until the option shows, each try a few seconds long, all of them within WAIT.
    """
    listed = page.get_by_role("option", name=option, exact=True) if option is not None else page.get_by_role("option")
    target = listed if nth is None else listed.nth(nth)
    if nth is None:
        target = target.first
    for _ in range(WAIT // 5_000):
        expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
        if not target.is_visible():
            box.click()
        try:
            target.wait_for(state="visible", timeout=5_000)
            target.click(timeout=5_000)
        except sync_api.TimeoutError:
            continue
        return
    raise AssertionError(f"the option {option if option is not None else nth} never showed in {box}")


def open_steps(browser, url: str):
    """Open the runs library, open its first run in the playground, and return the page on that run's Steps tab."""
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{url}/runs")
    expect(page.get_by_role("button", name="Open in playground")).to_be_visible(timeout=WAIT)
    idle(page)
    page.get_by_role("button", name="Open in playground").click()
    expect(page.get_by_role("tab", name="Steps")).to_be_visible(timeout=WAIT)
    idle(page)
    page.get_by_role("tab", name="Steps").click()
    idle(page)
    return page


def row_action(page, index: int, key: str):
    """Open the menu of the message at `index` and return its button `key` (edit, del, cmp_from), drawn once it
    is open."""
    from ui.style import MENU_PREFIX

    page.locator(f".st-key-{MENU_PREFIX}{index} button").first.click()
    action = page.locator(f".st-key-{key}_{index} button")
    expect(action).to_be_visible(timeout=WAIT)
    return action


def idle(page) -> None:
    """Wait until the app has finished its script run and the browser has drawn the result."""
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
    # and nothing is still faded from the run before: Streamlit marks such elements stale and fades them back in
    # with a CSS transition (`opacity 1s ease-in 0.5s`), so a page measured mid-fade has contrast it never shows at
    # rest. Reading each element's computed opacity, and its ancestors' (a faded block fades what it holds), makes
    # the browser compute the style, transitions included: at rest, every one is 1. Run twice, a short wait apart,
    # so a transition about to start is seen started.
    settled = """() => {
        const opaque = e => { for (; e; e = e.parentElement) if (getComputedStyle(e).opacity !== '1') return false;
                              return true; };
        // the app's own style (ui/style.py: captions at AA contrast) is in the page: a redraw may take it out a moment
        const styled = [...document.querySelectorAll('.st-key-agentcore_style style')]
            .some(s => s.textContent.includes('stCaptionContainer'));
        return styled && !document.querySelector('[data-stale="true"]')
            && [...document.querySelectorAll('[data-testid="stElementContainer"]')].every(opaque)
            && document.getAnimations().every(a => a.playState !== 'running'
                || (a.effect && a.effect.getTiming().iterations === Infinity));
    }"""
    for _ in range(2):
        page.wait_for_function(settled, timeout=WAIT)
        page.wait_for_timeout(150)


def _violations(page, axe: str) -> list[dict]:
    """axe-core's violations on the page as it stands."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(content=axe)
    return page.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations")


def _report(where: str, violations: list[dict], shown: int | None = 5) -> str:
    """Counts by impact, then each violation with its first `shown` elements (None: all of them)."""
    counts = Counter()
    lines = []
    for v in violations:
        counts[v["impact"]] += len(v["nodes"])
        lines.append(f"  {v['impact']} {v['id']} ({len(v['nodes'])}): {v['help']}")
        for node in v["nodes"][:shown]:
            summary = " ".join(node.get("failureSummary", "").split())
            lines.append(f"    {' '.join(map(str, node['target']))}\n      {node['html'][:200]}\n      {summary[:300]}")
    head = ", ".join(f"{impact}: {n}" for impact, n in sorted(counts.items())) or "none"
    return f"{where}: {head}\n" + "\n".join(lines)


def _failing(violations: list[dict]) -> list[dict]:
    """The violations that fail a page: serious or critical ones, and the lesser rules kept failing."""
    return [v for v in violations if v["impact"] in FAILING or v["id"] in ALSO_FAILING]


def check_axe(page, axe: str, where: str) -> None:
    """No serious or critical violation on the page at rest; the report names every violation, whatever its impact.

    A page found failing is read again once it has been idle a second more, up to three times: what fails at rest
    fails every time, while a widget caught mid-redraw (a collapsed label drawn for a frame in a disabled widget's
    grey, which lasted past one second with two suites on two cores) does not."""
    violations = _violations(page, axe)
    for _ in range(3):
        if not _failing(violations):
            break
        page.wait_for_timeout(1000)
        idle(page)
        violations = _violations(page, axe)
    with REPORT.open("a") as report:
        report.write(_report(where, violations, shown=None) + "\n\n")
    assert not _failing(violations), _report(where, violations)

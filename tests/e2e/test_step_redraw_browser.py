"""A Step redraws the playground and nothing else, in a real headless Chromium: the script run it starts is the
page's fragment, and what the server sends for it touches neither the sidebar nor the navigation. A phase that
takes longer goes on where its Stop interrupts it: on a scripted model that streams a word every 0.4 s, Stop
ends the Step within a streamed piece. A row's actions (a tool result's mock form among them) and the insert form
are drawn once opened, not sent with each Step. A Step on a provider that takes an API key sends the key typed in
the sidebar, which only the app's run sets.

Read from the app's own messages to the browser (Streamlit's ForwardMsg, on the page's websocket): each script
run opens with a new_session message that names the fragments it runs, and each element sent carries its place,
whose first number is its root (0 the page, 1 the sidebar).
"""

from __future__ import annotations

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from support.browser import WAIT, app_over_runs, expect, new_run, runaway_run
from support.stand_in import Reply, StandIn

from agentcore.store.runs import LAST_RUN_KEY, Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SIDEBAR_ROOT = 1  # streamlit's RootContainer.SIDEBAR


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The app on the scripted model over one open `runaway` run, the run a fresh tab offers to reopen."""
    workdir = tmp_path_factory.mktemp("step-redraw-app")
    run = runaway_run(5, 10)
    server = app_over_runs(workdir, [run])
    store = Store(workdir / "runs.db")
    store.set_meta(LAST_RUN_KEY, run.id)
    store.close()
    yield server.url
    server.stop()


@pytest.fixture(scope="module")
def paced_app(tmp_path_factory):
    """The app on a scripted model that streams a word every 0.4 s, over an empty runs database."""
    server = app_over_runs(tmp_path_factory.mktemp("paced-stop-app"), AGENTCORE_SCRIPTED_PACE="0.4")
    yield server.url
    server.stop()


class Messages:
    """What the server sent the page since the last `clear`, decoded."""

    def __init__(self, page) -> None:
        self.sent: list[ForwardMsg] = []
        page.on("websocket", lambda ws: ws.on("framereceived", self._take))

    def _take(self, payload) -> None:
        if isinstance(payload, bytes):
            self.sent.append(ForwardMsg.FromString(payload))

    def clear(self) -> None:
        self.sent.clear()

    def script_runs(self) -> list[list[str]]:
        """The fragments each script run ran (an empty list: the whole app)."""
        return [list(m.metadata.run.fragment_ids) for m in self.sent if m.WhichOneof("type") == "new_session"]

    def widget_keys(self) -> list[str]:
        """The keys of the widgets sent (a widget's id ends with its key)."""
        keys = []
        for m in self.sent:
            if m.WhichOneof("type") == "delta" and m.delta.WhichOneof("type") == "new_element":
                element = m.delta.new_element
                keys.append(getattr(getattr(element, element.WhichOneof("type")), "id", "").rpartition("-")[2])
        return keys

    def roots(self) -> set[int]:
        """The roots the elements sent were drawn in."""
        return {m.metadata.delta_path[0] for m in self.sent if m.WhichOneof("type") == "delta"}


def _idle(page) -> None:
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)
    page.wait_for_timeout(300)


def test_a_step_redraws_the_page_alone_not_the_sidebar(app, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    sent = Messages(page)
    page.goto(app)
    reopen = page.locator(".st-key-reopen button")
    expect(reopen).to_be_visible(timeout=WAIT)
    _idle(page)
    reopen.click()
    step = page.locator(".st-key-step button")
    expect(step).to_be_enabled(timeout=WAIT)
    _idle(page)
    assert SIDEBAR_ROOT in sent.roots(), "the test reads no sidebar element: it could not see one redrawn"
    for number in (5, 7):  # the runaway model's call and its result each Step
        sent.clear()
        step.click()
        expect(page.locator(f".st-key-msg_{number}")).to_contain_text(f"#{number}", timeout=WAIT)
        _idle(page)
        runs = sent.script_runs()
        assert runs and all(runs), f"a Step ran the whole app, not the page's fragment alone: {runs}"
        assert SIDEBAR_ROOT not in sent.roots(), "a Step redrew the sidebar"
        assert not [m for m in sent.sent if m.WhichOneof("type") == "navigation"], "a Step redrew the navigation"
        keys = sent.widget_keys()
        assert "step" in keys, "the test reads no widget's key: it could not see a row's button sent"
        # a row's actions and the insert form are drawn once opened: a closed menu or expander is one element
        assert not [k for k in keys if k.startswith(("edit_", "del_", "cmp_from_", "mock_", "ins_"))], keys

    menu = page.locator(".st-key-row_menu_8")  # the last result's menu: its mock form is not sent with each Step
    expect(page.get_by_label("Result the model reads")).to_have_count(0)
    menu.get_by_role("button").click()
    expect(page.get_by_label("Result the model reads")).to_be_visible(timeout=WAIT)
    expect(page.get_by_role("button", name="Mock this result from here on")).to_be_visible()


def test_stop_ends_a_slow_step_within_a_streamed_piece(paced_app, browser):
    page, step, _ = new_run(browser, paced_app)
    step.click()
    live = page.locator(".st-key-live")
    expect(live).to_contain_text("characters", timeout=WAIT)  # the reply streams in the live box
    live.get_by_role("button", name="Stop").click()
    expect(page.get_by_text("Stop reason:")).to_contain_text("stopped by you", timeout=WAIT)
    expect(live).to_have_count(0)
    expect(page.locator(".st-key-msg_1")).to_have_count(0)  # the cut reply is not kept


def test_a_step_on_a_keyed_provider_sends_the_key_typed_in_the_sidebar(tmp_path, browser):
    typed = "sk-typed-in-the-sidebar"
    with StandIn(Reply.fixture("openai_stream_text.sse")) as model:
        server = app_over_runs(
            tmp_path, AGENTCORE_PROVIDER="openai", OPENAI_BASE_URL=f"{model.url}/v1", OPENAI_API_KEY=None
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(server.url)
            key = page.get_by_test_id("stSidebar").get_by_label("API key", exact=True)
            expect(key).to_be_visible(timeout=WAIT)
            key.fill(typed)
            key.press("Enter")
            expect(page.get_by_test_id("stSidebar")).to_contain_text("Key: typed", timeout=WAIT)
            page.get_by_label("Prompt", exact=True).fill("What is the weather in Paris?")
            page.locator(".st-key-start button").click()
            step = page.locator(".st-key-step button")
            expect(step).to_be_enabled(timeout=WAIT)
            _idle(page)
            step.click()
            expect(page.locator(".st-key-msg_1")).to_contain_text("sunny in Paris", timeout=WAIT)
            assert [{k.lower(): v for k, v in s.headers.items()}.get("authorization") for s in model.seen] == [
                f"Bearer {typed}"
            ]
        finally:
            server.stop()

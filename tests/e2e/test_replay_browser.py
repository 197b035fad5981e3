"""The replay page in a real headless Chromium, opened from disk: it steps through the run and asks nothing of anyone.

A scripted run and a run of the embedded model are each written as a replay file, opened as
file://, stepped to the end with the keyboard or the buttons, and what the page shows is checked
against the run: the messages of each phase, and each step's tokens sent, their growth and the
tokens received. Every request the page makes is recorded: the only one is the file itself. A
hostile run's text (a script end tag, an image with onerror, a javascript: link) shows as text,
and a secret it carried in a header and a tool result is nowhere in the file or on the page.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.browser import WAIT, expect
from support.runs import decisions_run

from agentcore import Agent, AssistantMessage, Run, RunConfig, Settings, StepRecord, Usage, create_provider, toolbox
from agentcore.accounting import account
from agentcore.messages import ToolCall, ToolMessage, UserMessage
from agentcore.providers import local_available
from agentcore.providers.base import WireExchange
from agentcore.providers.scripted import get_scenario
from agentcore.replay import frames, replay_html
from agentcore.secrets import forget_secrets, register_secret, scrub_text

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SECRET = "sk-browser-0123456789abcdefghij"
HOSTILE = (
    '</script><script>window.pwned = 1</script> <img src=x onerror="window.pwned = 2"> '
    '<a id="evil" href="javascript:window.pwned = 3">click</a> <iframe src="http://evil.invalid/"></iframe>'
)


class Replay:
    """A replay file open in a page that records every request it makes."""

    def __init__(self, chromium, run: Run, folder: Path) -> None:
        self.run = run
        self.path = folder / f"replay-{run.id}.html"
        self.path.write_text(replay_html(run), encoding="utf-8")
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page = chromium.new_page(viewport={"width": 1300, "height": 1000})
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.goto(self.path.as_uri())
        expect(self.page.locator("#position")).to_have_text(f"1 / {len(frames(run))}")

    def shown_messages(self) -> list[str | None]:
        """The text of each message in the list now, in order (None for one without text)."""
        return self.page.evaluate(
            """() => [...document.querySelectorAll("#messages > li:not([hidden])")].map(
                (item) => item.querySelector(".content")?.textContent ?? null)"""
        )

    def token_rows(self) -> list[list[str]]:
        """Each shown row of the tokens table: step, sent, growth, received."""
        return self.page.evaluate(
            """() => [...document.querySelectorAll("#tokens tbody tr:not([hidden])")].map(
                (row) => [...row.cells].slice(0, 4).map((cell) => cell.textContent))"""
        )

    def step_through(self, advance) -> None:
        """Advance frame by frame to the end, checking the messages at each frame against the run."""
        for k, frame in enumerate(frames(self.run)):
            if k:
                advance()
            expect(self.page.locator("#position")).to_have_text(f"{k + 1} / {len(frames(self.run))}")
            kept = [scrub_text(m.content) if m.content else None for m in self.run.messages[: frame["shown"]]]
            assert self.shown_messages() == kept  # as written, less any secret
        expect(self.page.locator("#next")).to_be_disabled()

    def expect_tokens_of_the_run(self) -> None:
        report = account(self.run)
        expected, previous = [], None
        for s in report.steps:
            growth = "" if previous is None else f"{s.input_tokens - previous:+,}"
            expected.append([str(s.index), f"{s.input_tokens:,}", growth, f"{s.output_tokens:,}"])
            previous = s.input_tokens
        assert self.token_rows() == expected
        last = report.steps[-1]
        summary = self.page.locator("#step-tokens").text_content()
        assert f"Step {last.index} sent {last.input_tokens:,} tokens" in summary
        assert f"received {last.output_tokens:,}" in summary

    def expect_nothing_left_the_page(self) -> None:
        assert self.requests == [self.path.as_uri()]
        assert self.errors == []


def scripted_run() -> Run:
    sc = get_scenario("research")
    tools = toolbox.get_tools(",".join(sc.tools))
    run = Run.start(sc.prompt, RunConfig(provider="scripted", model="research", tools=[t.spec() for t in tools]))
    Agent(create_provider("scripted", "research", scenario="research"), tools).run(run)
    return run


def test_a_scripted_run_steps_to_the_end_with_the_keyboard_and_loads_nothing(browser, tmp_path):
    run = scripted_run()
    replay = Replay(browser, run, tmp_path)
    keys = iter(["ArrowRight", " ", "ArrowDown"] * len(frames(run)))
    replay.step_through(lambda: replay.page.keyboard.press(next(keys)))
    replay.expect_tokens_of_the_run()
    expect(replay.page.locator("#node-done")).to_have_class("node current finished")
    expect(replay.page.locator("#caption")).to_have_text("Done: answer.")
    replay.page.keyboard.press("Home")
    assert replay.shown_messages() == [run.messages[0].content]
    replay.page.keyboard.press("End")
    assert len(replay.shown_messages()) == len(run.messages)
    request = replay.page.locator("#wire pre.body").first.text_content()
    assert json.loads(request) == run.steps[-1].wire.request  # the last request, whole
    replay.expect_nothing_left_the_page()


def test_an_embedded_model_run_steps_to_the_end_with_the_buttons_and_loads_nothing(browser, tmp_path):
    available, why = local_available()
    if not available:
        pytest.skip(f"the embedded model cannot run here: {why}")
    tools = toolbox.get_tools("get_weather")
    run = Run.start("What is the weather in Paris?", RunConfig(provider="local", tools=[t.spec() for t in tools]))
    run.config.max_steps = 2
    Agent(create_provider("local"), tools, settings=Settings(max_tokens=48)).run(run)  # a tool call fits in 48
    assert run.steps and all(not s.estimated for s in run.steps)  # the model's own token counts
    replay = Replay(browser, run, tmp_path)
    replay.step_through(lambda: replay.page.get_by_role("button", name="Next").click())
    replay.expect_tokens_of_the_run()
    replay.page.get_by_role("button", name="First").click()
    expect(replay.page.locator("#position")).to_have_text(f"1 / {len(frames(run))}")
    replay.page.get_by_role("button", name="Last").click()
    expect(replay.page.locator("#position")).to_have_text(f"{len(frames(run))} / {len(frames(run))}")
    replay.expect_nothing_left_the_page()


def test_play_steps_on_by_itself_to_the_end(browser, tmp_path):
    run = Run.start("hi")
    run.steps.append(StepRecord(index=1, usage=Usage(input_tokens=5, output_tokens=2), message_count=1))
    run.append(AssistantMessage(content="hello"))
    run.stop_reason = "answer"
    replay = Replay(browser, run, tmp_path)
    replay.page.get_by_role("button", name="Play").click()
    expect(replay.page.locator("#position")).to_have_text("3 / 3", timeout=WAIT)
    expect(replay.page.get_by_role("button", name="Play")).to_be_visible()  # back to Play, not Pause
    replay.expect_nothing_left_the_page()


def hostile_run() -> Run:
    call = ToolCall(id=f"c1{HOSTILE}", name=f"get{HOSTILE}", arguments={"q": HOSTILE})
    messages = [
        UserMessage(content=HOSTILE),
        AssistantMessage(content=HOSTILE, tool_calls=(call,)),
        ToolMessage(tool_call_id=call.id, name=call.name, content=f"{HOSTILE} {SECRET}"),
        AssistantMessage(content=f"[link](javascript:alert(1)) {HOSTILE}"),
    ]
    wire = WireExchange(
        url=f"javascript:alert(1)//{HOSTILE}",
        request_headers={"authorization": f"Bearer {SECRET}", "x-custom": SECRET},
        request={"messages": [HOSTILE]},
        status=200,
        response={"content": HOSTILE},
    )
    steps = [
        StepRecord(index=1, usage=Usage(input_tokens=40, output_tokens=9), message_count=1, wire=wire),
        StepRecord(index=2, usage=Usage(input_tokens=70, output_tokens=3), message_count=3, wire=wire),
    ]
    return Run(title=HOSTILE, messages=messages, steps=steps, stop_reason="answer")


@pytest.fixture
def secret():
    register_secret(SECRET)
    yield SECRET
    forget_secrets()


def test_a_hostile_run_shows_as_inert_text_and_holds_no_secret(browser, tmp_path, secret):
    run = hostile_run()
    replay = Replay(browser, run, tmp_path)
    replay.step_through(lambda: replay.page.keyboard.press("ArrowRight"))
    page = replay.page
    assert page.evaluate("window.pwned") is None
    assert page.locator("img, iframe, a, script[src]").count() == 0
    assert page.locator("script").count() == 2  # the data and the page's own script, nothing added
    assert HOSTILE in page.locator("#messages").text_content()
    assert HOSTILE in page.locator("#title").text_content()
    assert SECRET not in replay.path.read_text(encoding="utf-8")
    assert SECRET not in page.content()
    assert "[redacted]" in page.locator("#messages").text_content()
    headers = page.locator("#wire pre.headers").first.text_content()
    assert '"authorization": "[redacted]"' in headers and '"x-custom": "[redacted]"' in headers
    replay.expect_nothing_left_the_page()


def test_the_page_shows_each_decision_with_the_apps_badge_words_and_each_steps_model(browser, tmp_path):
    run = decisions_run()
    replay = Replay(browser, run, tmp_path)
    replay.page.keyboard.press("End")
    badges = replay.page.locator("#messages .badge").all_text_contents()
    assert badges == ["edited by a person", "edited by a person", "denied by a person", "result typed by a person"]
    originals = replay.page.locator("#messages .original").all_text_contents()
    assert 'The model asked {"expression": "1+1"}' in originals
    assert "The person changed this result; the tool returned 0+0 = 0" in originals
    expect(replay.page.locator("#step-tokens")).to_contain_text(f"Answered by {run.answered_by(run.steps[-1]).label}.")
    assert not replay.errors


def test_the_page_shows_the_annotations_of_the_step_it_is_at_as_text(browser, tmp_path):
    from agentcore.annotations import make_annotation

    sc = get_scenario("weather")
    tools = toolbox.get_tools(",".join(sc.tools))
    run = Run.start(sc.prompt, RunConfig(provider="scripted", scenario="weather", tools=[t.spec() for t in tools]))
    Agent(create_provider("scripted", "weather", scenario="weather"), tools).run(run)
    run.annotations = [make_annotation(step=len(run.steps), labels=["good"], note=HOSTILE, author="ada")]
    replay = Replay(browser, run, tmp_path)
    replay.page.keyboard.press("End")
    shown = replay.page.locator("#wire .annotation").all_text_contents()
    assert len(shown) == 1 and shown[0].startswith(f"Annotation on step {len(run.steps)} by ada: good · </script>")
    assert replay.page.evaluate("() => window.pwned") is None and replay.page.locator("#wire img").count() == 0
    replay.page.keyboard.press("Home")
    assert replay.page.locator("#wire .annotation").count() == 0  # the prompt's frame has no step
    assert not replay.errors

"""What the live region reads after a Step (ui/announcement.py): the step, each message the step added in one
sentence cut at 100 characters, all of them cut at 400, then where the run stands, never cut; Markdown marks and
addresses left out; and a hostile reply read in bounded time."""

from __future__ import annotations

import pytest

from agentcore import Agent, AssistantMessage, Run, RunConfig, ScriptedProvider, ToolCall, tool
from agentcore.messages import ToolMessage, UserMessage
from ui.announcement import MESSAGE_CHARS, announcement, plain_words, said


@tool
def lookup(key: str) -> str:
    """A record."""
    return f"record {key}"


@tool
def broken(key: str) -> str:
    """Fails."""
    raise ValueError("no such key")


def asks(*names: str, content: str | None = None) -> AssistantMessage:
    calls = tuple(ToolCall(id=f"c{i}", name=n, arguments={"key": "k"}) for i, n in enumerate(names))
    return AssistantMessage(content=content, tool_calls=calls)


def stepped(*turns: AssistantMessage, phases: int | None = None, max_steps: int = 5, **agent) -> Run:
    run = Run.start("Find k.", RunConfig(provider="scripted", model="replay", max_steps=max_steps))
    runner = Agent(ScriptedProvider(replay=list(turns)), [lookup, broken], **agent)
    if phases is None:
        runner.run(run)
    for _ in range(phases or 0):
        if run.next_phase == "model":
            runner.model_phase(run)
        else:
            runner.tools_phase(run)
    return run


def test_a_run_with_no_step_says_how_many_messages_it_starts_with():
    assert announcement(Run.start("Find k.", RunConfig())) == "Run started: 1 messages, no step yet."


def test_after_each_phase_it_says_the_step_what_it_added_and_what_comes_next():
    run = stepped(asks("lookup"), AssistantMessage(content="Found."), phases=1)
    assert announcement(run) == "Step 1 of 5. The model asked for lookup. Next: the tools phase."
    run = stepped(asks("lookup"), AssistantMessage(content="Found."), phases=2)
    assert announcement(run) == (
        "Step 1 of 5. The model asked for lookup. Tool lookup returned: record k Next: the model phase."
    )
    run = stepped(asks("lookup"), AssistantMessage(content="Found."), phases=3)
    assert announcement(run) == "Step 2 of 5. The model answered: Found. Stop reason: answered."


def test_a_failed_tool_two_calls_and_words_beside_calls_are_each_said():
    run = stepped(asks("lookup", "broken", content="Looking."), AssistantMessage(content="x"), phases=2)
    assert announcement(run) == (
        "Step 1 of 5. The model asked for lookup, broken. It said: Looking. Tool lookup returned: record k "
        "Tool broken failed: Error: broken raised ValueError: no such key Next: the model phase."
    )


def test_where_the_run_ends_is_said_for_a_budget_an_error_and_a_pause():
    run = stepped(asks("lookup"), asks("lookup"), max_steps=1)
    assert announcement(run).endswith(" Stop reason: max_steps.")
    failed = stepped(asks("lookup"), phases=3)  # the replay has no second turn: the call fails
    assert failed.stop_reason == "error"
    assert announcement(failed).endswith(" The model call failed.")
    run = Run.start("Find k.", RunConfig(provider="scripted", model="replay", breakpoints=["tool:lookup"]))
    Agent(ScriptedProvider(replay=[asks("lookup")]), [lookup]).step(run)
    assert run.paused and announcement(run).endswith(" Paused.")


def test_only_the_messages_of_the_last_step_are_said():
    run = stepped(asks("lookup"), AssistantMessage(content="Found."), phases=3)
    heard = announcement(run)
    assert "record k" not in heard and "asked for lookup" not in heard  # step 1's, not this step's


def test_each_message_is_said_whole_up_to_100_characters_then_cut():
    whole, longer = "w" * MESSAGE_CHARS, "w" * (MESSAGE_CHARS + 1)
    assert said(AssistantMessage(content=whole)) == f"The model answered: {whole}"
    assert said(AssistantMessage(content=longer)) == f"The model answered: {'w' * 99}…"
    assert said(UserMessage(content="Hello there")) == "User message: Hello there"
    assert said(ToolMessage(tool_call_id="c", name="t", content=longer)) == f"Tool t returned: {'w' * 99}…"


def test_the_messages_together_are_said_whole_up_to_400_characters_then_cut_and_where_the_run_is_never():
    from ui.announcement import ANNOUNCEMENT_CHARS

    run = stepped(AssistantMessage(content="x"), phases=1)
    start = run.steps[-1].message_count
    for size in (ANNOUNCEMENT_CHARS - 1, ANNOUNCEMENT_CHARS, ANNOUNCEMENT_CHARS + 1):
        # four sentences of "User message: " and 80 characters, then one of the characters left to reach `size`
        parts = [UserMessage(content="v" * 80) for _ in range(4)]
        parts.append(UserMessage(content="v" * (size - len(" ".join(map(said, parts))) - len(" User message: "))))
        run.messages[start:] = parts
        words = " ".join(map(said, parts))
        assert len(words) == size
        body = announcement(run).removeprefix("Step 1 of 5. ")
        assert body.endswith(" Stop reason: answered.")
        body = body.removesuffix(" Stop reason: answered.")
        assert body == (words if size <= ANNOUNCEMENT_CHARS else words[: ANNOUNCEMENT_CHARS - 1] + "…")


def test_addresses_are_said_as_a_link_and_markdown_marks_are_not_read_out():
    run = stepped(
        AssistantMessage(content="See **https://example.com/a?b=1** or ws://h.net and www.x.org now."), phases=1
    )
    assert announcement(run) == (
        "Step 1 of 5. The model answered: See (a link) or (a link) and (a link) now. Stop reason: answered."
    )
    cases = {
        "**bold** and *it* and ***both***": "bold and it and both",
        "__under__ and _one_ but snake_case_name": "under and one but snake_case_name",
        "a snake_case_ name, a ~~b~~*c*": "a snake_case_ name, a bc",
        "x *a*b and 2*3*4": "x *a*b and 2*3*4",
        "3 * 4 * 5, 6 * 7* 8 and 9 *1 * 2": "3 * 4 * 5, 6 * 7* 8 and 9 *1 * 2",
        'a [link\'s words](https://x.y/z "title") here': "a link's words here",
        "an ![image](pic.png) here": "an image here",
        "# Heading\n> quoted\n- item\n* item\n+ item": "Heading\nquoted\nitem\nitem\nitem",
        "```python\ncode\n```": "\ncode\n",
        "`span` and ~~gone~~ marks **": "span and gone marks ",
    }
    for text, words in cases.items():
        assert plain_words(text) == words, text


@pytest.mark.long
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "hostile",
    ["*a " * 100_000, "[a" * 150_000, "_x " * 100_000, "[a](" * 75_000, "![" * 150_000, "**" * 150_000],
    ids=["open emphasis", "open brackets", "open underscores", "open links", "open images", "marks"],
)
def test_a_reply_of_hundreds_of_thousands_of_open_marks_is_said_in_its_first_characters(hostile):
    run = stepped(AssistantMessage(content=hostile), phases=1)
    heard = announcement(run)  # quadratic, this took minutes: a pattern read from each mark to the text's end
    assert heard.startswith("Step 1 of 5. The model answered: ") and heard.endswith(" Stop reason: answered.")
    assert len(heard) < 200
    assert len(plain_words(hostile)) <= len(hostile)

"""A pinned test's conversation on the compare page.

Opened from a test with a simulated user, Run all plays the test's conversation on every column: its prompt, its
scripted turns, then a simulated user of each column's own, drawn with the test's seed on every one
(agentcore.testing.users.playing). Opened from step k of a stored conversation (Compare from here), Run all goes on
with it on every fork (agentcore.testing.users.going_on). Under each column's result, how its conversation went. A user played by a person
(`human`) is refused here: the playground is where a person takes the user's place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from agentcore.compare import Origin, Play
from agentcore.run import Run
from agentcore.store.runs import Store
from agentcore.testing import users

from . import safe, words

if TYPE_CHECKING:
    from agentcore.testing.pinned import PinnedTest


def _plays(test: PinnedTest | None, prompt: str) -> bool:
    """Whether the comparison is the test's conversation: a test with a user, its prompt as the test gave it."""
    return test is not None and test.user is not None and prompt.strip() == test.prompt.strip()


def refusal(test: PinnedTest | None, prompt: str) -> str | None:
    """Why this page will not compare the test's conversation, in one line (None when it will, or there is none)."""
    if not _plays(test, prompt) or not test.user.human:
        return None
    return (
        f"Test {test.name or '(unnamed)'}'s user is played by a person, so Compare cannot play it: open the test's "
        "run in the playground, where you take the user's place."
    )


def playing(test: PinnedTest | None, prompt: str) -> Play | None:
    """How Run all plays each column: the test's conversation, while the prompt is the test's; None otherwise.

    A UsageError for a simulator model no provider answers to, before any model is paid for."""
    return users.playing(test) if _plays(test, prompt) else None


def say_test(test: PinnedTest | None, prompt: str) -> None:
    """Above the columns, before they start: the conversation Run all will play, or why it will not."""
    refused = refusal(test, prompt)
    if refused is not None:
        st.warning(safe.inline(refused), icon=":material/block:")
    elif _plays(test, prompt):
        user = test.user
        turns = len(test.turns)
        st.markdown(
            f":material/forum: **Conversation** (the pinned test {safe.inline(test.name or '(unnamed)')}): Run all "
            f"plays its prompt, {words.plural(turns, 'scripted turn')}, then a simulated user "
            f"({safe.code(users.label(user))}, seed {user.seed}, up to {user.max_turns} turns) on every column, "
            "each with a user of its own. Step all steps the agent alone."
        )


def going_on(origin: Origin) -> Play | None:
    """How Run all plays each fork of a stored conversation from its step k: the conversation goes on to its end with
    a simulated user of the column's own (agentcore.testing.users.going_on); None where the agent goes on alone."""
    return users.going_on(origin)


def say_going_on(run: Run, step: int) -> None:
    """Under a comparison's origin: how a stored conversation goes on from step k, or that its agent goes on alone."""
    record = run.conversation
    if record is None:
        return
    if record.user.human:
        st.caption(
            ":material/forum: A person played this conversation's user: each fork's agent goes on alone from step "
            f"{step}; open a fork in the playground to take the user's place."
        )
        return
    st.caption(
        f":material/forum: **Conversation** with a simulated user ({safe.code(users.label(record.user))}, seed "
        f"{record.user.seed}, up to {record.user.max_turns} turns): with the steps left empty, Run all ends the turn "
        f"step {step} is in, plays the scripted turns the original had after it, then a simulated user of each "
        "column's own writes the turns left. Step all, or a number of steps, steps the agent alone."
    )


def save(store: Store, run: Run) -> None:
    """Keep a column's run with its conversation's simulator and judge runs."""
    users.save_conversation(store, run)


def say_conversation(run: Run) -> None:
    """Under a column's result: its conversation in one line (as `agentcore test` prints it) and each breach of the
    simulator's fidelity rules."""
    line = users.report(run)
    if line is None:
        return
    st.caption(f":material/forum: {safe.inline(line)}")
    for breach in run.conversation.breaches:
        st.caption(f"simulator, message {breach.message}: {safe.inline(breach.rule)}: {safe.inline(breach.why)}")

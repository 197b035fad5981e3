"""The embedded model plays both sides of a short booking conversation, the agent and its simulated user, sampling
(temperature above 0) from a seed: the same seeds give the same conversation, turn for turn."""

from __future__ import annotations

import pytest
from support.embedded import embedded_model

from agentcore.messages import UserMessage
from agentcore.providers import create_provider
from agentcore.testing.expectations import PinnedTest
from agentcore.testing.runner import parse_config, run_matrix

local, _ = embedded_model()

pytestmark = pytest.mark.slow

BOOKING = PinnedTest(
    name="booking",
    prompt="Hello, I would like to book a table for dinner.",
    system_prompt="You are a restaurant's booking assistant. Ask for the day, the time and the number of people.",
    max_steps=1,
    temperature=0.8,
    user={
        "persona": "A friendly customer who writes one short sentence at a time.",
        "goal": "Book a table for 2 people on Friday at 8pm.",
        "model": "local",
        "seed": 11,
        "max_turns": 1,
        "max_words": 15,
        "temperature": 0.8,
    },
)


def _conversation(agent_seed: int = 5):
    def seeded(name, model=None, **options):  # the agent's sampling seed, as the user's is the test's
        return create_provider(name, model, seed=agent_seed, **options)

    cell = run_matrix([BOOKING], [parse_config("local")], factory=seeded).cells[0][0]
    return cell.run


def test_the_embedded_model_plays_both_sides_and_the_same_seeds_give_the_same_conversation() -> None:
    first, second = _conversation(), _conversation()
    said = [(m.role, m.text) for m in first.messages]
    assert said == [(m.role, m.text) for m in second.messages]
    users = [m for m in first.messages if isinstance(m, UserMessage)]
    assert users[0].author.kind == "script"
    assert [m.author.kind for m in users[1:]] == ["simulator"] * first.conversation.simulated_turns
    assert first.conversation.simulated_turns >= 1  # the model wrote at least one user turn of its own
    assert first.conversation.ended_by is not None
    assert [s.config.seed for s in first.conversation.runs] == [11] * len(first.conversation.runs)
    assert all(s.config.temperature == 0.8 for s in first.conversation.runs)
    sent = first.conversation.runs[0].steps[0].wire.request  # what llama.cpp was given: the seed, and sampling
    assert (sent["seed"], sent["temperature"]) == (11, 0.8)
    assert first.config.temperature == 0.8

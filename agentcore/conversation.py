"""A conversation with a user, as data kept on its Run: who plays the user (UserSpec: a persona and a goal, played
by a model or by a person), and how it went (Conversation: who ended it and why, the simulator's stored runs, and
the rules a simulated turn broke). Each user turn's own author is on its message (messages.UserAuthor).

A run without a conversation leaves the field out of its transcript, so runs written before read as they were.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .messages import MAX_COUNT, Count, Name

HUMAN = "human"  # the user's model when a person plays the user
MAX_TURNS = 100  # simulated turns of one conversation at most
SEED_LIMIT = 2**31 - 1  # a seed every provider takes

# why a conversation ended: the simulator's end_conversation reasons, then the runner's own
EndReason = Literal["goal met", "gave up", "turns exhausted", "unclear", "agent stopped", "simulator failed"]
END_REASONS: tuple[str, ...] = ("goal met", "gave up", "turns exhausted")  # what end_conversation may say
EndedBy = Literal["simulator", "max_turns", "agent", "person"]


class UserSpec(BaseModel):
    """Who plays the user: a persona, a goal and guidelines, the model that plays them (`PROVIDER[:MODEL][@URL]`, or
    `human` for a person), its seed, how many turns it may write, and how long a turn of this persona may be."""

    model_config = ConfigDict(extra="forbid")

    persona: str = Field(min_length=1, max_length=4000)
    goal: str = Field(min_length=1, max_length=4000)
    guidelines: list[str] = Field(default_factory=list, max_length=50)
    model: Name = Field(min_length=1, max_length=300)
    seed: int = Field(default=0, ge=0, le=SEED_LIMIT)
    max_turns: int = Field(default=5, ge=1, le=MAX_TURNS)
    max_words: int = Field(default=80, ge=1, le=2000)  # the longest turn the persona writes, in words
    temperature: float | None = Field(default=None, ge=0, le=2, allow_inf_nan=False)

    @field_validator("guidelines")
    @classmethod
    def _short(cls, guidelines: list[str]) -> list[str]:
        if any(not g.strip() or len(g) > 1000 for g in guidelines):
            raise ValueError("a guideline is text of 1 to 1000 characters")
        return guidelines

    @property
    def human(self) -> bool:
        """Whether a person plays the user."""
        return self.model == HUMAN


class Breach(BaseModel):
    """A fidelity rule a simulated turn broke: the turn (its message index in the run), the rule, and why."""

    model_config = ConfigDict(extra="forbid")

    message: Count
    rule: Name = Field(max_length=100)
    why: str = Field(max_length=1000)


class Conversation(BaseModel):
    """How a conversation with a user went: the user, who ended it and why, the simulator's runs (one per call, in
    order), the rules its simulated turns broke, and whether its user turns were replayed from a recorded run."""

    model_config = ConfigDict(extra="forbid")

    user: UserSpec
    ended_by: EndedBy | None = None
    reason: EndReason | None = None
    note: str | None = Field(default=None, max_length=1000)  # what went wrong, where the reason needs it
    simulated_turns: Count = 0
    simulator_runs: list[Name] = Field(default_factory=list, max_length=MAX_COUNT)
    breaches: list[Breach] = Field(default_factory=list, max_length=10_000)
    replayed: bool = False

    @property
    def goal_met(self) -> bool:
        return self.reason == "goal met"

    @property
    def faithful(self) -> bool:
        """Whether every simulated turn kept to the persona's rules."""
        return not self.breaches

    def words(self) -> str:
        """One line: `3 simulated turns · goal met · ended by the simulator · fidelity 0 breaches`."""
        how = "replayed" if self.replayed else "simulated"
        parts = [f"{self.simulated_turns} {how} turns"]
        parts.append("goal met" if self.goal_met else f"goal not met ({self.reason or 'not ended'})")
        parts.append(f"ended by {_ENDED_BY.get(self.ended_by or '', 'no one yet')}")
        rules = sorted({b.rule for b in self.breaches})
        parts.append(
            "simulator faithful" if not rules else f"simulator broke {len(self.breaches)}×: {', '.join(rules)}"
        )
        return " · ".join(parts)


_ENDED_BY = {
    "simulator": "the simulator",
    "max_turns": "the turn limit",
    "agent": "the agent's run",
    "person": "the person",
}

"""What every benchmark binding gives a run: the Episode protocol, a skipped task, a reference call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ...messages import ToolCall
from ...run import Run
from ...tools import Tool

INSTALL = {
    "bfcl": "BFCL tasks need bfcl-eval: pip install --no-deps bfcl-eval && pip install mpmath",
    "agentdojo": "AgentDojo tasks need agentdojo: pip install agentdojo",
}


class Episode(Protocol):
    """One fresh environment of one task: its tools, its reference calls, and its grader."""

    tools: list[Tool]

    def offered(self, turn: int) -> list[str]:
        """The names of the tools offered from user turn `turn` on (0 is the prompt)."""
        ...

    def begin_turn(self, turn: int) -> None:
        """The user's message `turn` is about to be answered: calls from now on belong to it."""
        ...

    def reference(self) -> list[list[ToolCall]]:
        """The benchmark's reference calls, per user turn, with ids unique in the run."""
        ...

    def reference_answer(self, turn: int) -> str:
        """What the reference says after its calls of user turn `turn`."""
        ...

    def grade(self, run: Run) -> str | None:
        """Why the benchmark's own grader fails the run, in one line; None when it passes."""
        ...


@dataclass(frozen=True)
class Skipped:
    """A task that could not be imported as a test, and why."""

    task_id: str
    reason: str


def reference_call(k: str, name: str, arguments: dict) -> ToolCall:
    """A reference call as the model would have made it: its id, its name, its arguments."""
    return ToolCall(id=k, name=name, arguments=arguments)

"""The ground-truth model: plays a benchmark task's reference calls through the loop, turn by turn.

One of the scripted family (free, deterministic, usage estimated): for the user's message n it makes
the reference calls of turn n one per model call, in order, then answers. A task that the ground
truth cannot pass through the same loop, tools and grader as a model would proves the harness wrong
before any model is judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ..messages import AssistantMessage, ToolCall, UserMessage
from .base import BaseProvider, ModelRequest, ModelResponse, TextSink
from .scripted import scripted_response

GROUND_TRUTH = "ground-truth"


class ReferenceProvider(BaseProvider):
    """Answers each user turn with its reference calls, one per model call, then with that turn's answer."""

    name: ClassVar[str] = "scripted"
    exact_usage: ClassVar[bool] = False

    def __init__(self, turns: Sequence[Sequence[ToolCall]], answers: Sequence[str], **_: Any) -> None:
        self.turns = [list(t) for t in turns]
        self.answers = list(answers)
        super().__init__(GROUND_TRUTH)

    def complete(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelResponse:
        message = self._next(request)
        if on_text is not None and message.content:
            on_text(message.content)
        return scripted_response(GROUND_TRUTH, request, message)

    def _next(self, request: ModelRequest) -> AssistantMessage:
        users = [i for i, m in enumerate(request.messages) if isinstance(m, UserMessage)]
        turn = len(users) - 1
        since = sum(isinstance(m, AssistantMessage) for m in request.messages[users[-1] + 1 :]) if users else 0
        calls = self.turns[turn] if 0 <= turn < len(self.turns) else []
        offered = {t.name for t in request.offered_tools}
        if since < len(calls) and calls[since].name in offered:
            return AssistantMessage(content="", tool_calls=(calls[since],))
        answer = self.answers[turn] if 0 <= turn < len(self.answers) else ""
        return AssistantMessage(content=answer or "Done.")

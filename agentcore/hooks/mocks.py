"""Mock rules: a built-in hook (agentcore.hooks) that answers the calls a rule of the run's config covers.

A mock rule (RunConfig.mocks, see agentcore.hooks.specs) fixes a tool's result: a call it matches is not run, and is
recorded with the source "mocked". The first rule that matches a call answers it.
"""

from __future__ import annotations

from ..messages import ToolCall
from ..run import Run
from ..tools import ToolOutcome
from .protocol import Answer, BuiltIn, CallItem, failure_words
from .specs import MockRule

__all__ = ["MOCK", "MOCKED", "MOCK_HOOK", "mock_calls", "mock_outcome"]

MOCK_HOOK = "mock"  # the built-in hook's name
MOCKED = "mocked"  # the ToolRun source of a call a mock rule answered


def mock_outcome(rule: MockRule) -> ToolOutcome:
    """The result a mock rule gives: its text, or its error as an error result."""
    if rule.error is not None:
        return ToolOutcome.refusal(rule.error, MOCKED)
    return ToolOutcome.answer(rule.result or "")


def mock_calls(run: Run, calls: list[ToolCall]) -> list[CallItem]:
    """Answer each call the run's first matching mock rule covers with that rule's result; the others run."""
    rules = run.config.mocks
    if not rules:
        return calls
    items: list[CallItem] = []
    for call in calls:
        rule = next((r for r in rules if r.matches(call.name, call.arguments)), None)
        items.append(call if rule is None else Answer(call, mock_outcome(rule), MOCKED))
    return items if any(isinstance(i, Answer) for i in items) else calls


def _idle(run: Run) -> bool:
    return not run.config.mocks


MOCK = BuiltIn(MOCK_HOOK, mock_calls, failure_words("mock rule"), idle=_idle)

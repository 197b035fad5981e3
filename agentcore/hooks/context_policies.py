"""The context policies as built-in hooks (agentcore.hooks): what they send before each model call, and the reply's
call ids made distinct after it (agentcore.request plans and prices what they send).

Their record on the step is their own (StepRecord.sent and policy_calls), written by `record`, not a hook effect.
"""

from __future__ import annotations

from ..errors import ProviderError, UsageError
from ..messages import AssistantMessage
from ..providers.base import ModelRequest, Provider
from ..request import Outgoing, Prepared, prepare
from ..run import Run
from ..steps import StepRecord
from .protocol import BuiltIn

__all__ = ["CONTEXT_POLICIES_HOOK", "PolicyHook"]

CONTEXT_POLICIES_HOOK = "context_policies"


class PolicyHook:
    """The context policies as built-in hooks: `before_model` sends what they choose, `after_model` keeps ids distinct.

    One is made for each model phase: `prepared` keeps what the policies did, for the step's record. A summary that
    fails fails the step with "summarising the older turns: ..."; a usage error (no model to summarise) is raised.
    """

    name = CONTEXT_POLICIES_HOOK

    def __init__(self, summariser: Provider | None, outgoing: Outgoing | None = None) -> None:
        self.summariser = summariser
        self.outgoing = outgoing  # the run's own hooks on a summary request, which is a model call too
        self.prepared = Prepared([])
        self.before_model = BuiltIn(self.name, self._before_model, self._failure, self._record)
        self.after_model = BuiltIn(self.name, self._after_model)

    def _before_model(self, run: Run, request: ModelRequest) -> ModelRequest:
        self.prepared = prepare(run, self.summariser, self.outgoing)
        if self.prepared.messages is run.messages:
            return request
        return request.model_copy(update={"messages": tuple(self.prepared.messages)})

    def _after_model(self, run: Run, message: AssistantMessage) -> AssistantMessage:
        return self.prepared.reply(run.messages, message, len(run.steps) + 1, run.tool_call_ids())

    def _record(self, step: StepRecord, changed: bool) -> None:
        step.sent, step.policy_calls = self.prepared.sent, self.prepared.calls

    def _failure(self, exc: Exception) -> str:
        if isinstance(exc, UsageError):
            raise exc
        if isinstance(exc, ProviderError):
            return f"summarising the older turns: {exc.one_line()}"
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())
        name = getattr(self.summariser, "name", None) or "the model"
        return f"summarising the older turns: {name}: {detail}"

"""The one place each point's hook chain is built for a run, in one written order.

    before the model   breakpoints, context policies, loop guard, the run's named hooks, the agent's code hooks
    after the model    context policies, the run's named hooks, the agent's code hooks
    before the tools   breakpoints, loop guard, mock rules, the run's named hooks, the agent's code hooks

A breakpoint comes first, so a run pauses before anything is asked of a model or a tool; the policies choose what is
sent before any other hook sees it (a redacting hook masks what they send, summary included); the loop guard answers
a repeat before a mock rule would; the run's named hooks (RunConfig.hooks, by name from agentcore.hooks.examples) come
before the code hooks an Agent is given, so a saved run goes on with the hooks it was made with wherever it resumes.
The loop knows only the chain: what a built-in records on the step is its own (`BuiltIn.record`, `Answer.source`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..providers.base import ModelRequest, Provider
from ..run import Run
from ..steps import StepRecord
from . import breakpoints, guard, mocks
from .context_policies import PolicyHook
from .examples import named_hooks
from .protocol import BuiltIn, Passed, run_hooks

__all__ = ["ModelChain", "code_free_request", "model_chain", "tools_chain"]


@dataclass(frozen=True)
class ModelChain:
    """The chains around one model call: before it and after it."""

    before: list[Any]
    after: list[Any]

    def keep_records(self, step: StepRecord, before: Passed[Any], after: Passed[Any]) -> None:
        """Let each built-in write its own record on the step its call made."""
        for hooks, passed in ((self.before, before), (self.after, after)):
            for hook in hooks:
                if isinstance(hook, BuiltIn) and hook.record is not None:
                    hook.record(step, hook.name in passed.changed_by)


def model_chain(
    run: Run, provider: Provider | None, before: Sequence[Any] = (), after: Sequence[Any] = ()
) -> ModelChain:
    """The chains of the run's next model call; `provider` writes a summary the policies ask for.

    A new chain for each call: the policies' hook keeps what it sent for the step's record.
    """

    named = named_hooks(run.config.hooks, "before_model")

    def outgoing(request: ModelRequest) -> ModelRequest:  # a summary request, through the run's named hooks
        return run_hooks("before_model", named, run, request).value

    policies = PolicyHook(provider, outgoing)
    return ModelChain(
        before=[breakpoints.BREAK_BEFORE_MODEL, policies.before_model, guard.BEFORE_MODEL, *named, *before],
        after=[policies.after_model, *named_hooks(run.config.hooks, "after_model"), *after],
    )


def tools_chain(run: Run, code: Sequence[Any] = (), *, decided: bool = False) -> list[Any]:
    """The chain before the run's pending tools; `decided`: a person already chose for the calls, so the hooks
    that only show calls to a person (the breakpoints) are left out."""
    chain = [
        breakpoints.BREAK_BEFORE_TOOLS,
        guard.BEFORE_TOOLS,
        mocks.MOCK,
        *named_hooks(run.config.hooks, "before_tools"),
        *code,
    ]
    return [h for h in chain if not (decided and isinstance(h, BuiltIn) and h.shows_calls)]


def code_free_request(run: Run, request: ModelRequest) -> ModelRequest:
    """`request` as the run's own chain would send it, without asking a model or pausing: the loop guard and the
    run's named hooks applied, as an export of the run's next request shows it (a redacted run's masks included)."""
    hooks = [guard.BEFORE_MODEL, *named_hooks(run.config.hooks, "before_model")]
    passed = run_hooks("before_model", hooks, run, request)
    return passed.value

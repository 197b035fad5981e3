"""Breakpoints: built-in hooks (agentcore.hooks) that pause where the run's config says.

A breakpoint (RunConfig.breakpoints, see agentcore.hooks.specs) is a hook that pauses: before the model call for `step:N`,
`tokens:N`, `cost:USD` and `tool-error`, before the tools for `tool:NAME`, `args:...` and `repeat`. Its pause names
the spec (Halt.breakpoint) and, like any hook's pause, is kept on the run (Run.halts) and goes on, when a person
steps, without asking the breakpoints again at that point: a call a breakpoint stopped at runs on the next step.
`tokens` and `cost` fire once, at the step after the run passed the limit. The breakpoints come first in their
chains (agentcore.hooks.chain), so a call is stopped at before a mock rule answers it.
"""

from __future__ import annotations

import functools
import json

from ..accounting import step_costs
from ..messages import ToolCall, pending_tool_calls
from ..providers.base import ModelRequest
from ..run import Run
from .guard import answered_calls, call_key
from .protocol import BuiltIn, Pause, failure_words
from .specs import Breakpoint, parse_breakpoint

__all__ = ["BREAKPOINT_HOOK", "BREAK_BEFORE_MODEL", "BREAK_BEFORE_TOOLS", "break_before_model", "break_before_tools"]

BREAKPOINT_HOOK = "breakpoint"  # the built-in hooks' name, as a Halt names it
_BEFORE_MODEL = ("step", "tokens", "cost", "tool-error")


@functools.lru_cache(maxsize=256)
def _parsed(spec: str) -> Breakpoint:
    return parse_breakpoint(spec)


def _breakpoints(run: Run, kinds: tuple[str, ...]) -> list[Breakpoint]:
    return [bp for bp in map(_parsed, run.config.breakpoints) if bp.kind in kinds]


def _passed(before: float, now: float, limit: float) -> bool:
    return before < limit <= now


def _model_hit(run: Run, bp: Breakpoint, index: int) -> str | None:
    """Why `bp` stops the model call of step `index`, or None."""
    last = run.steps[-1] if run.steps else None
    if bp.kind == "step":
        return f"before the model call of step {index}" if bp.step == index else None
    if last is None:
        return None
    assert bp.limit is not None or bp.kind == "tool-error"
    if bp.kind == "tokens":
        now = sum(s.usage.total_tokens for s in run.steps)  # not run.usage: adding Usage values costs more per step
        if _passed(now - last.usage.total_tokens, now, bp.limit or 0):
            return f"the run has used {now:,} tokens after step {last.index}, past {bp.limit:,.0f}"
        return None
    if bp.kind == "cost":
        costs = step_costs(run)
        if any(c is None for c in costs):
            return None  # a step of unknown price: the run's cost is not known
        now = sum(c for c in costs if c is not None)
        if _passed(now - (costs[-1] or 0.0), now, bp.limit or 0):
            return f"the run has cost ${now:.6f} after step {last.index}, past ${bp.limit:g}"
        return None
    errors = [t for t in last.tool_runs if t.is_error]
    if errors:
        names = ", ".join(dict.fromkeys(t.name for t in errors))
        return f"step {last.index}'s tool result from {names} is an error, before the model reads it"
    return None


def break_before_model(run: Run, request: ModelRequest) -> ModelRequest | Pause:
    """Pause before the model call where a `step`, `tokens`, `cost` or `tool-error` breakpoint says so."""
    index = len(run.steps) + 1
    for bp in _breakpoints(run, _BEFORE_MODEL):
        why = _model_hit(run, bp, index)
        if why is not None:
            return Pause(why, breakpoint=bp.spec)
    return request


def _call_text(call: ToolCall) -> str:
    args = call.raw_arguments if call.arguments_invalid else json.dumps(call.arguments, ensure_ascii=False)
    args = args or ""
    return f"{call.name}({args if len(args) <= 120 else args[:119] + '…'}) [{call.id}]"


def break_before_tools(run: Run, calls: list[ToolCall]) -> list[ToolCall] | Pause:
    """Pause before the tools where a `tool`, `args` or `repeat` breakpoint matches a pending call."""
    breakpoints = _breakpoints(run, ("tool", "args", "repeat"))
    if not breakpoints:
        return calls
    answered = (
        answered_calls(run, pending_tool_calls(run.messages)) if any(b.kind == "repeat" for b in breakpoints) else {}
    )
    for bp in breakpoints:
        for call in calls:
            if bp.kind == "tool":
                hit = call.name == bp.tool
            elif bp.kind == "args":
                assert bp.condition is not None
                hit = not call.arguments_invalid and bp.condition.holds(call.arguments)
            else:
                hit = call_key(call) in answered
            if hit:
                said = "the same call was made before in this run: " if bp.kind == "repeat" else "call "
                return Pause(f"{said}{_call_text(call)}", breakpoint=bp.spec)
    return calls


def _idle(run: Run) -> bool:
    return not run.config.breakpoints


BREAK_BEFORE_MODEL = BuiltIn(BREAKPOINT_HOOK, break_before_model, failure_words("breakpoint"), idle=_idle)
# a breakpoint before tools shows the calls to a person: calls a person already decided have nothing more to show
BREAK_BEFORE_TOOLS = BuiltIn(
    BREAKPOINT_HOOK, break_before_tools, failure_words("breakpoint"), shows_calls=True, idle=_idle
)

"""The loop guard: a repeated identical tool call is answered from the run, and then the model must answer.

A small model, or a large one that lost its way, can ask for the same call again and again until the step
budget stops it, each step sending the whole history once more. A run's `loop_guard` setting says what
the loop does about it:

- "off": nothing;
- "warn": the call runs again, and the app warns that the model repeated it (what pinned tests check too);
- "guard": a call identical to one already answered in this run (same tool, same arguments) is not run
  again: its earlier result is returned with a note saying so, and recorded with the source "repeat";
  after the second such repeat the next model call goes with no tool to call (`ModelRequest.tool_choice`
  "none"), so the model has to answer with what it has.

The embedded model guards by default (a 135M model loops often); every other provider warns.

Both parts are built-in hooks (agentcore.hooks): `answer_repeats` before tools, whose answers carry the source
"repeat", and `answer_without_tools` before the model, which records StepRecord.tools_withheld when it withholds.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

from ..messages import AssistantMessage, ToolCall, ToolMessage, pending_tool_calls
from ..providers.base import ModelRequest
from ..run import Run, RunConfig
from ..steps import FINAL_ANSWER_TOOL, LoopGuard, StepRecord
from ..tools import ToolOutcome
from .protocol import Answer, BuiltIn, CallItem

__all__ = [
    "LOOP_GUARDS",
    "LOOP_GUARD_HOOK",
    "REPEATS_BEFORE_ANSWER",
    "REPEAT",
    "answer_repeats",
    "answer_without_tools",
    "answered_calls",
    "call_key",
    "default_mode",
    "guard_line",
    "guard_mode",
    "most_repeated",
    "repeat_count",
    "repeat_outcome",
    "withholds_tools",
]

LOOP_GUARDS: tuple[LoopGuard, ...] = ("off", "warn", "guard")
REPEAT = "repeat"  # the ToolRun source of a call the guard answered from the run
REPEATS_BEFORE_ANSWER = 2  # after this many repeats the next model call has no tool to call
LOOP_GUARD_HOOK = "loop_guard"  # the built-in hooks' name


def default_mode(provider: str) -> LoopGuard:
    """The loop guard a provider gets when the run does not set one: "guard" for the embedded model, else "warn"."""
    return "guard" if provider == "local" else "warn"


def guard_mode(config: RunConfig) -> LoopGuard:
    """The run's loop guard: its own setting, else its provider's default."""
    return config.loop_guard or default_mode(config.provider)


def call_key(call: ToolCall) -> tuple[str, str]:
    """What makes two calls identical: the tool's name and its arguments (as sent, when they were not JSON)."""
    args = call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments, sort_keys=True)
    return call.name, args


def answered_calls(run: Run, pending: Iterable[ToolCall] = ()) -> dict[tuple[str, str], ToolMessage]:
    """The first result of each call the run already answered, by call_key; the `pending` calls are left out.

    A call refused for the turn's limit was never answered, so it does not count.
    """
    skip = {c.id for c in pending}
    refused = {t.tool_call_id for s in run.steps for t in s.tool_runs if t.source == "refused"}
    calls = {
        c.id: c
        for m in run.messages
        if isinstance(m, AssistantMessage)
        for c in m.tool_calls
        if c.id not in skip and c.id not in refused
    }
    answered: dict[tuple[str, str], ToolMessage] = {}
    for m in run.messages:
        if isinstance(m, ToolMessage) and m.tool_call_id in calls:
            answered.setdefault(call_key(calls[m.tool_call_id]), m)
    return answered


def repeat_count(run: Run) -> int:
    """How many calls of the run the guard has answered from the run."""
    return sum(t.source == REPEAT for s in run.steps for t in s.tool_runs)


def repeat_outcome(earlier: ToolMessage, repeats: int) -> ToolOutcome:
    """The result of a repeated call: the earlier result and a note; `repeats` counts this one."""
    note = (
        "[Loop guard: this call is identical to one already answered in this run (same tool, same arguments); "
        "it was not run again. The result above is the earlier one.]"
    )
    if repeats >= REPEATS_BEFORE_ANSWER:
        note += " [No tools are offered on the next call: answer with what you have.]"
    content = f"{earlier.content}\n\n{note}"
    return ToolOutcome.refusal(content, REPEAT) if earlier.is_error else ToolOutcome.answer(content)


def withholds_tools(run: Run) -> bool:
    """Whether the run's next model call goes with no tool to call.

    Under "guard", when the last tools phase answered a call from the run and the run has
    answered REPEATS_BEFORE_ANSWER or more that way; a model that moves on gets its tools back.
    """
    if guard_mode(run.config) != "guard" or not run.steps or not run.tool_specs:
        return False
    last = run.steps[-1].tool_runs
    return any(t.source == REPEAT for t in last) and repeat_count(run) >= REPEATS_BEFORE_ANSWER


def answer_without_tools(run: Run, request: ModelRequest) -> ModelRequest:
    """Before the model: the request with tool_choice "none" when the guard asks for an answer (withholds_tools)."""
    return request.model_copy(update={"tool_choice": "none"}) if withholds_tools(run) else request


def answer_repeats(run: Run, calls: list[ToolCall]) -> list[CallItem]:
    """Before tools, under "guard": each call identical to one the run answered gets that result, not run again."""
    if guard_mode(run.config) != "guard":
        return calls
    answered = answered_calls(run, pending_tool_calls(run.messages))
    count = repeat_count(run)
    items: list[CallItem] = []
    for call in calls:
        earlier = answered.get(call_key(call))
        if earlier is not None and call.name != FINAL_ANSWER_TOOL:
            count += 1
            items.append(Answer(call, repeat_outcome(earlier, count), REPEAT))
        else:
            items.append(call)
    return items if any(isinstance(i, Answer) for i in items) else calls


def _record_withheld(step: StepRecord, changed: bool) -> None:
    step.tools_withheld = changed  # the guard changes a request only by withholding its tools


def _idle(run: Run) -> bool:
    return guard_mode(run.config) != "guard"  # "warn" and "off" change no request and answer no call


BEFORE_MODEL = BuiltIn(LOOP_GUARD_HOOK, answer_without_tools, record=_record_withheld, idle=_idle)
BEFORE_TOOLS = BuiltIn(LOOP_GUARD_HOOK, answer_repeats, idle=_idle)


def most_repeated(run: Run) -> tuple[str, str, int] | None:
    """The call the model made most often with identical arguments, if any was made twice: name, arguments, count."""
    calls = (c for m in run.messages if isinstance(m, AssistantMessage) for c in m.tool_calls)
    counts = Counter(map(call_key, calls)).most_common(1)
    if not counts or counts[0][1] < 2:
        return None
    (name, args), count = counts[0]
    return name, args, count


def guard_line(run: Run) -> str | None:
    """What the loop guard did or saw in the run, in one line; None when there is nothing to say."""
    mode = guard_mode(run.config)
    if mode == "guard":
        repeats = repeat_count(run)
        if not repeats:
            return None
        withheld = [s.index for s in run.steps if s.tools_withheld]
        line = f"loop guard: {repeats} repeated call{'s' if repeats != 1 else ''} answered from the run, not run again"
        if withheld:
            line += f"; step {', '.join(map(str, withheld))} asked for an answer, with no tool to call"
        return line
    repeated = most_repeated(run) if mode == "warn" else None
    if repeated is None:
        return None
    name, args, count = repeated
    return f"loop guard (warn): {name}({args}) was made {count} times; --loop-guard guard answers a repeat from the run"

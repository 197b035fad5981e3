"""Hooks around the model call: code that sees a run at a fixed point of a step and may change it, pause it or stop it.

An Agent takes three lists of plain callables, run in order at their point of each step:

- `before_model(run, request) -> ModelRequest | Pause | Stop`, before each model call: trim, redact or rewrite what
  is sent. Only the request changes: the run's own messages keep what they hold.
- `after_model(run, message) -> AssistantMessage | Pause | Stop`, after the call and before the reply is appended:
  validate or repair a reply.
- `before_tools(run, calls) -> list[ToolCall | Refuse | Answer] | Pause | Stop`, before the pending calls run (those
  a person did not decide, within the turn's limit), one item per call in the same order: a call given back with
  other arguments runs with them (the history shows what ran, its tool run keeps the model's arguments); a
  `Refuse(call, reason)` is not run and the model reads the refusal as the call's error result; an
  `Answer(call, outcome)` is not run and `outcome` is its result.

A hook returns its input unchanged to change nothing. `Pause(reason)` stops the step where it is, as "pause before
tools" does: the run records the hook, the point and the reason (`Run.halt`), and its next phase goes on from there
without asking that hook again. `Stop(reason)` ends the run with the stop reason "stopped", after a plain answer too (the next phase, if a
person asks for one, goes on the same way); a pause after the model on a reply without tool calls has nothing to
wait before, and the run ends with its answer. A hook that raises fails the step like a provider error: the run stops
with "error", `run.error` names the hook, and nothing completed is lost.

Each change a hook makes is recorded on its step (`StepRecord.hook_effects`: the hook, the point, what changed,
before and after), which the app's Steps tab, the CLI and the transcript show. A hook is named by its `name`
attribute, else its `__name__`; a second hook of one name at one point is `name#2`.

Each effect has a `kind` and a payload (`after`) a reader can apply without reading its words: what a step sent
is the history under the policies' record with every before-model "messages" effect applied in order
(agentcore.accounting.sent_at), read alike by the exports, the trace, the Cost page and the gauge.

The built-in behaviours are hooks on the same chain (agentcore.hooks.chain builds each point's chain for a run, in one
written order): the breakpoints, the context policies, the loop guard and the mock rules. A built-in (`BuiltIn`)
declares its own record on the step (`record`: the policies' StepRecord.sent and policy_calls, the guard's
tools_withheld) and the source of a call it answers (`Answer.source`: "repeat", "mocked") in place of a hook effect.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, model_validator

from ..errors import AgentcoreError
from ..messages import AssistantMessage, Name, ToolCall, numbered, validate_messages
from ..providers.base import ModelRequest
from ..secrets import scrub_text
from ..tools import ToolOutcome
from ..workers import THREADS

if TYPE_CHECKING:
    from ..run import Run
    from ..steps import StepRecord

__all__ = [
    "EFFECT_KINDS",
    "AfterModel",
    "Answer",
    "BeforeModel",
    "BeforeTools",
    "BuiltIn",
    "EffectKind",
    "HookEffect",
    "HookFailed",
    "HookPoint",
    "Passed",
    "Pause",
    "Refuse",
    "Stop",
    "failure_words",
    "hook_name",
    "hook_names",
    "idle",
    "refusal_outcome",
    "run_hooks",
]

HookPoint = Literal["before_model", "after_model", "before_tools"]  # where a hook runs in a step
# what an effect changed, so a reader applies its payload (`after`) without reading its words:
# "messages": the request's messages by their place in it ({"2": message}); "message_list": the request's whole
# list (a list of messages); "tools", "tool_choice", "settings": that part of the request; "reply": the model's
# reply; "refused", "answered", "arguments": one pending call
EffectKind = Literal[
    "messages", "message_list", "tools", "tool_choice", "settings", "reply", "refused", "answered", "arguments"
]
EFFECT_KINDS: tuple[str, ...] = EffectKind.__args__


class HookEffect(BaseModel):
    """What one hook changed at one point of a step: its kind, in words, and the changed parts before and after."""

    model_config = ConfigDict(extra="forbid")

    hook: Name
    point: HookPoint
    change: str  # one line: "request: message 2 changed", "call c1 (get_weather): arguments changed"
    kind: EffectKind | None = None  # None only where it cannot be told (a record no reader can apply)
    before: Any = None
    after: Any = None

    @model_validator(mode="before")
    @classmethod
    def _kind_of_an_older_record(cls, data: Any) -> Any:
        # records saved before effects had a kind said it only in words: read once, here, on the way in
        if isinstance(data, dict) and data.get("kind") is None and isinstance(data.get("change"), str):
            kind = _kind_from_words(data.get("point"), data["change"])
            if kind is not None:
                data = {**data, "kind": kind}
        return data

    @property
    def words(self) -> str:
        """In one line: `hook redact before model: request: message 0 changed`."""
        return f"hook {self.hook} {self.point.replace('_', ' ')}: {self.change}"


def _kind_from_words(point: Any, change: str) -> str | None:
    if point == "before_model" and change.startswith("request: "):
        if "messages became" in change:
            return "message_list"
        if change.startswith("request: message"):
            return "messages"
        part = change.removeprefix("request: ").removesuffix(" changed")
        return part if part in ("tools", "tool_choice", "settings") else None
    if point == "after_model":
        return "reply"
    if point == "before_tools":
        for kind, said in (("refused", ") refused"), ("answered", ") answered"), ("arguments", "arguments changed")):
            if said in change:
                return kind
    return None


@dataclass(frozen=True)
class Pause:
    """A hook's decision to pause the run here; `reason` is shown with the hook's name (or the breakpoint's spec)."""

    reason: str
    breakpoint: str | None = None  # the spec, when a breakpoint paused the run (agentcore.hooks.breakpoints)


@dataclass(frozen=True)
class Stop:
    """A hook's decision to end the run here (stop reason "stopped"); `reason` is shown with the hook's name."""

    reason: str


@dataclass(frozen=True)
class Refuse:
    """A pending call that is not run: the model reads `reason` as the call's error result."""

    call: ToolCall
    reason: str


@dataclass(frozen=True)
class Answer:
    """A pending call that is not run: `outcome` is its result.

    `source` is a built-in's own record of how the call was resolved (ToolSource: "repeat", "mocked"); a call a
    hook answers without one is recorded as "hook_answered", with the hook's name.
    """

    call: ToolCall
    outcome: ToolOutcome
    source: str | None = None


CallItem = ToolCall | Refuse | Answer
BeforeModel = Callable[["Run", ModelRequest], "ModelRequest | Pause | Stop"]
AfterModel = Callable[["Run", AssistantMessage], "AssistantMessage | Pause | Stop"]
BeforeTools = Callable[["Run", list[ToolCall]], "list[CallItem] | Pause | Stop"]
V = TypeVar("V")


@dataclass(frozen=True)
class BuiltIn:
    """A built-in hook: it keeps its own record on the step, not a hook effect.

    `failure` words an exception it raised (or raises one of its own, which then is not the step's failure).
    `record(step, changed)` writes its record on the step its model phase made, `changed` saying whether it changed
    the request or reply. `shows_calls`: it only shows pending calls to a person (a breakpoint), so it is not asked
    again about calls a person has already decided. `idle(run)`: the run gives it nothing to do (no breakpoint set,
    no mock rule), so it would give back what it is given: it is passed over, as it would be after asking it.
    """

    name: str
    hook: Callable[..., Any]
    failure: Callable[[Exception], str] | None = None
    record: Callable[[StepRecord, bool], None] | None = None
    shows_calls: bool = False
    idle: Callable[[Run], bool] | None = None


def failure_words(what: str) -> Callable[[Exception], str]:
    """A built-in's `failure`: the exception in one line after `what` ("breakpoint: ...")."""

    def words(exc: Exception) -> str:
        if isinstance(exc, AgentcoreError):
            return f"{what}: {exc}"
        return f"{what}: {type(exc).__name__}: {' '.join(str(exc).split())}"

    return words


class HookFailed(Exception):
    """A hook raised: the step fails with this one-line message, which names the hook."""


def hook_name(hook: Any) -> str:
    """A hook's name: its `name` attribute, else its `__name__`, else its class's name."""
    if isinstance(hook, BuiltIn):
        return hook.name
    name = getattr(hook, "name", None) or getattr(hook, "__name__", None) or type(hook).__name__
    return str(name)


def hook_names(hooks: Sequence[Any]) -> list[str]:
    """Each hook's name, the second and later hooks of one name numbered (`<lambda>#2`): a pause names one hook,
    so going on skips that one alone."""
    taken: set[str] = set()
    return [numbered(hook_name(hook), taken, sep="#") for hook in hooks]


def refusal_outcome(call: ToolCall, hook: str, reason: str) -> ToolOutcome:
    """The result the model reads for a call a hook refused."""
    text = f"Error: this call to {call.name} was refused by {hook} and not run: {reason}. Do not call it again so."
    return ToolOutcome.refusal(text, "refused_by_hook")


def idle(hook: Any, run: Run) -> bool:
    """Whether `hook` is a built-in the run gives nothing to do (BuiltIn.idle): asked, it would give back what it was
    given, so it is passed over."""
    return isinstance(hook, BuiltIn) and hook.idle is not None and hook.idle(run)


@dataclass
class Passed(Generic[V]):
    """What came out of a point's hooks: the value, the effects recorded, which hooks changed it, and any halt."""

    value: V
    effects: list[HookEffect] = field(default_factory=list)
    changed_by: list[str] = field(default_factory=list)
    halt: tuple[str, Pause | Stop] | None = None


def run_hooks(
    point: HookPoint,
    hooks: Sequence[Any],
    run: Run,
    value: V,
    skip: str | None = None,
    names: Sequence[str] | None = None,
    time_limit: float | None = None,
) -> Passed[V]:
    """Run `hooks` in order on `value`; each one gets what the one before it gave back.

    A Pause or Stop ends the chain; the hook named `skip` is not asked (it paused the run here before). A hook that
    raises (whatever it raises), gives back something of the wrong kind or a request whose message list no model
    takes, or runs past `time_limit` seconds (a code hook; the built-ins have none), raises HookFailed: one line
    of at most MAX_FAILURE_CHARS. `names` are the hooks' (`hook_names`).
    """
    passed: Passed[V] = Passed(value)
    for hook, name in zip(hooks, names or hook_names(hooks), strict=True):
        if name == skip:
            skip = None
            continue
        if idle(hook, run):
            continue
        builtin = isinstance(hook, BuiltIn)
        fn = hook.hook if builtin else hook
        try:
            result = _call(fn, run, passed.value, None if builtin else time_limit)
        except HookFailed:
            raise
        except TimeoutError:
            raise HookFailed(f"hook {name} ({point}): gave no answer within {time_limit:g} s") from None
        except Exception as exc:  # noqa: BLE001 - a broken hook fails the step, never the run
            words = hook.failure if builtin else None
            if words is not None:
                raise HookFailed(_bounded(words(exc))) from None
            raise HookFailed(_bounded(f"hook {name} ({point}): {_said(exc)}")) from None
        if isinstance(result, Pause | Stop):
            passed.halt = (name, result)
            return passed
        _check_kind(point, name, passed.value, result, builtin)
        if result is passed.value:
            continue
        effects = [] if builtin else _effects(point, name, passed.value, result)
        if effects or builtin:
            passed.changed_by.append(name)
        passed.effects.extend(effects)
        passed.value = result
    return passed


MAX_FAILURE_CHARS = 500  # a hook's failure is the run's error, shown and saved: one line, this long at most


def _call(fn: Callable[..., Any], run: Run, value: Any, time_limit: float | None) -> Any:
    """`fn(run, value)`, on a kept worker thread when a time limit is set (a hook past it keeps its worker, and
    what it gives back later is dropped)."""
    if time_limit is None:
        return fn(run, value)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(run, value)
        except BaseException as exc:  # noqa: BLE001 - raised in the calling thread, as the hook's own
            box["error"] = exc

    if not THREADS.run(target, time_limit):
        raise TimeoutError
    if "error" in box:
        raise box["error"]
    return box["value"]


def _said(exc: BaseException) -> str:
    """An exception in words, whatever its __str__ does (raises, returns megabytes), secrets scrubbed."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - an exception that cannot be printed is still said
        text = "(its message could not be read)"
    return scrub_text(" ".join(f"{type(exc).__name__}: {text[: MAX_FAILURE_CHARS * 4]}".split()))


def _bounded(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= MAX_FAILURE_CHARS else line[: MAX_FAILURE_CHARS - 1] + "…"


def _check_kind(point: HookPoint, name: str, before: Any, after: Any, builtin: bool = False) -> None:
    """Refuse what a hook gave back when it is not what its point takes."""
    wrong = None
    if point == "before_model" and not isinstance(after, ModelRequest):
        wrong = "a ModelRequest"
    elif point == "before_model" and not builtin and after.messages is not before.messages:
        try:
            broken = validate_messages(list(after.messages))
        except Exception:  # noqa: BLE001 - what a hook built by hand may not even be messages
            broken = None
        if broken is None or broken:
            what = "not a list of messages" if broken is None else f"{len(broken)} problem(s), the first: {broken[0]}"
            raise HookFailed(_bounded(f"hook {name} ({point}): gave back a message list no model takes: {what}"))
    elif point == "after_model" and not isinstance(after, AssistantMessage):
        wrong = "an AssistantMessage"
    elif point == "before_tools":
        if not isinstance(after, list) or not all(isinstance(i, ToolCall | Refuse | Answer) for i in after):
            wrong = "a list of ToolCall, Refuse or Answer"
        elif [_item_call(i).id for i in after] != [c.id for c in before]:
            wrong = "one item per pending call, in their order and with their ids"
    if wrong is not None:
        raise HookFailed(f"hook {name} ({point}): gave back {type(after).__name__}, not {wrong}, Pause or Stop")


def _item_call(item: CallItem) -> ToolCall:
    return item if isinstance(item, ToolCall) else item.call


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json") if hasattr(value, "model_dump") else value


def _effects(point: HookPoint, name: str, before: Any, after: Any) -> list[HookEffect]:
    """What a hook changed, as effects: the request's changed parts, the reply, or each call it changed."""
    if point == "before_model":
        return _request_effects(name, before, after)
    if point == "after_model":
        if before == after:
            return []
        return [
            HookEffect(
                hook=name, point=point, change="reply changed", kind="reply", before=_dump(before), after=_dump(after)
            )
        ]
    effects = []
    for call, item in zip(before, after, strict=True):
        if isinstance(item, Refuse):
            effects.append(
                HookEffect(
                    hook=name,
                    point=point,
                    change=f"call {call.id} ({call.name}) refused: {item.reason}",
                    kind="refused",
                    before=call.arguments,
                )
            )
        elif isinstance(item, Answer):
            effects.append(
                HookEffect(
                    hook=name,
                    point=point,
                    change=f"call {call.id} ({call.name}) answered, not run",
                    kind="answered",
                    before=call.arguments,
                    after=item.outcome.content,
                )
            )
        elif (item.name, item.arguments, item.raw_arguments) != (call.name, call.arguments, call.raw_arguments):
            effects.append(
                HookEffect(
                    hook=name,
                    point=point,
                    change=f"call {call.id} ({call.name}): arguments changed",
                    kind="arguments",
                    before=call.raw_arguments if call.arguments_invalid else call.arguments,
                    after=item.arguments,
                )
            )
    return effects


def _request_effects(name: str, before: ModelRequest, after: ModelRequest) -> list[HookEffect]:
    """The messages a hook changed in a request (by their place in it), and its tools, choice or settings."""
    effects = []
    old, new = before.messages, after.messages
    if len(old) == len(new):
        changed = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
        if changed:
            where = ", ".join(map(str, changed))
            effects.append(
                HookEffect(
                    hook=name,
                    point="before_model",
                    change=f"request: message{'s' if len(changed) > 1 else ''} {where} changed",
                    kind="messages",
                    before={str(i): _dump(old[i]) for i in changed},
                    after={str(i): _dump(new[i]) for i in changed},
                )
            )
    else:
        effects.append(
            HookEffect(
                hook=name,
                point="before_model",
                change=f"request: {len(old)} messages became {len(new)}",
                kind="message_list",
                before=[_dump(m) for m in old],
                after=[_dump(m) for m in new],
            )
        )
    for part in ("tools", "tool_choice", "settings"):
        a, b = getattr(before, part), getattr(after, part)
        if a != b:
            shown = (lambda v: [t.name for t in v]) if part == "tools" else _dump
            effects.append(
                HookEffect(
                    hook=name,
                    point="before_model",
                    change=f"request: {part} changed",
                    kind=part,
                    before=shown(a),
                    after=shown(b),
                )
            )
    return effects

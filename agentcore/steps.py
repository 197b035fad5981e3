"""What a step of a run records: its model call (usage, model, the wire exchange, what it sent), each tool
call's run (timing, result, who resolved it) and a hook's halt, with the words the loop and the pages use
for them; and for a conversation with a user, who plays the user (UserSpec: a persona and a goal, played by a model
or a person) and how it went (Conversation: who ended it and why, the simulator's runs, the rules a simulated turn
broke), and an LLM judge's check (JudgeExpect), which a test's expectations and a user's fidelity both name.
agentcore/run.py holds the run these records make up; each user turn's author is on its message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from .errors import AgentcoreError
from .hooks.protocol import HookEffect, HookPoint
from .messages import (
    MAX_ARGUMENT_DEPTH,
    MAX_COUNT,
    MAX_DEPTH,
    Count,
    Message,
    Millis,
    Name,
    ToolCall,
    Usage,
    nesting,
)
from .policies import PolicyCall, SentRequest
from .providers.base import WIRE_TEXT_LIMIT, WireExchange
from .tools import ToolOutcome

StopReason = Literal["answer", "max_steps", "structured", "error", "cancelled", "stopped"]  # stopped: by a hook
Phase = Literal["model", "tools", "done"]
# how a tool call was resolved: "ran" when no person was asked; the next four are a person's decisions
# on a paused run; "refused" when the call was past the turn's limit; "repeat" when the loop guard answered
# it with the result of an identical call the run had already made (see agentcore.hooks.guard); the last three
# when a hook (agentcore.hooks) changed the call's arguments and it ran, refused it, or answered it itself;
# "mocked" when a mock rule of the run fixed its result and the tool did not run (see agentcore.hooks.specs)
ToolSource = Literal[
    "ran",
    "approved",
    "edited",
    "denied",
    "typed",
    "refused",
    "repeat",
    "hook_edited",
    "hook_refused",
    "hook_answered",
    "mocked",
]
LoopGuard = Literal["off", "warn", "guard"]  # what the loop does about repeated identical calls (agentcore.hooks.guard)
BY_PERSON: dict[str, str] = {
    "approved": "approved by a person",
    "edited": "edited by a person",
    "denied": "denied by a person",
    "typed": "result typed by a person",
}
EXECUTED: frozenset[str] = frozenset({"ran", "approved", "edited", "hook_edited"})  # the tool itself ran
# a reply cut at the output limit, as each dialect says it: Chat Completions and Ollama ("length"), Anthropic
# ("max_tokens"), the Responses API (an incomplete response's "max_output_tokens")
OUTPUT_LIMIT_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})
BY_HOOK: dict[str, str] = {
    "hook_edited": "arguments changed by hook",
    "hook_refused": "refused by hook",
    "hook_answered": "answered by hook",
}
# the words the app's badges and the replay page show for a call the loop guard answered, or withheld tools from
REPEAT_WORDS = "repeat: answered from the run by the loop guard, not run again"
NO_TOOLS_WORDS = "no tools: the loop guard asked for an answer"
MOCKED_WORDS = "mocked: a mock rule fixed this result, the tool did not run"
FINAL_ANSWER_TOOL = "final_answer"
WIRE_DEPTH = MAX_DEPTH - 4  # a wire body sits four levels down in a transcript: run, steps, step, wire
# the most of a model call's response a step keeps whole, as compact JSON; the reply itself is in the messages
WIRE_KEEP_CHARS = 4 * 2**20
_WIRE_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


def now_stamp() -> str:
    """The time now, UTC, as ISO 8601 text to the millisecond: when a run, a step or a label was made."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _stored(info: ValidationInfo) -> bool:
    # read back from the runs database (transcript.from_dict(stored=True)): its wire was fitted when it was saved
    return info.context is not None and info.context.get("stored") is True


class ToolRun(BaseModel):
    """One tool call's execution in a tools phase: timing, error, and how it was resolved.

    `source` says who resolved the call (see ToolSource). For "edited", `original_arguments` keeps the
    model's own arguments and `original_raw_arguments` its text when that was not a JSON object, as a
    ToolCall keeps them; both are None otherwise. A result a person changed after the tool ran is
    "edited" too, and `original_content` keeps what the tool returned.
    """

    model_config = ConfigDict(extra="forbid")

    tool_call_id: str
    name: str
    duration_ms: Millis
    is_error: bool
    error: str | None = None
    source: ToolSource = "ran"
    original_arguments: dict[str, Any] | None = None
    original_raw_arguments: str | None = None
    original_content: str | None = Field(default=None, exclude_if=lambda v: v is None)
    started_ms: Millis = 0.0
    wire: WireExchange | None = None  # the tool's own exchange where it has one: an MCP server's tools/call
    hook: Name | None = Field(default=None, exclude_if=lambda v: v is None)  # the hook that changed or answered it

    @field_validator("source", mode="before")
    @classmethod
    def _manual_is_typed(cls, source: Any) -> Any:
        return "typed" if source == "manual" else source  # files written before the decisions had their names

    @field_validator("wire")
    @classmethod
    def _wire_fits(cls, wire: WireExchange | None, info: ValidationInfo) -> WireExchange | None:
        # as a step's wire, but two levels further down (tool_runs, the tool run): a body too deep is not kept
        depth = WIRE_DEPTH - 2
        if wire is None or _stored(info):
            return wire
        cut = {k: f"(not kept: nested more than {depth} levels deep)" for k in ("request", "response")}
        deep = {k: v for k, v in cut.items() if nesting(getattr(wire, k), depth) > depth}
        return wire.model_copy(update=deep) if deep else wire

    @model_validator(mode="after")
    def _original_fits(self) -> ToolRun:
        # like a tool call's own arguments: too deep to use, they are kept as text only
        args = self.original_arguments
        if args is not None and nesting(args, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
            self.original_arguments = {}
            if self.original_raw_arguments is None:
                self.original_raw_arguments = f"(not kept: nested more than {MAX_ARGUMENT_DEPTH} levels deep)"
        return self

    @property
    def by_person(self) -> bool:
        """Whether a person decided this call: approved, edited, denied or typed its result."""
        return self.source in BY_PERSON

    @property
    def executed(self) -> bool:
        """Whether the tool itself ran (as the model asked, or with a person's arguments)."""
        return self.source in EXECUTED

    @property
    def original_arguments_text(self) -> str | None:
        """The model's arguments before a person's edit, as text; None when they were not edited."""
        if self.original_raw_arguments is not None:
            return self.original_raw_arguments
        return None if self.original_arguments is None else json.dumps(self.original_arguments)

    def result_edited(self, original: str) -> None:
        """Record that a person changed this call's result; `original` is the result as it was.

        A result the tool returned becomes "edited" (the tool's own output kept, once); one no tool
        returned (a denial, a refusal) is now the person's own: "typed".
        """
        if self.source in EXECUTED:
            if self.original_content is None:
                self.original_content = original
            self.source = "edited"
        else:
            self.source = "typed"

    @property
    def badge(self) -> str | None:
        """The words of this call's badge, as the app and the replay show them: a person's decision or the
        loop guard's repeat; None for a call that simply ran (or was refused past the turn's limit)."""
        if self.source in BY_HOOK:
            return f"{BY_HOOK[self.source]} {self.hook}"
        if self.source == "mocked":
            return MOCKED_WORDS
        return REPEAT_WORDS if self.source == "repeat" else BY_PERSON.get(self.source)

    @property
    def decision(self) -> str | None:
        """A person's decision in words, e.g. `edited by a person; the model asked {"city": "Rome"}`; else None."""
        words = BY_PERSON.get(self.source) or (
            self.badge if self.source in BY_HOOK or self.source == "mocked" else None
        )
        original = self.original_arguments_text
        if words is not None and original is not None:
            words += f"; the model asked {original}"
        return words


class ModelRef(NamedTuple):
    """Who answered a model call: a provider's name and its model."""

    provider: str
    model: str

    @property
    def label(self) -> str:
        return f"{self.provider}/{self.model}" if self.model else self.provider


def models_label(models: Sequence[ModelRef]) -> str:
    """Who answered, in step order: `openai/gpt-4o-mini`, or `local/SmolLM2 → scripted/weather` for a mixed run."""
    return " → ".join(m.label for m in models)


def describe_models(models: Sequence[ModelRef]) -> tuple[str, str]:
    """The providers and the models in words, in step order: (`local → scripted`, `SmolLM2 → weather`)."""
    if len(models) <= 1:
        return (models[0].provider, models[0].model) if models else ("", "")
    providers = " → ".join(dict.fromkeys(m.provider for m in models))
    return providers, " → ".join(m.model or m.provider for m in models)


class Halt(BaseModel):
    """A hook's pause or stop: which hook, at which point of which step, and why.

    The run's next phase goes on from there without asking that hook again at that point.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["pause", "stop"]
    hook: Name
    point: HookPoint
    reason: str
    step: Count
    # the breakpoint spec that paused the run, when a breakpoint did (agentcore.hooks.breakpoints)
    breakpoint: Name | None = Field(default=None, exclude_if=lambda v: v is None)

    @property
    def phase(self) -> Phase:
        """The phase that goes on after it: the model phase for a halt before the model call, else the tools."""
        return "model" if self.point == "before_model" else "tools"

    @property
    def words(self) -> str:
        """In one line: `paused by hook guardrail before tools: a forbidden argument`."""
        verb = "paused" if self.kind == "pause" else "stopped"
        if self.breakpoint is not None:
            return f"{verb} at breakpoint {self.breakpoint} {self.point.replace('_', ' ')}: {self.reason}"
        return f"{verb} by hook {self.hook} {self.point.replace('_', ' ')}: {self.reason}"


class StepRecord(BaseModel):
    """What one model call cost and carried, and the tool runs that followed it."""

    model_config = ConfigDict(extra="forbid")

    index: Count
    provider: Name | None = None  # who answered this step's model call (None in files from before it was kept)
    model: Name | None = None
    usage: Usage = Usage()
    estimated: bool = False
    latency_ms: Millis = 0.0
    finish_reason: str | None = None
    message_count: Count = 0  # messages in the list when this step's model call was made
    tool_runs: list[ToolRun] = Field(default_factory=list)  # a factory: a default of [] is deep-copied each time
    wire: WireExchange | None = None
    started_at: Name = Field(default_factory=now_stamp)
    # what the call sent when a policy shaped it (None: the first message_count messages), and the calls
    # a policy made for it (the summariser's), charged to this step
    sent: SentRequest | None = Field(default=None, exclude_if=lambda v: v is None)
    policy_calls: list[PolicyCall] = Field(default_factory=list, exclude_if=lambda v: not v)
    # the loop guard made this call with no tool to call, after repeated identical calls (see agentcore.hooks.guard)
    tools_withheld: bool = Field(default=False, exclude_if=lambda v: not v)
    # what each hook changed in this step, in the order they ran (agentcore.hooks); the built-in ones keep
    # their own records above (sent, policy_calls, tools_withheld) and a tool run's source "repeat"
    hook_effects: list[HookEffect] = Field(default_factory=list, exclude_if=lambda v: not v)

    @property
    def duration_ms(self) -> float:
        """Time the step spent working: its model call plus its tools phase, to the last tool run's end."""
        return self.latency_ms + max((t.started_ms + t.duration_ms for t in self.tool_runs), default=0.0)

    @field_validator("wire")
    @classmethod
    def _wire_fits(cls, wire: WireExchange | None, info: ValidationInfo) -> WireExchange | None:
        # a server's body too large (cut_response) or nested too deeply to write back is not kept whole, so the
        # run stays writable and readable; the request needs no check (and a step no scan of the whole history):
        # it is built from messages and tool specs bounded when they are made, and a file too large for a
        # reader has its largest bodies cut as it is written (transcript.fitted_text)
        if wire is None or _stored(info):
            return wire
        wire = cut_response(wire, WIRE_KEEP_CHARS)  # first: a response cut to text needs no walk through it
        if nesting(wire.response, WIRE_DEPTH) > WIRE_DEPTH:
            return wire.model_copy(update={"response": f"(not kept: nested more than {WIRE_DEPTH} levels deep)"})
        return wire


def cut_response(wire: WireExchange, most: int) -> WireExchange:
    """The exchange, or a copy whose response over `most` characters of JSON is its first WIRE_TEXT_LIMIT, with a note.

    A small reply can be a large response (600,000 empty summary parts are 21 MB of JSON and
    three times that indented in a transcript): the copy keeps the step's transcript readable.
    """
    if isinstance(wire.response, str) and len(wire.response) <= most:
        return wire
    try:
        text = _WIRE_JSON.encode(wire.response)
    except RecursionError:  # nested too deeply to write at all: the depth check replaces it
        return wire
    if len(text) <= most:
        return wire
    note = f"… [cut: {len(text)} characters of JSON in all; a step keeps {most} whole]"
    return wire.model_copy(update={"response": text[:WIRE_TEXT_LIMIT] + note})


# -- what the loop tells its observers, and a person's decision on a pending call ----------


EventKind = Literal[
    "step_started",
    "phase_started",
    "text_delta",
    "phase_finished",
    "tool_started",
    "tool_finished",
    "step_finished",
    "run_finished",
    "error",
    "halted",  # a hook paused or stopped the run (Run.halt); `error` holds it in words
    "hook_effect",  # a hook changed the step; `text` says which and what (StepRecord.hook_effects)
]


@dataclass(frozen=True)
class Event:
    """Something that happened in the loop, for observers (the CLI, the app)."""

    kind: EventKind
    run_id: str
    step: int
    phase: Phase | None = None
    text: str | None = None
    message: Message | None = None
    tool_call: ToolCall | None = None
    outcome: ToolOutcome | None = None
    error: str | None = None


Observer = Callable[[Event], None]


class ToolDecision(BaseModel):
    """A person's decision on a pending tool call when the run pauses before tools."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["approve", "deny", "result", "edit"] = "approve"
    arguments: dict[str, Any] | None = None  # for "edit": run the tool with these instead
    content: str | None = None  # for "result": this text is the tool's result
    reason: str | None = None  # for "deny": told to the model


def decision_source(decision: ToolDecision | None, edited: bool, asked: bool) -> ToolSource:
    """How a call is recorded: the person's decision when one was asked, else "ran"."""
    if decision is not None and decision.action == "deny":
        return "denied"
    if decision is not None and decision.action == "result":
        return "typed"
    if edited:
        return "edited"
    return "approved" if asked else "ran"


# -- a conversation with a user ----------------------------------------------------------------------------

HUMAN = "human"  # the user's model when a person plays the user
MAX_TURNS = 100  # simulated turns of one conversation at most
SEED_LIMIT = 2**31 - 1  # a seed every provider takes

# why a conversation ended: the simulator's end_conversation reasons, then the runner's own
EndReason = Literal["goal met", "gave up", "turns exhausted", "unclear", "agent stopped", "simulator failed"]
END_REASONS: tuple[str, ...] = ("goal met", "gave up", "turns exhausted")  # what end_conversation may say
EndedBy = Literal["simulator", "max_turns", "agent", "person"]


JUDGE_NAME = r"^[A-Za-z0-9_.-]{1,40}$"
MAX_RUBRIC_CHARS = 8000
_ON = re.compile(r"^(answer|run|step (\d{1,6}))$")
_PASS = re.compile(r"^(yes|score\s*>=\s*(-?\d{1,9}(?:\.\d{1,6})?))$")


class JudgeExpect(BaseModel):
    """An LLM judge's check (agentcore.testing.judges): a model reads the rubric and the part of the run named
    (`answer`, the whole `run`, or `step N`) and gives a verdict; the check passes on `yes`, or on a score of at
    least K (`score>=K`). `model` is PROVIDER:MODEL[@BASE_URL]; a key from the environment goes only to the
    provider's own address or the one its operator set (agentcore.providers.keys), never to one a file names."""

    name: str = Field(default="judge", pattern=JUDGE_NAME)
    rubric: str = Field(min_length=1, max_length=MAX_RUBRIC_CHARS)
    model: str = Field(min_length=1, max_length=500)
    on: str = "answer"
    pass_: str = Field(default="yes", alias="pass")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("rubric")
    @classmethod
    def _said(cls, rubric: str) -> str:
        if not rubric.strip():
            raise ValueError("a judge needs a rubric: what a passing answer does, in words")
        return rubric

    @field_validator("model")
    @classmethod
    def _model(cls, model: str) -> str:
        from .providers import get_info

        head, at, base_url = model.strip().partition("@")  # as compare.parse_spec reads a configuration
        provider = head.partition(":")[0].strip()
        try:
            if not provider or (at and not base_url.strip()):
                raise AgentcoreError("expected PROVIDER[:MODEL][@BASE_URL], e.g. openai:gpt-4o-mini")
            get_info(provider)  # a registered provider only: a file never names code to load
        except AgentcoreError as exc:
            raise ValueError(f"judge model {model[:80]!r}: {exc}") from None
        return model

    @field_validator("on")
    @classmethod
    def _on(cls, on: str) -> str:
        found = _ON.match(" ".join(on.split()))
        if found is None or (found.group(2) is not None and int(found.group(2)) < 1):
            raise ValueError(f"judge on {on[:40]!r}: answer, run, or step N (N from 1)")
        return found.group(0)

    @field_validator("pass_")
    @classmethod
    def _pass(cls, rule: str) -> str:
        found = _PASS.match(rule.strip())
        if found is None:
            raise ValueError(f"judge pass {rule[:40]!r}: yes, or score>=K (a number)")
        return "yes" if found.group(2) is None else f"score>={float(found.group(2)):g}"

    @property
    def step(self) -> int | None:
        """The step named by `on: step N`; None for the answer or the whole run."""
        return int(self.on.split()[1]) if self.on.startswith("step ") else None

    @property
    def min_score(self) -> float | None:
        """K of `pass: score>=K`; None for a yes/no judge."""
        return float(self.pass_.removeprefix("score>=")) if self.pass_ != "yes" else None


class UserSpec(BaseModel):
    """Who plays the user: a persona, a goal and guidelines, the model that plays them (`PROVIDER[:MODEL][@URL]`, or
    `human` for a person), its seed, how many turns it may write, how long a turn of this persona may be, and the
    judge each simulated turn is put to beside the fidelity rules (`fidelity`: a judge check, which reads the turn)."""

    model_config = ConfigDict(extra="forbid")

    persona: str = Field(min_length=1, max_length=4000)
    goal: str = Field(min_length=1, max_length=4000)
    guidelines: list[str] = Field(default_factory=list, max_length=50)
    model: Name = Field(min_length=1, max_length=300)
    seed: int = Field(default=0, ge=0, le=SEED_LIMIT)
    max_turns: int = Field(default=5, ge=1, le=MAX_TURNS)
    max_words: int = Field(default=80, ge=1, le=2000)  # the longest turn the persona writes, in words
    temperature: float | None = Field(default=None, ge=0, le=2, allow_inf_nan=False)
    fidelity: JudgeExpect | None = Field(default=None, exclude_if=lambda v: v is None)

    @field_validator("guidelines")
    @classmethod
    def _short(cls, guidelines: list[str]) -> list[str]:
        if any(not g.strip() or len(g) > 1000 for g in guidelines):
            raise ValueError("a guideline is text of 1 to 1000 characters")
        return guidelines

    @field_validator("fidelity")
    @classmethod
    def _reads_the_turn(cls, judge: JudgeExpect | None) -> JudgeExpect | None:
        if judge is not None and (judge.on != "answer" or judge.min_score is not None):
            raise ValueError("a fidelity judge reads each simulated turn and says yes or no: it takes no `on` or score")
        return judge

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
    judge_run: Name | None = Field(default=None, exclude_if=lambda v: v is None)  # the fidelity judge's call


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
    # the step budget of each of the agent's turns (the test's max_steps), for whoever goes on with the conversation
    turn_steps: int | None = Field(default=None, strict=True, ge=1, le=MAX_COUNT, exclude_if=lambda v: v is None)
    # the fidelity judge's calls, one per simulated turn it read (the user's `fidelity`)
    judge_runs: list[Name] = Field(default_factory=list, max_length=MAX_COUNT, exclude_if=lambda v: not v)
    # the simulator's and the judge's Run objects made in this process, for whoever saves the conversation; not part
    # of the record
    _runs: list = PrivateAttr(default_factory=list)
    _judge_calls: list = PrivateAttr(default_factory=list)

    @property
    def runs(self) -> list:
        """The simulator's runs made in this process (the stored ones are named by `simulator_runs`)."""
        return self._runs

    @property
    def judge_calls(self) -> list:
        """The fidelity judge's runs made in this process (the stored ones are named by `judge_runs`)."""
        return self._judge_calls

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
        parts = [f"{self.simulated_turns} {how} turn" + ("" if self.simulated_turns == 1 else "s")]
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

"""A run as plain data: its config, messages, step records, status and lineage.

Everything the app and the CLI show is derived from a Run; the transcript is its JSON.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from .annotations import Annotation
from .errors import MessageListError, UsageError
from .hooks.specs import BreakpointSpec, MockRule
from .messages import (
    MAX_COUNT,
    AssistantMessage,
    Count,
    Message,
    Name,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
    first_difference,
    pending_tool_calls,
    validate_messages,
)
from .policies import ContextPolicies
from .providers.base import ReasoningEffort
from .steps import (
    FINAL_ANSWER_TOOL,
    OUTPUT_LIMIT_REASONS,
    Conversation,
    Halt,
    LoopGuard,
    ModelRef,
    Phase,
    StepRecord,
    StopReason,
    now_stamp,
)
from .tools import ToolSpec


class RunConfig(BaseModel):
    """How a run is set up. Holds no credential: keys live only in the provider object."""

    model_config = ConfigDict(extra="forbid")

    provider: Name = "scripted"
    model: Name = ""
    base_url: Name | None = None
    scenario: Name | None = None
    system_prompt: str | None = None
    tools: list[ToolSpec] = []
    max_steps: int = Field(default=10, ge=1, le=MAX_COUNT)
    concurrency: bool = True
    pause_before_tools: bool = False  # a step stops after the model phase; the next step runs the tools
    temperature: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    # the most tokens a call may write, when the run set it; left out of the plain form when unset
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_COUNT, exclude_if=lambda v: v is None)
    seed: int | None = Field(default=None, exclude_if=lambda v: v is None)  # sampling seed, where the API has one
    final_answer_schema: dict[str, Any] | None = None
    # what each model call sends (see agentcore.policies); left out of the plain form when unset
    policies: ContextPolicies | None = Field(default=None, exclude_if=lambda v: v is None)
    # the reasoning settings of every call (see Settings), left out of the plain form when unset
    thinking_budget: int | None = Field(default=None, ge=1, exclude_if=lambda v: v is None)
    reasoning_effort: ReasoningEffort | None = Field(default=None, exclude_if=lambda v: v is None)
    # None: the provider's default ("guard" for the embedded model, "warn" elsewhere); left out of the plain form
    loop_guard: LoopGuard | None = Field(default=None, exclude_if=lambda v: v is None)
    # the registered hooks the run goes with, by name (agentcore.hooks.examples), so a saved run resumes with them
    hooks: list[Name] = Field(default_factory=list, exclude_if=lambda v: not v)
    # where the run pauses (agentcore.hooks.specs' specs: "tool:get_weather", "step:3", "cost:0.01", ...)
    breakpoints: list[BreakpointSpec] = Field(default_factory=list, max_length=100, exclude_if=lambda v: not v)
    # the tool results fixed by a rule, the first rule that matches a call answering it (agentcore.hooks.specs)
    mocks: list[MockRule] = Field(default_factory=list, max_length=1000, exclude_if=lambda v: not v)

    @classmethod
    def made_for(
        cls, provider: str, model: str, tools: Sequence[Any] = (), base_url: str | None = None, **fields: Any
    ) -> RunConfig:
        """The config of a run of `provider`'s `model` with these tools (Tool objects or specs): the one builder of
        the command line, Compare and the test runner. The scripted model's scenario is its model's name unless `scenario` says; each
        list of `fields` is copied and its repeats dropped where order is all that counts (hooks, breakpoints)."""
        for name in ("hooks", "breakpoints"):
            if name in fields:
                fields[name] = list(dict.fromkeys(fields[name]))
        fields.setdefault("scenario", model if provider == "scripted" and model else None)
        return cls(
            provider=provider,
            model=model,
            base_url=base_url,
            tools=[t if isinstance(t, ToolSpec) else t.spec() for t in tools],
            **fields,
        )

    @property
    def next_model(self) -> ModelRef:
        """Who the run's next model call goes to: its provider, and its model (the scripted provider's is its
        scenario). The one answer of the app, the runs server and every other place a stored run goes on."""
        return ModelRef(self.provider, (self.scenario or self.model) if self.provider == "scripted" else self.model)


class ForkOrigin(BaseModel):
    """The run and step a fork was taken from."""

    model_config = ConfigDict(extra="forbid")

    run_id: Name
    step: Count


class SubagentLink(BaseModel):
    """A subagent's run tied to the step of its parent run that started it: kept on both runs.

    On the parent (`Run.subagents`) `run_id` is the subagent's run; on the subagent (`Run.spawned_by`) it is
    the parent's. `tool_call_id` is the call that started it, where the file says which. A simulated user's call
    (agentcore.testing.users) is linked the same way, as `user`: it wrote the parent's next user turn.
    """

    model_config = ConfigDict(extra="forbid")

    run_id: Name
    step: Count
    tool_call_id: Name | None = None
    as_user: bool = Field(default=False, exclude_if=lambda v: not v)


class JudgedLink(BaseModel):
    """On a judge's call (agentcore.testing.judges): the run it judged, the step its verdict is on, the judge's name."""

    model_config = ConfigDict(extra="forbid")

    run_id: Name
    step: Count
    judge: Name
    message: Count | None = Field(default=None, exclude_if=lambda v: v is None)  # a fidelity judge's: the user turn


class ImportOrigin(BaseModel):
    """Where an imported run came from: the file's format and name, the session, and what was kept aside."""

    model_config = ConfigDict(extra="forbid")

    format: Name  # "atif", "claude-code", "codex"
    file: Name
    session_id: Name | None = None
    agent: Name | None = None  # the tool that wrote the file and its version, e.g. "claude-code 2.1.7"
    # what the file held that is not part of the run, in words: "2 file-history-snapshot lines skipped"
    notes: list[Name] = Field(default_factory=list, max_length=100)


class Run(BaseModel):
    """A whole run as data: config, messages, step records, status and lineage."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    id: Name = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    title: str | None = None
    created_at: Name = Field(default_factory=now_stamp)
    config: RunConfig = RunConfig()
    messages: list[Message] = []
    steps: list[StepRecord] = []
    stop_reason: StopReason | None = None
    error: str | None = None
    final_output: Any = None
    parent: ForkOrigin | None = None
    # the hook that paused or stopped the run where it stands (agentcore.hooks); None when none did
    halt: Halt | None = Field(default=None, exclude_if=lambda v: v is None)
    # every pause or stop a hook or a breakpoint made, in order: `halt` is cleared when the run goes on, these stay
    halts: list[Halt] = Field(default_factory=list, exclude_if=lambda v: not v)
    # people's labels on its steps (see agentcore.annotations); a fork starts with none
    annotations: list[Annotation] = Field(default_factory=list, exclude_if=lambda v: not v)
    # a session imported from another agent's files (agentcore.sessions): where it came from, the subagent runs
    # its steps started, and for a subagent the parent run and step that started it
    origin: ImportOrigin | None = Field(default=None, exclude_if=lambda v: v is None)
    subagents: list[SubagentLink] = Field(default_factory=list, max_length=1000, exclude_if=lambda v: not v)
    spawned_by: SubagentLink | None = Field(default=None, exclude_if=lambda v: v is None)
    # a judge's call: the run and step it judged (its verdict is a label there, authored `judge:NAME`)
    judge_of: JudgedLink | None = Field(default=None, exclude_if=lambda v: v is None)
    # a conversation with a (simulated or human) user: who played the user, how it ended (agentcore.steps.Conversation)
    conversation: Conversation | None = Field(default=None, exclude_if=lambda v: v is None)
    # the messages known valid, kept (not their ids, which a later message may reuse); a cache, not state
    _trusted: list[Message] = PrivateAttr(default_factory=list)
    # the messages whose tool call ids _call_ids holds (kept, so that no id of theirs is reused); a cache, not state
    _ids_read: list[Message] = PrivateAttr(default_factory=list)
    _call_ids: set[str] = PrivateAttr(default_factory=set)

    @field_validator("steps")
    @classmethod
    def _numbered_in_order(cls, steps: list[StepRecord]) -> list[StepRecord]:
        # each step is read by its index (step n is steps[n - 1]): a gap or a repeat would read another step
        for position, step in enumerate(steps):
            if step.index != position + 1:
                raise ValueError(
                    f"step {position + 1} has index {step.index}; steps are numbered 1, 2, 3, ... in order"
                )
        return steps

    @model_validator(mode="after")
    def _annotations_on_its_steps(self) -> Run:
        for a in self.annotations:
            if a.step > len(self.steps):
                raise ValueError(f"annotation {a.id} is on step {a.step}; the run has {len(self.steps)} steps")
        return self

    @field_validator("final_output")
    @classmethod
    def _plain_json(cls, value: Any) -> Any:
        # a structured answer is written as JSON, which has no NaN or infinity: refused, not silently nulled
        todo = [value]
        while todo:
            item = todo.pop()
            if isinstance(item, float) and not math.isfinite(item):
                raise ValueError(f"holds {item!r}, which JSON cannot represent")
            if isinstance(item, dict | list):
                todo.extend(item.values() if isinstance(item, dict) else item)
        return value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Run) and self.__dict__ == other.__dict__

    __hash__ = None  # mutable

    @classmethod
    def start(cls, prompt: str, config: RunConfig | None = None, **kwargs: Any) -> Run:
        """A new run: the system prompt (if any) and the user's prompt."""
        config = config or RunConfig()
        messages: list[Message] = []
        if config.system_prompt:
            messages.append(SystemMessage(content=config.system_prompt))
        messages.append(UserMessage(content=prompt))
        return cls(config=config, messages=messages, title=kwargs.pop("title", None) or prompt[:80], **kwargs)

    @property
    def next_phase(self) -> Phase:
        """Which phase runs next, derived from the messages alone."""
        if not self.messages:
            return "done"
        last = self.messages[-1]
        if isinstance(last, AssistantMessage):
            return "tools" if pending_tool_calls(self.messages) else "done"
        return "model"

    @property
    def budget_left(self) -> int:
        """Model calls the step budget still allows."""
        return max(0, self.config.max_steps - len(self.steps))

    @property
    def can_call_model(self) -> bool:
        """Whether the model phase may run now: it is next, the budget allows it, no structured answer ends the run."""
        return self.next_phase == "model" and self.budget_left > 0 and self.stop_reason != "structured"

    @property
    def paused(self) -> bool:
        """Waiting before its tools phase because the run pauses before tools, or where a hook paused it."""
        phase = self.next_phase
        if self.config.pause_before_tools and phase == "tools":
            return True
        return self.halt is not None and self.halt.kind == "pause" and phase == self.halt.phase

    @property
    def ending(self) -> str | None:
        """The stop reason as it may be said: "output limit" for a plain reply the model was cut off in (its last
        step's finish reason says so in any dialect), which the loop stops on as on an answer but is not one."""
        if self.stop_reason == "answer" and self.steps and self.steps[-1].finish_reason in OUTPUT_LIMIT_REASONS:
            return "output limit"
        return self.stop_reason

    @property
    def finished(self) -> bool:
        """Nothing can happen next: an answer, a filled schema, or the step budget used up."""
        phase = self.next_phase
        return phase == "done" or (phase == "model" and not self.can_call_model)

    @property
    def link_lines(self) -> list[str]:
        """Where an imported run came from and its subagent links, in words: what the app and `runs show` say."""
        lines = []
        if self.origin is not None:
            agent = f", written by {self.origin.agent}" if self.origin.agent else ""
            lines.append(f"imported from the {self.origin.format} file {self.origin.file}{agent}")
        if self.spawned_by is not None:
            call = f" by call {self.spawned_by.tool_call_id}" if self.spawned_by.tool_call_id else ""
            link = self.spawned_by
            what = "simulated user of run" if link.as_user else "subagent of run"
            lines.append(f"{what} {link.run_id}, started at its step {link.step}{call}")
        for link in self.subagents:
            call = f" (call {link.tool_call_id})" if link.tool_call_id else ""
            lines.append(f"step {link.step} started subagent run {link.run_id}{call}")
        if self.judge_of is not None:
            j = self.judge_of
            if j.message is not None:
                lines.append(
                    f"fidelity judge {j.judge}'s call on the simulated user's turn {j.message} of run {j.run_id}"
                )
            else:
                lines.append(f"judge {j.judge}'s call on step {j.step} of run {j.run_id}")
        return lines

    def answered_by(self, step: StepRecord) -> ModelRef:
        """The provider and model that answered a step; the run's config for a step that did not record it."""
        if step.provider is None:
            return ModelRef(self.config.provider, self.config.model)
        return ModelRef(step.provider, step.model or "")

    @property
    def models(self) -> list[ModelRef]:
        """The distinct providers and models that answered the steps, in step order (empty before a step)."""
        return list(dict.fromkeys(self.answered_by(s) for s in self.steps))

    @property
    def mixed(self) -> bool:
        """Whether more than one provider or model answered the steps."""
        return len(self.models) > 1

    @property
    def usage(self) -> Usage:
        return sum((s.usage for s in self.steps), Usage())

    @property
    def duration_ms(self) -> float:
        """Time the run spent working: each step's model call plus its tools phase, to the last tool run's end."""
        return sum((s.duration_ms for s in self.steps), 0.0)

    @property
    def tool_specs(self) -> list[ToolSpec]:
        """The tools offered to the model: the run's tools, plus the final-answer tool when a schema is set."""
        specs = list(self.config.tools)
        if self.config.final_answer_schema is not None:
            specs.append(
                ToolSpec(
                    name=FINAL_ANSWER_TOOL,
                    description="Give the final answer in the required structure. Call it once, when done.",
                    parameters=self.config.final_answer_schema,
                )
            )
        return specs

    def check_messages(self) -> None:
        """Raise MessageListError if the message list breaks a provider's rules (checked again only after a change)."""
        # the private attributes read from their own dict: `self._trusted` would first fail a lookup (an
        # AttributeError made and dropped) before pydantic's __getattr__ finds it, and these run every phase
        trusted, messages = self.__pydantic_private__["_trusted"], self.messages
        # list equality, in C: each message is first compared by identity (only one replaced is compared by its
        # fields, and a message equal to the one checked breaks no rule the check did not already find); this
        # runs every phase over the whole, growing list
        if trusted == messages:
            return
        violations = validate_messages(messages)
        if violations:
            raise MessageListError(violations)
        self._trusted = list(messages)

    def tool_call_ids(self) -> set[str]:
        """Every tool call id the messages hold. Shared: do not change it.

        Read once per message as the list grows; a list changed in any other way (a message replaced, removed
        or inserted, the list itself replaced) is read again whole.
        """
        private, messages = self.__pydantic_private__, self.messages  # as in check_messages
        read = private["_ids_read"]
        if read != messages[: len(read)]:  # in C, by identity first, as in check_messages
            # new objects: a copy of this run may share the old ones
            read = private["_ids_read"] = []
            private["_call_ids"] = set()
        ids = private["_call_ids"]
        for message in messages[len(read) :]:
            if isinstance(message, AssistantMessage):
                ids.update(c.id for c in message.tool_calls)
            read.append(message)
        return ids

    def append(self, message: Message) -> None:
        """Append a message the loop made; it keeps the list valid, so the check need not run again."""
        self.messages.append(message)
        self.__pydantic_private__["_trusted"].append(message)  # as in check_messages

    def replace_messages(self, messages: list[Message]) -> None:
        """Take a person's edit of the message list that changes nothing a model call answered (see edit_forks).

        A tool result they changed is recorded as theirs on its tool run.
        """
        _record_edited_results(self.steps, self.messages, messages)
        self.messages = list(messages)

    def edit_forks(self, messages: list[Message]) -> bool:
        """Whether replacing the message list with `messages` changes what a model call already answered."""
        return bool(self.steps) and first_difference(self.messages, messages) < self.steps[-1].message_count

    def final_answer(self) -> str | None:
        """The text of the last assistant message when the run ended on an answer."""
        for m in reversed(self.messages):
            if isinstance(m, AssistantMessage):
                return m.content
        return None

    def fork(self, at_step: int) -> Run:
        """A new run that starts again just before step `at_step`'s model call; this run is kept."""
        if not 1 <= at_step <= len(self.steps):
            raise UsageError(f"cannot fork at step {at_step}: the run has {len(self.steps)} steps")
        cut = self.steps[at_step - 1].message_count
        return self._branch(list(self.messages[:cut]), at_step - 1, ForkOrigin(run_id=self.id, step=at_step))

    def fork_with_messages(self, messages: list[Message], keep_later: bool = False) -> Run:
        """A new run over an edited message list; keeps the steps made before the first change.

        By default the fork ends before the first model reply after the edit: what came later answered
        something else. With `keep_later` it keeps the whole edited list, later messages included.
        """
        first_change = first_difference(self.messages, messages)
        kept = sum(1 for s in self.steps if s.message_count < first_change)
        if not keep_later:
            messages = messages[: _edit_end(self.messages, messages, first_change)]
        # like fork(at_step): the origin is the first step the branch makes again
        fork = self._branch(list(messages), kept, ForkOrigin(run_id=self.id, step=kept + 1))
        if fork.steps:
            # the last kept step records only the tool runs whose results are still in the fork
            last = fork.steps[-1]
            answered = {getattr(m, "tool_call_id", None) for m in messages[last.message_count :]}
            last.tool_runs = [t for t in last.tool_runs if t.tool_call_id in answered]
        _record_edited_results(fork.steps, self.messages, messages)
        return fork

    def _branch(self, messages: list[Message], keep_steps: int, origin: ForkOrigin) -> Run:
        steps = [s.model_copy(deep=True) for s in self.steps[:keep_steps]]
        title = f"{self.title or 'run'} (fork @ step {origin.step})"
        return Run(config=self.config.model_copy(deep=True), messages=messages, steps=steps, parent=origin, title=title)


def _record_edited_results(steps: list[StepRecord], before: list[Message], after: list[Message]) -> None:
    """Mark the tool runs whose result differs between `before` and `after` as a person's edit."""
    old = {m.tool_call_id: m for m in before if isinstance(m, ToolMessage)}
    runs = {t.tool_call_id: t for s in steps for t in s.tool_runs}
    for m in after:
        if not isinstance(m, ToolMessage) or m.tool_call_id not in runs or m.tool_call_id not in old:
            continue
        was = old[m.tool_call_id]
        if (m.content, m.is_error) != (was.content, was.is_error):
            runs[m.tool_call_id].result_edited(was.content)


def _edit_end(before: list[Message], after: list[Message], first_change: int) -> int:
    """Where the default fork of an edited list ends: before the first model reply that read the old messages.

    An edited or inserted model turn ends the fork itself, since the tool results after it answered
    its old calls; a changed user or tool message keeps what follows up to the next model reply.
    """
    if first_change >= len(after):
        return len(after)
    deleted = first_change + 1 < len(before) and after[first_change] == before[first_change + 1]
    if not deleted and isinstance(after[first_change], AssistantMessage):
        return first_change + 1
    start = first_change if deleted else first_change + 1
    return next((j for j in range(start, len(after)) if isinstance(after[j], AssistantMessage)), len(after))

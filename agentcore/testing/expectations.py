"""What a pinned test holds, as validated models: the test itself, its expectations on the trajectory, the
answer and the cost, and a public benchmark's task it was imported from (agentcore/testing/pinned.py reads,
checks and writes them). A test file is untrusted input: every model refuses what it does not know.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import jsonschema
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)

from ..errors import TranscriptError
from ..hooks.examples import HOOKS
from ..hooks.specs import MockRule
from ..messages import MAX_COUNT, ToolCall
from ..run import Run
from ..schemas import SchemaError, check_schema, compile_pattern, schema_errors, search
from ..steps import JUDGE_NAME, JudgeExpect, StopReason, UserSpec
from ..transcript import from_dict, to_dict

TrajectoryMode = Literal["exact", "in_order", "any_order", "contains"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _check_schema(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    if schema is not None:
        try:
            check_schema(schema)  # a test file is untrusted input: its references stay inside it, its patterns bounded
        except SchemaError as exc:
            raise ValueError(str(exc)) from None
    return schema


def _check_patterns(patterns: dict[str, str] | str | None) -> Any:
    texts = [patterns] if isinstance(patterns, str) else list((patterns or {}).values())
    for text in texts:
        try:
            compile_pattern(text)
        except SchemaError as exc:
            raise ValueError(str(exc)) from None
    return patterns


class ArgMatch(_Strict):
    """How a call's arguments must look; every matcher given must hold."""

    equals: dict[str, Any] | None = None  # the arguments exactly
    subset: dict[str, Any] | None = None  # these keys with these values, others allowed
    regex: dict[str, str] | None = None  # each named argument, as text, matches its pattern
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")  # the arguments fill this JSON Schema

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("regex")
    @classmethod
    def _patterns(cls, patterns: dict[str, str] | None) -> dict[str, str] | None:
        return _check_patterns(patterns)

    @field_validator("schema_")
    @classmethod
    def _schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        return _check_schema(schema)

    def mismatch(self, call: ToolCall) -> str | None:
        """Why the call's arguments do not match, in words; None when they do."""
        args = call.arguments
        if self.equals is not None and args != self.equals:
            return f"arguments {call.arguments_text} are not {json.dumps(self.equals)}"
        for key, value in (self.subset or {}).items():
            if key not in args or args[key] != value:
                return f"arguments {call.arguments_text} lack {json.dumps({key: value})}"
        for key, pattern in (self.regex or {}).items():
            value = args.get(key)
            text = value if isinstance(value, str) else json.dumps(value)
            try:
                matched = key in args and search(pattern, text)
            except SchemaError as exc:
                return f"argument {key!r} could not be matched: {exc}"
            if not matched:
                return f"argument {key!r} = {text} does not match /{pattern}/"
        if self.schema_ is not None:
            try:
                errors = schema_errors(self.schema_, args)
            except SchemaError as exc:
                return f"arguments {call.arguments_text} could not be checked: the schema cannot be applied: {exc}"
            if errors:
                why = jsonschema.exceptions.best_match(errors).message
                return f"arguments {call.arguments_text} do not fill the schema: {why}"
        return None


class CallExpect(_Strict):
    """One expected tool call: its name, and optionally what its arguments must look like."""

    name: str
    args: ArgMatch | None = None

    def mismatch(self, call: ToolCall) -> str | None:
        if call.name != self.name:
            return f"{call.name} is not {self.name}"
        return self.args.mismatch(call) if self.args is not None else None

    def describe(self) -> str:
        """The expected call in words: `get_weather with arguments {"city": "Paris"}`."""
        a = self.args
        if a is None:
            return self.name
        parts = [f"arguments {json.dumps(a.equals)}" if a.equals is not None else ""]
        parts.append(f"arguments including {json.dumps(a.subset)}" if a.subset is not None else "")
        parts.append(f"arguments matching {json.dumps(a.regex)}" if a.regex is not None else "")
        parts.append("arguments filling a schema" if a.schema_ is not None else "")
        shown = " and ".join(p for p in parts if p)
        return f"{self.name} with {shown}" if shown else self.name


class Trajectory(_Strict):
    """The tool calls expected: `exact` (all of them, in order, no others), `in_order` (others allowed between),
    `any_order` (all of them, no others, in any order) or `contains` (each of them somewhere).

    With `step`, only the calls of that step's model reply are matched (a labelled step's correct call).
    """

    mode: TrajectoryMode = "in_order"
    calls: list[CallExpect] = []
    step: int | None = Field(default=None, ge=1, le=MAX_COUNT)


class AnswerExpect(_Strict):
    """The final answer: holds each text, matches a regex, or (a structured answer) fills a JSON Schema."""

    contains: list[str] = []
    regex: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("regex")
    @classmethod
    def _pattern(cls, pattern: str | None) -> str | None:
        return _check_patterns(pattern)

    @field_validator("schema_")
    @classmethod
    def _schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        return _check_schema(schema)


class RecordedVerdict(_Strict):
    """A judge's verdict kept in the test file, so a replay of an unchanged run reuses it with no call: what the
    judge read (`content_sha256`: the hash of the judged part of the run, as it was shown), under which rubric
    (`rubric_sha256`) and model, what it said, and the stored run of its call."""

    judge: str = Field(pattern=JUDGE_NAME)
    content_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    rubric_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    model: str = Field(max_length=500)
    passed: bool
    score: float | None = Field(default=None, allow_inf_nan=False)
    reason: str = Field(default="", max_length=2000)
    messages: list[int] = Field(default=[], max_length=1000)
    run_id: str | None = Field(default=None, max_length=200)
    judged_at: str = Field(default="", max_length=64)


class Expectations(_Strict):
    """What a run must do to pass; an expectation left out is not checked."""

    tool_calls: Trajectory | None = None
    forbidden_tools: list[str] = []
    max_repeated_calls: int | None = Field(default=None, ge=1, le=MAX_COUNT)  # times one identical call may be made
    max_steps: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    stop_reason: list[StopReason] | None = None
    answer: AnswerExpect | None = None
    max_input_tokens: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    max_output_tokens: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    max_cost_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    benchmark: bool = False  # the benchmark's own grader passes (BFCL's state comparison, AgentDojo's utility)
    judge: list[JudgeExpect] = Field(default=[], max_length=20)  # LLM judges' checks (one, or a list)

    @field_validator("judge", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @field_validator("judge")
    @classmethod
    def _named_once(cls, judges: list[JudgeExpect]) -> list[JudgeExpect]:
        names = [j.name for j in judges]
        twice = next((n for n in names if names.count(n) > 1), None)
        if twice is not None:
            raise ValueError(f"two judges are named {twice!r}: give each its own name")
        return judges


class BenchmarkRef(_Strict):
    """Which public benchmark task a test plays: the package's name, the task's id, and where it lives there."""

    name: Literal["bfcl", "agentdojo"]
    task_id: str = Field(min_length=1, max_length=200)
    category: str | None = Field(default=None, max_length=200)  # BFCL: multi_turn_base, ...; AgentDojo: the suite
    version: str | None = Field(default=None, max_length=50)  # AgentDojo's benchmark version, e.g. v1.2.2


class PinnedTest(_Strict):
    """A test file: the task (prompt, system prompt, tools, settings), its expectations, and the pinned run."""

    name: str = ""
    prompt: str
    system_prompt: str | None = None
    tools: list[str] = []
    max_steps: int = Field(default=10, ge=1, le=MAX_COUNT)
    temperature: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    final_answer_schema: dict[str, Any] | None = None
    turns: list[str] = Field(default=[], max_length=MAX_COUNT)  # the user's next messages, one per answer
    # a simulated user who goes on after the scripted turns (agentcore.testing.users), or `human`
    user: UserSpec | None = None
    # tool results fixed by a rule (agentcore.hooks.specs): a matching call is not run, on every configuration
    mocks: list[MockRule] = Field(default=[], max_length=1000)
    # the registered hooks the run was made with (agentcore.hooks.examples), on every configuration
    hooks: list[str] = Field(default=[], max_length=100)
    benchmark: BenchmarkRef | None = None
    expect: Expectations = Expectations()
    pinned: Run | None = None
    # the judges' verdicts on the pinned run, reused while it is unchanged (agentcore.testing.judges)
    verdicts: list[RecordedVerdict] = Field(default=[], max_length=1000)

    @field_validator("turns")
    @classmethod
    def _said(cls, turns: list[str]) -> list[str]:
        if any(not t.strip() for t in turns):
            raise ValueError("a scripted user turn needs text")
        return turns

    @field_validator("hooks")
    @classmethod
    def _registered(cls, hooks: list[str]) -> list[str]:
        unknown = [h for h in hooks if h not in HOOKS]
        if unknown:
            raise ValueError(f"unknown hook {unknown[0][:80]!r}; the hooks are: {', '.join(HOOKS)}")
        return list(dict.fromkeys(hooks))

    @model_validator(mode="after")
    def _graded_by_a_benchmark(self) -> PinnedTest:
        if self.expect.benchmark and self.benchmark is None:  # else the expectation would silently never be checked
            raise ValueError("expect.benchmark asks a benchmark's grader, but the test names no benchmark task")
        return self

    @field_validator("final_answer_schema")
    @classmethod
    def _schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        return _check_schema(schema)

    @field_validator("pinned", mode="before")
    @classmethod
    def _transcript(cls, value: Any) -> Any:
        if value is None or isinstance(value, Run):
            return value
        try:
            return from_dict(value)
        except TranscriptError as exc:
            raise ValueError(f"the pinned transcript: {exc}") from None

    @field_serializer("pinned")
    def _dump_pinned(self, run: Run | None) -> dict[str, Any] | None:
        return None if run is None else to_dict(run)

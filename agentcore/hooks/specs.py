"""Breakpoints and mock rules as data: the specs a run's config keeps, parsed and checked in one place.

A breakpoint is a one-line spec (RunConfig.breakpoints, the sidebar, `agentcore run --break SPEC`):

- `step:N`: before the model phase of step N;
- `tool:NAME`: before a call of the tool NAME runs;
- `args:PATH=VALUE` or `args:PATH~PATTERN`: before a call whose argument at PATH (`$.city`, `$.stops[0].name`)
  is VALUE (JSON, or else the text as written) or matches the regular expression PATTERN;
- `tokens:N`, `cost:USD`: before the model phase after the run's tokens (input + output) or cost in US dollars
  passed N or USD;
- `repeat`: before a call identical to one the run already made (same tool, same arguments);
- `tool-error`: before the model phase that follows a tool result that is an error.

A mock rule (RunConfig.mocks, `agentcore run --mock FILE`, a pinned test's `mocks`) fixes a tool's result: for
`tool`, when every condition of `when` holds (the same PATH=VALUE / PATH~PATTERN language), the call is not run
and `result` (or, given `error`, that error) is what the model reads.

Specs come from people and from files: a bad one is a one-line UsageError, and a pattern is compiled and applied
within agentcore.schemas' bounds, never by `re`. The hooks that act on them are in agentcore.hooks.breakpoints and
agentcore.hooks.mocks.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from ..errors import UsageError

__all__ = [
    "BREAKPOINT_KINDS",
    "ArgCondition",
    "Breakpoint",
    "BreakpointSpec",
    "MockRule",
    "parse_breakpoint",
    "parse_condition",
]

BreakpointKind = Literal["step", "tool", "args", "tokens", "cost", "repeat", "tool-error"]
BREAKPOINT_KINDS: tuple[str, ...] = ("step", "tool", "args", "tokens", "cost", "repeat", "tool-error")
MAX_SPEC_CHARS = 500
MAX_PATH_PARTS = 16
# a path part: `.name` (no dot, bracket or operator in it) or `[index]`
_PART = re.compile(r"\.([^.\[\]=~]{1,200})|\[(\d{1,6})\]")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.:\-]{1,200}")


@dataclass(frozen=True)
class ArgCondition:
    """A condition on a call's arguments: the value at `path` equals `value`, or (`op` "~") matches `pattern`."""

    text: str
    path: tuple[str | int, ...]
    op: Literal["=", "~"]
    raw: str  # the right side as written: the text to compare, or the pattern

    def value_at(self, arguments: Any) -> tuple[bool, Any]:
        """(found, the value) at the path in `arguments`."""
        here = arguments
        for part in self.path:
            if isinstance(part, int) and isinstance(here, list) and part < len(here):
                here = here[part]
            elif isinstance(part, str) and isinstance(here, dict) and part in here:
                here = here[part]
            else:
                return False, None
        return True, here

    def holds(self, arguments: Any) -> bool:
        """Whether the call's arguments meet the condition. A pattern that runs out of time on the value does not
        hold: a hostile argument cannot end the run through a breakpoint or a mock rule."""
        found, value = self.value_at(arguments)
        if not found:
            return False
        if self.op == "=":
            if isinstance(value, str) and value == self.raw:
                return True
            try:
                expected = json.loads(self.raw)
            except ValueError:
                return False
            return value == expected and type(value) is type(expected)
        from ..schemas import SchemaError, search  # regex and jsonschema load when a pattern is first applied

        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        try:
            return search(self.raw, text)
        except SchemaError:  # out of time on this value: unmet
            return False


@functools.lru_cache(maxsize=256)
def parse_condition(text: str) -> ArgCondition:
    """`$.city=Paris` or `$.city~^Pa` as an ArgCondition; a UsageError in one line when it is not one."""
    if len(text) > MAX_SPEC_CHARS:
        raise UsageError(f"condition longer than {MAX_SPEC_CHARS} characters")
    if not text.startswith("$"):
        raise UsageError(f"condition {text[:80]!r}: a condition starts with a JSON path, e.g. $.city=Paris")
    at, path = 1, []
    while at < len(text) and text[at] not in "=~":
        match = _PART.match(text, at)
        if match is None or len(path) >= MAX_PATH_PARTS:
            raise UsageError(
                f"condition {text[:80]!r}: the path is $ then .name or [index] parts (at most {MAX_PATH_PARTS}), "
                "then = and a value or ~ and a pattern"
            )
        path.append(match.group(1) if match.group(1) is not None else int(match.group(2)))
        at = match.end()
    if at >= len(text):
        raise UsageError(f"condition {text[:80]!r}: no = value or ~ pattern after the path")
    op, raw = text[at], text[at + 1 :]
    if op == "~":
        from ..schemas import SchemaError, compile_pattern

        try:
            compile_pattern(raw)
        except SchemaError as exc:
            raise UsageError(f"condition {text[:80]!r}: {exc}") from None
    return ArgCondition(text, tuple(path), op, raw)  # type: ignore[arg-type]


# a second spec after a space, comma or semicolon: a kind and its colon, or a kind that takes no value
_SECOND_SPEC = re.compile(r"[\s,;]+(?:(?:step|tool|args|tokens|cost):|(?:repeat|tool-error)(?![\w-]))")


@dataclass(frozen=True)
class Breakpoint:
    """A parsed breakpoint spec: its kind and what it holds (a step, a tool's name, a condition, a limit)."""

    spec: str
    kind: BreakpointKind
    step: int | None = None
    tool: str | None = None
    condition: ArgCondition | None = None
    limit: float | None = None


def parse_breakpoint(spec: str) -> Breakpoint:
    """A breakpoint spec as a Breakpoint; a UsageError in one line when it is not one."""
    spec = spec.strip()
    if not spec or len(spec) > MAX_SPEC_CHARS or "\n" in spec:
        raise UsageError(f"breakpoint {spec[:80]!r}: a spec is one line of at most {MAX_SPEC_CHARS} characters")
    second = _SECOND_SPEC.search(spec)
    if second is not None:  # `tool:get_weather step:2`: two breakpoints written as one
        first, rest = spec[: second.start()].strip(" ,;"), spec[second.start() :].strip(" ,;")
        raise UsageError(
            f"breakpoint {spec[:80]!r}: one breakpoint per line ({first[:40]!r} and {rest[:40]!r} are two)"
        )
    kind, _, value = spec.partition(":")
    kind = kind.strip()
    value = value.strip()
    if kind in ("repeat", "tool-error"):
        if value:
            raise UsageError(f"breakpoint {spec[:80]!r}: {kind} takes no value")
        return Breakpoint(spec, kind)  # type: ignore[arg-type]
    if kind not in BREAKPOINT_KINDS:
        raise UsageError(
            f"breakpoint {spec[:80]!r}: the kinds are step:N, tool:NAME, args:$.PATH=VALUE, args:$.PATH~PATTERN, "
            "tokens:N, cost:USD, repeat, tool-error"
        )
    if not value:
        raise UsageError(f"breakpoint {spec[:80]!r}: {kind} needs a value after the colon")
    if kind == "tool":
        if not _TOOL_NAME.fullmatch(value):
            raise UsageError(f"breakpoint {spec[:80]!r}: not a tool's name")
        return Breakpoint(spec, "tool", tool=value)
    if kind == "args":
        return Breakpoint(spec, "args", condition=parse_condition(value))
    try:
        if not value.isascii():  # int() and float() read any script's digits: a spec is written in ASCII ones
            raise ValueError
        number = int(value) if kind in ("step", "tokens") else float(value)
    except ValueError:
        whole = "a whole number" if kind in ("step", "tokens") else "a number of US dollars"
        raise UsageError(f"breakpoint {spec[:80]!r}: {kind} takes {whole}") from None
    if not 0 < number < 10**12:
        raise UsageError(f"breakpoint {spec[:80]!r}: {kind} takes a number above 0")
    if kind == "step":
        return Breakpoint(spec, "step", step=int(number))
    return Breakpoint(spec, kind, limit=float(number))  # type: ignore[arg-type]


def _checked_spec(spec: str) -> str:
    try:
        return parse_breakpoint(spec).spec
    except UsageError as exc:
        raise ValueError(str(exc)) from None


# a breakpoint spec as RunConfig keeps it: checked on the way in, kept as its stripped text
BreakpointSpec = Annotated[str, AfterValidator(_checked_spec)]


class MockRule(BaseModel):
    """A tool's result fixed by a rule: a call of `tool` whose arguments meet every `when` condition is not run.

    The model reads `result`, or `error` as an error result when it is given.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(min_length=1, max_length=200)
    when: list[str] = Field(default_factory=list, max_length=MAX_PATH_PARTS)
    result: str | None = Field(default=None, max_length=1_000_000)
    error: str | None = Field(default=None, max_length=1_000_000)

    @field_validator("tool")
    @classmethod
    def _tool_name(cls, tool: str) -> str:
        if not _TOOL_NAME.fullmatch(tool):
            raise ValueError(f"{tool[:80]!r} is not a tool's name")
        return tool

    @field_validator("when", mode="before")
    @classmethod
    def _one_or_many(cls, when: Any) -> Any:
        return [when] if isinstance(when, str) else when

    @field_validator("when")
    @classmethod
    def _conditions(cls, when: list[str]) -> list[str]:
        for text in when:
            try:
                parse_condition(text)
            except UsageError as exc:
                raise ValueError(str(exc)) from None
        return when

    @model_validator(mode="after")
    def _one_outcome(self) -> MockRule:
        if (self.result is None) == (self.error is None):
            raise ValueError("a mock rule gives either a result or an error")
        return self

    def matches(self, name: str, arguments: Any) -> bool:
        """Whether a call of `name` with `arguments` is mocked by this rule."""
        return name == self.tool and all(parse_condition(c).holds(arguments) for c in self.when)

    @property
    def words(self) -> str:
        """In one line: `get_weather when $.city=Paris → error: offline`."""
        when = f" when {' and '.join(self.when)}" if self.when else ""
        said = f"error: {self.error}" if self.error is not None else (self.result or "")
        said = " ".join(said.split())
        return f"{self.tool}{when} → {said[:80]}{'…' if len(said) > 80 else ''}"

"""Annotations: a person's label on a step or a tool call of a run, and the counts an error analysis reads.

An error analysis (read the runs, label each failure by its kind, count the kinds) is how agent debugging
is taught. An annotation names a step (1, 2, ...) and, optionally, one tool call of that step's reply; it
carries labels from a small taxonomy, free labels (tags), a score, a note and, where the model went wrong,
the call it should have made, which a pinned test can expect (`agentcore.testing.pinned.from_annotation`).

Everything here is a person's text: bounded, one line where it is a name, and checked on the way in.
"""

from __future__ import annotations

import json
import unicodedata
import uuid
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import UsageError
from .messages import AssistantMessage, Count, Message, Name, ShallowObject, ToolCall

# the kinds of failure an error analysis counts, and "good" for a step that did what it should
Label = Literal[
    "wrong tool",
    "wrong arguments",
    "ignored the result",
    "stopped too early",
    "looped",
    "hallucinated a fact",
    "good",
]
LABELS: tuple[str, ...] = get_args(Label)
MAX_TAGS = 10
MAX_TAG_CHARS = 40
MAX_NOTE_CHARS = 2000
MAX_ID_CHARS = 200
MAX_SCORE = 1e9
_LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class CorrectCall(BaseModel):
    """The call the model should have made: a tool's name and its arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Name = Field(min_length=1, max_length=MAX_ID_CHARS)
    arguments: ShallowObject = {}

    @field_validator("name")
    @classmethod
    def _one_line(cls, name: str) -> str:
        if any(c in name for c in _LINE_BREAKS) or name != name.strip():
            raise ValueError("a tool's name is one word, with no line break or surrounding space")
        return name

    @property
    def text(self) -> str:
        """`get_weather({"city": "Paris"})`."""
        return f"{self.name}({json.dumps(self.arguments, ensure_ascii=False)})"


class Annotation(BaseModel):
    """A person's label on step `step` of a run, or on one tool call of that step's reply (`tool_call_id`)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12], pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    step: Count = Field(ge=1)
    tool_call_id: Name | None = Field(default=None, max_length=MAX_ID_CHARS)
    labels: list[Label] = Field(default_factory=list, max_length=len(LABELS))
    tags: list[Name] = Field(default_factory=list, max_length=MAX_TAGS)  # free labels, a person's own words
    score: float | None = Field(default=None, ge=-MAX_SCORE, le=MAX_SCORE, allow_inf_nan=False)
    note: Name = Field(default="", max_length=MAX_NOTE_CHARS)
    correct_call: CorrectCall | None = None
    author: Name | None = Field(default=None, max_length=MAX_ID_CHARS)
    created_at: Name = Field(default_factory=_now, max_length=64)
    # a judge's verdict (author `judge:NAME`): the stored run of the judge's call that made it
    judge_run: Name | None = Field(default=None, max_length=MAX_ID_CHARS, exclude_if=lambda v: v is None)

    @field_validator("labels")
    @classmethod
    def _distinct(cls, labels: list[str]) -> list[str]:
        return list(dict.fromkeys(labels))

    @field_validator("tags", mode="before")
    @classmethod
    def _tidy_tags(cls, tags: Any) -> Any:
        if not isinstance(tags, list):
            return tags
        tidy = []
        for tag in tags:
            if not isinstance(tag, str):
                return tags  # pydantic says what is wrong with it
            tag = " ".join(tag.split())
            if any(unicodedata.category(c) in ("Cc", "Cf") for c in tag):
                raise ValueError(f"a free label is plain text, without control or format characters: {tag!r}")
            if len(tag) > MAX_TAG_CHARS:
                raise ValueError(f"a free label is at most {MAX_TAG_CHARS} characters: {tag[:MAX_TAG_CHARS]!r}…")
            if tag:
                tidy.append(tag)
        return list(dict.fromkeys(tidy))

    @model_validator(mode="after")
    def _says_something(self) -> Annotation:
        if not (self.labels or self.tags or self.score is not None or self.note.strip() or self.correct_call):
            raise ValueError("an annotation needs a label, a free label, a score, a note or a correct call")
        return self

    @property
    def all_labels(self) -> list[str]:
        """The taxonomy's labels, then the free ones."""
        return [*self.labels, *self.tags]

    @property
    def target(self) -> str:
        """What is labelled, in words: `step 3` or `step 3, call c1`."""
        return f"step {self.step}" + (f", call {self.tool_call_id}" if self.tool_call_id else "")

    def summary(self) -> str:
        """The annotation on one line: labels, score, the correct call, the note's start."""
        parts = [", ".join(self.all_labels)] if self.all_labels else []
        if self.score is not None:
            parts.append(f"score {self.score:g}")
        if self.correct_call is not None:
            parts.append(f"should call {self.correct_call.text}")
        if self.note.strip():
            note = " ".join(self.note.split())
            parts.append(note if len(note) <= 80 else note[:80] + "…")
        return " · ".join(parts)


SCANNER_PREFIX = "scanner:"  # the author of a scanner's finding is `scanner:NAME` (agentcore.store.scanners)
JUDGE_PREFIX = "judge:"  # the author of an LLM judge's verdict is `judge:NAME` (agentcore.testing.judges)


def by_judge(annotation: Annotation) -> bool:
    """Whether the annotation is an LLM judge's verdict."""
    return (annotation.author or "").startswith(JUDGE_PREFIX)


def by_scanner(annotation: Annotation) -> bool:
    """Whether the annotation is a machine's (a scanner's finding or a judge's verdict) rather than a person's label."""
    return (annotation.author or "").startswith((SCANNER_PREFIX, JUDGE_PREFIX))


def make_annotation(**fields: Any) -> Annotation:
    """An annotation from a person's input; what is wrong with it is a one-line UsageError.

    A new annotation may not say "good" beside a failure label: the error analysis would count it twice, once
    each way. (One read from a file or the library is kept as it was written.)
    """
    labels = fields.get("labels") or []
    if isinstance(labels, list) and "good" in labels and len(set(labels)) > 1:
        failures = ", ".join(str(label) for label in labels if label != "good")
        raise UsageError(f"annotation: labels: 'good' and {failures[:200]} contradict each other: choose one side")
    try:
        return Annotation.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "annotation"
        message = " ".join(str(first["msg"]).split())
        raise UsageError(f"annotation: {where}: {message}"[:300]) from None


def step_reply(messages: list[Message], message_count: int) -> AssistantMessage | None:
    """The model's reply of a step whose call saw `message_count` messages; None when it is not in the list."""
    if message_count < len(messages) and isinstance(messages[message_count], AssistantMessage):
        return messages[message_count]
    return None


def step_calls(messages: list[Message], message_count: int) -> tuple[ToolCall, ...]:
    """The tool calls of that step's reply."""
    reply = step_reply(messages, message_count)
    return reply.tool_calls if reply is not None else ()


def check_target(annotation: Annotation, steps: int, calls: Iterable[str]) -> None:
    """Refuse an annotation on a step the run does not have, or a call that step's reply did not make.

    `steps` is how many steps the run has; `calls` the ids of the calls of the annotated step's reply.
    """
    if annotation.step > steps:
        raise UsageError(f"annotation: the run has {steps} steps, not a step {annotation.step}")
    ids = list(calls)
    if annotation.tool_call_id is not None and annotation.tool_call_id not in ids:
        shown = ", ".join(ids) if ids else "no tool calls"
        raise UsageError(
            f"annotation: step {annotation.step} made {shown}, not a call {annotation.tool_call_id[:MAX_ID_CHARS]!r}"
        )


def count_labels(annotations: Iterable[Annotation]) -> Counter[str]:
    """How many annotations carry each label, the taxonomy's and the free ones."""
    counts: Counter[str] = Counter()
    for a in annotations:
        counts.update(a.all_labels)
    return counts


def ordered_counts(annotations: Iterable[Annotation]) -> list[tuple[str, int]]:
    """Each label and how many annotations carry it, most frequent first (the one to fix first), ties by name:
    the order a bar chart of the counts reads in, whatever the label's kind."""
    return sorted(count_labels(annotations).items(), key=lambda item: (-item[1], item[0]))


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word if n == 1 else word + 's'}"


def labels_said(annotations: list[Annotation], runs: int) -> str:
    """The labels the counts add up to, and how they differ from the annotations (one may carry several, or only a
    score or a note): what the Error analysis page and `agentcore errors` both say above the counts."""
    total = sum(len(a.all_labels) for a in annotations)
    head = f"{_plural(total, 'label')} across {_plural(runs, 'run')}"
    if all(len(a.all_labels) == 1 for a in annotations):
        return f"{head}, one on each annotation"
    several = sum(1 for a in annotations if len(a.all_labels) > 1)
    none = sum(1 for a in annotations if not a.all_labels)
    said = f"{head}, on {_plural(len(annotations), 'annotation')}, "
    said += f"{several:,} of which {'carries' if several == 1 else 'carry'} more than one label"
    return said + (f" and {none:,} none" if none else "")

"""Compare two runs message by message: the shared prefix, where they diverge, and what differs after.

A tool call that a person decided (approved, edited, denied, or typed the result of) says so in its row.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from .messages import AssistantMessage, Message, ToolMessage
from .run import Run
from .steps import ToolRun

RowKind = Literal["same", "changed", "only_a", "only_b"]
CELL_WIDTH = 300  # characters of a row's text a table cell shows
_LEAD = 40  # characters kept before the first difference, so the cell shows what the change follows


def message_key(m: Message) -> str:
    """A message as canonical JSON, so equal messages compare equal whatever their object identity."""
    return json.dumps(m.model_dump(mode="json"), sort_keys=True)


def tool_runs_by_call(run: Run) -> dict[str, ToolRun]:
    """Each tool run of a run by its tool call's id."""
    return {t.tool_call_id: t for s in run.steps for t in s.tool_runs}


def message_label(m: Message, tool_runs: Mapping[str, ToolRun] | None = None) -> str:
    """A one-line description of a message for a diff row, with a person's decision on each tool call."""
    tool_runs = tool_runs or {}

    def decided(call_id: str) -> str:
        t = tool_runs.get(call_id)
        return f" [{t.decision}]" if t is not None and t.decision else ""

    if isinstance(m, AssistantMessage):
        calls = ", ".join(f"{c.name}({c.arguments_text}){decided(c.id)}" for c in m.tool_calls)
        text = (m.content or "").strip()
        return "assistant: " + " → ".join(p for p in (text, calls) if p)
    if isinstance(m, ToolMessage):
        t = tool_runs.get(m.tool_call_id)
        mine = t is not None and (t.source == "typed" or t.original_content is not None)  # the result is the person's
        by = f" [{t.decision}]" if mine else ""
        return f"tool {m.name}{' (error)' if m.is_error else ''}{by}: {m.content}"
    return f"{m.role}: {m.content}"


@dataclass(frozen=True)
class DiffRow:
    """One aligned pair of messages: the same in both, changed, or present in one run only.

    `a_text` and `b_text` describe each side in one line, a person's decisions on its tool calls included.
    """

    kind: RowKind
    a_index: int | None
    b_index: int | None
    a: Message | None
    b: Message | None
    a_text: str = field(default="", compare=False)
    b_text: str = field(default="", compare=False)

    def cells(self, width: int = CELL_WIDTH) -> tuple[str, str]:
        """Both sides' text for a table cell of `width` characters: a changed row is cut around its first difference."""
        if self.kind != "changed":
            return cut(self.a_text, 0, width), cut(self.b_text, 0, width)
        at = _differs_at(self.a_text, self.b_text)
        return cut(self.a_text, at, width), cut(self.b_text, at, width)


def _differs_at(a: str, b: str) -> int:
    """The index of the first character where two texts differ (the shorter's length when one begins the other)."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def cut(text: str, at: int, width: int = CELL_WIDTH) -> str:
    """At most `width` characters of `text` that show position `at`, with … where text was left out."""
    if len(text) <= width:
        return text
    start = max(0, min(at - _LEAD, len(text) - width + 1))
    head = "…" if start else ""
    end = start + width - len(head)
    if end < len(text):
        end -= 1  # room for the … that says more follows
    return head + text[start:end] + ("…" if end < len(text) else "")


@dataclass(frozen=True)
class RunDiff:
    """The message-by-message comparison of run `a` with run `b`."""

    a_id: str
    b_id: str
    rows: list[DiffRow]
    diverged_at: int | None  # index of the first message that differs; None when the lists are equal
    related: str | None  # how the runs are related by forking, in words

    @property
    def identical(self) -> bool:
        return self.diverged_at is None

    def summary(self) -> str:
        """One sentence: where the runs diverge and how much differs."""
        if self.identical:
            return "The two runs have the same messages."
        counts = {k: sum(r.kind == k for r in self.rows) for k in ("changed", "only_a", "only_b")}
        return (
            f"They share the first {self.diverged_at} messages and diverge at message {self.diverged_at}: "
            f"{counts['changed']} changed, {counts['only_a']} only in {self.a_id}, {counts['only_b']} only in {self.b_id}."
        )


def _relation(a: Run, b: Run) -> str | None:
    if b.parent and b.parent.run_id == a.id:
        return f"{b.id} is a fork of {a.id} at step {b.parent.step}"
    if a.parent and a.parent.run_id == b.id:
        return f"{a.id} is a fork of {b.id} at step {a.parent.step}"
    if a.parent and b.parent and a.parent.run_id == b.parent.run_id:
        return f"both are forks of {a.parent.run_id} (at steps {a.parent.step} and {b.parent.step})"
    return None


def diff_runs(a: Run, b: Run) -> RunDiff:
    """Align the two message lists (a longest-common-subsequence match) and classify every message."""
    ka, kb = [message_key(m) for m in a.messages], [message_key(m) for m in b.messages]
    diverged = next((i for i, (x, y) in enumerate(zip(ka, kb, strict=False)) if x != y), min(len(ka), len(kb)))
    runs_a, runs_b = tool_runs_by_call(a), tool_runs_by_call(b)

    def row(kind: RowKind, i: int | None, j: int | None) -> DiffRow:
        ma = a.messages[i] if i is not None else None
        mb = b.messages[j] if j is not None else None
        text_a = message_label(ma, runs_a) if ma is not None else ""
        text_b = message_label(mb, runs_b) if mb is not None else ""
        return DiffRow(kind, i, j, ma, mb, text_a, text_b)

    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(a=ka, b=kb, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [row("same", i, j) for i, j in zip(range(i1, i2), range(j1, j2), strict=True)]
            continue
        # a replaced block pairs up position by position; the longer side's rest is one-sided
        n = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        rows += [row("changed", i1 + k, j1 + k) for k in range(n)]
        rows += [row("only_a", i, None) for i in range(i1 + n, i2)]
        rows += [row("only_b", None, j) for j in range(j1 + n, j2)]
    identical = ka == kb
    return RunDiff(a.id, b.id, rows, None if identical else diverged, _relation(a, b))

"""Compare two runs message by message: the shared prefix, where they diverge, and what differs after."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Literal

from .messages import AssistantMessage, Message, ToolMessage
from .run import Run

RowKind = Literal["same", "changed", "only_a", "only_b"]


def message_key(m: Message) -> str:
    """A message as canonical JSON, so equal messages compare equal whatever their object identity."""
    return json.dumps(m.model_dump(mode="json"), sort_keys=True)


def message_label(m: Message) -> str:
    """A one-line description of a message for a diff row."""
    if isinstance(m, AssistantMessage):
        calls = ", ".join(f"{c.name}({c.arguments_text})" for c in m.tool_calls)
        text = (m.content or "").strip()
        return "assistant: " + " → ".join(p for p in (text, calls) if p)
    if isinstance(m, ToolMessage):
        return f"tool {m.name}{' (error)' if m.is_error else ''}: {m.content}"
    return f"{m.role}: {m.content}"


@dataclass(frozen=True)
class DiffRow:
    """One aligned pair of messages: the same in both, changed, or present in one run only."""

    kind: RowKind
    a_index: int | None
    b_index: int | None
    a: Message | None
    b: Message | None

    @property
    def a_text(self) -> str:
        return message_label(self.a) if self.a is not None else ""

    @property
    def b_text(self) -> str:
        return message_label(self.b) if self.b is not None else ""


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
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(a=ka, b=kb, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [
                DiffRow("same", i, j, a.messages[i], b.messages[j])
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            ]
            continue
        # a replaced block pairs up position by position; the longer side's rest is one-sided
        n = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        rows += [DiffRow("changed", i1 + k, j1 + k, a.messages[i1 + k], b.messages[j1 + k]) for k in range(n)]
        rows += [DiffRow("only_a", i, None, a.messages[i], None) for i in range(i1 + n, i2)]
        rows += [DiffRow("only_b", None, j, None, b.messages[j]) for j in range(j1 + n, j2)]
    identical = ka == kb
    return RunDiff(a.id, b.id, rows, None if identical else diverged, _relation(a, b))

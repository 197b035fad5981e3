"""Counts and numbers as the pages write them: plurals by count, runs of step numbers, a dash where a value is missing.

Only the app's own words and numbers go through here; text a model, a tool or a file wrote goes through ui/safe.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from agentcore.accounting import COST_FORMAT

MISSING = "—"  # a value a table or caption does not have (an unknown cost, a step without a finish reason)


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 step`, `3 steps`, `0 steps`; `many` when the plural is not the word with an s."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def numbered(word: str, numbers: Iterable[int]) -> str:
    """Numbered things as ranges: `step 4`, `steps 1–30`, `steps 1–3, 7 and 9–10`, `columns 2 and 3`."""
    ordered = sorted(set(numbers))
    if not ordered:
        return f"no {word}"
    spans: list[list[int]] = []
    for n in ordered:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    parts: list[str] = []
    for a, b in spans:
        parts += [f"{a}–{b}"] if b > a + 1 else list(map(str, range(a, b + 1)))
    head = word if len(ordered) == 1 else word + "s"
    return f"{head} {parts[0]}" if len(parts) == 1 else f"{head} {', '.join(parts[:-1])} and {parts[-1]}"


def number(value: float | None, digits: int = 1) -> float | None:
    """A number rounded for a table, never -0.0 (a tiny negative rounds to zero, shown without a sign)."""
    if value is None or math.isnan(value):
        return None
    return round(value, digits) + 0.0  # adding 0.0 turns -0.0 into 0.0


def shown(value: float | None, spec: str = ",.1f", *, prefix: str = "") -> str:
    """A number as table or caption text, formatted by `spec`; a dash when it is missing, never `-0.0`."""
    if value is None or math.isnan(value):
        return MISSING
    text = format(value, spec)
    if text.startswith("-") and not text.strip("-0.,"):  # rounds to zero: no sign
        text = text[1:]
    return prefix + text


def usd(value: float | None) -> str:
    """A cost in US dollars to the millionth (a step on a small model costs a few of them); `free` for
    nothing at all (a local or scripted model), not a row of zeros; a dash when it is unknown."""
    if value == 0:
        return "free"
    return shown(value, COST_FORMAT, prefix="$")


def text(value: object) -> str:
    """A table cell of words: the value as text, a dash when there is none."""
    return MISSING if value is None or value == "" else str(value)

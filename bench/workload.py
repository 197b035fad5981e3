"""The one workload every loop measurement runs, dependency-free so both virtual environments import it.

Each step the model asks for one `lookup` call; the tool answers with OUTPUT_CHARS characters;
after the last step the model answers in plain text. Same tool, same steps, same sizes for all.
"""

from __future__ import annotations

PROMPT = "Look up every key in turn, then say you are done."
OUTPUT_CHARS = 256
FINAL_ANSWER = "Done: every key was looked up."
TOOL_NAME = "lookup"
TOOL_DESCRIPTION = "Look up a key and return its record."
STEPS = (50, 200)


def lookup(key: str) -> str:
    """Look up a key and return its record."""
    return (key + ":") + "x" * (OUTPUT_CHARS - len(key) - 1)


def call_id(step: int) -> str:
    """The tool call id of step `step` (1-based)."""
    return f"call_{step:04d}"


def call_key(step: int) -> str:
    """The argument of step `step`'s lookup call."""
    return f"key-{step:04d}"


def reps_for(steps: int) -> int:
    """Repetitions of one measurement: more for short runs, whose timings are noisier."""
    return 11 if steps <= 50 else 9

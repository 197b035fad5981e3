"""The results of a comparison: summary rows, per-step series, the wire side by side, the bundle, the table.

Plain functions over finished or running Runs; `agentcore.compare` re-exports them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .accounting import COST_FORMAT, run_cost, step_costs
from .errors import TranscriptError
from .messages import AssistantMessage, Usage, numbered
from .providers import FREE_PROVIDERS  # noqa: F401  re-exported by compare
from .providers.scripted import SCENARIOS
from .run import Run

if TYPE_CHECKING:
    from .compare import ColumnSpec

FORMAT = "agentcore.comparison"
VERSION = 1


def unique_labels(labels: Sequence[str]) -> list[str]:
    """Make column labels unique by numbering repeats: `scripted:weather`, `scripted:weather #2`."""
    taken: set[str] = set()
    return [numbered(label, taken) for label in labels]


def priced_steps(run: Run) -> list[float | None]:
    try:
        return step_costs(run)  # a free provider's steps cost 0
    except ValueError:  # genai-prices refuses usage it cannot price (more cached tokens than input): unknown cost
        return [None] * len(run.steps)


def final_result(run: Run) -> Any:
    """What a finished run ended on: its structured output, or its answer's text; None for a run with neither."""
    final = run.final_output if run.stop_reason == "structured" else None
    if final is None and run.stop_reason == "answer":
        final = run.final_answer()
    return final


@dataclass(frozen=True)
class ExpectedAnswer:
    """The texts a comparison's answers are checked for, where they come from, and the prompt they belong to.

    Only containment is checked, so a column is said to *contain* the expected answer, not to be correct.
    """

    contains: tuple[str, ...]
    source: str  # in words: "the tool_error scenario", "the pinned test weather-in-paris"
    prompt: str

    def missing(self, final: Any) -> list[str] | None:
        """The expected texts a final result lacks ([] when it holds them all); None when there is no result."""
        if final is None:
            return None
        text = final if isinstance(final, str) else json.dumps(final, ensure_ascii=False)
        return [part for part in self.contains if part not in text]

    def to_dict(self) -> dict[str, Any]:
        return {"contains": list(self.contains), "source": self.source, "prompt": self.prompt}


def scenario_expectation(prompt: str, specs: Sequence[ColumnSpec]) -> ExpectedAnswer | None:
    """The answer a scripted column's scenario declares, when the comparison asks that scenario's own prompt."""
    for spec in specs:
        scenario = SCENARIOS.get(spec.model or "") if spec.provider == "scripted" else None
        if scenario is not None and scenario.expected_answer and scenario.prompt.strip() == prompt.strip():
            return ExpectedAnswer(scenario.expected_answer, f"the {scenario.name} scenario", scenario.prompt)
    return None


# why a run stopped, in the words a person reads (a used-up budget is said by `stop_words` with its number)
STOP_WORDS = {
    "answer": "answered",
    "output limit": "cut off at the output limit",
    "structured": "filled the schema",
    "error": "the model call failed",
    "cancelled": "stopped by you",
    "stopped": "stopped by a hook",
}


def stop_words(run: Run, first_step: int = 1) -> str | None:
    """Why the run stopped, in words; None while it is open. A used-up step budget says the steps it was given
    from `first_step` on: a fork asked to make one step from step 4 "made the 1 step it was given from step 4"."""
    reason = run.ending
    if reason != "max_steps":
        return None if reason is None else STOP_WORDS.get(reason, reason)
    given = max(0, run.config.max_steps - first_step + 1)
    since = f" from step {first_step}" if first_step > 1 else ""
    return f"made the {given} step{'s' if given != 1 else ''} it was given{since}"


def summarize(
    run: Run,
    label: str,
    state: str | None = None,
    error: str | None = None,
    expected: ExpectedAnswer | None = None,
    first_step: int = 1,
) -> dict[str, Any]:
    """A run as one summary row: steps, stop reason, tokens, cost, latency, tool errors, final answer.

    With an expected answer, `contains_expected` says whether the final answer holds it (None: no answer); `stop`
    says why it stopped, in words (stop_words). From `first_step` on only: a fork compared from step k counts the
    steps it made, not those it kept.
    """
    steps = run.steps[first_step - 1 :]
    costs = priced_steps(run)[first_step - 1 :]
    usage = sum((s.usage for s in steps), Usage())
    total_ms = sum(s.duration_ms for s in steps)
    n = len(steps)
    missing = expected.missing(final_result(run)) if expected is not None else None
    return {
        "config": label,
        "state": state or ("error" if run.stop_reason == "error" else "done" if run.finished else "ready"),
        "steps": n,
        "stop_reason": run.stop_reason,
        "stop": stop_words(run, first_step),
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "estimated": any(s.estimated for s in steps),
        "cost_usd": None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
        "total_ms": round(total_ms, 1),
        "ms_per_step": round(total_ms / n, 1) if n else None,
        "model_ms_per_step": round(sum(s.latency_ms for s in steps) / n, 1) if n else None,
        "tool_errors": sum(t.is_error for s in steps for t in s.tool_runs),
        "final_answer": final_result(run),
        "contains_expected": None if missing is None else not missing,
        "error": error if error is not None else run.error,
    }


def step_series(run: Run, label: str, first_step: int = 1) -> list[dict[str, Any]]:
    """Per-step tokens and cost of one run, with running totals, from `first_step` on (each keeps its number)."""
    rows, cum_tokens, cum_cost = [], 0, 0.0
    costs = priced_steps(run)
    for i, step in enumerate(run.steps):
        if step.index < first_step:
            continue
        cum_tokens += step.usage.total_tokens
        cost = costs[i] if i < len(costs) else None
        cum_cost = None if cost is None or cum_cost is None else cum_cost + cost
        rows.append(
            {
                "config": label,
                "step": step.index,
                "input_tokens": step.usage.input_tokens,
                "output_tokens": step.usage.output_tokens,
                "cumulative_tokens": cum_tokens,
                "cost_usd": cost,
                "cumulative_cost_usd": cum_cost,
                "latency_ms": round(step.latency_ms, 1),
            }
        )
    return rows


def wire_requests(runs: Sequence[Run], step: int) -> list[Any]:
    """The request body each run's provider received at `step` (1-based); None where there is none."""
    out = []
    for run in runs:
        record = run.steps[step - 1] if 1 <= step <= len(run.steps) else None
        out.append(record.wire.request if record is not None and record.wire is not None else None)
    return out


def make_bundle(
    prompt: str,
    runs: Sequence[Run],
    labels: Sequence[str],
    system_prompt: str | None = None,
    expected: ExpectedAnswer | None = None,
    from_step: tuple[str, int] | None = None,
) -> dict[str, Any]:
    """The comparison bundle: format, version, prompt, labels, the expected answer, summary, one transcript per run.

    A comparison from step k of a stored run says so (`from`: its id and k; the original is the first run) and
    sums each run from step k on.
    """
    from .transcript import to_dict

    first = from_step[1] if from_step is not None else 1
    bundle = {
        "format": FORMAT,
        "version": VERSION,
        "prompt": prompt,
        "system_prompt": system_prompt,
        "labels": list(labels),
        "expected_answer": expected.to_dict() if expected is not None else None,
        "summary": [
            summarize(r, lbl, expected=expected, first_step=first) for r, lbl in zip(runs, labels, strict=True)
        ],
        "runs": [to_dict(r) for r in runs],
    }
    if from_step is not None:
        bundle["from"] = {"run_id": from_step[0], "step": from_step[1]}
    return bundle


def load_bundle(data: Any) -> tuple[str, list[str], list[Run]]:
    """Validate a bundle and return its prompt, labels and runs; a TranscriptError names what is wrong."""
    from .transcript import check_header, from_dict

    check_header(data, "a comparison bundle", FORMAT, VERSION)
    if not isinstance(data.get("runs"), list) or not data["runs"]:
        raise TranscriptError("runs: expected a non-empty list of transcripts")
    runs = []
    for i, item in enumerate(data["runs"]):
        try:
            runs.append(from_dict(item))
        except TranscriptError as exc:
            raise TranscriptError(f"runs[{i}]: {exc}") from None
    labels = data.get("labels")
    if not isinstance(labels, list) or len(labels) != len(runs):
        labels = [f"{r.config.provider}:{r.config.model}" for r in runs]
    return str(data.get("prompt") or ""), unique_labels([str(x) for x in labels]), runs


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """The summary rows as a plain-text table for the terminal."""
    heads = ("config", "steps", "stop", "in", "out", "cost $", "total ms", "ms/step", "tool err", "final answer")

    def cost(v: float | None) -> str:
        return "?" if v is None else f"{v:{COST_FORMAT}}"

    def answer(row: dict[str, Any]) -> str:
        text = f"error: {row['error']}" if row["error"] else str(row["final_answer"] or "")
        text = text.replace("\n", " ")
        return text if len(text) <= 60 else text[:59] + "…"

    body = [
        (
            str(r["config"]),
            str(r["steps"]),
            str(r["stop_reason"] or "-"),
            f"{r['input_tokens']}{'~' if r['estimated'] else ''}",
            f"{r['output_tokens']}{'~' if r['estimated'] else ''}",
            cost(r["cost_usd"]),
            f"{r['total_ms']:.0f}",
            "-" if r["ms_per_step"] is None else f"{r['ms_per_step']:.0f}",
            str(r["tool_errors"]),
            answer(r),
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(row[i]) for row in body)) for i, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in body]
    return "\n".join(lines)


def step_row(run: Run, step: int, label: str) -> dict[str, Any]:
    """What one run did at `step`: its reply, the tools it called, tokens, cost and latency (`made` False when it
    made no such step: it ended, or failed, before)."""
    record = run.steps[step - 1] if 1 <= step <= len(run.steps) else None
    row: dict[str, Any] = {"config": label, "step": step, "made": record is not None, "error": run.error}
    if record is None:
        return row | {"reply": None, "tool_calls": [], "input_tokens": 0, "output_tokens": 0, "cost_usd": None}
    reply = run.messages[record.message_count] if record.message_count < len(run.messages) else None
    reply = reply if isinstance(reply, AssistantMessage) else None
    costs = priced_steps(run)
    return row | {
        "reply": reply.content if reply is not None else None,
        "tool_calls": [f"{c.name}({c.arguments_text})" for c in reply.tool_calls] if reply is not None else [],
        "input_tokens": record.usage.input_tokens,
        "output_tokens": record.usage.output_tokens,
        "estimated": record.estimated,
        "cost_usd": costs[step - 1] if step - 1 < len(costs) else None,
        "latency_ms": round(record.latency_ms, 1),
        "model": f"{run.answered_by(record).provider}:{run.answered_by(record).model}",
    }


def format_step_rows(rows: Sequence[dict[str, Any]]) -> str:
    """Each run's own step, one block per run, for the terminal: the reply and calls whole enough to be read."""
    lines = []
    for r in rows:
        if not r["made"]:
            why = f"error: {r['error']}" if r["error"] else "no such step: the run ended before it"
            lines.append(f"{r['config']}\n  {_one_line(why, 300)}")
            continue
        cost = "?" if r["cost_usd"] is None else f"${r['cost_usd']:.6f}"
        mark = "~" if r["estimated"] else ""
        head = (
            f"{r['config']} · {r['model']} · {r['input_tokens']}{mark} in / {r['output_tokens']}{mark} out · {cost} · "
            f"{r['latency_ms']:.0f} ms"
        )
        lines.append(head)
        if r["reply"]:
            lines.append(f"  reply: {_one_line(r['reply'], 300)}")
        lines += [f"  → {_one_line(call, 300)}" for call in r["tool_calls"]]
        if not r["reply"] and not r["tool_calls"]:
            lines.append("  (an empty reply)")
    return "\n".join(lines)


def _one_line(text: str, most: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= most else text[: most - 1] + "…"


def repeated_summary(
    label: str, runs: Sequence[Run], wall_s: Sequence[float], expected: ExpectedAnswer | None
) -> dict[str, Any]:
    """One configuration's N runs of the same prompt, read together: how many answered, how many hold the
    expected text (None without one), and the median and range of steps, tokens, cost and time."""
    from .testing.trials import Spread

    costs = [run_cost(r) for r in runs]
    held = [expected.missing(final_result(r)) == [] for r in runs] if expected is not None else None
    return {
        "config": label,
        "runs": len(runs),
        "answered": sum(r.stop_reason in ("answer", "structured") for r in runs),
        "contains_expected": None if held is None else sum(held),
        "steps": Spread.of([len(r.steps) for r in runs]),
        "tokens": Spread.of([r.usage.total_tokens for r in runs]),
        "cost_usd": Spread.of(costs),
        "wall_s": Spread.of(list(wall_s)),
        "run_ids": [r.id for r in runs],
    }


def format_repeats(rows: Sequence[dict[str, Any]]) -> str:
    """The repeated summaries as a plain-text table: counts of runs, then medians and ranges."""
    heads = ["config", "answered", "contains expected", "steps", "tokens", "cost $", "time"]
    lines = [heads]
    for r in rows:
        held = "-" if r["contains_expected"] is None else f"{r['contains_expected']}/{r['runs']}"
        lines.append(
            [
                r["config"],
                f"{r['answered']}/{r['runs']}",
                held,
                r["steps"].words(),
                r["tokens"].words(),
                r["cost_usd"].words(digits=6),
                r["wall_s"].words(" s", 2),
            ]
        )
    widths = [max(len(str(line[k])) for line in lines) for k in range(len(heads))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines)

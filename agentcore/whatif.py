"""What-if curves: the same run's input tokens and cost under trimming and caching strategies.

Computed from the recorded messages, never by calling the model again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import accumulate
from typing import Any

from .accounting import CostReport
from .policies import ContextPolicies, project, request_tokens
from .providers.prices import Pricer
from .run import Run

# -- what-if --------------------------------------------------------------------------


@dataclass(frozen=True)
class WhatIf:
    """The same run's per-step input under one strategy, with its cost and savings against the actual run."""

    key: str
    label: str
    input_tokens: list[int]
    cache_read_tokens: list[int]
    cache_write_tokens: list[int]
    cost_usd: list[float] | None
    token_saving_pct: float
    cost_saving_pct: float | None

    @property
    def cumulative_input_tokens(self) -> list[int]:
        return list(accumulate(self.input_tokens))

    @property
    def cumulative_cost_usd(self) -> list[float] | None:
        return None if self.cost_usd is None else list(accumulate(self.cost_usd))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _saving(actual: float, other: float) -> float:
    return (actual - other) / actual * 100 if actual else 0.0


def what_ifs(
    run: Run,
    report: CostReport,
    *,
    keep_results: int = 3,
    truncate_tokens: int = 50,
    keep_turns: int = 3,
) -> list[WhatIf]:
    """The run's curves recomputed from its recorded messages under trimming strategies and prompt caching.

    Trimmed requests are counted with the same estimate, scaled by each step's reported/estimated ratio;
    a trimmed history changes the prefix every step, so those curves assume no cache. Caching bills what each
    request shares with the one before it (the prefix already sent), or what the step did read from the cache
    where that is more, at the cache-read price and the rest at the cache-write price (genai-prices uses the input
    price where a provider has none): its saving is against the run as it was billed, its own cache reads included.
    """
    pricer = Pricer.find(report.price) if report.price else None
    outputs = [s.output_tokens for s in report.steps]
    actual_in = report.total_input_tokens
    actual_cost = report.total_cost_usd
    out: list[WhatIf] = []

    def finish(key: str, label: str, ins: list[int], reads: list[int], writes: list[int]) -> WhatIf:
        costs = None
        if pricer is not None:
            costs = [pricer.price(i, o, r, w) for i, o, r, w in zip(ins, outputs, reads, writes, strict=True)]
        cost_saving = _saving(actual_cost, sum(costs)) if costs is not None and actual_cost is not None else None
        return WhatIf(key, label, ins, reads, writes, costs, _saving(actual_in, sum(ins)), cost_saving)

    strategies = [
        ("keep_results", f"keep only the last {keep_results} tool results", {"keep_tool_results": keep_results}),
        (
            "truncate",
            f"truncate each tool result to {truncate_tokens} tokens",
            {"truncate_tool_results": truncate_tokens},
        ),
        ("drop_turns", f"drop turns older than {keep_turns} steps", {"drop_turns_older_than": keep_turns}),
    ]
    for key, label, policy in strategies:
        ins = projected_input(run, report, ContextPolicies(**policy))
        zeros = [0] * len(ins)
        out.append(finish(key, label, ins, zeros, zeros))

    ins = [s.input_tokens for s in report.steps]
    reads = _cache_reads(report)
    writes = [i - r for i, r in zip(ins, reads, strict=True)]
    out.append(finish("caching", _caching_label(report), ins, reads, writes))
    return out


def _cache_reads(report: CostReport) -> list[int]:
    """Each step's cache reads had every request read what it shares with the one before it from the cache, and
    never fewer than the step reported: what the run already cached is counted, not offered again."""
    reads = []
    for i, step in enumerate(report.steps):
        shared = _shared_prefix(report, i) if i else 0
        reads.append(min(max(shared, step.cache_read_tokens), step.input_tokens))
    return reads


def _shared_prefix(report: CostReport, i: int) -> int:
    """The input tokens step `i` (0-based) sent as the step before it had: the whole previous request where the
    history only grew, the part before the first change where a policy or a compaction rewrote it."""
    before, now = report.requests[i - 1], report.requests[i]
    same = next((k for k, (a, b) in enumerate(zip(before, now, strict=False)) if a is not b and a != b), None)
    if same is None and len(before) <= len(now):
        return min(report.steps[i - 1].input_tokens, report.steps[i].input_tokens)
    return report.rescaled_input(i, now[: len(before) if same is None else same])


def _caching_label(report: CostReport) -> str:
    """The caching strategy in words, with the share of its input the run already read from the cache."""
    label = "prompt caching (the previous request billed at the cache-read price)"
    read, sent = sum(s.cache_read_tokens for s in report.steps), report.total_input_tokens
    if not read or not sent:
        return label
    return f"{label[:-1]}; the run already read {read / sent:.0%} of its input from the cache)"


def projected_input(run: Run, report: CostReport, policies: ContextPolicies) -> list[int]:
    """Per-step input tokens the run would have sent under `policies`, projected from its recorded history."""
    return [report.rescaled_input(i, project(run, policies, i)) for i in range(len(report.steps))]


@dataclass(frozen=True)
class PolicyCurves:
    """A run made with context policies, step by step: what was measured, what the same policies project
    over its history, what sending the history whole would have cost, and the summariser's own input."""

    label: str
    measured: list[int]
    projected: list[int]
    whole: list[int]
    summariser: list[int]

    @property
    def cumulative(self) -> dict[str, list[int]]:
        """The running totals of each curve, by name."""
        names = ("measured", "projected", "whole", "summariser")
        return {n: list(accumulate(getattr(self, n))) for n in names}

    @property
    def saving(self) -> str:
        """The run's input in one line: what was sent (the summariser's own input with it) against the
        whole history, e.g. `3,783 input tokens sent against 5,300 without the policy: 29% less`."""
        sent, whole, summariser = sum(self.measured) + sum(self.summariser), sum(self.whole), sum(self.summariser)
        with_summariser = f" (the summariser's own {summariser:,} among them)" if summariser else ""
        line = f"{sent:,} input tokens sent{with_summariser} against {whole:,} without the policy"
        if not whole or sent == whole:
            return line + ": the same."
        share = round(abs(whole - sent) / whole * 100)
        return f"{line}: {share}% {'less' if sent < whole else 'more'}."


def policy_curves(run: Run, report: CostReport) -> PolicyCurves | None:
    """The curves of a run made with policies that shape the request; None for a run without.

    Each step's estimate is scaled by its measured input over the estimate of what it sent (the report's
    scale, from `sent_at`), so a scripted run's curves are exact and a real model's are in its own
    tokenizer's units.
    """
    policies = run.config.policies
    if policies is None or not policies.shapes_request or not report.steps:
        return None
    measured, projected, whole, summariser = [], [], [], []
    for i, (step, acc) in enumerate(zip(run.steps, report.steps, strict=True)):
        history = run.messages[: step.message_count]
        scale = report.scales[i]
        measured.append(acc.input_tokens)
        projected.append(round(request_tokens(project(run, policies, i), report.spec_tokens) * scale))
        whole.append(round(request_tokens(history, report.spec_tokens) * scale))
        summariser.append(sum(c.usage.input_tokens for c in step.policy_calls))
    return PolicyCurves(policies.label, measured, projected, whole, summariser)

"""The library's statistics: runs, tokens, cache hit rate, cost and step latency, added up across stored runs.

One run's accounting is `accounting.account`; across runs, the figures each run keeps beside it in the store
(`figures.RunFigures`, the same step usage and step costs) are added up per group: per provider, model,
day, owner, label or free label (tag). Tokens, cost and latency are counted per answering model, so a run
continued on another model splits between them; a run counts once in every group it has a step (or a label) in.
Per provider, model, day and owner the database adds them up (kept.py); per label and tag, `add_up` does here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

from ..errors import UsageError
from .figures import ModelFigures, RunFigures
from .kept import KEY_COLUMNS

if TYPE_CHECKING:
    from ..annotations import Annotation
    from .runs import RunSummary, Store

GroupBy = Literal["provider", "model", "day", "owner", "label", "tag"]
GROUP_BY: tuple[str, ...] = get_args(GroupBy)
ANSWERED = ("answer", "structured")  # the stop reasons of a run that gave its answer
NONE = "(none)"  # the group of a run without an owner, a label or a tag


@dataclass
class GroupStats:
    """The figures of one group of runs; `key` holds the group's value for each grouping asked for."""

    key: dict[str, str]
    runs: int = 0
    steps: int = 0
    answered_runs: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0  # None when a step's price is unknown
    estimated_steps: int = 0  # steps whose usage is an estimate: the tokens (and cost) are partly estimated
    budget_runs: int = 0  # runs that stopped at the step budget
    failed_runs: int = 0  # runs that stopped on a provider failure
    latencies_ms: list[float] = field(default_factory=list, repr=False)
    run_ids: set[str] = field(default_factory=set, repr=False)
    quantiles: dict[float, float] = field(default_factory=dict, repr=False)  # as the database ranked them

    @property
    def cache_hit_rate(self) -> float | None:
        """Cache-read tokens over input tokens; None without input."""
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else None

    @property
    def cost_per_answered_run(self) -> float | None:
        """The group's cost over its answered runs; None when none answered or the cost is unknown."""
        return self.cost_usd / self.answered_runs if self.answered_runs and self.cost_usd is not None else None

    def latency_ms(self, q: float) -> float | None:
        """The q-th quantile (0..1) of the group's step latencies, nearest rank; None without steps."""
        if q in self.quantiles:
            return self.quantiles[q]
        if not self.latencies_ms:
            return None
        ordered = sorted(self.latencies_ms)
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

    @property
    def estimated(self) -> bool:
        return self.estimated_steps > 0

    def to_dict(self) -> dict[str, Any]:
        """The group as JSON data, as `agentcore stats --json` prints it."""
        data = {k: v for k, v in asdict(self).items() if k not in ("latencies_ms", "run_ids", "quantiles")}
        return {
            **data,
            "estimated": self.estimated,
            "cache_hit_rate": self.cache_hit_rate,
            "cost_per_answered_run": self.cost_per_answered_run,
            "p50_step_latency_ms": self.latency_ms(0.5),
            "p95_step_latency_ms": self.latency_ms(0.95),
        }


def _run_keys(by: str, summary: RunSummary, tally: ModelFigures, annotations: Sequence[Annotation]) -> list[str]:
    """The values of grouping `by` that one model's tally of a run falls under."""
    if by == "provider":
        return [tally.provider]
    if by == "model":
        return [f"{tally.provider}/{tally.model}"]
    if by == "day":
        return [summary.created_at[:10]]
    if by == "owner":
        return [summary.owner or NONE]
    if by == "label":
        return sorted({label for a in annotations for label in a.labels}) or [NONE]
    if by == "tag":
        return sorted({tag for a in annotations for tag in a.tags}) or [NONE]
    raise UsageError(f"cannot group by {by!r}: choose one of {', '.join(GROUP_BY)}")


def add_up(
    rows: Iterable[tuple[RunSummary, RunFigures]],
    by: Sequence[str] = ("model",),
    annotations: dict[str, list[Annotation]] | None = None,
) -> list[GroupStats]:
    """Add the runs' figures up per group of `by` (one grouping or several: day and model, say), sorted by key."""
    for b in by:
        if b not in GROUP_BY:
            raise UsageError(f"cannot group by {b!r}: choose one of {', '.join(GROUP_BY)}")
    groups: dict[tuple[str, ...], GroupStats] = {}
    for summary, figures in rows:
        labels = (annotations or {}).get(summary.id, [])
        for tally in figures.models:
            keys: list[tuple[str, ...]] = [()]
            for b in by:
                keys = [(*k, v) for k in keys for v in _run_keys(b, summary, tally, labels)]
            for key in keys:
                g = groups.setdefault(key, GroupStats(dict(zip(by, key, strict=True))))
                _add(g, summary, tally)
    return [groups[k] for k in sorted(groups)]


def _add(g: GroupStats, summary: RunSummary, tally: ModelFigures) -> None:
    if summary.id not in g.run_ids:
        g.run_ids.add(summary.id)
        g.runs += 1
        g.answered_runs += summary.stop_reason in ANSWERED
        g.budget_runs += summary.stop_reason == "max_steps"
        g.failed_runs += summary.stop_reason == "error"
    g.steps += tally.steps
    g.input_tokens += tally.input_tokens
    g.output_tokens += tally.output_tokens
    g.cache_read_tokens += tally.cache_read_tokens
    g.cache_write_tokens += tally.cache_write_tokens
    g.cost_usd = None if g.cost_usd is None or tally.cost_usd is None else g.cost_usd + tally.cost_usd
    g.estimated_steps += tally.estimated
    g.latencies_ms.extend(tally.latency_ms)


def library_figures(
    store: Store,
    *,
    since: str | None = None,
    search: str | None = None,
    provider: str | None = None,
    owner: str | None = None,
) -> list[tuple[RunSummary, RunFigures]]:
    """The stored runs the filters keep (as the Runs page's), with their figures; `provider` keeps that provider's
    steps alone, so a mixed run counts only what that provider answered."""
    rows = store.figures(search, provider, owner=owner, since=since)
    if provider:
        rows = [(s, f.only(provider)) for s, f in rows]
    return rows


def first_day(text: str | None, option: str = "--since") -> str | None:
    """A `since` day (YYYY-MM-DD) as the stores' filters take it; a UsageError naming `option` for anything else."""
    from datetime import date

    if text is None:
        return None
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise UsageError(f"{option} {text[:40]!r}: a date, YYYY-MM-DD") from None


def library_stats(
    store: Store,
    by: Sequence[str] = ("model",),
    *,
    since: str | None = None,
    search: str | None = None,
    provider: str | None = None,
    owner: str | None = None,
) -> list[GroupStats]:
    """The figures of the stored runs the filters keep, per group of `by`: added up by the database (kept.py),
    but for labels and tags, which are added up here from each run's figures."""
    if set(by) <= set(KEY_COLUMNS):
        return _in_database(store, by, since=since, search=search, provider=provider, owner=owner)
    rows = library_figures(store, since=since, search=search, provider=provider, owner=owner)
    labels = store.annotations_by_run() if {"label", "tag"} & set(by) else None
    return add_up(rows, by, labels)


def _in_database(store: Store, by: Sequence[str], **filters: str | None) -> list[GroupStats]:
    groups = []
    for columns, added, quantiles in store.added_up(by, **filters):
        words = {
            "provider": columns.get("provider"),
            "model": f"{columns.get('provider')}/{columns.get('model')}",
            "day": columns.get("day"),
            "owner": columns.get("owner") or NONE,
        }
        groups.append(GroupStats({b: str(words[b]) for b in by}, **added, quantiles=quantiles))
    return sorted(groups, key=lambda g: tuple(g.key.values()))


def most_expensive(rows: Iterable[tuple[RunSummary, RunFigures]], n: int = 10) -> list[RunSummary]:
    """The `n` runs that cost the most (an unpriced run's cost counts as 0), most expensive first."""
    return sorted((s for s, _ in rows), key=lambda s: (-(s.cost_usd or 0.0), s.id))[:n]


def totals(groups: Sequence[GroupStats]) -> dict[str, Any]:
    """The token and cost totals over groups that each count a step once (a grouping by provider, model or day)."""
    cost: float | None = 0.0
    for g in groups:
        cost = None if cost is None or g.cost_usd is None else cost + g.cost_usd
    fields = ("steps", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "estimated_steps")
    return {**{f: sum(getattr(g, f) for g in groups) for f in fields}, "cost_usd": cost}

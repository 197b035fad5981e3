"""A run's figures: its tokens, cost and step latencies per model that answered a step, one typed record that adds.

The store keeps them beside each run as it is saved, priced once (`RunFigures.of`), so the library's statistics
(stats.py) add figures up without reading a transcript again. Each step is counted by `accounting.step_usage` and
priced by `accounting.step_costs`, so the tallies add up to the run's own accounting.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ..accounting import step_costs, step_usage
from ..run import Run

FIGURES_VERSION = 1  # bump when what `RunFigures.of` counts changes: a stored row of another version is recounted


def _added(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


@dataclass(frozen=True)
class ModelFigures:
    """What one model answered of a run: its steps, their tokens and cost (None: a price unknown), the steps whose
    usage is an estimate, and each step's latency."""

    provider: str
    model: str
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0
    estimated: int = 0
    latency_ms: tuple[float, ...] = ()

    def __add__(self, other: ModelFigures) -> ModelFigures:
        """The two tallies together, under this one's provider and model."""
        counts = {
            f.name: getattr(self, f.name) + getattr(other, f.name)
            for f in fields(self)
            if f.name not in ("provider", "model", "cost_usd")
        }
        return replace(self, **counts, cost_usd=_added(self.cost_usd, other.cost_usd))


@dataclass(frozen=True)
class RunFigures:
    """A run's figures per answering model, in the order the models first answered; `cost_usd` is the run's
    cost as its steps add up in order (what the library lists), None when a step's price is unknown."""

    models: tuple[ModelFigures, ...] = ()
    cost_usd: float | None = 0.0

    @classmethod
    def of(cls, run: Run) -> RunFigures:
        """The run's figures, each step priced once."""
        costs = step_costs(run)
        models: dict[tuple[str, str], ModelFigures] = {}
        total: float | None = 0.0
        for n, (step, cost) in enumerate(zip(run.steps, costs, strict=True), start=1):
            usage, estimated = step_usage(run, n)
            who = run.answered_by(step)
            one = ModelFigures(
                who.provider,
                who.model,
                1,
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens,
                cost,
                int(estimated),
                (round(step.latency_ms, 3),),
            )
            key = (who.provider, who.model)
            models[key] = models[key] + one if key in models else one
            total = _added(total, cost)
        return cls(tuple(models.values()), total)

    def __add__(self, other: RunFigures) -> RunFigures:
        """Both runs' figures, a model both have added into one tally."""
        models = {(m.provider, m.model): m for m in self.models}
        for m in other.models:
            key = (m.provider, m.model)
            models[key] = models[key] + m if key in models else m
        return RunFigures(tuple(models.values()), _added(self.cost_usd, other.cost_usd))

    def only(self, provider: str) -> RunFigures:
        """What this provider's models answered of the run, alone."""
        kept = tuple(m for m in self.models if m.provider == provider)
        cost: float | None = 0.0
        for m in kept:
            cost = _added(cost, m.cost_usd)
        return RunFigures(kept, cost)

    def to_json(self) -> str:
        """As the store keeps it beside the run."""
        data = {"version": FIGURES_VERSION, "cost_usd": self.cost_usd, "models": [asdict(m) for m in self.models]}
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> RunFigures | None:
        """What the store kept, or None for a row written without figures or by an agentcore that counted
        otherwise (another version): such a run is counted again from its steps."""
        try:
            data: Any = json.loads(text) if text else None
        except ValueError:
            return None
        if not isinstance(data, dict) or data.get("version") != FIGURES_VERSION or "cost_usd" not in data:
            return None
        try:
            models = tuple(
                ModelFigures(**{**m, "latency_ms": tuple(m.get("latency_ms", ()))}) for m in data.get("models", [])
            )
        except TypeError:
            return None
        return cls(models, data["cost_usd"])

"""Tokens, cost and the quadratic fit of a run, derived from its messages and step records.

Every request resends the whole message list, so per-step input grows about linearly
with the step number and the cumulative input quadratically. Prices come from
genai-prices, the maintained price database; nothing here calls a model.

What step n sent (`sent_at`) and what a step is counted and priced by (`step_usage`, `step_costs`)
are answered here once, for the Cost page, the gauge, the what-if curves, the store and the tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from .messages import (
    MESSAGE_LIST,
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
    estimate_tokens,
)
from .providers import FREE_PROVIDERS
from .providers.prices import Pricer, PriceRef, pricer_for, run_price_ref, step_price_ref
from .run import Run
from .steps import ModelRef, StepRecord

PARTS = ("system", "user", "assistant_text", "tool_calls", "tool_results", "tool_specs")
PART_LABELS = {
    "system": "system prompt",
    "user": "user",
    "assistant_text": "assistant text",
    "tool_calls": "tool calls",
    "tool_results": "tool results",
    "tool_specs": "tool definitions",
}
CLEARED = "[cleared]"  # what a dropped tool result is replaced with, so each call keeps its answer


# -- cost ----------------------------------------------------------------------------


def run_cost(run: Run) -> float | None:
    """The run's cost in US dollars: its `step_costs` added up, so `account`'s total wherever that is priced.

    A run answered by free providers alone costs 0 here (its policy calls aside), where `account` leaves
    it unpriced so that the Cost page can price the same tokens as another model; None when a step's
    price is unknown.
    """
    return _total(step_costs(run))


def _total(costs: Iterable[float | None]) -> float | None:
    # added in step order, as account's running total is, so both give the same float
    total: float | None = 0.0
    for cost in costs:
        total = None if total is None or cost is None else total + cost
    return total


def _policy_cost(steps: Iterable[StepRecord]) -> float | None:
    """What the calls a context policy made for these steps (the summariser's) cost; None when one is unpriced."""
    costs = [call.cost_usd for step in steps for call in step.policy_calls]
    return None if None in costs else sum(costs)


# -- tokens per request ---------------------------------------------------------------


def message_parts(m: Message) -> dict[str, int]:
    """Estimated tokens of one message, split by kind; the parts add up to what estimate_request_tokens counts."""
    total = m.tokens
    if isinstance(m, SystemMessage):
        return {"system": total}
    if isinstance(m, UserMessage):
        return {"user": total}
    if isinstance(m, ToolMessage):
        return {"tool_results": total}
    if isinstance(m, AssistantMessage):
        if not m.tool_calls:
            return {"assistant_text": total}
        text = estimate_tokens(m.content or "")
        return {"assistant_text": text, "tool_calls": total - text}
    raise TypeError(f"not a message: {m!r}")


def tool_tokens(run: Run) -> int:
    """Estimated tokens of the run's tool definitions, sent with every request."""
    specs = run.tool_specs
    return sum(estimate_tokens(s.name + s.description + json.dumps(s.parameters, separators=(",", ":"))) for s in specs)


def request_parts(messages: list[Message], spec_tokens: int) -> dict[str, int]:
    """Estimated tokens of one request, split by kind, the tool definitions included."""
    parts = dict.fromkeys(PARTS, 0)
    parts["tool_specs"] = spec_tokens
    for m in messages:
        for k, v in message_parts(m).items():
            parts[k] += v
    return parts


def _scale_parts(parts: dict[str, int], total: int) -> dict[str, int]:
    """Scale integer parts to sum to `total`, by largest remainder, so the stacked bars match the input."""
    raw = sum(parts.values())
    if raw == total or raw == 0:
        return dict(parts)
    exact = {k: v * total / raw for k, v in parts.items()}
    out = {k: int(x) for k, x in exact.items()}
    for k in sorted(exact, key=lambda k: exact[k] - out[k], reverse=True)[: total - sum(out.values())]:
        out[k] += 1
    return out


# -- what a step sent and what it cost ------------------------------------------------


def sent_at(run: Run, n: int, *, hooks: bool = True) -> list[Message]:
    """The messages step `n` (1-based) sent: the history under its context policies' record, then each change a
    before-model hook made (its "messages" and "message_list" effects, in the order they ran): what the model read.

    The one answer for the exports, the trace, the Cost page, the gauge and what-if. `hooks=False`: what the
    policies made of the history before any other hook changed it.
    """
    step = run.steps[n - 1]
    history = run.messages[: step.message_count]
    sent = list(history) if step.sent is None else step.sent.messages(history)
    if hooks:
        for effect in step.hook_effects:
            if effect.point == "before_model" and effect.kind in ("messages", "message_list"):
                sent = _applied(sent, effect.kind, effect.after)
    return sent


def _applied(sent: list[Message], kind: str, after: Any) -> list[Message]:
    """`sent` with one before-model effect's payload applied; a payload that does not read as messages changes
    nothing (a file's record is untrusted)."""
    try:
        if kind == "message_list" and isinstance(after, list):
            return MESSAGE_LIST.validate_python(after)
        if isinstance(after, dict) and all(k.isdigit() and int(k) < len(sent) for k in after):
            changed = MESSAGE_LIST.validate_python(list(after.values()))
            sent = list(sent)
            for k, message in zip(after, changed, strict=True):
                sent[int(k)] = message
    except ValidationError:
        pass
    return sent


def sent_tokens(run: Run, n: int) -> int:
    """Estimated input tokens of what step `n` sent: its messages and the tool definitions."""
    return sum(m.tokens for m in sent_at(run, n)) + tool_tokens(run)


def step_usage(run: Run, n: int) -> tuple[Usage, bool]:
    """The tokens step `n` (1-based) is counted and priced by, and whether any of them is an estimate.

    The one rule for the Cost page, the gauge, `account` and `run_cost`:
    - an input of 0 was not recorded (a request always sends something): it is estimated from what the
      step sent (`sent_tokens`), and the step is marked estimated;
    - an output of 0 beside a reply with text or reasoning was not recorded either: it is estimated from
      that reply, its reasoning counted as output;
    - reasoning is part of the output, as Usage counts it; a reasoning count above the output (a server
      that counted it apart, or a file's mistake) raises the output to it, the least that both counts
      allow, so the step is billed for every token a count says the model wrote and none twice;
    - cache reads and writes are taken as recorded.
    """
    return _counted(run, n, lambda: sent_tokens(run, n))


def _counted(run: Run, n: int, estimate_input: Callable[[], int]) -> tuple[Usage, bool]:
    record = run.steps[n - 1]
    u = record.usage
    inp, out, reasoning, estimated = u.input_tokens, u.output_tokens, u.reasoning_tokens, record.estimated
    if inp == 0:
        inp, estimated = estimate_input(), True
    if out == 0:
        reply = run.messages[record.message_count] if record.message_count < len(run.messages) else None
        guessed, guessed_reasoning = _estimate_output(reply)
        if guessed:
            out, reasoning, estimated = guessed, max(reasoning, guessed_reasoning), True
    out = max(out, reasoning)
    counted = u.model_copy(update={"input_tokens": inp, "output_tokens": out, "reasoning_tokens": reasoning})
    return counted, estimated


def _estimate_output(reply: Message | None) -> tuple[int, int]:
    """Estimated output and reasoning tokens of a reply whose usage was not recorded; its reasoning is output."""
    if reply is None:
        return 0, 0
    reasoning = sum(estimate_tokens(p.display_text) for p in getattr(reply, "reasoning", ()))
    return estimate_tokens(reply.text) + reasoning, reasoning


def step_costs(run: Run, price_as: PriceRef | None = None) -> list[float | None]:
    """Each step's cost in US dollars: its `step_usage` at the price of the model that answered it (or of
    `price_as`), with the calls its policies made; a free provider's step costs 0, an unknown price is None."""
    out = []
    for n, step in enumerate(run.steps, start=1):
        pricer = _step_pricer(run, step, price_as)
        # a free or unpriced step's cost does not depend on its tokens: count them only where they are priced
        usage = step_usage(run, n)[0] if isinstance(pricer, Pricer) else step.usage
        out.append(_step_cost(pricer, usage, step))
    return out


# how every page and command says a cost in US dollars: to the millionth (a step on a small model costs a few of
# them), thousands separated, so one run reads the same wherever it is said
COST_FORMAT = ",.6f"


@dataclass(frozen=True)
class CacheSaving:
    """What the prompt cache saved a run, as reported: its cost with and without the cached tokens' rates."""

    cost_usd: float  # as the steps were billed, cache reads and writes at their own rates
    uncached_usd: float  # the same tokens, every one of them billed as plain input

    @property
    def saved_usd(self) -> float:
        return self.uncached_usd - self.cost_usd

    @property
    def saved_share(self) -> float:
        return self.saved_usd / self.uncached_usd if self.uncached_usd else 0.0


def cache_saving(run: Run, report: CostReport | None = None) -> CacheSaving | None:
    """What the cache reads and writes the steps reported saved: the run's cost as `report` prices it (the Cost
    page's headline; `account(run)`, so `run_cost`, when no report is given) beside the same tokens with the cached
    ones billed as plain input, each step at its own price. None when no priced step reported any, or a price is
    unknown."""
    report = report or account(run)
    cost = report.total_cost_usd
    if cost is None:
        return None
    extra, cached = 0.0, False
    for step, pricer in zip(report.steps, report.pricers, strict=True):
        reads, writes = step.cache_read_tokens, step.cache_write_tokens
        if not (reads or writes) or not isinstance(pricer, Pricer):  # a free step saves nothing
            continue
        cached = True
        inp, out = step.input_tokens, step.output_tokens
        extra += _price(pricer, inp, out, 0, 0) - _price(pricer, inp, out, reads, writes)
    return CacheSaving(cost, cost + extra) if cached else None


def _step_pricer(run: Run, step: StepRecord, price_as: PriceRef | None) -> Pricer | str | None:
    """The step's pricer: `price_as`'s, "free" for a free provider's step, else its model's (None if unknown)."""
    if price_as is None and run.answered_by(step).provider in FREE_PROVIDERS:
        return "free"
    return pricer_for(price_as or step_price_ref(run, step))


def _step_cost(pricer: Pricer | str | None, usage: Usage, step: StepRecord) -> float | None:
    if isinstance(pricer, Pricer):
        cost: float | None = _price(pricer, usage.input_tokens, usage.output_tokens, *_cached(usage))
    else:
        cost = 0.0 if pricer == "free" else None
    charged = _policy_cost([step])  # a summariser's call is charged to the step it was made for
    return None if cost is None or charged is None else cost + charged


def _cached(usage: Usage) -> tuple[int, int]:
    return usage.cache_read_tokens, usage.cache_write_tokens


@lru_cache(maxsize=4096)
def _price(pricer: Pricer, input_tokens: int, output_tokens: int, cache_read: int, cache_write: int) -> float:
    # the store prices a run after every phase, its earlier steps again: price each step's tokens once
    return pricer.price(input_tokens, output_tokens, cache_read, cache_write)


# -- per-step accounting --------------------------------------------------------------


@dataclass(frozen=True)
class StepAccount:
    """One step's tokens (reported or estimated), request composition and cost, with running totals."""

    index: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    estimated: bool
    composition: dict[str, int]
    cumulative_input_tokens: int
    cumulative_output_tokens: int
    cost_usd: float | None
    cumulative_cost_usd: float | None
    model: str = ""  # who answered the step, `provider/model`
    priced_as: str | None = None  # the genai-prices model its cost is in, "free", or None when unpriced
    reasoning_tokens: int = 0  # the part of output_tokens the model spent reasoning

    def row(self) -> dict[str, Any]:
        """The step as one flat table row: the same columns on the page, in the CSV and in `agentcore cost`."""
        fields = {k: v for k, v in asdict(self).items() if k != "composition"}
        return {**fields, **{f"in_{k}": self.composition[k] for k in PARTS}}


@dataclass(frozen=True)
class Fit:
    """A least-squares polynomial fit: y ≈ a + b·n (+ c·n²), with its R²."""

    a: float
    b: float
    c: float
    r2: float

    def at(self, n: float) -> float:
        return self.a + self.b * n + self.c * n * n

    def to_dict(self) -> dict[str, float]:
        return {"a": self.a, "b": self.b, "c": self.c, "r2": self.r2}


def fit_polynomial(ys: list[float], degree: int = 2) -> Fit | None:
    """Fit ys against n = 1, 2, …; None when there are fewer points than coefficients."""
    import numpy as np

    if len(ys) < degree + 1:
        return None
    n = np.arange(1, len(ys) + 1, dtype=float)
    y = np.asarray(ys, dtype=float)
    coeffs = np.polynomial.polynomial.polyfit(n, y, degree)  # lowest power first
    predicted = np.polynomial.polynomial.polyval(n, coeffs)
    ss_res = float(((y - predicted) ** 2).sum())
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res < 1e-9 else 0.0)
    a, b, c = (float(x) for x in [*coeffs, 0.0][:3])
    return Fit(a, b, c, r2)


@dataclass
class CostReport:
    """The whole run's accounting: steps, the fits, and how it was priced (or why not).

    Each step is priced as the model that answered it, so a run continued on another model is priced
    per step: `models` lists who answered, `prices` what the costs are in.
    """

    steps: list[StepAccount]
    prices: list[PriceRef]  # the genai-prices models the steps are priced as, in step order
    price_note: str | None  # why a cost is missing, when one is
    fit: Fit | None  # cumulative input against step number, quadratic
    per_step_fit: Fit | None  # per-step input against step number, linear
    requests: list[list[Message]] = field(default_factory=list, repr=False)  # what each step sent
    scales: list[float] = field(default_factory=list, repr=False)  # each step's reported/estimated input ratio
    spec_tokens: int = 0  # estimated tokens of the tool definitions, sent with every request
    pricers: list[Pricer | str | None] = field(default_factory=list, repr=False)  # each step's, as `_pricing` says

    models: list[ModelRef] = field(default_factory=list)  # who answered the steps, in step order

    @property
    def mixed(self) -> bool:
        """Whether more than one provider or model answered the steps."""
        return len(self.models) > 1

    @property
    def price(self) -> PriceRef | None:
        """The one model every priced step is priced as; None when unpriced or priced as several."""
        return self.prices[0] if len(self.prices) == 1 else None

    @property
    def price_label(self) -> str | None:
        """What the costs are in, in words: `openai:gpt-4o-mini`, or several joined by arrows."""
        return " → ".join(p.label for p in self.prices) or None

    @property
    def priced(self) -> bool:
        """Whether every step has a cost."""
        return bool(self.prices) and all(s.cost_usd is not None for s in self.steps)

    @property
    def total_cost_usd(self) -> float | None:
        if not self.priced:
            return None
        return self.steps[-1].cumulative_cost_usd if self.steps else 0.0  # nothing sent yet: nothing spent

    @property
    def total_input_tokens(self) -> int:
        return self.steps[-1].cumulative_input_tokens if self.steps else 0

    @property
    def total_output_tokens(self) -> int:
        return self.steps[-1].cumulative_output_tokens if self.steps else 0

    @property
    def total_reasoning_tokens(self) -> int:
        """The part of the output tokens spent reasoning, over all steps."""
        return sum(s.reasoning_tokens for s in self.steps)

    def rescaled_input(self, position: int, request: list[Message]) -> int:
        """Step `position`'s input tokens had it sent `request` instead: the same estimate, this step's ratio."""
        raw = sum(request_parts(request, self.spec_tokens).values())
        return min(round(raw * self.scales[position]), self.steps[position].input_tokens)

    def rows(self) -> list[dict[str, Any]]:
        return [s.row() for s in self.steps]

    def project(self, up_to: int) -> list[float]:
        """The fitted cumulative input at steps 1..up_to (empty without a fit)."""
        return [self.fit.at(n) for n in range(1, up_to + 1)] if self.fit else []

    def explanation(self) -> str:
        """One sentence on why the cumulative input is quadratic, in this run's numbers."""
        n = len(self.steps)
        if self.fit is None or self.per_step_fit is None:
            return f"Only {n} step{'s' * (n != 1)}: a quadratic fit needs at least three, so only the points are shown."
        first, last = self.steps[0].input_tokens, self.steps[-1].input_tokens
        slope = self.per_step_fit.b
        return (
            f"Each step resent on average {slope:,.0f} more input tokens than the one before "
            f"({first:,} at step 1, {last:,} at step {n}), because the whole history goes back every time; "
            f"adding up a line gives a parabola, so the running total grows like {slope / 2:,.1f}·n² "
            f"(the fitted c is {self.fit.c:,.1f})."
        )

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON data: `steps`, `fit`, the totals and the pricing."""
        return {
            "steps": self.rows(),
            "fit": self.fit.to_dict() if self.fit else None,
            "per_step_fit": self.per_step_fit.to_dict() if self.per_step_fit else None,
            "priced_as": self.price_label,
            "price_note": self.price_note,
            "models": [m.label for m in self.models],
            "mixed": self.mixed,
            "total_input_tokens": self.total_input_tokens,
            "total_output_tokens": self.total_output_tokens,
            "total_reasoning_tokens": self.total_reasoning_tokens,
            "total_cost_usd": self.total_cost_usd,
            "explanation": self.explanation(),
        }


def _pricing(run: Run, price_as: PriceRef | None) -> tuple[list[Pricer | str | None], list[PriceRef], str | None]:
    """Each step's pricer, the models the costs are in, and why a cost is missing (None when none is).

    A step is priced as `step_costs` prices it, except that a run of free steps alone stays unpriced, to be
    priced as another model; None when genai-prices does not know the model. A run without steps is
    priced as its configured model.
    """
    pricers: list[Pricer | str | None] = [_step_pricer(run, s, price_as) for s in run.steps]
    refs = [price_as or step_price_ref(run, s) for s in run.steps] or [price_as or run_price_ref(run)]
    if not any(isinstance(p, Pricer) for p in pricers):
        pricers = [pricer_for(ref) for ref in refs]
    prices = list(dict.fromkeys(p.ref for p in pricers if isinstance(p, Pricer)))
    unknown = ", ".join(dict.fromkeys(ref.label for ref, p in zip(refs, pricers, strict=True) if p is None))
    note = f"genai-prices does not know {unknown}: choose a model to price the same tokens as" if unknown else None
    return pricers[: len(run.steps)], prices, note


def account(run: Run, price_as: PriceRef | None = None) -> CostReport:
    """Account for every step of a run; price each step as the model that answered it, or all as `price_as`.

    Each step's request is what it sent (`sent_at`), its tokens are `step_usage`'s and its cost is what
    `step_costs` says, so the total is `run_cost` wherever the run is priced.
    """
    spec_tokens = tool_tokens(run)
    pricers, prices, note = _pricing(run, price_as)
    steps: list[StepAccount] = []
    requests: list[list[Message]] = []
    scales: list[float] = []
    cum_in = cum_out = 0
    cum_cost: float | None = 0.0
    for n, (record, pricer) in enumerate(zip(run.steps, pricers, strict=True), start=1):
        request = sent_at(run, n)
        raw = request_parts(request, spec_tokens)
        raw_total = sum(raw.values())
        u, estimated = _counted(run, n, lambda total=raw_total: total)
        inp, out = u.input_tokens, u.output_tokens
        cost = _step_cost(pricer, u, record)
        cum_in, cum_out = cum_in + inp, cum_out + out
        cum_cost = None if cum_cost is None or cost is None else cum_cost + cost
        steps.append(
            StepAccount(
                index=record.index,
                input_tokens=inp,
                output_tokens=out,
                cache_read_tokens=u.cache_read_tokens,
                cache_write_tokens=u.cache_write_tokens,
                estimated=estimated,
                composition=_scale_parts(raw, inp),
                cumulative_input_tokens=cum_in,
                cumulative_output_tokens=cum_out,
                cost_usd=cost,
                cumulative_cost_usd=cum_cost,
                model=run.answered_by(record).label,
                priced_as=pricer.ref.label if isinstance(pricer, Pricer) else pricer,
                reasoning_tokens=u.reasoning_tokens,
            )
        )
        requests.append(request)
        scales.append(inp / raw_total if raw_total else 1.0)
    return CostReport(
        steps=steps,
        prices=prices,
        price_note=note,
        fit=fit_polynomial([s.cumulative_input_tokens for s in steps], 2),
        per_step_fit=fit_polynomial([s.input_tokens for s in steps], 1),
        requests=requests,
        scales=scales,
        spec_tokens=spec_tokens,
        pricers=pricers,
        models=run.models,
    )

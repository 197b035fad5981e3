"""The context-window gauge: how much of the model's window each request filled, and whether the next one fits.

The window comes from the catalogue (genai-prices' context windows), or for the embedded model from the
n_ctx it was loaded with. A step's tokens are its input as accounting counts it (`step_usage`: the
reported input, else the estimate of what it sent), so the gauge and the Cost page's composition agree; the
next request is the estimate of what the policies would send, in the model's own units (scaled by the last
step's reported/estimated ratio).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .accounting import sent_tokens, step_usage, tool_tokens
from .catalogue import context_window
from .policies import origins, plan_request, request_tokens, sent_request, stand_in_summary
from .run import Run

WARN_SHARE = 0.9  # a request past this share of the window is warned about before it is sent

Level = Literal["ok", "warn", "over", "unknown"]


@dataclass(frozen=True)
class Gauge:
    """One request's tokens against the model's context window."""

    step: int
    tokens: int
    window: int | None

    @property
    def share(self) -> float | None:
        """The part of the window the request fills (above 1 when it overflows); None without a window."""
        return self.tokens / self.window if self.window else None

    @property
    def level(self) -> Level:
        share = self.share
        if share is None:
            return "unknown"
        return "over" if share > 1 else "warn" if share >= WARN_SHARE else "ok"

    @property
    def words(self) -> str:
        """The gauge in words: `1,234 of 8,192 tokens (15%)`."""
        if self.window is None:
            return f"{self.tokens:,} tokens (the model's context window is not known)"
        return f"{self.tokens:,} of {self.window:,} tokens ({self.share:.0%})"


def window_of(run: Run, provider: Any = None) -> int | None:
    """The context window of the run's model: the embedded model's n_ctx, else the catalogue's."""
    n_ctx = getattr(provider, "n_ctx", None)
    if isinstance(n_ctx, int) and n_ctx > 0:
        return n_ctx
    model = getattr(provider, "model", None) or run.config.model
    return context_window(getattr(provider, "name", None) or run.config.provider, model)


def step_gauges(run: Run, provider: Any = None, window: int | None = None) -> list[Gauge]:
    """Each step's request against the window: its reported input tokens, or the estimate of what it sent."""
    window = window if window is not None else window_of(run, provider)
    return [Gauge(s.index, step_usage(run, n)[0].input_tokens, window) for n, s in enumerate(run.steps, start=1)]


def next_gauge(run: Run, provider: Any = None, window: int | None = None) -> Gauge:
    """The next model phase's request, estimated under the run's policies (a summary at its longest)."""
    window = window if window is not None else window_of(run, provider)
    history = run.messages
    step = len(run.steps) + 1
    policies = run.config.policies
    if policies is not None and policies.shapes_request:
        plan = plan_request(history, origins(run, len(history)), step, policies)
        history = sent_request(plan, stand_in_summary() if plan.to_summarise else None).messages(history)
    estimate = request_tokens(history, tool_tokens(run))
    last = run.steps[-1] if run.steps else None
    if last is not None and last.usage.input_tokens and not last.estimated:
        sent = sent_tokens(run, len(run.steps))
        estimate = round(estimate * last.usage.input_tokens / sent) if sent else estimate
    return Gauge(step, estimate, window)

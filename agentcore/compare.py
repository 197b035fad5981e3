"""Side-by-side comparison: one prompt, one system prompt and one tool set on 2 to 4 provider configurations.

Each column is its own Run and Agent. Step all and Run all drive every column at once, each
on its own thread, so a comparison lasts as long as its slowest column, not the sum; a
column's failure is recorded in that column and stops nothing else. A comparison may play a
conversation (`play`): Run all then plays it on each column, with a user of the column's own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .compare_report import (
    FORMAT,
    FREE_PROVIDERS,
    VERSION,
    ExpectedAnswer,
    format_table,
    load_bundle,
    make_bundle,
    scenario_expectation,
    step_row,
    step_series,
    summarize,
    unique_labels,
    wire_requests,
)
from .errors import AgentcoreError, UsageError
from .loop import Agent, Event
from .messages import MAX_COUNT, UserMessage
from .providers import REGISTRY, create_provider
from .request import settings_refusal
from .run import Run, RunConfig
from .tools import Tool

__all__ = [
    "FORMAT",
    "FREE_PROVIDERS",
    "MAX_COLUMNS",
    "MIN_COLUMNS",
    "VERSION",
    "Column",
    "ColumnSpec",
    "Comparison",
    "ExpectedAnswer",
    "Origin",
    "column_labels",
    "format_table",
    "load_bundle",
    "make_bundle",
    "parse_spec",
    "scenario_expectation",
    "step_series",
    "summarize",
    "unique_labels",
    "wire_requests",
]

MIN_COLUMNS, MAX_COLUMNS = 2, 4

ColumnState = Literal["ready", "running", "done", "error"]
Factory = Callable[..., Any]
# how Run all plays a column in place of the agent's run: a pinned test's conversation, its scripted turns and its
# simulated user (agentcore.testing.users.playing), the agent answering each turn
Play = Callable[[Agent, Run, threading.Event], None]


@dataclass(frozen=True)
class ColumnSpec:
    """One configuration to compare. Holds no credential: keys are passed to `Comparison` separately."""

    provider: str
    model: str | None = None
    base_url: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    label: str | None = None

    @property
    def name(self) -> str:
        """`provider:model@base_url`, as the command line writes it."""
        text = self.provider + (f":{self.model}" if self.model else "")
        return text + (f"@{self.base_url}" if self.base_url else "")


@dataclass(frozen=True)
class Origin:
    """Where a comparison of a stored run starts: the run, and the step whose model call every column makes again.

    Each column is a fork of the run just before that call (`Run.fork`): the history up to it, the run's tools,
    system prompt, settings, policies, hooks, breakpoints and mocks, on the column's provider and model. It makes
    `steps` model calls from there (None: to the end of the run's step budget; 1: step k asked again).
    """

    run: Run
    step: int
    steps: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.step <= len(self.run.steps):
            have = len(self.run.steps)
            raise UsageError(
                f"run {self.run.id} has {have} step{'s' if have != 1 else ''}: there is no step {self.step}"
            )
        if self.steps is not None and not 1 <= self.steps <= MAX_COUNT:
            raise UsageError(f"the steps to make from step {self.step} are a whole number from 1, not {self.steps}")

    @property
    def budget(self) -> int:
        """Each fork's step budget: the steps it keeps, and those it makes."""
        if self.steps is None:
            return max(self.run.config.max_steps, self.step)
        return self.step - 1 + self.steps

    @property
    def prompt(self) -> str:
        """The run's first user message: what the comparison is about."""
        first = next((m for m in self.run.messages if isinstance(m, UserMessage) and m.content.strip()), None)
        return first.content if first is not None else f"run {self.run.id}"

    def fork(self, spec: ColumnSpec, model: str, label: str) -> Run:
        """The run forked before step k's call, on `spec`'s provider and model; every other setting the run's own."""
        fork = self.run.fork(self.step)
        update: dict[str, Any] = {
            "provider": spec.provider,
            "model": model,
            "base_url": spec.base_url,
            "scenario": model if spec.provider == "scripted" else None,
            "max_steps": self.budget,
        }
        update |= {
            name: getattr(spec, name)
            for name in ("temperature", "max_tokens", "seed")
            if getattr(spec, name) is not None
        }
        fork.config = fork.config.model_copy(update=update)
        fork.title = f"{self.run.title or self.run.id} · from step {self.step} · {label}"
        return fork

    def row(self, label: str) -> dict[str, Any]:
        """The original's own step k, as step_row gives it."""
        return step_row(self.run, self.step, label)


def column_labels(specs: Sequence[ColumnSpec]) -> list[str]:
    """Each column's title: provider and model, then the settings that differ between the columns; `#2` for a repeat.

    `openai:gpt-4o-mini · T=0.2` beside `openai:gpt-4o-mini · T=1.0`; a spec's own label is kept as it is.
    """

    def differs(name: str) -> bool:
        return len({getattr(s, name) for s in specs}) > 1

    shown = {
        "temperature": lambda v: f"T={'default' if v is None else round(v, 2)}",
        "max_tokens": lambda v: "default max tokens" if v is None else f"max {v:,} tokens",
        "seed": lambda v: f"seed {'none' if v is None else v}",
    }
    labels = []
    for spec in specs:
        parts = [spec.name, *(say(getattr(spec, name)) for name, say in shown.items() if differs(name))]
        labels.append(spec.label or " · ".join(parts))
    return unique_labels(labels)


def parse_spec(text: str) -> ColumnSpec:
    """Parse `PROVIDER[:MODEL][@BASE_URL]`; for the scripted provider the model is the scenario."""
    head, at, base_url = text.strip().partition("@")
    provider, _, model = head.partition(":")
    provider, model, base_url = provider.strip(), model.strip(), base_url.strip()
    if not provider or (at and not base_url):
        raise UsageError(f"config {text!r}: expected PROVIDER[:MODEL][@BASE_URL], e.g. openai:gpt-4o-mini")
    return ColumnSpec(provider=provider, model=model or None, base_url=base_url or None)


class Column:
    """One configuration's run, its agent, and what it is doing now.

    A provider that takes an API key is built afresh for each action and dropped when it
    ends, so no key outlives the call that needs it; other providers are kept.
    """

    def __init__(self, spec: ColumnSpec, label: str, run: Run, setup_error: str | None = None) -> None:
        self.spec = spec
        self.label = label
        self.run = run
        self.agent: Agent | None = None
        self.holds_key = getattr(REGISTRY.get(spec.provider), "key_env", None) is not None
        self.setup_error = setup_error
        self.activity = "idle"  # what the column does right now, in words
        self._live: list[str] = []  # the model's text so far in the current model phase, piece by piece
        self.wall_s = 0.0  # seconds this column spent in step/run actions, in total
        self.busy = False
        self.crash: str | None = None  # an unexpected exception in this column's thread
        self.play: Play | None = None

    @property
    def state(self) -> ColumnState:
        """ready, running, done or error: what the page shows at the column's head."""
        if self.busy:
            return "running"
        if self.setup_error or self.crash or self.run.stop_reason == "error":
            return "error"
        if self.finished:
            return "done"
        return "ready"

    @property
    def error(self) -> str | None:
        return self.setup_error or self.crash or self.run.error

    @property
    def finished(self) -> bool:
        """Whether the run has ended: an answer, a filled schema, or the step budget used up."""
        return self.run.finished

    @property
    def live_text(self) -> str:
        """The model's text so far in the current model phase, when it streams ("" between phases)."""
        return "".join(self._live)

    @live_text.setter
    def live_text(self, text: str) -> None:
        self._live = [text]

    def _observe(self, event: Event) -> None:
        if event.kind == "phase_started" and event.phase == "model":
            self.activity, self._live = f"step {event.step}: calling the model", []
        elif event.kind == "text_delta":
            self._live.append(event.text or "")  # kept as pieces: adding to one string copies it whole each time
        elif event.kind == "phase_started" and event.phase == "tools":
            self.activity = f"step {event.step}: running tools"
        elif event.kind == "tool_started" and event.tool_call is not None:
            self.activity = f"step {event.step}: running {event.tool_call.name}"
        elif event.kind == "error":
            self.activity = f"step {event.step}: provider error"

    def _act(
        self, mode: Literal["step", "run"], cancel: threading.Event, build: Callable[[], Agent] | None = None
    ) -> None:
        started = time.perf_counter()
        try:
            if build is not None:  # built here, on the column's own thread, so setup time overlaps too
                self.agent = build()
            if self.agent is None or self.finished:
                return
            self.crash = None
            if mode == "step":
                self.agent.step(self.run)
            elif self.play is not None:
                self.play(self.agent, self.run, cancel)
            else:
                self.agent.run(self.run, cancel)
        except AgentcoreError as exc:
            self.crash = str(exc)
        except Exception as exc:  # noqa: BLE001 - one column's bug must not take the others down
            self.crash = f"{type(exc).__name__}: {exc}"
        finally:
            if self.holds_key:
                self.agent = None
            self.wall_s += time.perf_counter() - started
            self._live = []
            self.activity = "idle"
            self.busy = False


class Comparison:
    """2 to 4 columns over the same prompt, system prompt and tools, driven concurrently.

    `api_keys` maps a column index to its key (else the provider reads its environment
    variable); keys go to provider objects only, never to a run. `factory` builds
    providers (default: the registry's `create_provider`). `expected` is the answer the columns are
    checked for (a pinned test's), applied when it belongs to this prompt; without one, a scripted
    column's scenario may declare it. `play`, where given, is how Run all plays each column (a conversation);
    Step all steps the agent alone.
    """

    def __init__(
        self,
        prompt: str,
        specs: Sequence[ColumnSpec],
        *,
        system_prompt: str | None = None,
        tools: Iterable[Tool] = (),
        max_steps: int = 10,
        api_keys: dict[int, str] | None = None,
        provider_options: dict[str, Any] | None = None,
        factory: Factory | None = None,
        expected: ExpectedAnswer | None = None,
        origin: Origin | None = None,
        play: Play | None = None,
    ) -> None:
        self.origin = origin
        self.play = play
        if not prompt or not prompt.strip():
            raise UsageError("a comparison needs a prompt")
        if not MIN_COLUMNS <= len(specs) <= MAX_COLUMNS:
            raise UsageError(f"a comparison needs {MIN_COLUMNS} to {MAX_COLUMNS} configurations, got {len(specs)}")
        if max_steps < 1:
            raise UsageError("max steps must be at least 1")
        self.prompt = prompt
        self.system_prompt = system_prompt or None
        self.tools = list(tools)
        self.max_steps = max_steps
        asked = expected is not None and expected.prompt.strip() == prompt.strip()
        self.expected = expected if asked else scenario_expectation(prompt, specs)
        self.wall_s = 0.0  # wall time of the last Step all / Run all
        self._cancel = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started = 0.0
        self._factory = factory or create_provider
        self._options = dict(provider_options or {})
        keys = api_keys or {}
        labels = column_labels(specs)
        self.columns = [self._column(spec, labels[i], keys.get(i)) for i, spec in enumerate(specs)]

    def _provider(self, spec: ColumnSpec, key: str | None) -> tuple[Any, str | None]:
        try:
            return self._factory(spec.provider, spec.model, base_url=spec.base_url, api_key=key, **self._options), None
        except AgentcoreError as exc:
            return None, str(exc)
        except Exception as exc:  # noqa: BLE001 - a provider that cannot start is that column's error
            return None, f"{spec.provider}: {type(exc).__name__}: {exc}"

    def _agent(self, column: Column, provider: Any) -> Agent:
        # the column's settings are its run's config: the loop sends them, the export writes them
        return Agent(provider, self.tools, observers=[column._observe])

    def _builder(self, column: Column, key: str | None) -> Callable[[], Agent]:
        def build() -> Agent:
            provider, error = self._provider(column.spec, key)
            if error is not None:
                raise UsageError(error)
            return self._agent(column, provider)

        return build

    @classmethod
    def from_step(
        cls,
        origin: Origin,
        specs: Sequence[ColumnSpec],
        *,
        tools: Iterable[Tool] | None = None,
        api_keys: dict[int, str] | None = None,
        provider_options: dict[str, Any] | None = None,
        factory: Factory | None = None,
        play: Play | None = None,
    ) -> Comparison:
        """Each configuration forked from step k of a stored run (see Origin), driven in lockstep like any comparison.

        `tools` are the run's tools as this process has them (default: those of the built-in toolbox); a call to
        one it lacks comes back as an error.
        """
        run = origin.run
        if tools is None:
            from .toolbox import built_in

            tools = built_in(run.config.tools)
        return cls(
            origin.prompt,
            specs,
            system_prompt=run.config.system_prompt,
            tools=tools,
            max_steps=origin.budget,
            api_keys=api_keys,
            provider_options=provider_options,
            factory=factory,
            origin=origin,
            play=play,
        )

    @property
    def first_step(self) -> int:
        """The first step the columns make: k from a stored run, else 1."""
        return self.origin.step if self.origin is not None else 1

    def _column(self, spec: ColumnSpec, label: str, key: str | None) -> Column:
        provider, error = self._provider(spec, key)
        model = getattr(provider, "model", None) or spec.model or ""
        if self.origin is not None:
            return self._column_of(self.origin.fork(spec, model, label), spec, label, provider, model, error)
        config = RunConfig.made_for(
            spec.provider,
            model,
            self.tools,
            spec.base_url,
            scenario=model if spec.provider == "scripted" and provider is not None else None,
            system_prompt=self.system_prompt,
            max_steps=self.max_steps,
            temperature=spec.temperature,
            max_tokens=spec.max_tokens,
            seed=spec.seed,
        )
        run = Run.start(self.prompt, config, title=f"{self.prompt[:60]} · {label}")
        return self._column_of(run, spec, label, provider, model, error)

    def _column_of(
        self, run: Run, spec: ColumnSpec, label: str, provider: Any, model: str, error: str | None
    ) -> Column:
        if error is None:  # settings or tools the model refuses stop the column before any call, in one line
            error = settings_refusal(run, spec.provider, model)
        if error is not None:
            run.stop_reason, run.error = "error", error
            return Column(spec, label, run, error)
        column = Column(spec, label, run)
        column.play = self.play
        if not column.holds_key:
            column.agent = self._agent(column, provider)
        return column

    # -- driving the columns ---------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether any column is still working on the last Step all / Run all."""
        return any(c.busy for c in self.columns)

    @property
    def finished(self) -> bool:
        """Whether every column has ended (done or failed to start)."""
        return all(c.finished or c.setup_error for c in self.columns)

    def start(
        self, mode: Literal["step", "run"], api_keys: dict[int, str] | None = None, *, retry: bool = True
    ) -> bool:
        """Start one step (`step`) or the whole run (`run`) on every column, each on its own thread.

        A column whose last action failed tries again, unless `retry` is False. Returns at once; False when
        columns are still busy with the previous action.
        """
        if self.running:
            return False
        self._cancel = threading.Event()
        self._started = time.perf_counter()
        self.wall_s = 0.0
        self._threads = []
        keys = api_keys or {}
        for i, column in enumerate(self.columns):
            if column.setup_error or column.finished or (not retry and column.state == "error"):
                continue
            build = self._builder(column, keys.get(i)) if column.holds_key else None
            column.busy = True
            thread = threading.Thread(
                target=column._act,
                args=(mode, self._cancel, build),
                name=f"agentcore-compare-{column.label}",
                daemon=True,
            )
            self._threads.append(thread)
        for thread in self._threads:
            thread.start()
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the columns started last; True when all of them are done."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        done = not any(t.is_alive() for t in self._threads)
        if done and self._started:
            self.wall_s = time.perf_counter() - self._started
        return done

    def step_all(self, api_keys: dict[int, str] | None = None) -> None:
        """Advance every column one iteration, concurrently, and wait for all of them (lockstep)."""
        self.start("step", api_keys)
        self.wait()

    def step_to_end(self, api_keys: dict[int, str] | None = None) -> None:
        """Step all in lockstep until every column has ended or failed, or a step all moves none of them (a pause
        only a person ends); a failed column is not tried again."""
        while any(c.state == "ready" for c in self.columns) and not self._cancel.is_set():
            before = [(len(c.run.messages), c.run.stop_reason) for c in self.columns]
            self.start("step", api_keys, retry=False)
            self.wait()
            if before == [(len(c.run.messages), c.run.stop_reason) for c in self.columns]:
                return

    def run_all(self, api_keys: dict[int, str] | None = None) -> None:
        """Run every column to its end, concurrently, and wait for all of them."""
        self.start("run", api_keys)
        self.wait()

    def cancel(self) -> None:
        """Ask running columns to stop before their next phase."""
        self._cancel.set()

    # -- results ---------------------------------------------------------------------

    @property
    def runs(self) -> list[Run]:
        return [c.run for c in self.columns]

    @property
    def original_label(self) -> str:
        """The original run's title in a comparison from its step k: `original (provider:model)`."""
        if self.origin is None:
            return ""
        run = self.origin.run
        model = run.answered_by(run.steps[self.origin.step - 1])
        return f"original ({model.provider}:{model.model})"

    def summary(self) -> list[dict[str, Any]]:
        """One row per column: the summary table; from a stored run's step k, the original's own first."""
        first = self.first_step
        rows = [summarize(c.run, c.label, c.state, c.error, self.expected, first) for c in self.columns]
        if self.origin is not None:
            rows.insert(0, summarize(self.origin.run, self.original_label, expected=self.expected, first_step=first))
        return rows

    def series(self) -> list[dict[str, Any]]:
        """Per-step rows of every column (and the original's, from its step k), for the cumulative charts."""
        first = self.first_step
        rows = [row for c in self.columns for row in step_series(c.run, c.label, first)]
        if self.origin is not None:
            rows = step_series(self.origin.run, self.original_label, first) + rows
        return rows

    def step_rows(self) -> list[dict[str, Any]]:
        """Step k as the original made it, then as each column made it again (step_row)."""
        if self.origin is None:
            return []
        k = self.origin.step
        return [self.origin.row(self.original_label), *(step_row(c.run, k, c.label) for c in self.columns)]

    def bundle(self) -> dict[str, Any]:
        """The whole comparison as one JSON bundle of transcripts (no key anywhere in it)."""
        labels, runs = [c.label for c in self.columns], self.runs
        if self.origin is None:
            return make_bundle(self.prompt, runs, labels, self.system_prompt, self.expected)
        origin = (self.origin.run.id, self.origin.step)
        labels, runs = [self.original_label, *labels], [self.origin.run, *runs]
        return make_bundle(self.prompt, runs, unique_labels(labels), self.system_prompt, self.expected, origin)

"""Each page's state in one typed object, kept in st.session_state (the playground's is the Session in state.py).

Streamlit drops a widget's value when a page without that widget is drawn, so a page also
keeps its widgets' values here and gives them back when it is drawn again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

import streamlit as st

from agentcore.compare import ColumnSpec, Comparison, ExpectedAnswer, Origin
from agentcore.providers import REGISTRY
from agentcore.run import Run

if TYPE_CHECKING:
    from agentcore.testing.pinned import PinnedTest

Notice = tuple[Literal["success", "error"], str]
# the playground's open tab below the diagram (Messages or Steps): only the open one is drawn
PLAYGROUND_VIEW_KEY = "playground_view"


@dataclass
class PageState:
    """What a page keeps between draws; KEY is its place in st.session_state."""

    KEY: ClassVar[str]
    widgets: dict[str, Any] = field(default_factory=dict)  # the page's widget values, kept across pages

    @classmethod
    def get(cls) -> Self:
        """This page's state object, made on first use."""
        if cls.KEY not in st.session_state:
            st.session_state[cls.KEY] = cls()
        return st.session_state[cls.KEY]

    def restore(self, defaults: dict[str, Any]) -> None:
        """Give each widget its kept value (or its default) when it has none, before the widgets are drawn.

        A value the key still holds is written back: Streamlit forgets a widget drawn again after one draw
        without it (the cost page between two uploads) unless its value is set before it is drawn.
        """
        for key, value in defaults.items():
            st.session_state[key] = st.session_state[key] if key in st.session_state else self.widgets.get(key, value)

    def keep(self, keys: Iterable[str]) -> None:
        """Remember the widgets' current values, after they are drawn."""
        self.widgets.update({key: st.session_state[key] for key in keys if key in st.session_state})


@dataclass
class RunsState(PageState):
    """The runs library: what the next draw does and says."""

    KEY: ClassVar[str] = "runs_state"
    notice: Notice | None = None  # about the last import, drawn under the file box
    run_notice: Notice | None = None  # about the last rename or delete, drawn by the run's buttons
    confirm_delete: str | None = None  # the run whose Delete waits for Yes or Cancel
    open_id: str | None = None  # a run to open in the playground on the next draw
    imported: str | None = None  # the file id of the last upload imported, so a redraw never imports it twice
    linked: str | None = None  # the run a link (?run=ID) named, chosen once so the page can move on from it


@dataclass
class CostState(PageState):
    """The cost page: only its settings (price as, what-if), kept while another page is open."""

    KEY: ClassVar[str] = "cost_state"
    open_compare: bool = False  # a comparison was set up (CompareState.prefill): open the compare page


@dataclass(frozen=True)
class CompareSetup:
    """A comparison set up by another page, for the compare page to put into its widgets on its next draw."""

    prompt: str
    system_prompt: str
    tools: list[str]
    max_steps: int
    columns: list[ColumnSpec]  # each column's provider, model (the scenario, for the scripted model) and base URL


@dataclass
class CompareState(PageState):
    """The compare page: the comparison (no key in it) and what the next draw should do."""

    KEY: ClassVar[str] = "compare_state"
    comparison: Comparison | None = None
    action: Literal["step", "run"] | None = None
    live: bool = False  # columns were started and the page is following them
    open_index: int | None = None  # a column to open in the playground on this draw
    notice: str | None = None
    setup: CompareSetup | None = None  # asked for by another page (prefill), not yet in the widgets
    policies: dict[int, dict[str, Any] | None] = field(default_factory=dict)  # context policies by column
    expected: ExpectedAnswer | None = None  # a pinned test's answer, for the comparisons of its prompt
    test: PinnedTest | None = None  # the pinned test it was opened from: Run all plays its conversation (prefill_test)
    repeats: list[Any] = field(default_factory=list)  # the comparisons run again ("runs per configuration")
    origin: Origin | None = None  # a stored run and its step k: each column forks the run there (prefill_from)
    unsaved: bool = False  # the forks changed since they were last saved in the runs library

    @classmethod
    def prefill_from(cls, run: Run, step: int) -> None:
        """A new comparison from step `step` of a stored `run`: the first column on the model that answered that step
        (the same call asked again), the second on the page's default for a new column."""
        answered = run.answered_by(run.steps[step - 1])
        model = run.config.scenario if answered.provider == "scripted" and run.config.scenario else answered.model
        first = ColumnSpec(provider=answered.provider, model=model or None, base_url=run.config.base_url)
        setup = CompareSetup(
            prompt=next((m.content or "" for m in run.messages if m.role == "user"), ""),
            system_prompt=run.config.system_prompt or "",
            tools=[t.name for t in run.config.tools],
            max_steps=run.config.max_steps,
            columns=[first],
        )
        st.session_state[cls.KEY] = cls(setup=setup, origin=Origin(run, step))

    @classmethod
    def prefill(cls, run: Run) -> None:
        """A new comparison of `run`'s prompt on its model twice, the second column with the run's context policies."""
        config = run.config
        column = ColumnSpec(provider=config.provider, model=config.next_model.model, base_url=config.base_url)
        setup = CompareSetup(
            prompt=next((m.content or "" for m in run.messages if m.role == "user"), ""),
            system_prompt=config.system_prompt or "",
            tools=[t.name for t in config.tools],
            max_steps=config.max_steps,
            columns=[column, column],
        )
        policies = {1: config.policies.model_dump() if config.policies else None}
        st.session_state[cls.KEY] = cls(setup=setup, policies=policies)

    @classmethod
    def prefill_test(cls, test: PinnedTest) -> None:
        """A new comparison of a pinned test's task, the first column on the model it was pinned from.

        The test's expected answer (the texts it must contain) is what the columns are checked for; the test is kept,
        so that Run all plays its conversation where it has a simulated user (ui.compare_users).
        """
        config = test.pinned.config if test.pinned is not None else None
        columns = []
        if config is not None and config.provider in REGISTRY:
            columns = [ColumnSpec(config.provider, config.next_model.model, base_url=config.base_url)]
        answer = test.expect.answer
        expected = None
        if answer is not None and answer.contains:
            expected = ExpectedAnswer(
                tuple(answer.contains), f"the pinned test {test.name or '(unnamed)'}", test.prompt
            )
        setup = CompareSetup(
            prompt=test.prompt,
            system_prompt=test.system_prompt or "",
            tools=list(test.tools),
            max_steps=test.max_steps,
            columns=columns,
        )
        st.session_state[cls.KEY] = cls(setup=setup, expected=expected, test=test)


@dataclass
class LessonState(PageState):
    """The lesson page: each lesson's run in this session, and the one line about the last thing that failed."""

    KEY: ClassVar[str] = "lesson_state"
    runs: dict[str, str] = field(default_factory=dict)  # lesson id -> the id of its run in this session
    notice: str | None = None


@dataclass
class TestsState(PageState):
    """The tests page: the last matrix, what the next draw does, and the cell to open in the playground."""

    KEY: ClassVar[str] = "tests_state"
    matrix: Any = None  # the last agentcore.testrun.Matrix
    files: list[str] = field(default_factory=list)  # the test files of the last matrix, in its row order
    run_requested: bool = False
    open_cell: tuple[int, int] | None = None  # (test row, configuration column) to open in the playground
    open_compare: bool = False  # a test was set up on the compare page (CompareState.prefill_test): go there
    notice: Notice | None = None
    job: Any = None  # the test run in progress (views.tests.TestJob), drawn cell by cell until it ends

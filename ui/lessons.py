"""Guided lessons, the app's own content: presets of a run (provider, scenario, prompt, tools, budget) with a
narration for each step, shown by the Lesson page.

Every lesson runs offline on the scripted model, so what the narration says is what the learner sees.
Narration is written by the project; only numbers from the run (steps, tokens, calls) go into it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from agentcore.errors import UsageError
from agentcore.hooks.specs import MockRule
from agentcore.messages import ToolMessage
from agentcore.run import Run, RunConfig
from agentcore.toolbox import get_tools

__all__ = [
    "LESSONS",
    "Lesson",
    "StepTokens",
    "edited_result",
    "fork_with_result",
    "get_lesson",
    "lesson_of",
    "lesson_titled",
    "step_tokens",
]


@dataclass(frozen=True)
class StepTokens:
    """What a step sent to the model, and how much more than the step before it."""

    step: int
    sent: int
    growth: int | None  # None on the first step

    @property
    def line(self) -> str:
        """'sent 250 tokens, +84' as a person reads it."""
        growth = "" if self.growth is None else f", {self.growth:+,}"
        return f"sent {self.sent:,} tokens{growth}"


def step_tokens(run: Run) -> StepTokens | None:
    """The tokens the newest step sent, with the growth since the previous step; None before a step."""
    if not run.steps:
        return None
    sent = run.steps[-1].usage.input_tokens
    growth = sent - run.steps[-2].usage.input_tokens if len(run.steps) > 1 else None
    return StepTokens(len(run.steps), sent, growth)


@dataclass(frozen=True)
class Lesson:
    """A preset run and what to say about it: before the first step, after each step, and at the end.

    `steps[k]` is said after step k + 1; the last one is said again for any later step. A lesson with a
    fork (`fork_after`) goes on in a fork of its run made after that step: `fork_steps[k]` is said on the
    fork holding k + 1 steps, and the lesson ends only when the fork does. `ending`, what the learner
    should have seen, is said once the lesson is done, after the last step's own paragraph.
    """

    id: str
    title: str
    goal: str
    scenario: str
    prompt: str
    tools: tuple[str, ...]
    max_steps: int
    intro: str
    steps: tuple[str, ...]
    ending: str
    concurrency: bool = True
    fork_after: int | None = None
    fork_steps: tuple[str, ...] = ()
    see_cost: bool = False  # the ending points to the Cost page
    # a lesson with breakpoints pauses where they say; with a `mock`, it waits at the pause for the learner to
    # fix that tool result (`paused` is said then, `mocked` once the rule is in place)
    breakpoints: tuple[str, ...] = ()
    mock: MockRule | None = None
    paused: str = ""
    mocked: str = ""
    see_errors: bool = False  # the ending points to the Error analysis page

    def config(self) -> RunConfig:
        """The RunConfig of this lesson's run."""
        return RunConfig(
            provider="scripted",
            model=self.scenario,
            scenario=self.scenario,
            tools=[t.spec() for t in get_tools(list(self.tools))],
            max_steps=self.max_steps,
            concurrency=self.concurrency,
            breakpoints=list(self.breakpoints),
        )

    def at_breakpoint(self, run: Run) -> bool:
        """Whether `run` waits at one of the lesson's breakpoints."""
        return run.paused and run.halt is not None and run.halt.breakpoint in self.breakpoints

    def wants_mock(self, run: Run) -> bool:
        """Whether the lesson waits for the learner to fix a tool result with a mock rule."""
        return self.mock is not None and self.at_breakpoint(run) and not run.config.mocks

    def start(self) -> Run:
        """A new run of this lesson, titled after it."""
        return Run.start(self.prompt, self.config(), title=f"Lesson: {self.title}")

    def forked(self, run: Run) -> bool:
        """Whether `run` is the fork this lesson goes on in."""
        return self.fork_after is not None and run.parent is not None

    def wants_fork(self, run: Run) -> bool:
        """Whether the lesson waits for the learner to change a tool result and fork."""
        return self.fork_after is not None and not self.forked(run) and len(run.steps) >= self.fork_after

    def done(self, run: Run) -> bool:
        """Whether the lesson is over: its run stopped (in the fork, for a lesson with one)."""
        return run.finished and (self.fork_after is None or self.forked(run))

    def narration(self, run: Run | None) -> str:
        """The paragraph for where `run` stands: the intro (also before it starts), or the newest step's.

        The view adds the ending once the lesson is done.
        """
        if run is None or not run.steps:
            return self.intro.format(budget=self.max_steps)
        if self.paused and self.at_breakpoint(run):
            return self.mocked if run.config.mocks and self.mocked else self.paused
        if run.ending == "output limit":  # the lesson's words say the model answered: this reply was cut short
            return (
                f"Step {len(run.steps)}: the model's reply was **stopped at the output limit** "
                f"(finish reason `{run.steps[-1].finish_reason}`): it did not finish, so this is no answer. "
                "Raise the output limit, or ask for a shorter reply, and run it again."
            )
        texts = self.fork_steps if self.forked(run) else self.steps
        tokens = step_tokens(run)
        return texts[min(len(run.steps), len(texts)) - 1].format(
            step=len(run.steps),
            budget=run.config.max_steps,
            left=run.budget_left,
            sent=tokens.sent if tokens else 0,
            growth=(tokens.growth or 0) if tokens else 0,
        )


def edited_result(run: Run) -> str:
    """A changed first tool result for the fork lesson: the same weather, but freezing and snowing."""
    result = next((m for m in run.messages if isinstance(m, ToolMessage)), None)
    if result is None:
        return ""
    try:
        data = json.loads(result.content)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return result.content
    data.update(temperature=-12, condition="heavy snow")
    return json.dumps(data)


def fork_with_result(run: Run, content: str) -> Run:
    """A fork of `run` whose first tool result reads `content`; it ends before the model read the old one."""
    index = next((i for i, m in enumerate(run.messages) if isinstance(m, ToolMessage)), None)
    if index is None:
        raise UsageError("this run has no tool result to change")
    messages = list(run.messages)
    messages[index] = messages[index].model_copy(update={"content": content})
    if messages == run.messages:
        raise UsageError("the tool result is unchanged: change it to see the model answer differently")
    return run.fork_with_messages(messages)


_LOOP = Lesson(
    id="loop",
    title="The loop itself",
    goal="One tool call, one answer: the two phases of a step.",
    scenario="weather",
    prompt="What is the weather in Paris?",
    tools=("get_weather",),
    max_steps=4,
    intro=(
        "An agent is a loop. Each **Step** has two phases: the *model phase* sends the whole message list to the "
        "model, which either answers or asks for tools; the *tools phase* runs each tool it asked for and appends "
        "the result. Press **Step** and watch the diagram, the newest messages and the code that ran."
    ),
    steps=(
        "Step {step}: the model phase sent {sent} tokens (the prompt and the tool's description) and the model "
        "did not answer: it asked for `get_weather`. Then the tools phase ran that call and appended its result "
        "as a *tool* message. Nothing is finished: the next step sends everything again, result included.",
        "Step {step}: the model read the tool result and answered in plain text, with no tool call. That is the "
        "stop condition, so this step had no tools phase. It sent {sent} tokens, {growth} more than step 1.",
    ),
    ending=(
        "**What you saw:** two steps. The model asked for a tool, the loop ran it and appended the result, and "
        "the model, reading the whole list again, answered. The loop stops on an answer without tool calls; "
        "every step resends everything before it, so each step sends more tokens than the last."
    ),
)

_PARALLEL = Lesson(
    id="parallel",
    title="Parallel tool calls",
    goal="Several tool calls in one turn, and why running them together is a choice.",
    scenario="weather",
    prompt="What is the weather in Paris, Rome and Tokyo?",
    tools=("get_weather",),
    max_steps=4,
    intro=(
        "A model may ask for several tools in one turn. Here the question names three cities. Press **Step**: "
        "count the tool calls in the model's reply, and the tool messages the tools phase appends."
    ),
    steps=(
        "Step {step}: one reply, three `get_weather` calls. The tools phase ran them at the same time on worker "
        "threads, and appended the three results *in call order*, each answering its call by id. The model sent "
        "{sent} tokens once for all three: one model call instead of three.",
        "Step {step}: the model read all three results at once and answered ({sent} tokens sent, +{growth}).",
    ),
    ending=(
        "**What you saw:** three calls in one turn, three results, one answer, in two steps. Running calls "
        "concurrently is a choice, not a rule: it is safe for tools that only read, like this one. A tool that "
        "writes declares itself sequential, and a run can turn concurrency off (*Run tool calls concurrently* "
        "in the sidebar). The results go back in call order either way, so the model never sees a race."
    ),
)

_ERRORS = Lesson(
    id="errors",
    title="Errors are data",
    goal="A failing tool, and the model recovering from its error message.",
    scenario="tool_error",
    prompt="What is 17 \u00d7 23?",
    tools=("calculator",),
    max_steps=5,
    intro=(
        "Tools fail: bad arguments, an unknown name, an exception. The loop does not stop on that. Press "
        "**Step** and look at the tool message the tools phase appends."
    ),
    steps=(
        "Step {step}: the calculator raised an exception on the \u00d7 sign. The loop caught it and appended it "
        "as a tool message marked as an error, worded for the model to read. The run goes on.",
        "Step {step}: the model read the error message and called the calculator again with `*`. This time the "
        "tool worked. The failed attempt stays in the list: the model sees its own history ({sent} tokens).",
        "Step {step}: with a good result in hand the model answered. The run ends normally.",
    ),
    ending=(
        "**What you saw:** three steps. A tool that raises does not crash the agent: its error becomes a tool "
        "result (`is_error`), the model reads it like any other result, and fixes its call. A failed *model* "
        "call is different: that stops the step with an error you can retry."
    ),
)

_BUDGET = Lesson(
    id="budget",
    title="The step budget",
    goal="A runaway loop, stopped by max_steps.",
    scenario="runaway",
    prompt="Find out what a step budget is.",
    tools=("search_notes",),
    max_steps=4,
    intro=(
        "Nothing forces a model to stop asking for tools. This one will search the notes again and again. The "
        "run's step budget (*max steps*) is {budget} here. Press **Step** until the loop stops by itself."
    ),
    steps=(
        "Step {step} of {budget}: the model searched the notes, and asked for nothing else. Steps left: {left}.",
        "Step {step} of {budget}: the same search again, with the same arguments. It sent {sent} tokens, "
        "+{growth}: the earlier results ride along. Steps left: {left}.",
    ),
    ending=(
        "**What you saw:** the model never answered. It made the same call every step, each step sending more "
        "tokens, until the step budget stopped the run (stop reason *max_steps*). Every agent needs this guard: "
        "the embedded model (SmolLM2) does just this on its own."
    ),
)

_COST = Lesson(
    id="cost",
    title="The quadratic cost",
    goal="A long research run: each step resends everything, so total tokens grow with the square of the steps.",
    scenario="research",
    prompt="Research why agents get expensive and what helps.",
    tools=("search_notes", "read_note"),
    max_steps=12,
    intro=(
        "A longer task: search notes, read each hit, search again. Press **Step** and watch the tokens each "
        "step sends: every tool result stays in the list and goes to the model again at every later step."
    ),
    steps=(
        "Step {step}: a search. This step sent {sent} tokens.",
        "Step {step}: the step sent {sent} tokens, {growth:+} on the step before: what the last tool appended.",
    ),
    ending=(
        "**What you saw:** each step sent about a note more than the one before, so the tokens *per step* grow "
        "in a line and the *total* grows with the square of the number of steps. Open the **Cost** page: its "
        "fit a + b\u00b7n + c\u00b7n\u00b2 measures that curve, and its what-if curves show what keeping only "
        "the last tool results, truncating them, or prompt caching would have saved."
    ),
    see_cost=True,
)

_FORK = Lesson(
    id="fork",
    title="An edit and a fork",
    goal="Change a tool result and watch the model answer differently.",
    scenario="weather",
    prompt="What is the weather in Paris?",
    tools=("get_weather",),
    max_steps=4,
    intro=(
        "The model only knows what is in the message list. Press **Step** twice to get an answer; then you will "
        "change what the tool said and run the model again on the changed list."
    ),
    steps=(
        "Step {step}: the model asked for the weather and the tool answered. Press **Step** for the answer.",
        "Step {step}: the model answered from the tool's result. Now change that result below (it is filled in "
        "with a freezing, snowy Paris) and press **Fork with this result**.",
    ),
    fork_after=2,
    fork_steps=(
        "This is a *fork*: a new run holding the messages up to the changed tool result, and step 1 from the "
        "original. The original run is kept. Press **Step** to have the model read the changed result.",
        "Step {step} of the fork: the model read the changed result and answered from it, in {sent} tokens.",
    ),
    ending=(
        "**What you saw:** the same model, the same prompt, and a different answer, because one tool result "
        "changed. The model has no memory beyond the message list: edit the list and you change its world. "
        "Forking keeps the original run, so both answers can be compared on the Runs page."
    ),
)

_DEBUG = Lesson(
    id="debug",
    title="Debugging a run",
    goal="Stop at a breakpoint, fix a tool result with a mock, and count failures by their label.",
    scenario="weather",
    prompt="What is the weather in Paris, Rome and Tokyo?",
    tools=("get_weather",),
    max_steps=4,
    breakpoints=("tool:get_weather",),
    mock=MockRule(tool="get_weather", when=["$.city=Rome"], result='{"city": "Rome", "condition": "heavy snow"}'),
    intro=(
        "This run has a **breakpoint** on the tool `get_weather` (in the playground: the sidebar's Breakpoints, "
        "`tool:get_weather`; on the command line: `--break tool:get_weather`). Press **Step**: the model asks for "
        "the weather, and the run stops before the tool runs."
    ),
    paused=(
        "The run **paused at the breakpoint** `tool:get_weather`: the model asked for three calls and none ran. "
        "A **mock** fixes a tool's result without running it. Below, the result Rome's call will get: press "
        "**Mock this result**."
    ),
    mocked=(
        "The mock rule is in place: a call of `get_weather` for Rome is answered by it. Press **Step** to run the "
        "tools: Paris and Tokyo run, Rome's result comes from the mock."
    ),
    steps=(
        "Step {step}'s tools ran: Rome's result is marked *mocked* in the playground, the transcript and every "
        "export. Press **Step** for the answer.",
        "Step {step}: the model answered from the results, the mocked snow in Rome included.",
    ),
    ending=(
        "**What you saw:** a breakpoint stops the loop where you choose, and a mock replays a run with a result "
        "fixed. Now an **error analysis**: set the playground's provider to the embedded model, run this prompt "
        "a few times, label each failing step under **Steps** (wrong tool, looped, ...) and read the counts on "
        "the **Error analysis** page."
    ),
    see_errors=True,
)

_BLAME = Lesson(
    id="blame",
    title="Which step broke it?",
    goal="Find the step that made a run fail, by forking before each step and counting how often the forks pass.",
    scenario="wrong_city",
    prompt="What is the weather in Paris, Rome and Tokyo, one city at a time?",
    tools=("get_weather",),
    max_steps=6,
    intro=(
        "This run will fail: its answer will leave out Tokyo. Press **Step** four times, and watch for the step "
        "that goes wrong."
    ),
    steps=(
        "Step {step}: the model asked for Paris, the first city. Press **Step**.",
        "Step {step}: Rome, the second. Press **Step**.",
        "Step {step}: the model asked for **Kyoto**, not Tokyo. Nothing stops it: the tool answers for Kyoto. "
        "Press **Step**.",
        "Step {step}: the answer names Paris, Rome and Kyoto, so the run fails a test that wants Tokyo.",
    ),
    ending=(
        "**What you saw:** a run that failed in four steps. Here one step is plainly wrong; in a long run it is "
        "not. Open the **Playground**'s **Steps** view and the **Which step broke it?** form: configuration "
        "`scripted:city_by_city`, expected text `Tokyo`. Each step is forked and continued, and the chart shows the "
        "pass rate at 1.0 for forks before steps 1, 2 and 3, and 0.0 from step 4 on, where step 3's Kyoto is kept: "
        "step 3 is to blame. On the command line: `agentcore blame RUN_ID --expect Tokyo --config "
        "scripted:city_by_city`."
    ),
)

LESSONS: dict[str, Lesson] = {
    lesson.id: lesson for lesson in (_LOOP, _PARALLEL, _ERRORS, _BUDGET, _COST, _FORK, _DEBUG, _BLAME)
}
FIRST_LESSON = "loop"


def lesson_titled(title: str | None) -> Lesson | None:
    """The lesson whose run (or a fork of it) has this title: "Lesson: TITLE", as Lesson.start names its run."""
    title = title or ""
    return next((lesson for lesson in LESSONS.values() if title.startswith(f"Lesson: {lesson.title}")), None)


def lesson_of(run: Run) -> Lesson | None:
    """The lesson whose run (or a fork of it) `run` is, known by the title a lesson gives its run."""
    return lesson_titled(run.title)


def get_lesson(lesson_id: str | None) -> Lesson:
    """A built-in lesson by id (the first one for None); an unknown id is a UsageError that lists the others."""
    lesson_id = lesson_id or FIRST_LESSON
    if lesson_id not in LESSONS:
        raise UsageError(f"unknown lesson {lesson_id!r}; available: {', '.join(LESSONS)}")
    return LESSONS[lesson_id]

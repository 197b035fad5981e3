"""The runs server's tools and resources, in the four groups a client meets them in, each added by its own function.

Reading runs (list_runs, get_run, a run's transcript and replay page), stepping and forking them (fork_run,
step_run, run_to_end, compare_from), labelling and reading the library (annotate_step, stats, scan), and tests
(pin_test, run_tests, blame). Each tool's description is its docstring and its input schema its signature (args); the
work that spends model calls or time is in `tools`, within the call's rules and limits.
"""

from typing import Any

from mcp.server.mcpserver import Context

from . import tools
from .args import (
    MAX_LIST,
    Again,
    Bisect,
    BlameConfiguration,
    BlameExpect,
    BlameSteps,
    BlameTest,
    BlameTrials,
    Configurations,
    EditedMessages,
    GroupBy,
    Labels,
    Limit,
    Mocks,
    Model,
    Note,
    Owner,
    Phase,
    Provider,
    RunId,
    Scanners,
    ShownStep,
    Since,
    Step,
    StepLabel,
    Steps,
    TestConfigurations,
    TestName,
    TestPath,
    Text,
    ToolCallId,
    Trials,
)
from .context import Shared
from .data import run_data, summary_data


def add_reading(shared: Shared) -> None:
    """list_runs, get_run, and a run's transcript and replay page as resources."""

    @shared.tool
    def list_runs(
        text: Text = "",
        provider: Provider = "",
        model: Model = "",
        owner: Owner = "",
        label: StepLabel = "",
        limit: Limit = 20,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """The stored runs, newest first, as the app's Runs page filters them: `text` matches id, title, models
        and the first prompt; `provider`, `model`, `owner` and `label` (a step label) keep those runs."""
        wanted = limit + 1 if not (model or label) else MAX_LIST * 5  # one past the limit: whether there are more
        with shared.store(ctx) as store:
            found = store.list_runs(text or None, provider or None, wanted, owner=owner or None)
            if model:
                found = [r for r in found if any(model in m.model for m in r.models)]
            if label:
                labelled = store.annotations_by_run([r.id for r in found])
                found = [r for r in found if any(label in a.labels for a in labelled.get(r.id, []))]
        return {"runs": [summary_data(r) for r in found[:limit]], "more": len(found) > limit}

    @shared.tool
    def get_run(run_id: RunId, step: ShownStep = None, ctx: Context | None = None) -> dict[str, Any]:
        """One run: its configuration (provider, model and base URL: where its calls go), stop reason, usage and
        cost, each step's tokens, cost, latency and tool calls, its newest messages (or, with `step`, that step's:
        what it answered, its reply and its tool results), its parent, its forks and its labels. Long texts are
        cut, with a note."""
        with shared.store(ctx) as store:
            return run_data(store, tools.read(store, run_id), step)

    @shared.resource("agentcore://runs/{run_id}/transcript", mime_type="application/json")
    def transcript(run_id: str, ctx: Context) -> str:
        """A run's transcript, as the app's export writes it (credential-named fields blanked)."""
        from ..exports import export_json

        with shared.store(ctx) as store:
            return export_json(tools.read(store, run_id))

    @shared.resource("agentcore://runs/{run_id}/replay", mime_type="text/html")
    def replay(run_id: str, ctx: Context) -> str:
        """A run's replay page: one self-contained HTML file that steps through it offline."""
        from ..exports import REPLAY, export_run

        with shared.store(ctx) as store:
            return export_run(tools.read(store, run_id), REPLAY)


def add_driving(shared: Shared) -> None:
    """fork_run, step_run, run_to_end and compare_from: the tools that make runs and move them on."""

    @shared.tool
    def fork_run(
        run_id: RunId, step: Step, messages: EditedMessages = None, mocks: Mocks = None, ctx: Context | None = None
    ) -> dict[str, Any]:
        """A new run from just before `step`'s model call (the run is kept); with `messages` (a whole edited
        message list, in agentcore's transcript form: role, content, tool_calls, tool_call_id), a fork over that
        list, keeping the steps before the first change. `mocks` fix tool results in the fork, each
        {"tool": NAME, "when": ["$.city=Paris"], "result": TEXT} or with "error": TEXT, the first that matches a
        call answering it. The fork is saved; step it with step_run."""
        with shared.store(ctx) as store:
            return tools.fork(store, run_id, step, messages, mocks)

    @shared.tool
    def step_run(run_id: RunId, phase: Phase = "step", ctx: Context | None = None) -> dict[str, Any]:
        """Run one step of the loop (`step`: the model call and the tools it asked for), or one phase of it, on
        the run's own provider and model; the run is saved, and what it added is returned. Someone else's run is
        stepped as one's own fork of it. A run whose configuration names an address or file this server does
        not call is refused."""
        with shared.store(ctx) as store:
            return tools.step(store, run_id, phase, shared.rules, shared.limits)

    @shared.tool
    def run_to_end(run_id: RunId, ctx: Context | None = None) -> dict[str, Any]:
        """Run the loop until an answer, a pause or the run's step budget (at most 100 model calls, and this
        server's time for one call); the run is saved and what it added is returned, with `stopped` saying why
        it stopped early."""
        with shared.store(ctx) as store:
            return tools.to_end(store, run_id, shared.rules, shared.limits)

    @shared.tool
    def compare_from(
        run_id: RunId, step: Step, configurations: Configurations, steps: Steps = None, ctx: Context | None = None
    ) -> dict[str, Any]:
        """Fork the run just before `step`'s model call on each configuration (`PROVIDER[:MODEL][@BASE_URL]`,
        2 to 4; for scripted the model is the scenario; a base URL only one this server calls) and go on in
        lockstep, `steps` model calls (default: to the end of the run's budget; 1 asks that step again), within
        this server's model calls and time for one call. Returns that step as the original made it beside each
        configuration's, the summary from there, the forks, each saved under the run, and `stopped` when the
        time ran out first."""
        with shared.store(ctx) as store:
            run = tools.read(store, run_id)
            return tools.compare(store, run, step, configurations, steps, shared.rules, shared.limits)


def add_library(shared: Shared) -> None:
    """annotate_step, stats and scan: a person's labels, the library's figures, and scanners' findings."""

    @shared.tool
    def annotate_step(
        run_id: RunId,
        step: Step,
        labels: Labels,
        note: Note = "",
        tool_call_id: ToolCallId = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Label a step (or one tool call of it) of a run, as the app's Annotate form does: labels such as
        `wrong tool`, `wrong arguments`, `good`, with a note. Kept under the server's user; counted by Error
        analysis."""
        from ..annotations import make_annotation

        with shared.store(ctx) as store:
            tools.read(store, run_id)
            made = make_annotation(step=step, tool_call_id=tool_call_id, labels=labels, note=note)
            kept = store.annotate(run_id, made)
        return {
            "annotation_id": kept.id,
            "run_id": run_id,
            "step": kept.step,
            "labels": kept.labels,
            "author": kept.author,
        }

    @shared.tool
    def stats(
        by: GroupBy = "model",
        since: Since = None,
        provider: Provider = "",
        owner: Owner = "",
        text: Text = "",
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """The library's figures per group, as `agentcore stats --json` gives them: runs, steps, answered runs,
        input, output and cache tokens, cache hit rate, cost, cost per answered run, p50/p95 step latency, runs
        that hit the step budget or failed. `since` is a day (YYYY-MM-DD): runs created on or after it."""
        from ..store.stats import first_day, library_stats, totals

        day = first_day(since or None, "since")
        with shared.store(ctx) as store:
            groups = library_stats(
                store, [by], since=day, provider=provider or None, owner=owner or None, search=text or None
            )
        once = by in ("provider", "model", "day")
        return {
            "by": by,
            "groups": [g.to_dict() for g in groups[:MAX_LIST]],
            "totals": totals(groups) if once else None,
        }

    @shared.tool
    def scan(scanners: Scanners = None, again: Again = False, ctx: Context | None = None) -> dict[str, Any]:
        """Run scanners over the runs and keep each finding as a label on the step where it happened (author
        `scanner:NAME`): the built-ins (loop, ignored_error, unknown_tool, step_budget, context, unread_results,
        key_in_reply) or `regex:PATTERN` over replies. Scanning again adds no duplicate; `again` reads every run
        anew. A scan stops when this server's time for one call runs out (`stopped` says so; scanning again goes
        on from there). A Python scanner (`module:function`) is the command line's only: a client does not
        choose code."""
        with shared.store(ctx) as store:
            return tools.scan(store, scanners, again, shared.limits)


def add_tests(shared: Shared) -> None:
    """pin_test, run_tests and blame: a run kept as a test file, test files run on configurations, and which step
    broke a run."""

    @shared.tool
    def pin_test(run_id: RunId, path: TestPath, name: TestName = None, ctx: Context | None = None) -> dict[str, Any]:
        """Write a test file from a run (the tool calls it made, in order, and its answer), under the server's
        working folder (`.json`, or `.yaml`); an existing file is not overwritten. Run it with run_tests."""
        with shared.store(ctx) as store:
            return tools.pin(store, run_id, path, name)

    @shared.tool
    def run_tests(
        path: TestPath, configurations: TestConfigurations = None, trials: Trials = 1, ctx: Context | None = None
    ) -> dict[str, Any]:
        """Run the test files at `path` (a file or a folder under the server's working folder) on each
        configuration (default: replay; at most 4), `trials` times each: at most this server's runs and time
        for one call (`stopped` says when the time ran out). Each failing trial's run is saved. Returns one
        record per cell: passed trials, outcomes and run ids."""
        with shared.store(ctx) as store:
            return tools.run_tests(store, path, configurations, trials, shared.rules, shared.limits)

    @shared.tool
    def blame(
        run_id: RunId,
        expect: BlameExpect = None,
        test: BlameTest = None,
        configuration: BlameConfiguration = None,
        trials: BlameTrials = 5,
        steps: BlameSteps = None,
        bisect: Bisect = False,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Which step broke a failing run: fork it just before each of its steps (or `steps`; or by `bisect`), go on
        from each fork `trials` times on `configuration` (default: the run's own), grade every continuation by
        `expect` (a text its answer holds) or `test` (a test file's expectations), and return each fork step's
        passes, pass rate and 95% Wilson interval, the step where the rate falls most (`blamed_step`) with its reply
        beside what passing continuations did there, and the forks, each saved under the run. Refused past this
        server's model calls for one call (counted as the run went); a run that passes is told so."""
        with shared.store(ctx) as store:
            return tools.blame(
                store, run_id, (expect, test), configuration, trials, steps, bisect, shared.rules, shared.limits
            )

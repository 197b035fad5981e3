"""Tests: pin stored runs as test files, run the test files of a folder on chosen configurations, see the matrix.

A failing cell opens its run in the playground at the step where it departed from the pinned run.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from agentcore.errors import AgentcoreError
from agentcore.exports import export_test
from agentcore.run import Run
from agentcore.store.runs import DEFAULT_PATH
from agentcore.testing import pinned
from agentcore.testing.experiments import Experiment, from_matrix
from agentcore.testing.judges import keep_in_store
from agentcore.testing.runner import REPLAY, Cell, Matrix, parse_config, run_matrix
from agentcore.testing.scoreboard import Score, floor_line, scoreboard, time_line
from agentcore.transcript import write_atomic
from ui import safe, words
from ui.page_state import CompareState, TestsState
from ui.state import get_session, get_store

PLAYGROUND = "views/playground.py"
COMPARE = "views/compare.py"
TESTS_ENV = "AGENTCORE_TESTS"
# beside the runs database in the user's agentcore folder, not in whatever folder the server was started from
DEFAULT_FOLDER = str((DEFAULT_PATH.parent / "tests").expanduser())
WIDGETS = {
    "tests_folder": os.environ.get(TESTS_ENV, DEFAULT_FOLDER),
    "tests_configs": REPLAY,
    "tests_pin": None,
    "tests_trials": 1,
    "tests_threshold": 1.0,
}
ENDED = ("answer", "structured")  # a run that ended on its own answer; any other run is pinned mid-way


def _folder() -> Path:
    return Path(st.session_state["tests_folder"]).expanduser()


def _shown(path: Path, folder: Path) -> str:
    """A test file as the page lists it: its path inside the folder (a subfolder's suite shows its folder)."""
    try:
        return path.relative_to(folder).as_posix()
    except ValueError:
        return path.name


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "test"


def _unique_name(name: str, folder: Path) -> str:
    """`name`, or `name (2)`, `name (3)`…: a name no test in `folder` has, so each row of the matrix is told apart."""
    taken = set()
    for f in pinned.find_tests([folder], subfolders=True) if folder.is_dir() else []:
        try:
            taken.add(pinned.load(f).name)
        except AgentcoreError:
            continue  # a file that does not load is listed with its problem; it has no name to take
    unique, n = name, 1
    while unique in taken:
        n += 1
        unique = f"{name} ({n})"
    return unique


def _unfinished(run: Run) -> str | None:
    """Why pinning this run would pin an unfinished one, in words; None when it ended on its answer."""
    if run.stop_reason in ENDED:
        return None
    how = f"stopped ({run.stop_reason})" if run.stop_reason else "still open"
    return (
        f"This run did not finish: it is {how} after {words.plural(len(run.steps), 'step')}. A test pinned from "
        "it expects the same unfinished path; finish the run in the playground first to pin its answer."
    )


# -- actions (callbacks change state; the page redraws from it) ---------------------------


def _pin(run_id: str | None) -> None:
    state = TestsState.get()
    if not run_id:
        state.notice = ("error", "Choose a run to pin.")
        return
    folder = _folder()
    try:
        run = get_store().read_run(run_id)  # pinning a run reads it; it does not open it to save over
        test = pinned.propose(run)
        test = test.model_copy(update={"name": _unique_name(test.name, folder)})
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{_slug(test.name)}-{run.id}.json"
        write_atomic(path, export_test(test))
    except (AgentcoreError, OSError) as exc:
        state.notice = ("error", f"Not pinned: {exc}")
        return
    state.notice = ("success", f"Pinned run {run.id} as {path} (test {test.name!r}).")


def _request_run() -> None:
    TestsState.get().run_requested = True


def _open(row: int, column: int) -> None:
    TestsState.get().open_cell = (row, column)


def _open_judge(row: int, column: int, k: int) -> None:
    st.session_state["tests_open_judge"] = (row, column, k)


# -- the work the page does on a draw ------------------------------------------------------


@dataclass
class TestJob:
    """A test run on its own thread: the cells as they end, the time it started, and its Stop."""

    tests: list[str]
    configs: list[str]
    files: list[str]
    started: float = field(default_factory=time.monotonic)
    cells: dict[tuple[int, int], Cell] = field(default_factory=dict)
    cancel: threading.Event = field(default_factory=threading.Event)
    matrix: Matrix | None = None
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def start(self, tests: list, specs: list, trials: int = 1, threshold: float = 1.0) -> None:
        def work() -> None:
            try:
                self.matrix = run_matrix(
                    tests,
                    specs,
                    on_cell=self._ended,
                    cancel=self.cancel,
                    trials=trials,
                    pass_threshold=threshold,
                )
            except AgentcoreError as exc:
                self.error = str(exc)
            except Exception as exc:  # noqa: BLE001 - the page says what went wrong in one line; nothing is lost
                self.error = f"{type(exc).__name__}: {exc}"
            finally:
                self.done.set()

        threading.Thread(target=work, name="agentcore-tests-page", daemon=True).start()

    def _ended(self, row: int, column: int, cell: Cell) -> None:
        self.cells[(row, column)] = cell


def _stop_tests() -> None:
    job = TestsState.get().job
    if job is not None:
        job.cancel.set()


def _start_tests(state: TestsState, files: list[Path]) -> None:
    state.run_requested = False
    lines = [line.strip() for line in st.session_state["tests_configs"].splitlines() if line.strip()]
    try:
        specs = [parse_config(line) for line in lines or [REPLAY]]
        tests = [pinned.load(f) for f in files]
    except AgentcoreError as exc:
        state.notice = ("error", f"Not run: {exc}")
        return
    state.notice = None
    job = TestJob([t.name for t in tests], [s.name for s in specs], [str(f) for f in files])
    job.start(tests, specs, int(st.session_state["tests_trials"]), float(st.session_state["tests_threshold"]))
    state.job = job


def _mark(cell: Cell | None) -> str:
    if cell is None:
        return "…"
    if cell.trials:
        s = cell.stats
        return f"{s.passed}/{s.trials} {'pass' if cell.passed else 'FAIL'}" + (" · flaky" if s.flaky else "")
    return "pass" if cell.passed else "stopped" if cell.failures[0].expectation == "stopped" else "FAIL"


def _follow(state: TestsState) -> None:
    """Draw the running matrix cell by cell, with the time it has taken and a Stop, until it ends."""
    job: TestJob = state.job
    with st.container(border=True, key="tests_live"):
        head, stop = st.columns([5, 1], vertical_alignment="center")
        line = head.empty()
        stop.button(
            "Stop", key="tests_stop", icon=":material/stop_circle:", on_click=_stop_tests, disabled=job.cancel.is_set()
        )
        table = st.empty()
        while True:
            finished = job.done.wait(0.25)
            total = len(job.tests) * len(job.configs)
            stopping = " · stopping: the cells running end after their phase" if job.cancel.is_set() else ""
            line.markdown(
                f"**Running {words.plural(len(job.tests), 'test')} on "
                f"{words.plural(len(job.configs), 'configuration')}:** {len(job.cells)} of {total} cells done "
                f"· {time.monotonic() - job.started:.1f} s{stopping}"
            )
            rows = [
                {"test": name, **{c: _mark(job.cells.get((i, j))) for j, c in enumerate(job.configs)}}
                for i, name in enumerate(job.tests)
            ]
            table.dataframe(rows, hide_index=True, width="stretch")
            if finished:
                break
    state.job = None
    if job.error is not None:
        state.notice = ("error", f"Not run: {job.error}")
        return
    assert job.matrix is not None
    store = get_store()
    for cell in (c for row in job.matrix.cells for c in row):  # each failing trial is kept, as the CLI keeps it
        for trial in cell.trials or [cell]:
            if not trial.passed and trial.run is not None:
                store.save_run(trial.run)
            if trial.run is not None:  # each judge's call, and its verdict as a label on the step it judged
                keep_in_store(store, trial.run, trial.verdicts)
    store.save_experiment(from_matrix(job.matrix, [Path(f) for f in job.files]))
    state.matrix, state.files = job.matrix, job.files
    if job.cancel.is_set():
        state.notice = ("error", f"Stopped after {len(job.cells)} cells: the cells not run say so.")
    st.rerun()


def _open_cell(state: TestsState) -> None:
    row, column = state.open_cell
    state.open_cell = None
    cell = state.matrix.cells[row][column]
    if cell.run is None:
        return
    session = get_session()
    session.add_run(cell.run)
    line = f"Test {cell.test} on {cell.config} failed: {cell.first_failure}."
    if cell.departed_at:
        session.show_step(cell.departed_at)
        line += f" It left the path at step {cell.departed_at}"
        line += f", where the reference did {cell.reference_move}." if cell.reference_move else "."
        line += " The Steps tab below is open on that step."
    session.opened_from = (cell.run.id, line)
    st.switch_page(PLAYGROUND)


def _open_judge_call(state: TestsState) -> None:
    """Open a judge's call (its stored run) in the playground, saying what it judged and why."""
    row, column, k = st.session_state.pop("tests_open_judge")
    cell = state.matrix.cells[row][column]
    verdict = cell.verdicts[k]
    session = get_session()
    try:
        call = verdict.judge_run or get_store().read_run(verdict.judge_run_id or "")
    except AgentcoreError as exc:
        state.notice = ("error", f"The judge's call cannot be opened: {exc}")
        return
    session.add_run(call)
    session.opened_from = (
        call.id,
        f"Judge {verdict.judge.name}'s call on test {cell.test} × {cell.config}: {verdict.said}: {verdict.reason}",
    )
    st.switch_page(PLAYGROUND)


def _compare(path: str) -> None:
    """Set up the compare page with a test's task and expected answer; the next draw goes there."""
    state = TestsState.get()
    try:
        test = pinned.load(path)
    except AgentcoreError as exc:
        state.notice = ("error", f"{Path(path).name} cannot be compared: {exc}")
        return
    CompareState.prefill_test(test)
    state.open_compare = True


# -- drawing -------------------------------------------------------------------------------


def _pin_section() -> None:
    st.header("Pin a run as a test")
    runs = get_store().list_runs(limit=200)
    if not runs:  # no run to pick: a word, not a disabled picker whose grey label few can read
        st.info("No runs in the library yet: make one in the playground, then pin it here as a test.")
        return
    labels = {
        r.id: f"{r.title or '(untitled)'} · {r.models_label} · {words.plural(r.steps, 'step')} · {r.id}" for r in runs
    }
    chosen = st.selectbox("Run", list(labels), format_func=labels.get, key="tests_pin", index=None)
    if chosen:
        try:
            run = get_store().read_run(chosen)
            test = pinned.propose(run)
        except AgentcoreError as exc:
            st.error(f"This run cannot be pinned: {safe.block(str(exc))}")
            return
        unfinished = _unfinished(run)
        if unfinished:
            st.warning(unfinished, icon=":material/warning:")
        st.caption("Proposed expectations (the file can be edited after):")
        st.json(pinned.to_data(test)["expect"], expanded=False)
    st.button("Pin as test", on_click=_pin, args=(chosen,), disabled=not chosen, key="tests_pin_button")


def _files_section(folder: Path) -> list[Path]:
    st.header("Test files")
    try:
        files = pinned.find_tests([folder], subfolders=True) if folder.is_dir() else []
    except (AgentcoreError, OSError) as exc:
        st.error(safe.block(str(exc)))
        return []
    if not files:
        st.info(f"No test files in {safe.code(str(folder))} yet: pin a run above, or set {TESTS_ENV}.")
        return []
    rows = []
    for f in files:
        try:
            test = pinned.load(f)
            rows.append({"file": _shown(f, folder), "test": test.name, "prompt": test.prompt, "problem": ""})
        except AgentcoreError as exc:
            rows.append({"file": _shown(f, folder), "test": "", "prompt": "", "problem": str(exc)})
    st.dataframe(rows, hide_index=True, width="stretch")  # table cells are text, not Markdown
    loaded = {row["file"]: str(f) for f, row in zip(files, rows, strict=True) if not row["problem"]}
    pick, go_on = st.columns([3, 1], vertical_alignment="bottom")
    chosen = pick.selectbox(
        "Compare a test's task across providers, checked for its expected answer",
        list(loaded),
        index=None,
        key="tests_compare_pick",
        placeholder="Choose a test file",
    )
    go_on.button(
        "Open in Compare",
        key="tests_compare",
        icon=":material/compare_arrows:",
        on_click=_compare,
        args=(loaded.get(chosen or "", ""),),
        disabled=not chosen,
    )
    return files


def _rates(cell: Cell) -> str:
    """A trial cell's pass@1 with its 95% Wilson interval and its pass^N, as `agentcore test --trials` words them."""
    s = cell.stats
    low, high = s.interval
    return (
        f"pass@1 {s.pass_at_1:.2f} (95% Wilson interval {low:.2f}–{high:.2f}) · "
        f"pass^{s.trials} {'yes' if s.all_passed else 'no'}"
    )


def _trial_verdict(cell: Cell) -> str:
    """What a failing trial cell says: ERROR when every failing trial errored, else FAIL, with how many trials
    failed and how many errored, so a cell mixing both says both."""
    return f"{'ERROR' if cell.errored else 'FAIL'}: {cell.trial_counts}"


def _reasons(col, cell: Cell) -> None:
    """Why a trial cell's failing trials failed, each reason with its count, as the CLI lists them."""
    if not cell.trials:
        return
    for reason, count in cell.reasons:
        col.markdown(f"{count} of {len(cell.trials)} trials: {safe.inline(reason)}")


def _legend(matrix: Matrix) -> str:
    n = matrix.trials
    return (
        f"Each cell ran {n} trials. **pass@1** is the share of its trials that passed: the chance one run passes, "
        "with its 95% Wilson score interval (the range the true rate likely lies in, given so few trials). "
        f"**pass^{n}** says whether all {n} trials passed: whether the configuration passes every time. "
        f"A cell passes when at least {matrix.pass_threshold:.0%} of its trials pass; beside a failing trial, "
        "how many trials failed for each reason."
    )


def _matrix_section(matrix: Matrix) -> None:
    passed = sum(c.passed for row in matrix.cells for c in row)
    total = len(matrix.tests) * len(matrix.configs)
    st.header(f"Matrix: {passed} of {total} passed in {matrix.wall_s:.2f} s")
    if matrix.trials > 1:
        st.caption(_legend(matrix))
    head = st.columns([2] + [3] * len(matrix.configs))
    head[0].markdown("**test**")
    for col, config in zip(head[1:], matrix.configs, strict=True):
        col.markdown(f"**{safe.inline(config)}**")
    floor = matrix.floor or [None] * len(matrix.tests)
    for i, (name, row) in enumerate(zip(matrix.tests, matrix.cells, strict=True)):
        cols = st.columns([2] + [3] * len(row))
        cols[0].markdown(safe.inline(name))
        if floor[i]:
            cols[0].caption("Passes with no call too: its grader passes an untouched environment.")
        for j, (col, cell) in enumerate(zip(cols[1:], row, strict=True)):
            if cell.trials:  # the counts, a bar of them, pass@1 with its interval, and a badge when they disagree
                s = cell.stats
                col.progress(s.pass_at_1, text=f"{s.passed}/{s.trials} trials passed")
                col.caption(_rates(cell))
                if s.flaky:
                    col.markdown(":orange-badge[flaky]")
            if cell.passed:
                col.success("pass", icon=":material/check:")
                _reasons(col, cell)  # a cell that passes its threshold says why its other trials failed too
                continue
            if cell.trials:
                col.error(_trial_verdict(cell), icon=":material/close:")
                _reasons(col, cell)
            else:
                col.error(f"FAIL: {safe.inline(cell.first_failure or '')}", icon=":material/close:")
            if cell.reference_move is not None:
                col.caption(f"At step {cell.departed_at} the reference did {safe.code(cell.reference_move)}.")
            for k, verdict in enumerate(cell.verdicts):  # each judge's call, a run of its own, to step
                col.button(
                    f"Open judge {verdict.judge.name}'s call",
                    key=f"tests_judge_{i}_{j}_{k}",
                    help=f"{verdict.said}: {verdict.reason}",
                    on_click=_open_judge,
                    args=(i, j, k),
                    disabled=verdict.judge_run is None and verdict.judge_run_id is None,
                    width="stretch",
                )
            col.button(
                f"Open at step {cell.departed_at}" if cell.departed_at else "Open the run",
                key=f"tests_open_{i}_{j}",
                help="Opens the run in the playground at the step where it left the pinned run or the reference",
                on_click=_open,
                args=(i, j),
                disabled=cell.run is None,
                width="stretch",
            )


def _scoreboard_chart(scores: list[Score], floor: tuple[int, int] | None) -> go.Figure:
    """Tasks passed per configuration, with each one's steps, tokens and cost on hover, and the do-nothing floor."""
    bar = go.Bar(
        x=[s.config for s in scores],
        y=[s.passed for s in scores],
        text=[f"{s.passed}/{s.tests}" for s in scores],
        customdata=[[s.steps, s.input_tokens + s.output_tokens, s.cost_text, round(s.wall_s, 1)] for s in scores],
        hovertemplate="%{x}: %{text} passed<br>%{customdata[0]} steps, %{customdata[1]} tokens, "
        "%{customdata[2]}, %{customdata[3]} s of run time<extra></extra>",
        name="passed",
    )
    figure = go.Figure(bar)
    if floor is not None:
        figure.add_hline(
            y=floor[0], line_dash="dash", annotation_text=f"floor: {floor[0]} pass with no call", name="floor"
        )
    top = max((s.tests for s in scores), default=1)
    figure.update_layout(
        title="Tasks passed per configuration", yaxis={"title": "tests passed", "range": [0, top]}, height=320
    )
    return figure


def _scoreboard_section(matrix: Matrix) -> None:
    scores = scoreboard(matrix)
    floor = matrix.floor_count
    st.header("Scoreboard")
    rows = [
        {
            "configuration": s.config,
            "passed": f"{s.passed}/{s.tests}",
            "pass rate": f"{s.pass_rate:.0%}",
            **({"above floor": f"{s.passed - s.passed_doing_nothing}/{s.tests - floor[0]}"} if floor else {}),
            **(
                {
                    "trials passed": f"{s.trials_passed}/{s.tests * s.trials}",
                    "pass@1": round(s.pass_at_1, 2),
                    f"pass^{s.trials}": f"{s.all_trials_passed}/{s.tests}",
                    "flaky": s.flaky,
                }
                if s.trials > 1
                else {}
            ),
            "steps": s.steps,
            "input tokens": s.input_tokens,
            "output tokens": s.output_tokens,
            "cost": s.cost_text,
            "run time (s)": round(s.wall_s, 1),
        }
        for s in scores
    ]
    st.dataframe(rows, hide_index=True, width="stretch", key="tests_scoreboard_table")
    for line in (time_line(matrix), floor_line(matrix)):
        if line:
            st.caption(line[0].upper() + line[1:] + ".")
    st.plotly_chart(_scoreboard_chart(scores, floor), key="tests_scoreboard")


def _history_chart(experiments: list[Experiment]) -> go.Figure:
    """Each configuration's pass rate (trials passed, of how many) in each experiment, over time."""
    figure = go.Figure()
    configs = list(dict.fromkeys(c for e in reversed(experiments) for c in e.configs))
    for config in configs:
        points = [(e, e.rate_by_config()[config]) for e in reversed(experiments) if config in e.rate_by_config()]
        figure.add_scatter(
            x=[e.created_at[:19].replace("T", " ") for e, _ in points],
            y=[passed / total for _, (passed, total) in points],
            text=[f"{passed}/{total}" for _, (passed, total) in points],
            customdata=[e.id for e, _ in points],
            mode="lines+markers",
            name=safe.plotly(config),
            hovertemplate="%{x}: %{text} trials passed · experiment %{customdata}<extra></extra>",
        )
    figure.update_layout(
        title="Pass rate per configuration, experiment by experiment",
        yaxis={"title": "trials passed (share)", "range": [0, 1.05]},
        height=320,
    )
    return figure


def _history_section() -> None:
    try:
        experiments = get_store().experiments(limit=100)
    except AgentcoreError as exc:
        st.caption(f"The experiments kept cannot be read: {safe.inline(str(exc))}")
        return
    if not experiments:
        return
    st.header("Experiments")
    st.caption("Each test run here or with `agentcore test` (writing to this database) is kept: newest first.")
    st.plotly_chart(_history_chart(experiments), key="tests_history")
    by_id = {e.id: e for e in experiments}
    chosen = st.selectbox(
        "Open an experiment",
        list(by_id),
        index=None,
        key="tests_experiment",
        format_func=lambda i: safe.plain(by_id[i].summary()),
        placeholder="Choose an experiment",
    )
    if chosen:
        e = by_id[chosen]
        st.dataframe(
            [
                {
                    "test": c.test,
                    "configuration": c.config,
                    "passed": c.counts,
                    "cell": "pass" if c.cell_passed else "FAIL",
                    "flaky": c.flaky,
                    "runs": ", ".join(r for r in c.run_ids if r),
                }
                for c in e.cells
            ],
            hide_index=True,
            width="stretch",
            key="tests_experiment_cells",
        )
        st.caption(f"agentcore {safe.inline(e.version or 'unknown')}" + (f" · commit {e.commit}" if e.commit else ""))


def main() -> None:
    state = TestsState.get()
    state.restore(WIDGETS)
    if state.open_cell is not None and state.matrix is not None:
        _open_cell(state)
    if st.session_state.get("tests_open_judge") is not None and state.matrix is not None:
        _open_judge_call(state)
    if state.open_compare:
        state.open_compare = False
        st.switch_page(COMPARE)
    st.title("Tests")
    st.caption(
        "A pinned run is a test: its tool calls, answer and ceilings are checked on each configuration. "
        "`replay` replays the pinned model turns with the tools run for real; any other line is a live "
        "configuration, `PROVIDER[:MODEL][@BASE_URL]`."
    )
    st.text_input("Test folder", key="tests_folder")
    folder = _folder()
    _pin_section()
    files = _files_section(folder)
    st.text_area("Configurations, one a line", key="tests_configs", height=100)
    trials, threshold = st.columns(2)
    trials.number_input(
        "Trials per cell",
        min_value=1,
        max_value=50,
        step=1,
        key="tests_trials",
        help="Run every cell this many times: one run of a model is one sample",
    )
    threshold.number_input(
        "Pass threshold",
        min_value=0.05,
        max_value=1.0,
        step=0.05,
        key="tests_threshold",
        help="The share of its trials a cell must pass (1.0: every trial)",
    )
    st.button(
        "Run tests", type="primary", on_click=_request_run, disabled=not files or state.job is not None, key="tests_run"
    )
    if state.run_requested and state.job is None:
        _start_tests(state, files)
    if state.job is not None:
        _follow(state)
    if state.notice is not None:
        kind, text = state.notice
        (st.success if kind == "success" else st.error)(safe.block(text))
    if state.matrix is not None:
        _scoreboard_section(state.matrix)
        _matrix_section(state.matrix)
    _history_section()
    state.keep(WIDGETS)


main()

"""A class at a glance, for its teacher: one row per student, where each stands in each lesson, who is stuck.

Everything here is derived from the runs library's rows (RunSummary) and, for the repeated-call flag, the
runs themselves: a lesson's run is known by the title the lesson gives it ("Lesson: TITLE", a fork's too).
The class page (views/class_page.py) draws these rows, and the tables and caption made of them here, and
redraws them as the database changes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from agentcore.hooks.guard import most_repeated
from agentcore.loop import Agent
from agentcore.messages import ToolMessage
from agentcore.providers import create_provider
from agentcore.run import Run
from agentcore.store.runs import RunSummary
from agentcore.toolbox import get_tools

from . import safe, words
from .lessons import LESSONS, Lesson, lesson_titled

NOT_STARTED, DONE = "not started", "done"
REPEATS_STUCK = 3  # the same call with the same arguments this often: the model is going round in circles
ERRORS_STUCK = 2  # this many failed tool results in a row, at the run's end

# what the time filter offers: its label, and how far back from now (None: since midnight, local time)
WINDOWS: dict[str, timedelta | None] = {
    "Today": None,
    "Last hour": timedelta(hours=1),
    "Last 7 days": timedelta(days=7),
    "Last 30 days": timedelta(days=30),
}


def since(window: str, now: datetime | None = None) -> str:
    """The start of a time window as the store keeps times (ISO, UTC, milliseconds)."""
    now = now or datetime.now().astimezone()
    span = WINDOWS[window]
    start = now.replace(hour=0, minute=0, second=0, microsecond=0) if span is None else now - span
    return start.astimezone(UTC).isoformat(timespec="milliseconds")


def lesson_of_summary(summary: RunSummary) -> Lesson | None:
    """The lesson whose run (or a fork of it) this is, known by its title."""
    return lesson_titled(summary.title)


@functools.cache
def planned_steps(lesson_id: str) -> int:
    """How many steps a lesson's run takes to its end, played once on its scripted model (no pause, no edit)."""
    lesson = LESSONS[lesson_id]
    run = lesson.start()
    run.config = run.config.model_copy(update={"breakpoints": []})
    agent = Agent(create_provider("scripted", lesson.scenario, scenario=lesson.scenario), get_tools(list(lesson.tools)))
    while not run.finished and len(run.steps) < lesson.max_steps:
        agent.step(run)
    return len(run.steps)


def lesson_done(lesson: Lesson, summary: RunSummary) -> bool:
    """Whether the run ended the lesson: it stopped (in the fork, for a lesson with one); see Lesson.done."""
    return summary.stop_reason is not None and (lesson.fork_after is None or summary.parent_id is not None)


def lesson_state(lesson: Lesson, runs: Iterable[RunSummary]) -> str:
    """`not started`, `step k of n` (the furthest of the student's runs of it), or `done`."""
    mine = [r for r in runs if lesson_of_summary(r) is lesson]
    if not mine:
        return NOT_STARTED
    if any(lesson_done(lesson, r) for r in mine):
        return DONE
    furthest = max(r.steps for r in mine)
    return f"step {furthest} of {planned_steps(lesson.id)}"


def stuck_reason(summary: RunSummary, run: Run | None) -> str:
    """Why a run looks stuck, in a few words, or "": its budget reached, an error, failing tools, one call repeated."""
    if summary.stop_reason == "max_steps":
        return "step budget reached"
    if summary.stop_reason == "error":
        return "stopped on an error"
    if run is None:
        return ""
    repeated = most_repeated(run)
    if repeated is not None and repeated[2] >= REPEATS_STUCK:
        return f"{repeated[0]} called {repeated[2]}× with the same arguments"
    failed = 0
    for message in reversed([m for m in run.messages if isinstance(m, ToolMessage)]):
        if not message.is_error:
            break
        failed += 1
    return f"the last {failed} tool results were errors" if failed >= ERRORS_STUCK else ""


@dataclass
class StudentRow:
    """One student's line on the class page."""

    student: str
    lessons: dict[str, str]  # lesson id -> its state
    runs: list[RunSummary] = field(default_factory=list)  # newest first
    stuck: dict[str, str] = field(default_factory=dict)  # run id -> why it looks stuck

    @property
    def steps(self) -> int:
        return sum(r.steps for r in self.runs)

    @property
    def tokens(self) -> int:
        return sum(r.total_tokens for r in self.runs)

    @property
    def last_active(self) -> str:
        return max((r.updated_at for r in self.runs), default="")

    @property
    def flag(self) -> str:
        """The newest stuck run's reason, or ""."""
        return next((self.stuck[r.id] for r in self.runs if self.stuck.get(r.id)), "")


def class_rows(
    runs: list[RunSummary],
    read: Callable[[RunSummary], Run | None],
    *,
    lesson_id: str | None = None,
    leave_out: Iterable[str] = (),
) -> list[StudentRow]:
    """One row per student who saved a run among `runs` (their owners, less `leave_out`: the teachers).

    `read` gives a run's contents for the repeated-call and tool-error flags (None when it cannot); with
    `lesson_id`, only that lesson's runs are counted and only its state is given.
    """
    skipped = set(leave_out)
    lessons = [LESSONS[lesson_id]] if lesson_id else list(LESSONS.values())
    by_student: dict[str, list[RunSummary]] = {}
    for r in runs:
        if r.owner and r.owner not in skipped:
            if lesson_id is None or lesson_of_summary(r) is LESSONS[lesson_id]:
                by_student.setdefault(r.owner, []).append(r)
    rows = []
    for student, theirs in sorted(by_student.items(), key=lambda kv: kv[0].lower()):
        row = StudentRow(student, {lesson.id: lesson_state(lesson, theirs) for lesson in lessons}, theirs)
        for r in theirs:
            reason = stuck_reason(r, None) or stuck_reason(r, read(r))
            if reason:
                row.stuck[r.id] = reason
        rows.append(row)
    return rows


def saved_time(saved: str) -> str:
    """A time as the store keeps it, to the second, as the class page shows it: `2026-12-06 13:22:17 UTC`."""
    return saved[:19].replace("T", " ") + " UTC" if saved else ""


def student_table(rows: list[StudentRow], lesson_id: str | None) -> list[dict[str, object]]:
    """The students table's lines: each student's state in each lesson (or the one chosen), their runs, steps,
    tokens, last activity and flag."""
    lessons = [LESSONS[lesson_id]] if lesson_id else list(LESSONS.values())
    table = []
    for row in rows:
        line: dict[str, object] = {"student": safe.plain(row.student)}
        line.update({f"{i + 1}. {lesson.title}": row.lessons[lesson.id] for i, lesson in enumerate(lessons)})
        line.update(
            {
                "runs": len(row.runs),
                "steps": row.steps,
                "tokens": row.tokens,
                "last active": saved_time(row.last_active),
                "stuck": safe.plain(row.flag),
            }
        )
        table.append(line)
    return table


def runs_table(runs: list[RunSummary], rows: list[StudentRow]) -> list[dict[str, object]]:
    """The runs table's lines, newest save first, each with its student, lesson and stuck flag."""
    stuck = {run_id: why for row in rows for run_id, why in row.stuck.items()}
    return [
        {
            "student": safe.plain(r.owner or ""),
            "run": safe.plain(r.title or "(untitled)"),
            "lesson": (lesson.title if (lesson := lesson_of_summary(r)) else ""),
            "steps": r.steps,
            "tokens": r.total_tokens,
            "stop": r.stop_reason or "open",
            "stuck": safe.plain(stuck.get(r.id, "")),
            "saved": saved_time(r.updated_at),
            "id": r.id,
        }
        for r in sorted(runs, key=lambda r: r.updated_at, reverse=True)
    ]


def class_caption(rows: list[StudentRow], runs: list[RunSummary], every_s: int) -> str:
    """The line over the tables: students, runs, students with a stuck run, how often it redraws."""
    stuck = sum(1 for row in rows if row.flag)
    return (
        f"{words.plural(len(rows), 'student')} · {words.plural(len(runs), 'run')} · "
        f"{words.plural(stuck, 'student')} with a stuck run · updates every {every_s} s"
    )

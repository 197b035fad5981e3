"""The runs server's tools that drive the loop or read many runs: each within the rules and limits of one call.

Stepping a run, comparing it from a step, running tests and scanning the library are the calls that spend
model calls or time. Each meets ClientRules before anything is built (a configuration, or a stored run's own,
names no file or address of the server's), counts its model calls or trials before the first one, and stops
when its Deadline is reached, saying so in its answer; what it did until then is saved.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .data import MAX_MESSAGES, cut, message_data, run_data
from .limits import ClientRules, Deadline, Limits

SCAN_CHUNK = 20  # runs a scan reads between two looks at its deadline
MAX_EDIT_CHARS = 2_000_000  # the JSON of the messages fork_run takes
MAX_DRIVEN_STEPS = 100  # model calls run_to_end makes in one call


def read(store: Any, run_id: str) -> Any:
    """The run, as this store's viewer may see it; a run they may not see reads as one that does not exist."""
    if not isinstance(run_id, str) or store.summary(run_id) is None:
        raise UsageError(f"no run {str(run_id)[:80]!r} in the runs database")
    return store.read_run(run_id)


def _checked(run: Any, rules: ClientRules, what: str) -> None:
    """The run's next model call as a client's configuration: refused when it names what a client may not."""
    config = run.config
    rules.check(config.provider, config.next_model.model or None, config.base_url, f"run {what}'s configuration")


def own(store: Any, run_id: str, rules: ClientRules) -> Any:
    """The run to go on with: one's own as stored, someone else's as one's own fork from its end (saved); either
    only when its configuration is one a client may name."""
    summary = store.summary(run_id) if isinstance(run_id, str) else None
    if summary is None:
        raise UsageError(f"no run {str(run_id)[:80]!r} in the runs database")
    if summary.owner in (None, store.owner):
        run = store.load_run(run_id)
        _checked(run, rules, run.id)
        return run
    theirs = store.read_run(run_id)
    _checked(theirs, rules, run_id)
    run = theirs.fork_with_messages(list(theirs.messages), keep_later=True)
    store.save_run(run)
    return run


def inside(path: str) -> Path:
    """A test path under the server's working folder: a client names files there and nowhere else."""
    root = Path.cwd().resolve()
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        raise UsageError(f"{path[:200]!r} is outside the server's folder {root}")
    return target


def drive(
    store: Any, run: Any, how: Callable[[Any, Any, threading.Event], None], rules: ClientRules, limits: Limits
) -> dict[str, Any]:
    """Build the run's agent (its configuration checked as a client's, again), move it with `how`, save it, say what it added."""
    from ..hooks.examples import check_hook_names
    from ..loop import Agent
    from ..toolbox import built_in

    config = run.config
    deadline = Deadline(limits.seconds)
    going_on = config.next_model
    provider = rules.factory(deadline)(going_on.provider, going_on.model or None, base_url=config.base_url)
    check_hook_names(config.hooks)
    tools = built_in(config.tools)
    before = len(run.messages)
    cancel = threading.Event()
    with deadline.cancels(cancel):
        how(Agent(provider, tools), run, cancel)
    store.save_run(run)
    data = run_data(store, run)
    data["messages"] = [message_data(i, run.messages[i]) for i in range(before, len(run.messages))][-MAX_MESSAGES:]
    data["new_messages"] = len(run.messages) - before
    data["stopped"] = f"this call's {limits.seconds:g} s ran out" if cancel.is_set() else None
    return data


def fork(store: Any, run_id: str, step: int, messages: list[Any] | None, mocks: list[Any] | None) -> dict[str, Any]:
    """fork_run: the run forked before `step`'s model call, or over an edited message list, with `mocks`; saved."""
    from ..hooks.specs import MockRule
    from ..messages import MESSAGE_LIST, validate_messages

    if messages is not None and len(json.dumps(messages, default=str)) > MAX_EDIT_CHARS:
        raise UsageError(f"messages: more than {MAX_EDIT_CHARS:,} characters of JSON")
    run = read(store, run_id)
    if messages is None:
        made = run.fork(step)
    else:
        edited = MESSAGE_LIST.validate_python(messages)
        violations = validate_messages(edited)
        if violations:
            raise UsageError(f"messages: {violations[0]}")
        made = run.fork_with_messages(edited)
    if mocks is not None:
        made.config = made.config.model_copy(update={"mocks": [MockRule.model_validate(m) for m in mocks]})
    store.save_run(made)
    return {"run_id": made.id, "parent": {"run_id": run.id, "step": made.parent.step}, "next_phase": made.next_phase}


def step(store: Any, run_id: str, phase: str, rules: ClientRules, limits: Limits) -> dict[str, Any]:
    """step_run: one step of the loop (`step`), or its `model` or `tools` phase alone, on one's own run."""

    def how(agent: Any, r: Any, cancel: Any) -> None:
        if phase == "model":
            agent.model_phase(r)
        elif phase == "tools":
            agent.tools_phase(r)
        else:
            agent.step(r)

    run = own(store, run_id, rules)
    if run.finished and phase != "tools":
        raise UsageError(f"run {run.id} has ended ({run.ending or 'done'}): fork it to go on")
    return drive(store, run, how, rules, limits)


def to_end(store: Any, run_id: str, rules: ClientRules, limits: Limits) -> dict[str, Any]:
    """run_to_end: the loop on one's own run until an answer, a pause, its budget or this call's time."""
    run = own(store, run_id, rules)
    if run.finished:
        raise UsageError(f"run {run.id} has ended ({run.ending or 'done'}): fork it to go on")
    most = min(MAX_DRIVEN_STEPS, limits.calls)
    if run.budget_left > most:
        raise UsageError(f"run {run.id} may make {run.budget_left} more calls: step it, at most {most} here")
    return drive(store, run, lambda agent, r, cancel: agent.run(r, cancel), rules, limits)


def pin(store: Any, run_id: str, path: str, name: str | None) -> dict[str, Any]:
    """pin_test: a test file written from the run under the server's folder, never over an existing file."""
    from ..exports import export_test
    from ..testing import pinned
    from ..transcript import write_atomic

    out = inside(path)
    if out.suffix.lower() not in (".json", *pinned.YAML_SUFFIXES):
        raise UsageError(f"{path[:200]!r}: a test file is .json or .yaml")
    if out.exists():
        raise UsageError(f"{path[:200]!r} exists: choose another name")
    run = read(store, run_id)
    test = pinned.propose(run, name)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, export_test(test, yaml_format=out.suffix.lower() in pinned.YAML_SUFFIXES))
    calls = len(test.expect.tool_calls.calls) if test.expect.tool_calls else 0
    return {"path": str(out), "test": test.name, "tool_calls": calls, "steps": len(run.steps)}


def _bounded_row(row: dict[str, Any]) -> dict[str, Any]:
    row = dict(row)
    for key in ("reply", "error", "final_answer"):
        if isinstance(row.get(key), str):
            row[key] = cut(row[key])
    if "tool_calls" in row:
        row["tool_calls"] = [cut(c, 500) for c in row["tool_calls"]]
    return row


def _step_within(comparison: Any, deadline: Deadline) -> str | None:
    """Step every column in lockstep to its end, as Comparison.step_to_end does, until the deadline; why it stopped.

    A step under way is not cut short here: each model call has the call's time left as its own deadline.
    """
    while any(c.state == "ready" for c in comparison.columns):
        before = [(len(c.run.messages), c.run.stop_reason) for c in comparison.columns]
        comparison.start("step", retry=False)  # a failed column is not tried again
        comparison.wait()
        if before == [(len(c.run.messages), c.run.stop_reason) for c in comparison.columns]:
            return None  # a pause only a person ends
        why = deadline.reached()
        if why:
            return why
    return None


def compare(
    store: Any,
    run: Any,
    step: int,
    configurations: list[str],
    steps: int | None,
    rules: ClientRules,
    limits: Limits,
) -> dict[str, Any]:
    """compare_from: the run forked before `step` on each configuration, stepped in lockstep within the limits."""
    from ..compare import MAX_COLUMNS, MIN_COLUMNS, Comparison, Origin, parse_spec

    if not MIN_COLUMNS <= len(configurations) <= MAX_COLUMNS:
        raise UsageError(f"a comparison needs {MIN_COLUMNS} to {MAX_COLUMNS} configurations, got {len(configurations)}")
    specs = [parse_spec(text) for text in configurations]
    for spec in specs:  # an unknown provider, a file or an address the server does not call: before any fork
        rules.check(spec.provider, spec.model, spec.base_url, spec.name)
    origin = Origin(run, step, steps)
    each = origin.budget - step + 1
    if each * len(specs) > limits.calls:
        raise UsageError(
            f"{len(specs)} configurations x {each} steps is {each * len(specs)} model calls, over this server's "
            f"{limits.calls} in one call: ask for fewer `steps`"
        )
    deadline = Deadline(limits.seconds)
    comparison = Comparison.from_step(origin, specs, factory=rules.factory(deadline))
    stopped = _step_within(comparison, deadline)
    for column in comparison.columns:
        store.save_run(column.run)
    return {
        "step": [_bounded_row(r) for r in comparison.step_rows()],
        "summary": [_bounded_row(r) for r in comparison.summary()],
        "forks": [{"configuration": c.label, "run_id": c.run.id, "error": cut(c.error)} for c in comparison.columns],
        "stopped": stopped,
    }


def run_tests(
    store: Any, path: str, configurations: list[str] | None, trials: int, rules: ClientRules, limits: Limits
) -> dict[str, Any]:
    """run_tests: the test files at `path` on each configuration, at most `limits.trials` runs, within its time."""
    from ..compare import MAX_COLUMNS
    from ..providers.reference import GROUND_TRUTH
    from ..testing import pinned
    from ..testing.runner import REPLAY, parse_config, results_json, run_matrix

    files = pinned.find_tests([str(inside(path))])
    if not files:
        raise UsageError(f"no test files (*.json, *.yaml) in {path[:200]!r}")
    specs = [parse_config(text) for text in configurations or [REPLAY]]
    if len(specs) > MAX_COLUMNS:
        raise UsageError(f"at most {MAX_COLUMNS} configurations in one call, not {len(specs)}")
    for spec in specs:
        if spec.provider not in (REPLAY, GROUND_TRUTH):
            rules.check(spec.provider, spec.model, spec.base_url, spec.name)
    if not isinstance(trials, int) or trials < 1:
        raise UsageError(f"trials is a whole number from 1, not {trials}")
    runs = len(files) * len(specs) * trials
    if runs > limits.trials:
        raise UsageError(
            f"{len(files)} tests x {len(specs)} configurations x {trials} trials is {runs} runs, over this "
            f"server's {limits.trials} in one call"
        )
    tests = [pinned.load(f) for f in files]
    deadline = Deadline(limits.seconds)
    cancel = threading.Event()
    with deadline.cancels(cancel):
        matrix = run_matrix(tests, specs, trials=trials, factory=rules.factory(deadline), cancel=cancel)
    for row in matrix.cells:
        for cell in row:
            for trial in cell.trials or [cell]:
                if not trial.passed and trial.run is not None:
                    store.save_run(trial.run)
    records = json.loads(results_json(matrix))["cells"]
    passed = sum(c.passed for row in matrix.cells for c in row)
    stopped = f"this call's {limits.seconds:g} s ran out" if cancel.is_set() else None
    return {"passed": passed, "cells": len(records), "trials": trials, "results": records, "stopped": stopped}


MAX_BLAME_IDS = 5  # run ids of one fork step's continuations a blame answer lists


def blame(
    store: Any,
    run_id: str,
    grading: tuple[str | None, str | None],
    configuration: str | None,
    trials: int,
    steps: list[int] | None,
    bisect: bool,
    rules: ClientRules,
    limits: Limits,
) -> dict[str, Any]:
    """blame: the run forked before each chosen step, each fork continued `trials` times and graded, within this
    server's model calls and time for one call; every fork saved under the run."""
    from ..compare import parse_spec
    from ..testing import blame as blaming
    from ..testing import pinned

    expect, test = grading
    if (expect is None) == (test is None):
        raise UsageError("give `expect` (a text the answer holds) or `test` (a test file), one of them")
    grader = (
        blaming.Grader.of_text(expect)
        if expect is not None
        else blaming.Grader(pinned.load(inside(test)).expect, f"the test {test[:200]}")
    )
    run = read(store, run_id)
    spec = parse_spec(configuration) if configuration else blaming.own_spec(run)
    rules.check(spec.provider, spec.model, spec.base_url, spec.name)
    deadline = Deadline(limits.seconds)
    cancel = threading.Event()
    with deadline.cancels(cancel):
        found = blaming.blame(
            run,
            grader,
            spec=spec,
            trials=trials,
            steps=steps,
            bisect=bisect,
            max_calls=limits.calls,
            factory=rules.factory(deadline),
            cancel=cancel,
        )
    for fork in found.runs:
        store.save_run(fork)
    data = found.to_dict()
    data["run_failure"] = cut(data["run_failure"])
    data["reply"] = cut(data["reply"])
    data["instead"] = [{"reply": cut(r["reply"]), "count": r["count"]} for r in data["instead"]]
    for rate in data["rates"]:
        rate["failure"] = cut(rate["failure"])
        rate["more_run_ids"] = max(0, len(rate["run_ids"]) - MAX_BLAME_IDS)
        rate["run_ids"] = rate["run_ids"][:MAX_BLAME_IDS]
    data["stopped"] = f"this call's {limits.seconds:g} s ran out" if found.stopped else None
    return data


def scan(store: Any, names: list[str] | None, again: bool, limits: Limits) -> dict[str, Any]:
    """scan: built-in and `regex:` scanners over the runs, a few runs at a time, until done or the deadline."""
    from ..store.scanners import BUILTINS, ScanReport, ScanStopped, regex_scanner, scan_library

    names = list(dict.fromkeys(names or BUILTINS.built_in))
    deadline = Deadline(limits.seconds)
    scanners = [  # a client names built-ins and patterns alone: its module:function is refused, never imported
        regex_scanner(n.removeprefix("regex:"), deadline=deadline.at) if n.startswith("regex:") else BUILTINS.resolve(n)
        for n in names
    ]
    ids = store.run_ids()
    report = ScanReport(findings={s.name: 0 for s in scanners})
    stopped = None
    for start in range(0, len(ids), SCAN_CHUNK):
        stopped = deadline.reached()
        if stopped:
            break
        try:
            part = scan_library(store, scanners, ids[start : start + SCAN_CHUNK], None, again=again)
        except ScanStopped:
            stopped = f"this call's {limits.seconds:g} s ran out"
            break
        for field in ("runs", "skipped", "added", "removed"):
            setattr(report, field, getattr(report, field) + getattr(part, field))
        for name, count in part.findings.items():
            report.findings[name] += count
    data = dataclasses.asdict(report)
    read_so_far = report.runs + report.skipped
    data["stopped"] = (
        f"{stopped} after {read_so_far} of {len(ids)} runs: scan again to go on (runs read are skipped)"
        if stopped
        else None
    )
    return data

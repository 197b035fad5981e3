"""Scanners: each built-in finds what it names and nothing else; findings land as labels, once, and are replaced."""

from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest
from support.runs import FIVE, made_run, scripted_run

from agentcore.annotations import make_annotation
from agentcore.cli.main import main
from agentcore.errors import AgentcoreError, UsageError
from agentcore.hooks.protocol import HookEffect
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage, Usage
from agentcore.run import Run
from agentcore.steps import StepRecord
from agentcore.store.runs import Store
from agentcore.store.scanners import BUILTINS, Finding, Scanner, resolve_scanner, scan_library, scan_run


def found(run: Run, name: str) -> list[tuple[int, str]]:
    """(step, label) of each finding of built-in `name` on the run."""
    return [(a.step, a.all_labels[0]) for a in scan_run(run, [BUILTINS[name]])[f"scanner:{name}"]]


def calc(call_id: str, expression: str, text: str = "I'll compute it.") -> AssistantMessage:
    return AssistantMessage(
        content=text, tool_calls=(ToolCall(id=call_id, name="calculator", arguments={"expression": expression}),)
    )


def failed(call_id: str) -> list[ToolMessage]:
    return [ToolMessage(tool_call_id=call_id, name="calculator", content="Error: cannot read ×", is_error=True)]


@pytest.fixture(scope="module")
def scripted() -> dict[str, Run]:
    return {s: scripted_run(s) for s in ("weather", "runaway", "tool_error", "research", "recovery")}


def test_loop_names_the_runaway_run_at_its_third_identical_call_and_no_other_scenario(scripted):
    assert found(scripted["runaway"], "loop") == [(3, "looped")]
    for name in ("weather", "tool_error", "research", "recovery"):
        assert found(scripted[name], "loop") == [], name
    twice = made_run([calc("a", "1+1"), [], calc("b", "1+1"), [], calc("c", "2+2"), [], AssistantMessage(content="2")])
    assert found(twice, "loop") == []  # two identical calls are not yet a loop
    thrice = made_run([calc("a", "1+1"), [], calc("b", "1+1"), [], calc("c", "1+1"), [], AssistantMessage(content="2")])
    assert found(thrice, "loop") == [(3, "looped")]


def test_ignored_error_finds_a_failed_call_made_again_or_an_answer_that_says_nothing_of_it(scripted):
    assert found(scripted["tool_error"], "ignored_error") == []  # it read the error and corrected the call
    assert found(scripted["recovery"], "ignored_error") == []
    again = made_run([calc("a", "17 × 23"), failed("a"), calc("b", "17 × 23"), [], AssistantMessage(content="391")])
    assert found(again, "ignored_error") == [(2, "ignored the result")]
    silent = made_run([calc("a", "17 × 23"), failed("a"), AssistantMessage(content="17 × 23 = 391.")])
    assert found(silent, "ignored_error") == [(2, "ignored the result")]
    honest = made_run(
        [calc("a", "17 × 23"), failed("a"), AssistantMessage(content="The calculator failed; I cannot say.")]
    )
    assert found(honest, "ignored_error") == []


def test_unknown_tool_finds_a_call_to_a_tool_not_offered_and_judges_no_run_without_tools(scripted):
    assert found(scripted["recovery"], "unknown_tool") == [(2, "wrong tool")]  # `calculater`
    for name in ("weather", "runaway", "tool_error", "research"):
        assert found(scripted[name], "unknown_tool") == [], name
    offered_nothing = made_run([calc("a", "1+1"), [], AssistantMessage(content="2")], tools=())
    assert found(offered_nothing, "unknown_tool") == []


def test_step_budget_finds_the_run_that_stopped_at_its_budget(scripted):
    assert found(scripted["runaway"], "step_budget") == [(10, "step budget reached")]
    for name in ("weather", "tool_error", "research", "recovery"):
        assert found(scripted[name], "step_budget") == [], name
    provider_failed = made_run([calc("a", "1+1")])
    provider_failed.stop_reason = "error"
    assert found(provider_failed, "step_budget") == []


def test_context_finds_the_first_request_past_80_percent_of_the_models_window():
    def sized(*inputs: int) -> Run:
        run = made_run([AssistantMessage(content=f"part {i}") for i in range(len(inputs))], tools=())
        for step, tokens in zip(run.steps, inputs, strict=True):
            step.provider, step.model, step.usage = "openai", "gpt-4o-mini", Usage(input_tokens=tokens, output_tokens=9)
        return run

    assert found(sized(100_000, 102_400), "context") == []  # 80% of 128,000 exactly is not past it
    assert found(sized(100_000, 102_401, 120_000), "context") == [(2, "context over 80%")]
    unknown_window = sized(100_000, 120_000)
    for step in unknown_window.steps:
        step.provider = step.model = "scripted"
    assert found(unknown_window, "context") == []


def test_unread_results_finds_an_answer_whose_request_never_held_a_tool_result(scripted):
    result = [ToolMessage(tool_call_id="a", name="calculator", content="17 * 23 = 391")]

    def answered_after(effect_messages) -> Run:
        run = made_run([calc("a", "17 * 23"), result, AssistantMessage(content="391.")])
        if effect_messages is not None:
            kept = [m.model_dump(mode="json") for m in effect_messages(run.messages)]
            effect = HookEffect(
                hook="trim", point="before_model", change="request: trimmed", kind="message_list", after=kept
            )
            run.steps[1].hook_effects = [effect]
        return run

    assert found(answered_after(lambda ms: ms[:2]), "unread_results") == [(2, "answered without reading")]
    assert found(answered_after(lambda ms: ms[:3]), "unread_results") == []  # trimmed, but the result was sent
    assert found(answered_after(None), "unread_results") == []
    for name in ("weather", "tool_error", "research", "recovery"):
        assert found(scripted[name], "unread_results") == [], name


def test_key_in_reply_finds_key_shaped_text_and_not_ordinary_words(scripted):
    leaked = made_run([AssistantMessage(content="Use sk-proj1234567890abcdefXYZ to call it.")], tools=())
    assert found(leaked, "key_in_reply") == [(1, "key in reply")]
    bearer = made_run([AssistantMessage(content="Send Bearer 9f8e7d6c5b4a3210 along.")], tools=())
    assert found(bearer, "key_in_reply") == [(1, "key in reply")]
    words = made_run([AssistantMessage(content="Basic arithmetic and Bearer instructions: 17 × 23 = 391.")], tools=())
    assert found(words, "key_in_reply") == []
    for name in ("weather", "tool_error", "research", "recovery"):
        assert found(scripted[name], "key_in_reply") == [], name
    [annotation] = scan_run(leaked, [BUILTINS["key_in_reply"]])["scanner:key_in_reply"]
    assert "sk-proj" not in annotation.note  # the evidence names the kind, never the key


def test_key_in_reply_names_each_step_whose_own_reply_holds_a_key_and_no_key_made_of_two_replies():
    # "Bearer" ending one reply and a token starting the next are two harmless replies, not a key between them
    split = [AssistantMessage(content="Send it as Bearer"), AssistantMessage(content="9f8e7d6c5b4a3210 is the id.")]
    assert found(made_run(split, tools=()), "key_in_reply") == []
    key = AssistantMessage(content="Use sk-proj1234567890abcdefXYZ to call it.")
    plain = AssistantMessage(content="The weather is fine.")
    assert found(made_run([plain, key, plain, key], tools=()), "key_in_reply") == [
        (2, "key in reply"),
        (4, "key in reply"),
    ]
    assert found(made_run([*split, key], tools=()), "key_in_reply") == [(3, "key in reply")]


def test_key_in_reply_reads_a_runs_replies_once_joined_and_each_alone_only_when_the_joined_text_holds_a_key(
    monkeypatch,
):
    from agentcore.secrets import detectors

    read: list[str] = []
    real = detectors.secret_kinds
    monkeypatch.setattr(detectors, "secret_kinds", lambda text: read.append(text) or real(text))
    plain = [AssistantMessage(content=f"Reply {i}, no key here.") for i in range(5)]
    assert found(made_run(plain, tools=()), "key_in_reply") == []
    assert len(read) == 1 and read[0].count("no key here") == 5  # most runs: one reading of every reply, joined
    read.clear()
    key = AssistantMessage(content="Use sk-proj1234567890abcdefXYZ to call it.")
    assert found(made_run([*plain, key], tools=()), "key_in_reply") == [(6, "key in reply")]
    assert len(read) == 1 + 6  # joined, then each reply alone to name its step


def test_scan_names_the_runaway_run_errors_counts_it_and_a_second_scan_changes_no_count(location, capsys):
    store = Store(location, owner="ada")
    runs = [scripted_run(s) for s in FIVE]
    for run in runs:
        store.save_run(run)
    runaway = next(r for r in runs if r.config.scenario == "runaway")
    store.annotate(runs[0].id, make_annotation(step=1, labels=["good"]))  # a person's label, counted beside them

    assert main(["scan", "--db", location]) == 0
    labels = store.annotations_by_run()
    assert [a.all_labels for a in labels[runaway.id] if a.author == "scanner:loop"] == [["looped"]]
    # each finding named where it is, to open with runs show
    loop = next(a for a in labels[runaway.id] if a.author == "scanner:loop")
    printed = capsys.readouterr().out
    assert f"  run {runaway.id} step {loop.step}: loop: looped\n" in printed
    assert printed.count("  run ") == sum(a.author.startswith("scanner:") for v in labels.values() for a in v)
    weather = [r.id for r in runs if r.config.scenario == "weather"]
    assert all(a.author == "ada" for w in weather for a in labels.get(w, []))

    capsys.readouterr()
    assert main(["errors", "--db", location, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["labels"]["looped"] == 1 and first["labels"]["good"] == 1
    assert first["sources"] == {"people": 1, "scanners": 2}  # the loop and the step budget
    assert main(["errors", "--db", location, "--json", "--source", "scanners"]) == 0
    assert "good" not in json.loads(capsys.readouterr().out)["labels"]
    assert main(["errors", "--db", location, "--json", "--source", "people"]) == 0
    assert json.loads(capsys.readouterr().out)["labels"] == {"good": 1}

    assert main(["scan", "--db", location]) == 0
    assert "0 findings added, 0 removed" in capsys.readouterr().out
    assert main(["errors", "--db", location, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == first
    store.close()


def test_a_changed_scanner_replaces_its_own_findings_and_leaves_others(tmp_path):
    store = Store(tmp_path / "runs.db", owner="ada")
    run = scripted_run("research")
    store.save_run(run)
    store.annotate(run.id, make_annotation(step=2, labels=["wrong tool"]))
    scan_library(store, [BUILTINS["step_budget"]], [run.id])  # another scanner, nothing to find here
    before = Scanner("mine", lambda r: [Finding(1, "first idea", "step 1 looks odd")])
    after = Scanner("mine", lambda r: [Finding(3, "second idea", "step 3 looks odd")])
    assert scan_library(store, [before], [run.id]).added == 1
    report = scan_library(store, [after], [run.id])
    assert (report.added, report.removed) == (1, 1)
    kept = [(a.author, a.step, a.all_labels) for a in store.annotations(run.id)]
    assert kept == [("ada", 2, ["wrong tool"]), ("scanner:mine", 3, ["second idea"])]


def test_a_users_function_scanner_and_a_regex_scanner(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_scanners.py").write_text(
        textwrap.dedent(
            '''
            from agentcore.store.scanners import Finding

            def long_answers(run):
                """Replies longer than 200 characters."""
                for n, step in enumerate(run.steps, start=1):
                    reply = run.messages[step.message_count]
                    if len(reply.content or "") > 200:
                        yield Finding(n, "long answer", f"{len(reply.content)} characters")
            '''
        )
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(BUILTINS, "_entries", dict(BUILTINS._entries))  # the scanner it loads is not kept for others
    db = str(tmp_path / "runs.db")
    assert main(["scan", "--db", db, "--scanner", "my_scanners:long_answers"]) == 2  # the folder is not on the path
    assert "no installed module 'my_scanners'" in capsys.readouterr().err
    monkeypatch.syspath_prepend(str(tmp_path))  # PYTHONPATH=. as the docs say
    store = Store(db)
    research, weather = scripted_run("research"), scripted_run("weather")
    store.save_run(research)
    store.save_run(weather)
    assert main(["scan", "--db", db, "--scanner", "my_scanners:long_answers", "--scanner", "regex:Tokyo.*\\d"]) == 0
    labels = store.annotations_by_run()
    assert [(a.author, a.step) for a in labels[research.id]] == [("scanner:my_scanners:long_answers", 10)]
    assert [(a.author, a.all_labels) for a in labels[weather.id]] == [("scanner:regex:Tokyo.*\\d", ["regex match"])]
    with pytest.raises(UsageError, match="too large"):
        resolve_scanner("regex:(a{1000}){1000}")
    assert main(["scan", "--db", db, "--scanner", "no_such_module:f"]) == 2
    bad = Scanner("bad", lambda r: [Finding(99, "x", "no such step")])
    with pytest.raises(UsageError, match="not a step 99"):
        scan_run(research, [bad])


def test_a_scan_skips_the_runs_each_scanner_read_as_they_stand_and_rereads_a_changed_one(tmp_path):
    store = Store(tmp_path / "runs.db", owner="ada")
    runaway, weather = scripted_run("runaway"), scripted_run("weather")
    store.save_run(runaway)
    store.save_run(weather)
    scanners = [BUILTINS["loop"], BUILTINS["step_budget"]]
    first = scan_library(store, scanners, [runaway.id, weather.id])
    assert (first.runs, first.skipped, first.added) == (2, 0, 2)
    again = scan_library(store, scanners, [runaway.id, weather.id])
    assert (again.runs, again.skipped, again.added, again.removed) == (0, 2, 0, 0)
    runaway.config.max_steps = 20  # the run goes on past its old budget, and loops no more
    runaway.stop_reason = None
    runaway.messages.append(AssistantMessage(content="I stop here."))
    runaway.steps.append(StepRecord(index=11, message_count=len(runaway.messages) - 1))
    runaway.stop_reason = "answer"
    store.save_run(runaway)
    changed = scan_library(store, scanners, [runaway.id, weather.id])
    assert (changed.runs, changed.skipped, changed.removed) == (1, 1, 1)  # the step budget's finding is gone
    assert [a.author for a in store.annotations(runaway.id)] == ["scanner:loop"]
    more = scan_library(store, [*scanners, BUILTINS["unknown_tool"]], [runaway.id, weather.id])
    assert more.runs == 2  # a scanner that had not read them
    assert scan_library(store, scanners, [weather.id], again=True).runs == 1


def test_a_scans_report_names_findings_up_to_its_bound_and_counts_the_rest(monkeypatch):
    from agentcore.store import scanners

    monkeypatch.setattr(scanners, "MAX_LISTED", 2)
    report = scanners.ScanReport()
    labels = [make_annotation(step=n, labels=["looped"]) for n in (1, 2, 3)]
    report.keep("r1", "loop", labels)
    assert report.found == [("r1", 1, "loop", "looped"), ("r1", 2, "loop", "looped")] and report.not_listed == 1


PID_SCANNER = '''
import os

from agentcore.store.scanners import Finding


def where(run):
    """The process that read the run."""
    yield Finding(1, "read", f"read by process {os.getpid()}")


def too_far(run):
    """A finding on a step no run has."""
    yield Finding(99, "x", "no such step")


def chatty(run):
    """Prints as it reads: the worker's stdout is the scan's, so this goes to stderr."""
    print("reading", run.id)
    return [Finding(1, "read", "read")]


def dies(run):
    """Ends its process."""
    os._exit(3)
'''


SEVEN = ("loop", "ignored_error", "unknown_tool", "step_budget", "context", "unread_results", "key_in_reply")


@pytest.fixture
def pid_scanners(tmp_path, monkeypatch):
    """A user's scanner module on the import path, as PYTHONPATH=. puts one: `where` names the process reading.
    Made as resolve_scanner makes them, but not registered: the registry would list them beside the built-ins."""
    import importlib

    (tmp_path / "pid_scanners.py").write_text(PID_SCANNER)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("pid_scanners")
    yield {
        name: Scanner(f"pid_scanners:{name}", getattr(module, name)) for name in ("where", "too_far", "chatty", "dies")
    }
    sys.modules.pop("pid_scanners", None)


def _library(path, runs: list[Run], copies: int) -> tuple[Store, list[str]]:
    store = Store(path, owner="ada")
    ids = []
    for i in range(copies):
        run = runs[i % len(runs)].model_copy(update={"id": Run().id})
        store.save_run(run)
        ids.append(run.id)
    return store, ids


@pytest.mark.long
def test_a_scan_on_two_processes_writes_what_a_scan_in_one_writes_and_each_run_is_read_in_a_worker(
    tmp_path, monkeypatch, pid_scanners
):
    from agentcore.store import scanners as scanning

    monkeypatch.setattr(scanning, "POOL_RUNS", 10)
    monkeypatch.setattr(scanning, "READ_BATCH", 50)  # nine batches: more than the two workers and one waiting
    runs = [scripted_run(s) for s in ("weather", "runaway", "tool_error", "research", "recovery")]
    builtins = [BUILTINS[name] for name in SEVEN]
    one, ids = _library(tmp_path / "one.db", runs, 450)
    two, same = _library(tmp_path / "two.db", runs, 450)
    by_one = scan_library(one, builtins, ids, processes=1)
    reads, seen = [], []
    monkeypatch.setattr(two, "stored_runs", lambda run_ids: reads.append(run_ids) or Store.stored_runs(two, run_ids))

    def progress(done: int, total: int) -> None:
        seen.append((done, len(reads)))

    by_two = scan_library(two, [*builtins, pid_scanners["where"]], same, progress, processes=2)
    assert [done for done, _ in seen] == list(range(1, 451))
    assert seen[0][1] == 3  # the first run's findings came as soon as both workers had a batch and one waited
    assert by_one.added > 0 and (by_two.runs, by_two.added) == (450, by_one.added + 450)
    assert {k: v for k, v in by_two.findings.items() if k != "pid_scanners:where"} == by_one.findings

    def kept(store: Store, order: list[str]) -> list[list[tuple]]:
        labels = store.annotations_by_run()
        return [sorted((a.id, a.author, a.step, a.note) for a in labels.get(r, [])) for r in order]

    readers = {a[3] for run in kept(two, same) for a in run if a[1] == "scanner:pid_scanners:where"}
    assert len(readers) == 2 and f"read by process {os.getpid()}" not in readers  # two workers, not this process
    assert kept(one, ids) == [[a for a in run if a[1] != "scanner:pid_scanners:where"] for run in kept(two, same)]
    again = scan_library(two, builtins, same, processes=2)  # each worker's reading was recorded as this one's is
    assert (again.runs, again.skipped, again.added) == (0, 450, 0)


@pytest.mark.long
def test_a_scanner_failing_in_a_worker_is_the_same_one_line_error(tmp_path, monkeypatch, pid_scanners):
    from agentcore.store import scanners as scanning

    monkeypatch.setattr(scanning, "POOL_RUNS", 10)
    store, ids = _library(tmp_path / "runs.db", [scripted_run("weather")], 20)
    with pytest.raises(UsageError, match=r"^scanner pid_scanners:too_far on run \w+: .*not a step 99"):
        scan_library(store, [pid_scanners["too_far"]], ids, processes=2)
    assert store.annotations_by_run() == {}  # nothing of the failed batch written


@pytest.mark.long
def test_a_worker_that_prints_scans_on_and_one_that_dies_stops_the_scan_in_one_line(
    tmp_path, monkeypatch, pid_scanners, capfd
):
    from agentcore.store import scanners as scanning

    monkeypatch.setattr(scanning, "POOL_RUNS", 10)
    store, ids = _library(tmp_path / "runs.db", [scripted_run("weather")], 20)
    assert scan_library(store, [pid_scanners["chatty"]], ids, processes=2).added == 20
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err.count("reading ") == 20
    with pytest.raises(AgentcoreError, match=r"^a scan's worker process stopped \(exit status 3\)$"):
        scan_library(store, [pid_scanners["dies"]], ids, again=True, processes=2)
    monkeypatch.setattr(scanning, "WORKER", [sys.executable, "-c", "import sys; sys.exit(4)"])  # cannot even start
    with pytest.raises(AgentcoreError, match=r"^a scan's worker process stopped \(exit status 4\)$"):
        scan_library(store, [pid_scanners["dies"]], ids, again=True, processes=2)


def test_a_scan_reads_on_one_process_when_small_asked_so_or_a_scanner_cannot_leave_this_one(monkeypatch):
    from agentcore.store import scanners as scanning

    builtins = [BUILTINS[name] for name in SEVEN]
    assert scanning.scan_processes(builtins, scanning.POOL_RUNS, 2) == 2
    assert scanning.scan_processes(builtins, scanning.POOL_RUNS - 1, 2) == 1  # too few runs to start processes for
    assert scanning.scan_processes(builtins, scanning.POOL_RUNS, 1) == 1
    monkeypatch.setattr(scanning.os, "cpu_count", lambda: 3)
    assert scanning.scan_processes(builtins, scanning.POOL_RUNS, None) == 3  # one a core
    made_here = Scanner("mine", lambda r: [])
    assert scanning.scan_processes([*builtins, made_here], scanning.POOL_RUNS, 2) == 1
    assert scanning.scan_processes([resolve_scanner("regex:Tokyo")], scanning.POOL_RUNS, 2) == 1


def test_a_scan_made_here_with_two_processes_asked_reads_every_run_itself(tmp_path, monkeypatch):
    from agentcore.store import scanners as scanning

    monkeypatch.setattr(scanning, "POOL_RUNS", 10)
    store, ids = _library(tmp_path / "runs.db", [scripted_run("weather")], 12)
    here = os.getpid()
    mine = Scanner("mine", lambda r: [Finding(1, "read", f"read by process {os.getpid()}")])
    report = scan_library(store, [mine], ids, processes=2)
    assert report.added == 12
    assert {a.note for v in store.annotations_by_run().values() for a in v} == {f"read by process {here}"}


def test_the_command_modules_main_runs_only_as_the_main_module():
    """A process multiprocessing spawns from the command imports `python -m agentcore`'s module again, as
    __mp_main__."""
    import runpy

    runpy.run_module("agentcore.__main__", run_name="__mp_main__")  # would exit, as the command does
    with pytest.raises(SystemExit):
        runpy.run_module("agentcore.__main__", run_name="__main__")


@pytest.mark.parametrize("processes", ["0", "-2"])
def test_scan_processes_below_one_is_one_line(tmp_path, capsys, processes):
    assert main(["scan", "--db", str(tmp_path / "runs.db"), "--processes", processes]) == 2
    err = capsys.readouterr().err
    assert err == "agentcore: error: --processes is how many processes read the runs: a whole number from 1\n"

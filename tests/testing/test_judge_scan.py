"""A judge as a scanner of the library (`agentcore scan --scanner judge:NAME`): bounded by its call budget, each
verdict a label on its step beside people's and scanners', read runs skipped, `--again` judging once more (the
verdicts on one step then measure the judge's self-consistency); against a stand-in judge on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
from support.judge_server import JudgeServer, says
from testing.test_judges import RUBRIC, Down, scripted_run, temperatures

from agentcore.annotations import make_annotation
from agentcore.cli.main import main
from agentcore.errors import UsageError
from agentcore.store.runs import Store
from agentcore.testing.agreement import judge_report
from agentcore.testing.expectations import JudgeExpect
from agentcore.testing.judges import judge_library


@pytest.fixture
def library(tmp_path):
    db = str(tmp_path / "runs.db")
    store = Store(db)
    runs = [scripted_run("weather" if n % 2 == 0 else "recovery") for n in range(6)]
    for n, run in enumerate(runs):
        # a scan takes runs oldest first; made within one millisecond, two would be taken in the order of their ids
        run.created_at = f"2026-01-01T00:00:0{n}.000+00:00"
        store.save_run(run)
        said = "good" if run.title.startswith("weather") else "hallucinated a fact"
        store.annotate(run.id, make_annotation(step=len(run.steps), labels=[said]), user="ann")
    return db, runs


def judges_file(tmp_path, server: JudgeServer) -> str:
    path = tmp_path / "judges.json"
    path.write_text(json.dumps({"judges": [{"name": "temps", "rubric": RUBRIC, "model": server.model()}]}))
    return str(path)


def scan(capsys, db: str, judges: str, *more: str) -> list[str]:
    assert main(["scan", "--scanner", "judge:temps", "--judges", judges, "--db", db, *more]) == 0
    return capsys.readouterr().out.splitlines()


def test_a_judge_scans_the_library_within_its_budget_and_its_verdicts_add_up(library, tmp_path, capsys):
    db, runs = library
    with JudgeServer(temperatures) as server:
        judges = judges_file(tmp_path, server)
        lines = scan(capsys, db, judges, "--budget", "4")
        assert server.calls == 4
        assert lines[0] == "judge:temps: 4 calls of a budget of 4: 2 pass, 2 fail, 0 no verdict"
        assert "  2 runs left unjudged: the budget is spent (scan again, or raise --budget)" in lines
        lines = scan(capsys, db, judges, "--budget", "4")  # the runs read are skipped: the two left are judged
        assert server.calls == 6 and lines[0].startswith("judge:temps: 2 calls of a budget of 4: ")
        assert "  4 runs skipped: judged already as they stand (--again judges them once more)" in lines
        assert scan(capsys, db, judges)[0].startswith("judge:temps: 0 calls")
        assert server.calls == 6
        scan(capsys, db, judges, "--again", "--budget", "10")
        assert server.calls == 12
    store = Store(db)
    report = judge_report(store.annotations_by_run(), "temps")
    assert report.agreement.n == 6 and report.agreement.agree == 6
    assert (report.repeated, report.unanimous, report.pairs_agree, report.pairs) == (6, 6, 6, 6)
    labels = [a for a in store.annotations(runs[1].id) if a.author == "judge:temps"]
    assert len(labels) == 2 and all(a.tags == ["fails the rubric"] for a in labels)
    call = store.read_run(labels[0].judge_run)
    assert call.judge_of.run_id == runs[1].id and call.judge_of.step == len(runs[1].steps)
    assert len(store.run_ids()) == 6 + 12  # each call a stored run; the judge's own runs are never judged


def test_a_judge_beside_a_scanner_and_the_agreement_command(library, tmp_path, capsys):
    db, _ = library
    with JudgeServer(lambda p: says("yes", "fine", [0])) as server:
        judges = judges_file(tmp_path, server)
        assert (
            main(["scan", "--scanner", "judge:temps", "--scanner", "step_budget", "--judges", judges, "--db", db]) == 0
        )
    out = capsys.readouterr().out
    assert "judge:temps: 6 calls of a budget of 20: 6 pass, 0 fail, 0 no verdict" in out and "scanned 6 runs" in out
    assert main(["judge", "agreement", "--judge", "temps", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "  raw agreement      0.500 (3 of 6)" in out  # it passes every run: it agrees with the 3 good ones
    assert "  majority baseline  0.500 (3 of 6)" in out and "  TNR (fail)         0.000 (0 of 3)" in out


def test_a_judge_that_fails_is_not_a_label_and_is_asked_again(library, tmp_path, capsys):
    db, runs = library
    with JudgeServer(lambda p: "not a verdict") as server:
        lines = scan(capsys, db, judges_file(tmp_path, server), "--budget", "2")
    assert lines[0] == "judge:temps: 2 calls of a budget of 2: 0 pass, 0 fail, 2 no verdict"
    labels = Store(db).annotations(runs[0].id)
    assert [a.tags for a in labels if a.author == "judge:temps"] == [["no verdict"]]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ([], "judge:temps needs --judges PATH"),
        (["--judges", "JUDGES", "--scanner", "judge:nobody"], "judge:nobody: no judge of that name in "),
        (["--judges", "JUDGES", "--budget", "0"], "--budget is a judge's calls at most"),
    ],
)
def test_a_judge_scan_named_wrongly_is_refused_in_one_line(library, tmp_path, capsys, args, said):
    db, _ = library
    path = tmp_path / "j.json"
    path.write_text(json.dumps({"judges": [{"name": "temps", "rubric": "r", "model": "scripted"}]}))
    args = [str(path) if a == "JUDGES" else a for a in args]
    assert main(["scan", "--scanner", "judge:temps", *args, "--db", db]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1


def test_a_scan_skips_the_runs_its_judge_has_read_unless_asked_to_judge_again(library):
    db, runs = library
    store, ids = Store(db), [r.id for r in runs]
    with JudgeServer(temperatures) as server:
        judge = JudgeExpect(name="temps", rubric=RUBRIC, model=server.model())
        first = judge_library(store, judge, ids, budget=10)
        second = judge_library(store, judge, ids, budget=10)
        again = judge_library(store, judge, ids, budget=10, again=True)
    assert [(r.calls, r.skipped) for r in (first, second, again)] == [(6, 0), (0, 6), (6, 0)]
    assert server.calls == 12


def test_a_judge_that_cannot_start_or_whose_call_fails_labels_nothing_and_leaves_the_run_to_the_next_scan(library):
    db, runs = library
    store, ids = Store(db), [r.id for r in runs[:2]]
    judge = JudgeExpect(name="temps", rubric=RUBRIC, model="scripted")

    def cannot_start(*args, **options):
        raise UsageError("no such model")

    for factory in (cannot_start, lambda *args, **options: Down("stand-in-judge"), cannot_start):
        report = judge_library(store, judge, ids, budget=10, factory=factory)
        assert (report.calls, report.skipped, report.errors, report.found) == (2, 0, 2, [])
        assert report.said == {"pass": 0, "fail": 0, "no verdict": 0}
    assert [a.author for run_id in ids for a in store.annotations(run_id)] == ["ann", "ann"]
    failed = [store.read_run(i) for i in store.run_ids() if i not in {r.id for r in runs}]
    assert len(failed) == 2 and all(r.stop_reason == "error" and r.judge_of.judge == "temps" for r in failed)

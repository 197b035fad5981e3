"""`agentcore scan` names where each finding is, run id and step, as far as its list goes, and counts the rest."""

from __future__ import annotations

import re

from support.runs import scripted_run

from agentcore.cli.main import main
from agentcore.store.runs import Store

FINDING = re.compile(r"^  run (\w+) step (\d+): (\w+): (.+)$")


def _scan(capsys, db: str, *more: str) -> str:
    assert main(["scan", "--scanner", "loop", "--scanner", "step_budget", "--db", db, *more]) == 0
    return capsys.readouterr().out


def test_scan_prints_each_findings_run_id_and_step(tmp_path, capsys):
    db = str(tmp_path / "runs.db")
    store = Store(db)
    looped, quiet = scripted_run("runaway"), scripted_run("weather")
    for run in (looped, quiet):
        store.save_run(run)
    out = _scan(capsys, db)
    listed = [FINDING.match(line).groups() for line in out.splitlines() if FINDING.match(line)]
    assert (looped.id, "3", "loop", "looped") in listed  # the third identical call, where the loop began
    assert {run_id for run_id, *_ in listed} == {looped.id}  # the weather run has nothing to say
    counts = {m[1]: int(m[2]) for m in re.finditer(r"^  (\w+)\s+(\d+) findings on the runs read$", out, re.M)}
    assert len(listed) == sum(counts.values()) > 1  # every finding counted is listed, each once
    assert len(set(listed)) == len(listed)
    # each listed step is one the scan kept as a label there
    kept = {(looped.id, str(a.step), a.author.removeprefix("scanner:")) for a in store.annotations(looped.id)}
    assert {(run_id, step, scanner) for run_id, step, scanner, _ in listed} == kept
    assert "more findings not listed" not in out


def test_a_long_list_of_findings_stops_at_its_bound_and_says_how_many_more(tmp_path, capsys, monkeypatch):
    from agentcore.store import scanners

    db = str(tmp_path / "runs.db")
    store = Store(db)
    runs = [scripted_run("runaway") for _ in range(3)]
    for run in runs:
        store.save_run(run)
    whole = [line for line in _scan(capsys, db).splitlines() if FINDING.match(line)]
    monkeypatch.setattr(scanners, "MAX_LISTED", 2)
    out = _scan(capsys, db, "--again")
    listed = [line for line in out.splitlines() if FINDING.match(line)]
    assert len(listed) == 2 and set(listed) <= set(whole)
    assert f"  … and {len(whole) - 2:,} more findings not listed" in out


def test_errors_prints_where_each_label_is_run_id_and_step_and_bounds_the_list(tmp_path, capsys, monkeypatch):
    from agentcore.annotations import make_annotation
    from agentcore.store import scanners

    db = str(tmp_path / "runs.db")
    store = Store(db)
    looped, weather = scripted_run("runaway"), scripted_run("weather")
    for run in (looped, weather):
        store.save_run(run)
    store.annotate(weather.id, make_annotation(step=1, labels=["good"]))
    _scan(capsys, db)
    assert main(["errors", "--db", db]) == 0
    out = capsys.readouterr().out
    where = out.split("where they are:\n", 1)[1].splitlines()
    kept = [(r.id, a) for r, found in store.annotated_runs() for a in found]
    assert len(where) == len(kept) > 2
    assert f"  run {weather.id} step 1: good (by {store.annotations(weather.id)[0].author})" in where
    assert any(
        line.startswith(f"  run {looped.id} step 3") and line.endswith(": looped (by scanner:loop)") for line in where
    )
    monkeypatch.setattr(scanners, "MAX_LISTED", 1)
    assert main(["errors", "--db", db]) == 0
    where = capsys.readouterr().out.split("where they are:\n", 1)[1].splitlines()
    assert len(where) == 2 and where[1].startswith(f"  … and {len(kept) - 1:,} more not listed")

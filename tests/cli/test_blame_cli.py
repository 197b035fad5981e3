"""`agentcore blame`: the model calls counted first, each fork step's rate and interval, the step to blame, every
fork saved under the run, and bad input as one line with exit 2."""

from __future__ import annotations

import json

import pytest
from support.runs import scripted_run

from agentcore.cli import main
from agentcore.exports import export_test
from agentcore.store.runs import Store
from agentcore.testing import pinned

RIGHT = ["--config", "scripted:city_by_city"]


@pytest.fixture
def stored(tmp_path):
    """A runs database holding the wrong_city run, and that run."""
    db = str(tmp_path / "runs.db")
    run = scripted_run("wrong_city")
    Store(db).save_run(run)
    return db, run


def test_blame_names_step_3_with_rates_1_before_and_0_after_and_saves_every_fork(stored, capsys):
    db, run = stored
    assert main(["blame", run.id, "--expect", "Tokyo", *RIGHT, "--trials", "3", "--db", db]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith(f"blame run {run.id}: 4 forks before steps 1, 2, 3, 4, 3 trials each: 30 model calls")
    for k in (1, 2, 3):
        assert f"step {k}: 3/3 passed · rate 1.00 · 95% 0.44–1.00" in out
    assert "step 4: 0/3 passed · rate 0.00 · 95% 0.00–0.56" in out
    assert "blamed: step 3 (the rate falls by 1.00 from its fork to step 4's fork)" in out
    assert 'the run\'s step 3: Next, the weather in Kyoto. → get_weather({"city": "Kyoto"})' in out
    assert 'passing continuations there (3): Next, the weather in Tokyo. → get_weather({"city": "Tokyo"})' in out
    assert "every trial of each fork made the same run" in out
    forks = Store(db).children(run.id)
    assert len(forks) == 12 and sorted(f.parent_step for f in forks) == [1] * 3 + [2] * 3 + [3] * 3 + [4] * 3


def test_bisect_names_step_3_with_fewer_forks(stored, capsys, tmp_path):
    db, run = stored
    out_json = tmp_path / "blame.json"
    assert main(["blame", run.id, "--expect", "Tokyo", *RIGHT, "--trials", "2", "--bisect", "--db", db, "--json", str(out_json)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "blamed: step 3" in out and "bisection read 3 forks of the 4 steps" in out
    data = json.loads(out_json.read_text())
    assert data["blamed_step"] == 3 and data["forks"] == 3 and data["monotone"] is True
    assert [(r["step"], r["passed"]) for r in data["rates"]] == [(1, 2), (3, 2), (4, 0)]
    assert len(Store(db).children(run.id)) == 6


def test_a_test_files_expectations_grade_the_forks(stored, capsys, tmp_path):
    db, _ = stored
    good = scripted_run("city_by_city")
    test_file = tmp_path / "tour.json"
    test_file.write_text(export_test(pinned.propose(good, "tour")))
    bad = Store(db).list_runs()[0].id
    assert main(["blame", bad, "--test", str(test_file), *RIGHT, "--trials", "1", "--db", db]) == 0
    out = capsys.readouterr().out
    assert f"run {bad} fails the test tour" in out and "blamed: step 3" in out


def test_a_run_that_passes_is_told_so_and_nothing_runs(stored, capsys):
    db, run = stored
    assert main(["blame", run.id, "--expect", "Kyoto", "--trials", "1000", "--db", db]) == 0
    out = capsys.readouterr().out
    assert f"run {run.id} passes an answer holding 'Kyoto': nothing to blame" in out and "model calls" not in out
    assert Store(db).children(run.id) == []


def test_past_the_ceiling_it_refuses_before_any_model_call(stored, capsys):
    db, run = stored
    assert main(["blame", run.id, "--expect", "Tokyo", *RIGHT, "--trials", "21", "--db", db]) == 2
    err = capsys.readouterr().err
    assert "210 model calls as the run went" in err and "over the ceiling of 200" in err and "--max-calls" in err
    assert Store(db).children(run.id) == []
    assert main(["blame", run.id, "--expect", "Tokyo", *RIGHT, "--trials", "6", "--max-calls", "59", "--db", db]) == 2
    assert main(["blame", run.id, "--expect", "Tokyo", *RIGHT, "--trials", "6", "--max-calls", "60", "--db", db]) == 0
    assert len(Store(db).children(run.id)) == 24


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["RUN", "--trials", "1"], "one of the arguments --test --expect is required"),
        (["nosuchrun", "--expect", "x"], "no run 'nosuchrun'"),
        (["RUN", "--expect", "x", "--steps", "5"], "there is no step 5"),
        (["RUN", "--expect", "x", "--steps", "2,a"], "expected step numbers separated by commas"),
        (["RUN", "--expect", "x", "--steps", "2", "--bisect"], "not allowed with argument"),
        (["RUN", "--expect", "x", "--trials", "0"], "--trials is a whole number"),
        (["RUN", "--expect", "x", "--max-calls", "0"], "--max-calls must be at least 1"),
        (["RUN", "--expect", "x", "--config", "nosuch-provider-x"], "unknown provider 'nosuch-provider-x'"),
        (["RUN", "--expect", "x", "--config", "replay"], "a fork goes on with a model"),
        (["RUN", "--expect", "x", "--temperature", "-1"], "--temperature must be"),
        (["RUN", "--expect", "  "], "--expect needs a text"),
        (["RUN", "--test", "/nonexistent/test.json"], "/nonexistent/test.json"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(stored, capsys, args, words):
    db, run = stored
    args = [run.id if a == "RUN" else a for a in args]
    assert main(["blame", *args, "--db", db]) == 2
    captured = capsys.readouterr()
    assert words in captured.err and captured.err.count("\n") == 1, captured.err
    assert "Traceback" not in captured.err + captured.out

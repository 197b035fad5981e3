"""An experiment's rules at their limits: the commit it names (only what git said it checked out), the version it
was made with, its one-line summary, whose it is when kept, and which one an id names when it is also the start of
another's."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import agentcore
from agentcore.run import Run, RunConfig
from agentcore.store.experiments import CellResult, Experiment
from agentcore.store.runs import Store
from agentcore.store.schema import StoreError
from agentcore.testing.experiments import from_matrix, git_commit
from agentcore.testing.pinned import Failure
from agentcore.testing.runner import Cell, Matrix


def _git(folder: Path, *args: str) -> str:
    command = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@example.org", *args]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


def test_the_commit_is_the_one_checked_out_where_the_first_test_file_lives(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # no work tree above tmp_path answers for it
    tree, elsewhere = tmp_path / "suite", tmp_path / "elsewhere"
    tree.mkdir(), elsewhere.mkdir()
    _git(tree, "init", "-q")
    (tree / "a.yaml").write_text("name: a\n")
    _git(tree, "add", "a.yaml")
    _git(tree, "commit", "-q", "-m", "a test")
    head = _git(tree, "rev-parse", "HEAD")
    assert git_commit([tree / "a.yaml", elsewhere / "b.yaml"]) == head  # a file: its folder's commit
    assert git_commit([tree]) == head  # a folder: its own
    assert git_commit([elsewhere / "b.yaml", tree / "a.yaml"]) is None  # the first file's folder is no work tree
    assert git_commit([]) is None


@pytest.fixture
def fake_git(tmp_path, monkeypatch):
    """A `git` first on PATH that prints FAKE_OUT and exits with FAKE_CODE."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "git"
    script.write_text('#!/bin/sh\nprintf "%s\\n" "$FAKE_OUT"\nexit "$FAKE_CODE"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")

    def answer(out: str, code: int) -> str | None:
        monkeypatch.setenv("FAKE_OUT", out)
        monkeypatch.setenv("FAKE_CODE", str(code))
        return git_commit([tmp_path])

    return answer


def test_only_a_commit_git_answered_without_an_error_is_kept(fake_git):
    sha1, sha256 = "0123456789abcdef0123456789abcdef01234567", "f" * 64
    assert fake_git(sha1, 0) == sha1 and fake_git(sha256, 0) == sha256  # SHA-1 and SHA-256 work trees
    assert fake_git(sha1, 1) is None and fake_git(sha1, 128) is None  # git failed: whatever it printed is not read
    for wrong in (sha1[:39], sha1 + "0", sha256[:63], sha256 + "f", "HEAD", "0123456789abcdef-123456789abcdef01234567"):
        assert fake_git(wrong, 0) is None, wrong  # not 40 or 64 letters and digits


def _matrix() -> Matrix:
    ran = Cell("t1", "scripted")
    ran.run = Run.start("hi", RunConfig(provider="scripted", model="m"))
    not_started = Cell("t2", "scripted")
    not_started.failures = [Failure("setup", "the provider did not start")]
    return Matrix(["t1", "t2"], ["scripted"], [[ran], [not_started]])


def test_an_experiment_records_the_agentcore_version_it_was_made_with_and_each_cells_run(tmp_path):
    matrix = _matrix()
    made = from_matrix(matrix, [tmp_path / "a.yaml"])
    assert made.version == agentcore.__version__
    assert [(c.test, c.cell_passed, c.run_ids) for c in made.cells] == [
        ("t1", True, [matrix.cells[0][0].run.id]),
        ("t2", False, [None]),
    ]


def _cell(flaky: bool | None = None) -> CellResult:
    extra = {} if flaky is None else {"flaky": flaky}
    return CellResult(test="t", config="c", trials=2, passed=1, cell_passed=False, **extra)


def test_a_cell_is_not_flaky_unless_it_says_so():
    assert _cell().flaky is False and _cell(True).flaky is True
    line = Experiment(trials=2, configs=["c"], cells=[_cell(), _cell()]).summary()
    assert "flaky" not in line


@pytest.mark.parametrize(("trials", "said"), [(1, False), (2, True)])
def test_the_summary_names_the_trials_and_threshold_only_past_one_trial(trials, said):
    e = Experiment(
        id="abc123",
        created_at="2026-12-01T10:00:00.123456+00:00",
        trials=trials,
        pass_threshold=0.5,
        configs=["a", "b"],
        commit="0123456789abcdef0123",
        cells=[_cell(True), _cell(False)],
    )
    middle = f" · {trials} trials each (threshold 0.5)" if said else ""
    assert e.summary() == (
        f"abc123 2026-12-01 10:00:00 · 0/2 cells passed{middle} · 1 flaky · a, b · commit 0123456789ab"
    )


def test_a_kept_experiment_is_its_savers_unless_it_names_its_own_owner(tmp_path):
    store = Store(tmp_path / "runs.db", owner="ada", teacher=True)
    assert store.save_experiment(Experiment()).owner == "ada"
    assert store.save_experiment(Experiment(owner="bob")).owner == "bob"
    assert sorted(e.owner for e in store.experiments()) == ["ada", "bob"]


def test_an_id_that_is_whole_names_its_experiment_even_where_it_starts_another(tmp_path):
    store = Store(tmp_path / "runs.db", owner="ada")
    for kept in ("ab", "abcd"):
        store.save_experiment(Experiment(id=kept))
    assert store.experiment("ab").id == "ab" and store.experiment("abcd").id == "abcd"
    assert store.experiment("abc").id == "abcd"  # a unique start
    with pytest.raises(StoreError, match="'a' starts 2 experiments' ids"):
        store.experiment("a")

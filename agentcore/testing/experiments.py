"""Experiments: each `agentcore test` that writes to a runs database is kept, so results can be read over time.

An experiment holds when it ran, the test files and configurations, the trials and threshold, each cell's
counts and run ids, the agentcore version and, where the test files live in a git work tree, its commit.
`diff` says what changed between two, cell by cell: newly failing, newly passing, a pass rate that moved.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from ..store.experiments import CellResult, Experiment


def git_commit(paths: list[Path]) -> str | None:
    """The commit checked out where the first test file lives, when that is a git work tree; else None."""
    if not paths:
        return None
    folder = paths[0] if paths[0].is_dir() else paths[0].parent
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) in (40, 64) and commit.isalnum() else None


def version() -> str:
    """agentcore's version (agentcore.__version__)."""
    from .. import __version__

    return __version__


def from_matrix(matrix: Any, files: list[Path]) -> Experiment:
    """The experiment of a test matrix (agentcore.testing.runner.Matrix) run from `files`."""
    cells = []
    for row in matrix.cells:
        for cell in row:
            s = cell.stats
            trials = cell.trials or [cell]
            cells.append(
                CellResult(
                    test=cell.test,
                    config=cell.config,
                    trials=s.trials,
                    passed=s.passed,
                    cell_passed=cell.passed,
                    flaky=s.flaky,
                    run_ids=[t.run.id if t.run is not None else None for t in trials],
                )
            )
    return Experiment(
        files=[str(f) for f in files],
        configs=list(matrix.configs),
        trials=matrix.trials,
        pass_threshold=matrix.pass_threshold,
        version=version(),
        commit=git_commit(files),
        cells=cells,
    )


def diff(a: Experiment, b: Experiment) -> list[str]:
    """What changed from `a` to `b`, cell by cell, in lines: newly failing, newly passing, a pass rate moved,
    a cell only in one of them."""
    before = {(c.test, c.config): c for c in a.cells}
    after = {(c.test, c.config): c for c in b.cells}
    lines = []
    for key in [*before, *(k for k in after if k not in before)]:
        old, new = before.get(key), after.get(key)
        where = f"{key[0]} × {key[1]}"
        if old is None:
            lines.append(f"new cell      {where}: {new.counts} {'pass' if new.cell_passed else 'FAIL'}")
        elif new is None:
            lines.append(f"gone          {where} (was {old.counts})")
        elif old.cell_passed and not new.cell_passed:
            lines.append(f"newly failing {where}: {old.counts} → {new.counts}")
        elif new.cell_passed and not old.cell_passed:
            lines.append(f"newly passing {where}: {old.counts} → {new.counts}")
        elif old.passed / old.trials != new.passed / new.trials:
            lines.append(f"rate moved    {where}: {old.counts} → {new.counts}")
    return lines

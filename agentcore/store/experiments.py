"""Experiments: each `agentcore test` that writes to a runs database is kept, so results can be read over time.

An experiment holds when it ran, the test files and configurations, the trials and threshold, each cell's
counts and run ids, the agentcore version and, where the test files live in a git work tree, its commit. The
records live here, beside the table that keeps them; what makes one from a test matrix, and compares two, is the
test runner's (agentcore.testing.experiments). An experiment is its owner's and the teachers' to see, as a run is.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from .schema import StoreError

if TYPE_CHECKING:
    from .runs import Store


MAX_CELLS = 100_000


class CellResult(BaseModel):
    """One cell of an experiment: its test and configuration, and what its trials gave."""

    model_config = ConfigDict(extra="forbid")

    test: str
    config: str
    trials: int = Field(ge=1)
    passed: int = Field(ge=0)
    cell_passed: bool
    flaky: bool = False
    run_ids: list[str | None] = []

    @property
    def counts(self) -> str:
        return f"{self.passed}/{self.trials}"


class Experiment(BaseModel):
    """One `agentcore test` invocation's results."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="microseconds"))
    owner: str | None = None
    files: list[str] = []
    configs: list[str] = []
    trials: int = 1
    pass_threshold: float = 1.0
    version: str | None = None
    commit: str | None = None
    cells: list[CellResult] = Field(default=[], max_length=MAX_CELLS)

    @property
    def passed(self) -> int:
        return sum(c.cell_passed for c in self.cells)

    def summary(self) -> str:
        """In one line: `a1b2c3d4e5f6 2026-12-01 10:00:00 · 3/4 cells passed · 6 trials each (threshold 1) · CONFIGS`."""
        flaky = sum(c.flaky for c in self.cells)
        line = f"{self.id} {self.created_at[:19].replace('T', ' ')} · {self.passed}/{len(self.cells)} cells passed"
        if self.trials > 1:
            line += f" · {self.trials} trials each (threshold {self.pass_threshold:g})"
        if flaky:
            line += f" · {flaky} flaky"
        line += f" · {', '.join(self.configs)}"
        return line + (f" · commit {self.commit[:12]}" if self.commit else "")

    def rate_by_config(self) -> dict[str, tuple[int, int]]:
        """Each configuration's trials passed, of how many: what the history chart draws."""
        found: dict[str, tuple[int, int]] = {}
        for c in self.cells:
            passed, total = found.get(c.config, (0, 0))
            found[c.config] = (passed + c.passed, total + c.trials)
        return found


class ExperimentsTable:
    """The Store's experiments: keep one, list them, read one by its id or a unique start of it."""

    def save_experiment(self: Store, experiment: Experiment) -> Experiment:
        """Keep one test matrix's results (agentcore.testing.experiments); returns it with its owner."""
        experiment = experiment.model_copy(update={"owner": experiment.owner or self.owner})
        with self._transaction() as db:
            db.execute(
                "INSERT INTO experiments (id, created_at, owner, body) VALUES (?, ?, ?, ?)",
                (experiment.id, experiment.created_at, experiment.owner, experiment.model_dump_json()),
            )
        return experiment

    def experiments(self: Store, limit: int = 100) -> list[Experiment]:
        """The experiments kept that this Store's viewer may see (their owner's, and a teacher's), newest first."""
        visible, params = self._visible()
        sql = f"SELECT body FROM experiments WHERE 1 = 1{visible} ORDER BY created_at DESC, id DESC LIMIT ?"
        rows = self._all(sql, (*params, int(limit)))
        return [Experiment.model_validate_json(r[0]) for r in rows]

    def experiment(self: Store, experiment_id: str) -> Experiment:
        """One experiment by its id, or a unique start of it; a StoreError when there is none."""
        if not re.fullmatch(r"[0-9a-f]{1,64}", experiment_id):
            raise StoreError(f"no experiment {experiment_id[:64]!r}: an experiment's id is hex digits")
        visible, params = self._visible()  # another's experiment reads as none, its id prefix included
        rows = self._all(f"SELECT id, body FROM experiments WHERE id LIKE ?{visible}", (experiment_id + "%", *params))
        exact = [r for r in rows if r[0] == experiment_id]
        if exact or len(rows) == 1:
            return Experiment.model_validate_json((exact or rows)[0][1])
        if not rows:
            raise StoreError(f"no experiment {experiment_id!r} in this database")
        raise StoreError(f"{experiment_id!r} starts {len(rows)} experiments' ids: give more of it")

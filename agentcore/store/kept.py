"""The runs' figures kept as rows, for the library's statistics to be added up by the database.

Each save writes a run's figures (figures.RunFigures) twice: as JSON beside the run, and as rows the database
adds up: one per answering model (`run_models`: steps, tokens, cost) and one per step (`step_latencies`), each
with the run's day, owner and ending, so the statistics of the whole library read two narrow tables and
nothing else. The SQL is the same on SQLite and PostgreSQL; the latency quantiles are nearest ranks, as
stats.GroupStats takes them from a list.

A run saved before the rows were kept (or whose JSON another agentcore counted otherwise) has `figured` unset,
and is counted from its JSON or its steps the first time the statistics are asked for, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .figures import RunFigures

if TYPE_CHECKING:
    from .runs import Store

# the runs whose rows are missing or stale; the same words as the partial index that finds them (schema.py)
UNCOUNTED = "figured IS NULL OR figures IS NULL OR substr(figures, 1, 13) <> '{\"version\":1,'"
KEY_COLUMNS = {"provider": ("provider",), "model": ("provider", "model"), "day": ("day",), "owner": ("owner",)}
ANSWERED = "('answer', 'structured')"  # stats.ANSWERED in SQL
# the nearest rank of each quantile stats.py reports, ceil(q * n) in integers: (numerator, denominator)
QUANTILES = {0.5: (1, 2), 0.95: (95, 100)}
_ROWS_PER_INSERT = 500  # SQLite takes at most 32,766 parameters a statement


def _insert(db: Any, table: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
    width = columns.count(",") + 1
    for start in range(0, len(rows), _ROWS_PER_INSERT):
        part = rows[start : start + _ROWS_PER_INSERT]
        marks = ", ".join(["(" + ", ".join("?" * width) + ")"] * len(part))
        db.execute(f"INSERT INTO {table} ({columns}) VALUES {marks}", [v for row in part for v in row])


def keep_rows(
    db: Any, run_id: str, figures: RunFigures, created_at: str, owner: str | None, ending: str | None
) -> None:
    """Write a run's figure rows in the save's transaction, in place of those it had, and mark it counted."""
    day = created_at[:10]
    db.execute("DELETE FROM run_models WHERE run_id = ?", (run_id,))
    db.execute("DELETE FROM step_latencies WHERE run_id = ?", (run_id,))
    models, latencies = [], []
    providers: set[str] = set()
    for position, m in enumerate(figures.models):
        first = int(m.provider not in providers)
        providers.add(m.provider)
        models.append(
            (run_id, position, m.provider, m.model, day, owner, ending, first, m.steps, m.input_tokens)
            + (m.output_tokens, m.cache_read_tokens, m.cache_write_tokens, m.cost_usd, m.estimated)
        )
        for latency in m.latency_ms:
            latencies.append((run_id, len(latencies), m.provider, m.model, day, owner, latency))
    columns = (
        "run_id, position, provider, model, day, owner, stop_reason, provider_first, steps, input_tokens, "
        "output_tokens, "
        "cache_read_tokens, cache_write_tokens, cost_usd, estimated"
    )
    _insert(db, "run_models", columns, models)
    _insert(db, "step_latencies", "run_id, idx, provider, model, day, owner, latency_ms", latencies)
    db.execute("UPDATE runs SET figured = 1 WHERE id = ?", (run_id,))


class FiguresTable:
    """The Store's figure rows: counting the runs saved before they were kept, and adding them up per group."""

    def _count_uncounted(self: Store) -> int:
        """Write the rows of every run that lacks them (from its kept JSON, or from its steps); how many."""
        found = self._all(f"SELECT id, figures, created_at, owner, stop_reason FROM runs WHERE {UNCOUNTED}")
        for start in range(0, len(found), 1000):  # a transaction per thousand: a large library is not one lock
            part = [(row, RunFigures.from_json(row[1])) for row in found[start : start + 1000]]
            part = [(row, kept or RunFigures.of(self.read_run(row[0]))) for row, kept in part]
            with self._transaction() as db:
                for (run_id, text, created_at, owner, ending), figures in part:
                    if RunFigures.from_json(text) is None:
                        db.execute("UPDATE runs SET figures = ? WHERE id = ?", (figures.to_json(), run_id))
                    keep_rows(db, run_id, figures, created_at, owner, ending)
        return len(found)

    def added_up(
        self: Store,
        by: Sequence[str],
        *,
        search: str | None = None,
        provider: str | None = None,
        owner: str | None = None,
        since: str | None = None,
    ) -> list[tuple[dict[str, str | None], dict[str, Any], dict[float, float]]]:
        """Per group of `by` (provider, model, day, owner), the key's columns, the figures added up and the step
        latency at each of QUANTILES, over the runs the library's filters keep; `provider` keeps that provider's
        models alone. Runs without their rows are counted first."""
        self._count_uncounted()
        columns = ", ".join(dict.fromkeys(c for b in by for c in KEY_COLUMNS[b]))
        where, params = self._filters(search, provider, owner, since)
        clauses, values = [], []
        if where:
            clauses.append(f"run_id IN (SELECT id FROM runs WHERE {' AND '.join(where)})")
            values += params
        if provider:
            clauses.append("provider = ?")
            values.append(provider)
        filtered = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        # a run counts once per group: each of its rows where groups hold one model, else its first of a provider,
        # else its first
        once = "1" if "model" in by else "provider_first" if "provider" in by else "CASE WHEN position = 0 THEN 1 END"
        runs = f"sum({once})" if once != "1" else "count(*)"

        def ended(reasons: str) -> str:
            return f"sum(CASE WHEN stop_reason IN {reasons} THEN {once} ELSE 0 END)"

        budget, failed = ended("('max_steps')"), ended("('error')")
        sums = self._all(
            f"SELECT {columns}, {runs}, sum(steps), {ended(ANSWERED)}, sum(input_tokens), sum(output_tokens), "
            "sum(cache_read_tokens), sum(cache_write_tokens), "
            "CASE WHEN count(cost_usd) = count(*) THEN sum(cost_usd) END, sum(estimated), "
            f"{budget}, {failed} FROM run_models{filtered} GROUP BY {columns}",
            tuple(values),
        )
        names = (
            "runs steps answered_runs input_tokens output_tokens cache_read_tokens cache_write_tokens cost_usd "
            "estimated_steps budget_runs failed_runs"
        ).split()
        width = columns.count(",") + 1
        out = []
        for row in sums:
            key = tuple(row[:width])
            added = {name: int(v or 0) for name, v in zip(names, row[width:], strict=True)}  # PostgreSQL's numeric
            cost = row[width + names.index("cost_usd")]
            added["cost_usd"] = None if cost is None else float(cost)
            named = dict(zip(columns.split(", "), key, strict=True))
            out.append((named, added, self._quantiles(named, added["steps"], filtered, values)))
        return out

    def _quantiles(self: Store, key: dict[str, Any], n: int, filtered: str, values: list[Any]) -> dict[float, float]:
        """The step latencies at each of QUANTILES' nearest ranks among a group's `n`, read along an index."""
        clauses = [f"{c} IS NULL" if v is None else f"{c} = ?" for c, v in key.items()]
        where = (filtered + " AND " if filtered else " WHERE ") + " AND ".join(clauses)
        params = (*values, *(v for v in key.values() if v is not None))
        order = ", ".join(key)
        found = {}
        for q, (a, b) in QUANTILES.items():
            rank = max(1, (a * n + b - 1) // b)
            sql = f"SELECT latency_ms FROM step_latencies{where} ORDER BY {order}, latency_ms LIMIT 1 OFFSET ?"
            row = self._one(sql, (*params, rank - 1))
            if row is not None:
                found[q] = row[0]
        return found

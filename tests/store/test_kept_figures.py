"""The library's figures as the database adds them up: the same as each run's figures added up one by one, after
saves, edits and deletes, and on a database saved before the figure rows were kept, once its schema moves up."""

from __future__ import annotations

import pytest
from support.runs import FIVE, priced_run, scripted_run

from agentcore.run import Run
from agentcore.store.runs import Store
from agentcore.store.schema import MIGRATIONS, SCHEMA_VERSION
from agentcore.store.stats import GroupStats, add_up, library_figures, library_stats

GROUPINGS = [["provider"], ["model"], ["day"], ["owner"], ["day", "model"], ["owner", "provider"]]
FILTERS = [{}, {"provider": "openai"}, {"since": "2026-06-01"}, {"owner": "bob"}, {"search": "weather"}]


def shown(groups: list[GroupStats], near: bool = False) -> list[dict]:
    """The groups as `agentcore stats --json` prints them; `near`: costs within rounding (added in another order)."""
    return [
        {k: pytest.approx(v) if near and k.startswith("cost") and v is not None else v for k, v in g.to_dict().items()}
        for g in groups
    ]


def assert_same_as_each_run_added_up(store: Store) -> None:
    for by in GROUPINGS:
        for filters in FILTERS:
            expected = add_up(library_figures(store, **filters), by)
            assert shown(library_stats(store, by, **filters)) == shown(expected, near=True), (by, filters)


def mixed_run() -> Run:
    """Four steps answered by three models of two providers, gpt-4o-mini twice."""
    run = priced_run([(1000, 10, 0, 100.0), (2000, 20, 500, 300.0), (3000, 30, 0, 200.0), (100, 1, 0, 50.0)])
    run.steps[1].provider, run.steps[1].model = "anthropic", "claude-sonnet-4-5"
    run.steps[2].model = "gpt-4o"
    return run


@pytest.fixture
def library(location: str) -> tuple[Store, list[Run]]:
    store = Store(location, owner="ada")
    runs = [scripted_run(s) for s in FIVE]
    runs += [mixed_run(), priced_run([(500, 5, 0, 10.0)], stop="error"), priced_run([(7, 7, 0, 7.0)], stop="max_steps")]
    runs[2].created_at = "2026-01-02T03:04:05.000+00:00"
    for i, run in enumerate(runs):
        store.save_run(run, owner=("ada", "bob", "cy")[i % 3])
    return store, runs


def test_the_figures_the_database_adds_up_are_each_runs_figures_added_up(library):
    store, _ = library
    assert_same_as_each_run_added_up(store)
    [openai] = library_stats(store, ["provider"], provider="openai")
    assert openai.runs == 3  # the mixed run once, though two of its models are OpenAI's


def test_a_saved_again_or_deleted_run_changes_what_the_database_adds_up(library):
    store, runs = library
    mixed = runs[5]
    mixed.steps[0].latency_ms = 900.0
    mixed.stop_reason = "max_steps"
    store.save_run(mixed)
    store.delete_run(runs[0].id)
    assert_same_as_each_run_added_up(store)
    assert sum(g.runs for g in library_stats(store, ["day"])) == len(runs) - 1


LATER_TABLES = ("exchanges",)  # the tables of the migrations after the figure rows'


def test_a_database_saved_before_the_figure_rows_is_counted_once_its_schema_moves_up(library, location):
    store, runs = library
    before = shown(library_stats(store, ["model"]))
    # the schema as it was before the figure rows (migration 8) and everything after them, with every run still in it
    older = next(n for n, statements in enumerate(MIGRATIONS) if any("run_models" in s for s in statements))
    with store._transaction() as db:
        for statement in (
            *(f"DROP TABLE {table}" for table in LATER_TABLES),
            "DROP INDEX runs_uncounted",
            "DROP TABLE step_latencies",
            "DROP TABLE run_models",
            "ALTER TABLE runs DROP COLUMN figured",
        ):
            db.execute(statement)
    assert older + len(LATER_TABLES) + 1 == SCHEMA_VERSION  # a migration after 9 names its table here
    if store.backend == "sqlite":
        store._backend.execute(f"PRAGMA user_version = {older}")
    else:
        store._backend.execute("UPDATE agentcore_schema SET version = ?", (older,))
    store.close()
    moved = Store(location, owner="ada")
    assert moved.schema_version == SCHEMA_VERSION
    assert moved._one("SELECT count(*) FROM run_models")[0] == 0  # nothing counted until it is asked for
    assert shown(library_stats(moved, ["model"])) == before
    assert moved._one("SELECT count(*) FROM runs WHERE figured IS NULL")[0] == 0  # counted once, then kept
    assert_same_as_each_run_added_up(moved)

"""`agentcore stats`: the library's figures per group add up to the runs' own recorded usage and cost."""

from __future__ import annotations

import json

import pytest
from support.runs import FIVE, priced_run, scripted_run

from agentcore.accounting import account, run_cost, step_usage
from agentcore.annotations import make_annotation
from agentcore.cli.main import main
from agentcore.run import Run
from agentcore.store.runs import Store
from agentcore.store.stats import library_stats


@pytest.fixture
def five(location: str) -> tuple[str, list[Run]]:
    store = Store(location, owner="ada")
    runs = [scripted_run(s) for s in FIVE]
    for run in runs:
        store.save_run(run)
    store.close()
    return location, runs


def stats_json(capsys, *args: str) -> dict:
    capsys.readouterr()
    assert main(["stats", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_stats_by_model_add_up_to_the_runs_own_recorded_usage(five, capsys):
    location, runs = five
    data = stats_json(capsys, "--db", location, "--by", "model")
    groups = {g["key"]["model"]: g for g in data["groups"]}
    assert set(groups) == {f"scripted/{s}" for s in FIVE}
    for scenario in set(FIVE):
        mine = [r for r in runs if r.config.scenario == scenario]
        g = groups[f"scripted/{scenario}"]
        assert g["runs"] == len(mine) and g["steps"] == sum(len(r.steps) for r in mine)
        assert g["input_tokens"] == sum(r.usage.input_tokens for r in mine)
        assert g["output_tokens"] == sum(r.usage.output_tokens for r in mine)
        assert g["estimated"] is True  # the scripted model's usage is an estimate, and says so
    totals = data["totals"]
    assert totals["input_tokens"] == sum(r.usage.input_tokens for r in runs)
    assert totals["output_tokens"] == sum(r.usage.output_tokens for r in runs)
    assert totals["steps"] == sum(len(r.steps) for r in runs)
    assert groups["scripted/runaway"]["budget_runs"] == 1 and groups["scripted/runaway"]["answered_runs"] == 0
    assert groups["scripted/weather"]["answered_runs"] == 2 and groups["scripted/weather"]["budget_runs"] == 0


def test_priced_runs_give_cost_cache_hit_rate_cost_per_answer_and_latency_quantiles(tmp_path, capsys):
    db = str(tmp_path / "runs.db")
    store = Store(db)
    answered = priced_run([(1000, 100, 0, 100.0), (2000, 100, 1500, 300.0)])
    budget = priced_run([(4000, 50, 3000, 200.0)], stop="max_steps")
    failed = priced_run([(500, 10, 0, 400.0)], stop="error")
    for run in (answered, budget, failed):
        store.save_run(run)
    [g] = stats_json(capsys, "--db", db, "--by", "provider")["groups"]
    assert (g["runs"], g["answered_runs"], g["budget_runs"], g["failed_runs"]) == (3, 1, 1, 1)
    assert (g["input_tokens"], g["cache_read_tokens"]) == (7500, 4500)
    assert g["cache_hit_rate"] == pytest.approx(4500 / 7500)
    cost = run_cost(answered) + run_cost(budget) + run_cost(failed)
    assert cost > 0 and g["cost_usd"] == pytest.approx(cost)
    assert g["cost_per_answered_run"] == pytest.approx(cost / 1)
    assert g["estimated"] is False
    assert g["p50_step_latency_ms"] == 200.0 and g["p95_step_latency_ms"] == 400.0
    # the table says the same, in words a person reads
    assert main(["stats", "--db", db, "--by", "provider"]) == 0
    out = capsys.readouterr().out
    assert "openai" in out and "60.0%" in out and f"{cost:.6f}" in out


@pytest.mark.parametrize("kept", [None, '{"version": 0, "models": []}'])
def test_a_run_saved_before_figures_were_kept_or_counted_otherwise_is_counted_from_its_steps(tmp_path, kept):
    store = Store(tmp_path / "runs.db")
    run = scripted_run("tool_error")
    store.save_run(run)
    with store._transaction() as db:
        db.execute("UPDATE runs SET figures = ?", (kept,))
    [g] = library_stats(store, ["model"])
    assert g.input_tokens == sum(step_usage(run, n)[0].input_tokens for n in range(1, len(run.steps) + 1))
    assert json.loads(store._one("SELECT figures FROM runs")[0])["models"]  # counted once, then kept


def test_a_step_that_recorded_no_usage_is_counted_by_the_accounting_estimate_and_marked(tmp_path):
    store = Store(tmp_path / "runs.db")
    run = priced_run([(0, 0, 0, 10.0), (1200, 40, 0, 10.0)])
    store.save_run(run)
    [g] = library_stats(store, ["model"])
    report = account(run)
    assert g.input_tokens == report.total_input_tokens > 1200 and g.output_tokens == report.total_output_tokens
    assert g.estimated_steps == 1 and g.cost_usd == pytest.approx(report.total_cost_usd)


def test_stats_filter_by_date_and_group_by_owner_label_and_tag(tmp_path, capsys):
    db = str(tmp_path / "runs.db")
    store = Store(db, owner="ada")
    old, new = scripted_run("weather"), scripted_run("tool_error")
    old.created_at = "2020-01-02T00:00:00.000+00:00"
    store.save_run(old)
    store.save_run(new, owner="bob")
    store.annotate(new.id, make_annotation(step=1, labels=["wrong arguments"], tags=["math"]))
    since = stats_json(capsys, "--db", db, "--since", "2021-01-01")
    assert [g["key"]["model"] for g in since["groups"]] == ["scripted/tool_error"]
    owners = {g["key"]["owner"]: g["runs"] for g in stats_json(capsys, "--db", db, "--by", "owner")["groups"]}
    assert owners == {"ada": 1, "bob": 1}
    labels = {g["key"]["label"]: g["runs"] for g in stats_json(capsys, "--db", db, "--by", "label")["groups"]}
    assert labels == {"wrong arguments": 1, "(none)": 1}
    tags = {g["key"]["tag"] for g in stats_json(capsys, "--db", db, "--by", "tag")["groups"]}
    assert tags == {"math", "(none)"}
    assert main(["stats", "--db", db, "--since", "yesterday"]) == 2


def test_a_runs_figures_are_one_typed_record_that_adds_and_keeps_its_cost_as_its_steps_add_up(tmp_path):
    from agentcore.accounting import run_cost
    from agentcore.store.figures import ModelFigures, RunFigures

    run = priced_run([(1000, 20, 200, 100.0), (1500, 40, 900, 300.0)])
    figures = RunFigures.of(run)
    [model] = figures.models
    assert (model.steps, model.input_tokens, model.output_tokens, model.cache_read_tokens) == (2, 2500, 60, 1100)
    assert model.latency_ms == (100.0, 300.0) and figures.cost_usd == run_cost(run)
    assert RunFigures.from_json(figures.to_json()) == figures  # what the store keeps reads back whole
    twice = figures + figures
    assert twice.models[0].steps == 4 and twice.models[0].latency_ms == (100.0, 300.0, 100.0, 300.0)
    assert twice.cost_usd == pytest.approx(2 * figures.cost_usd)
    other = RunFigures((ModelFigures("anthropic", "claude", 1, 5, 5, 0, 0, None, 1, (1.0,)),), None)
    mixed = figures + other
    assert [m.provider for m in mixed.models] == ["openai", "anthropic"] and mixed.cost_usd is None
    assert mixed.only("openai") == RunFigures(figures.models, figures.cost_usd)
    assert mixed.only("anthropic").cost_usd is None and mixed.only("ollama") == RunFigures((), 0.0)
    responses = RunFigures((ModelFigures("openai-responses", "gpt-5", 1, 1, 1, 0, 0, 0.5, 0, (1.0,)),), 0.5)
    assert (figures + responses).only("openai") == RunFigures(figures.models, figures.cost_usd)  # the whole name
    for stored in (
        None,
        "",
        "not json",
        '{"version": 1, "models": []}',
        '{"version": 1, "cost_usd": 0, "models": [{}]}',
    ):
        assert RunFigures.from_json(stored) is None  # counted again from the run's steps
    store = Store(tmp_path / "runs.db")
    store.save_run(run)
    assert store._one("SELECT cost_usd FROM runs")[0] == figures.cost_usd  # the list's cost is the figures' total
    # values: the Dashboard's rows are shared by every session, so no reader may change what another reads
    for record, field in ((figures, "cost_usd"), (model, "steps"), (twice, "models")):
        with pytest.raises(AttributeError):
            setattr(record, field, None)

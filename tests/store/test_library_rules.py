"""The library's readers at their limits: how statistics add runs up per group, and the quantiles, rates and totals
they give, each rule on both sides of its edge."""

from __future__ import annotations

import pytest
from support.runs import FIVE, made_run, scripted_run

from agentcore.errors import UsageError
from agentcore.store import stats
from agentcore.store.figures import ModelFigures, RunFigures
from agentcore.store.kept import KEY_COLUMNS
from agentcore.store.runs import Store
from agentcore.store.schema import RunSummary
from agentcore.store.stats import GroupStats, add_up, first_day, library_stats, most_expensive, totals


def summary(run_id: str, *, stop: str | None = "answer", owner: str | None = None, cost: float | None = 0.0):
    return RunSummary(
        id=run_id,
        title=None,
        created_at="2026-12-01T23:59:59.000+00:00",
        updated_at="2026-12-02T00:00:00.000+00:00",
        provider="openai",
        model="gpt-4o-mini",
        steps=1,
        messages=2,
        stop_reason=stop,
        input_tokens=0,
        output_tokens=0,
        cost_usd=cost,
        duration_ms=0.0,
        parent_id=None,
        parent_step=None,
        owner=owner,
    )


def tally(provider: str = "openai", model: str = "gpt-4o-mini", **counts) -> ModelFigures:
    values = {"steps": 1, "input_tokens": 100, "output_tokens": 10, "cost_usd": 0.5, "latency_ms": (100.0,)}
    return ModelFigures(provider, model, **{**values, **counts})


def figures(*tallies: ModelFigures) -> RunFigures:
    return RunFigures(tallies, 0.0)


def test_a_groups_cache_hit_rate_and_cost_per_answer_are_none_without_input_answers_or_a_price():
    assert GroupStats({}, input_tokens=0, cache_read_tokens=0).cache_hit_rate is None
    assert GroupStats({}, input_tokens=1, cache_read_tokens=0).cache_hit_rate == 0.0
    assert GroupStats({}, input_tokens=400, cache_read_tokens=100).cache_hit_rate == 0.25
    assert GroupStats({}, cost_usd=3.0, answered_runs=0).cost_per_answered_run is None
    assert GroupStats({}, cost_usd=None, answered_runs=2).cost_per_answered_run is None
    assert GroupStats({}, cost_usd=3.0, answered_runs=2).cost_per_answered_run == 1.5
    assert GroupStats({}, cost_usd=0.0, answered_runs=1).cost_per_answered_run == 0.0
    assert GroupStats({}, estimated_steps=0).estimated is False
    assert GroupStats({}, estimated_steps=1).estimated is True


@pytest.mark.parametrize(
    ("q", "expected"),
    [(0.0, 10.0), (0.25, 10.0), (0.26, 20.0), (0.5, 20.0), (0.51, 30.0), (0.75, 30.0), (0.95, 40.0), (1.0, 40.0)],
)
def test_a_latency_quantile_is_the_nearest_rank_of_the_sorted_latencies(q, expected):
    g = GroupStats({}, latencies_ms=[40.0, 10.0, 30.0, 20.0])
    assert g.latency_ms(q) == expected
    assert GroupStats({}).latency_ms(q) is None  # no step, no latency


def test_a_groups_json_leaves_out_its_raw_latencies_and_run_ids_and_says_its_quantiles():
    [g] = add_up([(summary("r1"), figures(tally(latency_ms=(100.0, 300.0), input_tokens=200, cache_read_tokens=50)))])
    data = g.to_dict()
    assert "latencies_ms" not in data and "run_ids" not in data
    shown = repr(g)  # a group of a large library holds thousands of each: its repr says the figures alone
    assert "latencies_ms" not in shown and "run_ids" not in shown and "input_tokens=200" in shown
    assert "quantiles" not in shown  # the database's ranks, kept for the figures: not one of them
    assert data["key"] == {"model": "openai/gpt-4o-mini"} and data["runs"] == 1
    assert (data["p50_step_latency_ms"], data["p95_step_latency_ms"]) == (100.0, 300.0)
    assert data["cache_hit_rate"] == 0.25 and data["cost_per_answered_run"] == 0.5 and data["estimated"] is False


def test_a_run_answered_by_two_models_counts_once_in_a_group_that_holds_both_and_in_each_of_two_groups():
    both = figures(tally(steps=2, input_tokens=100), tally(model="gpt-4o", steps=3, input_tokens=1000, cost_usd=2.0))
    rows = [(summary("r1", stop="max_steps"), both), (summary("r2", stop="error"), figures(tally()))]
    [provider] = add_up(rows, ["provider"])
    assert (provider.runs, provider.steps, provider.input_tokens) == (2, 6, 1200)
    assert (provider.answered_runs, provider.budget_runs, provider.failed_runs) == (0, 1, 1)
    assert provider.cost_usd == 3.0 and provider.run_ids == {"r1", "r2"}
    by_model = {g.key["model"]: g for g in add_up(rows, ["model"])}
    assert (by_model["openai/gpt-4o"].runs, by_model["openai/gpt-4o"].steps) == (1, 3)
    assert (by_model["openai/gpt-4o-mini"].runs, by_model["openai/gpt-4o-mini"].steps) == (2, 3)
    assert by_model["openai/gpt-4o"].budget_runs == 1 and by_model["openai/gpt-4o-mini"].budget_runs == 1


def test_each_figure_of_a_tally_is_added_to_its_own_field():
    one = tally(input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4, estimated=1, steps=5)
    two = tally(input_tokens=10, output_tokens=20, cache_read_tokens=30, cache_write_tokens=40, estimated=0, steps=50)
    [g] = add_up([(summary("r1"), figures(one)), (summary("r2", stop="structured"), figures(two))])
    assert (g.input_tokens, g.output_tokens, g.cache_read_tokens, g.cache_write_tokens) == (11, 22, 33, 44)
    assert (g.steps, g.estimated_steps, g.answered_runs) == (55, 1, 2)  # a structured answer is an answer
    assert (g.budget_runs, g.failed_runs) == (0, 0)
    assert sorted(g.latencies_ms) == [100.0, 100.0]


@pytest.mark.parametrize("unpriced", [0, 1, 2])
def test_a_group_with_one_unpriced_tally_has_no_cost_wherever_it_comes(unpriced):
    tallies = [tally(cost_usd=0.25) for _ in range(3)]
    tallies[unpriced] = tally(cost_usd=None)
    [g] = add_up([(summary(f"r{i}"), figures(t)) for i, t in enumerate(tallies)])
    assert g.cost_usd is None and g.runs == 3
    [priced] = add_up([(summary(f"r{i}"), figures(tally(cost_usd=0.25))) for i in range(3)])
    assert priced.cost_usd == 0.75


def test_the_library_figures_of_one_provider_keep_that_providers_steps_alone(tmp_path):
    from support.runs import priced_run

    from agentcore.store.runs import Store
    from agentcore.store.stats import library_figures, library_stats

    store = Store(tmp_path / "runs.db")
    mixed = priced_run([(1000, 10, 0, 100.0), (2000, 20, 0, 200.0)])
    mixed.steps[1].provider, mixed.steps[1].model = "anthropic", "claude-sonnet-4-5"
    store.save_run(mixed)
    everything = library_stats(store, ["provider"])
    assert [(g.key["provider"], g.steps, g.input_tokens) for g in everything] == [
        ("anthropic", 1, 2000),
        ("openai", 1, 1000),
    ]
    [openai] = library_stats(store, ["provider"], provider="openai")
    assert (openai.key, openai.steps, openai.input_tokens, openai.runs) == ({"provider": "openai"}, 1, 1000, 1)
    [(_, kept)] = library_figures(store, provider="openai")
    assert [m.provider for m in kept.models] == ["openai"]
    [(_, whole)] = library_figures(store)
    assert [m.provider for m in whole.models] == ["openai", "anthropic"]


def test_a_run_is_grouped_by_its_day_its_owner_or_none_and_each_of_its_labels_sorted():
    from agentcore.annotations import make_annotation

    rows = [(summary("r1", owner="ada"), figures(tally())), (summary("r2"), figures(tally(provider="anthropic")))]
    days = add_up(rows, ["day", "provider"])
    assert [g.key for g in days] == [
        {"day": "2026-12-01", "provider": "anthropic"},
        {"day": "2026-12-01", "provider": "openai"},
    ]
    assert [(g.key["owner"], g.runs) for g in add_up(rows, ["owner"])] == [("(none)", 1), ("ada", 1)]
    labelled = {"r1": [make_annotation(step=1, labels=["wrong tool", "looped"], tags=["b", "a"])]}
    by_label = add_up(rows, ["label"], labelled)
    assert [(g.key["label"], sorted(g.run_ids)) for g in by_label] == [
        ("(none)", ["r2"]),
        ("looped", ["r1"]),
        ("wrong tool", ["r1"]),
    ]
    assert [g.key["tag"] for g in add_up(rows, ["tag"], labelled)] == ["(none)", "a", "b"]
    with pytest.raises(UsageError, match="cannot group by 'week'"):
        add_up(rows, ["model", "week"])
    with pytest.raises(UsageError, match="cannot group by 'week'"):
        add_up([], ["week"])  # refused before any run is read


def test_most_expensive_lists_ten_runs_by_cost_then_id_an_unpriced_one_as_free():
    rows = [(summary(f"r{i:02}", cost=float(i % 4)), figures()) for i in range(12)]
    rows.append((summary("unpriced", cost=None), figures()))
    top = most_expensive(rows)
    assert [s.id for s in top] == ["r03", "r07", "r11", "r02", "r06", "r10", "r01", "r05", "r09", "r00"]
    assert [s.id for s in most_expensive(rows, 13)][-4:] == ["r00", "r04", "r08", "unpriced"]
    assert most_expensive(rows, 1)[0].id == "r03"


def test_totals_add_every_groups_figures_and_lose_the_cost_to_one_unpriced_group():
    a = GroupStats({}, steps=1, input_tokens=2, output_tokens=3, cache_read_tokens=4, cache_write_tokens=5)
    b = GroupStats({}, steps=10, input_tokens=20, output_tokens=30, cache_read_tokens=40, cache_write_tokens=50)
    a.cost_usd, b.cost_usd, a.estimated_steps = 0.5, 0.25, 1
    said = totals([a, b])
    assert said == {
        "steps": 11,
        "input_tokens": 22,
        "output_tokens": 33,
        "cache_read_tokens": 44,
        "cache_write_tokens": 55,
        "estimated_steps": 1,
        "cost_usd": 0.75,
    }
    for order in ([a, GroupStats({}, cost_usd=None)], [GroupStats({}, cost_usd=None), a]):
        assert totals(order)["cost_usd"] is None
    assert totals([])["cost_usd"] == 0.0


def test_a_since_day_is_a_date_and_anything_else_is_refused_naming_the_option_and_forty_characters_of_it():
    assert first_day(None) is None
    assert first_day("2026-12-01") == "2026-12-01"
    with pytest.raises(UsageError) as refused:
        first_day("x" * 41, "--from")
    assert str(refused.value) == f"--from {'x' * 40!r}: a date, YYYY-MM-DD"
    with pytest.raises(UsageError, match="^--since 'yesterday': a date"):
        first_day("yesterday")


# -- scanners ---------------------------------------------------------------------------


def _calc(call_id: str, expression: str):
    from agentcore.messages import AssistantMessage, ToolCall

    call = ToolCall(id=call_id, name="calculator", arguments={"expression": expression})
    return AssistantMessage(content="I'll compute it.", tool_calls=(call,))


@pytest.mark.parametrize("extra", [0, 1])
def test_a_loops_evidence_shows_a_call_whole_up_to_120_characters_then_cut_with_an_ellipsis(extra):
    from agentcore.hooks.guard import call_key
    from agentcore.store.scanners import scan_loop

    base = _calc("x", "")
    name, args = call_key(base.tool_calls[0])
    expression = "1" * (120 - len(f"{name}({args})") + extra)
    run = made_run([_calc(f"c{i}", expression) for i in range(3)])
    [finding] = scan_loop(run)
    name, args = call_key(_calc("x", expression).tool_calls[0])
    whole = f"{name}({args})"
    shown = whole if extra == 0 else whole[:120] + "…"
    assert finding.evidence == f"{shown} made with the same arguments at steps 1, 2, 3"
    assert (finding.step, finding.tool_call_id) == (3, "c2")


def test_a_scanners_finding_and_the_scanner_itself_are_values_no_reader_changes():
    from agentcore.store.scanners import BUILTINS, Finding

    finding = Finding(1, "looped", "evidence")
    for record, name in ((finding, "step"), (BUILTINS["loop"], "name")):
        with pytest.raises(AttributeError):
            setattr(record, name, None)
    assert "scan=" not in repr(BUILTINS["loop"])  # a function's address says nothing to a reader


def test_an_ignored_errors_evidence_names_the_failed_step_and_the_one_after_it():
    from agentcore.messages import AssistantMessage, ToolMessage
    from agentcore.store.scanners import scan_ignored_error

    error = [ToolMessage(tool_call_id="a", name="calculator", content="Error: cannot read ×", is_error=True)]
    again = made_run([_calc("a", "17 × 23"), error, _calc("b", "17 × 23"), [], AssistantMessage(content="391")])
    [finding] = scan_ignored_error(again)
    assert finding.evidence.endswith("failed at step 1 (Error: cannot read ×) and step 2 made it again, unchanged")
    silent = made_run([_calc("a", "17 × 23"), error, AssistantMessage(content="17 × 23 = 391.")])
    [finding] = scan_ignored_error(silent)
    assert finding.evidence == "a tool failed at step 1 (Error: cannot read ×) and step 2 answered without a word of it"


def test_a_context_findings_evidence_says_the_share_of_the_window_sent():
    from agentcore.messages import AssistantMessage, Usage
    from agentcore.store.scanners import scan_context

    run = made_run([AssistantMessage(content="part")])
    step = run.steps[0]
    step.provider, step.model, step.usage = "openai", "gpt-4o-mini", Usage(input_tokens=120_000, output_tokens=9)
    [finding] = scan_context(run)
    assert finding.evidence == "step 1 sent 120,000 of gpt-4o-mini's 128,000 tokens (94%)"


def test_a_scanner_named_as_module_and_function_is_loaded_only_when_the_caller_says_code_may_be(monkeypatch):
    from agentcore.store.scanners import BUILTINS, resolve_scanner

    monkeypatch.setattr(BUILTINS, "_entries", dict(BUILTINS._entries))  # what a test loads is not kept for others

    with pytest.raises(UsageError, match="code is loaded only when whoever runs agentcore names it"):
        resolve_scanner("json:dumps")
    assert resolve_scanner("json:dumps", code=True).name == "json:dumps"


def test_a_user_scanners_description_is_its_docstrings_first_line_or_empty_without_one(monkeypatch):
    import json

    from agentcore.store.scanners import BUILTINS, _scanner_of, resolve_scanner

    monkeypatch.setattr(BUILTINS, "_entries", dict(BUILTINS._entries))

    assert resolve_scanner("json:dumps", code=True).description == json.dumps.__doc__.strip().split("\n")[0]
    assert _scanner_of("mine:bare", lambda run: []).description == ""
    with pytest.raises(UsageError, match="scanner 'json:JSONDecodeError.msg' is not a function"):
        _scanner_of("json:JSONDecodeError.msg", "not callable")


def test_a_finding_on_a_call_of_the_last_step_is_kept_and_one_past_the_last_step_refused():
    from agentcore.store.scanners import Finding, Scanner, scan_run

    run = made_run([_calc("a", "1+1"), [], _calc("b", "2+2")])
    on_last = Scanner("mine", lambda r: [Finding(2, "looped", "the last call", "b")])
    [annotation] = scan_run(run, [on_last])["scanner:mine"]
    assert (annotation.step, annotation.tool_call_id) == (2, "b")
    past = Scanner("mine", lambda r: [Finding(3, "looped", "no such step")])
    with pytest.raises(UsageError, match="scanner mine on run"):
        scan_run(run, [past])


def test_a_tool_error_is_held_against_the_step_after_its_own_call_only():
    from agentcore.messages import AssistantMessage, ToolMessage
    from agentcore.store.scanners import scan_ignored_error

    ok = [ToolMessage(tool_call_id="a", name="calculator", content="2")]
    later = [ToolMessage(tool_call_id="b", name="calculator", content="Error: cannot read ×", is_error=True)]
    run = made_run(
        [_calc("a", "1+1"), ok, AssistantMessage(content="391."), later, AssistantMessage(content="It failed.")]
    )
    assert list(scan_ignored_error(run)) == []  # step 2's answer came before the error it is not answering


def test_a_scan_writes_its_findings_a_full_batch_at_a_time_and_the_rest_at_the_end(tmp_path, monkeypatch):
    from support.runs import scripted_run

    from agentcore.store import scanners
    from agentcore.store.runs import Store

    monkeypatch.setattr(scanners, "WRITE_BATCH", 2)
    store = Store(tmp_path / "runs.db")
    runs = [scripted_run("runaway") for _ in range(3)]
    for run in runs:
        store.save_run(run)
    written: list[int] = []
    replace = store.replace_findings_of
    monkeypatch.setattr(store, "replace_findings_of", lambda batch: (written.append(len(batch)), replace(batch))[1])
    report = scanners.scan_library(store, [scanners.BUILTINS["loop"]], [r.id for r in runs])
    assert written == [2, 1] and report.added == 3


def test_a_finding_given_as_a_dict_of_its_fields_is_a_finding_and_any_other_key_is_refused():
    from agentcore.store.scanners import Finding, Scanner, scan_run

    run = made_run([_calc("a", "1+1")])
    as_dict = Scanner("mine", lambda r: [{"step": 1, "label": "looped", "evidence": "e", "tool_call_id": "a"}])
    as_finding = Scanner("mine", lambda r: [Finding(1, "looped", "e", "a")])
    [(one,)] = scan_run(run, [as_dict]).values()
    [(two,)] = scan_run(run, [as_finding]).values()
    assert (one.id, one.step, one.tool_call_id, one.labels, one.note) == (two.id, 1, "a", ["looped"], "e")
    odd = Scanner("mine", lambda r: [{"step": 1, "label": "looped", "evidence": "e", "why": "?"}])
    with pytest.raises(UsageError, match="scanner mine: a finding is step, label, evidence"):
        scan_run(run, [odd])


def test_a_regex_scan_stops_at_its_deadline_exactly_and_not_before(monkeypatch):
    from agentcore.messages import AssistantMessage
    from agentcore.store import scanners

    monkeypatch.setattr(scanners.time, "monotonic", lambda: 100.0)
    run = made_run([AssistantMessage(content="Tokyo 21")])
    before = scanners.regex_scanner("Tokyo", deadline=100.5)
    assert [f.label for f in before.scan(run)] == ["regex match"]
    at = scanners.regex_scanner("Tokyo", deadline=100.0)
    with pytest.raises(scanners.ScanStopped, match="ran out of time at step 1"):
        list(at.scan(run))


def test_a_scan_reads_runs_a_batch_at_a_time_and_finds_on_each_what_its_own_reading_finds(tmp_path, monkeypatch):
    from support.runs import scripted_run

    from agentcore.annotations import make_annotation
    from agentcore.store import scanners
    from agentcore.store.runs import Store

    monkeypatch.setattr(scanners, "READ_BATCH", 3)
    store = Store(tmp_path / "runs.db")
    runs = [scripted_run(name) for name in ("runaway", "weather", "tool_error", "runaway", "research", "runaway")]
    for run in runs:
        store.save_run(run)
    store.replace_findings(runs[1].id, {"ada": [make_annotation(step=1, labels=["good"])]})
    read: list[list[str]] = []
    stored_runs = store.stored_runs
    monkeypatch.setattr(store, "stored_runs", lambda ids: (read.append(list(ids)), stored_runs(ids))[1])
    chosen = list(scanners.BUILTINS.values())
    ids = [r.id for r in runs]
    report = scanners.scan_library(store, chosen, ids)
    assert read == [ids[:3], ids[3:]] and report.runs == 6
    for run in runs:  # each run's findings are those of the run read alone, people's labels kept beside them
        alone = scanners.scan_run(store.read_run(run.id), chosen)
        kept: dict[str, list[str]] = {}
        for a in store.annotations(run.id):
            kept.setdefault(a.author, []).append(a.id)
        for author, labels in alone.items():
            assert kept.get(author, []) == [a.id for a in labels], (run.id, author)
    assert [a.labels for a in store.annotations(runs[1].id) if a.author == "ada"] == [["good"]]
    assert store.read_runs([runs[0].id, "no-such-run"]).keys() == {runs[0].id}
    assert store.read_runs([runs[0].id])[runs[0].id].model_dump() == store.read_run(runs[0].id).model_dump()


def test_a_run_read_in_a_batch_is_one_its_viewer_may_see_and_one_gone_since_the_scan_began_is_an_error(
    tmp_path, monkeypatch
):
    from support.runs import scripted_run

    from agentcore.store import scanners
    from agentcore.store.access import Viewer
    from agentcore.store.runs import Store
    from agentcore.store.schema import StoreError

    monkeypatch.setenv("AGENTCORE_PRIVATE_RUNS", "1")
    ada, bob = Store(tmp_path / "runs.db", owner="ada"), Store(tmp_path / "runs.db", owner="bob")
    mine, theirs = scripted_run("runaway"), scripted_run("runaway")
    ada.save_run(mine)
    bob.save_run(theirs)
    assert ada.viewer == Viewer("ada")
    assert ada.read_runs([mine.id, theirs.id]).keys() == {mine.id}
    with pytest.raises(StoreError, match=f"no run '{theirs.id}'"):
        scanners.scan_library(ada, [scanners.BUILTINS["loop"]], [mine.id, theirs.id], again=True)


def test_a_run_holding_a_lone_surrogate_reads_the_same_in_a_batch_as_alone(tmp_path):
    from support.runs import scripted_run

    from agentcore.store.runs import Store

    store = Store(tmp_path / "runs.db")
    run = scripted_run("weather")
    run.title = "half a pair: \ud800"  # written as the escape \ud800, which not every JSON reader takes
    run.steps[0].wire.response = {"text": "\udfff", "nested": [{"deep": "\ud83d"}]}
    plain = scripted_run("weather")
    for each in (run, plain):
        store.save_run(each)
    batch = store.read_runs([run.id, plain.id])
    for each in (run, plain):
        assert batch[each.id].model_dump() == store.read_run(each.id).model_dump() == each.model_dump()


def test_groupings_the_database_keeps_are_added_up_there_and_only_labels_read_each_runs_figures(tmp_path, monkeypatch):
    store = Store(tmp_path / "library.db", owner="ada")
    for scenario in FIVE:
        store.save_run(scripted_run(scenario))
    read = []
    real = stats.library_figures
    monkeypatch.setattr(stats, "library_figures", lambda *a, **k: read.append(1) or real(*a, **k))
    every = tuple(KEY_COLUMNS)  # each kept column at once: the whole set, still the database's
    for by in (("model",), ("day", "owner"), every):
        assert sum(g.runs for g in library_stats(store, by)) >= len(FIVE), by
    assert read == []
    [group] = library_stats(store, ("label",))  # labels are not kept per run: each run's figures are read
    assert group.runs == len(FIVE) and read == [1]

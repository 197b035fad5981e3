"""Accounting: per-step tokens and composition, prices, the quadratic fit, what-if curves, and `agentcore cost`."""

from __future__ import annotations

import json

import pytest
from support.accounting import MINI, hand_run, prices

from agentcore import cli, transcript
from agentcore.accounting import PARTS, account, fit_polynomial, run_cost, sent_at, step_usage
from agentcore.errors import UsageError
from agentcore.gauge import step_gauges
from agentcore.messages import ToolMessage, Usage
from agentcore.policies import Change, SentRequest
from agentcore.providers.prices import PriceRef, parse_price_as, price_choices
from agentcore.run import Run
from agentcore.whatif import what_ifs


@pytest.fixture(scope="module")
def research_run(tmp_path_factory) -> Run:
    """The scripted long research scenario, run to the end through the CLI."""
    path = tmp_path_factory.mktemp("research") / "r.json"
    assert cli.main(["run", "--provider", "scripted", "--scenario", "research", "--out", str(path)]) == 0
    return transcript.load(path)


# -- tokens ---------------------------------------------------------------------------


def test_each_step_reports_its_tokens_and_running_totals():
    report = account(hand_run())
    assert [s.input_tokens for s in report.steps] == [13, 122, 231, 340]
    assert [s.cumulative_input_tokens for s in report.steps] == [13, 135, 366, 706]
    assert [s.cumulative_output_tokens for s in report.steps] == [10, 20, 30, 40]
    assert not any(s.estimated for s in report.steps)


def test_composition_splits_the_request_by_kind():
    step3 = account(hand_run()).steps[2]
    assert step3.composition == {
        "system": 0,
        "user": 13,
        "assistant_text": 0,
        "tool_calls": 12,
        "tool_results": 206,
        "tool_specs": 0,
    }


@pytest.mark.parametrize("reported", [462, 100, 1000])
def test_composition_is_scaled_to_the_reported_input_tokens(reported):
    report = account(hand_run([13, 122, reported, 340]))
    parts = report.steps[2].composition
    assert sum(parts.values()) == reported
    assert set(parts) == set(PARTS)
    if reported == 462:  # exactly twice the estimate: every part doubles
        assert (parts["user"], parts["tool_calls"], parts["tool_results"]) == (26, 24, 412)


def test_missing_usage_is_estimated_from_the_messages_and_marked():
    run = hand_run()
    run.steps[1] = run.steps[1].model_copy(update={"usage": Usage()})
    step = account(run).steps[1]
    assert step.estimated
    assert step.input_tokens == 122
    assert step.output_tokens == 2  # the reply `read{}`
    assert sum(step.composition.values()) == 122


def test_scripted_estimates_equal_the_unscaled_composition(research_run):
    for s in account(research_run).steps:
        assert s.estimated
        assert sum(s.composition.values()) == s.input_tokens
        assert s.composition["tool_specs"] > 0


# -- prices ---------------------------------------------------------------------------


def test_cost_per_step_comes_from_genai_prices():
    report = account(hand_run())
    p_in, _, p_out = prices(MINI)
    assert report.price == MINI
    for s in report.steps:
        assert s.cost_usd == pytest.approx(s.input_tokens * p_in + 10 * p_out)
    assert report.total_cost_usd == pytest.approx(706 * p_in + 40 * p_out)


def test_cache_reads_are_billed_at_the_cache_price():
    run = hand_run()
    run.steps[3] = run.steps[3].model_copy(
        update={"usage": Usage(input_tokens=340, output_tokens=10, cache_read_tokens=231)}
    )
    p_in, p_read, p_out = prices(MINI)
    assert p_read < p_in
    step = account(run).steps[3]
    assert step.cost_usd == pytest.approx(109 * p_in + 231 * p_read + 10 * p_out)


def test_an_unknown_model_has_no_cost_and_says_so():
    report = account(hand_run(provider="scripted", model="research"))
    assert report.price is None
    assert "genai-prices does not know scripted:research" in report.price_note
    assert all(s.cost_usd is None for s in report.steps)
    assert report.total_cost_usd is None
    assert report.to_dict()["total_cost_usd"] is None


def test_price_as_reprices_the_same_tokens():
    run = hand_run(provider="scripted", model="research")
    haiku = parse_price_as("anthropic:claude-3-5-haiku-latest")
    report = account(run, haiku)
    p_in, _, p_out = prices(haiku)
    assert report.price.label == "anthropic:claude-3-5-haiku-latest"
    assert report.total_input_tokens == 706
    assert report.total_cost_usd == pytest.approx(706 * p_in + 40 * p_out)


HAIKU = PriceRef("anthropic", "claude-3-5-haiku-latest")


def answered(run: Run, *models: tuple[str, str]) -> Run:
    """The run with its steps answered by these providers and models, in order."""
    for step, (provider, model) in zip(run.steps, models, strict=True):
        step.provider, step.model = provider, model
    return run


def test_a_run_continued_on_another_model_is_priced_step_by_step():
    mini, haiku = ("openai", "gpt-4o-mini"), ("anthropic", "claude-3-5-haiku-latest")
    run = answered(hand_run(provider="anthropic", model=HAIKU.model), mini, mini, haiku, haiku)
    report = account(run)
    (mini_in, _, mini_out), (haiku_in, _, haiku_out) = prices(MINI), prices(HAIKU)
    expected = [13 * mini_in + 10 * mini_out, 122 * mini_in + 10 * mini_out]
    expected += [231 * haiku_in + 10 * haiku_out, 340 * haiku_in + 10 * haiku_out]
    assert [s.cost_usd for s in report.steps] == pytest.approx(expected)
    assert [s.priced_as for s in report.steps] == [MINI.label] * 2 + [HAIKU.label] * 2
    assert [s.model for s in report.steps] == ["openai/gpt-4o-mini"] * 2 + ["anthropic/claude-3-5-haiku-latest"] * 2
    assert report.models == run.models == [mini, haiku] and report.mixed and run.mixed
    assert report.priced and report.price is None  # no one model: the label says both
    assert report.price_label == "openai:gpt-4o-mini → anthropic:claude-3-5-haiku-latest"
    assert report.total_cost_usd == pytest.approx(sum(expected))
    assert run_cost(run) == pytest.approx(sum(expected))
    data = report.to_dict()
    assert data["mixed"] is True and data["priced_as"] == report.price_label
    assert data["models"] == ["openai/gpt-4o-mini", "anthropic/claude-3-5-haiku-latest"]
    assert data["steps"][0]["priced_as"] == MINI.label


def test_price_as_still_prices_every_step_of_a_mixed_run_as_one_model():
    run = answered(hand_run(), ("openai", "gpt-4o-mini"), ("anthropic", HAIKU.model), ("local", "x"), ("local", "x"))
    report = account(run, HAIKU)
    p_in, _, p_out = prices(HAIKU)
    assert report.price == HAIKU and report.mixed and {s.priced_as for s in report.steps} == {HAIKU.label}
    assert report.total_cost_usd == pytest.approx(706 * p_in + 40 * p_out)


def test_a_free_models_steps_cost_nothing_beside_a_priced_models():
    run = answered(hand_run(), ("local", "SmolLM2"), *[("openai", "gpt-4o-mini")] * 3)
    report = account(run)
    p_in, _, p_out = prices(MINI)
    assert [s.priced_as for s in report.steps] == ["free", MINI.label, MINI.label, MINI.label]
    assert report.steps[0].cost_usd == 0.0 and report.price == MINI and report.mixed
    assert report.total_cost_usd == pytest.approx(693 * p_in + 30 * p_out)
    assert run_cost(run) == pytest.approx(693 * p_in + 30 * p_out)


def test_a_step_of_an_unknown_model_leaves_the_mixed_run_unpriced_and_says_which():
    run = answered(hand_run(), *[("openai", "gpt-4o-mini")] * 2, *[("openai", "no-such-model-xyz")] * 2)
    report = account(run)
    assert [s.cost_usd is None for s in report.steps] == [False, False, True, True]
    assert [s.cumulative_cost_usd is None for s in report.steps] == [False, False, True, True]
    assert not report.priced and report.total_cost_usd is None and run_cost(run) is None
    assert report.price_note.startswith("genai-prices does not know openai:no-such-model-xyz:")


def test_steps_from_before_the_model_was_recorded_are_priced_as_the_runs_model():
    run = hand_run()
    assert all(s.provider is None for s in run.steps)
    assert run.models == [("openai", "gpt-4o-mini")] and not run.mixed
    assert account(run).steps[0].priced_as == MINI.label


@pytest.mark.parametrize("text", ["gpt-4o-mini", ":gpt-4o", "openai:", "openai:no-such-model-xyz"])
def test_price_as_rejects_bad_or_unknown_models(text):
    with pytest.raises(UsageError):
        parse_price_as(text)


def test_price_choices_cover_the_big_providers_and_all_price():
    choices = price_choices()
    assert {c.split(":")[0] for c in choices} == {"openai", "anthropic", "google"}
    assert "openai:gpt-4o-mini" in choices
    for c in choices[:: max(len(choices) // 15, 1)]:
        assert account(hand_run(), parse_price_as(c)).total_cost_usd > 0


# -- the fit --------------------------------------------------------------------------


def test_fit_recovers_a_known_quadratic():
    fit = fit_polynomial([5 + 3 * n + 2 * n * n for n in range(1, 9)])
    assert (fit.a, fit.b, fit.c) == pytest.approx((5, 3, 2))
    assert fit.r2 == pytest.approx(1.0)
    assert fit.at(20) == pytest.approx(5 + 60 + 800)


def test_r2_drops_for_noisy_points():
    fit = fit_polynomial([1, 50, 2, 60, 3, 70])
    assert 0 <= fit.r2 < 0.9


@pytest.mark.parametrize("count", [1, 2])
def test_one_or_two_steps_are_too_few_for_a_fit(count):
    run = hand_run()
    run.steps = run.steps[:count]
    report = account(run)
    assert report.fit is None
    assert report.to_dict()["fit"] is None
    assert report.project(10) == []
    assert "needs at least three" in report.explanation()


def test_the_explanation_uses_the_runs_numbers():
    text = account(hand_run()).explanation()
    # per-step input rises by exactly 109 tokens a step: 13, 122, 231, 340
    assert "109 more input tokens" in text
    assert "13 at step 1, 340 at step 4" in text


def test_research_scenario_grows_quadratically(research_run):
    report = account(research_run)
    assert len(report.steps) >= 8
    assert report.fit.r2 > 0.99
    assert report.fit.c > 0


# -- what-if, worked by hand ----------------------------------------------------------


def _by_key(run: Run, **options) -> dict:
    return {w.key: w for w in what_ifs(run, account(run), **options)}


def test_keep_only_the_last_tool_result():
    w = _by_key(hand_run(), keep_results=1)["keep_results"]
    # older results become "[cleared]" (3 + 4 = 7 tokens instead of 103)
    assert w.input_tokens == [13, 122, 231 - 96, 340 - 2 * 96]
    assert w.token_saving_pct == pytest.approx((706 - 418) / 706 * 100)


def test_truncate_each_tool_result():
    w = _by_key(hand_run(), truncate_tokens=10)["truncate"]
    # each result keeps 40 characters: 10 + 4 = 14 tokens instead of 103
    assert w.input_tokens == [13, 33, 53, 73]
    assert w.token_saving_pct == pytest.approx((706 - 172) / 706 * 100)


def test_drop_turns_older_than_k_steps():
    w = _by_key(hand_run(), keep_turns=1)["drop_turns"]
    # the prompt plus only the previous step's call and result
    assert w.input_tokens == [13, 122, 122, 122]
    assert w.token_saving_pct == pytest.approx((706 - 379) / 706 * 100)


def test_trimming_is_scaled_like_the_reported_tokens():
    w = _by_key(hand_run([26, 244, 462, 680]), keep_turns=1)["drop_turns"]
    assert w.input_tokens == [26, 244, 244, 244]


def test_prompt_caching_bills_the_previous_request_at_the_cache_price():
    w = _by_key(hand_run())["caching"]
    assert w.input_tokens == [13, 122, 231, 340]
    assert w.cache_read_tokens == [0, 13, 122, 231]
    assert w.token_saving_pct == 0
    p_in, p_read, p_out = prices(MINI)  # gpt-4o-mini has no cache-write premium
    cached = (13 + 122 + 231) * p_read + (706 - 366) * p_in + 40 * p_out
    actual = 706 * p_in + 40 * p_out
    assert sum(w.cost_usd) == pytest.approx(cached)
    assert w.cost_saving_pct == pytest.approx((actual - cached) / actual * 100)


def test_prompt_caching_reads_only_what_a_rewritten_request_shares_with_the_one_before():
    run = hand_run([13, 122, 231, 242])
    # step 4 sent its first tool result cleared: only the prompt and the first call (13 + 6) are as step 3 sent them
    cleared = SentRequest(policies=["keep_tool_results=1"], changes={2: Change(mark="cleared", content="-")})
    run.steps[3] = run.steps[3].model_copy(update={"sent": cleared})
    w = _by_key(run)["caching"]
    assert w.cache_read_tokens == [0, 13, 122, 19]
    assert w.cache_write_tokens == [13, 109, 109, 223]


def test_prompt_caching_never_reads_fewer_tokens_than_the_run_did_and_says_what_it_read():
    run = hand_run()
    reads = [0, 20, 130, 300]  # more than each previous request: the reply before it was cached too
    for i, read in enumerate(reads):
        run.steps[i] = run.steps[i].model_copy(
            update={
                "usage": Usage(input_tokens=run.steps[i].usage.input_tokens, output_tokens=10, cache_read_tokens=read)
            }
        )
    w = _by_key(run)["caching"]
    assert w.cache_read_tokens == reads
    assert w.cost_saving_pct == pytest.approx(0) and w.label.endswith(
        f"the run already read {450 / 706:.0%} of its input from the cache)"
    )


def test_what_the_cache_saved_is_said_at_the_price_the_report_is_in():
    from agentcore.accounting import cache_saving

    run = hand_run()
    run.steps[3] = run.steps[3].model_copy(
        update={"usage": Usage(input_tokens=340, output_tokens=10, cache_read_tokens=231)}
    )
    own, other = account(run), account(run, PriceRef("openai", "gpt-4o"))
    assert cache_saving(run).cost_usd == own.total_cost_usd == run_cost(run)
    saving = cache_saving(run, other)  # the page priced as another model: its paragraph says that price too
    assert saving.cost_usd == other.total_cost_usd != own.total_cost_usd
    p_in, p_read, _ = prices(PriceRef("openai", "gpt-4o"))
    assert saving.saved_usd == pytest.approx(231 * (p_in - p_read))


def test_unpriced_what_ifs_still_save_tokens_but_have_no_cost():
    ws = _by_key(hand_run(provider="scripted", model="research"), keep_turns=1)
    assert ws["drop_turns"].token_saving_pct > 0
    assert all(w.cost_usd is None and w.cost_saving_pct is None for w in ws.values())


# -- the CLI ----------------------------------------------------------------------------


def test_cli_json_has_steps_and_fit(tmp_path, capsys):
    path = tmp_path / "run.json"
    transcript.save(hand_run(), path)
    assert cli.main(["cost", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["cumulative_input_tokens"] for s in data["steps"]] == [13, 135, 366, 706]
    for s in data["steps"]:
        assert {"index", "input_tokens", "output_tokens", "cumulative_input_tokens", "cost_usd"} <= set(s)
    assert set(data["fit"]) == {"a", "b", "c", "r2"}
    assert data["priced_as"] == "openai:gpt-4o-mini"
    assert {w["key"] for w in data["what_if"]} == {"keep_results", "truncate", "drop_turns", "caching"}


def test_cli_json_fit_is_null_for_two_steps_and_cost_null_when_unknown(tmp_path, capsys):
    run = hand_run(provider="ollama", model="llama3.2")
    run.steps = run.steps[:2]
    path = tmp_path / "run.json"
    transcript.save(run, path)
    assert cli.main(["cost", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fit"] is None
    assert [s["cost_usd"] for s in data["steps"]] == [None, None]
    assert "ollama:llama3.2" in data["price_note"]


def test_cli_text_prints_the_table_fit_and_price_as(tmp_path, capsys):
    path = tmp_path / "run.json"
    transcript.save(hand_run(provider="scripted", model="research"), path)
    assert cli.main(["cost", str(path), "--price-as", "openai:gpt-4o-mini"]) == 0
    out = capsys.readouterr().out
    assert "priced as openai:gpt-4o-mini" in out
    assert "R²=1.00000" in out  # 13, 135, 366, 706 lie exactly on a parabola
    assert "drop turns older than 3 steps" in out


def test_cli_rejects_an_unknown_price_as(tmp_path, capsys):
    path = tmp_path / "run.json"
    transcript.save(hand_run(), path)
    assert cli.main(["cost", str(path), "--price-as", "openai:no-such-model-xyz"]) == 2
    assert "genai-prices does not know" in capsys.readouterr().err


def test_a_run_with_no_steps_has_empty_what_if_curves():
    from agentcore.whatif import what_ifs

    run = Run.start("hi")
    curves = what_ifs(run, account(run))
    assert curves and all(c.input_tokens == [] and c.token_saving_pct == 0.0 for c in curves)


def test_a_summarisers_call_is_charged_to_its_step_and_to_the_run():
    from agentcore.policies import PolicyCall

    run = hand_run()
    plain = account(run).steps[2].cost_usd
    summary = PolicyCall(provider="openai", model="gpt-4o-mini", usage=Usage(input_tokens=500), cost_usd=0.25)
    run.steps[2].policy_calls.append(summary)
    report = account(run)
    assert report.steps[2].cost_usd == pytest.approx(plain + 0.25)
    assert (
        report.total_cost_usd
        == pytest.approx(run_cost(run))
        == pytest.approx(account(hand_run()).total_cost_usd + 0.25)
    )
    run.steps[2].policy_calls.append(summary.model_copy(update={"cost_usd": None}))  # a summariser of unknown price
    assert run_cost(run) is None and account(run).steps[2].cost_usd is None


def test_a_responses_api_run_is_priced_as_the_openai_model_it_ran_on():
    assert run_cost(hand_run(provider="openai-responses")) == pytest.approx(run_cost(hand_run()))


# -- one answer to what a step sent and what it cost ----------------------------------


def test_run_cost_is_accounts_total_when_usage_was_not_recorded():
    run = hand_run()
    run.steps[1] = run.steps[1].model_copy(update={"usage": Usage()})  # a file that kept no usage for step 2
    p_in, _, p_out = prices(MINI)
    # step 2 sent 122 tokens by the estimate and answered `read{}`, 2 tokens
    expected = 13 * p_in + 10 * p_out + 122 * p_in + 2 * p_out + 231 * p_in + 10 * p_out + 340 * p_in + 10 * p_out
    assert account(run).total_cost_usd == pytest.approx(expected)
    assert run_cost(run) == account(run).total_cost_usd


def test_run_cost_is_accounts_total_when_reasoning_exceeds_output():
    run = hand_run()
    run.steps[2] = run.steps[2].model_copy(
        update={"usage": Usage(input_tokens=231, output_tokens=10, reasoning_tokens=50)}
    )
    p_in, _, p_out = prices(MINI)
    step = account(run).steps[2]
    assert (step.output_tokens, step.reasoning_tokens) == (50, 50)  # reasoning is output: at least 50 were written
    assert account(run).total_cost_usd == pytest.approx(706 * p_in + 80 * p_out)
    assert run_cost(run) == account(run).total_cost_usd


def test_an_input_that_was_not_recorded_is_estimated_even_beside_a_recorded_output():
    run = hand_run()
    run.steps[1] = run.steps[1].model_copy(update={"usage": Usage(output_tokens=10)})
    (usage, estimated) = step_usage(run, 2)
    assert (usage.input_tokens, usage.output_tokens, estimated) == (122, 10, True)
    assert account(run).steps[1].input_tokens == 122 == step_gauges(run)[1].tokens


@pytest.mark.parametrize("usage", [Usage(input_tokens=133, output_tokens=10), Usage()], ids=["reported", "unrecorded"])
def test_a_step_is_counted_by_what_its_policy_sent_not_by_the_whole_history(usage):
    run = hand_run()
    # step 3 sent its first tool result cleared, as keep_tool_results=1 does: 13 + 6 + 5 + 6 + 103 = 133 tokens
    cleared = SentRequest(policies=["keep_tool_results=1"], changes={2: Change(mark="cleared", content="-")})
    run.steps[2] = run.steps[2].model_copy(update={"sent": cleared, "usage": usage})
    assert [m.content for m in sent_at(run, 3) if isinstance(m, ToolMessage)] == ["-", "s" * 396]
    assert sent_at(run, 2) == run.messages[:3]
    step = account(run).steps[2]
    assert step.composition == {**dict.fromkeys(PARTS, 0), "user": 13, "tool_calls": 12, "tool_results": 108}
    assert step.input_tokens == 133 == step_gauges(run)[2].tokens == step_usage(run, 3)[0].input_tokens


def test_an_estimate_is_marked_with_a_tilde_wherever_the_command_line_prints_it(tmp_path, capsys):
    from agentcore.cli.main import main
    from agentcore.store import Store

    run = hand_run()
    run.steps[1] = run.steps[1].model_copy(update={"usage": Usage()})
    path = tmp_path / "run.json"
    path.write_text(transcript.dumps(run))
    assert main(["cost", str(path)]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.split()[:1] in (["1"], ["2"])]
    assert rows[1][1:3] == ["~122", "~2"] and not rows[0][1].startswith("~")  # the estimated step alone
    Store(tmp_path / "runs.db").save_run(run)
    assert main(["runs", "show", run.id, "--db", str(tmp_path / "runs.db")]) == 0
    shown = capsys.readouterr().out
    assert "── step 2 · ~122 in / ~2 out ·" in shown and "── step 1 · ~" not in shown

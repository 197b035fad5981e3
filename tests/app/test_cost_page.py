"""The cost page under AppTest: the current run, an uploaded transcript, price as, the fit, what-if, the table."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price
from streamlit.testing.v1 import AppTest

from agentcore import Agent, ScriptedProvider, cli, transcript
from agentcore.accounting import step_usage, tool_tokens
from agentcore.gauge import step_gauges
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage, Usage, UserMessage, estimate_tokens
from agentcore.policies import CLEARED, ContextPolicies
from agentcore.run import Run, RunConfig
from agentcore.steps import StepRecord
from agentcore.toolbox import get_tools

PAGE = "views/cost.py"


@pytest.fixture(scope="module")
def research_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("research") / "r.json"
    assert cli.main(["run", "--provider", "scripted", "--scenario", "research", "--out", str(path)]) == 0
    return path


@pytest.fixture
def page_with(open_app):
    """The app on the cost page with `run` as its current run, as the playground leaves it."""
    from ui.state import Session

    def open_(run: Run | None) -> AppTest:
        session = Session()
        if run is not None:
            session.add_run(run)
        return open_app(PAGE, session=session)

    return open_


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def texts(at: AppTest) -> str:
    return "\n".join(m.value for m in at.main.markdown)


def two_step_run() -> Run:
    messages = [
        UserMessage(content="look it up"),
        AssistantMessage(tool_calls=(ToolCall(id="c1", name="read", arguments={}),)),
        ToolMessage(tool_call_id="c1", name="read", content="x" * 200),
        AssistantMessage(content="done"),
    ]
    steps = [
        StepRecord(index=1, usage=Usage(input_tokens=30, output_tokens=5), message_count=1),
        StepRecord(index=2, usage=Usage(input_tokens=95, output_tokens=3), message_count=3),
    ]
    return Run(config=RunConfig(provider="openai", model="gpt-4o-mini"), messages=messages, steps=steps)


def test_the_current_research_run_shows_the_quadratic_fit(research_file, page_with):
    at = page_with(transcript.load(research_file))
    assert not at.exception
    fit_line = next(m.value for m in at.markdown if "R² =" in m.value)
    r2 = float(fit_line.split("R² = ")[1].split(";")[0])
    assert r2 > 0.99
    assert "more input tokens than the one before" in texts(at)
    specs = charts(at)
    titles = [c["layout"]["title"]["text"] for c in specs]
    assert titles == [
        "Tokens per step",
        "Cumulative input tokens",
        "Input per step: linear",
        "What-if: cumulative input tokens",
    ]
    tokens = specs[0]
    assert tokens["layout"]["barmode"] == "stack"
    assert {t["name"] for t in tokens["data"]} >= {"system prompt", "user", "tool calls", "tool results"}
    fit = next(t for t in specs[1]["data"] if t["name"].startswith("fit"))
    assert fit["x"][-1] == 20  # projected to the default step, past the 10 recorded
    # the scripted model is not in genai-prices: no cost, and the page says so in one line under Price as
    assert any("genai-prices does not know scripted:research" in c.value for c in at.caption)
    assert at.metric[3].value == "—"


def test_the_step_table_matches_agentcore_cost(research_file, page_with, capsys):
    at = page_with(transcript.load(research_file))
    at.selectbox(key="cost_price_as").set_value("openai:gpt-4o-mini").run()
    assert not at.exception
    table = at.dataframe[1].value
    capsys.readouterr()
    assert cli.main(["cost", str(research_file), "--price-as", "openai:gpt-4o-mini", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(table) == len(data["steps"]) == 10
    for (_, row), step in zip(table.iterrows(), data["steps"], strict=True):
        for key in ("index", "input_tokens", "output_tokens", "cumulative_input_tokens"):
            assert row[key] == step[key]
        assert float(row["cost_usd"]) == pytest.approx(step["cost_usd"], abs=1e-8)
    assert at.metric[3].value == f"${data['total_cost_usd']:.6f}"
    savings = at.dataframe[0].value
    by_cli = {w["label"]: w for w in data["what_if"]}
    for _, row in savings.iterrows():
        assert float(row["cost saving %"]) == pytest.approx(round(by_cli[row["strategy"]]["cost_saving_pct"], 1))


def test_price_as_adds_the_cost_charts(research_file, page_with):
    at = page_with(transcript.load(research_file))
    at.selectbox(key="cost_price_as").set_value("anthropic:claude-3-5-haiku-latest").run()
    titles = [c["layout"]["title"]["text"] for c in charts(at)]
    assert "Cost (USD, priced as anthropic:claude-3-5-haiku-latest)" in titles
    assert "What-if: cumulative cost (USD)" in titles
    assert not at.warning
    savings = at.dataframe[0].value
    assert "—" not in set(savings["cost saving %"])
    caching = savings[savings["strategy"].str.startswith("prompt caching")].iloc[0]
    assert caching["token saving %"] == 0 and float(caching["cost saving %"]) > 0


def test_what_if_settings_change_the_savings(research_file, page_with):
    at = page_with(transcript.load(research_file))
    before = at.dataframe[0].value["token saving %"].tolist()
    at.number_input(key="cost_keep_turns").set_value(1).run()
    after = at.dataframe[0].value
    assert after["strategy"].iloc[2] == "drop turns older than 1 steps"
    assert after["token saving %"].iloc[2] > before[2]
    assert "not by calling the model again" in "\n".join(c.value for c in at.caption)


def test_an_uploaded_transcript_is_shown_without_a_current_run(research_file, page_with):
    at = page_with(None)
    assert "No run yet" in at.info[0].value
    at.file_uploader(key="cost_upload").set_value(("r.json", research_file.read_bytes(), "application/json")).run()
    assert not at.exception
    assert "Research why agents get expensive" in texts(at)
    assert len(at.dataframe[1].value) == 10
    assert at.download_button(key="cost_csv").label == "Download CSV"


def test_a_bad_upload_is_one_clear_error(page_with):
    at = page_with(None)
    at.file_uploader(key="cost_upload").set_value(("bad.json", b'{"format": "nope"}', "application/json")).run()
    assert not at.exception
    assert at.error[0].value.startswith("bad.json: format:")


def test_two_steps_show_the_points_and_say_a_fit_needs_three(page_with):
    at = page_with(two_step_run())
    assert not at.exception
    assert "needs at least three" in texts(at)
    assert "R² =" not in texts(at)
    cumulative = charts(at)[1]
    assert [t["name"] for t in cumulative["data"]] == ["cumulative input"]
    assert cumulative["data"][0]["y"] == [30, 125]
    assert at.metric[3].value.startswith("$")  # gpt-4o-mini is priced


def test_the_csv_download_is_the_step_table(research_file, page_with, downloads):
    at = page_with(transcript.load(research_file))
    table = at.dataframe[1].value
    csv = pd.read_csv(io.BytesIO(downloads.data(at.download_button(key="cost_csv"))))
    assert list(csv.columns) == list(table.columns) and len(csv) == len(table) == 10
    assert list(csv["input_tokens"]) == list(table["input_tokens"])


def test_the_what_if_settings_are_kept_while_another_page_is_open(research_file, page_with):
    at = page_with(transcript.load(research_file))
    at.number_input(key="cost_keep_turns").set_value(1).run()
    at.selectbox(key="cost_price_as").set_value("openai:gpt-4o-mini").run()
    at.switch_page("views/playground.py").run()
    assert not at.exception
    at.switch_page(PAGE).run()
    assert at.number_input(key="cost_keep_turns").value == 1
    assert at.selectbox(key="cost_price_as").value == "openai:gpt-4o-mini"
    assert at.dataframe[0].value["strategy"].iloc[2] == "drop turns older than 1 steps"


def mixed_run() -> Run:
    """Two steps, the first answered by gpt-4o-mini and the second by Claude after a switch."""
    run = two_step_run()
    run.steps[0].provider, run.steps[0].model = "openai", "gpt-4o-mini"
    run.steps[1].provider, run.steps[1].model = "anthropic", "claude-3-5-haiku-latest"
    return run


def test_the_cumulative_cost_axis_starts_at_zero_and_goes_up(page_with):
    at = page_with(two_step_run())
    cost = next(c for c in charts(at) if c["layout"]["title"]["text"].startswith("Cost (USD"))
    values = [y for trace in cost["data"] for y in trace["y"]]
    assert values and min(values) >= 0
    for axis in ("yaxis", "yaxis2"):
        layout = cost["layout"][axis]
        # an autoranged axis of a line with markers is padded below its lowest point: below 0 for costs
        assert layout["rangemode"] == "tozero" and layout.get("autorange") != "reversed", axis
        assert "range" not in layout or min(layout["range"]) == 0


def test_price_as_keeps_the_choice_when_the_run_changes(research_file, page_with, tmp_path):
    two = tmp_path / "two.json"
    two.write_text(transcript.dumps(two_step_run()))
    at = page_with(None)

    def upload(path: Path | None) -> None:
        data = None if path is None else (path.name, path.read_bytes(), "application/json")
        at.file_uploader(key="cost_upload").set_value(data).run()
        assert not at.exception

    upload(two)
    at.selectbox(key="cost_price_as").set_value("anthropic:claude-3-5-haiku-latest").run()
    upload(None)  # a draw without a run, so without the Price as box, as between two uploads
    upload(research_file)
    assert at.selectbox(key="cost_price_as").value == "anthropic:claude-3-5-haiku-latest"
    titles = [c["layout"]["title"]["text"] for c in charts(at)]
    assert "Cost (USD, priced as anthropic:claude-3-5-haiku-latest)" in titles


def test_the_unpriced_notice_does_not_push_the_quadratic_chart_down(research_file, page_with):
    at = page_with(transcript.load(research_file))
    before: list[str] = []
    for node in at.main:
        if node.type == "plotly_chart" and "Cumulative input" in node.proto.spec:
            break
        before.append(node.type)
    else:
        raise AssertionError("no cumulative input chart")
    assert "alert" not in before and not at.warning  # a one-line caption, not a banner above the charts
    notice = next(c.value for c in at.caption if "does not know scripted:research" in c.value)
    assert "\n" not in notice


def test_a_mixed_run_is_priced_step_by_step_and_said_to_be_mixed(page_with):
    at = page_with(mixed_run())
    assert not at.exception
    head = next(m.value for m in at.markdown if "2 steps" in m.value)
    assert "mixed run" in head and "openai/gpt-4o-mini → anthropic/claude-3-5-haiku-latest" in head
    own = at.selectbox(key="cost_price_as").format_func("(the run's own model)")
    assert own.startswith("openai:gpt-4o-mini → anthropic:claude-3-5-haiku-latest")
    assert any(c.value.startswith("A mixed run, answered by") for c in at.caption)
    titles = [c["layout"]["title"]["text"] for c in charts(at)]
    assert "Cost (USD, priced as openai:gpt-4o-mini → anthropic:claude-3-5-haiku-latest)" in titles
    table = at.dataframe[1].value
    assert list(table["priced_as"]) == ["openai:gpt-4o-mini", "anthropic:claude-3-5-haiku-latest"]


def test_counts_and_missing_values_are_words_not_none_or_step_lists(research_file, page_with):
    at = page_with(transcript.load(research_file))
    captions = "\n".join(c.value for c in at.caption)
    assert "on steps 1–10." in captions and "step(s)" not in captions
    savings, steps = at.dataframe[0].value, at.dataframe[1].value
    assert set(savings["cost saving %"]) == {"—"}  # unpriced: a dash, not None
    assert set(steps["cost_usd"]) == set(steps["priced_as"]) == {"—"}
    shown = [str(v) for table in (savings, steps) for v in table.to_numpy().ravel()]
    assert not {"None", "nan", "-0.0"} & set(shown)
    one = two_step_run()
    one.steps.pop()
    assert any(m.value.endswith("· 1 step") for m in page_with(one).markdown)


def by_step(trace: dict) -> dict[int, float]:
    """A trace's values keyed by the step its x says they belong to."""
    return dict(zip(trace["x"], trace["y"], strict=True))


def figure(at: AppTest, title: str) -> dict:
    return next(c for c in charts(at) if c["layout"]["title"]["text"].startswith(title))


def policy_run(usage: Usage | None = None) -> Run:
    """The scripted research scenario with keep_tool_results=1, kept as a gpt-4o-mini run (so its context
    window is known and it is priced); `usage`, when given, replaces every step's, as a file without usage."""
    provider = ScriptedProvider(scenario="research")
    policies = ContextPolicies(keep_tool_results=1)
    config = RunConfig(provider="scripted", model="research", scenario="research", policies=policies)
    run = Run.start(provider.scenario.prompt, config)
    Agent(provider, get_tools(list(provider.scenario.tools))).run(run)
    run.config = run.config.model_copy(update={"provider": "openai", "model": "gpt-4o-mini", "scenario": None})
    for step in run.steps:
        step.provider, step.model = "openai", "gpt-4o-mini"
        step.usage = step.usage if usage is None else usage
    return run


@pytest.mark.parametrize("usage", [None, Usage()], ids=["reported", "unrecorded"])
def test_a_policy_runs_composition_agrees_with_its_gauge(page_with, usage):
    run = policy_run(usage)
    at = page_with(run)
    assert not at.exception
    bars = [by_step(t) for t in figure(at, "Tokens per step")["data"] if t["type"] == "bar"]
    gauge = by_step(figure(at, "Share of the 128,000-token context window")["data"][0])
    gauges = step_gauges(run)
    assert len(gauges) == len(run.steps) > 3
    results = next(by_step(t) for t in figure(at, "Tokens per step")["data"] if t["name"] == "tool results")
    for g, step in zip(gauges, run.steps, strict=True):
        assert sum(b[g.step] for b in bars) == g.tokens
        assert gauge[g.step] == pytest.approx(100 * g.tokens / 128_000)
        # every tool result but the last went as the placeholder
        sent = [m for m in run.messages[: step.message_count] if isinstance(m, ToolMessage)]
        expected = (len(sent) - 1) * (4 + estimate_tokens(CLEARED)) + sent[-1].tokens if sent else 0
        assert results[g.step] == expected


def three_step_run() -> Run:
    """Three steps whose input and output differ at every step, priced as gpt-4o-mini."""
    run = two_step_run()
    run.messages[3:] = [AssistantMessage(content="again"), UserMessage(content="more"), AssistantMessage(content="ok")]
    run.steps.append(StepRecord(index=3, usage=Usage(input_tokens=140, output_tokens=9), message_count=5))
    return run


def test_the_tokens_chart_has_each_steps_tokens_at_its_step(page_with):
    run = three_step_run()
    chart = figure(page_with(run), "Tokens per step")["data"]
    bars = [by_step(t) for t in chart if t["type"] == "bar"]
    output = next(by_step(t) for t in chart if t["name"] == "output")
    assert {k: sum(b[k] for b in bars) for k in (1, 2, 3)} == {1: 30, 2: 95, 3: 140}
    assert output == {1: 5, 2: 3, 3: 9}


def test_the_cost_chart_has_each_steps_cost_at_its_step(page_with):
    run = three_step_run()
    chart = figure(page_with(run), "Cost (USD")["data"]
    per_step = next(by_step(t) for t in chart if t["name"] == "cost per step")
    cumulative = next(by_step(t) for t in chart if t["name"] == "cumulative")
    expected = {
        s.index: float(calc_price(PriceUsage(**s.usage.model_dump()), "gpt-4o-mini", provider_id="openai").total_price)
        for s in run.steps
    }
    assert per_step == pytest.approx(expected)
    assert cumulative == pytest.approx({1: expected[1], 2: expected[1] + expected[2], 3: sum(expected.values())})


def test_a_policy_run_shows_its_input_saving_against_the_whole_history_beside_its_chart(page_with):
    run = policy_run()
    at = page_with(run)
    assert not at.exception
    sent = sum(step_usage(run, n)[0].input_tokens for n in range(1, len(run.steps) + 1))
    whole = sum(sum(m.tokens for m in run.messages[: s.message_count]) + tool_tokens(run) for s in run.steps)
    assert sent < whole  # the scripted model counts as the estimate does: both sides in the same units
    line = (
        f"{sent:,} input tokens sent against {whole:,} without the policy: {round((whole - sent) / whole * 100)}% less."
    )
    assert line in [m.value.strip("*") for m in at.markdown]

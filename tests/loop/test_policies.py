"""Context policies: what each step sent on the research scenario, no orphaned tool result, the summariser's
priced call, the CLI's --policy, the what-if projection of the same policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore import Agent, Run, RunConfig, ScriptedProvider, cli, transcript
from agentcore.accounting import account, sent_at
from agentcore.catalogue import context_window
from agentcore.errors import TranscriptError, UsageError
from agentcore.exports import export_run
from agentcore.gauge import Gauge, next_gauge, step_gauges, window_of
from agentcore.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    validate_messages,
)
from agentcore.policies import (
    CLEARED,
    SUMMARY_HEADING,
    ContextPolicies,
    SentRequest,
    compactions,
    origins,
    parse_policy,
    policies_from,
    project,
)
from agentcore.providers.anthropic import AnthropicProvider, parse_usage
from agentcore.providers.anthropic_cache import MAX_BREAKPOINTS, breakpoints
from agentcore.providers.base import ModelRequest, Settings, estimate_request_tokens
from agentcore.providers.openai import OpenAIProvider
from agentcore.providers.prices import Pricer, model_price_ref
from agentcore.request import SUMMARY_PROMPT, prepare, request_settings, transcript_text
from agentcore.sessions import read_import
from agentcore.steps import ModelRef, StepRecord
from agentcore.toolbox import get_tools
from agentcore.tools import ToolSpec
from agentcore.whatif import policy_curves, projected_input
from ui.policy_view import CACHED_BADGE, breaks_cache, cached_prefix, message_badge, next_marks, with_policies


def research(max_steps: int = 30, **policy) -> Run:
    """The scripted research scenario under `policy`, to its answer or its step budget."""
    provider = ScriptedProvider(scenario="research")
    config = RunConfig(
        provider="scripted",
        model="research",
        scenario="research",
        max_steps=max_steps,
        policies=ContextPolicies(**policy) if policy else None,
    )
    run = Run.start(provider.scenario.prompt, config)
    Agent(provider, get_tools(list(provider.scenario.tools))).run(run)
    return run


def sent_tokens(run: Run) -> list[int]:
    """Each step's request as rebuilt from its record, counted with the scripted model's own estimate."""
    return [
        estimate_request_tokens(ModelRequest(messages=tuple(sent_at(run, s.index)), tools=tuple(run.tool_specs)))
        for s in run.steps
    ]


# -- each policy on the research scenario -------------------------------------------------

BASELINE = [137, 208, 306, 399, 469, 571, 678, 748, 845, 939]


def test_without_a_policy_every_step_sends_the_whole_history():
    run = research()
    assert [s.usage.input_tokens for s in run.steps] == BASELINE
    assert all(s.sent is None for s in run.steps)
    assert sent_tokens(run) == BASELINE


@pytest.mark.parametrize(
    ("policy", "inputs"),
    [
        ({"keep_tool_results": 3}, [137, 208, 306, 399, 437, 470, 510, 547, 570, 585]),
        ({"truncate_tool_results": 50}, [137, 208, 284, 357, 427, 502, 577, 647, 720, 793]),
    ],
)
def test_a_policy_that_keeps_the_turns_sends_fewer_tokens_for_the_same_steps(policy, inputs):
    run = research(**policy)
    assert [s.usage.input_tokens for s in run.steps] == inputs
    assert sent_tokens(run) == inputs  # the record of what was sent is what the model was sent
    assert run.stop_reason == "answer" and len(run.messages) == 20  # the history is kept whole
    base = research()
    # the model did the same, so the what-if projection of the same policy is the measurement
    assert projected_input(base, account(base), ContextPolicies(**policy)) == inputs


def test_keep_tool_results_clears_all_but_the_last_k():
    run = research(keep_tool_results=2)
    last = run.steps[-1]
    sent = sent_at(run, last.index)
    results = [m for m in sent if isinstance(m, ToolMessage)]
    assert [m.content == CLEARED for m in results] == [True] * (len(results) - 2) + [False, False]
    assert last.sent.marks(last.message_count).count("cleared") == len(results) - 2


def test_truncate_cuts_each_result_to_n_tokens():
    run = research(truncate_tool_results=10)
    for s in run.steps:
        for m in sent_at(run, s.index):
            if isinstance(m, ToolMessage):
                assert len(m.content) <= 40


def test_dropping_old_turns_keeps_the_prompt_and_the_last_k_turns():
    run = research(drop_turns_older_than=3)
    assert len(run.steps) == 30 and run.stop_reason == "max_steps"  # it forgets what it read, and reads again
    assert [s.usage.input_tokens for s in run.steps][:10] == [137, 208, 306, 399, 398, 402, 416, 416, 384, 379]
    assert sent_tokens(run) == [s.usage.input_tokens for s in run.steps]
    sent = sent_at(run, 30)
    assert isinstance(sent[0], UserMessage) and sent[0] == run.messages[0]
    assert sum(isinstance(m, AssistantMessage) for m in sent) == 3


def test_the_summariser_call_is_recorded_on_its_step():
    run = research(summarize_older_than=3)
    summarised = [s for s in run.steps if s.policy_calls]
    assert summarised and summarised[0].index == 5  # the first step with a turn older than three
    call = summarised[0].policy_calls[0]
    assert call.usage.input_tokens > 0 and call.cost_usd == 0.0 and call.provider == "scripted"
    sent = sent_at(run, 5)
    assert sent[1].content.startswith(SUMMARY_HEADING) and isinstance(sent[1], UserMessage)
    assert sent_tokens(run) == [s.usage.input_tokens for s in run.steps]
    # each later call summarises the previous summary and only the turn that became old since
    assert [s.policy_calls[0].summarised for s in summarised[:3]] == [2, 2, 2]
    assert all(len(s.policy_calls) == 1 for s in summarised)


# -- the summary as a compaction, the event an imported session's agent records --------------


def research_until_summarised(**policy) -> Run:
    """The research scenario under `policy`, stepped until a step's request sends a summary (or it ends)."""
    provider = ScriptedProvider(scenario="research")
    config = RunConfig(provider="scripted", model="research", scenario="research", policies=ContextPolicies(**policy))
    run = Run.start(provider.scenario.prompt, config)
    agent = Agent(provider, get_tools(list(provider.scenario.tools)))
    while not run.finished and not (run.steps and run.steps[-1].policy_calls):
        agent.step(run)
    return run


def test_the_summarise_policy_records_a_compaction_on_the_step_whose_request_it_summarised():
    run = research_until_summarised(summarize_older_than=3)
    [(n, compaction)] = compactions(run)
    assert n == len(run.steps) == 5  # the first step with a turn older than three
    sent = run.steps[n - 1].sent
    assert compaction == sent.compaction and compaction.by == "summarize_older_than"
    assert compaction.kept_from is None and sent.summary is not None
    assert compaction.summary == sent.summary
    assert sent_at(run, n)[1].content == f"{SUMMARY_HEADING}\n{compaction.summary}"  # the text the model was sent
    # the project's own estimate: before is the whole history (nothing else left it out), after what went
    history = run.messages[: run.steps[n - 1].message_count]
    whole = estimate_request_tokens(ModelRequest(messages=tuple(history), tools=tuple(run.tool_specs)))
    assert (compaction.tokens_before, compaction.tokens_after) == (whole, sent_tokens(run)[n - 1])
    assert compaction.tokens_before > compaction.tokens_after


def test_each_summary_written_is_a_compaction_and_a_request_without_policies_after_it_sends_the_whole_history():
    run = research(max_steps=8, summarize_older_than=3)
    assert [n for n, _ in compactions(run)] == [s.index for s in run.steps if s.policy_calls] == [5, 6, 7, 8]
    run.config = run.config.model_copy(update={"policies": None, "max_steps": 9})
    assert prepare(run).sent is None  # a policy's compaction was its request's alone: nothing stands after it


def test_the_atif_export_carries_the_policys_compaction_and_imports_back_with_it():
    atif = pytest.importorskip("atif", reason="the atif package (the test extra) judges ATIF exports")
    run = research_until_summarised(summarize_older_than=3)
    [(n, compaction)] = compactions(run)
    text = export_run(run, "atif")
    steps = atif.Trajectory.model_validate_json(text).steps
    [k] = [k for k, s in enumerate(steps) if s.extra and "context_management" in s.extra]
    assert steps[k].source == "system" and steps[k + 1].source == "agent"
    assert [s.source for s in steps[:k]].count("agent") == n - 1  # just before the reply to the request it made
    assert steps[k].extra["context_management"] == {
        "type": "compaction",
        "by": "summarize_older_than",
        "tokens_before": compaction.tokens_before,
        "tokens_after": compaction.tokens_after,
        "summary": compaction.summary,
    }
    back = read_import(text, "t.atif.json").runs[0]
    assert back.messages == run.messages and compactions(back) == compactions(run)
    # a step after it that no policy shaped reads back without it: a policy's compaction was its request's alone
    run.config = run.config.model_copy(update={"policies": None, "max_steps": n + 1})
    provider = ScriptedProvider(scenario="research")
    Agent(provider, get_tools(list(provider.scenario.tools))).step(run)
    back = read_import(export_run(run, "atif"), "t.atif.json").runs[0]
    assert [s.sent.compaction if s.sent else None for s in back.steps] == [None] * (n - 1) + [compaction, None]


@pytest.mark.parametrize("policy", [{"summarize_older_than": 30}, {"drop_turns_older_than": 2}], ids=str)
def test_a_policy_that_writes_no_summary_records_no_compaction(policy):
    """A summary never asked for, or turns left out (no summary stands for them): no compaction, no ATIF marker."""
    run = research(max_steps=6, **policy)
    assert compactions(run) == [] and all(s.sent.compaction is None for s in run.steps)
    assert "context_management" not in export_run(run, "atif")


def test_policies_and_what_was_sent_survive_the_transcript(tmp_path):
    run = research(max_steps=6, keep_tool_results=1, summarize_older_than=2)
    path = tmp_path / "r.json"
    transcript.save(run, path)
    back = transcript.load(path)
    assert back.config.policies == run.config.policies
    assert [sent_at(back, s.index) for s in back.steps] == [sent_at(run, s.index) for s in run.steps]
    assert back.steps[-1].policy_calls == run.steps[-1].policy_calls


def test_a_run_without_policies_writes_no_policy_fields(tmp_path):
    data = json.loads(research(max_steps=3).model_dump_json())
    assert "policies" not in data["config"] and all("sent" not in s for s in data["steps"])


def test_policy_curves_put_measured_beside_projected_and_whole():
    run = research(keep_tool_results=3)
    curves = policy_curves(run, account(run))
    assert curves.measured == curves.projected == [s.usage.input_tokens for s in run.steps]
    assert curves.whole == BASELINE
    assert policy_curves(research(max_steps=3), account(research(max_steps=3))) is None


# -- the summariser priced, on a real OpenAI-compatible server ---------------------------


def test_the_summariser_call_is_priced_as_its_model(katan):
    provider = OpenAIProvider("gpt-4o-mini", base_url=f"{katan.url}/v1", api_key="katan-key")
    config = RunConfig(
        provider="openai", model="gpt-4o-mini", max_steps=3, policies=ContextPolicies(summarize_older_than=1)
    )
    run = Run.start("What is the weather in Paris?", config)
    Agent(provider, get_tools(["get_weather"])).run(run)
    assert len(run.steps) == 3
    (call,) = run.steps[2].policy_calls
    pricer = Pricer.find(model_price_ref(run, ModelRef("openai", "gpt-4o-mini")))
    u = call.usage
    assert u.input_tokens > 0 and not call.estimated
    assert call.cost_usd == pytest.approx(pricer.price(u.input_tokens, u.output_tokens)) and call.cost_usd > 0
    assert sent_at(run, 3)[1].content.startswith(SUMMARY_HEADING)


# -- no orphaned tool result, over random runs -----------------------------------------------


@st.composite
def random_runs(draw) -> Run:
    """A history of model turns with 0–3 calls each, user messages between them, and the step records."""
    messages = [SystemMessage(content="be brief")] if draw(st.booleans()) else []
    messages.append(UserMessage(content="start"))
    steps = []
    for k in range(draw(st.integers(1, 12))):
        if draw(st.integers(0, 5)) == 0:
            messages.append(UserMessage(content=f"and also {k}"))
        steps.append(StepRecord(index=k + 1, message_count=len(messages)))
        n = draw(st.integers(0, 3))
        calls = tuple(ToolCall(id=f"c{k}_{j}", name="t", arguments={}) for j in range(n))
        messages.append(AssistantMessage(content="x" * draw(st.integers(0 if n else 1, 30)), tool_calls=calls))
        for c in calls:
            messages.append(ToolMessage(tool_call_id=c.id, name="t", content="r" * draw(st.integers(0, 300))))
        if not calls:
            messages.append(UserMessage(content="go on"))
    # a person's edit can move where a step began: a turn and its results may then have different origins
    counts, last = [], 0
    for step in steps:
        last = max(last, min(step.message_count + draw(st.integers(0, 2)), len(messages)))
        counts.append(last)
    steps = [StepRecord(index=s.index, message_count=c) for s, c in zip(steps, counts, strict=True)]
    return Run(messages=messages, steps=steps)


policy_sets = st.builds(
    ContextPolicies,
    drop_turns_older_than=st.none() | st.integers(1, 6),
    summarize_older_than=st.none() | st.integers(1, 6),
    keep_tool_results=st.none() | st.integers(0, 4),
    truncate_tool_results=st.none() | st.integers(1, 40),
)


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@settings(max_examples=150, deadline=None)
@given(random_runs(), policy_sets)
def test_no_policy_ever_separates_a_call_from_its_result(run, policies):
    for position, step in enumerate(run.steps):
        history = run.messages[: step.message_count]
        sent = project(run, policies, position)
        assert validate_messages(history) == []
        assert validate_messages(sent) == []  # every call answered, no result without its call
        first_user = next(m for m in history if isinstance(m, UserMessage))
        assert sent[0] == history[0] and first_user in sent  # the system prompt and the first user message
        ids = {c.id for m in sent if isinstance(m, AssistantMessage) for c in m.tool_calls}
        assert all(m.tool_call_id in ids for m in sent if isinstance(m, ToolMessage))


# -- configuration --------------------------------------------------------------------------


def test_policies_compose_in_the_stated_order():
    policies = policies_from(["truncate_tool_results=5", "keep_tool_results=1", "drop_turns_older_than=2"])
    assert policies.labels() == ["drop_turns_older_than=2", "keep_tool_results=1", "truncate_tool_results=5"]


class RecordingScripted(ScriptedProvider):
    """The scripted model, keeping every request it was sent (the summariser's among them)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.requests: list[ModelRequest] = []

    def complete(self, request, on_text=None):
        self.requests.append(request)
        return super().complete(request, on_text)


def test_dropping_and_summarising_together_send_the_prompt_a_summary_of_the_middle_and_the_last_turns():
    provider = RecordingScripted(scenario="research")
    policies = ContextPolicies(drop_turns_older_than=4, summarize_older_than=2)
    config = RunConfig(provider="scripted", model="research", scenario="research", max_steps=9, policies=policies)
    run = Run.start(provider.scenario.prompt, config)
    Agent(provider, get_tools(list(provider.scenario.tools))).run(run)
    assert len(run.steps) == 9

    # each model request, with the summary request made just before it
    steps: list[tuple[ModelRequest | None, ModelRequest]] = []
    pending = None
    for request in provider.requests:
        if request.messages[0] == SystemMessage(content=SUMMARY_PROMPT):
            pending = request
        else:
            steps.append((pending, request))
            pending = None
    assert len(steps) == 9

    origin = origins(run, len(run.messages))
    for index, (summary_request, request) in enumerate(steps, start=1):
        history = run.messages[: run.steps[index - 1].message_count]

        def turns(first: int, last: int, history=history) -> list:
            return [m for i, m in enumerate(history) if max(first, 1) <= origin[i] < last]  # 0: the prompt

        kept = turns(index - 2, index)  # "older than 2": the last two steps' turns go as they are
        summarised = turns(index - 4, index - 2)  # older than 2 and not older than 4: the summary's part
        if index < 4:  # nothing is older than two steps yet
            assert summary_request is None and list(request.messages) == history
            continue
        prompt, summary, *rest = request.messages
        assert prompt == run.messages[0] and rest == kept  # the older turns are neither sent nor summarised
        assert isinstance(summary, UserMessage) and summary.content.startswith(SUMMARY_HEADING)
        assert summary_request is not None
        asked = summary_request.messages[1].content
        if index == 5:  # nothing dropped yet: the summary of step 1 grows by step 2
            assert asked.endswith(f"What happened next:\n\n{transcript_text(turns(2, 3))}")
        else:  # from step 6 a dropped turn's summary must not be kept: it is written again from what is left
            assert asked == transcript_text(summarised), index
        assert run.steps[index - 1].policy_calls[0].summarised == (len(summarised) if index != 5 else 2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("keep=2", "expected NAME=VALUE"),
        ("keep_tool_results", "expected NAME=VALUE"),
        ("truncate_tool_results=0", "at least 1"),
        ("drop_turns_older_than=-1", "whole number"),
        ("cache_breakpoints=maybe", "on or off"),
    ],
)
def test_a_bad_policy_is_a_one_line_error(text, message):
    with pytest.raises(UsageError, match=message):
        parse_policy(text)


def test_the_cli_records_the_policies_in_the_transcript(tmp_path, capsys):
    out = tmp_path / "r.json"
    argv = ["run", "--provider", "scripted", "--scenario", "research", "--no-db", "--out", str(out)]
    assert cli.main([*argv, "--policy", "keep_tool_results=2", "--policy", "truncate_tool_results=30"]) == 0
    run = transcript.load(out)
    assert run.config.policies == ContextPolicies(keep_tool_results=2, truncate_tool_results=30)
    assert run.steps[-1].sent is not None
    assert cli.main([*argv, "--policy", "keep=2"]) == 2
    assert "expected NAME=VALUE" in capsys.readouterr().err


# -- Anthropic prompt caching: breakpoints checked against recorded payloads ----------------

WIRE = Path(__file__).parents[1] / "fixtures" / "wire"


def recorded(name: str) -> dict:
    return json.loads((WIRE / name).read_text(encoding="utf-8"))


def without_breakpoints(body: dict) -> dict:
    """A body with its cache_control keys removed and one-block text turns written back as strings."""
    body = json.loads(json.dumps(body))
    for t in body.get("tools", []):
        t.pop("cache_control", None)
    if isinstance(body.get("system"), list):
        body["system"] = "\n\n".join(b["text"] for b in body["system"])
    for turn in body["messages"]:
        if isinstance(turn["content"], list):
            for b in turn["content"]:
                b.pop("cache_control", None)
            if turn["role"] == "user" and [b["type"] for b in turn["content"]] == ["text"]:
                turn["content"] = turn["content"][0]["text"]
    return body


def anthropic(model: str = "claude-haiku-4-5") -> AnthropicProvider:
    return AnthropicProvider(model, api_key="test-key")


def cached(request: ModelRequest, on: bool = True) -> ModelRequest:
    """The request with prompt caching's breakpoints asked for (or not) in its settings."""
    return request.model_copy(update={"settings": Settings(cache_breakpoints=on)})


def test_cache_breakpoints_on_a_recorded_tool_turn():
    wire = recorded("anthropic_request_with_tool_result.json")
    tool = wire["tools"][0]
    call = wire["messages"][1]["content"][0]
    messages = (
        UserMessage(content=wire["messages"][0]["content"]),
        AssistantMessage(tool_calls=(ToolCall(id=call["id"], name=call["name"], arguments=call["input"]),)),
        ToolMessage(tool_call_id=call["id"], name=call["name"], content=wire["messages"][2]["content"][0]["content"]),
    )
    specs = (ToolSpec(name=tool["name"], description=tool["description"], parameters=tool["input_schema"]),)
    request = ModelRequest(messages=messages, tools=specs)
    body = anthropic().body(cached(request))
    assert breakpoints(body) == ["tools[0]", "messages[2].content[0]"]  # no system prompt here
    assert body["tools"][0]["cache_control"] == {"type": "ephemeral"}
    # nothing else changes: the body is the recorded one (less the SDK's `caller`) plus the breakpoints
    for block in wire["messages"][1]["content"]:
        block.pop("caller", None)
    assert without_breakpoints(body) == wire
    assert anthropic().body(cached(request, on=False)) == wire


def test_the_system_breakpoint_is_the_documented_block():
    docs = recorded("anthropic_cache_request_system_breakpoint.json")
    request = ModelRequest(
        messages=(SystemMessage(content=docs["system"][0]["text"]), UserMessage(content=docs["messages"][0]["content"]))
    )
    body = anthropic("claude-opus-4-7").body(cached(request))
    assert body["system"] == docs["system"]
    # the last turn's text goes as a text block, as the recorded turn 2 sends its user turns
    turn2 = recorded("anthropic_cache_request_turn2.json")["messages"][-1]
    assert body["messages"][-1]["content"][0].keys() - {"cache_control"} == turn2["content"][0].keys()
    assert len(breakpoints(body)) <= MAX_BREAKPOINTS


def test_cache_reads_and_writes_are_counted_from_the_recorded_response():
    usage = parse_usage(recorded("anthropic_cache_response_turn2.json")["usage"])
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (3 + 418 + 1111, 1111, 418)


def test_the_run_policy_turns_the_breakpoints_on_and_off_in_the_request_settings():
    config = RunConfig(provider="anthropic", policies=ContextPolicies(cache_breakpoints=True))
    assert request_settings(config).cache_breakpoints
    assert request_settings(config, Settings(max_tokens=5)).cache_breakpoints
    assert not request_settings(config.model_copy(update={"policies": None})).cache_breakpoints
    assert not request_settings(config.model_copy(update={"policies": ContextPolicies()})).cache_breakpoints


# -- the context-window gauge --------------------------------------------------------------


def test_each_step_fills_its_share_of_the_window():
    gauges = step_gauges(research(), window=1000)
    assert [g.tokens for g in gauges] == BASELINE
    assert [g.share for g in gauges] == [t / 1000 for t in BASELINE]
    assert [g.level for g in gauges] == ["ok"] * 9 + ["warn"]  # 939 tokens: past 90%
    assert gauges[-1].words == "939 of 1,000 tokens (94%)"
    assert Gauge(11, 1001, 1000).level == "over" and Gauge(1, 5, None).level == "unknown"


@pytest.mark.parametrize("policy", [{}, {"keep_tool_results": 2}, {"drop_turns_older_than": 2}])
def test_the_next_request_is_gauged_before_it_is_sent(policy):
    before = research(max_steps=6, **policy)
    after = research(max_steps=7, **policy)
    gauge = next_gauge(before, window=after.steps[6].usage.input_tokens)
    assert gauge.step == 7 and gauge.tokens == after.steps[6].usage.input_tokens and gauge.share == 1.0
    assert next_gauge(before, window=gauge.tokens - 1).level == "over"  # the warning comes before the call


def test_the_window_is_the_catalogues_or_the_embedded_models_n_ctx():
    run = Run.start("hi", RunConfig(provider="anthropic", model="claude-haiku-4-5"))
    assert window_of(run) == context_window("anthropic", "claude-haiku-4-5") and window_of(run) >= 100_000
    assert window_of(Run.start("hi", RunConfig(provider="scripted", model="research"))) is None
    try:
        from agentcore.providers.local import LocalProvider

        local = LocalProvider(n_ctx=1000, preload=False)
    except (ImportError, UsageError) as exc:
        pytest.skip(f"the local provider is not installed: {exc}")
    assert window_of(Run.start("hi", RunConfig(provider="local")), local) == local.n_ctx == 1024


# -- the app: the cost page and the comparison one click away -------------------------------


def test_the_cost_page_draws_measured_beside_projected_and_opens_the_comparison(open_app):
    from ui.state import Session

    session = Session()
    run = research(drop_turns_older_than=3)
    session.add_run(run)
    at = open_app("views/cost.py", session=session)
    figures = {json.loads(c.proto.spec)["layout"]["title"]["text"]: c for c in at.get("plotly_chart")}
    chart = json.loads(figures["Measured against projected: cumulative input"].proto.spec)
    names = [t["name"] for t in chart["data"]]
    assert names == [
        "measured, with drop_turns_older_than=3",
        "what-if projection of the same policy",
        "the same run without it (whole history)",
    ]
    measured, projected, whole = (t["y"] for t in chart["data"])
    assert measured[-1] == sum(s.usage.input_tokens for s in run.steps) and projected == measured
    assert whole[-1] == sum(
        sent_tokens(
            Run(
                messages=run.messages, steps=[s.model_copy(update={"sent": None}) for s in run.steps], config=run.config
            )
        )
    )
    at.button(key="cost_compare_policy").click().run()
    assert not at.exception, at.exception
    assert at.session_state["cmp_provider_1"] == "scripted" and at.session_state["cmp_scenario_1"] == "research"
    assert at.session_state["compare_state"].policies == {1: ContextPolicies(drop_turns_older_than=3).model_dump()}
    assert any("Compare" in m.value for m in at.main.markdown)  # the compare page is drawn


def test_a_comparison_runs_one_column_with_the_policy_and_one_without():
    from agentcore.compare import ColumnSpec, Comparison

    scenario = ScriptedProvider(scenario="research").scenario
    specs = [ColumnSpec("scripted", "research")] * 2
    comparison = Comparison(scenario.prompt, specs, tools=get_tools(list(scenario.tools)), max_steps=30)
    with_policies(comparison, {1: {"keep_tool_results": 3}})
    comparison.run_all()
    without, with_ = comparison.runs
    assert [s.usage.input_tokens for s in without.steps] == BASELINE
    assert [s.usage.input_tokens for s in with_.steps] == [137, 208, 306, 399, 437, 470, 510, 547, 570, 585]
    assert "keep_tool_results=3" in comparison.columns[1].label


def test_the_sidebar_policies_shape_the_playground_run(open_app):
    at = open_app()
    at.selectbox(key="cfg_scenario").set_value("research").run()
    at.session_state["cfg_policy_keep"] = 3
    at.run()
    at.button(key="start").click().run()
    at.button(key="run_to_end").click().run()
    assert not at.exception, at.exception
    run = at.session_state["session"].run
    assert run.config.policies == ContextPolicies(keep_tool_results=3)
    assert [s.usage.input_tokens for s in run.steps] == [137, 208, 306, 399, 437, 470, 510, 547, 570, 585]


# -- the message list's marks and the cache an edit would break -------------------------------


def test_the_message_list_marks_what_the_next_request_leaves_out():
    run = research(max_steps=5, keep_tool_results=1, drop_turns_older_than=3)
    marks = next_marks(run)
    assert len(marks) == len(run.messages) and marks[0] == "sent"
    assert marks[1:3] == ["dropped", "dropped"]  # step 1's call and its result, together
    results = [mark for m, mark in zip(run.messages, marks, strict=True) if isinstance(m, ToolMessage)]
    assert results[-1] == "sent" and results.count("sent") == 1
    assert "left out of the next request" in message_badge(run, 1)
    plain = research(max_steps=5)
    assert next_marks(plain) == ["sent"] * len(plain.messages)


def cached_run() -> Run:
    """Three Anthropic steps, the last of which read the first two's prefix from the cache."""
    messages = [SystemMessage(content="be brief"), UserMessage(content="look it up")]
    steps = []
    for k in range(3):
        usage = Usage(input_tokens=2000 + 100 * k, cache_read_tokens=1900 if k == 2 else 0)
        steps.append(StepRecord(index=k + 1, message_count=len(messages), usage=usage))
        call = ToolCall(id=f"c{k}", name="read", arguments={})
        messages += [AssistantMessage(tool_calls=(call,)), ToolMessage(tool_call_id=f"c{k}", name="read", content="x")]
    return Run(config=RunConfig(provider="anthropic", model="claude-haiku-4-5"), messages=messages, steps=steps)


def test_an_edit_inside_the_cached_prefix_says_it_breaks_the_cache():
    run = cached_run()
    assert cached_prefix(run) == 6  # what the last step sent, all of it read from the cache
    assert CACHED_BADGE in message_badge(run, 5) and CACHED_BADGE not in message_badge(run, 6)
    edited = list(run.messages)
    edited[3] = edited[3].model_copy(update={"content": "y"})
    assert "changes message 3, inside the cached prefix of 6 messages" in breaks_cache(run, edited)
    later = [*run.messages[:7], ToolMessage(tool_call_id="c2", name="read", content="edited")]
    assert breaks_cache(run, later) is None  # past the cached prefix: the cache is still read
    run.steps[-1].usage = Usage(input_tokens=2200)
    assert cached_prefix(run) == 0 and breaks_cache(run, edited) is None  # nothing cached, nothing to break


def test_the_cost_page_charges_the_summariser_and_charts_cached_tokens(open_app):
    from ui.state import Session

    run = research(max_steps=8, summarize_older_than=3)
    cached = cached_run()
    session = Session()
    session.add_run(cached)
    session.add_run(run)
    at = open_app("views/cost.py", session=session)
    calls = [c for s in run.steps for c in s.policy_calls]
    total_in = sum(c.usage.input_tokens for c in calls)
    assert any(f"The summariser read {total_in:,} and wrote" in c.value for c in at.caption)
    session.current_id = cached.id
    at.run()
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert "Cached tokens per step" in titles
    chart = next(
        json.loads(c.proto.spec)
        for c in at.get("plotly_chart")
        if json.loads(c.proto.spec)["layout"]["title"]["text"] == "Cached tokens per step"
    )
    reads = next(t for t in chart["data"] if t["name"] == "cache read (reported)")
    assert reads["y"] == [0, 0, 1900]
    assert any(t.startswith("Share of the") for t in titles)  # claude-haiku-4-5's window is known


def test_the_cost_pages_cache_write_bars_stand_beside_the_read_bars_each_from_its_own_count(open_app):
    from ui.state import Session

    run = cached_run()
    run.steps[0].usage = run.steps[0].usage.model_copy(update={"cache_write_tokens": 1900})
    session = Session()
    session.add_run(run)
    at = open_app("views/cost.py", session=session)
    chart = next(
        json.loads(c.proto.spec)
        for c in at.get("plotly_chart")
        if json.loads(c.proto.spec)["layout"]["title"]["text"] == "Cached tokens per step"
    )
    bars = {t["name"]: t["y"] for t in chart["data"] if t["type"] == "bar"}
    assert bars == {"cache write (reported)": [1900, 0, 0], "cache read (reported)": [0, 0, 1900]}
    assert chart["layout"]["barmode"] == "group"  # beside each other, not stacked


def _panel_page(n_ctx: int, draft_edit: bool) -> None:
    import sys

    sys.path.insert(0, "tests")
    from test_policies import cached_run, research

    from ui.policy_view import render_panel
    from ui.state import AppConfig

    run = research(max_steps=5, keep_tool_results=1)
    run.config = run.config.model_copy(update={"provider": "local", "max_steps": 10})
    render_panel(run, None, AppConfig(provider="local", n_ctx=n_ctx))
    cached = cached_run()
    draft = [m.model_copy(update={"content": "y"}) if i == 3 else m for i, m in enumerate(cached.messages)]
    render_panel(cached, draft if draft_edit else None)


def test_the_playground_panel_warns_before_an_overflow_and_a_broken_cache():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_panel_page, kwargs={"n_ctx": 256, "draft_edit": True}).run()
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning]
    assert any("more than the model's context window of 256" in w for w in warnings)
    assert any("inside the cached prefix of 6 messages" in w for w in warnings)
    table = at.dataframe[0].value
    assert list(table["in the request"]).count("sent as a placeholder") == 3  # step 5 sent 4 results, 1 kept
    at = AppTest.from_function(_panel_page, kwargs={"n_ctx": 100_000, "draft_edit": False}).run()
    assert not at.warning and any("Next request:" in c.value and "of 100,000 tokens" in c.value for c in at.caption)


def test_a_failed_summary_stops_the_step_and_keeps_the_run():
    from support.servers import free_port

    run = research(max_steps=4)
    before = list(run.messages)
    run.config = run.config.model_copy(update={"max_steps": 10, "policies": ContextPolicies(summarize_older_than=1)})
    dead = OpenAIProvider("gpt-4o-mini", base_url=f"http://127.0.0.1:{free_port()}/v1", api_key="k", max_retries=0)
    assert Agent(dead, get_tools(["search_notes", "read_note"])).model_phase(run) == "model"
    assert run.stop_reason == "error" and run.error.startswith("summarising the older turns: openai")
    assert len(run.steps) == 4 and run.messages == before


def test_the_breakpoints_go_over_the_wire_to_a_messages_api_server(katan):
    provider = AnthropicProvider("claude-haiku-4-5", base_url=katan.url, api_key="katan-key")
    config = RunConfig(
        provider="anthropic",
        model="claude-haiku-4-5",
        system_prompt="Be brief.",
        max_steps=2,
        policies=ContextPolicies(cache_breakpoints=True),
    )
    run = Run.start("What is the weather in Paris?", config)
    Agent(provider, get_tools(["get_weather"])).run(run)
    assert len(run.steps) == 2 and run.stop_reason != "error", run.error
    sent = run.steps[1].wire.request
    assert breakpoints(sent) == ["tools[0]", "system[0]", "messages[2].content[0]"]
    assert sent["system"] == [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]


def test_the_playground_marks_what_the_next_request_leaves_out(open_app):
    at = open_app()
    at.selectbox(key="cfg_scenario").set_value("research").run()
    at.session_state["cfg_policy_keep"] = 1
    at.run()
    at.button(key="start").click().run()
    for _ in range(4):
        at.button(key="step").click().run()
    assert not at.exception, at.exception
    run = at.session_state["session"].run
    shown = "\n".join(m.value for m in at.markdown)
    assert shown.count("cleared in the next request") == 3  # four results so far, the last one kept
    assert any(c.value.startswith("Next request:") for c in at.caption)
    table = at.dataframe[0].value  # step 4's request beside the history
    assert list(table["in the request"]).count("sent as a placeholder") == 2
    assert len(run.steps) == 4


@pytest.mark.parametrize("value", ["²", "١٢", "½"])
def test_a_number_in_other_digits_is_a_one_line_usage_error(value, capsys):
    argv = ["run", "x", "--provider", "scripted", "--no-db", "--policy", f"keep_tool_results={value}"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "takes a whole number" in err and "\n" not in err


def test_a_summary_placed_past_the_history_is_refused_below_and_shown_last_above():
    from pydantic import ValidationError

    from ui.policy_view import request_beside_history

    with pytest.raises(ValidationError):
        SentRequest(summary="x", summary_after=-1)
    run = research(summarize_older_than=3)
    step = run.steps[4]
    assert step.sent is not None and step.sent.summary is not None
    data = transcript.to_dict(run)
    data["steps"][4]["sent"]["summary_after"] = 99
    loaded = transcript.from_dict(data)
    request_beside_history(loaded, 5)  # draws without a running app; raised IndexError before
    data["steps"][4]["sent"]["summary_after"] = -1
    with pytest.raises(TranscriptError, match=r"steps\[4\]\.sent\.summary_after"):
        transcript.from_dict(data)


class _BrokenSummariser(ScriptedProvider):
    """Answers as the research scenario, but its summary calls fail with a plain error."""

    def complete(self, request, on_text=None):
        if request.messages[0].text == SUMMARY_PROMPT:
            raise RuntimeError("the summariser broke\nwith a second line")
        return super().complete(request, on_text)


def test_a_summariser_that_raises_a_plain_error_fails_the_step_and_keeps_the_run():
    run = research(max_steps=4)
    before, steps = list(run.messages), [s.model_copy(deep=True) for s in run.steps]
    run.config = run.config.model_copy(update={"max_steps": 10, "policies": ContextPolicies(summarize_older_than=1)})
    provider = _BrokenSummariser(scenario="research")
    assert Agent(provider, get_tools(list(provider.scenario.tools))).model_phase(run) == "model"
    assert run.stop_reason == "error" and run.error.startswith("summarising the older turns: scripted: RuntimeError")
    assert "\n" not in run.error
    assert run.steps == steps and run.messages == before


class _SettingsSeen(ScriptedProvider):
    """Answers as the research scenario, noting for each call whether it was the summary's and its caching."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.seen: list[tuple[bool, bool]] = []

    def complete(self, request, on_text=None):
        self.seen.append((request.messages[0].text == SUMMARY_PROMPT, request.settings.cache_breakpoints))
        return super().complete(request, on_text)


def test_the_run_asks_for_cache_breakpoints_but_its_summary_calls_do_not():
    provider = _SettingsSeen(scenario="research")
    config = RunConfig(
        provider="scripted",
        model="research",
        max_steps=4,
        policies=ContextPolicies(summarize_older_than=1, cache_breakpoints=True),
    )
    Agent(provider, get_tools(list(provider.scenario.tools))).run(Run.start(provider.scenario.prompt, config))
    assert set(provider.seen) == {(False, True), (True, False)}  # each summary is new text: nothing to reuse

"""Every dialect's request bodies, for every bundled scenario, are bodies the vendor's own SDK types accept.

Each scenario runs through the loop (the CLI, scripted model) and is exported with agentcore.exports;
the body is validated with pydantic against the `openai`, `anthropic` and `ollama` packages' request
types, and nothing in it may be a key those types do not know (validation drops unknown keys, so a
dropped key is reported). The SDKs are test-only dependencies (the `test` extra).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.sdk import (
    needs_sdk,
    sdk_problems,
)

from agentcore import cli, transcript
from agentcore.exports import WIRE_FORMATS, export_run
from agentcore.providers.scripted import SCENARIOS
from agentcore.run import Run

MAX_TOKENS = 200


@pytest.fixture(scope="module")
def finished_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Each bundled scenario run to its end through the CLI, with the run's own --max-tokens."""
    folder = tmp_path_factory.mktemp("scenarios")
    runs = {}
    for name in SCENARIOS:
        path = folder / f"{name}.json"
        args = [
            "run",
            "--provider",
            "scripted",
            "--scenario",
            name,
            "--max-tokens",
            str(MAX_TOKENS),
            "--out",
            str(path),
        ]
        cli.main(args)  # exits 3 when the runaway scenario hits the step budget: the run is saved all the same
        runs[name] = transcript.load(path)
    return runs


def exported(run: Run, fmt: str) -> dict[str, Any]:
    return json.loads(export_run(run, fmt))


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@pytest.mark.parametrize("fmt", WIRE_FORMATS)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_scenario_exports_a_body_the_vendor_sdk_accepts(finished_runs, scenario: str, fmt: str):
    needs_sdk(fmt)
    body = exported(finished_runs[scenario], fmt)
    assert sdk_problems(fmt, body) == []


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
def test_reasoning_settings_and_streaming_bodies_are_accepted_too(finished_runs, fmt: str):
    needs_sdk(fmt)
    from agentcore.exports import export_request

    run = finished_runs["weather"].model_copy(deep=True)
    run.config = run.config.model_copy(update={"thinking_budget": 2048, "reasoning_effort": "high"})
    if (
        fmt != "anthropic"
    ):  # the current anthropic SDK's types have no temperature (the API version it sends refuses it)
        run.config = run.config.model_copy(update={"temperature": 0.5})
    # models that take all of these settings: the defaults refuse some (see test_model_rules.py)
    model = {"openai": "gpt-5.4-mini", "openai-responses": "gpt-5.4-mini", "anthropic": "claude-opus-4-6"}.get(fmt)
    for stream in (False, True):
        body = export_request(run, fmt, model=model, stream=stream)
        assert sdk_problems(fmt, body) == [], stream


def test_a_key_the_sdk_does_not_know_is_reported():
    needs_sdk("anthropic")
    needs_sdk("ollama")
    assert sdk_problems("ollama", {"model": "m", "messages": [{"role": "tool", "content": "r", "tool_id": "x"}]}) == [
        ".messages[0].tool_id: not a field of the ollama SDK's request type"
    ]
    body = {"model": "claude-haiku-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi", "x": 1}]}
    assert sdk_problems("anthropic", body) == [".messages[0].x: not a field of the anthropic SDK's request type"]
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": [{"type": "nonesuch"}]}]}
    assert sdk_problems("anthropic", body)


def test_a_finished_run_does_not_export_a_prefill_for_anthropic(finished_runs):
    for name, run in finished_runs.items():
        if run.stop_reason != "answer":
            continue
        assert run.messages[-1].role == "assistant"
        body = exported(run, "anthropic")
        assert body["messages"][-1]["role"] == "user", name
        assert exported(run, "openai")["messages"][-1]["role"] == "assistant"  # other dialects keep the whole run


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
def test_an_export_keeps_the_runs_own_max_tokens(finished_runs, fmt: str):
    run = finished_runs["weather"]
    assert run.config.max_tokens == MAX_TOKENS
    body = exported(run, fmt)
    sent = {
        "openai": lambda b: b["max_completion_tokens"],  # what OpenAI's reasoning models take, not max_tokens
        "openai-responses": lambda b: b.get("max_output_tokens"),
        "anthropic": lambda b: b.get("max_tokens"),
        "ollama": lambda b: b.get("options", {}).get("num_predict"),
    }[fmt](body)
    assert sent == MAX_TOKENS


def test_the_scenarios_cover_every_message_kind(finished_runs):
    roles = {m.role for run in finished_runs.values() for m in run.messages}
    assert roles >= {"user", "assistant", "tool"}
    assert any(m.role == "tool" and m.is_error for run in finished_runs.values() for m in run.messages)
    assert any(len(getattr(m, "tool_calls", ())) > 1 for run in finished_runs.values() for m in run.messages)


def test_a_run_on_a_compatible_server_exports_the_max_tokens_it_sent(finished_runs):
    run = finished_runs["weather"].model_copy(deep=True)
    run.config = run.config.model_copy(update={"provider": "openai", "base_url": "http://127.0.0.1:8080/v1"})
    body = exported(run, "openai")
    assert body["max_tokens"] == MAX_TOKENS and "max_completion_tokens" not in body


def test_a_resumed_run_sends_its_own_max_tokens(finished_runs):
    from agentcore.loop import Agent
    from agentcore.providers.scripted import ScriptedProvider

    seen = []

    class Recording(ScriptedProvider):
        def complete(self, request, on_text=None):
            seen.append(request.settings.max_tokens)
            return super().complete(request, on_text)

    run = finished_runs["weather"].model_copy(deep=True)
    run.messages = run.messages[:1]
    run.steps, run.stop_reason = [], None
    Agent(Recording(scenario="weather")).model_phase(run)  # an agent made without the run's settings
    assert seen == [MAX_TOKENS]

"""A proxied run is an ordinary run: the library's figures count it, Cost prices it, it exports and forks."""

from __future__ import annotations

import json

import pytest
from support.proxy_rig import KEY
from support.stand_in import Reply

from agentcore.accounting import account
from agentcore.exports import export_json, export_otlp
from agentcore.store.stats import library_stats

openai = pytest.importorskip("openai", reason="the openai package is not installed (pip install '.[test]')")


def test_a_proxied_run_is_counted_priced_exported_and_forked(rig_of):
    rig = rig_of(Reply.fixture("openai_parallel_tool_calls.json"), Reply.chat("Both sunny."))
    sdk = openai.OpenAI(api_key=KEY, base_url=f"{rig.url}/v1", max_retries=0)
    messages = [{"role": "user", "content": "Weather in Paris and London?"}]
    first = sdk.chat.completions.create(model="gpt-4o-mini", messages=messages)
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages += [
        {"role": "tool", "tool_call_id": c.id, "content": "sunny"} for c in first.choices[0].message.tool_calls
    ]
    sdk.chat.completions.create(model="gpt-4o-mini", messages=messages)
    [run] = rig.runs()
    [group] = library_stats(rig.store, by=("model",))
    assert (group.runs, group.steps, group.answered_runs) == (1, 2, 1)
    assert group.input_tokens == sum(s.usage.input_tokens for s in run.steps) > 0
    report = account(run)
    assert len(report.steps) == 2 and report.price_note is None
    exported = json.loads(export_json(run))
    assert exported["steps"][1]["wire"]["request"] == rig.upstream.bodies()[1]
    assert "gen_ai" in export_otlp(run)
    fork = run.fork(2)
    assert [m.role for m in fork.messages] == ["user", "assistant", "tool", "tool"]
    rig.store.save_run(fork)
    assert rig.store.load_run(fork.id).parent.run_id == run.id

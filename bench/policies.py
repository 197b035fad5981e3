"""Context policies on the scripted research scenario: cumulative input measured against projected.

    .venv/bin/python bench/policies.py               # 30 steps, the what-if page's default settings
    .venv/bin/python bench/policies.py --max-steps 20 --policy keep_tool_results=1

For each policy: the run made without any policy, the run made with it (measured, and the summariser's own
input where it calls the model), and the what-if projection of the same policy over the run without it.
The scripted model's usage is the estimate of exactly what it was sent, so the numbers are exact and
do not depend on the machine. A policy can change what the model does next (it no longer sees what it
dropped), which is why measured and projected differ.
"""

from __future__ import annotations

import argparse

from agentcore import Agent, Run, RunConfig, ScriptedProvider
from agentcore.accounting import account
from agentcore.policies import ContextPolicies, parse_policy
from agentcore.toolbox import get_tools
from agentcore.whatif import projected_input

DEFAULT_POLICIES = (
    "keep_tool_results=3",
    "truncate_tool_results=50",
    "drop_turns_older_than=3",
    "summarize_older_than=3",
)


def research_run(policies: ContextPolicies | None, max_steps: int) -> Run:
    """The scripted research scenario run to its end or its step budget under `policies`."""
    provider = ScriptedProvider(scenario="research")
    config = RunConfig(
        provider="scripted", model="research", scenario="research", max_steps=max_steps, policies=policies
    )
    run = Run.start(provider.scenario.prompt, config)
    Agent(provider, get_tools(list(provider.scenario.tools))).run(run)
    return run


def table(texts: list[str], max_steps: int) -> list[list[str]]:
    """One row per policy: steps, measured cumulative input, summariser input, projection, and the baseline."""
    base = research_run(None, max_steps)
    base_report = account(base)
    total = f"{base_report.total_input_tokens:,}"
    rows = [["none", str(len(base.steps)), total, total, "", "", ""]]
    for text in texts:
        policies = ContextPolicies(**dict([parse_policy(text)]))
        run = research_run(policies, max_steps)
        report = account(run)
        measured = report.total_input_tokens
        same = report.steps[min(len(base.steps), len(report.steps)) - 1].cumulative_input_tokens
        summariser = sum(c.usage.input_tokens for s in run.steps for c in s.policy_calls)
        projected = sum(projected_input(base, base_report, policies))
        saving = (base_report.total_input_tokens - measured) / base_report.total_input_tokens * 100
        rows.append(
            [
                text,
                str(len(run.steps)),
                f"{measured:,}",
                f"{same:,}",
                f"{summariser:,}" if summariser else "",
                f"{projected:,}",
                f"{-saving:+.0f}%",
            ]
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--policy", action="append", help="NAME=VALUE; repeatable (default: four policies)")
    args = parser.parse_args(argv)
    head = [
        "policy",
        "steps",
        "measured input",
        "measured, first steps of none",
        "summariser input",
        "what-if projection",
        "measured vs none",
    ]
    print(f"scripted research scenario, step budget {args.max_steps}; cumulative input tokens\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in table(args.policy or list(DEFAULT_POLICIES), args.max_steps):
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()

"""Finished runs made by agentcore's loop on the scripted model, for the tests of what reads them."""

from __future__ import annotations

from agentcore import Agent, Run, RunConfig, ScriptedProvider, ToolDecision, toolbox
from agentcore.messages import AssistantMessage, Message, ToolCall, ToolMessage, Usage, UserMessage
from agentcore.providers import create_provider
from agentcore.providers.scripted import SCENARIOS, get_scenario
from agentcore.steps import StepRecord
from agentcore.toolbox import TOOLBOX, get_tools

FIVE = ("weather", "weather", "runaway", "tool_error", "research")


def scripted_run(scenario: str) -> Run:
    """A finished run of a bundled scenario, made by agentcore's loop (the runaway one stops at its budget)."""
    sc = get_scenario(scenario)
    tools = toolbox.get_tools(",".join(sc.tools))
    config = RunConfig(provider="scripted", model=scenario, scenario=scenario, tools=[t.spec() for t in tools])
    run = Run.start(sc.prompt, config)
    Agent(create_provider("scripted", scenario, scenario=scenario), tools).run(run)
    return run


def priced_run(steps: list[tuple[int, int, int, float]], stop: str = "answer", model: str = "gpt-4o-mini") -> Run:
    """An OpenAI run whose steps recorded (input, output, cache-read tokens, latency ms)."""
    run = Run.start("Hello?", RunConfig(provider="openai", model=model))
    for i, (inp, out, cached, ms) in enumerate(steps, start=1):
        usage = Usage(input_tokens=inp, output_tokens=out, cache_read_tokens=cached)
        step = StepRecord(index=i, provider="openai", model=model, usage=usage, latency_ms=ms)
        step.message_count = len(run.messages)
        run.steps.append(step)
        run.messages.append(AssistantMessage(content=f"answer {i}"))
        if i < len(steps):
            run.messages.append(UserMessage(content="and then?"))
    run.stop_reason = stop
    return run


def weather_run(**config) -> Run:
    scenario = SCENARIOS["weather"]
    run = Run.start(
        scenario.prompt, RunConfig(provider="scripted", model="weather", system_prompt="Be brief.", **config)
    )
    Agent(ScriptedProvider("weather"), get_tools(list(scenario.tools))).run(run)
    return run


def decided_run() -> Run:
    """A run paused before its tools, where a person edited one call, denied one and typed one result."""
    run = weather_run(pause_before_tools=True)
    calls = run.messages[-1].tool_calls
    decisions = {
        calls[0].id: ToolDecision(action="edit", arguments={"city": "Lyon"}),
        calls[1].id: ToolDecision(action="deny", reason="not Rome"),
        calls[2].id: ToolDecision(action="result", content="Tokyo: 30 degrees, typed by hand"),
    }
    scenario = SCENARIOS["weather"]
    agent = Agent(ScriptedProvider("weather"), get_tools(list(scenario.tools)))
    agent.step(run, decisions)
    agent.run(run)
    return run


def titled_run(prompt: str, title: str, parent: Run | None = None) -> Run:
    """A run of one step on the scripted model, or a fork of `parent` from its end."""
    if parent is not None:
        return parent.fork_with_messages(list(parent.messages), keep_later=True)
    run = Run.start(prompt, RunConfig(scenario="weather", model="weather", tools=[TOOLBOX["get_weather"].spec()]))
    run.title = title
    Agent(ScriptedProvider(scenario="weather"), [TOOLBOX["get_weather"]]).step(run)
    return run


def decisions_run() -> Run:
    """A run whose five calculator calls a person approved, edited, denied, typed, then one result changed."""
    calls = [ToolCall(id=c, name="calculator", arguments={"expression": f"{n}+{n}"}) for n, c in enumerate("abcd")]
    provider = ScriptedProvider(replay=[AssistantMessage(tool_calls=calls), AssistantMessage(content="ok")])
    agent = Agent(provider, toolbox.get_tools("calculator"))
    run = Run.start("x", RunConfig(pause_before_tools=True))
    agent.step(run)
    decisions = {
        "b": ToolDecision(action="edit", arguments={"expression": "10*10"}),
        "c": ToolDecision(action="deny", reason="not now"),
        "d": ToolDecision(action="result", content="typed by hand"),
    }
    agent.tools_phase(run, decisions)
    run.steps[0].tool_runs[0].result_edited("0+0 = 0")  # a person changed the approved call's result afterwards
    agent.step(run)
    return run


def made_run(replies: list[Message | list[ToolMessage]], tools=("calculator",), **config) -> Run:
    """A run of these replies, each followed by its tool results (a list) where the next item is one."""
    specs = [TOOLBOX[t].spec() for t in tools]
    run = Run.start("What is 17 × 23?", RunConfig(provider="scripted", model="made", tools=specs, **config))
    for item in replies:
        if isinstance(item, list):
            run.messages.extend(item)
            continue
        run.steps.append(StepRecord(index=len(run.steps) + 1, message_count=len(run.messages)))
        run.messages.append(item)
    run.stop_reason = "answer"
    return run

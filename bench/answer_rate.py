"""How often the embedded model answers a tool question correctly, on a fixed set of prompts.

Each prompt needs one or two calls of the built-in tools; a person would accept the final answer
when it holds the number the tools gave (the weather tool's temperature for that city, the
calculator's result). Every run is the model's own: nothing here steers it towards a prompt, a
tool or an answer. `measure()` returns rows per way of prompting (see STYLES); run alone:

    .venv/bin/python bench/answer_rate.py             # every style, set 1, the loop guard off and on
    .venv/bin/python bench/answer_rate.py --quick     # the default style, the first 4 prompts
    .venv/bin/python bench/answer_rate.py --set both --style default --loop-guard off --loop-guard guard

There are two sets of 12 prompts. Set 1 is the one the chat format was tuned on; set 2 was written
afterwards and set aside ("held out"): nothing is changed to make set 2 answer better, so its figure
says how the tuning carries over to questions it never saw.

With the loop guard off and on in one invocation (the default), the guard-on table runs again only
the prompts whose unguarded run made the same call twice: sampling is greedy and seeded, and the
guard acts only on a repeat, so every other run would be the same run (its "run again" column).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from agentcore import Agent, Run, RunConfig, toolbox  # noqa: E402
from agentcore.hooks.guard import LOOP_GUARDS, most_repeated  # noqa: E402
from agentcore.messages import AssistantMessage  # noqa: E402
from agentcore.providers.local import LocalProvider  # noqa: E402
from agentcore.providers.local_chat import CALL_CLOSE, CALL_OPEN, ChatStyle  # noqa: E402
from agentcore.steps import LoopGuard  # noqa: E402

MAX_STEPS = 5
TOOLS = "get_weather,calculator"


def _temperature(city: str, *units: str) -> tuple[float, ...]:
    """The weather tool's temperature for the city, in the units given (default: either unit it offers)."""
    weather = toolbox.TOOLBOX["get_weather"].fn
    return tuple(weather(city, unit)["temperature"] for unit in units or ("celsius", "fahrenheit"))


def _calc(expression: str) -> tuple[float, ...]:
    return (float(toolbox.TOOLBOX["calculator"].fn(expression).rsplit("=", 1)[1]),)


@dataclass(frozen=True)
class Case:
    """A prompt, and the numbers an accepted answer holds (computed by the tools themselves): one of each tuple."""

    prompt: str
    expected: Callable[[], list[tuple[float, ...]]]


# Set 1: the prompts the chat format was tuned on.
CASES = [
    Case("What is the weather in Paris?", lambda: [_temperature("Paris")]),
    Case("What is 17 * 23?", lambda: [_calc("17 * 23")]),
    Case("How warm is it in Tokyo today?", lambda: [_temperature("Tokyo")]),
    Case("Calculate 1234 + 5678.", lambda: [_calc("1234 + 5678")]),
    Case("What's the temperature in Berlin right now?", lambda: [_temperature("Berlin")]),
    Case("What is the square root of 1764?", lambda: [_calc("sqrt(1764)")]),
    Case("Use the weather tool: what is the weather like in Madrid?", lambda: [_temperature("Madrid")]),
    Case("What is 2 to the power of 20?", lambda: [_calc("2 ** 20")]),
    Case("Tell me the current weather in London.", lambda: [_temperature("London")]),
    Case("Compute (45 + 55) * 12.", lambda: [_calc("(45 + 55) * 12")]),
    Case("What is the weather in Rome and in Oslo?", lambda: [_temperature("Rome"), _temperature("Oslo")]),
    Case("What is 144 / 12, and what is 99 * 3?", lambda: [_calc("144 / 12"), _calc("99 * 3")]),
]

# Set 2, held out: written before any change to the chat format and never tuned on. Other wordings,
# a unit asked for (then only that unit counts), and questions that need two calls, of one tool or both.
HELD_OUT = [
    Case("How hot is it in Cairo, in Fahrenheit?", lambda: [_temperature("Cairo", "fahrenheit")]),
    Case("What's 15% of 240?", lambda: [_calc("240 * 15 / 100")]),
    Case("I'm packing for Sydney. What temperature is it there today?", lambda: [_temperature("Sydney")]),
    Case("Multiply 58 by 7.", lambda: [_calc("58 * 7")]),
    Case("Give me the temperature in Lisbon in degrees Celsius.", lambda: [_temperature("Lisbon", "celsius")]),
    Case("What do I get if I divide 1000 by 8?", lambda: [_calc("1000 / 8")]),
    Case("Is it cold in Helsinki at the moment?", lambda: [_temperature("Helsinki")]),
    Case("What is 3.5 times 12.4?", lambda: [_calc("3.5 * 12.4")]),
    Case("Check the weather in Vienna and in Prague for me.", lambda: [_temperature("Vienna"), _temperature("Prague")]),
    Case("How much is 250 minus 87? Then multiply that by 3.", lambda: [_calc("(250 - 87) * 3")]),
    Case(
        "What is the temperature in Dubai, and how many hours are in 365 days?",
        lambda: [_temperature("Dubai"), _calc("365 * 24")],
    ),
    Case(
        "What is the temperature in Toronto in Celsius, and what is it in Kelvin (add 273.15)?",
        lambda: [_calc(f"{_temperature('Toronto', 'celsius')[0]} + 273.15")],
    ),
]
SETS = {"1": CASES, "2": HELD_OUT}

CALL_FIRST = (
    "Never guess what a tool would return: when a tool can answer the question, first reply with only "
    + CALL_OPEN
    + '{"name": <tool name>, "arguments": <JSON object>}'
    + CALL_CLOSE
    + ". The result comes back in the next message; then answer the user in plain words, with the numbers it gave."
)

# A worked example with a tool that is not offered, so it shows the form and steers no prompt here.
EXAMPLE = (
    "\n\nFor example, given a tool lookup(word) and the question \"What does 'ephemeral' mean?\", first reply "
    + CALL_OPEN
    + '{"name": "lookup", "arguments": {"word": "ephemeral"}}'
    + CALL_CLOSE
    + ", then, after its result, answer in plain words."
)

# Each way of prompting that was tried, kept or not; the first is the provider's default.
STYLES: dict[str, dict] = {
    "agentcore: a call required first, results written into the assistant's open turn as plain lines (the default)": {},
    "agentcore: a call required first, results as user turns of plain lines (the default before)": {
        "chat_style": ChatStyle(tool_role="user", plain_results=True, call_first=True)
    },
    "agentcore: tool role, instructions, grammar": {"chat_style": ChatStyle()},
    "agentcore: tool results as user turns": {"chat_style": ChatStyle(tool_role="user")},
    "agentcore: call-first instructions": {"chat_style": ChatStyle(instructions=CALL_FIRST)},
    "agentcore: call-first instructions and an example": {"chat_style": ChatStyle(instructions=CALL_FIRST + EXAMPLE)},
    "agentcore: a call required before the first answer": {"chat_style": ChatStyle(call_first=True)},
    "agentcore: the default before, with a repeat penalty of 1.1": {
        "chat_style": ChatStyle(tool_role="user", plain_results=True, call_first=True, repeat_penalty=1.1)
    },
    "chatml-function-calling (before)": {"chat_format": "chatml-function-calling"},
    "agentcore: SmolLM2's own tool format, a call required first, results as user turns of plain lines": {
        "chat_style": ChatStyle(tool_role="user", plain_results=True, call_first=True, tool_format="smollm2")
    },
}

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def accepted(answer: str, expected: list[tuple[float, ...]]) -> bool:
    """Whether one number of each expected tuple appears in the answer (to its first decimal, commas allowed)."""
    found = []
    for text in _NUMBER.findall(answer):
        try:
            found.append(float(text.replace(",", "")))
        except ValueError:
            continue
    return all(any(abs(f - e) < 0.051 for f in found for e in options) for options in expected)


def run_case(provider: LocalProvider, case: Case, loop_guard: LoopGuard = "guard") -> tuple[str, int, float, Run]:
    """One prompt, run to its end: its outcome (answered, budget, wrong), steps, seconds, and the run."""
    config = RunConfig(provider="local", model=provider.model, max_steps=MAX_STEPS, loop_guard=loop_guard)
    run = Run.start(case.prompt, config)
    started = time.perf_counter()
    Agent(provider, toolbox.get_tools(TOOLS)).run(run)
    seconds = time.perf_counter() - started
    if run.stop_reason == "max_steps":
        outcome = "budget"
    elif run.stop_reason == "answer" and accepted(run.messages[-1].text, case.expected()):
        outcome = "answered"
    else:
        outcome = "wrong"
    return outcome, len(run.steps), seconds, run


def _show(case: Case, outcome: str, run: Run) -> None:
    """One line per prompt on stderr: its outcome, the calls made, and the last message (for --show)."""
    calls = [
        f"{c.name}({c.arguments_text})" for m in run.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
    ]
    last = " ".join(run.messages[-1].text.split())[:160]
    print(f"{outcome:8} {case.prompt!r}: {'; '.join(calls) or 'no call'} -> {last!r}", file=sys.stderr)


def measure_style(
    name: str,
    cases: list[Case] = CASES,
    loop_guard: LoopGuard = "guard",
    *,
    set_name: str = "1",
    show: bool = False,
    unguarded: list[tuple] | None = None,
) -> dict:
    """The outcomes of every case under one style and loop guard.

    `unguarded`: the same cases' results with the guard off. Sampling is greedy and seeded, so a run
    with no two identical calls is the very same run whatever the guard says (the guard acts only on
    a repeat): such a result is taken as it is, and only the runs that repeated a call are run again.
    """
    provider = LocalProvider(**STYLES[name])
    results, rerun = [], 0
    for i, case in enumerate(cases):
        earlier = unguarded[i] if unguarded else None
        if earlier is not None and (loop_guard in ("off", "warn") or most_repeated(earlier[3]) is None):
            results.append(earlier)
        else:
            results.append(run_case(provider, case, loop_guard))
            rerun += earlier is not None
            if show:
                _show(case, results[-1][0], results[-1][3])
    outcomes = [r[0] for r in results]
    return {
        "style": name,
        "set": set_name,
        "loop_guard": loop_guard,
        "prompts": len(cases),
        "answered": outcomes.count("answered"),
        "budget": outcomes.count("budget"),
        "wrong": outcomes.count("wrong"),
        "median_steps": statistics.median(r[1] for r in results),
        "median_s": statistics.median(r[2] for r in results),
        "run_again": rerun if unguarded else None,
        "results": results,
    }


def table(results: list[dict]) -> str:
    """The results as a Markdown table."""
    lines = [
        "| style | set | loop guard | answered | stopped by the budget | wrong | median steps | median s | run again |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['style']} | {r['set']} | {r['loop_guard']} | {r['answered']}/{r['prompts']} | {r['budget']} | {r['wrong']} "
            f"| {r['median_steps']:g} | {r['median_s']:.1f} | {'all' if r['run_again'] is None else r['run_again']} |"
        )
    return "\n".join(lines)


def measure(styles: list[str] | None = None, cases: list[Case] = CASES) -> list:
    """Rows for bench/run.py, one per style: the share answered, with the counts, median steps and seconds."""
    from common import Row

    rows = []
    for name in styles or list(STYLES):
        r = measure_style(name, cases)
        figure = "10. local answer rate"
        note = (
            f"answered {r['answered']}/{r['prompts']}, stopped by the budget {r['budget']}, wrong {r['wrong']}; "
            f"median {r['median_steps']:g} steps, {r['median_s']:.1f} s a prompt"
        )
        rows.append(Row(figure, name, 100 * r["answered"] / r["prompts"], "% answered", note=note))
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the default style and the first 4 prompts of each set")
    parser.add_argument("--style", action="append", help="a style's name, or 'default' (default: every style)")
    parser.add_argument("--set", choices=["1", "2", "both"], default="1", help="set 1, set 2 (held out) or both")
    parser.add_argument(
        "--loop-guard",
        action="append",
        choices=LOOP_GUARDS,
        help="the runs' loop guard; give it twice for two tables (default: off and guard)",
    )
    parser.add_argument("--show", action="store_true", help="a line per prompt on stderr: outcome, calls, answer")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    default = next(iter(STYLES))
    names = [default if n == "default" else n for n in args.style or ([default] if args.quick else list(STYLES))]
    unknown = [n for n in names if n not in STYLES]
    if unknown:
        parser.error(f"unknown style {unknown[0]!r}; the styles are: {', '.join(map(repr, STYLES))}")
    sets = ["1", "2"] if args.set == "both" else [args.set]
    guards = args.loop_guard or ["off", "guard"]
    results = []
    for k in sets:
        for n in names:
            off = None
            for guard in guards:
                cases = SETS[k][:4] if args.quick else SETS[k]
                row = measure_style(n, cases, guard, set_name=k, show=args.show, unguarded=off)
                if guard == "off":
                    off = row["results"]
                results.append(row)
    for row in results:
        del row["results"]
    print(json.dumps(results, indent=2) if args.json else table(results))

"""Figure 4: tool concurrency in one turn, and a comparison's three configurations at once vs one by one."""

from __future__ import annotations

import importlib
import time

from common import ROOT, Row, call_public, median, progress, ratio, rows_from_result, unavailable

FIGURE = "4. concurrency"
TOOLS = 8
SLEEP_S = 0.5


def nap(seconds: float) -> str:
    """Sleep, then say so: a stand-in for a slow tool that waits on I/O."""
    time.sleep(seconds)
    return f"slept {seconds} s"


def one_turn(concurrency: bool) -> float:
    """Wall seconds of a run whose single turn calls the sleeping tool eight times."""
    from agentcore import Agent, AssistantMessage, Run, RunConfig, ScriptedProvider, ToolCall, tool

    calls = tuple(ToolCall(id=f"call_{k}", name="nap", arguments={"seconds": SLEEP_S}) for k in range(TOOLS))
    replay = [AssistantMessage(tool_calls=calls), AssistantMessage(content="All rested.")]
    agent = Agent(ScriptedProvider(replay=replay), [tool(nap)])
    run = Run.start("Rest eight times.", RunConfig(max_steps=2, concurrency=concurrency))
    started = time.perf_counter()
    agent.run(run)
    took = time.perf_counter() - started
    if run.stop_reason != "answer" or any(t.is_error for t in run.steps[0].tool_runs):
        raise RuntimeError(f"the sleeping-tools run failed: {run.stop_reason} {run.error or ''}")
    return took


def measure() -> list[Row]:
    """Eight 0.5 s tools concurrent vs sequential, then the comparison figure if its module is present."""
    progress("concurrency: eight sleeping tools")
    together = median([one_turn(True) for _ in range(3)])
    apart = median([one_turn(False) for _ in range(2)])
    rows = [
        Row(FIGURE, f"{TOOLS} tools × {SLEEP_S} s, concurrent", together, "s", ratio(apart, together), "faster"),
        Row(FIGURE, f"{TOOLS} tools × {SLEEP_S} s, sequential", apart, "s"),
    ]
    return rows + comparison_rows()


def comparison_rows() -> list[Row]:
    """Rows from bench/compare_concurrency.py (three configurations against llm-katan), or why not."""
    case = "comparison of 3 configurations vs llm-katan"
    if not (ROOT / "bench" / "compare_concurrency.py").exists():
        return [unavailable(FIGURE, case, "bench/compare_concurrency.py is not there yet")]
    progress("concurrency: comparison against llm-katan")
    try:
        module = importlib.import_module("compare_concurrency")
        result = call_public(module)
    except Exception as exc:  # noqa: BLE001 - another module's failure becomes a row, not a crash
        return [unavailable(FIGURE, case, f"{type(exc).__name__}: {exc}")]
    rows = rows_from_result(FIGURE, "comparison", result)
    if isinstance(result, dict) and {"wall_s", "sum_of_configurations_s"} <= result.keys():
        # the headline: all three at once against what running them one after another adds up to
        wall, summed = result["wall_s"], result["sum_of_configurations_s"]
        rows = [r for r in rows if r.case != "comparison: wall s"]
        rows.insert(0, Row(FIGURE, "3 configurations at once vs the sum", wall, "s", ratio(summed, wall), "faster"))
    return rows

"""A comparison's wall time against its slowest configuration and against running them one by one.

Two llm-katan servers (echo backend) answer with different artificial latencies; three
configurations (OpenAI at the fast one, OpenAI and Anthropic at the slow one) run the same
prompt and tools to the step budget. Run together, the comparison should take about as
long as its slowest configuration; run one after another, about the sum.

    .venv/bin/python bench/compare_concurrency.py
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

PROMPT = "What is the weather in Paris?"
KEY = "bench-key"  # llm-katan checks that a key header is present, not its value


def _specs(fast_url: str, slow_url: str):
    from agentcore.compare import ColumnSpec

    return [
        ColumnSpec("openai", "echo", f"{fast_url}/v1", label="openai @ fast server"),
        ColumnSpec("openai", "echo", f"{slow_url}/v1", label="openai @ slow server"),
        ColumnSpec("anthropic", "echo", slow_url, label="anthropic @ slow server"),
    ]


def _together(specs, steps: int) -> tuple[float, float, float]:
    """One comparison run to the end: (wall seconds, slowest column's seconds, sum of the columns' seconds)."""
    from agentcore import toolbox
    from agentcore.compare import Comparison

    keys = dict.fromkeys(range(len(specs)), KEY)
    comparison = Comparison(PROMPT, specs, tools=toolbox.get_tools("get_weather"), max_steps=steps, api_keys=keys)
    comparison.run_all(keys)
    failed = [f"{c.label}: {c.error}" for c in comparison.columns if c.state != "done" or len(c.run.steps) != steps]
    if failed:
        raise RuntimeError(f"a configuration did not run to its budget: {failed[0]}")
    times = [c.wall_s for c in comparison.columns]
    return comparison.wall_s, max(times), sum(times)


def _one_by_one(specs, steps: int) -> float:
    """The same configurations run one after another, each alone: wall seconds."""
    from agentcore import Agent, Run, RunConfig, toolbox
    from agentcore.providers import create_provider

    tools = toolbox.get_tools("get_weather")
    started = time.perf_counter()
    for spec in specs:
        provider = create_provider(spec.provider, spec.model, base_url=spec.base_url, api_key=KEY)
        run = Run.start(PROMPT, RunConfig(provider=spec.provider, tools=[t.spec() for t in tools], max_steps=steps))
        Agent(provider, tools).run(run)
        if run.stop_reason == "error":
            raise RuntimeError(f"{spec.label}: {run.error}")
    return time.perf_counter() - started


def measure(fast_ms: int = 300, slow_ms: int = 600, steps: int = 3, repeats: int = 3) -> dict[str, float]:
    """Medians of the comparison's wall time, its slowest and summed columns, and the one-by-one time."""
    from support.servers import start_katan

    workdir = Path(tempfile.mkdtemp(prefix="agentcore-bench-katan-"))
    flags = ("--max-concurrent", "4")
    fast = start_katan(workdir, "--latency-ms", str(fast_ms), *flags)
    try:
        slow = start_katan(workdir, "--latency-ms", str(slow_ms), *flags)
        try:
            specs = _specs(fast.url, slow.url)
            _together(specs, 1)  # warm-up: connections, imports
            runs = [_together(specs, steps) for _ in range(repeats)]
            sequential = _one_by_one(specs, steps)
        finally:
            slow.stop()
    finally:
        fast.stop()
    wall = statistics.median(r[0] for r in runs)
    slowest = statistics.median(r[1] for r in runs)
    summed = statistics.median(r[2] for r in runs)
    return {
        "wall_s": wall,
        "slowest_configuration_s": slowest,
        "sum_of_configurations_s": summed,
        "one_by_one_s": sequential,
        "wall_over_slowest_ratio": wall / slowest,
        "one_by_one_over_wall_ratio": sequential / wall,
    }


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))

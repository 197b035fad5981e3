"""The embedded model's speed on this machine: load time, prompt and generation throughput, step latency by step.

Run it alone with `python bench/local_model.py` (prints JSON), `python bench/local_model.py --steps`
(the step table of a 10-step run, with and without the prompt cache), or call `measure_local()`.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentcore import Agent, Run, RunConfig, toolbox
from agentcore.providers.local import CHAT_FORMAT, LocalProvider, find_default_gguf

PROMPT = "What is the weather in Paris?"
STEPS = 10
# A few hundred tokens of prompt, and an instruction that makes the model write until the cap.
LONG_PROMPT = "Here are some notes about agent loops. " * 40 + "\nWrite a long essay about the weather in Paris."


def _perf(llama) -> tuple[float, int, float, int]:
    import llama_cpp

    data = llama_cpp.llama_perf_context(llama.ctx)
    return data.t_p_eval_ms, data.n_p_eval, data.t_eval_ms, data.n_eval


def measure_local(reps: int = 3, gen_tokens: int = 128) -> dict[str, float | int | str]:
    """Median figures over `reps`: load seconds, prompt and generation tokens/s, and the steps of a 10-step run."""
    from llama_cpp import Llama

    path = find_default_gguf()
    loads, llama = [], None
    for _ in range(reps):
        started = time.perf_counter()
        llama = Llama(model_path=str(path), n_ctx=4096, chat_format=CHAT_FORMAT, verbose=False)
        loads.append(time.perf_counter() - started)

    prompt_rates, gen_rates, prompt_tokens = [], [], 0
    for _ in range(reps):
        llama.reset()  # forget the KV cache, so the whole prompt is evaluated again
        import llama_cpp

        llama_cpp.llama_perf_context_reset(llama.ctx)
        text = f"<|im_start|>user\n{LONG_PROMPT}<|im_end|>\n<|im_start|>assistant\n"
        llama.create_completion(prompt=text, max_tokens=gen_tokens, temperature=0)
        t_p, n_p, t_g, n_g = _perf(llama)
        prompt_tokens = n_p
        prompt_rates.append(n_p / (t_p / 1000))
        gen_rates.append(n_g / (t_g / 1000))

    steps = run_by_step(LocalProvider(chat_format=CHAT_FORMAT))
    result: dict[str, float | int | str] = {
        "model": path.name,
        "load_s": statistics.median(loads),
        "prompt_tokens": prompt_tokens,
        "prompt_tokens_per_s": statistics.median(prompt_rates),
        "generation_tokens_per_s": statistics.median(gen_rates),
    }
    return result | step_figures(steps)


def run_by_step(provider: LocalProvider, steps: int = STEPS, cached: bool = True) -> list[dict[str, float]]:
    """A run of `steps` model calls on the real model, and each step's latency, prompt tokens and cache reads.

    With chatml-function-calling, SmolLM2-135M calls get_weather again and again, so the run lasts
    until the step budget, as a runaway loop does. `cached=False` forgets the cache before each step:
    every prompt token is evaluated, as with no prefix reuse.
    """
    llama = provider.load().llama
    llama.forget()
    run = Run.start(PROMPT, RunConfig(provider="local", model=provider.model, max_steps=steps))
    agent = Agent(provider, toolbox.get_tools("get_weather"))
    cpu_ms = []
    while not run.stop_reason:
        if not cached:
            llama.forget()
        started = time.process_time()  # the work itself: on a busy machine the wall time is mostly waiting
        agent.step(run)
        cpu_ms.append((time.process_time() - started) * 1000)
    return [
        {
            "latency_ms": s.latency_ms,
            "cpu_ms": cpu,
            "input_tokens": s.usage.input_tokens,
            "cache_read": s.usage.cache_read_tokens,
        }
        for s, cpu in zip(run.steps, cpu_ms, strict=True)
    ]


def step_figures(steps: list[dict[str, float]]) -> dict[str, float]:
    """Step 2 and the last step's latency, their ratio, and the smallest share of a later step's prompt read from the cache."""
    if len(steps) < 2:
        return {"steps_in_run": len(steps)}
    shares = [s["cache_read"] / s["input_tokens"] for s in steps[1:]]
    figures = {
        "steps_in_run": len(steps),
        "step_2_ms": steps[1]["latency_ms"],
        f"step_{len(steps)}_ms": steps[-1]["latency_ms"],
        f"step_{len(steps)}_over_step_2_ratio": steps[-1]["latency_ms"] / steps[1]["latency_ms"],
        f"step_{len(steps)}_over_step_2_cpu_ratio": steps[-1]["cpu_ms"] / steps[1]["cpu_ms"],
        "smallest_cache_read_share_after_step_1_ratio": min(shares),
    }
    for i, s in enumerate(steps, 1):
        figures[f"step_{i:02d}_ms"] = s["latency_ms"]
        figures[f"step_{i:02d}_cpu_ms"] = s["cpu_ms"]
        figures[f"step_{i:02d}_prompt_tokens"] = s["input_tokens"]
        figures[f"step_{i:02d}_cache_read_tokens"] = s["cache_read"]
    return figures


def step_table(steps: list[dict[str, float]], uncached: list[dict[str, float]] | None = None) -> str:
    """The steps as a Markdown table: latency, prompt tokens, cache reads and their share."""
    head = "| step | ms | CPU ms | prompt tokens | read from cache | share |"
    lines = [head + (" ms, cache forgotten | CPU ms, cache forgotten |" if uncached else "")]
    lines.append("|---|---|---|---|---|---|" + ("---|---|" if uncached else ""))
    for i, s in enumerate(steps):
        row = (
            f"| {i + 1} | {s['latency_ms']:.0f} | {s['cpu_ms']:.0f} | {s['input_tokens']} | {s['cache_read']} "
            f"| {s['cache_read'] / s['input_tokens']:.0%} |"
        )
        if uncached and i < len(uncached):
            row += f" {uncached[i]['latency_ms']:.0f} | {uncached[i]['cpu_ms']:.0f} |"
        lines.append(row)
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:] == ["--steps"]:  # only the step table: a run with the cache, and one that forgets it each step
        provider = LocalProvider(chat_format=CHAT_FORMAT)
        print(step_table(run_by_step(provider), run_by_step(provider, cached=False)))
    else:
        print(json.dumps(measure_local(), indent=2))

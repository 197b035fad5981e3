"""The embedded model's speed on this machine: load time, prompt and generation throughput, step latency.

Run it alone with `python bench/local_model.py` (prints JSON), or call `measure_local()`.
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
# A few hundred tokens of prompt, and an instruction that makes the model write until the cap.
LONG_PROMPT = "Here are some notes about agent loops. " * 40 + "\nWrite a long essay about the weather in Paris."


def _perf(llama) -> tuple[float, int, float, int]:
    import llama_cpp

    data = llama_cpp.llama_perf_context(llama.ctx)
    return data.t_p_eval_ms, data.n_p_eval, data.t_eval_ms, data.n_eval


def measure_local(reps: int = 3, steps: int = 4, gen_tokens: int = 128) -> dict[str, float | int | str]:
    """Median figures over `reps`: load seconds, prompt and generation tokens/s, and per-step latency of a real run."""
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

    provider = LocalProvider()
    tools = toolbox.get_tools("get_weather")
    latencies, first_steps, tokens_in = [], [], []
    for _ in range(reps):
        run = Run.start(PROMPT, RunConfig(provider="local", model=provider.model, max_steps=steps))
        provider.load().llama.reset()
        Agent(provider, tools).run(run)
        first_steps.append(run.steps[0].latency_ms)
        latencies += [s.latency_ms for s in run.steps[1:]]
        tokens_in = [s.usage.input_tokens for s in run.steps]
    return {
        "model": path.name,
        "load_s": statistics.median(loads),
        "prompt_tokens": prompt_tokens,
        "prompt_tokens_per_s": statistics.median(prompt_rates),
        "generation_tokens_per_s": statistics.median(gen_rates),
        "first_step_ms": statistics.median(first_steps),
        "later_step_ms": statistics.median(latencies) if latencies else float("nan"),
        "steps_per_run": len(run.steps),
        "stop_reason": run.stop_reason or "",
        "input_tokens_by_step": ",".join(map(str, tokens_in)),
    }


if __name__ == "__main__":
    print(json.dumps(measure_local(), indent=2))

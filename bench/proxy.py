"""The recording proxy's added latency per call: the same request to the same stand-in upstream on 127.0.0.1,
direct and through `agentcore proxy` (recording each call into a SQLite file), taken in turn so load hits both
alike. Whole and streamed Chat Completions replies; median and p95 of each, and their ratio.

    .venv/bin/python bench/proxy.py [--calls N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the stand-in upstream the proxy's tests use

from support.stand_in import Reply, StandIn  # noqa: E402

from agentcore.proxy import ProxyConfig, ProxyServer  # noqa: E402
from agentcore.store import Store  # noqa: E402

BODY = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": "You are brief."},
        {"role": "user", "content": "What is the weather in Paris?"},
    ],
}


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[-1]


def measure(calls: int, stream: bool) -> tuple[list[float], list[float]]:
    """Milliseconds per call, direct and proxied, `calls` of each taken in turn."""
    reply = Reply.fixture("openai_stream_text.sse") if stream else Reply.chat("It is sunny in Paris.")
    body = {**BODY, "stream": True} if stream else BODY
    headers = {"authorization": "Bearer bench-key-0123456789"}
    with StandIn(reply) as upstream, tempfile.TemporaryDirectory() as folder:
        store = Store(str(Path(folder) / "runs.db"))
        proxy = ProxyServer(ProxyConfig(upstream=upstream.url, port=0), store, log=open("/dev/null", "w")).start()
        direct, proxied = [], []
        try:
            with httpx.Client() as client:
                for k in range(calls + 5):  # the first five warm both paths up and are not counted
                    for url, out in ((upstream.url, direct), (proxy.url, proxied)):
                        started = time.perf_counter()
                        response = client.post(f"{url}/v1/chat/completions", json=body, headers=headers)
                        response.read()
                        assert response.status_code == 200, response.text
                        if k >= 5:
                            out.append((time.perf_counter() - started) * 1000)
            recorded = sum(s.steps for s in store.list_runs(limit=calls * 3))
            assert recorded == calls + 5, f"{recorded} steps recorded of {calls + 5} calls"
        finally:
            proxy.close()
            store.close()
    return direct, proxied


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    print(f"proxy: added latency per call, {args.calls} calls each, same stand-in upstream on 127.0.0.1")
    print(f"{'reply':<9} {'path':<8} {'median ms':>10} {'p95 ms':>9}   ratio (proxied / direct)")
    figures = {}
    for stream in (False, True):
        direct, proxied = measure(args.calls, stream)
        kind = "streamed" if stream else "whole"
        for name, xs in (("direct", direct), ("proxied", proxied)):
            print(f"{kind:<9} {name:<8} {statistics.median(xs):>10.2f} {p95(xs):>9.2f}")
        ratio = (statistics.median(proxied) / statistics.median(direct), p95(proxied) / p95(direct))
        added = statistics.median(proxied) - statistics.median(direct)
        print(
            f"{kind:<9} {'added':<8} {added:>10.2f} {p95(proxied) - p95(direct):>9.2f}   {ratio[0]:.2f}× median, {ratio[1]:.2f}× p95"
        )
        figures[kind] = {"added_median_ms": round(added, 3), "ratio_median": round(ratio[0], 3)}
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

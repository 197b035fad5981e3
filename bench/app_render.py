"""Figure 6: server-side time to render the playground page for runs of 10, 50 and 200 steps (AppTest).

A finished run of N steps (scripted replay, one tool call a step) is put in the app's session
state; the page is then re-run several times and the median re-run is the render time.
"""

from __future__ import annotations

import time

from common import ROOT, Row, median, progress, ratio, unavailable

FIGURE = "6. playground render"
STEPS = (10, 50, 200)
REPS = 5
PAGE = "views/playground.py"


def finished_run(steps: int):
    """A run that used `steps` tool steps and then answered, made by agentcore's own loop."""
    from loop_overhead import agentcore_run

    return agentcore_run(steps)()


def render_ms(steps: int) -> float:
    """Median ms of re-running the playground page with a finished run of `steps` steps open."""
    from streamlit.testing.v1 import AppTest

    from ui.state import SESSION_KEY, Session

    run = finished_run(steps)
    app = AppTest.from_file(str(ROOT / PAGE), default_timeout=120)
    app.session_state[SESSION_KEY] = Session(runs={run.id: run}, current_id=run.id)
    app.run()  # first draw: imports and caches
    if app.exception:
        raise RuntimeError(f"the page raised: {app.exception[0].message}")
    samples = []
    for _ in range(REPS):
        started = time.perf_counter()
        app.run()
        samples.append((time.perf_counter() - started) * 1000)
    return median(samples)


def measure() -> list[Row]:
    """Render time per run length, each with its growth relative to the previous length."""
    if not (ROOT / PAGE).exists():
        return [unavailable(FIGURE, f"{n} steps", f"{PAGE} is not there yet") for n in STEPS]
    rows: list[Row] = []
    previous: tuple[int, float] | None = None
    for steps in STEPS:
        progress(f"playground render: {steps} steps")
        try:
            ms = render_ms(steps)
        except Exception as exc:  # noqa: BLE001 - the page's failure becomes a row, not a crash
            rows.append(unavailable(FIGURE, f"{steps} steps", f"{type(exc).__name__}: {exc}"[:200]))
            continue
        if previous is None:
            rows.append(Row(FIGURE, f"{steps} steps", ms, "ms"))
        else:
            n0, ms0 = previous
            growth = ratio(ms, ms0)
            rows.append(
                Row(FIGURE, f"{steps} steps", ms, "ms", growth, f"of {n0} steps", f"steps grew {steps / n0:g}×")
            )
        previous = (steps, ms)
    return rows

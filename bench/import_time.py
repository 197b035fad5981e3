"""Figure 3: import time, each in a fresh interpreter: agentcore vs langchain.agents vs pydantic_ai."""

from __future__ import annotations

import subprocess
import time

from common import PEERS_PYTHON, ROOT, Row, median, progress, ratio, unavailable

FIGURE = "3. import time (fresh process)"
REPS = 7


def time_import(python: str, module: str) -> tuple[float, float]:
    """Median ms of `python -c "import module"` over REPS runs: without and with the interpreter's own start."""

    def once(code: str) -> float:
        started = time.perf_counter()
        subprocess.run([python, "-c", code], cwd=ROOT, check=True, capture_output=True)
        return (time.perf_counter() - started) * 1000

    once(f"import {module}")  # warm the file cache and byte-code
    total = median([once(f"import {module}") for _ in range(REPS)])
    empty = median([once("pass") for _ in range(REPS)])
    return max(total - empty, 0.0), total


def measure(python: str) -> list[Row]:
    """agentcore in its venv; the peers in bench/.venv; the interpreter's own start-up subtracted."""
    progress("import time")
    ours, gross = time_import(python, "agentcore")
    rows = [Row(FIGURE, "import agentcore", ours, "ms", note=f"{gross:.0f} ms with interpreter start")]
    for module in ("langchain.agents", "pydantic_ai"):
        label = f"import {module}"
        if not PEERS_PYTHON.exists():
            rows.append(unavailable(FIGURE, label, "bench/.venv is missing (run `make bench`)"))
            continue
        try:
            theirs, gross = time_import(str(PEERS_PYTHON), module)
        except subprocess.CalledProcessError as exc:
            rows.append(unavailable(FIGURE, label, f"the import failed with exit status {exc.returncode}"))
            continue
        note = f"{gross:.0f} ms with interpreter start"
        rows.append(Row(FIGURE, label, theirs, "ms", ratio(ours, theirs), "agentcore / this", note))
    return rows

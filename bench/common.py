"""What every figure returns (rows of a table) and the helpers they share."""

from __future__ import annotations

import inspect
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PEERS_PYTHON = BENCH / ".venv" / "bin" / "python"


@dataclass(frozen=True)
class Row:
    """One line of the table: a measured median, and its ratio to the row it is compared with."""

    figure: str
    case: str
    value: float | None  # None: not measured (see note)
    unit: str
    ratio: float | None = None
    versus: str = ""  # what the ratio divides by
    note: str = ""

    def cells(self) -> list[str]:
        """The row as table cells: figure, case, median, ratio, note."""
        value = "—" if self.value is None else f"{fmt(self.value)} {self.unit}"
        ratio = "" if self.ratio is None else f"{self.ratio:.2f}× {self.versus}".rstrip()
        return [self.figure, self.case, value, ratio, self.note]


def unavailable(figure: str, case: str, why: str) -> Row:
    """A row for a measurement that could not run here, with the one-line reason."""
    return Row(figure, case, None, "", note=f"not available: {why}")


def fmt(value: float) -> str:
    """A number with three significant digits, without scientific notation."""
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def median(values: list[float]) -> float:
    """The median of the repetitions."""
    return statistics.median(values)


def ratio(a: float | None, b: float | None) -> float | None:
    """a / b, or None when either is missing."""
    if a is None or b is None or b == 0:
        return None
    return a / b


def run_json(cmd: list[str], timeout: float = 900) -> dict:
    """Run a measuring subprocess in the repository root and parse the JSON on its last stdout line."""
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"{Path(cmd[1]).name if len(cmd) > 1 else cmd[0]} exited {done.returncode}: {last[0]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def progress(text: str) -> None:
    """A line on stderr, so a long run shows where it is without mixing into the table."""
    print(text, file=sys.stderr, flush=True)


def call_public(module):
    """Call the module's measuring function: `measure`, else its only public function without arguments."""
    fn = getattr(module, "measure", None)
    if fn is None:
        candidates = [
            f
            for name, f in inspect.getmembers(module, inspect.isfunction)
            if not name.startswith("_")
            and f.__module__ == module.__name__
            and all(p.default is not p.empty for p in inspect.signature(f).parameters.values())
        ]
        if len(candidates) != 1:
            names = ", ".join(f.__name__ for f in candidates) or "none"
            raise RuntimeError(f"{module.__name__} has no measure() and no single public function ({names})")
        fn = candidates[0]
    return fn()


def rows_from_result(figure: str, prefix: str, result) -> list[Row]:
    """A dict of numbers (or an object with such attributes) as rows; units guessed from the key's suffix."""
    if not isinstance(result, dict):
        result = getattr(result, "__dict__", None) or {"result": result}
    rows = []
    units = (("per_s", "/s"), ("_per_second", "/s"), ("_ms", "ms"), ("_us", "µs"), ("_s", "s"), ("ratio", "×"))
    for key, value in result.items():
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        unit = next((u for suffix, u in units if key.endswith(suffix)), "")
        rows.append(Row(figure, f"{prefix}: {key.replace('_', ' ')}", float(value), unit))
    return rows or [unavailable(figure, prefix, f"the module returned no numbers: {result!r}"[:200])]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(env: dict[str, str | None], log: Path) -> tuple[subprocess.Popen, str]:
    """`streamlit run app.py` on a free port with `env` set (None: unset); returns it and its address once healthy.

    The app runs as a deployed one does, without watching the source tree: a watched file that changes
    makes Streamlit import its modules again under the sessions running then, and edits made elsewhere in
    the tree while a figure runs would be timed as the app's work.
    """
    port = free_port()
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port)]
    cmd += ["--server.fileWatcherType", "none"]
    environ = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=environ, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as reply:
                if reply.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"the app did not start within 60 s (log: {log})")

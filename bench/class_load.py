"""Figure 9: a class on one server. N browser sessions on one app, each starting a run and stepping it at a person's pace.

    .venv/bin/python bench/class_load.py --sessions 1,10,30 --model scripted --steps 5
    .venv/bin/python bench/class_load.py --sessions 1,10,30 --model local --steps 2
    .venv/bin/python bench/class_load.py --sessions 60 --replicas 2 --db postgresql://agentcore@db-host/agentcore
    .venv/bin/python bench/class_load.py --sessions 10,30 --model shared --model-url http://127.0.0.1:8000/v1 --steps 1

Each session speaks Streamlit's own websocket protocol, as a browser tab does: it opens
`/_stcore/stream`, sends a BackMsg `rerun_script`, and reads ForwardMsgs until the script run has
finished; a click is a rerun carrying the button's widget id with trigger_value set (and the
fragment the button was drawn in). N such clients cost far less than N headless Chromium pages,
so the server, not the clients, is what is measured. Every session sends its own user name in the
header named by AGENTCORE_USER_HEADER, so at the end each one's run is found in the database and
checked: every run it started, with every step it took saved. When a run ends (the model answers),
the session starts another with New run, as a person would, and steps on.

For each N a fresh `streamlit run app.py` serves a fresh SQLite database, warmed by one session
that starts a run and takes one step (the first Step of a server loads the provider and the pages'
modules once for everyone; it is not a class's cost). The sessions open the page and start their
runs spread over one pause; once all N have, each clicks Step `--steps` times, a pause of about
`--pace` seconds (±25%) apart, the first clicks spread over one pause. Reported per N: Step
latency (from the click to the end of the script run it started) p50 / p95 / max, the spread of the
sessions' own mean latencies (max / min: 1 is fair), the slowest page load and run start, errors
(an exception or an error box on the page, a click that got no finished run, a run missing from
the database or short of steps), the steps on which the page said it was waiting for the model,
the server's memory (RSS of the streamlit process and its children) warmed and idle, at its peak,
and the growth per session, and the server's CPU time per click (the page loads and run starts
counted as clicks), which moves much less than the latencies when the machine is busy.

With `--replicas R` each level starts R app servers over one database (`--db`, a PostgreSQL URL: SQLite
is one file on one machine) and the sessions are dealt to them in turn, as a proxy that keeps each browser
on one server would spread a class; each server gets its own warm-up, the memory and CPU figures are the
servers' together, and every session's runs are checked in the one database. With `--db`, each level's
session names carry a tag of their own, so the check counts only that level's runs.

`--model shared` points the app at one model server (`make serve-model`: the embedded GGUF behind
llama-cpp-python's OpenAI-compatible server) at `--model-url`, instead of the model in the app's process.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

import common  # noqa: E402
from common import Row, progress, ratio, unavailable  # noqa: E402

FIGURE = "9. a class on one server"
USER_HEADER = "X-Bench-User"
STEP_TIMEOUT = 180.0  # seconds for one click's script run; past it the click counts as an error
WAITING = re.compile(r"\b(waiting|queued?)\b", re.IGNORECASE)
PACE = 5.0  # seconds between a person's clicks, ±25%: reading what the step added takes about that


# -- one browser tab over the websocket ------------------------------------------------------------


@dataclass
class Draw:
    """What one click brought back: the buttons drawn, texts, and the problems shown."""

    buttons: dict[str, tuple[str, bool, str]] = field(default_factory=dict)  # key -> (widget id, disabled, fragment)
    texts: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class Tab:
    """A browser tab reduced to its protocol: rerun requests out, ForwardMsgs in."""

    def __init__(self, ws) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self.ws = ws
        self.page_hash = ""
        self.buttons: dict[str, tuple[str, bool, str]] = {}
        self._done = {
            ForwardMsg.FINISHED_SUCCESSFULLY,
            ForwardMsg.FINISHED_WITH_COMPILE_ERROR,
            ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
        }

    async def rerun(self, key: str | None = None) -> Draw:
        """Send a rerun (a click on the button drawn with `key`, or a plain page load) and read until it finished."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        state = msg.rerun_script
        state.page_script_hash = self.page_hash
        if key is not None:
            widget_id, _, fragment = self.buttons[key]
            widget = state.widget_states.widgets.add()
            widget.id, widget.trigger_value = widget_id, True
            state.fragment_id = fragment
        await self.ws.send(msg.SerializeToString())
        return await asyncio.wait_for(self._read(), STEP_TIMEOUT)

    async def _read(self) -> Draw:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        draw = Draw()
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(await self.ws.recv())
            kind = fwd.WhichOneof("type")
            if kind == "new_session":
                self.page_hash = self.page_hash or fwd.new_session.page_script_hash
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                _element(fwd.delta.new_element, fwd.delta.fragment_id, draw)
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "add_block":
                draw.texts.append(fwd.delta.add_block.expandable.label)  # st.status and st.expander say it here
            elif kind == "script_finished" and fwd.script_finished in self._done:
                self.buttons.update(draw.buttons)
                return draw


def _element(element, fragment: str, draw: Draw) -> None:
    kind = element.WhichOneof("type")
    if kind == "button":
        key = element.button.id.rsplit("-", 1)[-1]
        draw.buttons[key] = (element.button.id, element.button.disabled, fragment)
    elif kind == "exception":
        draw.problems.append(f"exception: {element.exception.type}: {element.exception.message[:120]}")
    elif kind == "alert":
        if element.alert.format == element.alert.ERROR:
            draw.problems.append(f"error box: {element.alert.body[:120]}")
        draw.texts.append(element.alert.body)
    elif kind in ("markdown", "text", "toast"):
        draw.texts.append(getattr(element, kind).body)
    elif kind in ("spinner", "progress"):
        draw.texts.append(getattr(element, kind).text)


# -- a person at the keyboard -------------------------------------------------------------------------


@dataclass
class Learner:
    """One session's record: its Step latencies and what went wrong."""

    name: str
    latencies: list[float] = field(default_factory=list)
    waited: int = 0  # steps during which the page said it was waiting
    runs: int = 1  # runs started: when the model answers, the person starts another, as in class
    clicks: int = 0  # script runs asked for: the page load, New run and every Step
    opening: float | None = None  # seconds to load the page and start a run, the two clicks before the Steps
    problems: list[str] = field(default_factory=list)
    server: str = ""  # the app server the session's websocket went to


class Gate:
    """Holds the sessions until every one has opened the page and started its run (or failed to).

    A class does not open the page in the same second: what is measured is a Step while all N are there.
    """

    def __init__(self, sessions: int) -> None:
        self.waiting, self.opened = sessions, asyncio.Event()

    def arrive(self) -> None:
        self.waiting -= 1
        if self.waiting <= 0:
            self.opened.set()


async def learner(
    url: str, name: str, steps: int, pace: float, start_after: float, rng: random.Random, gate: Gate | None = None
) -> Learner:
    """Open the app, start a run, and Step it `steps` times with a person's pause between clicks."""
    from websockets.asyncio.client import connect

    me = Learner(name, server=url)
    gate = gate or Gate(1)
    await asyncio.sleep(start_after)
    ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
    try:
        async with connect(
            ws_url, subprotocols=["streamlit"], additional_headers={USER_HEADER: name}, max_size=None, open_timeout=60
        ) as ws:
            tab = Tab(ws)
            started = time.perf_counter()
            await _click(tab, None, me)
            await _click(tab, "start", me)
            me.opening = time.perf_counter() - started
            gate.arrive()
            await gate.opened.wait()
            await asyncio.sleep(pace * rng.uniform(0.0, 1.0))  # the first clicks do not all land at once
            for i in range(steps):
                if i:
                    await asyncio.sleep(pace * rng.uniform(0.75, 1.25))
                if "step" not in tab.buttons:
                    me.problems.append("no Step button on the page")
                    break
                if tab.buttons["step"][1]:  # the run has ended: a New run, then Step on
                    await _click(tab, "start", me)
                    me.runs += 1
                    await asyncio.sleep(pace * rng.uniform(0.75, 1.25))
                started = time.perf_counter()
                draw = await _click(tab, "step", me)
                me.latencies.append(time.perf_counter() - started)
                if any(WAITING.search(t) and "tool call" not in t for t in draw.texts):
                    me.waited += 1
    except Exception as exc:  # noqa: BLE001 - every failure is a counted error
        me.problems.append(f"{type(exc).__name__}: {exc}"[:160])
    finally:
        if me.opening is None:
            gate.arrive()  # a session that never got going must not hold the others
    return me


async def _click(tab: Tab, key: str | None, me: Learner) -> Draw:
    me.clicks += 1
    draw = await tab.rerun(key)
    me.problems += draw.problems
    return draw


# -- the server ----------------------------------------------------------------------------------------


SHARED_MODEL = "smollm2"  # the alias `make serve-model` gives the embedded GGUF


def start_app(db: Path | str, model: str, log: Path, model_url: str | None = None) -> tuple[subprocess.Popen, str]:
    """The app over `db`, on the scripted `runaway` scenario, the embedded model, or the shared model server at
    `model_url`, naming users by header."""
    env = {"AGENTCORE_DB": str(db), "AGENTCORE_PROVIDER": model, "AGENTCORE_USER_HEADER": USER_HEADER}
    # the scripted `runaway` scenario never answers, so every session can take every step
    env["AGENTCORE_MODEL"] = "runaway" if model == "scripted" else None
    if model == "shared":  # any key: llama-cpp-python's server checks none unless started with --api_key
        env.update(AGENTCORE_PROVIDER="openai", AGENTCORE_MODEL=SHARED_MODEL, OPENAI_BASE_URL=model_url)
        env["OPENAI_API_KEY"] = os.environ.get("OPENAI_API_KEY") or "unused"
    return common.start_app(env, log)


def rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, in MiB (0 once it is gone)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total / 1024


def cpu_s(pid: int) -> float:
    """CPU seconds the process has used so far (user + system, its threads included)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _sample_peak(pids: list[int], peak: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], sum(map(rss_mb, pids)))
        await asyncio.sleep(0.25)


# -- one level of N sessions -----------------------------------------------------------------------------


@dataclass
class Level:
    """The figures for N sessions."""

    sessions: int
    latencies: list[float]
    replicas: int
    errors: list[str]
    waited: int
    new_runs: int  # runs started after one ended, across the sessions
    spread: float | None  # max / min of the sessions' mean latencies
    opening: float | None  # the slowest session's page load and run start, seconds
    rss_idle: float
    rss_peak: float
    cpu_per_step: float | None  # the server's CPU seconds per Step click, contention aside
    per_server: dict[str, int] = field(default_factory=dict)  # sessions each server held

    def pct(self, q: float) -> float | None:
        if not self.latencies:
            return None
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    @property
    def per_session_mb(self) -> float:
        return (self.rss_peak - self.rss_idle) / self.sessions


async def _drive(
    urls: list[str], pids: list[int], n: int, steps: int, pace: float, seed: int, tag: str = ""
) -> tuple[list[Learner], float]:
    rng = random.Random(seed)
    peak, stop = [sum(map(rss_mb, pids))], asyncio.Event()
    sampler = asyncio.create_task(_sample_peak(pids, peak, stop))
    ramp, gate = pace, Gate(n)  # the sessions open the page spread over one pause
    tasks = [
        learner(
            urls[i % len(urls)],  # dealt to the servers in turn, as a sticky proxy spreads a class
            f"learner-{i + 1:02d}{tag}",
            steps,
            pace,
            ramp * i / max(1, n),
            random.Random(rng.random()),
            gate,
        )
        for i in range(n)
    ]
    learners = await asyncio.gather(*tasks)
    stop.set()
    await sampler
    return learners, peak[0]


def _check_saved(db: Path | str, learners: list[Learner]) -> None:
    """Each session's runs are in the database under its user, with every step it took."""
    from agentcore.store.runs import Store

    store = Store(db, teacher=True)  # every run, whatever AGENTCORE_PRIVATE_RUNS says here
    try:
        for me in learners:
            runs = store.list_runs(owner=me.name)
            if len(runs) != me.runs:
                me.problems.append(f"{len(runs)} runs saved under {me.name}, not {me.runs}")
            elif sum(r.steps for r in runs) != len(me.latencies):
                me.problems.append(f"{sum(r.steps for r in runs)} steps saved, {len(me.latencies)} taken")
    finally:
        store.close()


def measure_level(
    n: int,
    model: str,
    steps: int,
    pace: float,
    seed: int,
    folder: Path,
    replicas: int = 1,
    db: str | None = None,
    model_url: str | None = None,
) -> Level:
    """Start `replicas` fresh app servers on one database, let `n` sessions step them, stop them; the figures."""
    where: Path | str = db or folder / f"runs-{model}-{n}.db"
    tag = f".{n}s{replicas}r.{os.urandom(3).hex()}" if db else ""  # this level's names, in a shared database
    servers: list[tuple[subprocess.Popen, str]] = []
    try:
        for r in range(replicas):
            servers.append(start_app(where, model, folder / f"app-{model}-{n}-{r}.log", model_url))
        for r, (_, url) in enumerate(servers):
            urllib.request.urlopen(url, timeout=30).read()  # the page's own HTML, as a browser fetches first
            warm = asyncio.run(learner(url, f"warm-up-{r}{tag}", 1, 0.0, 0.0, random.Random(seed)))
            if warm.problems:
                raise RuntimeError(f"the warm-up session of server {r + 1} failed: {warm.problems[0]}")
        pids, urls = [p.pid for p, _ in servers], [u for _, u in servers]
        idle, cpu_before = sum(map(rss_mb, pids)), sum(map(cpu_s, pids))
        learners, peak = asyncio.run(_drive(urls, pids, n, steps, pace, seed, tag))
        cpu = sum(map(cpu_s, pids)) - cpu_before
    finally:
        for proc, _ in servers:
            proc.terminate()
        for proc, _ in servers:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
    _check_saved(where, learners)
    means = [statistics.mean(me.latencies) for me in learners if me.latencies]
    return Level(
        sessions=n,
        replicas=replicas,
        latencies=[t for me in learners for t in me.latencies],
        errors=[f"{me.name}: {p}" for me in learners for p in me.problems],
        waited=sum(me.waited for me in learners),
        new_runs=sum(me.runs - 1 for me in learners),
        spread=(max(means) / min(means)) if means and min(means) > 0 else None,
        opening=max((me.opening for me in learners if me.opening is not None), default=None),
        rss_idle=idle,
        rss_peak=peak,
        cpu_per_step=cpu / max(1, sum(me.clicks for me in learners)),  # the page loads and New runs included
        per_server={url: sum(me.server == url for me in learners) for url in urls},
    )


# -- reporting -----------------------------------------------------------------------------------------------


def rows(levels: list[Level], model: str, steps: int) -> list[Row]:
    """The levels as table rows; each p95 also as a ratio to one session's."""
    out: list[Row] = []
    single = next((lv.pct(0.95) for lv in levels if lv.sessions == 1 and lv.replicas == 1), None)
    for lv in levels:
        case = f"{model}, {lv.sessions} session{'s' if lv.sessions != 1 else ''}"
        if lv.replicas > 1:
            case += f" on {lv.replicas} servers"
        p50, p95 = lv.pct(0.5), lv.pct(0.95)
        note = (
            f"{len(lv.latencies)} steps ({steps} each); max {_s(lv.pct(1.0))}; spread {_x(lv.spread)}; "
            f"slowest page load + New run {_s(lv.opening)}; "
            f"errors {len(lv.errors)}; waiting shown on {lv.waited}; runs ended and started again {lv.new_runs}; "
            f"RSS {lv.rss_idle:.0f} → {lv.rss_peak:.0f} MiB ({lv.per_session_mb:.1f} MiB/session); "
            f"server CPU {lv.cpu_per_step * 1000:.0f} ms per click"
        )
        if lv.replicas > 1:
            note += f" (the servers together); sessions per server {'/'.join(map(str, lv.per_server.values()))}"
        out.append(Row(FIGURE, f"{case}: Step p50", None if p50 is None else p50 * 1000, "ms"))
        versus = "of 1 session" if lv.sessions != 1 else ""
        out.append(
            Row(
                FIGURE,
                f"{case}: Step p95",
                None if p95 is None else p95 * 1000,
                "ms",
                _r(p95, single, lv),
                versus,
                note,
            )
        )
    return out


def _r(p95: float | None, single: float | None, lv: Level) -> float | None:
    return None if lv.sessions == 1 else ratio(p95, single)


def _s(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:.0f} ms"


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def run_levels(
    sessions: list[int],
    model: str,
    steps: int,
    pace: float,
    seed: int = 7,
    replicas: int = 1,
    db: str | None = None,
    model_url: str | None = None,
) -> list[Level]:
    """Every level in turn, each on fresh servers (and, without `db`, a fresh SQLite database)."""
    levels = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sessions:
            on = f" on {replicas} servers" if replicas > 1 else ""
            progress(f"class load: {model}, {n} sessions × {steps} steps{on}")
            levels.append(measure_level(n, model, steps, pace, seed, Path(tmp), replicas, db, model_url))
    return levels


def measure() -> list[Row]:
    """`make bench`'s figure 9: the scripted model at 1, 10 and 30 sessions, 5 steps each."""
    try:
        import websockets  # noqa: F401 - streamlit's own dependency
    except ImportError:
        return [unavailable(FIGURE, "sessions", "the websockets package is not installed")]
    return rows(run_levels([1, 10, 30], "scripted", 5, PACE), "scripted", 5)


def main(argv: list[str] | None = None) -> int:
    global STEP_TIMEOUT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", default="1,10,30", help="comma-separated session counts (default 1,10,30)")
    parser.add_argument("--model", choices=("scripted", "local", "shared"), default="scripted")
    parser.add_argument("--model-url", help="the shared model server's OpenAI-compatible URL, for --model shared")
    parser.add_argument("--steps", type=int, default=5, help="Steps each session takes (default 5)")
    parser.add_argument(
        "--pace", type=float, default=PACE, help=f"seconds a person pauses between clicks (default {PACE:g})"
    )
    parser.add_argument("--errors", action="store_true", help="print every error, not only the first few")
    parser.add_argument("--replicas", type=int, default=1, help="app servers over one database (default 1)")
    parser.add_argument("--db", help="the runs database every server uses (a postgresql:// URL; needed for --replicas)")
    parser.add_argument(
        "--step-timeout",
        type=float,
        default=STEP_TIMEOUT,
        help=f"seconds one click may take before it counts as an error (default {STEP_TIMEOUT:g}; a slow model's queue needs more)",
    )
    args = parser.parse_args(argv)
    STEP_TIMEOUT = args.step_timeout
    if args.model == "shared" and not args.model_url:
        parser.error("--model shared needs --model-url http://HOST:8000/v1 (make serve-model)")
    if args.replicas < 1:
        parser.error("--replicas is at least 1")
    if args.replicas > 1 and not (args.db and args.db.startswith(("postgresql://", "postgres://"))):
        parser.error("--replicas needs --db postgresql://…: servers side by side share a PostgreSQL database")
    try:
        sessions = [int(s) for s in args.sessions.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--sessions takes numbers separated by commas, not {args.sessions!r}")
    if not sessions or min(sessions) < 1 or not 1 <= args.steps <= 9:
        parser.error("--sessions needs counts of at least 1, and --steps 1 to 9 (the step budget is 10)")
    print("| case | p50 | p95 | ratio | note |\n|---|---|---|---|---|", flush=True)
    levels: list[Level] = []
    for n in sessions:  # each level's row as soon as it is measured: a long run keeps what it measured
        levels += run_levels(
            [n], args.model, args.steps, args.pace, replicas=args.replicas, db=args.db, model_url=args.model_url
        )
        p50, p95 = rows(levels, args.model, args.steps)[-2:]
        print(
            f"| {p95.case.removesuffix(': Step p95')} | {p50.cells()[2]} | {p95.cells()[2]} | {p95.cells()[3]} | {p95.note} |",
            flush=True,
        )
        for error in levels[-1].errors if args.errors else levels[-1].errors[:5]:
            print(f"{n} sessions: {error}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

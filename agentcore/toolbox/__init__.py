"""Built-in demo tools and their offline data. Nothing here touches the network."""

from __future__ import annotations

import ast
import errno
import hashlib
import math
import operator
import os
import random
import re
import stat
import threading
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..tools import Tool, tool

HERE = Path(__file__).parent
NOTES_DIR = HERE / "notes"
DEFAULT_SANDBOX = HERE / "sandbox"

# -- calculator ---------------------------------------------------------------------

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCS = {"sqrt": math.sqrt, "abs": abs, "round": round, "log": math.log, "sin": math.sin, "cos": math.cos}
_NAMES = {"pi": math.pi, "e": math.e}
# Python's integers have no size limit, and computing a huge one holds the GIL, so no time limit can stop
# it: each result is bounded before it is computed. 10,000 bits is about 3,000 digits, within the
# 4,300 digits Python will turn into text.
MAX_RESULT_BITS = 10_000
MAX_ROUND_DIGITS = 1_000


def _too_large(bits: float) -> ValueError:
    size = f"about {bits:.3g} bits" if math.isfinite(bits) else f"more than {2.0**63:.3g} bits"
    return ValueError(
        f"result too large: it would have {size}; the calculator keeps integers to {MAX_RESULT_BITS} bits "
        f"(about {int(MAX_RESULT_BITS * math.log10(2)):,} digits). Work with logarithms or floats instead."
    )


def _result_bits(op: ast.operator, left: float, right: float) -> float:
    """An upper bound on the bit length of an integer result, from the operands alone; 0 for a float result."""
    if not (isinstance(left, int) and isinstance(right, int)):
        return 0  # float arithmetic takes constant time: too large a float is an OverflowError or inf
    if isinstance(op, ast.Pow):
        if right < 0 or abs(left) <= 1:
            return 0  # a float, or 0, 1 or -1
        return right * math.log2(abs(left)) if right.bit_length() < 64 else math.inf
    if isinstance(op, ast.Mult):
        return left.bit_length() + right.bit_length()
    return max(left.bit_length(), right.bit_length()) + 1  # + and -, and // and % whose results are smaller


def _call(name: str, args: list[float]) -> float:
    if name == "round" and len(args) == 2 and isinstance(args[1], int) and abs(args[1]) > MAX_ROUND_DIGITS:
        raise ValueError(f"round takes at most {MAX_ROUND_DIGITS} digits")  # rounding to n digits computes 10**n
    return _FUNCS[name](*args)


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        bits = _result_bits(node.op, left, right)
        if bits > MAX_RESULT_BITS:
            raise _too_large(bits)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS and not node.keywords:
        return _call(node.func.id, [_evaluate(a) for a in node.args])
    raise ValueError(f"unsupported expression element: {ast.dump(node)[:60]}")


@tool(isolated=True)
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression, e.g. "(2 + 3) * 4 / sqrt(16)". Supports + - * / // % **, sqrt, abs, round, log, sin, cos, pi, e."""
    if len(expression) > 500:
        raise ValueError("expression longer than 500 characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression: {exc.msg}") from None
    value = _evaluate(tree)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return f"{expression.strip()} = {value}"


# -- weather (simulated) ------------------------------------------------------------

_CONDITIONS = ["sunny", "partly cloudy", "cloudy", "light rain", "showers", "windy", "foggy", "clear"]


@tool
def get_weather(city: str, unit: str = "celsius") -> dict:
    """Get today's weather for a city (simulated offline data, deterministic per city and date). unit is "celsius" or "fahrenheit"."""
    if unit not in ("celsius", "fahrenheit"):
        raise ValueError('unit must be "celsius" or "fahrenheit"')
    name = city.strip()
    if not name:
        raise ValueError("city must not be empty")
    today = datetime.now(UTC).date().isoformat()
    digest = hashlib.sha256(f"{name.lower()}|{today}".encode()).digest()
    celsius = round(-5 + digest[0] / 255 * 35, 1)
    temp = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32, 1)
    return {
        "city": name,
        "date": today,
        "temperature": temp,
        "unit": unit,
        "condition": _CONDITIONS[digest[1] % len(_CONDITIONS)],
        "humidity_percent": 30 + digest[2] % 60,
        "note": "simulated data, not a real forecast",
    }


# -- notes: an offline knowledge base with BM25 ranking -----------------------------

_WORD = re.compile(r"[a-z0-9]+")


def _terms(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@lru_cache(maxsize=1)
def _notes() -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(NOTES_DIR.glob("*.md"))}


@lru_cache(maxsize=1)
def _index() -> tuple[dict[str, list[str]], dict[str, int], float]:
    docs = {name: _terms(text) for name, text in _notes().items()}
    df: dict[str, int] = {}
    for terms in docs.values():
        for term in set(terms):
            df[term] = df.get(term, 0) + 1
    avg = sum(len(t) for t in docs.values()) / max(len(docs), 1)
    return docs, df, avg


def bm25(query: str, k1: float = 1.5, b: float = 0.75) -> list[tuple[str, float]]:
    """Rank every note for the query with Okapi BM25; best first, zero scores dropped."""
    docs, df, avg = _index()
    n = len(docs)
    scores = []
    for name, terms in docs.items():
        score = 0.0
        for q in set(_terms(query)):
            f = terms.count(q)
            if not f:
                continue
            idf = math.log(1 + (n - df[q] + 0.5) / (df[q] + 0.5))
            score += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(terms) / avg))
        if score > 0:
            scores.append((name, score))
    return sorted(scores, key=lambda s: (-s[1], s[0]))


@tool
def search_notes(query: str, limit: int = 3) -> list[dict]:
    """Search the offline knowledge base of notes (BM25 ranking). Returns note ids, titles and scores; read one with read_note."""
    if not 1 <= limit <= 10:
        raise ValueError("limit must be between 1 and 10")
    notes = _notes()
    hits = bm25(query)[:limit]
    if not hits:
        return [{"result": f"no note matches {query!r}"}]
    return [{"id": name, "title": notes[name].splitlines()[0].lstrip("# "), "score": round(s, 3)} for name, s in hits]


@tool
def read_note(note_id: str) -> str:
    """Read one note of the knowledge base by its id (as returned by search_notes)."""
    notes = _notes()
    if note_id not in notes:
        close = [name for name, _ in bm25(note_id.replace("-", " "))[:3]]
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise KeyError(f"no note with id {note_id!r}.{hint}")
    return notes[note_id]


# -- clock, flaky, slow -------------------------------------------------------------


@tool
def clock(timezone_offset_hours: float = 0.0) -> str:
    """The current date and time, in UTC or at a fixed offset in hours."""
    from datetime import timedelta

    if not -14 <= timezone_offset_hours <= 14:
        raise ValueError("timezone_offset_hours must be between -14 and 14")
    now = datetime.now(timezone(timedelta(hours=timezone_offset_hours)))
    return now.isoformat(timespec="seconds")


_flaky_lock = threading.Lock()
_flaky_calls: dict[int, int] = {}


@tool
def flaky(message: str, seed: int = 0, failure_rate: float = 0.5) -> str:
    """Echo the message, but fail on a seeded schedule: the n-th call with a seed fails when a seeded draw is below failure_rate."""
    if not 0 <= failure_rate <= 1:
        raise ValueError("failure_rate must be between 0 and 1")
    with _flaky_lock:
        n = _flaky_calls.get(seed, 0)
        _flaky_calls[seed] = n + 1
    if random.Random(seed * 1_000_003 + n).random() < failure_rate:
        raise RuntimeError(f"simulated failure on call {n + 1} for seed {seed}; try again")
    return f"echo (call {n + 1}): {message}"


def reset_flaky() -> None:
    """Forget how many times flaky was called (tests use this)."""
    with _flaky_lock:
        _flaky_calls.clear()


@tool(timeout_s=60)
def slow(seconds: float) -> str:
    """Sleep for the given number of seconds (at most 60), then say how long it slept."""
    if not 0 <= seconds <= 60:
        raise ValueError("seconds must be between 0 and 60")
    time.sleep(seconds)
    return f"slept {seconds:g} s"


# -- read_file in a sandbox ---------------------------------------------------------

READ_CAP_BYTES = 200_000
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def sandbox_dir() -> Path:
    """The folder read_file may read: AGENTCORE_SANDBOX, or the bundled sample files."""
    return Path(os.environ.get("AGENTCORE_SANDBOX") or DEFAULT_SANDBOX).resolve()


def _open_inside(root: Path, parts: tuple[str, ...]) -> int:
    """Open root/parts one component at a time, following no symbolic link, so nothing swapped in leads out.

    The parts come from a resolved path, which has no links left in it: a link met here was put
    there after the check, and the open fails instead of following it.
    """
    fd = os.open(root, os.O_RDONLY | _DIRECTORY)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            # non-blocking, so that opening a FIFO with no writer returns at once, to be refused below
            flags = os.O_RDONLY | _NOFOLLOW | (_NONBLOCK if last else _DIRECTORY)
            try:
                child = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(part, fd):
                    raise PermissionError(f"{part!r} became a link while it was being opened; not followed") from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _read_capped(fd: int, cap: int) -> tuple[bytes, bool]:
    """At most `cap` bytes of the file, and whether there was more: reads cap + 1 bytes, never the whole file."""
    chunks, left = [], cap + 1
    while left > 0:
        chunk = os.read(fd, min(left, 65536))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    data = b"".join(chunks)
    return data[:cap], len(data) > cap


@tool(isolated=True)
def read_file(path: str) -> str:
    """Read a text file from the sandbox folder. Paths are relative to the sandbox; use "." to list it."""
    root = sandbox_dir()
    target = (root / path).resolve()
    if target != root and root not in target.parents:
        raise PermissionError(f"{path!r} is outside the sandbox; only files under the sandbox folder can be read")
    try:
        fd = _open_inside(root, target.relative_to(root).parts)
    except FileNotFoundError:
        raise FileNotFoundError(f"no file {path!r} in the sandbox") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            with os.scandir(fd) as entries:
                names = sorted(e.name + ("/" if e.is_dir() else "") for e in entries)
            return "\n".join(names) or "(empty folder)"
        if not stat.S_ISREG(mode):
            raise PermissionError(f"{path!r} is not a regular file (a pipe, device or socket); only files can be read")
        data, more = _read_capped(fd, READ_CAP_BYTES)
    finally:
        os.close(fd)
    text = data.decode("utf-8", errors="replace")
    return f"{text}\n[the file is longer: reading stopped after {READ_CAP_BYTES:,} bytes]" if more else text


DEFAULT_TOOLS = ("get_weather", "calculator")  # what the app and the CLI offer a run that names no tools
TOOLBOX: dict[str, Tool] = {
    t.name: t for t in (calculator, get_weather, search_notes, read_note, clock, flaky, slow, read_file)
}


def built_in(specs: Iterable[Any]) -> list[Tool]:
    """The toolbox's tools among a run's tool specs (anything with a `name`), in their order; the others left out
    (a run imported, or made with an MCP server's tools, names tools this toolbox does not have)."""
    return [TOOLBOX[s.name] for s in specs if s.name in TOOLBOX]


def get_tools(names: list[str] | str | None) -> list[Tool]:
    """Look up toolbox tools by name (a list or "a,b"); an unknown name is a UsageError."""
    if names is None:
        return []
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in names if n not in TOOLBOX]
    if unknown:
        raise UsageError(f"unknown tool {unknown[0]!r}; available: {', '.join(TOOLBOX)}")
    return [TOOLBOX[n] for n in names]

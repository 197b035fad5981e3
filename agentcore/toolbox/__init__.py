"""Built-in demo tools and their offline data. Nothing here touches the network."""

from __future__ import annotations

import ast
import hashlib
import math
import operator
import os
import random
import re
import threading
import time
from datetime import UTC, datetime, timezone
from functools import lru_cache
from pathlib import Path

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


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 1000:
            raise ValueError("exponent too large")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS and not node.keywords:
        return _FUNCS[node.func.id](*(_evaluate(a) for a in node.args))
    raise ValueError(f"unsupported expression element: {ast.dump(node)[:60]}")


@tool
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


def sandbox_dir() -> Path:
    """The folder read_file may read: AGENTCORE_SANDBOX, or the bundled sample files."""
    return Path(os.environ.get("AGENTCORE_SANDBOX") or DEFAULT_SANDBOX).resolve()


@tool
def read_file(path: str) -> str:
    """Read a text file from the sandbox folder. Paths are relative to the sandbox; use "." to list it."""
    root = sandbox_dir()
    target = (root / path).resolve()
    if target != root and root not in target.parents:
        raise PermissionError(f"{path!r} is outside the sandbox; only files under the sandbox folder can be read")
    if target.is_dir():
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in target.iterdir())
        return "\n".join(names) or "(empty folder)"
    if not target.exists():
        raise FileNotFoundError(f"no file {path!r} in the sandbox")
    data = target.read_bytes()[:200_000]
    return data.decode("utf-8", errors="replace")


TOOLBOX: dict[str, Tool] = {
    t.name: t for t in (calculator, get_weather, search_notes, read_note, clock, flaky, slow, read_file)
}


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

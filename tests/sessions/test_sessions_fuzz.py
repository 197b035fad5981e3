"""A fuzz of the session importers: mutated ATIF, Claude Code and Codex files give a run or a one-line refusal.

Each case takes one file (the project's fixtures, and the real samples beside the repository where they are)
and mutates it: a value somewhere in a record swapped for one of another type or out of range, a key dropped,
lines repeated, swapped, cut or flipped. Every case must give runs that are valid and write as transcripts that
read back, or a TranscriptError of one line. `make test` runs FUZZ_CASES cases from a fixed seed; set
AGENTCORE_FUZZ_CASES (and AGENTCORE_FUZZ_SEED) for a longer run.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from agentcore.errors import TranscriptError
from agentcore.messages import validate_messages
from agentcore.sessions import read_import
from agentcore.transcript import dumps, loads

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sessions"
REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "sessions"
FUZZ_CASES = int(os.environ.get("AGENTCORE_FUZZ_CASES", "300"))
SEED = int(os.environ.get("AGENTCORE_FUZZ_SEED", "20261201"))
LARGEST_SAMPLE = 200_000  # bytes: the larger real samples only in a longer run
ODD_VALUES: list[Any] = [
    None,
    -1,
    0,
    10**20,
    1.5,
    float("inf"),
    True,
    "",
    "x" * 3,
    "\ud800",
    "../../../etc/passwd",
    [],
    {},
    [None],
    {"type": None},
    {"type": "tool_use"},
    {"type": "tool_result"},
    "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
]


def corpus() -> list[Path]:
    files = sorted(p for p in FIXTURES.rglob("*") if p.is_file())
    if REFERENCE.is_dir():
        limit = None if "AGENTCORE_FUZZ_CASES" in os.environ else LARGEST_SAMPLE
        files += sorted(
            p
            for p in REFERENCE.rglob("*")
            if p.suffix in (".json", ".jsonl") and (limit is None or p.stat().st_size <= limit)
        )
    return files


def mutate_data(data: Any, rng: random.Random) -> Any:
    """The data with one value somewhere in it replaced, removed, or nested deeper."""
    path: list[Any] = []
    node = data
    while isinstance(node, dict | list) and node and rng.random() < 0.8:
        key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
        path.append(key)
        node = node[key]
    if not path:
        return rng.choice(ODD_VALUES)
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    choice = rng.random()
    if choice < 0.2 and isinstance(parent, dict):
        del parent[path[-1]]
    elif choice < 0.3:
        parent[path[-1]] = [[[[parent[path[-1]]]]]]
    elif choice < 0.4 and isinstance(node, str):
        parent[path[-1]] = node * rng.randint(2, 50)
    else:
        parent[path[-1]] = rng.choice(ODD_VALUES)
    return data


def mutate(raw: bytes, rng: random.Random) -> bytes:
    lines = raw.split(b"\n")
    kind = rng.random()
    if kind < 0.1:  # cut anywhere
        return raw[: rng.randrange(len(raw) + 1)]
    if kind < 0.15:  # a byte flipped
        at = rng.randrange(len(raw))
        return raw[:at] + bytes([raw[at] ^ (1 << rng.randrange(8))]) + raw[at + 1 :]
    if kind < 0.25 and len(lines) > 2:  # lines repeated or swapped
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        lines.insert(rng.randrange(len(lines)), lines[i])
        return b"\n".join(lines)
    if len([x for x in lines if x.strip()]) > 1:  # JSON Lines: one record mutated, a few times
        for _ in range(rng.randint(1, 4)):
            i = rng.choice([k for k, x in enumerate(lines) if x.strip()])
            try:
                lines[i] = json.dumps(mutate_data(json.loads(lines[i]), rng)).encode()
            except ValueError:
                continue
        return b"\n".join(lines)
    data = json.loads(raw)
    for _ in range(rng.randint(1, 4)):
        data = mutate_data(data, rng)
    return json.dumps(data).encode()


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@pytest.mark.timeout(max(600, 2 * FUZZ_CASES))  # a longer run takes up to about a second a case on the larger files
def test_every_mutated_session_gives_a_run_or_a_one_line_refusal() -> None:
    files = corpus()
    rng = random.Random(SEED)
    originals = {p: p.read_bytes() for p in files}
    outcomes = {"runs": 0, "refused": 0}
    for case in range(FUZZ_CASES):
        path = files[case % len(files)]
        raw = mutate(originals[path], rng)
        where = f"case {case} (seed {SEED}) from {path.name}"
        try:
            got = read_import(raw, path.name)
        except TranscriptError as exc:
            assert "\n" not in str(exc), where
            outcomes["refused"] += 1
            continue
        for run in got.runs:
            assert validate_messages(run.messages) == [], where
            assert loads(dumps(run)).messages == run.messages, where
        outcomes["runs"] += 1
    assert outcomes["runs"] and outcomes["refused"], outcomes  # the fuzz reaches both ends


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="the session fixtures are missing")
def test_the_fuzz_mutations_change_the_files() -> None:
    rng = random.Random(SEED)
    raw = (FIXTURES / "codex_rollout.jsonl").read_bytes()
    assert sum(mutate(raw, rng) != raw for _ in range(50)) >= 45

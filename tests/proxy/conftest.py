"""The tests of the recording proxy: `rig_of` starts one in front of a stand-in upstream (support.proxy_rig)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.proxy_rig import Rig, start_rig
from support.stand_in import Reply


@pytest.fixture
def rig_of(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Any]:
    """rig_of(*replies, **config): a proxy in front of a stand-in giving `replies`, stopped after the test."""
    started: list[Iterator[Rig]] = []

    def make(*replies: Reply, **config: Any) -> Rig:
        gen = start_rig(tmp_path, list(replies), **config)
        started.append(gen)
        return next(gen)

    yield make
    for gen in started:
        next(gen, None)

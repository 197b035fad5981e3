"""bench/class_load.py with two app servers over one PostgreSQL: the sessions are dealt to both, every run checked."""

from __future__ import annotations

import importlib
import sys

import pytest
from support.servers import ROOT

sys.path.insert(0, str(ROOT / "bench"))
class_load = importlib.import_module("class_load")


def test_two_servers_share_the_sessions_and_every_run_is_in_the_one_database(pg_url, tmp_path):
    level = class_load.measure_level(4, "scripted", 2, 0.2, 7, tmp_path, replicas=2, db=pg_url)
    assert level.errors == []
    assert len(level.latencies) == 8 and level.replicas == 2
    assert sorted(level.per_server.values()) == [2, 2]
    from agentcore.store.runs import Store

    owners = {r.owner for r in Store(pg_url, teacher=True).list_runs()}
    assert len({o for o in owners if o.startswith("learner-")}) == 4 and len(owners) == 6  # and the 2 warm-ups


def test_a_session_missing_from_the_database_is_an_error(pg_url, tmp_path, monkeypatch):
    learner = class_load.Learner("learner-01.x", latencies=[0.1])
    class_load._check_saved(pg_url, [learner])
    assert learner.problems == ["0 runs saved under learner-01.x, not 1"]


def test_replicas_need_a_postgresql_database(capsys):
    with pytest.raises(SystemExit):
        class_load.main(["--replicas", "2", "--sessions", "2"])
    assert "--replicas needs --db postgresql://" in capsys.readouterr().err

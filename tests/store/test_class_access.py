"""Private runs and teachers: who sees which runs, through every reader of the store, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from support.runs import titled_run

from agentcore.annotations import Annotation
from agentcore.cli.main import main
from agentcore.store import Store, StoreError, Teachers, Viewer, is_teacher


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request, tmp_path):
    """A fresh runs database: a SQLite file, or a PostgreSQL database of its own."""
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def klass(where, monkeypatch):
    """A class of two students and a teacher, each with a run; private runs on."""
    monkeypatch.setenv("AGENTCORE_TEACHERS", "tina")
    monkeypatch.setenv("AGENTCORE_PRIVATE_RUNS", "1")
    ada, bob = Store(where, owner="ada"), Store(where, owner="bob")
    mine = titled_run("What is the weather in Oslo? ada-secret-prompt", "ada's secret title")
    ada.save_run(mine)
    ada.annotate(mine.id, Annotation(step=1, note="ada's own note", labels=["good"]))
    theirs = titled_run("bob's prompt", "bob's run")
    bob.save_run(theirs)
    return where, mine, theirs


def test_teachers_are_named_or_marked_by_a_header():
    teachers = Teachers.from_env("tina, X-Forwarded-Groups: teachers, ,bad:")
    assert teachers.includes("tina")
    assert not teachers.includes("ada")
    assert teachers.includes("ada", {"x-forwarded-groups": "students, teachers"})
    assert not teachers.includes("ada", {"X-Forwarded-Groups": "students"})
    assert not teachers.includes("ada", {"X-Other": "teachers"})


def test_without_private_runs_everyone_sees_every_run(where, monkeypatch):
    monkeypatch.delenv("AGENTCORE_PRIVATE_RUNS", raising=False)
    Store(where, owner="ada").save_run(titled_run("hi", "ada's"))
    assert [r.title for r in Store(where, owner="bob").list_runs()] == ["ada's"]


def test_a_student_sees_only_their_own_runs_through_every_reader(klass):
    where, mine, theirs = klass
    bob = Store(where, owner="bob")
    assert [r.id for r in bob.list_runs()] == [theirs.id]
    assert [r.id for r in bob.list_runs("secret")] == []
    assert bob.owners() == ["bob"]
    assert bob.summary(mine.id) is None
    assert bob.change_mark()[0] == 1
    for read in (bob.read_run, bob.load_run, bob.load_data):
        with pytest.raises(StoreError) as refused:
            read(mine.id)
        assert "secret" not in str(refused.value) and mine.id in str(refused.value)
    assert bob.annotations(mine.id) == [] and Store(where, owner="ada").annotations(mine.id)
    assert mine.id not in bob.annotations_by_run()
    assert all(s.id != mine.id for s, _ in bob.annotated_runs())
    assert bob.lineage(mine.id) == [] and bob.fork_tree(mine.id) is None
    with pytest.raises(StoreError, match="no run"):
        bob.set_title(mine.id, "renamed by bob")
    with pytest.raises(StoreError, match="no run"):
        bob.delete_run(mine.id)
    with pytest.raises(StoreError, match="no run"):
        bob.annotate(mine.id, Annotation(step=1, note="x", labels=["looped"]))


def test_a_students_fork_of_their_own_run_stays_out_of_a_classmates_fork_tree(klass):
    where, mine, theirs = klass
    bob = Store(where, owner="bob")
    bob.save_run(titled_run("", "", parent=theirs))
    ada = Store(where, owner="ada")
    ada.save_run(titled_run("", "", parent=mine))
    assert [c.owner for c in bob.children(theirs.id)] == ["bob"]
    assert bob.children(mine.id) == []


def test_a_teacher_sees_every_run_and_labels_it_as_themselves_but_cannot_rename_or_delete_it(klass):
    where, mine, theirs = klass
    tina = Store(where, owner="tina")
    assert tina.viewer == Viewer("tina", teacher=True)
    assert {r.id for r in tina.list_runs()} == {mine.id, theirs.id}
    assert tina.owners() == ["ada", "bob"]
    assert tina.read_run(mine.id).title == "ada's secret title"
    label = tina.annotate(mine.id, Annotation(step=1, note="look at the arguments", labels=["wrong arguments"]))
    assert label.author == "tina"
    assert [a.author for a in Store(where, owner="ada").annotations(mine.id)] == ["ada", "tina"]
    with pytest.raises(StoreError, match="only its owner may rename"):
        tina.set_title(mine.id, "renamed")
    with pytest.raises(StoreError, match="only its owner may delete"):
        tina.delete_run(mine.id)


def test_a_teacher_by_header_is_a_teacher_only_when_the_store_is_told(klass):
    where, mine, _ = klass
    assert not is_teacher("greta")
    assert Store(where, owner="greta").summary(mine.id) is None
    assert Store(where, owner="greta", teacher=True).summary(mine.id) is not None


def test_the_cli_lists_and_exports_only_the_users_own_runs(klass, monkeypatch, capsys, tmp_path):
    where, mine, theirs = klass
    monkeypatch.setenv("AGENTCORE_USER", "bob")
    assert main(["runs", "list", "--db", where]) == 0
    listed = capsys.readouterr().out
    assert theirs.id in listed and mine.id not in listed and "secret" not in listed
    assert main(["runs", "show", mine.id, "--db", where]) != 0
    shown = capsys.readouterr()
    assert "secret" not in shown.out + shown.err
    monkeypatch.setenv("AGENTCORE_USER", "tina")
    assert main(["runs", "list", "--db", where]) == 0
    assert mine.id in capsys.readouterr().out

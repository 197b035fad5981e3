"""Annotations: a person's labels on a step or a tool call, kept in both stores, carried by the transcript, counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcore import Agent, Run, RunConfig, cli, create_provider, toolbox, transcript
from agentcore.annotations import LABELS, Annotation, count_labels, make_annotation
from agentcore.errors import TranscriptError, UsageError
from agentcore.messages import AssistantMessage, ToolCall
from agentcore.providers.scripted import ScriptedProvider, get_scenario
from agentcore.secrets import register_secret
from agentcore.store.runs import RunChanged, Store, StoreError
from agentcore.testing import pinned
from agentcore.testing.labelled import from_annotation
from agentcore.testing.runner import REPLAY, parse_config, run_cell


def scripted_run(scenario: str = "research", model: str | None = None) -> Run:
    sc = get_scenario(scenario)
    tools = toolbox.get_tools(",".join(sc.tools))
    config = RunConfig(provider="scripted", model=model or scenario, scenario=scenario, tools=[t.spec() for t in tools])
    run = Run.start(sc.prompt, config)
    Agent(create_provider("scripted", scenario, scenario=scenario), tools).run(run)
    return run


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])  # a real server
def location(request, tmp_path: Path) -> str:
    return str(tmp_path / "runs.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")


@pytest.fixture
def store(location: str) -> Store:
    s = Store(location, owner="ada")
    yield s
    s.close()


def wrong_tool(**more) -> Annotation:
    return make_annotation(
        step=2,
        tool_call_id="call_2_0",
        labels=["wrong arguments"],
        tags=["notes"],
        score=0.25,
        note="it read the wrong note",
        correct_call={"name": "read_note", "arguments": {"note_id": "step-budget"}},
        **more,
    )


def test_an_annotation_on_a_step_and_one_on_a_tool_call_are_kept_with_their_author(store: Store) -> None:
    run = scripted_run()
    store.save_run(run)
    on_call = store.annotate(run.id, wrong_tool())
    on_step = store.annotate(run.id, make_annotation(step=10, labels=["good"], note="a fair summary"), user="bob")

    assert (on_call.author, on_step.author) == ("ada", "bob")
    assert store.annotations(run.id) == [on_call, on_step]
    kept = store.read_run(run.id).annotations
    assert kept == [on_call, on_step]
    assert kept[0].correct_call.text == 'read_note({"note_id": "step-budget"})'
    assert store.check() == "ok"


def test_labelling_a_run_is_not_a_new_revision_so_the_session_stepping_it_saves_on_and_keeps_the_label(
    location: str,
) -> None:
    run = scripted_run()
    stepping = Store(location, owner="ada")
    stepping.save_run(run)
    labelling = Store(location, owner="bob")
    labelling.annotate(run.id, make_annotation(step=1, labels=["good"]))
    run.title = "renamed while labelled"
    stepping.save_run(run)  # would raise RunChanged if labelling had been a save of the run
    assert [a.labels for a in stepping.annotations(run.id)] == [["good"]]
    assert stepping.read_run(run.id).title == "renamed while labelled"
    stepping.close()
    labelling.close()


def test_a_step_the_run_lacks_or_a_call_its_step_did_not_make_is_refused_in_one_line(store: Store) -> None:
    run = scripted_run()
    store.save_run(run)
    with pytest.raises(UsageError, match="has 10 steps, not a step 11"):
        store.annotate(run.id, make_annotation(step=11, labels=["looped"]))
    with pytest.raises(UsageError, match=r"step 2 made call_2_0, not a call 'call_1_0'") as caught:
        store.annotate(run.id, make_annotation(step=2, tool_call_id="call_1_0", labels=["looped"]))
    assert "\n" not in str(caught.value)
    with pytest.raises(StoreError, match="no run"):
        store.annotate("nope", make_annotation(step=1, labels=["looped"]))
    assert store.annotations(run.id) == []


def test_only_its_author_removes_an_annotation_and_deleting_the_run_removes_them_all(store: Store) -> None:
    run = scripted_run()
    store.save_run(run)
    mine = store.annotate(run.id, make_annotation(step=1, labels=["good"]))
    with pytest.raises(StoreError, match="only its author"):
        store.delete_annotation(run.id, mine.id, user="bob")
    store.delete_annotation(run.id, mine.id)
    assert store.annotations(run.id) == []
    store.annotate(run.id, make_annotation(step=1, labels=["good"]))
    store.delete_run(run.id)
    assert store.annotations_by_run() == {}


def test_export_and_import_keep_the_annotations_and_a_fork_starts_without_them(store: Store) -> None:
    run = scripted_run()
    store.save_run(run)
    store.annotate(run.id, wrong_tool())
    text = transcript.dumps(store.read_run(run.id))
    assert '"annotations"' in text

    imported = store.import_run(transcript.loads(text))
    assert imported.id != run.id  # the id was taken: a fresh one
    assert store.annotations(imported.id) == store.annotations(run.id)
    assert transcript.loads(transcript.dumps(store.read_run(imported.id))).annotations == store.annotations(run.id)
    assert store.read_run(run.id).fork(3).annotations == []


def test_a_transcript_without_annotations_loads_and_is_written_without_the_field() -> None:
    run = scripted_run("weather")
    text = transcript.dumps(run)
    assert "annotations" not in text
    assert transcript.loads(text).annotations == []


def test_an_imported_annotation_on_a_step_the_run_lacks_is_refused() -> None:
    data = transcript.to_dict(scripted_run("weather"))
    data["annotations"] = [{"step": 9, "labels": ["looped"]}]
    with pytest.raises(TranscriptError, match="annotation .* is on step 9; the run has 2 steps"):
        transcript.from_dict(data)
    data["annotations"] = [{"step": 1, "labels": ["made up"]}]
    with pytest.raises(TranscriptError, match=r"annotations\[0\]\.labels\[0\]"):
        transcript.from_dict(data)


def test_copying_a_library_copies_its_annotations(tmp_path: Path) -> None:
    source, target = Store(tmp_path / "a.db", owner="ada"), Store(tmp_path / "b.db")
    run = scripted_run()
    source.save_run(run)
    source.annotate(run.id, wrong_tool())
    assert target.copy_from(source) == (1, 0)
    assert target.annotations(run.id) == source.annotations(run.id)


def test_the_labelled_runs_filter_by_provider_model_owner_and_tag(store: Store, location: str) -> None:
    research, weather = scripted_run(), scripted_run("weather")
    store.save_run(research)
    bobs = Store(location, owner="bob")
    bobs.save_run(weather)
    store.annotate(research.id, wrong_tool())
    store.annotate(research.id, make_annotation(step=3, labels=["wrong arguments", "looped"]))
    store.annotate(weather.id, make_annotation(step=1, labels=["good"], tags=["city"]))
    store.save_run(scripted_run("tool_error"))  # not labelled: not listed

    def ids(**filters) -> list[str]:
        return sorted(s.id for s, _ in store.annotated_runs(**filters))

    assert ids() == sorted([research.id, weather.id])
    assert ids(model="weather") == [weather.id]
    assert ids(provider="scripted") == sorted([research.id, weather.id])
    assert ids(provider="openai") == []
    assert ids(owner="ada") == [research.id]
    assert ids(tag="city") == [weather.id]
    counts = count_labels(a for _, labels in store.annotated_runs() for a in labels)
    assert counts == {"wrong arguments": 2, "looped": 1, "good": 1, "notes": 1, "city": 1}
    bobs.close()


def test_a_persons_text_is_bounded_checked_and_refused_in_one_line() -> None:
    with pytest.raises(UsageError, match="labels.0: Input should be 'wrong tool'") as caught:
        make_annotation(step=1, labels=["bad\nlabel"])
    assert "\n" not in str(caught.value)
    with pytest.raises(UsageError, match="note: String should have at most 2000 characters"):
        make_annotation(step=1, note="x" * 2001)
    with pytest.raises(UsageError, match="score"):
        make_annotation(step=1, score=float("nan"))
    with pytest.raises(UsageError, match="free label is at most 40"):
        make_annotation(step=1, tags=["t" * 41])
    with pytest.raises(UsageError, match="without control or format characters"):
        make_annotation(step=1, tags=["abc\u202edef"])
    with pytest.raises(UsageError, match="needs a label"):
        make_annotation(step=1, tags=["  "], note=" ")
    with pytest.raises(UsageError, match="correct_call.name"):
        make_annotation(step=1, correct_call={"name": "get\nweather"})
    tidy = make_annotation(step=1, labels=["good", "good"], tags=[" two  words ", "two words"])
    assert (tidy.labels, tidy.tags) == (["good"], ["two words"])
    assert set(LABELS) >= {"wrong tool", "hallucinated a fact", "stopped too early", "ignored the result"}


def test_a_secret_in_a_note_never_reaches_the_database(store: Store, location: str) -> None:
    secret = "sk-annotated-0123456789abcdefSECRET"
    register_secret(secret)
    run = scripted_run("weather")
    store.save_run(run)
    store.annotate(run.id, make_annotation(step=1, note=f"the key {secret} leaked", labels=["good"]))
    assert secret not in store.annotations(run.id)[0].note
    if not location.startswith("postgres"):
        written = b"".join(p.read_bytes() for p in Path(location).parent.glob(Path(location).name + "*"))
        assert b"the key" in written and secret.encode() not in written


def test_save_run_does_not_refuse_on_a_label_made_elsewhere(location: str) -> None:
    # the revision check still guards a real conflicting save
    run = scripted_run("weather")
    first, second = Store(location), Store(location)
    first.save_run(run)
    second.load_run(run.id)
    second.annotate(run.id, make_annotation(step=1, labels=["good"]))
    second.save_run(run)
    with pytest.raises(RunChanged):
        first.save_run(run)
    first.close()
    second.close()


# -- a labelled step with a correct call becomes a pinned test -----------------------------------------------


def corrected(run: Run, step: int, call: ToolCall) -> Run:
    """The run made again by a model whose reply at `step` makes `call` and whose other replies are the run's."""
    turns = [m for m in run.messages if isinstance(m, AssistantMessage)]
    turns[step - 1] = AssistantMessage(tool_calls=(call,))
    again = Run.start(run.messages[0].content, run.config.model_copy(deep=True))
    tools = toolbox.get_tools(",".join(t.name for t in run.config.tools))
    Agent(ScriptedProvider(replay=turns), tools).run(again)
    return again


def test_make_this_a_test_fails_on_the_labelled_run_and_passes_on_a_corrected_one(tmp_path: Path) -> None:
    run = scripted_run()
    label = wrong_tool()
    test = from_annotation(run, label)
    assert test.expect.tool_calls.step == 2 and test.expect.model_dump(exclude_defaults=True).keys() == {"tool_calls"}
    assert test.prompt == run.messages[0].content and test.pinned.id == run.id

    # through its file, as the Tests page and `agentcore test` read it
    path = tmp_path / "labelled.json"
    path.write_text(pinned.dumps(test))
    test = pinned.load(path)
    failures = pinned.check(test.expect, run)
    assert [f.expectation for f in failures] == ["tool_calls (contains) at step 2"]
    assert 'read_note with arguments {"note_id": "step-budget"} not found among: read_note' in failures[0].message
    assert run_cell(test, parse_config(REPLAY)).failures  # replaying the labelled run's turns fails it too

    fixed = corrected(run, 2, ToolCall(id="call_2_0", name="read_note", arguments={"note_id": "step-budget"}))
    assert "Step budgets" in fixed.messages[4].content  # the tool ran with the correct arguments
    assert pinned.check(test.expect, fixed) == []
    wrong_later = corrected(run, 3, ToolCall(id="x", name="read_note", arguments={"note_id": "step-budget"}))
    assert pinned.check(test.expect, wrong_later)  # the right call one step late is not the labelled step's call


def test_a_label_without_a_correct_call_or_one_the_run_already_made_is_no_test() -> None:
    run = scripted_run()
    with pytest.raises(UsageError, match="no correct call"):
        from_annotation(run, make_annotation(step=2, labels=["looped"]))
    made = make_annotation(step=2, correct_call={"name": "read_note", "arguments": {"note_id": "human-in-the-loop"}})
    with pytest.raises(UsageError, match="already calls read_note"):
        from_annotation(run, made)


def test_a_test_file_without_a_step_in_its_trajectory_reads_and_checks_as_before() -> None:
    run = scripted_run()
    test = pinned.propose(run)
    data = pinned.to_data(test)
    assert "step" not in data["expect"]["tool_calls"]
    assert pinned.check(pinned.from_data(data).expect, run) == []


# -- the command line ----------------------------------------------------------------------------------------


def test_the_cli_annotates_a_call_makes_its_test_and_counts_the_labels(tmp_path: Path, capsys) -> None:
    db = str(tmp_path / "runs.db")
    store = Store(db)
    run = scripted_run()
    store.save_run(run)
    out = tmp_path / "t" / "labelled.yaml"
    code = cli.main(
        [
            "annotate", run.id, "--step", "2", "--call", "call_2_0", "--label", "wrong arguments", "--tag", "notes",
            "--note", "read the wrong note", "--score", "0",
            "--correct-call", '{"name": "read_note", "arguments": {"note_id": "step-budget"}}',
            "--make-test", str(out), "--db", db,
        ]
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert f"annotated step 2, call call_2_0 of run {run.id}: wrong arguments, notes · score 0" in printed
    assert [a.labels for a in store.annotations(run.id)] == [["wrong arguments"]]
    test = pinned.load(out)
    assert [f.expectation for f in pinned.check(test.expect, run)] == ["tool_calls (contains) at step 2"]

    assert cli.main(["annotate", run.id, "--step", "3", "--label", "looped", "--db", db]) == 0
    capsys.readouterr()
    assert cli.main(["errors", "--db", db, "--json"]) == 0
    counts = json.loads(capsys.readouterr().out)
    labels = {"wrong arguments": 1, "looped": 1, "notes": 1}
    assert counts == {
        "runs": 1,
        "annotations": 2,
        "labels": labels,
        "label_total": 3,
        "with_several_labels": 1,
        "sources": {"people": 2, "scanners": 0},
    }
    assert cli.main(["errors", "--db", db, "--tag", "nothing"]) == 0
    assert capsys.readouterr().out.strip() == "no labelled steps match these filters"


def _errors_head(db: str, capsys) -> tuple[str, int]:
    """`agentcore errors`' first line, and what its label counts add up to."""
    import re

    assert cli.main(["errors", "--db", db]) == 0
    head, *rows = capsys.readouterr().out.split("where they are:\n", 1)[0].splitlines()
    return head, sum(int(re.search(r"(\d+)(  \(free label\))?$", row).group(1)) for row in rows)


def test_the_errors_command_states_the_label_total_its_counts_add_up_to_as_the_page_does(tmp_path, capsys) -> None:
    from agentcore.annotations import labels_said

    db = str(tmp_path / "runs.db")
    store = Store(db)
    run = scripted_run()
    store.save_run(run)
    store.annotate(run.id, make_annotation(step=2, labels=["wrong arguments"]))
    store.annotate(run.id, make_annotation(step=3, labels=["looped"]))
    head, added = _errors_head(db, capsys)  # one label on each annotation: the two totals agree
    assert head == "2 labels across 1 run, one on each annotation (2 by people, 0 by scanners)" and added == 2
    store.annotate(run.id, make_annotation(step=4, labels=["looped"], tags=["notes", "slow"]))
    head, added = _errors_head(db, capsys)  # one annotation carries three: 5 labels on 3 annotations
    assert added == 5
    assert head == (
        "5 labels across 1 run, on 3 annotations, 1 of which carries more than one label (3 by people, 0 by scanners)"
    )
    store.annotate(run.id, make_annotation(step=5, note="not sure yet"))  # an annotation with no label at all
    head, added = _errors_head(db, capsys)
    assert added == 5 and head.startswith("5 labels across 1 run, on 4 annotations, 1 of which carries more than one")
    assert "and 1 none" in head
    annotations = store.annotations(run.id)
    assert head.startswith(labels_said(annotations, 1))  # the Error analysis page's caption says the same words
    # two labels on one annotation and none on another add up to the annotations, yet are not one on each
    assert labels_said([make_annotation(step=1, labels=["looped"], tags=["x"]), annotations[-1]], 1) == (
        "2 labels across 1 run, on 2 annotations, 1 of which carries more than one label and 1 none"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--step", "99", "--label", "looped"], "the run has 10 steps, not a step 99"),
        (["--step", "1", "--call", "nope", "--label", "looped"], "step 1 made call_1_0, not a call 'nope'"),
        (["--step", "1", "--correct-call", "[1]"], "--correct-call: a JSON object"),
        (["--step", "1", "--correct-call", "{oops"], "--correct-call: not JSON"),
        (["--step", "1", "--note", "x" * 2001], "note: String should have at most 2000 characters"),
        (["--step", "1", "--label", "looped", "--score", "nan"], "score"),
        # a label that cannot make the test asked for is not kept either: the command can be given again, corrected
        (["--step", "2", "--label", "looped", "--make-test", "never.yaml"], "has no correct call to expect"),
        (
            ["--step", "2", "--correct-call", '{"name": "read_note", "arguments": {"note_id": "human-in-the-loop"}}']
            + ["--make-test", "never.yaml"],
            "already calls read_note",
        ),
    ],
)
def test_a_bad_annotation_on_the_command_line_is_one_line_and_exit_2(tmp_path: Path, capsys, argv, message) -> None:
    db = str(tmp_path / "runs.db")
    run = scripted_run()
    Store(db).save_run(run)
    assert cli.main(["annotate", run.id, *argv, "--db", db]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert Store(db).annotations(run.id) == []


def test_the_opentelemetry_export_carries_each_annotation_as_an_event_on_its_span() -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra (opentelemetry-sdk) is not installed")
    from agentcore.telemetry.otlp import otlp_json

    run = scripted_run()
    run.annotations = [wrong_tool(author="ada"), make_annotation(step=10, labels=["good"], note="fine")]

    def events(content: bool) -> dict[str, list[dict]]:
        data = json.loads(otlp_json(run, content=content))
        spans = [s for r in data["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]
        found = {}
        for span in spans:
            for event in span.get("events", []):
                attributes = {a["key"]: a["value"] for a in event["attributes"]}
                found.setdefault(span["name"], []).append({"name": event["name"], **attributes})
        return found

    plain = events(content=False)
    assert set(plain) == {"execute_tool read_note", "chat research"}
    [on_call] = plain["execute_tool read_note"]
    assert on_call["name"] == "agentcore.annotation"
    assert on_call["agentcore.annotation.labels"] == {"arrayValue": {"values": [{"stringValue": "wrong arguments"}]}}
    assert on_call["agentcore.annotation.score"] == {"doubleValue": 0.25}
    assert on_call["gen_ai.tool.call.id"] == {"stringValue": "call_2_0"}
    assert "agentcore.annotation.note" not in on_call  # a person's words are content: only when asked for
    with_content = events(content=True)
    [on_call] = with_content["execute_tool read_note"]
    assert on_call["agentcore.annotation.note"] == {"stringValue": "it read the wrong note"}
    assert json.loads(on_call["agentcore.annotation.correct_call"]["stringValue"])["name"] == "read_note"
    assert with_content["chat research"][0]["agentcore.annotation.note"] == {"stringValue": "fine"}


def test_annotations_come_back_from_the_opentelemetry_export_when_it_is_imported() -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra (opentelemetry-sdk) is not installed")
    from agentcore.telemetry.importer import from_otlp
    from agentcore.telemetry.otlp import otlp_json

    run = scripted_run()
    run.annotations = [wrong_tool(author="ada"), make_annotation(step=10, labels=["good"], note="fine", score=1)]
    back = from_otlp(otlp_json(run, content=True))
    fields = ("id", "step", "tool_call_id", "labels", "tags", "score", "note", "correct_call", "author")
    assert [a.model_dump(include=set(fields)) for a in back.annotations] == [
        a.model_dump(include=set(fields)) for a in run.annotations
    ]
    assert [a.created_at[:19] for a in back.annotations] == [a.created_at[:19] for a in run.annotations]

    data = json.loads(otlp_json(run, content=True))
    spans = [s for r in data["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]
    event = next(e for s in spans for e in s.get("events", []))
    event["attributes"].append({"key": "agentcore.annotation.labels", "value": {"stringValue": "not a list"}})
    with pytest.raises(TranscriptError, match=r"agentcore\.annotation: labels") as caught:
        from_otlp(json.dumps(data))
    assert "\n" not in str(caught.value)


def test_the_replay_page_shows_each_steps_annotations() -> None:
    from importlib import resources

    from agentcore.exports import REPLAY, export_run

    run = scripted_run()
    run.annotations = [wrong_tool(author="ada"), make_annotation(step=10, labels=["good"])]
    page = export_run(run, REPLAY)
    data = json.loads(page.split('id="run-data"', 1)[1].split(">", 1)[1].split("</script>", 1)[0])
    shown = {s["index"]: s["annotations"] for s in data["steps"] if s["annotations"]}
    assert list(shown) == [2, 10]
    assert shown[2][0]["target"] == "step 2, call call_2_0" and shown[2][0]["author"] == "ada"
    assert shown[2][0]["summary"].startswith("wrong arguments, notes · score 0.25 · should call read_note(")
    script = (resources.files("agentcore") / "replay_page" / "replay.js").read_text("utf-8")
    assert '"Annotation on " + a.target' in script


@pytest.mark.parametrize(
    ("labels", "refused"),
    [
        (["good", "wrong arguments"], True),
        (["good", "looped", "wrong tool"], True),
        (["good"], False),
        (["looped", "wrong tool"], False),
    ],
)
def test_a_new_annotation_saying_good_beside_a_failure_is_refused_and_one_read_back_is_kept(labels, refused):
    if refused:
        with pytest.raises(UsageError, match="contradict each other"):
            make_annotation(step=1, labels=labels)
    else:
        assert make_annotation(step=1, labels=labels).labels == labels
    kept = Annotation.model_validate({"step": 1, "labels": ["good", "wrong tool"]})  # as a library holds it
    assert kept.labels == ["good", "wrong tool"]

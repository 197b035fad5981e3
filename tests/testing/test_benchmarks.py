"""Public benchmark tasks as pinned tests: BFCL multi-turn and AgentDojo, with their own tools and graders.

The CI slice: the first 20 BFCL multi_turn_base tasks and AgentDojo's banking suite. The ground-truth
configuration must pass every one of them (it proves the harness); the scripted model must fail them
on the benchmark's own grader; the embedded model runs a smaller slice (slow).
"""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from support.embedded import embedded_model

from agentcore.cli.main import main
from agentcore.errors import UsageError
from agentcore.messages import AssistantMessage, UserMessage
from agentcore.providers.reference import ReferenceProvider
from agentcore.testing import benchmarks, pinned
from agentcore.testing.expectations import BenchmarkRef, Expectations, PinnedTest
from agentcore.testing.runner import parse_config, play, prepare, reference_departure, run_matrix, said_call
from agentcore.testing.scoreboard import scoreboard, table

pytest.importorskip("bfcl_eval", reason="the bench-tasks tests need bfcl-eval: pip install --no-deps bfcl-eval")
pytest.importorskip("mpmath", reason="BFCL's math class needs mpmath: pip install -e '.[bench-tasks]'")
if importlib.util.find_spec("agentdojo") is None:
    pytest.skip("the bench-tasks tests need agentdojo: pip install -e '.[bench-tasks]'", allow_module_level=True)

from agentcore.testing.benchmarks import bfcl


def _agentdojo():
    """AgentDojo's suites take seconds to import: loaded by the tests that run them, not when tests are collected."""
    from agentcore.testing.benchmarks import agentdojo

    return agentdojo


GROUND_TRUTH, SCRIPTED = parse_config("ground-truth"), parse_config("scripted")


@pytest.fixture(scope="module")
def bfcl_slice() -> list[PinnedTest]:
    tests, skipped = bfcl.import_tasks("multi_turn_base", limit=20)
    assert skipped == []
    return tests


@pytest.fixture(scope="module")
def banking() -> list[PinnedTest]:
    tests, skipped = _agentdojo().import_tasks("banking")
    assert skipped == [] and len(tests) == 16
    return tests


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_the_ground_truth_passes_every_task_of_the_ci_slice_and_the_scripted_model_none(bfcl_slice, banking):
    matrix = run_matrix([*bfcl_slice, *banking], [GROUND_TRUTH, SCRIPTED])
    assert [row[0].failures for row in matrix.cells] == [[]] * 36
    assert not any(row[1].passed for row in matrix.cells[:20])
    # AgentDojo's own utility passes some banking tasks on an untouched environment: those, and only those,
    # the scripted model (which calls no banking tool) passes
    untouched = {t.name for t in banking if _passes_untouched(t)}
    assert {row[1].test for row in matrix.cells[20:] if row[1].passed} == untouched
    assert len(untouched) < 8
    graders = {row[1].failures[-1].expectation for row in matrix.cells if not row[1].passed}
    assert graders == {"benchmark (bfcl)", "benchmark (agentdojo)"}  # failed by the benchmarks' own graders
    assert all(row[1].departed_at == 1 for row in matrix.cells)  # its first step already left the reference
    # the floor: each task's own grader on an untouched environment, read here from AgentDojo directly
    assert matrix.floor == [False] * 20 + [t.name in untouched for t in banking]
    assert matrix.floor_count == (len(untouched), 36)
    gt, scripted = scoreboard(matrix)
    assert (gt.config, gt.passed, gt.tests, scripted.passed) == ("ground-truth", 36, 36, len(untouched))
    assert (gt.passed_doing_nothing, scripted.passed_doing_nothing) == (len(untouched), len(untouched))
    reference = {row[1].test: row[1].reference_move for row in matrix.cells}
    first_calls = [calls[0] for calls in benchmarks.episode(banking[3].benchmark).reference() if calls]
    assert reference[banking[3].name] == said_call(first_calls[0])  # what the reference called at step 1
    assert all(r is None for r in (row[0].reference_move for row in matrix.cells))  # ground truth kept to it
    assert gt.steps == sum(len(row[0].run.steps) for row in matrix.cells)
    assert gt.cost_usd == 0.0 and gt.input_tokens > 0


def _passes_untouched(test: PinnedTest) -> bool:
    episode = benchmarks.episode(test.benchmark)
    passed = episode.task.utility_from_traces("", episode.pre_env, episode.env, [])
    return passed if passed is not None else episode.task.utility("", episode.pre_env, episode.env)


def _played(test: PinnedTest, drop_last_call: bool = False):
    agent, run, episode = prepare(test, GROUND_TRUTH)
    if drop_last_call:  # the reference minus its last call: the end state the grader sees differs
        turns = episode.reference()
        last = max(i for i, t in enumerate(turns) if t)
        turns[last] = turns[last][:-1]
        agent.provider = ReferenceProvider(turns, [episode.reference_answer(i) for i in range(len(turns))])
    play(agent, run, test, episode)
    return run, episode


@pytest.mark.parametrize("category", ["multi_turn_base", "multi_turn_long_context"])
def test_bfcls_grader_fails_a_run_that_leaves_out_one_reference_call(category):
    (test,), _ = bfcl.import_tasks(category, ids=[f"{category}_0"])
    run, episode = _played(test)
    assert episode.grade(run) is None
    run, episode = _played(test, drop_last_call=True)
    assert "multi_turn:" in (episode.grade(run) or "")


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_agentdojos_utility_fails_a_run_that_leaves_out_one_reference_call(banking):
    test = next(t for t in banking if t.benchmark.task_id == "user_task_3")  # a transaction to send
    run, episode = _played(test)
    assert episode.grade(run) is None
    run, episode = _played(test, drop_last_call=True)
    assert episode.grade(run).startswith("utility: UserTask3 is not done")


def test_a_run_that_answers_before_the_reference_is_done_departs_at_that_answer(bfcl_slice):
    run, episode = _played(bfcl_slice[0])
    assert reference_departure(episode.reference(), run) is None
    run, episode = _played(bfcl_slice[0], drop_last_call=True)  # answers where the last turn's last call was due
    assert reference_departure(episode.reference(), run) == len(run.steps)


def test_each_scripted_user_turn_is_sent_once_the_model_has_answered(bfcl_slice):
    test = bfcl_slice[0]
    run, _ = _played(test)
    users = [i for i, m in enumerate(run.messages) if isinstance(m, UserMessage)]
    assert [run.messages[i].content for i in users] == [test.prompt, *test.turns]
    for i in users[1:]:  # each follows an answer: an assistant message that asked for no tool
        before = run.messages[i - 1]
        assert isinstance(before, AssistantMessage) and not before.tool_calls


def test_a_held_back_function_is_offered_only_from_its_turn():
    (test,), _ = bfcl.import_tasks("multi_turn_miss_func", ids=["multi_turn_miss_func_0"])
    agent, run, episode = prepare(test, GROUND_TRUTH)
    assert "sort" not in {t.name for t in run.config.tools} and "sort" in episode.offered(3)
    play(agent, run, test, episode)
    assert episode.grade(run) is None  # the reference calls sort in turn 3: it was offered then
    sort_at = next(
        i
        for i, m in enumerate(run.messages)
        if isinstance(m, AssistantMessage) and m.tool_calls and m.tool_calls[0].name == "sort"
    )
    assert sum(isinstance(m, UserMessage) for m in run.messages[:sort_at]) == 4


def test_each_run_gets_a_fresh_environment(bfcl_slice):
    first = _played(bfcl_slice[0])[1]
    second = _played(bfcl_slice[0])[1]
    assert first.instances["GorillaFileSystem"] is not second.instances["GorillaFileSystem"]
    assert second.grade(_played(bfcl_slice[0])[0]) is None  # the first run's moves are not in the second's state


def test_a_test_file_names_its_task_and_copies_none_of_the_benchmark(bfcl_slice, tmp_path):
    path = tmp_path / "t.json"
    path.write_text(pinned.dumps(bfcl_slice[0]))
    data = json.loads(path.read_text())
    assert data["benchmark"] == {"name": "bfcl", "task_id": "multi_turn_base_0", "category": "multi_turn_base"}
    assert data["expect"] == {"benchmark": True} and len(data["turns"]) == 3
    assert path.stat().st_size < 2000
    assert pinned.load(path) == bfcl_slice[0]


def test_an_unknown_task_or_a_missing_package_is_one_line():
    with pytest.raises(UsageError, match="BFCL multi_turn_base has no task 'nope'"):
        benchmarks.episode(BenchmarkRef(name="bfcl", task_id="nope", category="multi_turn_base"))
    with pytest.raises(UsageError, match="unknown AgentDojo suite 'bank'"):
        benchmarks.episode(BenchmarkRef(name="agentdojo", task_id="user_task_0", category="bank"))


def test_a_missing_package_is_named_with_how_to_install_it(monkeypatch):
    monkeypatch.delitem(sys.modules, "agentcore.testing.benchmarks.agentdojo", raising=False)
    monkeypatch.delattr(benchmarks, "agentdojo", raising=False)
    for name in {"agentdojo", *(m for m in sys.modules if m.startswith("agentdojo."))}:
        monkeypatch.setitem(sys.modules, name, None)  # as where the package is not installed, loaded yet or not
    with pytest.raises(UsageError, match="AgentDojo tasks need agentdojo: pip install agentdojo"):
        benchmarks.episode(BenchmarkRef(name="agentdojo", task_id="user_task_0", category="banking"))


def test_ground_truth_on_a_test_that_is_no_benchmark_task_is_bad_input():
    with pytest.raises(UsageError, match="not a benchmark task"):
        run_matrix([PinnedTest(name="plain", prompt="hi", expect=Expectations())], [GROUND_TRUTH])


def test_bench_import_writes_the_files_and_lists_a_task_it_cannot_build(tmp_path, monkeypatch, capsys):
    entries = dict(bfcl._entries("multi_turn_base"))
    broken = dict(entries["multi_turn_base_1"], involved_classes=["NoSuchAPI"])
    monkeypatch.setattr(
        bfcl,
        "_entries",
        lambda category: {"multi_turn_base_0": entries["multi_turn_base_0"], "multi_turn_base_1": broken},
    )
    code = main(["bench", "import", "bfcl", "--limit", "2", "-o", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 1
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["bfcl-multi_turn_base_0.json"]
    assert "not imported: multi_turn_base_1: 'NoSuchAPI'" in out


def test_agentcore_test_prints_the_scoreboard(tmp_path, capsys):
    assert main(["bench", "import", "agentdojo", "--suite", "banking", "--limit", "2", "-o", str(tmp_path)]) == 0
    code = main(["test", str(tmp_path), "--config", "ground-truth", "--config", "scripted", "--no-db"])
    out = capsys.readouterr().out
    assert code == 1
    board = out.split("scoreboard\n", 1)[1].splitlines()
    assert board[0].split()[:2] == ["configuration", "passed"]
    assert board[1].split()[:3] == ["ground-truth", "2/2", "(100%)"]
    assert board[2].split()[:3] == ["scripted", "0/2", "(0%)"]
    assert "departed from the reference calls at step 1" in out


def test_agentcore_test_on_banking_with_a_model_that_does_nothing_prints_the_floor_beside_the_passes(
    tmp_path, capsys, banking
):
    untouched = sum(_passes_untouched(t) for t in banking)
    assert 0 < untouched < len(banking)
    assert main(["bench", "import", "agentdojo", "--suite", "banking", "-o", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["test", str(tmp_path), "--config", "scripted", "--no-db"]) == 1
    out = capsys.readouterr().out
    board = out.split("scoreboard\n", 1)[1].splitlines()
    rows = {line.split()[2]: line.split()[3:] for line in out.splitlines() if line.startswith("agentdojo banking")}
    assert next(line for line in out.splitlines() if line.startswith("test ")).split()[1:] == ["scripted", "no", "call"]
    assert sum(row == ["pass", "pass"] for row in rows.values()) == untouched  # passed, and passes doing nothing
    assert sum(row == ["FAIL", "fail"] for row in rows.values()) == 16 - untouched
    assert board[0].split()[:4] == ["configuration", "passed", "above", "floor"]
    rate = f"({untouched / len(banking):.0%})"
    assert board[1].split()[:4] == ["scripted", f"{untouched}/16", rate, f"0/{16 - untouched}"]
    assert f"floor: {untouched} of 16 benchmark tasks pass when the model makes no call" in out
    assert "the reference there: " in out


def test_the_scoreboard_table_has_a_row_per_configuration(bfcl_slice):
    matrix = run_matrix(bfcl_slice[:2], [GROUND_TRUTH])
    assert table(scoreboard(matrix)).splitlines()[1].split()[:3] == ["ground-truth", "2/2", "(100%)"]


def test_the_tests_page_shows_the_scoreboard_with_a_chart(tmp_path, monkeypatch, open_app):
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    monkeypatch.setenv("AGENTCORE_TESTS", str(tmp_path / "suite"))
    assert main(["bench", "import", "bfcl", "--limit", "2", "-o", str(tmp_path / "suite")]) == 0
    at = open_app("views/tests.py")
    at.text_area(key="tests_configs").set_value("ground-truth\nscripted").run()
    at.button(key="tests_run").click().run()
    assert not at.exception
    (chart,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "Tasks passed" in c.proto.spec]
    (bar,) = chart["data"]
    assert (bar["x"], bar["y"], bar["text"]) == (["ground-truth", "scripted"], [2, 0], ["2/2", "0/2"])
    assert chart["layout"]["title"]["text"] == "Tasks passed per configuration"
    board = at.dataframe[1].value  # after the test files' table
    assert list(board["configuration"]) == ["ground-truth", "scripted"] and list(board["passed"]) == ["2/2", "0/2"]
    assert list(board["above floor"]) == ["2/2", "0/2"]  # neither task passes with no call
    assert [shape["y0"] for shape in chart["layout"]["shapes"]] == [0]  # the floor's line
    assert any(c.value.startswith("Floor: 0 of 2 benchmark tasks pass") for c in at.caption)
    at.button(key="tests_open_0_1").click().run()  # the scripted model's failing run, at the step it departed
    assert not at.exception
    session = at.session_state["session"]
    assert session.run.title.startswith("test bfcl multi_turn_base_0") and session.inspect_step == 1
    shown = [i.value for i in at.info if i.value.startswith("Test bfcl multi_turn_base_0 on scripted failed")]
    assert shown and "left the path at step 1, where the reference did " in shown[0]
    assert "Steps tab below is open on that step" in shown[0]


@pytest.mark.slow
@pytest.mark.bench  # three graded runs of the embedded model (about three minutes on two cores): `make bench`
def test_the_embedded_model_is_graded_on_a_small_slice():
    embedded_model()
    tests = bfcl.import_tasks("multi_turn_base", limit=1, max_steps=2)[0]
    tests += _agentdojo().import_tasks("banking", limit=2, max_steps=2)[0]
    matrix = run_matrix(tests, [parse_config("local")])
    cells = [row[0] for row in matrix.cells]
    assert all(c.run is not None for c in cells)
    for cell in cells[1:]:  # AgentDojo's banking tools fit the model's window: each run ends and is graded
        assert cell.run.stop_reason in ("answer", "max_steps")
        assert cell.passed or cell.failures[-1].expectation == "benchmark (agentdojo)"
    bfcl_cell = cells[0]  # BFCL's two classes' tools and a few turns can outgrow its 4096 tokens: said so
    assert (
        bfcl_cell.passed
        or bfcl_cell.failures[-1].expectation == "benchmark (bfcl)"
        or (bfcl_cell.errored and "context window" in bfcl_cell.first_failure)
    )
    (score,) = scoreboard(matrix)
    assert score.config == "local" and score.tests == 3 and score.steps >= 3 and score.output_tokens > 0


def test_a_task_whose_reference_calls_a_function_not_yet_offered_is_listed_not_imported():
    tests, skipped = bfcl.import_tasks("multi_turn_miss_func", ids=["multi_turn_miss_func_49"])
    assert tests == []
    ((task_id, reason),) = [(s.task_id, s.reason) for s in skipped]
    assert task_id == "multi_turn_miss_func_49" and "calls tail in turn 1" in reason and "from turn 3" in reason


def test_a_benchmark_expectation_without_a_benchmark_task_is_refused_in_one_line(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps({"format": "agentcore.test", "version": 1, "prompt": "hi", "expect": {"benchmark": True}})
    )
    with pytest.raises(Exception, match="names no benchmark task") as caught:
        pinned.load(path)
    assert "\n" not in str(caught.value)


def test_each_trial_of_a_benchmark_task_starts_from_a_fresh_environment(bfcl_slice, banking):
    # tasks whose reference calls change their environment (files made and moved; money sent): played again on an
    # environment a trial before had changed, the reference's own calls fail or its end state is graded wrong
    chosen = [bfcl_slice[0], next(t for t in banking if t.benchmark.task_id == "user_task_3")]
    matrix = run_matrix(chosen, [GROUND_TRUTH], trials=3)
    for row in matrix.cells:
        (cell,) = row
        assert [t.passed for t in cell.trials] == [True, True, True], [t.failures for t in cell.trials]
        assert len({t.run.id for t in cell.trials}) == 3

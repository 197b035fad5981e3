"""What a failing or flaky trial cell says on the command line and the Tests page: the threshold it missed, how many
trials failed and how many errored (both, when a cell mixes them), and each reason with its count; and what the
scoreboard's time is beside the matrix's wall time. Against an OpenAI-compatible stand-in on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.stand_in import Reply, StandIn

from agentcore.cli.main import main
from agentcore.exports import export_test
from agentcore.testing.pinned import AnswerExpect, Expectations, PinnedTest
from agentcore.testing.trials import Spread

KEY = "stand-in-key-0123456789"


@pytest.fixture
def test_file(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    test = PinnedTest(
        name="times", prompt="What is 17 × 23?", expect=Expectations(answer=AnswerExpect(contains=["391"]))
    )
    path = tmp_path / "times.json"
    path.write_text(export_test(test))
    return path


def _printed(capsys, test_file: Path, server: StandIn, *more: str) -> list[str]:
    main(["test", str(test_file), "--config", f"openai:stand-in@{server.url}/v1", "--no-db", *more])
    return capsys.readouterr().out.splitlines()


def _head(lines: list[str], verdict: str) -> str:
    (head,) = [line for line in lines if line.startswith(f"{verdict} times × ")]
    return head.split("/v1: ", 1)[1]


def _reasons(lines: list[str], trials: int) -> list[str]:
    return sorted(line for line in lines if line.startswith("  ") and f" of {trials} trials: " in line)


def test_three_trials_refused_with_a_401_say_the_reason_and_that_all_three_errored(test_file, capsys):
    with StandIn(Reply.refused()) as server:
        lines = _printed(capsys, test_file, server, "--trials", "3")
    assert len(server.seen) == 3
    assert _head(lines, "ERROR") == "trials: 0/3 passed, under the pass threshold of 1 · 3 errored of 3 trials"
    (why,) = _reasons(lines, 3)
    assert why.startswith("  3 of 3 trials: ") and "401" in why and "Incorrect API key provided" in why
    assert KEY not in "\n".join(lines)


def test_a_cell_mixing_an_error_and_a_wrong_answer_says_how_many_of_each_and_reads_fail(test_file, capsys):
    with StandIn(Reply.refused(), Reply.chat("17 × 23 = 381."), Reply.chat("17 × 23 = 391.")) as server:
        lines = _printed(capsys, test_file, server, "--trials", "3")
    assert len(server.seen) == 3
    assert _head(lines, "FAIL").endswith(" · 1 failed and 1 errored of 3 trials")
    wrong, refused = _reasons(lines, 3)
    assert wrong == "  1 of 3 trials: answer: '17 × 23 = 381.' does not contain '391'"
    assert refused.startswith("  1 of 3 trials: ") and "401" in refused
    # two wrong, one right, against a threshold it clears: FLAKY, how many failed, and why, once each
    replies = (Reply.chat("17 × 23 = 381."), Reply.chat("17 × 23 = 381."), Reply.chat("17 × 23 = 391."))
    with StandIn(*replies) as server:
        lines = _printed(capsys, test_file, server, "--trials", "3", "--pass-threshold", "0.3")
    assert _head(lines, "FLAKY") == "2 failed of 3 trials"
    assert _reasons(lines, 3) == ["  2 of 3 trials: answer: '17 × 23 = 381.' does not contain '391'"]


def test_the_scoreboards_time_is_named_run_time_and_set_beside_the_matrixs_wall_time(test_file, capsys):
    with StandIn(Reply.chat("17 × 23 = 391.")) as server:
        lines = _printed(capsys, test_file, server, "--trials", "3")
    board = lines.index("scoreboard")
    assert lines[board + 1].split()[-2:] == ["run", "time"]
    wall = next(line for line in lines if " passed in " in line).rsplit(" in ", 1)[1]
    (said,) = [line for line in lines if line.startswith("run time: ")]
    assert said == (
        "run time: each configuration's 3 runs' own times added up; the runs ran concurrently, "
        f"and the whole matrix took {wall}"
    )
    with StandIn(Reply.chat("17 × 23 = 391.")) as server:  # one run a configuration: its time is the matrix's
        lines = _printed(capsys, test_file, server)
    assert not [line for line in lines if line.startswith("run time: ")]


def test_a_spread_that_rounds_to_one_figure_says_it_once():
    assert Spread.of([0.41, 0.43]).words(" s", 1) == "0.4 s"
    assert Spread.of([0.41, 0.46]).words(" s", 1) == "0.4 s (0.4 s–0.5 s)"


def test_the_tests_page_says_its_scoreboards_time_is_run_time_beside_the_matrixs_wall_time(
    test_file, tmp_path, monkeypatch, open_app
):
    monkeypatch.setenv("AGENTCORE_TESTS", str(test_file.parent))
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    with StandIn(Reply.refused(), Reply.chat("17 × 23 = 381."), Reply.chat("17 × 23 = 391.")) as server:
        at = open_app("views/tests.py")
        at.text_area(key="tests_configs").set_value(f"openai:stand-in@{server.url}/v1").run()
        at.number_input(key="tests_trials").set_value(3).run()
        at.button(key="tests_run").click().run()
    assert not at.exception and len(server.seen) == 3
    assert [e.value for e in at.error] == ["FAIL: 1 failed and 1 errored of 3 trials"]
    board = next(d.value for d in at.dataframe if "trials passed" in d.value.columns)
    assert "run time (s)" in board.columns and "time (s)" not in board.columns
    wall = next(h.value for h in at.header if h.value.startswith("Matrix: ")).rsplit(" in ", 1)[1]
    (said,) = [c.value for c in at.caption if c.value.startswith("Run time: ")]
    assert said.endswith(f"the whole matrix took {wall}.")

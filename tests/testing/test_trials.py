"""Repeated trials: each cell run N times, read as counts (k/N), pass@1, pass^N, pass@N, flaky, a Wilson interval,
the spread of steps, tokens, cost and time; a threshold for the exit code; JSON and JUnit records of it all.
Against an OpenAI-compatible stand-in on 127.0.0.1 that is right two times in three."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.stand_in import Reply, StandIn

from agentcore.cli.main import main
from agentcore.exports import export_test
from agentcore.testing.pinned import AnswerExpect, Expectations, PinnedTest
from agentcore.testing.trials import Spread, pass_hat_k, wilson

JUNIT_XSD = Path(__file__).parents[1] / "fixtures" / "junit-10.xsd"


# -- the statistics, against tables no one here wrote ----------------------------------------------------------


@pytest.mark.parametrize(
    ("passed", "n", "low", "high"),
    [  # Newcombe (1998), Statistics in Medicine 17:857-872, Table I, method 3 (Wilson score, no correction)
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_the_wilson_interval_matches_newcombes_table(passed, n, low, high):
    got = wilson(passed, n)
    assert (round(got[0], 4), round(got[1], 4)) == (low, high)


def test_the_interval_stays_in_zero_to_one_and_pass_hat_k_is_tau_benchs():
    assert wilson(3, 3)[1] == 1.0 and wilson(0, 3)[0] == 0.0 and wilson(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson(4, 3)
    assert pass_hat_k(4, 6, 1) == pytest.approx(4 / 6)  # pass^1 is the mean
    assert pass_hat_k(4, 6, 2) == pytest.approx(6 / 15)  # C(4,2)/C(6,2)
    assert pass_hat_k(4, 6, 6) == 0 and pass_hat_k(6, 6, 6) == 1
    assert Spread.of([3, 1, 2]).words() == "2 (1–3)" and Spread.of([2, 2]).words() == "2"
    assert Spread.of([1.0, None]).words() == "unknown"  # one trial's cost unknown: the spread is


# -- a model that is right two times in three ------------------------------------------------------------------


def two_in_three(trials: int) -> StandIn:
    """Right, right, wrong, ...: of 6 requests, in whatever order the trials make them, 4 get the right answer."""
    cycle = [Reply.chat("17 × 23 = 391."), Reply.chat("17 × 23 = 391."), Reply.chat("17 × 23 = 381.")]
    return StandIn(*(cycle * (trials // 3)))


@pytest.fixture
def test_file(tmp_path: Path) -> Path:
    test = PinnedTest(
        name="times", prompt="What is 17 × 23?", expect=Expectations(answer=AnswerExpect(contains=["391"]))
    )
    path = tmp_path / "times.json"
    path.write_text(export_test(test))
    return path


def _test(path: Path, url: str, *more: str) -> list[str]:
    return ["test", str(path), "--config", f"openai:stand-in@{url}/v1", "--no-db", *more]


def test_six_trials_of_a_model_right_two_times_in_three_read_4_of_6_flaky_and_fail(
    test_file, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "stand-in-key-0123456789")
    out, junit = tmp_path / "results.json", tmp_path / "junit.xml"
    with two_in_three(6) as server:
        code = main(_test(test_file, server.url, "--trials", "6", "--json", str(out), "--junit", str(junit)))
    printed = capsys.readouterr().out
    assert code == 1 and len(server.seen) == 6
    row = next(line for line in printed.splitlines() if line.startswith("times "))
    assert row.split()[1:] == ["4/6", "FAIL", "flaky"]
    assert f"times × openai:stand-in@{server.url}/v1: 4/6 passed, flaky · pass@1 0.67, pass^6 no, pass@6 yes" in printed
    assert "95% Wilson interval 0.30–0.90" in printed
    assert f"FAIL times × openai:stand-in@{server.url}/v1: trials: 4/6 passed, under the pass threshold of 1" in printed
    (record,) = json.loads(out.read_text())["cells"]
    assert (record["test"], record["config"], record["trials"], record["passed"]) == (
        "times",
        f"openai:stand-in@{server.url}/v1",
        6,
        4,
    )
    assert record["flaky"] and not record["cell_passed"] and record["pass_hat_n"] is False
    assert sorted(o["passed"] for o in record["outcomes"]) == [False, False, True, True, True, True]
    assert all(o["run_id"] for o in record["outcomes"])
    assert "stand-in-key-0123456789" not in out.read_text() + junit.read_text() + printed
    xmlschema = pytest.importorskip("xmlschema", reason="the JUnit schema check needs xmlschema (the test extra)")
    xmlschema.validate(str(junit), xmlschema.XMLSchema(str(JUNIT_XSD)))
    root = ET.parse(junit).getroot()
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props == {"trials": "6", "pass_threshold": "1", "passed: times": "4/6"}
    (failure,) = root.iter("failure")
    assert failure.get("message").startswith("trials: 4/6 passed")


def test_with_a_threshold_of_0_6_the_same_trials_pass_and_the_failed_two_are_flaky_failures(
    test_file, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "stand-in-key-0123456789")
    junit = tmp_path / "junit.xml"
    with two_in_three(6) as server:
        code = main(_test(test_file, server.url, "--trials", "6", "--pass-threshold", "0.6", "--junit", str(junit)))
    printed = capsys.readouterr().out
    assert code == 0
    assert next(line for line in printed.splitlines() if line.startswith("times ")).split()[1:] == [
        "4/6",
        "pass",
        "flaky",
    ]
    assert f"FLAKY times × openai:stand-in@{server.url}/v1" in printed
    xmlschema = pytest.importorskip("xmlschema", reason="the JUnit schema check needs xmlschema (the test extra)")
    xmlschema.validate(str(junit), xmlschema.XMLSchema(str(JUNIT_XSD)))
    root = ET.parse(junit).getroot()
    assert len(list(root.iter("flakyFailure"))) == 2 and not list(root.iter("failure"))
    with two_in_three(6) as server:  # one threshold short of 4/6: it fails again
        assert main(_test(test_file, server.url, "--trials", "6", "--pass-threshold", "0.7")) == 1
    capsys.readouterr()


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--trials", "0", "--trials is a whole number"),
        ("--pass-threshold", "1.5", "--pass-threshold is a share"),
        ("--pass-threshold", "0", "--pass-threshold is a share"),
    ],
)
def test_a_bad_trial_count_or_threshold_is_one_line_before_any_call(test_file, capsys, option, value, words):
    with two_in_three(3) as server:
        assert main(_test(test_file, server.url, option, value)) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and not server.seen


@pytest.fixture
def page_env(test_file, tmp_path, monkeypatch) -> None:
    """The Tests page over `test_file`'s folder and a database of its own, with the stand-in's key set."""
    monkeypatch.setenv("OPENAI_API_KEY", "stand-in-key-0123456789")
    monkeypatch.setenv("AGENTCORE_TESTS", str(test_file.parent))
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))


def test_the_tests_page_runs_trials_and_shows_the_counts_a_bar_and_a_flaky_badge(page_env, open_app):
    with two_in_three(6) as server:
        at = open_app("views/tests.py")
        at.text_area(key="tests_configs").set_value(f"openai:stand-in@{server.url}/v1").run()
        at.number_input(key="tests_trials").set_value(6).run()
        at.number_input(key="tests_threshold").set_value(0.6).run()
        at.button(key="tests_run").click().run()
    assert not at.exception and len(server.seen) == 6
    (bar,) = [p for p in at.get("progress") if "trials passed" in p.proto.text]
    assert bar.proto.text == "4/6 trials passed" and bar.proto.value == 66  # Streamlit keeps a bar as a percentage
    assert any("flaky" in m.value for m in at.markdown)
    assert [s.value for s in at.success] == ["pass"]  # 4/6 clears a threshold of 0.6
    board = next(d.value for d in at.dataframe if "trials passed" in d.value.columns)  # the scoreboard
    assert list(board["trials passed"]) == ["4/6"] and list(board["flaky"]) == [1]


def _page_trials(open_app, url: str, trials: int, threshold: float = 1.0):
    """The Tests page after running the test file on the stand-in at `url`, `trials` times a cell."""
    at = open_app("views/tests.py")
    at.text_area(key="tests_configs").set_value(f"openai:stand-in@{url}/v1").run()
    at.number_input(key="tests_trials").set_value(trials).run()
    at.number_input(key="tests_threshold").set_value(threshold).run()
    at.button(key="tests_run").click().run()
    return at


def _reason_lines(at) -> list[str]:
    return [m.value for m in at.markdown if " trials: " in m.value]


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_the_tests_page_says_beside_each_failing_trial_cell_why_its_trials_failed_and_how_many(page_env, open_app):
    with StandIn(Reply.refused()) as server:  # every trial errors: ERROR, with the provider's reason on 3 of 3
        at = _page_trials(open_app, server.url, 3)
    assert not at.exception
    (verdict,) = [e.value for e in at.error]
    assert verdict == "ERROR: 3 errored of 3 trials"
    (why,) = _reason_lines(at)
    assert why.startswith("3 of 3 trials: ") and "401" in why and "Incorrect API key provided" in why
    # one error, one wrong answer, one right: both halves said, each reason with its own count, not ERROR
    with StandIn(Reply.refused(), Reply.chat("17 × 23 = 381."), Reply.chat("17 × 23 = 391.")) as server:
        at = _page_trials(open_app, server.url, 3)
    assert not at.exception and len(server.seen) == 3
    (verdict,) = [e.value for e in at.error]
    assert verdict == "FAIL: 1 failed and 1 errored of 3 trials"
    reasons = sorted(_reason_lines(at))
    assert len(reasons) == 2 and reasons[0].startswith("1 of 3 trials: ") and reasons[1].startswith("1 of 3 trials: ")
    assert any("401" in r for r in reasons) and any("does not contain" in r and "391" in r for r in reasons)
    # wrong twice, right once: FAIL only; and a threshold it clears still lists why the others failed
    with two_in_three(3) as server:
        at = _page_trials(open_app, server.url, 3)
    assert [e.value for e in at.error] == ["FAIL: 1 failed of 3 trials"]
    assert [r.split(": ")[0] for r in _reason_lines(at)] == ["1 of 3 trials"]
    with two_in_three(3) as server:
        at = _page_trials(open_app, server.url, 3, 0.6)
    assert not at.error and [s.value for s in at.success] == ["pass"]
    assert [r.split(": ")[0] for r in _reason_lines(at)] == ["1 of 3 trials"]
    with StandIn(Reply.chat("17 × 23 = 391.")) as server:  # every trial passed: no reason to give
        at = _page_trials(open_app, server.url, 3)
    assert not at.error and not _reason_lines(at)


def test_the_tests_page_shows_each_trial_cells_pass_at_1_with_its_wilson_interval_and_a_legend(page_env, open_app):
    with two_in_three(6) as server:
        at = _page_trials(open_app, server.url, 6, 0.6)
    assert not at.exception
    captions = [c.value for c in at.caption]
    low, high = wilson(4, 6)
    assert f"{low:.2f}–{high:.2f}" == "0.30–0.90"  # the CLI's words for the same trials
    assert "pass@1 0.67 (95% Wilson interval 0.30–0.90) · pass^6 no" in captions
    (legend,) = [c for c in captions if "**pass@1**" in c]
    assert "**pass^6**" in legend and "all 6 trials passed" in legend and "Wilson" in legend and "60%" in legend
    with StandIn(Reply.chat("17 × 23 = 391.")) as server:  # one trial a cell: no rates, no legend
        at = _page_trials(open_app, server.url, 1)
    assert not [c for c in (c.value for c in at.caption) if "pass@1" in c]


# -- experiments kept over time ----------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])  # a real server
def db(request, tmp_path: Path) -> str:
    return str(tmp_path / "runs.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")


def test_each_test_matrix_written_to_a_database_is_an_experiment_listed_shown_and_diffed(
    test_file, db, capsys, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "stand-in-key-0123456789")

    def with_db(url: str, trials: str) -> list[str]:
        return ["test", str(test_file), "--config", f"openai:stand-in@{url}/v1", "--trials", trials, "--db", db]

    with two_in_three(6) as server:
        assert main(with_db(server.url, "6")) == 1
    with StandIn(Reply.chat("It is 391.")) as always:  # a fixed model: right every time
        assert main(with_db(always.url, "3")) == 0
    printed = capsys.readouterr().out
    first, second = [line.split()[1] for line in printed.splitlines() if line.startswith("experiment ")]
    assert main(["experiments", "--db", db]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == [second, first]  # newest first
    assert "0/1 cells passed · 6 trials each (threshold 1) · 1 flaky" in listed[1]
    assert main(["experiments", "show", first[:6], "--db", db]) == 0
    shown = capsys.readouterr().out
    assert "FAIL times × " in shown and ": 4/6 flaky · runs " in shown and "agentcore " in shown
    assert main(["experiments", "diff", first, second, "--db", db]) == 0
    changed = capsys.readouterr().out
    # the configurations differ (two servers): each cell is new in the second and gone from the first
    assert "2 cells changed" in changed and "new cell" in changed and "gone" in changed
    assert main(["experiments", "show", "beef", "--db", db]) == 2
    assert "no experiment 'beef'" in capsys.readouterr().err


def test_a_diff_names_a_cell_newly_passing_newly_failing_and_a_rate_that_moved():
    from agentcore.testing.experiments import CellResult, Experiment, diff

    def exp(*cells):
        return Experiment(
            cells=[CellResult(test=t, config="c", trials=6, passed=p, cell_passed=p >= 4) for t, p in cells]
        )

    before, after = exp(("a", 6), ("b", 2), ("c", 5), ("d", 6)), exp(("a", 3), ("b", 6), ("c", 4), ("d", 6))
    assert diff(before, after) == [
        "newly failing a × c: 6/6 → 3/6",
        "newly passing b × c: 2/6 → 6/6",
        "rate moved    c × c: 5/6 → 4/6",
    ]
    assert diff(after, after) == []


def test_compare_runs_each_configuration_n_times_and_counts_the_answers_that_hold_the_expected_text(
    capsys, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "stand-in-key-0123456789")
    with two_in_three(3) as server:
        args = ["compare", "What is 17 × 23?", "--config", f"openai:stand-in@{server.url}/v1"]
        args += ["--config", "scripted:weather", "--tools", "none", "--runs", "3", "--expect", "391"]
        assert main(args) == 0
    out = capsys.readouterr().out
    assert len(server.seen) == 3
    table = out.split("over 3 runs of each configuration\n", 1)[1].splitlines()
    assert table[0].split()[:4] == ["config", "answered", "contains", "expected"]
    stand_in = next(line for line in table if line.startswith("openai:stand-in"))
    assert stand_in.split()[1:3] == ["3/3", "2/3"]  # every run answered; two of three hold 391
    scripted = next(line for line in table if line.startswith("scripted:weather"))
    assert scripted.split()[2] == "0/3"
    assert len(next(line for line in table if "stand-in" in line and ": runs " in line).split(", ")) == 3
    assert main(["compare", "hi", "--config", "scripted", "--config", "scripted", "--runs", "0"]) == 2
    assert "--runs is a whole number" in capsys.readouterr().err


def test_the_tests_page_keeps_each_run_as_an_experiment_and_charts_the_pass_rate_over_time(page_env, open_app):
    with two_in_three(6) as server:
        at = open_app("views/tests.py")
        at.text_area(key="tests_configs").set_value(f"openai:stand-in@{server.url}/v1").run()
        at.number_input(key="tests_trials").set_value(3).run()
        at.button(key="tests_run").click().run()  # right, right, wrong: 2/3
        at.button(key="tests_run").click().run()  # right, right, wrong again: 2/3
    assert not at.exception
    (chart,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "Pass rate" in c.proto.spec]
    (line,) = chart["data"]
    assert line["y"] == [2 / 3, 2 / 3] and line["text"] == ["2/3", "2/3"] and len(set(line["customdata"])) == 2
    newest = at.selectbox(key="tests_experiment").options[0]
    assert "0/1 cells passed · 3 trials each (threshold 1) · 1 flaky" in newest
    at.selectbox(key="tests_experiment").set_value(line["customdata"][-1]).run()
    cells = at.dataframe[-1].value  # the experiment opened
    assert (
        list(cells["passed"]) == ["2/3"] and list(cells["cell"]) == ["FAIL"] and len(cells["runs"][0].split(", ")) == 3
    )


def test_trials_that_all_made_the_same_run_are_said_to_be_one_sample(tmp_path, capsys, test_file, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "stand-in-key-0123456789")
    with StandIn(Reply.chat("17 × 23 = 391.")) as server:  # a model that answers alike each time
        assert main(_test(test_file, server.url, "--trials", "3")) == 0
    out = capsys.readouterr().out
    assert "note: in 1 of 1 cells every trial made the same run" in out and "(a cell passes when at least 100%" in out
    with two_in_three(3) as server:  # right, right, wrong: not alike
        main(_test(test_file, server.url, "--trials", "3"))
    assert "every trial made the same run" not in capsys.readouterr().out
    # a scripted cell answers alike by design, and errored trials made no run to compare: no note for either
    test = PinnedTest(name="weather", prompt="What is the weather in Paris?", tools=["get_weather"])
    path = tmp_path / "weather.json"
    path.write_text(export_test(test))
    assert main(["test", str(path), "--config", "scripted:weather", "--trials", "3", "--no-db"]) == 0
    assert "every trial made the same run" not in capsys.readouterr().out
    with StandIn(Reply.refused()) as server:
        main(_test(test_file, server.url, "--trials", "3"))
    assert "every trial made the same run" not in capsys.readouterr().out


def test_a_cell_under_its_threshold_says_why_each_trial_failed_and_how_many(test_file, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "stand-in-key-0123456789")
    with StandIn(Reply.refused()) as server:
        assert main(_test(test_file, server.url, "--trials", "3")) == 1
    out = capsys.readouterr().out
    assert "ERROR times × openai:stand-in@" in out and "trials: 0/3 passed, under the pass threshold" in out
    [why] = [line for line in out.splitlines() if line.startswith("  3 of 3 trials: ")]
    assert "401" in why and "Incorrect API key provided" in why and "stand-in-key" not in out
    with two_in_three(3) as server:  # right, right, wrong: one reason, one trial
        main(_test(test_file, server.url, "--trials", "3"))
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if " of 3 trials: " in line] == [
        "  1 of 3 trials: answer: '17 × 23 = 381.' does not contain '391'"
    ]

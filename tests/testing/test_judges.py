"""LLM-judge checks in pinned tests, against a stand-in judge on 127.0.0.1 whose verdicts each test sets: a judge
passes one scripted run and fails another; its verdict is recorded in the test file and a replay of the unchanged
run reuses it with no call (`--rejudge` calls again); a malformed or hostile verdict is a failed check in one line,
never a pass and never a crash; each call is a stored run linked to the run it judged, its verdict a label there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.judge_server import JudgeServer, says

from agentcore import Agent, Run, RunConfig, create_provider, toolbox
from agentcore.cli.main import main
from agentcore.errors import TranscriptError
from agentcore.exports import export_test
from agentcore.store.runs import Store
from agentcore.testing import pinned
from agentcore.testing.expectations import JudgeExpect
from agentcore.testing.judges import call_judge, judged_part

PROMPT = "What is the weather in Paris and Rome?"
RUBRIC = "The answer gives the temperature of every city the user asked about."


def scripted_run(scenario: str) -> Run:
    tools = toolbox.get_tools("get_weather,calculator")
    run = Run.start(PROMPT, RunConfig.made_for("scripted", scenario, tools), title=f"{scenario} run")
    Agent(create_provider("scripted", scenario=scenario), tools).run(run)
    return run


def temperatures(prompt: str) -> dict:
    """The stand-in's rule: yes when the answer shown holds a temperature for both cities."""
    answer = prompt.rsplit("] assistant: ", 1)[-1]
    ok = "Paris: 17.2°" in answer and "Rome: 20.4°" in answer
    index = int(prompt.rsplit("] assistant: ", 1)[0].rsplit("[", 1)[1])
    return says("yes" if ok else "no", "gives both temperatures" if ok else "no temperature in the answer", [index])


def write_test(folder: Path, scenario: str, judge: dict, name: str | None = None) -> Path:
    test = pinned.propose(scripted_run(scenario), name or scenario)
    data = pinned.to_data(test)
    data["expect"] = {"judge": judge}  # the judge alone: what the test checks is what the judge says
    path = folder / f"{name or scenario}.json"
    path.write_text(export_test(pinned.from_data(data)))
    return path


def judge(server: JudgeServer, **more) -> dict:
    return {"name": "temps", "rubric": RUBRIC, "model": server.model(), **more}


def test(capsys, *args: str) -> tuple[int, list[str]]:
    code = main(["test", *args])
    return code, capsys.readouterr().out.splitlines()


test.__test__ = False  # a helper, not a test


def fail_line(lines: list[str], name: str) -> str:
    (line,) = [x for x in lines if x.startswith(f"FAIL {name} × ")]
    return line


def test_a_judge_passes_one_scripted_run_and_fails_another(tmp_path, capsys):
    with JudgeServer(temperatures) as server:
        good = write_test(tmp_path, "weather", judge(server))
        bad = write_test(tmp_path, "recovery", judge(server))
        code, lines = test(capsys, str(good), str(bad), "--no-db")
    assert code == 1 and server.calls == 2
    assert "weather   pass" in "\n".join(lines)
    assert fail_line(lines, "recovery") == "FAIL recovery × replay: judge temps: fail: no temperature in the answer"
    assert not [x for x in lines if x.startswith("FAIL weather")]
    # what the judge was shown: the rubric, and the user's words and the answer, numbered by the run's own indexes
    prompt = next(m["content"] for m in server.bodies[0]["messages"] if m["role"] == "user")
    assert RUBRIC in prompt and f"[0] user: {PROMPT}" in prompt and "] assistant: " in prompt
    assert server.bodies[0]["tools"][0]["function"]["name"] == "final_answer"


def test_a_recorded_verdict_is_reused_with_no_call_until_rejudge_asks(tmp_path, capsys):
    with JudgeServer(temperatures) as server:
        path = write_test(tmp_path, "weather", judge(server))
        code, lines = test(capsys, str(path), "--no-db")
        assert code == 0 and server.calls == 1
        assert any(x.startswith("recorded 1 verdict on the pinned run in ") for x in lines)
        (kept,) = pinned.load(path).verdicts
        assert kept.judge == "temps" and kept.passed and kept.model == server.model()
        code, lines = test(capsys, str(path), "--no-db")
        assert code == 0 and server.calls == 1  # the replay reused it: no request reached the server
        assert "  temps on weather × replay: pass (recorded verdict, no call)" in [x.split(" · ")[0] for x in lines]
        code, lines = test(capsys, str(path), "--no-db", "--rejudge")
        assert code == 0 and server.calls == 2
        assert "  temps on weather × replay: pass (called)" in [x.split(" · ")[0] for x in lines]


def test_a_changed_rubric_or_model_is_not_answered_by_an_old_verdict(tmp_path, capsys):
    with JudgeServer(temperatures) as server:
        path = write_test(tmp_path, "weather", judge(server))
        test(capsys, str(path), "--no-db")
        data = json.loads(path.read_text())
        data["expect"]["judge"][0]["rubric"] = RUBRIC + " In degrees."
        path.write_text(json.dumps(data))
        test(capsys, str(path), "--no-db")
        assert server.calls == 2
        assert len(pinned.load(path).verdicts) == 1  # one verdict per judge: the one the file's rubric made


def test_trials_of_an_unchanged_run_share_one_verdict_and_count_the_check(tmp_path, capsys):
    with JudgeServer(lambda p: says("no", "never", [0])) as server:
        path = write_test(tmp_path, "weather", judge(server))
        code, lines = test(capsys, str(path), "--no-db", "--trials", "3", "--no-record")
    assert code == 1 and server.calls <= 3
    assert "weather  0/3 FAIL" in "\n".join(lines)
    assert "  3 of 3 trials: judge temps: fail: never" in lines


@pytest.mark.parametrize(
    ("said", "why"),
    [
        (says("maybe"), 'no verdict: the verdict is "maybe", not yes or no'),
        (says(True), "no verdict: the verdict is true, not yes or no"),
        ({"verdict": "yes", "reason": "fine"}, "no verdict: the judge's answer lacks messages"),
        (says("yes", reason=["a", "list"]), "no verdict: the reason is list, not text"),
        (says("yes", messages="0"), "no verdict: messages is not a list of message numbers"),
        (says("yes", messages=[True]), "no verdict: messages is not a list of message numbers"),
        (says("yes", messages=[999]), "no verdict: the judge cites message 999, which it was not shown (shown: 0–4)"),
        (says("yes", messages=[1]), "no verdict: the judge cites message 1, which it was not shown (shown: 0–4)"),
        ("Yes, it does.", "no verdict: the judge's answer is not JSON: 'Yes, it does.'"),
        ("[1, 2", "no verdict: the judge's answer is not JSON: '[1, 2'"),
        ('"yes"', "no verdict: the judge's answer is str, not an object with verdict, reason, messages"),
        ("x" * 50_000, "no verdict: the judge's answer is 50,000 characters, not a verdict"),
        ("[" * 5000 + "]" * 5000, "no verdict: the judge's answer is not JSON: "),
        ("", "no verdict: the judge gave no answer (stop: answer)"),
    ],
)
def test_a_malformed_or_hostile_verdict_fails_the_check_in_one_line(tmp_path, capsys, said, why):
    with JudgeServer(lambda p: said) as server:
        path = write_test(tmp_path, "weather", judge(server))
        code, lines = test(capsys, str(path), "--no-db")
    assert code == 1 and server.calls == 1
    line = fail_line(lines, "weather")
    assert line.startswith(f"FAIL weather × replay: judge temps: {why}")
    assert len(line) < 400
    assert pinned.load(path).verdicts == []  # no verdict is never recorded: it is asked again


def test_a_huge_reason_is_cut_to_one_line(tmp_path, capsys):
    with JudgeServer(lambda p: says("no", "bad\n" * 100_000, [4])) as server:
        path = write_test(tmp_path, "weather", judge(server))
        code, lines = test(capsys, str(path), "--no-db", "--no-record")
    line = fail_line(lines, "weather")
    assert code == 1 and line.startswith("FAIL weather × replay: judge temps: fail: bad bad") and len(line) < 400


def test_a_scoring_judge_passes_at_its_threshold(tmp_path, capsys):
    with JudgeServer(lambda p: says(7, "clear", [4])) as server:
        at = write_test(tmp_path, "weather", judge(server, **{"pass": "score>=7"}), "at")
        over = write_test(tmp_path, "weather", judge(server, **{"pass": "score >= 7.5"}), "over")
        code, lines = test(capsys, str(at), str(over), "--no-db")
    assert code == 1
    assert fail_line(lines, "over") == "FAIL over × replay: judge temps: score 7, fail: clear"
    assert not [x for x in lines if x.startswith("FAIL at ")]


def test_the_judges_call_is_a_stored_run_linked_to_the_run_it_judged(tmp_path, capsys):
    db = str(tmp_path / "runs.db")
    with JudgeServer(temperatures) as server:
        path = write_test(tmp_path, "recovery", judge(server))
        code, lines = test(capsys, str(path), "--db", db)
    assert code == 1
    store = Store(db)
    (said,) = [x for x in lines if x.startswith("  temps on recovery × replay: fail (called) · its call: run ")]
    call = store.read_run(said.rsplit(" ", 1)[1])
    assert call.judge_of is not None and call.judge_of.judge == "temps"
    judged = store.read_run(call.judge_of.run_id)
    assert call.judge_of.step == len(judged.steps) and call.final_output["verdict"] == "no"
    assert call.link_lines == [f"judge temps's call on step {len(judged.steps)} of run {judged.id}"]
    (label,) = store.annotations(judged.id)
    assert label.author == "judge:temps" and label.tags == ["fails the rubric"] and label.judge_run == call.id
    assert label.note == "fail: no temperature in the answer" and label.step == len(judged.steps)
    assert store.annotated_runs(source="people") == []  # a judge is not a person
    assert [s.id for s, _ in store.annotated_runs(source="judge:temps")] == [judged.id]


def test_a_judge_at_a_test_files_address_gets_no_key_from_the_environment(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-operator-key-0123456789abcdef")
    with JudgeServer(temperatures) as server:
        path = write_test(tmp_path, "weather", judge(server))
        test(capsys, str(path), "--no-db", "--no-record")
    assert server.calls == 1
    assert "sk-operator-key-0123456789abcdef" not in json.dumps(server.headers)


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"rubric": "x", "model": "nobody:m"}, "unknown provider 'nobody'"),
        ({"rubric": "x", "model": "mymodule:Judge"}, "unknown provider 'mymodule'"),
        ({"rubric": " ", "model": "scripted"}, "a judge needs a rubric"),
        ({"rubric": "x", "model": "scripted", "on": "step 0"}, "answer, run, or step N"),
        ({"rubric": "x", "model": "scripted", "on": "the end"}, "answer, run, or step N"),
        ({"rubric": "x", "model": "scripted", "pass": "maybe"}, "yes, or score>=K"),
        ({"rubric": "x", "model": "scripted", "name": "a b"}, "name"),
        ([{"rubric": "x", "model": "scripted"}, {"rubric": "y", "model": "scripted"}], "two judges are named 'judge'"),
    ],
)
def test_a_bad_judge_entry_is_refused_in_one_line(entry, said):
    data = {"format": "agentcore.test", "version": 1, "prompt": "hi", "expect": {"judge": entry}}
    with pytest.raises(TranscriptError, match=said.replace("(", r"\(").replace(")", r"\)")) as caught:
        pinned.from_data(data)
    assert "\n" not in str(caught.value)


def test_what_a_judge_reads_of_a_step_and_of_the_whole_run():
    run = scripted_run("recovery")
    step2 = judged_part(run, JudgeExpect(rubric="r", model="scripted", on="step 2"))
    assert step2.step == 2 and step2.indexes == (0, 1, 2, 3, 4)
    assert "[4] tool result of calculater (an error): " in step2.text
    whole = judged_part(run, JudgeExpect(rubric="r", model="scripted", on="run"))
    assert whole.indexes == tuple(range(len(run.messages))) and whole.step == len(run.steps)
    assert judged_part(run, JudgeExpect(rubric="r", model="scripted", on="step 9")) == "the run has 4 steps, no step 9"
    empty = Run.start("hi")
    verdict = call_judge(JudgeExpect(rubric="r", model="scripted"), empty)
    assert verdict.passed is None and verdict.reason == "the run made no step to judge" and verdict.judge_run is None


def test_a_long_run_is_shown_to_the_judge_within_its_limits_from_both_ends():
    from agentcore.messages import AssistantMessage, UserMessage
    from agentcore.steps import StepRecord
    from agentcore.testing.judges import MAX_MESSAGE_CHARS, MAX_PART_CHARS

    run = Run.start("go on " + "x" * 10_000)
    for n in range(40):
        run.steps.append(StepRecord(index=n + 1, message_count=len(run.messages)))
        run.messages.append(AssistantMessage(content=f"reply {n} " + "y" * 9_000))
        run.messages.append(UserMessage(content=f"more {n}"))
    part = judged_part(run, JudgeExpect(rubric="r", model="scripted", on="run"))
    assert len(part.text) <= MAX_PART_CHARS + 2_000
    assert f"[0] user: go on {'x' * (MAX_MESSAGE_CHARS - 6)}" in part.text and "characters left out]" in part.text
    assert part.indexes[0] == 0 and part.indexes[-1] == len(run.messages) - 1
    left = len(run.messages) - len(part.indexes)
    assert left > 0 and f"[…{left} messages left out: the part is too long]" in part.text

"""LLM-judge checks in pinned tests, against a stand-in judge on 127.0.0.1 whose verdicts each test sets: a judge
passes one scripted run and fails another; its verdict is recorded in the test file and a replay of the unchanged
run reuses it with no call (`--rejudge` calls again); a malformed or hostile verdict is a failed check in one line,
never a pass and never a crash; each call is a stored run linked to the run it judged, its verdict a label there.
Then the rules of what a judge is shown and what its answer is read as, each at its limits, on runs and answers made
in the test."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from support.judge_server import JudgeServer, says

from agentcore import Agent, Run, RunConfig, create_provider, toolbox
from agentcore.cli.main import main
from agentcore.errors import ProviderError, TranscriptError
from agentcore.exports import export_test
from agentcore.messages import AssistantMessage, Message, ToolCall, UserMessage
from agentcore.providers.base import BaseProvider
from agentcore.schemas import schema_errors
from agentcore.steps import StepRecord
from agentcore.store.runs import Store
from agentcore.testing import pinned
from agentcore.testing.expectations import JudgeExpect, PinnedTest, RecordedVerdict
from agentcore.testing.judges import (
    MAX_MESSAGE_CHARS,
    MAX_PART_CHARS,
    MAX_REASON_CHARS,
    MAX_VERDICT_CHARS,
    Judging,
    Part,
    Verdict,
    call_judge,
    judge_test,
    judged_part,
    keep_in_store,
    load_judges,
    part_of,
    read_verdict,
    sha256,
    verdict_schema,
)

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
    ok = all(re.search(rf"{city}: -?\d+(\.\d+)?°", answer) for city in ("Paris", "Rome"))  # each day's own figures
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


def test_a_verdict_made_under_one_pass_rule_is_not_reused_under_another_in_one_test_run(tmp_path):
    run = scripted_run("weather")
    with JudgeServer(lambda p: says(7, "clear", [0])) as server:
        at, over = (JudgeExpect.model_validate(judge(server, **{"pass": rule})) for rule in ("score>=7", "score>=7.5"))
        tests = [PinnedTest(name=n, prompt=PROMPT, expect={"judge": [j]}) for n, j in (("at", at), ("over", over))]
        judging = Judging()
        (first,) = judge_test(tests[0], run, judging)
        (second,) = judge_test(tests[1], run, judging)  # the same run, rubric and model: another rule
        (again,) = judge_test(tests[0], run, judging)
    assert (first.passed, second.passed, again.passed) == (True, False, True)
    assert server.calls == 2 and again.reused and not second.reused


def test_a_recorded_score_is_read_under_the_files_pass_rule_now(tmp_path, capsys):
    with JudgeServer(lambda p: says(7, "clear", [4])) as server:
        path = write_test(tmp_path, "weather", judge(server, **{"pass": "score>=7"}))
        assert test(capsys, str(path), "--no-db")[0] == 0 and server.calls == 1
        data = json.loads(path.read_text())
        data["expect"]["judge"][0]["pass"] = "score>=7.5"
        path.write_text(json.dumps(data))
        code, lines = test(capsys, str(path), "--no-db", "--no-record")
        assert code == 1 and server.calls == 1  # the recorded score, read again: no call
        assert fail_line(lines, "weather") == "FAIL weather × replay: judge temps: score 7, fail: clear"
        data["expect"]["judge"][0]["pass"] = "yes"  # a yes or no asked for where a score was recorded: a new call
        path.write_text(json.dumps(data))
        test(capsys, str(path), "--no-db", "--no-record")
        assert server.calls == 2


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


# -- the rules of what a judge reads and says, on runs and answers made in the test (no server) -------------------


class Down(BaseProvider):
    """A judge's model whose every call fails, as a provider's does after its retries."""

    name = "openai"

    def complete(self, request, on_text=None):
        raise ProviderError("the judge's server is down", provider="openai", status=503)


def call_run(stop_reason: str, *messages: Message, final_output: object = None, error: str | None = None) -> Run:
    """A judge's call as the loop leaves it: its stop reason, its messages after the prompt, its structured answer."""
    run = Run.start("judge this")
    run.messages += messages
    run.stop_reason, run.final_output, run.error = stop_reason, final_output, error
    return run


SHOWN = Part("[0] user: hi", (0,), 1)
YES_NO = JudgeExpect(name="temps", rubric=RUBRIC, model="scripted")
SCORING = JudgeExpect(name="temps", rubric=RUBRIC, model="scripted", pass_="score>=7")


def read(value: object, judge: JudgeExpect = YES_NO) -> Verdict:
    return read_verdict(judge, SHOWN, call_run("structured", final_output=value))


def test_a_tool_call_is_shown_as_the_model_wrote_it_else_as_its_arguments_with_each_character_as_itself():
    calls = [
        ToolCall(id="a", name="get_weather", arguments={"city": "Zürich"}),
        ToolCall(id="b", name="get_weather", raw_arguments="Zürich, please"),
    ]
    part = part_of([UserMessage(content="Weather?"), AssistantMessage(content="", tool_calls=calls)], [1], 1)
    assert part.text == '[1] assistant: \ncalls: get_weather({"city": "Zürich"}); get_weather(Zürich, please)'


def test_a_message_is_shown_whole_up_to_its_limit_and_cut_past_it_saying_how_much():
    exact, over = "x" * MAX_MESSAGE_CHARS, "y" * (MAX_MESSAGE_CHARS + 1_234)
    part = part_of([UserMessage(content=exact), UserMessage(content=over)], [0, 1], 1)
    assert part.text == f"[0] user: {exact}\n\n[1] user: {over[:MAX_MESSAGE_CHARS]} […1,234 characters left out]"


def test_a_part_holds_what_fits_its_limit_exactly_and_leaves_out_the_middle_saying_how_many():
    # 31 messages, the middle one short: the 30 around it fill the limit exactly, so only the middle is left out;
    # one character more and the last one taken (from the front, the 15th) no longer fits either
    width = MAX_PART_CHARS // 30
    assert width * 30 == MAX_PART_CHARS and width <= MAX_MESSAGE_CHARS

    def messages(extra: int) -> list[Message]:
        sized = [UserMessage(content="m" * (width - len(f"[{i}] user: "))) for i in range(31)]
        sized[15] = UserMessage(content="the middle")
        sized[0] = UserMessage(content=sized[0].content + "m" * extra)
        return sized

    fits = messages(0)
    part = part_of(fits, range(31), 3)
    lines = [f"[{i}] user: {m.content}" for i, m in enumerate(fits)]
    gap = "[…1 messages left out: the part is too long]"
    assert part.indexes == (*range(15), *range(16, 31)) and part.step == 3
    assert part.text == "\n\n".join([*lines[:15], gap, *lines[16:]])
    over = part_of(messages(1), range(31), 3)
    assert over.indexes == (*range(14), *range(16, 31))
    assert "[13] user: " in over.text and "[14] user: " not in over.text and "[…2 messages left out: " in over.text


def test_step_n_reads_up_to_that_steps_reply_up_to_the_last_step_and_no_further():
    run = scripted_run("recovery")
    assert len(run.steps) == 4
    last = judged_part(run, JudgeExpect(rubric="r", model="scripted", on="step 4"))
    assert last.step == 4 and last.indexes == tuple(range(len(run.messages)))
    assert judged_part(run, JudgeExpect(rubric="r", model="scripted", on="step 5")) == "the run has 4 steps, no step 5"


def test_a_run_is_judged_on_its_answer_only_where_it_has_one():
    def part(stop_reason: str, *replies: Message, final_output: object = None) -> Part | str:
        run = call_run(stop_reason, *replies, final_output=final_output)  # message 0: the user's words
        run.steps.append(StepRecord(index=1))
        return judged_part(run, YES_NO)

    assert part("error") == "the run has no answer to judge (stop: error)"
    assert part("max_steps", AssistantMessage(content="  \n")) == "the run has no answer to judge (stop: max_steps)"
    assert part("structured", AssistantMessage(content=""), final_output={"temp": 17}).indexes == (0, 1)
    assert part("answer", AssistantMessage(content="17 °C")).indexes == (0, 1)


def test_what_a_judge_read_is_fixed_once_read():
    with pytest.raises(dataclasses.FrozenInstanceError):
        SHOWN.text = "something else"  # type: ignore[misc]


def test_a_judge_answers_to_a_schema_of_its_verdict_reason_and_messages_and_nothing_more():
    for judge, said in ((YES_NO, "yes"), (SCORING, 7)):
        schema = verdict_schema(judge)
        answer = {"verdict": said, "reason": "both temperatures", "messages": [0]}
        assert schema_errors(schema, answer) == []
        assert schema_errors(schema, {**answer, "confidence": 0.9}) != []
        assert schema_errors(schema, {"verdict": said, "reason": "both temperatures"}) != []


def test_a_reason_is_kept_whole_up_to_its_limit_and_cut_to_it_past_it():
    assert read(says("yes", "r" * MAX_REASON_CHARS)).reason == "r" * MAX_REASON_CHARS
    cut = read(says("yes", "r" * (MAX_REASON_CHARS + 1))).reason
    assert cut == "r" * (MAX_REASON_CHARS - 1) + "…" and len(cut) == MAX_REASON_CHARS


def test_a_scoring_judges_verdict_is_a_finite_number_and_nothing_else():
    assert read(says(7), SCORING).passed is True and read(says(6.5), SCORING).passed is False
    for said, shown in ((True, "true"), ("7", '"7"'), (float("nan"), "NaN"), (float("inf"), "Infinity")):
        verdict = read(says(said), SCORING)
        assert (verdict.passed, verdict.score) == (None, None)
        assert verdict.reason == f"the verdict is {shown}, not a score"


def test_a_failed_call_is_no_verdict_saying_why():
    failed = read_verdict(YES_NO, SHOWN, call_run("error", error="HTTP 503 from the judge's server"))
    assert (failed.passed, failed.reason) == (None, "the judge's call failed: HTTP 503 from the judge's server")
    unsaid = read_verdict(YES_NO, SHOWN, call_run("error"))
    assert (unsaid.passed, unsaid.reason) == (None, "the judge's call failed: an error")


def test_a_final_answer_the_loop_refused_is_read_from_the_call_and_one_that_is_no_object_is_no_verdict():
    def refused(call: ToolCall) -> Verdict:
        return read_verdict(YES_NO, SHOWN, call_run("max_steps", AssistantMessage(content="", tool_calls=[call])))

    written = "verdict: yes, " + "because " * 20
    bad = refused(ToolCall(id="v", name="final_answer", raw_arguments=written))
    assert bad.passed is None
    assert bad.reason == f"the judge's final answer is not a JSON object: {written.strip()[:79] + '…'!r}"
    extra = refused(ToolCall(id="v", name="final_answer", arguments={**says("yes", "fine"), "confidence": 1}))
    assert (extra.passed, extra.reason) == (True, "fine")


def test_a_plain_answer_is_read_as_json_up_to_its_limit_and_refused_past_it():
    def plain(length: int) -> Verdict:
        text = json.dumps(says("yes", "r"))
        text = text.replace('"r"', '"' + "r" * (length - len(text) + 1) + '"')
        assert len(text) == length
        return read_verdict(YES_NO, SHOWN, call_run("answer", AssistantMessage(content=text)))

    assert plain(MAX_VERDICT_CHARS).passed is True
    over = plain(MAX_VERDICT_CHARS + 1)
    assert (over.passed, over.reason) == (
        None,
        f"the judge's answer is {MAX_VERDICT_CHARS + 1:,} characters, not a verdict",
    )


def test_a_verdict_says_itself_in_a_word_or_two_and_labels_its_step_so():
    said = {
        True: ("pass", ["good"], []),
        False: ("fail", [], ["fails the rubric"]),
        None: ("no verdict", [], ["no verdict"]),
    }
    for passed, (word, labels, tags) in said.items():
        verdict = Verdict(YES_NO, 2, passed, "read the answer")
        label = verdict.annotation()
        assert verdict.said == word and label.note == f"{word}: read the answer"
        assert (label.labels, label.tags, label.step, label.author) == (labels, tags, 2, "judge:temps")
    assert Verdict(SCORING, 2, False, "", score=4).said == "score 4, fail"


def test_the_judges_call_names_the_model_that_answered_else_the_one_the_judge_names():
    run = scripted_run("weather")
    judge = JudgeExpect(name="temps", rubric=RUBRIC, model="openai:named-judge@http://127.0.0.1:9/v1")
    answered = call_judge(judge, run, factory=lambda *args, **options: Down("answering-judge"))
    assert answered.judge_run.config.model == "answering-judge" and answered.passed is None
    unnamed = call_judge(judge, run, factory=lambda *args, **options: Down(""))
    assert unnamed.judge_run.config.model == "named-judge"


def test_a_verdict_made_in_this_test_run_or_recorded_in_the_file_is_reused_unless_rejudging():
    run = scripted_run("weather")
    part = judged_part(run, YES_NO)
    kept = RecordedVerdict(
        judge="temps", content_sha256=part.sha256, rubric_sha256=sha256(RUBRIC), model="scripted", passed=True,
        reason="both temperatures", messages=[4], run_id="call-1",
    )  # fmt: skip
    recorded = PinnedTest(prompt=PROMPT, verdicts=[kept])
    found = Judging().recorded(recorded, YES_NO, part)
    assert (found.passed, found.reason, found.judge_run_id, found.reused) == (True, "both temperatures", "call-1", True)
    assert Judging(rejudge=True).recorded(recorded, YES_NO, part) is None
    judging, call = Judging(), Run.start("judge this")
    made = Verdict(YES_NO, part.step, False, "no temperature", part.sha256, judge_run=call, judge_run_id=call.id)
    judging.keep(made)
    again = judging.recorded(PinnedTest(prompt=PROMPT), YES_NO, part)
    assert (again.passed, again.reason, again.judge_run, again.judge_run_id) == (False, "no temperature", None, call.id)
    assert again.reused is True and made.reused is False and made.judge_run is call


def test_the_judged_run_and_each_call_are_kept_in_the_library_and_a_reused_verdict_adds_nothing(tmp_path):
    store = Store(tmp_path / "runs.db")
    run = scripted_run("weather")
    part = judged_part(run, YES_NO)
    reused = Verdict(YES_NO, part.step, True, "both", part.sha256, judge_run_id="call-0", reused=True)
    assert keep_in_store(store, run, [reused]) == [] and not store.exists(run.id)
    call = Run.start("judge this")
    made = Verdict(YES_NO, part.step, True, "both", part.sha256, judge_run=call, judge_run_id=call.id)
    assert keep_in_store(store, run, [reused, made]) == [call.id]
    assert store.exists(run.id) and store.read_run(call.id).id == call.id
    (label,) = store.annotations(run.id)
    assert (label.author, label.labels, label.judge_run, label.step) == ("judge:temps", ["good"], call.id, part.step)


def test_judges_are_found_in_subfolders_and_only_in_judges_files(tmp_path):
    temps = {"name": "temps", "rubric": RUBRIC, "model": "scripted"}
    (tmp_path / "deep" / "deeper").mkdir(parents=True)
    (tmp_path / "deep" / "deeper" / "judges.json").write_text(json.dumps({"judges": [temps]}))
    (tmp_path / "a list.json").write_text(json.dumps(["judges"]))
    (tmp_path / "more.json").write_text(json.dumps({"judges": [{**temps, "name": "other"}], "note": "more"}))
    (tmp_path / "one.json").write_text(json.dumps({"judges": "temps"}))
    assert list(load_judges([tmp_path])) == ["temps"]

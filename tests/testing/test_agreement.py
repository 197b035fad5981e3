"""A judge's agreement with people: Cohen's kappa equals scikit-learn's `cohen_kappa_score` and hand computations on
tables from the literature, its interval the one SAS prints; the rates equal scikit-learn's; and `agentcore judge
agreement` prints them on a library where people and a judge labelled the same 40 steps."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from agentcore import Agent, Run, RunConfig, create_provider, toolbox
from agentcore.annotations import Annotation, make_annotation
from agentcore.cli.main import main
from agentcore.store.runs import Store
from agentcore.testing.agreement import (
    BinaryAgreement,
    JudgeReport,
    cohen_kappa,
    confusion,
    judge_report,
    person_says,
)


def sk():
    """scikit-learn's metrics: seconds to import, so imported by the tests that compare with them, not at collection."""
    from sklearn import metrics

    return metrics


def expand(table: list[list[int]]) -> tuple[list[int], list[int]]:
    """The two raters' labels that make the table: row i, column j, table[i][j] times."""
    a, b = [], []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            a += [i] * count
            b += [j] * count
    return a, b


@pytest.mark.parametrize("seed", range(30))
def test_kappa_and_the_table_equal_scikit_learns_on_random_labels(seed):
    rng = random.Random(seed)
    k = rng.choice([2, 2, 3, 4])
    n = rng.randint(5, 200)
    skew = rng.random()
    a = [rng.randrange(k) for _ in range(n)]
    b = [x if rng.random() < skew else rng.randrange(k) for x in a]
    table = confusion(zip(a, b, strict=True), range(k))
    assert table == sk().confusion_matrix(a, b, labels=list(range(k))).tolist()
    found = cohen_kappa(table)
    expected = sk().cohen_kappa_score(a, b, labels=list(range(k)))
    if found is None:  # both raters used one category alone: scikit-learn's is not a number then
        assert len(set(a) | set(b)) == 1
    else:
        assert found.value == pytest.approx(expected, abs=1e-12)
        assert found.low < found.value < found.high


@pytest.mark.parametrize("seed", range(10))
def test_the_rates_and_the_baseline_equal_scikit_learns(seed):
    rng = random.Random(seed)
    people = [rng.random() < 0.6 for _ in range(rng.randint(10, 80))]
    judge = [p if rng.random() < 0.8 else not p for p in people]
    a = BinaryAgreement.of(zip(people, judge, strict=True))
    assert a.tpr == pytest.approx(sk().recall_score(people, judge, pos_label=True))
    assert a.tnr == pytest.approx(sk().recall_score(people, judge, pos_label=False))
    assert a.kappa.value == pytest.approx(sk().cohen_kappa_score(people, judge))
    assert a.baseline == max(people.count(True), people.count(False)) / len(people)
    assert a.raw == sum(p == j for p, j in zip(people, judge, strict=True)) / len(people)


def test_cohen_1960_table_1_by_hand():
    # Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and Psychological Measurement
    # 20(1): 37-46, Table 1: 200 items, three categories, the proportions below (×200 as counts). Cohen reports
    # p_o = .70, p_c = .41 and kappa = .492.
    table = [[88, 14, 18], [10, 40, 10], [2, 6, 12]]
    p_o = (88 + 40 + 12) / 200  # .70
    p_c = 0.60 * 0.50 + 0.30 * 0.30 + 0.10 * 0.20  # rows .60 .30 .10, columns .50 .30 .20: .41
    assert p_o == pytest.approx(0.70) and p_c == pytest.approx(0.41)
    found = cohen_kappa(table)
    assert found.value == pytest.approx((p_o - p_c) / (1 - p_c)) and round(found.value, 3) == 0.492
    assert found.value == pytest.approx(sk().cohen_kappa_score(*expand(table)))


def test_the_interval_is_the_one_sas_prints_for_its_example_table():
    # SAS PROC FREQ's "Simple Kappa Coefficient" for this 3×3 table (19 items), as statsmodels' tests record its
    # printout (statsmodels/stats/tests/test_inter_rater.py, table10): kappa 0.4842, ASE 0.1380, 95% limits
    # 0.2137 and 0.7547; SAS's ASE is the large-sample standard error of Fleiss, Cohen & Everitt (1969).
    found = cohen_kappa([[0, 4, 1], [0, 8, 0], [0, 1, 5]])
    assert round(found.value, 4) == 0.4842
    assert round(found.se, 4) == 0.1380
    assert (round(found.low, 4), round(found.high, 4)) == (0.2137, 0.7547)


def test_a_two_by_two_table_by_hand():
    # the worked example of Wikipedia's "Cohen's kappa": 50 proposals, both yes 20, A yes B no 5, A no B yes 10,
    # both no 15: p_o = 35/50 = .7, p_e = .5 × .6 + .5 × .4 = .5, kappa = .4
    a = BinaryAgreement(tp=20, fn=5, fp=10, tn=15)
    assert a.raw == pytest.approx(0.7) and a.kappa.value == pytest.approx(0.4)
    assert a.tpr == pytest.approx(20 / 25) and a.tnr == pytest.approx(15 / 25)
    assert a.baseline == pytest.approx(25 / 50) and a.majority == (True, 25)


def test_kappa_where_it_is_undefined_or_perfect():
    assert cohen_kappa([[0, 0], [0, 0]]) is None
    assert cohen_kappa([[7, 0], [0, 0]]) is None  # one category alone, both raters
    perfect = cohen_kappa([[6, 0], [0, 4]])
    assert perfect.value == 1 and perfect.se == 0 and (perfect.low, perfect.high) == (1, 1)
    assert BinaryAgreement(0, 0, 0, 0).raw is None and BinaryAgreement(0, 0, 0, 0).tpr is None


def label(step: int, author: str, *, good: bool | None, run: str | None = None) -> Annotation:
    if author.startswith("judge:"):
        fields = {"labels": ["good"]} if good else {"tags": ["fails the rubric" if good is False else "no verdict"]}
        return Annotation(step=step, author=author, judge_run=run, **fields)
    return Annotation(step=step, author=author, labels=["good" if good else "wrong tool"])


def test_the_report_counts_self_consistency_people_between_them_and_ties():
    found = {
        "r1": [label(1, "alice", good=True), label(1, "judge:j", good=True), label(1, "judge:j", good=True)],
        "r2": [label(1, "alice", good=False), label(1, "bob", good=False), label(1, "judge:j", good=True, run="c2")],
        "r3": [label(1, "alice", good=True), label(1, "bob", good=False), label(1, "judge:j", good=False)],
        "r4": [label(2, "bob", good=True), label(2, "judge:j", good=None)],
        "r5": [label(1, "judge:j", good=True), label(1, "judge:j", good=False), label(1, "alice", good=True)],
        "r6": [Annotation(step=1, author="carol", note="just a note"), label(1, "scanner:loop", good=False)],
    }
    report = judge_report(found, "j")
    a = report.agreement
    # r1 agree; r2 people fail, judge pass; r3 people split (tie); r4 no verdict; r5 the judge split (tie)
    assert (a.tp, a.fn, a.fp, a.tn) == (1, 0, 1, 0)
    assert report.people_tied == 1 and report.judge_tied == 1 and report.no_verdict == 1
    assert (report.repeated, report.unanimous, report.pairs_agree, report.pairs) == (2, 1, 1, 2)
    assert report.disagreements == [("r2", 1, False, True, "c2")]
    ((x, y, between),) = report.between_people
    assert (x, y, between.n, between.agree) == ("alice", "bob", 2, 1)
    alone = judge_report(found, "judge:j", "bob")
    assert (alone.agreement.n, alone.agreement.fp, alone.agreement.tn) == (2, 1, 1)  # bob alone: r2 and r3, no tie
    text = report.text()
    assert "raw agreement      0.500 (1 of 2)" in text and "self-consistency: 2 steps judged more than once" in text


def stored_library(db: str, steps: int = 40) -> tuple[list[bool], list[bool]]:
    """`steps` scripted runs, each one's last step labelled by a person and by judge `temps`; their labels."""
    store = Store(db)
    tools = toolbox.get_tools("get_weather")
    rng = random.Random(40)
    people, judge = [], []
    for n in range(steps):
        run = Run.start(f"Weather in Paris, please ({n})?", RunConfig.made_for("scripted", "weather", tools))
        Agent(create_provider("scripted", scenario="weather"), tools).run(run)
        store.save_run(run)
        said = rng.random() < 0.55
        verdict = said if rng.random() < 0.8 else not said
        store.annotate(run.id, make_annotation(step=2, labels=["good" if said else "hallucinated a fact"]), user="ann")
        store.annotate(run.id, label(2, "judge:temps", good=verdict, run=f"call{n}"), user="judge:temps")
        people.append(said)
        judge.append(verdict)
    return people, judge


def test_the_command_prints_the_figures_on_a_library_of_40_steps_labelled_by_both(tmp_path, capsys):
    db = str(tmp_path / "runs.db")
    people, judge = stored_library(db)
    out = tmp_path / "agreement.json"
    assert main(["judge", "agreement", "--judge", "temps", "--db", db, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["items"] == 40 and data["judged"] == 40 and data["labelled"] == 40
    assert data["kappa"] == pytest.approx(sk().cohen_kappa_score(people, judge))
    assert data["tpr"] == pytest.approx(sk().recall_score(people, judge, pos_label=True))
    assert data["tnr"] == pytest.approx(sk().recall_score(people, judge, pos_label=False))
    (tn, fp), (fn, tp) = sk().confusion_matrix(people, judge, labels=[False, True]).tolist()
    assert data["confusion"]["table"] == [[tp, fn], [fp, tn]]
    agree = tp + tn
    low, high = data["kappa_95"]
    assert printed.startswith("judge temps against people's labels: 40 steps labelled pass or fail by both")
    assert f"  raw agreement      {agree / 40:.3f} ({agree} of 40)" in printed
    assert f"  Cohen's kappa      {data['kappa']:.3f}, 95% interval {low:.3f} to {high:.3f}" in printed
    assert f"  TPR (pass)         {tp / (tp + fn):.3f} ({tp} of {tp + fn})" in printed
    assert f"    labelled pass     {tp:>10}  {fn:>10}" in printed
    assert len(data["disagreements"]) == fp + fn
    # one person's labels as the reference, and a person no one knows: nothing to compare, said so
    assert main(["judge", "agreement", "--judge", "temps", "--labels", "ann", "--db", db]) == 0
    assert "against ann's labels: 40 steps" in capsys.readouterr().out
    assert main(["judge", "agreement", "--judge", "temps", "--labels", "zoe", "--db", db]) == 0
    assert "nothing to compare" in capsys.readouterr().out


def test_kappa_is_defined_from_one_item_on_where_the_raters_differ():
    one = cohen_kappa([[0, 1], [0, 0]])  # one item: the first rater says pass, the second fail
    assert (one.value, one.se, one.low, one.high) == (0, 0, 0, 0)
    assert one.value == sk().cohen_kappa_score([0], [1], labels=[0, 1])


def test_the_figures_are_fixed_once_made():
    with pytest.raises(dataclasses.FrozenInstanceError):
        cohen_kappa([[6, 1], [2, 4]]).value = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        BinaryAgreement(1, 2, 3, 4).tp = 0  # type: ignore[misc]


def test_the_record_counts_the_references_passes_and_fails_beside_the_rates():
    data = BinaryAgreement(tp=20, fn=5, fp=10, tn=15).to_dict()
    assert (data["tp"], data["reference_passes"], data["tn"], data["reference_fails"]) == (20, 25, 15, 25)


def test_a_persons_label_is_a_pass_or_a_fail_only_where_it_says_one_and_not_both():
    def says(**fields) -> bool | None:
        return person_says(Annotation(step=1, author="ann", **fields))

    assert says(labels=["good"]) is True and says(labels=["wrong tool", "looped"]) is False
    assert says(labels=["good", "wrong tool"]) is None  # both, as a file may hold: neither
    assert says(tags=["odd"]) is None and says(note="just a note") is None


def test_the_report_says_what_it_left_out_as_ties_where_either_side_tied():
    def ties(people: int, judge: int) -> list[str]:
        text = JudgeReport("j", "people", BinaryAgreement(0, 0, 0, 0), people_tied=people, judge_tied=judge).text()
        return [line for line in text.splitlines() if "left out as ties" in line]

    assert ties(1, 0) == ["  left out as ties: 1 steps people split evenly on, 0 the judge judged as often each way"]
    assert ties(0, 2) == ["  left out as ties: 0 steps people split evenly on, 2 the judge judged as often each way"]
    assert ties(0, 0) == []

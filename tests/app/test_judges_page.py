"""The Error analysis page's judges (AppTest over the app and a real database): a judge's agreement with people, each
rate beside its counts, and a step they disagree on opened in the playground with the judge's call."""

from __future__ import annotations

import pytest
from support.judge_server import JudgeServer, says
from testing.test_judges import RUBRIC, scripted_run

from agentcore.annotations import make_annotation
from agentcore.store.runs import Store
from agentcore.testing.expectations import JudgeExpect
from agentcore.testing.judges import judge_library

PAGE = "views/errors.py"


@pytest.fixture
def judged(tmp_path, monkeypatch):
    """Four runs people labelled (two good, two not), each judged pass by a judge that passes everything."""
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    store = Store(tmp_path / "runs.db")
    runs = [scripted_run(s) for s in ("weather", "recovery", "weather", "recovery")]
    for run in runs:
        store.save_run(run)
        said = "good" if run.title.startswith("weather") else "hallucinated a fact"
        store.annotate(run.id, make_annotation(step=len(run.steps), labels=[said]), user="ann")
    with JudgeServer(lambda p: says("yes", "every city has a temperature", [0])) as server:
        judge = JudgeExpect(name="lenient", rubric=RUBRIC, model=server.model())
        judge_library(store, judge, [r.id for r in runs], budget=10)
    return runs


def test_the_page_shows_the_judges_agreement_and_opens_a_disagreement_with_the_judges_call(judged, open_app):
    at = open_app(PAGE)
    assert not at.exception
    assert "Judges against people" in [h.value for h in at.header]
    (figures,) = [d.value for d in at.dataframe if "figure" in d.value.columns]
    shown = dict(zip(figures["figure"], zip(figures["value"], figures["counts"], strict=True), strict=True))
    assert shown["raw agreement"] == ("0.500", "2 of 4 steps")
    assert shown["TPR (pass)"] == ("1.000", "2 of 2 passes") and shown["TNR (fail)"] == ("0.000", "0 of 2 fails")
    assert shown["Cohen's kappa"][0] == "0.000"
    (confusion,) = [d.value for d in at.dataframe if "judge pass" in d.value.columns]
    assert list(confusion["judge pass"]) == [2, 2] and list(confusion["judge fail"]) == [0, 0]
    picker = at.selectbox(key="errors_disagreement")
    assert len(picker.options) == 2
    key = f"{judged[1].id}:{len(judged[1].steps)}"
    at.selectbox(key="errors_disagreement").set_value(key).run()
    at.button(key="errors_disagreement_call").click().run()
    assert not at.exception
    session = at.session_state["session"]
    assert session.run.judge_of.run_id == judged[1].id and session.run.final_output["verdict"] == "yes"
    assert session.opened_from[1].startswith(f"People labelled step {len(judged[1].steps)} of run {judged[1].id} fail")

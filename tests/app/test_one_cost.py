"""One cost per run: an imported Codex rollout reads the same cost on the Cost page (its headline, its cache
paragraph and the what-if's baseline), on Runs (the table and the run's line), on the Dashboard and in `agentcore
stats`. The rollout is a real one, read from ../shared/reference/sessions/; the test skips where it is absent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentcore.accounting import account, cache_saving
from agentcore.cli.main import main
from agentcore.sessions import read_import, store_imported
from agentcore.store.runs import Store
from agentcore.transcript import dumps
from agentcore.whatif import what_ifs

REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "sessions"
# 51 calls on gpt-5.5, 73% of their input read from the cache: its cached steps alone cost a fraction of the run
ROLLOUT = (
    REFERENCE
    / "codex"
    / "cli0.125.0_tui_rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.trimmed300.jsonl"
)
pytestmark = pytest.mark.skipif(
    not ROLLOUT.is_file(), reason=f"the real Codex rollout is not here ({ROLLOUT} is absent)"
)
MONEY = re.compile(r"\\?\$?([0-9][0-9,]*\.[0-9]{6})")  # a cost as the pages say it, a dollar sign or not


@pytest.fixture
def imported(tmp_path: Path, monkeypatch):
    """The rollout imported into a fresh library, as the Runs page's upload stores it; the stored run."""
    db = tmp_path / "runs.db"
    monkeypatch.setenv("AGENTCORE_DB", str(db))
    store = Store(db)
    run = store_imported(store, read_import(ROLLOUT.read_bytes(), ROLLOUT.name))[0]
    return db, store, store.load_run(run.id)


def said(text: str) -> list[str]:
    """The costs a line says, as digits."""
    return MONEY.findall(str(text))


def cost_page(open_app, run) -> dict[str, list[str]]:
    from ui.state import Session

    session = Session()
    session.add_run(run)
    at = open_app("views/cost.py", session=session)
    paragraph = next(m.value for m in at.main.markdown if "with its cache reads and writes" in m.value)
    baseline = next(c.value for c in at.caption if c.value.startswith("Each cost saving is against"))
    return {
        "headline": said(next(m.value for m in at.metric if m.label == "cost (USD)")),
        "paragraph": said(paragraph.split("the run cost", 1)[1]),
        "what-if baseline": said(baseline),
    }


def runs_page(open_app, run_id: str) -> dict[str, list[str]]:
    at = open_app("views/runs.py")
    table = at.dataframe[0].value
    at.selectbox(key="runs_selected").set_value(run_id).run()
    line = next(c.value for c in at.caption if run_id in c.value and " · cost " in c.value)
    return {
        "runs table": said(table.loc[table["id"] == run_id, "cost ($)"].iloc[0]),
        "runs line": said(line.split(" · cost ", 1)[1]),
    }


def dashboard(open_app, run_id: str) -> dict[str, list[str]]:
    at = open_app("views/dashboard.py")
    by_model, expensive = (d.value for d in at.dataframe)  # the table by model, then the most expensive runs
    return {
        "dashboard headline": said(next(m.value for m in at.metric if m.label == "Cost ($)")),
        "dashboard by model": said(by_model["cost ($)"].iloc[0]),
        "dashboard most expensive": said(expensive.loc[expensive["id"] == run_id, "cost ($)"].iloc[0]),
    }


def stats(db: Path, capsys) -> dict[str, list[str]]:
    assert main(["stats", "--db", str(db)]) == 0
    heading, row = (re.split(r"\s{2,}", line.strip()) for line in capsys.readouterr().out.splitlines()[:2])
    return {"stats": said(row[heading.index("cost ($)")])}


def terminal(db: Path, run, tmp_path: Path, capsys) -> dict[str, list[str]]:
    """`runs list`'s line for the run, and the total `agentcore cost` prints for its transcript."""
    assert main(["runs", "list", "--db", str(db)]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(run.id))
    transcript = tmp_path / "run.json"
    transcript.write_text(dumps(run), encoding="utf-8")
    assert main(["cost", str(transcript)]) == 0
    total = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("total:"))
    return {"runs list": said(line), "cost total": said(total.split(" · ", 1)[1])}


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_an_imported_codex_rollout_reads_one_cost_on_the_cost_page_runs_the_dashboard_and_stats(
    imported, open_app, capsys, tmp_path
) -> None:
    db, store, run = imported
    report = account(run)
    saving = cache_saving(run, report)
    assert saving is not None and saving.saved_share > 0.5  # the cache paid: this run shows the paragraph
    one = f"{report.total_cost_usd:,.6f}"
    seen = {
        **cost_page(open_app, run),
        **runs_page(open_app, run.id),
        **dashboard(open_app, run.id),
        **stats(db, capsys),
        **terminal(db, run, tmp_path, capsys),
    }
    assert seen == dict.fromkeys(seen, [one])
    assert store.summary(run.id).cost_usd == report.total_cost_usd


@pytest.mark.parametrize(
    "name",
    [
        ROLLOUT.name,
        # each call read a little more from the cache than the request before it sent (the reply is cached too)
        "desktop0.104.0-alpha.1_redacted_rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
    ],
)
def test_the_caching_what_if_counts_what_the_run_already_read_from_the_cache(name: str) -> None:
    path = REFERENCE / "codex" / name
    run = read_import(path.read_bytes(), path.name).runs[0]
    report = account(run)
    caching = next(w for w in what_ifs(run, report) if w.key == "caching")
    read = sum(s.cache_read_tokens for s in report.steps)
    assert f"already read {read / report.total_input_tokens:.0%} of its input from the cache" in caching.label
    # no step reads fewer tokens from the cache than it did, so caching never costs more than the run did
    assert all(w >= s.cache_read_tokens for w, s in zip(caching.cache_read_tokens, report.steps, strict=True))
    assert sum(caching.cost_usd) <= report.total_cost_usd and caching.cost_saving_pct >= 0

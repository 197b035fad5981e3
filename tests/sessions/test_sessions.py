"""Sessions of other agents as runs: ATIF trajectories, Claude Code sessions and Codex rollouts imported (subagents
as linked runs), stepped, forked onto another provider, priced, pinned, labelled; runs exported as ATIF v1.7.

The real session files are read from ../shared/reference/sessions/ (beside the repository; their counts are the
ones its SOURCES.md gives) and those tests skip where it is absent. The files under tests/fixtures/sessions/ are
the project's own, written from the formats' fields.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcore import AssistantMessage, ToolMessage
from agentcore.accounting import account, cache_saving, sent_at
from agentcore.annotations import Annotation
from agentcore.cli.main import main
from agentcore.errors import TranscriptError
from agentcore.exports import export_run
from agentcore.loop import Agent
from agentcore.messages import validate_messages
from agentcore.policies import compactions
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run, RunConfig
from agentcore.sessions import read_import, store_imported
from agentcore.store.runs import Store
from agentcore.testing.pinned import check, propose
from agentcore.toolbox import get_tools

REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "sessions"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "sessions"
CLAUDE_FIXTURE = FIXTURES / "claude" / "sess-0001.jsonl"
CODEX_FIXTURE = FIXTURES / "codex_rollout.jsonl"
ATIF_FIXTURE = FIXTURES / "atif_embedded.json"
needs_reference = pytest.mark.skipif(
    not REFERENCE.is_dir(), reason=f"the real session files are not here ({REFERENCE} is absent)"
)


def imported(path: Path, folder: bool = True):
    return read_import(path.read_bytes(), path.name, path.parent if folder else None)


def calls_of(run: Run) -> list:
    return [c for m in run.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]


def results_of(run: Run) -> list[ToolMessage]:
    return [m for m in run.messages if isinstance(m, ToolMessage)]


# -- the real samples ----------------------------------------------------------------------------------------------

# per file: format; tool calls of the run and of each subagent run, in order; usage of the main run (input with
# the cached tokens, cached, output) or None where the file has none; the model; calls left without a result
SAMPLES = {
    "atif/atif_rfc_v1.7_section_IV_example.json": ("atif", [2], (1120, 200, 124), "gemini-2.5-flash", 0),
    "atif/harbor_terminus2_context_summarization/trajectory.json": ("atif", [7, 2, 0, 2], (6502, 0, 690), "gpt-4o", 0),
    "atif/nemo_hermes_nemoflow_v1.7_trajectory.json": ("atif", [32], (887910, 0, 8071), "qwen3.6:35b", 0),
    "atif/harbor_hermes_native_v1.2_trajectory.json": ("atif", [32], None, "qwen3.6:35b", 0),
    "atif/harbor_golden_terminus2_linear_history/trajectory.json": ("atif", [0], (2252, 0, 160), "gpt-4o", 0),
    "claude_code/v2.1.39_compaction_trimmed/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl": (
        "claude-code",
        [122, 19],
        (10_169_093, 9_954_584, 25_404),
        "claude-opus-4-6",
        1,
    ),
    "codex/desktop0.104_redacted_rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl": (
        "codex",
        [372],
        (33_810_485, 31_621_504, 133_999),
        "gpt-5.3-codex",
        0,
    ),
    "claude_code/v1.0.108_inline_sidechain_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl": (
        "claude-code",
        [13, 2, 6],
        (216399, 190261, 2003),
        "claude-sonnet-4-20250514",
        0,
    ),
    "claude_code/v2.0.64_file_snapshots_4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl": (
        "claude-code",
        [6],
        (251832, 214627, 806),
        "claude-sonnet-4-5-20250929",
        0,
    ),
    "claude_code/v2.1.7_subagent_dir/e9fb405b-169f-40eb-9396-7e75076f045d.jsonl": (
        "claude-code",
        [14, 20],
        (381842, 223343, 10099),
        "claude-sonnet-4-5-20250929",
        0,
    ),
    "codex/cli0.125.0_tui_rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.trimmed300.jsonl": (
        "codex",
        [75 + 3 + 3],
        (4120782, 3004800, 7285),
        "gpt-5.5",
        1,
    ),
    "codex/desktop0.104.0-alpha.1_redacted_rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl": (
        "codex",
        [5],
        (298373, 238848, 1123),
        "gpt-5.3-codex",
        0,
    ),
    "codex/desktop0.128.0-alpha.1_rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl": (
        "codex",
        [38],
        None,
        "",
        0,
    ),
}


@needs_reference
@pytest.mark.parametrize("name", list(SAMPLES))
def test_every_real_sample_imports_with_every_tool_call_its_usage_and_its_subagents(name: str) -> None:
    fmt, calls, usage, model, pending = SAMPLES[name]
    got = imported(REFERENCE / name)
    assert got.format == fmt
    assert [len(calls_of(r)) for r in got.runs] == calls
    main, *subagents = got.runs
    for run in got.runs:
        assert validate_messages(run.messages) == []
        assert all(c.id for c in calls_of(run))
    assert len(results_of(main)) == calls[0] - pending
    assert main.config.model == model
    if usage is None:  # the file has no counts: estimated from the text, and marked so
        assert all(s.estimated and s.usage.input_tokens and s.usage.output_tokens for s in main.steps)
    else:
        u = main.usage
        assert (u.input_tokens, u.cache_read_tokens, u.output_tokens) == usage
        assert not any(s.estimated for s in main.steps if s.usage.input_tokens)
    assert [link.run_id for link in main.subagents] == [r.id for r in subagents]
    for sub in subagents:
        assert sub.spawned_by is not None and sub.spawned_by.run_id == main.id
        assert 1 <= sub.spawned_by.step <= len(main.steps)


@needs_reference
def test_the_real_samples_keep_what_each_format_marks_out() -> None:
    # a Claude Code subagent is linked to the Task call whose result names its agentId
    claude = imported(REFERENCE / "claude_code/v2.1.7_subagent_dir/e9fb405b-169f-40eb-9396-7e75076f045d.jsonl")
    task = next(c for c in calls_of(claude.runs[0]) if c.name == "Task")
    assert claude.runs[1].spawned_by.tool_call_id == task.id
    assert "1 summary lines" in claude.notes and "2 system lines" in claude.notes
    assert sum(len(m.reasoning) for m in claude.runs[0].messages if isinstance(m, AssistantMessage)) == 11
    # the two inline sidechains of 1.0 go to the Task calls that gave their prompts
    inline = imported(REFERENCE / "claude_code/v1.0.108_inline_sidechain_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl")
    tasks = {c.id: c for c in calls_of(inline.runs[0]) if c.name == "Task"}
    for sub in inline.runs[1:]:
        assert tasks[sub.spawned_by.tool_call_id].arguments["prompt"] == sub.messages[0].content
    assert sum(r.is_error for r in results_of(inline.runs[0]) + results_of(inline.runs[2])) == 3
    # redacted Codex arguments are not JSON: kept as written
    redacted = imported(REFERENCE / next(n for n in SAMPLES if "alpha.1_redacted" in n))
    assert all(c.raw_arguments.startswith("[REDACTED_ARGUMENTS") for c in calls_of(redacted.runs[0]))
    # ATIF subagents by trajectory_path, from the system step that names them; their usage is their own
    harbor = imported(REFERENCE / "atif/harbor_terminus2_context_summarization/trajectory.json")
    # final_metrics' total, subagents included, is the steps with metrics; the others are estimated from their text
    counted = [s for r in harbor.runs for s in r.steps if not s.estimated]
    assert sum(s.usage.input_tokens for s in counted) == 7802
    assert sum(s.usage.output_tokens for s in counted) == 1030
    assert all(s.usage.input_tokens > 0 for r in harbor.runs for s in r.steps)  # an estimate, never 0


@needs_reference
def test_an_uploaded_session_says_its_subagent_files_were_not_read() -> None:
    got = imported(REFERENCE / "claude_code/v2.1.7_subagent_dir/e9fb405b-169f-40eb-9396-7e75076f045d.jsonl", False)
    assert len(got.runs) == 1
    assert "subagent files not read" in got.notes


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@needs_reference
@pytest.mark.parametrize("name", list(SAMPLES))
def test_every_real_sample_forks_onto_another_provider_and_steps(name: str) -> None:
    run = imported(REFERENCE / name).runs[0]
    k = max(1, len(run.steps) // 2)
    fork = run.fork(k)
    fork.config = RunConfig.made_for("scripted", "weather", get_tools("get_weather"), max_steps=k + 5)
    Agent(ScriptedProvider(scenario="weather"), get_tools("get_weather")).step(fork)
    assert len(fork.steps) == k and fork.steps[-1].provider == "scripted"
    assert fork.parent.run_id == run.id and fork.parent.step == k
    assert validate_messages(fork.messages) == []


# -- the project's own fixtures ------------------------------------------------------------------------------------


def test_a_claude_code_message_over_several_lines_is_one_step_with_its_usage_counted_once() -> None:
    got = imported(CLAUDE_FIXTURE)
    run = got.runs[0]
    assert len(run.steps) == 2
    first = run.messages[run.steps[0].message_count]
    assert first.content == "Checking both." and [c.id for c in first.tool_calls] == ["toolu_A", "toolu_B"]
    assert first.reasoning[0].text == "Two cities: two calls." and first.reasoning[0].signature == "c2lnbmF0dXJl"
    u = run.steps[0].usage  # 12 uncached + 1000 read + 300 written, once though four lines repeat it
    assert (u.input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens) == (1312, 1000, 300, 40)
    assert run.steps[0].started_at == "2026-01-02T10:00:01.000Z"
    assert run.steps[0].wire.response[0]["id"] == "msg_1" and "lines 4-7" in run.steps[0].wire.url
    assert [(m.content, m.is_error) for m in results_of(run)][1] == ("Rome: 25 C", False)
    assert results_of(run)[0].is_error
    assert run.stop_reason == "answer" and run.config.provider == "anthropic"


def test_a_claude_code_subagent_file_is_a_run_linked_both_ways() -> None:
    main, sub = imported(CLAUDE_FIXTURE).runs
    assert sub.spawned_by.model_dump() == {"run_id": main.id, "step": 1, "tool_call_id": "toolu_B"}
    assert main.subagents[0].run_id == sub.id
    assert "step 1 started subagent run " + sub.id + " (call toolu_B)" in main.link_lines
    assert sub.config.model == "claude-haiku-4-5-20251001" and len(sub.steps) == 2


def test_lines_kept_aside_and_unknown_lines_are_counted_in_one_line() -> None:
    notes = imported(CLAUDE_FIXTURE).notes
    assert "\n" not in notes
    for words in ("1 summary lines", "1 file-history-snapshot lines", "1 progress lines", "1 system lines"):
        assert words in notes
    assert "1 lines of unknown type 'mystery-event'" in notes
    assert "1 events of unknown type 'brand_new_event'" in imported(CODEX_FIXTURE).notes


def test_a_codex_rollout_keeps_arguments_as_written_and_each_calls_usage_once() -> None:
    run = imported(CODEX_FIXTURE).runs[0]
    calls = calls_of(run)
    assert [c.name for c in calls] == ["exec_command", "apply_patch", "web_search"]
    assert calls[0].raw_arguments == '{"cmd": "cat hello.py"'  # not valid JSON, kept as the model wrote it
    assert calls[1].raw_arguments.startswith("*** Begin Patch")
    assert calls[2].id == "ws_9" and calls[2].arguments["query"] == "python print docs"
    assert [(s.usage.input_tokens, s.usage.cache_read_tokens, s.usage.output_tokens) for s in run.steps] == [
        (5000, 0, 120),  # the repeated count after the output is the same call's
        (5400, 4992, 60),
        (5600, 5376, 30),
    ]
    assert run.steps[0].usage.reasoning_tokens == 64
    assert run.messages[0].content == "You are Codex, a coding agent."
    assert [m.content for m in run.messages if m.role == "user"] == ["Fix the greeting and check the docs."]
    assert run.config.model == "gpt-5.5" and run.config.provider == "openai-responses"
    assert run.messages[run.steps[0].message_count].reasoning[0].encrypted_content == "gAAAAenc"
    # a count repeated while the next call is being written is the earlier call's: it neither ends nor prices it
    lines = CODEX_FIXTURE.read_text().splitlines()
    lines.insert(13, lines[11])  # the first call's count again, after the second call's first item
    again = read_import("\n".join(lines).encode(), "c.jsonl").runs[0]
    assert [s.usage for s in again.steps] == [s.usage for s in run.steps]


def test_an_atif_embedded_subagent_and_results_without_a_call_id() -> None:
    main, sub = imported(ATIF_FIXTURE).runs
    assert main.spawned_by is None and sub.spawned_by.tool_call_id == "c2"
    assert main.config.provider == "anthropic" and main.config.model == "claude-sonnet-4-5"
    assert [t.name for t in main.config.tools] == ["get_weather"]
    assert main.messages[1].content == "Weather in Paris?\n[image: map.png (image/png)]"  # the part kept as a reference
    assert main.steps[0].usage.cache_read_tokens == 800
    assert results_of(sub)[0].content == "21 C"  # no source_call_id: the step's one call takes it
    assert all(s.estimated for s in sub.steps)


def test_an_imported_session_is_priced_charted_pinned_and_labelled_like_any_run(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "runs.db"))
    main, sub = store_imported(store, imported(CLAUDE_FIXTURE))
    report = account(store.load_run(main.id))
    assert report.priced and [s.cache_read_tokens for s in report.steps] == [1000, 1300]
    saving = cache_saving(main)
    assert saving is not None and 0 < saving.saved_usd < saving.uncached_usd
    test = propose(main)
    assert check(test.expect, main) == []
    store.annotate(main.id, Annotation(step=1, tool_call_id="toolu_A", labels=["wrong tool"]))
    assert store.load_run(main.id).annotations[0].tool_call_id == "toolu_A"
    assert store.load_run(sub.id).spawned_by.run_id == main.id


def test_store_imported_follows_an_id_the_store_changes(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "runs.db"))
    session = imported(CLAUDE_FIXTURE)
    first = store_imported(store, session)
    main, sub = store_imported(store, session)  # both ids taken now: the store gives new ones
    assert {main.id, sub.id}.isdisjoint({first[0].id, first[1].id})
    assert store.load_run(main.id).subagents[0].run_id == sub.id
    assert store.load_run(sub.id).spawned_by.run_id == main.id


# -- refusals and hostile files ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [b"hello world\n", b'{"a": 1}\n{"b": 2}\n', b'{"schema": "ATIF"}', b"\xff\xfe\x00garbage", b"", b"[1, 2"],
)
def test_a_file_of_none_of_the_formats_is_refused_in_one_line(raw: bytes) -> None:
    with pytest.raises(TranscriptError) as caught:
        read_import(raw, "x.jsonl")
    assert "\n" not in str(caught.value) and str(caught.value).startswith("x.jsonl: ")


def test_json_lines_of_another_kind_are_refused_by_name() -> None:
    with pytest.raises(TranscriptError, match="neither a Claude Code session nor a Codex rollout"):
        read_import(b'{"type": "message", "text": "hi"}\n{"type": "other"}\n', "log.jsonl")


def test_a_subagent_path_outside_the_folder_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(ATIF_FIXTURE.read_text())
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "link.json").symlink_to(secret)
    data = json.loads(ATIF_FIXTURE.read_text())
    del data["subagent_trajectories"]
    refs = [{"trajectory_path": p} for p in ("../secret.json", str(secret), "link.json", "http://127.0.0.1:9/x.json")]
    data["steps"][2]["observation"]["results"][1]["subagent_trajectory_ref"] = refs
    got = read_import(json.dumps(data).encode(), "t.json", folder)
    assert len(got.runs) == 1
    assert "4 subagent trajectories not found beside the file" in got.notes


def test_a_subagent_that_names_itself_stops_at_the_depth_limit(tmp_path: Path) -> None:
    data = json.loads(ATIF_FIXTURE.read_text())
    del data["subagent_trajectories"]
    data["steps"][2]["observation"]["results"][1]["subagent_trajectory_ref"] = [{"trajectory_path": "self.json"}]
    (tmp_path / "self.json").write_text(json.dumps(data))
    got = read_import((tmp_path / "self.json").read_bytes(), "self.json", tmp_path)
    assert len(got.runs) == 5  # the file and four levels of itself
    assert "nested more than 4 levels deep" in got.notes


def test_deep_or_huge_lines_are_refused_or_counted_never_a_crash() -> None:
    deep = b'{"type": "user", "sessionId": "s", "uuid": "u", "message": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    good = CLAUDE_FIXTURE.read_bytes()
    got = read_import(good + deep + b"\n", "s.jsonl")
    assert "1 lines not JSON" in got.notes
    with pytest.raises(TranscriptError, match="larger than 64 MB"):
        read_import(b" " * (64 * 2**20 + 1), "big.jsonl")


def test_secrets_in_a_session_are_masked_by_kind_and_counted_in_the_note() -> None:
    got = imported(CLAUDE_FIXTURE)
    text = json.dumps(got.runs[0].model_dump(mode="json"))
    # agentcore's own nets write what the store writes (a saved run exported reads as one exported at once); the
    # note still says which kind it was
    assert "sk-proj-AbCdEf" not in text and "[redacted]" in text
    assert "1 secret masked (1 sk- key)" in got.notes


# -- export as ATIF ------------------------------------------------------------------------------------------------


def weather_run() -> Run:
    tools = get_tools("get_weather")
    run = Run.start("What is the weather in Paris, Rome and Tokyo?", RunConfig.made_for("scripted", "weather", tools))
    Agent(ScriptedProvider(scenario="weather"), tools).run(run)
    return run


def test_a_scripted_weather_run_exports_as_atif_the_atif_package_accepts_and_imports_back() -> None:
    atif = pytest.importorskip("atif", reason="the atif package (the test extra) judges ATIF exports")
    run = weather_run()
    text = export_run(run, "atif")
    trajectory = atif.Trajectory.model_validate_json(text)
    assert trajectory.schema_version == "ATIF-v1.7"
    assert trajectory.agent.tool_definitions[0]["function"]["name"] == "get_weather"
    assert trajectory.final_metrics.total_prompt_tokens == run.usage.input_tokens
    agent_steps = [s for s in trajectory.steps if s.source == "agent"]
    assert [s.metrics.prompt_tokens for s in agent_steps] == [s.usage.input_tokens for s in run.steps]
    back = read_import(text, "w.atif.json").runs[0]
    assert back.messages == run.messages
    assert back.config.provider == "scripted" and [s.estimated for s in back.steps] == [s.estimated for s in run.steps]


def test_an_exported_trajectory_embeds_its_subagents_and_reimports_them(tmp_path: Path, capsys) -> None:
    atif = pytest.importorskip("atif", reason="the atif package (the test extra) judges ATIF exports")
    db = str(tmp_path / "runs.db")
    assert main(["runs", "import", str(ATIF_FIXTURE), "--db", db]) == 0
    out = capsys.readouterr().out
    run_id = out.split("as run ")[1].split()[0]
    assert "subagent run " in out and f"from run {run_id} step 1" in out
    out_file = tmp_path / "t.atif.json"
    assert main(["runs", "export", run_id, "--format", "atif", "--out", str(out_file), "--db", db]) == 0
    trajectory = atif.Trajectory.model_validate_json(out_file.read_text())
    assert len(trajectory.subagent_trajectories) == 1
    again = imported(out_file)
    original = imported(ATIF_FIXTURE)
    assert [r.messages for r in again.runs] == [r.messages for r in original.runs]
    assert [[s.usage for s in r.steps] for r in again.runs] == [[s.usage for s in r.steps] for r in original.runs]
    assert again.runs[1].spawned_by.tool_call_id == "c2"


def test_a_broken_call_and_an_error_result_survive_the_atif_round_trip() -> None:
    run = imported(CODEX_FIXTURE).runs[0]
    back = read_import(export_run(run, "atif"), "c.atif.json").runs[0]
    assert back.messages == run.messages  # the encrypted reasoning too, in the step's extra
    assert calls_of(back)[0].raw_arguments == '{"cmd": "cat hello.py"'


def test_the_cli_imports_a_session_shows_its_links_and_exports_it(tmp_path: Path, capsys) -> None:
    db = str(tmp_path / "runs.db")
    assert main(["runs", "import", str(CLAUDE_FIXTURE), "--db", db]) == 0
    out = capsys.readouterr().out
    run_id = out.split("as run ")[1].split()[0]
    assert "kept aside: " in out and out.count("subagent run ") == 1
    assert main(["runs", "show", run_id, "--db", db]) == 0
    assert "step 1 started subagent run " in capsys.readouterr().out
    transcript = tmp_path / "run.json"
    assert main(["runs", "export", run_id, "--out", str(transcript), "--db", db]) == 0
    assert main(["export", str(transcript), "--format", "atif"]) == 0
    assert json.loads(capsys.readouterr().out)["schema_version"] == "ATIF-v1.7"


def test_fields_of_the_wrong_type_are_read_around_not_a_crash() -> None:
    codex = [json.loads(x) for x in CODEX_FIXTURE.read_text().splitlines()]
    codex[6]["payload"]["summary"] = 1.5  # the reasoning item's summary
    codex[7]["type"] = {"type": "tool_use"}
    run = read_import("\n".join(map(json.dumps, codex)).encode(), "c.jsonl").runs[0]
    assert run.messages[run.steps[0].message_count].reasoning[0].summary == ()
    atif = json.loads(ATIF_FIXTURE.read_text())
    atif["steps"][2]["tool_calls"] = 1.5
    atif["steps"][2]["observation"]["results"][0]["source_call_id"] = {"id": "c1"}
    main = read_import(json.dumps(atif).encode(), "a.json").runs[0]
    assert calls_of(main) == [] and "[observation] 21 C" in [m.content for m in main.messages]


def test_the_cost_page_says_what_the_cache_saved_an_imported_claude_code_session(open_app) -> None:
    from ui.state import Session

    run = imported(CLAUDE_FIXTURE).runs[0]
    session = Session()
    session.add_run(run)
    at = open_app("views/cost.py", session=session)
    assert not at.exception
    saving = cache_saving(run)
    text = "\n".join(m.value for m in at.main.markdown)
    # to the millionth, as every page says a cost, the dollar sign kept from Markdown's formulas
    assert f"**What the cache saved:** \\${saving.saved_usd:,.6f} of \\${saving.uncached_usd:,.6f}" in text


def every_sample() -> list:
    """Every session file: the project's own fixtures and, where ../shared is here, every reference file (a
    subagent's, a continuation's and a summariser's file each a sample of its own); a clear skip where it is not."""
    own = sorted(p for p in FIXTURES.rglob("*") if p.suffix in (".json", ".jsonl"))
    params = [pytest.param(p, id=str(p.relative_to(FIXTURES))) for p in own]
    if not REFERENCE.is_dir():
        absent = pytest.mark.skip(reason=f"the real session files are not here ({REFERENCE} is absent)")
        return [*params, pytest.param(None, id="reference", marks=absent)]
    real = sorted(p for p in REFERENCE.rglob("*") if p.suffix in (".json", ".jsonl"))
    return params + [pytest.param(p, id=str(p.relative_to(REFERENCE))) for p in real]


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
@pytest.mark.parametrize("path", every_sample())
def test_every_export_of_every_sample_validates_and_imports_back_with_the_same_messages(path: Path) -> None:
    """Each run a sample makes, as ATIF with its subagents embedded and as agentcore's own transcript: what each step
    sent, its usage and its compaction come back too."""
    atif = pytest.importorskip("atif", reason="the atif package (the test extra) judges ATIF exports")
    main, *subagents = imported(path).runs
    for run in (main, *subagents):
        own = [r for r in subagents if any(link.run_id == r.id for link in run.subagents)]
        text = export_run(run, "atif", subagents=own)
        assert len(atif.Trajectory.model_validate_json(text).subagent_trajectories or []) == len(own)
        back, *back_subagents = read_import(text, "t.atif.json").runs
        assert [r.messages for r in (back, *back_subagents)] == [run.messages, *(r.messages for r in own)]
        assert [(s.usage, s.estimated) for s in back.steps] == [(s.usage, s.estimated) for s in run.steps]
        assert compactions(back) == compactions(run)
        assert all(sent_at(back, k) == sent_at(run, k) for k in range(1, len(run.steps) + 1))
        again = read_import(export_run(run, "json"), "t.json").runs[0]  # agentcore's own transcript, likewise
        assert again.messages == run.messages and [s.usage for s in again.steps] == [s.usage for s in run.steps]
        assert all(sent_at(again, k) == sent_at(run, k) for k in range(1, len(run.steps) + 1))


@pytest.mark.parametrize("fixture", [CLAUDE_FIXTURE, CODEX_FIXTURE], ids=["claude", "codex"])
def test_a_session_cut_mid_call_gains_no_result_on_the_atif_round_trip(fixture: Path) -> None:
    """Cut after every line: a call the file has no result for at its end stays pending, read back from ATIF."""
    atif = pytest.importorskip("atif", reason="the atif package (the test extra) judges ATIF exports")
    lines = fixture.read_text().splitlines()
    cut_mid_call = 0
    for end in range(1, len(lines) + 1):
        try:
            run = read_import("\n".join(lines[:end]).encode(), fixture.name).runs[0]
        except TranscriptError:  # cut before the file says what it is: refused, as any such file is
            continue
        pending = calls_of(run)[len(results_of(run)) :]
        text = export_run(run, "atif")
        atif.Trajectory.model_validate_json(text)
        back = read_import(text, "t.atif.json").runs[0]
        assert back.messages == run.messages
        assert calls_of(back)[len(results_of(back)) :] == pending
        cut_mid_call += bool(pending)
    assert cut_mid_call  # some cut left a call without its result


def test_media_parts_continuations_absent_subagents_and_odd_timestamps_are_kept_or_named() -> None:
    atif = pytest.importorskip("atif", reason="the atif package (the test extra) judges ATIF exports")
    data = {
        "schema_version": "ATIF-v1.8",
        "session_id": "s",
        "agent": {"name": "writer", "version": "1"},
        "continued_trajectory_ref": "trajectory.cont-1.json",
        "steps": [
            {
                "step_id": 1,
                "source": "user",
                "message": [
                    {"type": "text", "text": "What is said here?"},
                    {"type": "audio", "source": {"media_type": "audio/wav", "path": "clips/a.wav"}},
                ],
            },
            {"step_id": 2, "source": "agent", "message": "Hello.", "timestamp": "yesterday at noon"},
        ],
    }
    got = read_import(json.dumps(data), "t.json")
    run = got.runs[0]
    assert run.messages[0].content == "What is said here?\n[audio: clips/a.wav (audio/wav)]"
    assert "continuation not read: trajectory.cont-1.json" in got.notes
    atif.Trajectory.model_validate_json(export_run(run, "atif"))  # the timestamp that is not ISO 8601 left out
    session = REFERENCE / "claude_code/v2.1.7_subagent_dir/e9fb405b-169f-40eb-9396-7e75076f045d.jsonl"
    if session.is_file():
        lines = session.read_text().replace('"agentId":"a485154"', '"agentId":"a999999"')
        named = read_import(lines, session.name, session.parent).notes
        assert "subagent files absent: e9fb405b-169f-40eb-9396-7e75076f045d/subagents/agent-a999999.jsonl" in named


@pytest.mark.parametrize("fixture", ["claude", "codex"])
def test_an_imported_session_reads_one_cost_wherever_it_is_said(fixture, tmp_path, open_app, capsys) -> None:
    """The Cost page's headline and its cache paragraph, the library's list, its figures and `stats`: one number."""
    from agentcore.accounting import run_cost
    from agentcore.cli.main import main
    from agentcore.store import Store
    from agentcore.store.figures import RunFigures
    from ui import words
    from ui.state import Session

    run = imported({"claude": CLAUDE_FIXTURE, "codex": CODEX_FIXTURE}[fixture]).runs[0]
    cost = run_cost(run)
    assert cost and account(run).total_cost_usd == pytest.approx(cost) and RunFigures.of(run).cost_usd == cost
    saving = cache_saving(run)
    assert saving is None or saving.cost_usd == cost  # the run's cost, not its cached steps' alone
    session = Session()
    session.add_run(run)
    at = open_app("views/cost.py", session=session)
    headline = next(m.value for m in at.metric if m.label == "cost (USD)")
    assert headline == words.usd(cost)
    if saving is not None:
        text = "\n".join(m.value for m in at.main.markdown)
        assert f"the run cost \\${cost:,.6f} with its cache reads and writes" in text
    db = str(tmp_path / "runs.db")
    store = Store(db)
    stored = store.import_run(run)
    assert store.summary(stored.id).cost_usd == cost
    assert main(["stats", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["totals"]["cost_usd"] == pytest.approx(cost)

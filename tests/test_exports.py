"""Exports: transcripts, request bodies, zips and comparison bundles, all written by the one JSON writer."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from agentcore import AssistantMessage, Run, RunConfig, transcript
from agentcore.cli.main import main
from agentcore.compare_report import load_bundle, make_bundle
from agentcore.exports import FORMATS, WIRE_FORMATS, export_body, export_bundle, export_json, export_zip
from agentcore.store.runs import Store
from agentcore.wireformat import export_request

PROMPT = "weather in \ud800 Paris?"  # the CLI takes undecodable bytes in argv as a lone surrogate


def surrogate_run() -> Run:
    run = Run.start(PROMPT, RunConfig(provider="scripted", model="weather"))
    run.messages.append(AssistantMessage(content="reply \udcff"))
    return run


def test_a_transcript_export_with_a_lone_surrogate_is_utf8_and_reads_back_exactly() -> None:
    run = surrogate_run()
    text = export_json(run)
    assert transcript.loads(text.encode("utf-8")) == run


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
def test_a_request_body_export_with_a_lone_surrogate_is_utf8_and_reads_back_exactly(fmt: str) -> None:
    run = surrogate_run()
    text = export_body(run, fmt)
    assert json.loads(text.encode("utf-8")) == export_request(run, fmt)


def test_a_zip_export_with_a_lone_surrogate_holds_every_format() -> None:
    run = surrogate_run()
    with zipfile.ZipFile(io.BytesIO(export_zip([run], FORMATS))) as archive:
        members = {name: archive.read(name).decode("utf-8") for name in archive.namelist()}
    assert sorted(members) == sorted([f"{run.id}.json"] + [f"{run.id}.{fmt}.json" for fmt in WIRE_FORMATS])
    assert transcript.loads(members[f"{run.id}.json"]) == run
    assert json.loads(members[f"{run.id}.openai.json"]) == export_request(run, "openai")


def test_a_comparison_bundle_with_a_lone_surrogate_is_utf8_and_loads_back() -> None:
    runs = [surrogate_run(), surrogate_run()]
    text = export_bundle(make_bundle(PROMPT, runs, ["scripted:weather", "scripted:weather #2"]))
    prompt, labels, loaded = load_bundle(json.loads(text.encode("utf-8")))
    assert prompt == PROMPT and labels == ["scripted:weather", "scripted:weather #2"] and loaded == runs


def test_exports_keep_non_ascii_text_readable() -> None:
    run = Run.start("Wetter in Zürich, 東京?")
    assert "Zürich, 東京" in export_json(run)
    assert "Zürich, 東京" in export_body(run, "anthropic")


def test_exports_leave_out_a_key_found_in_the_environment(monkeypatch) -> None:
    key = "sk-exported-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    run = Run.start(f"my key is {key}")
    for text in (export_json(run), export_body(run, "openai"), export_bundle(make_bundle("p", [run], ["a"]))):
        assert key not in text and "[redacted]" in text


def test_the_cli_exports_a_stored_run_with_a_lone_surrogate(tmp_path: Path, capsys) -> None:
    run = surrogate_run()
    db = str(tmp_path / "runs.db")
    Store(db).save_run(run)
    out = tmp_path / "run.json"
    assert main(["runs", "export", run.id, "--db", db, "--out", str(out)]) == 0
    assert transcript.load(out) == run
    assert main(["runs", "export", run.id, "--db", db, "--format", "ollama"]) == 0
    assert json.loads(capsys.readouterr().out) == export_request(run, "ollama")
    zipped = tmp_path / "runs.zip"
    assert main(["runs", "export", run.id, "--db", db, "--out", str(zipped), "--format", "anthropic"]) == 0
    with zipfile.ZipFile(zipped) as archive:
        assert sorted(archive.namelist()) == [f"{run.id}.anthropic.json", f"{run.id}.json"]
    assert main(["export", str(out), "--format", "openai"]) == 0
    assert json.loads(capsys.readouterr().out) == export_request(run, "openai")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


def test_compare_out_writes_a_bundle_for_a_prompt_with_a_lone_surrogate(tmp_path: Path) -> None:
    out = tmp_path / "bundle.json"
    configs = ["--config", "scripted:weather", "--config", "scripted:weather"]
    assert main(["compare", PROMPT, *configs, "--out", str(out)]) == 0
    prompt, _, runs = load_bundle(json.loads(out.read_bytes()))
    assert prompt == PROMPT and [r.messages[0].content for r in runs] == [PROMPT, PROMPT]

"""The command line, end to end: exit codes, transcripts, clear one-line errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from agentcore import transcript as tr
from agentcore.cli.main import main


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_the_parallel_weather_run_exits_0_and_writes_the_documented_transcript(tmp_path, capsys):
    out = tmp_path / "t.json"
    code = main(
        ["run", "Weather in Paris and Rome?", "--provider", "scripted", "--scenario", "weather", "--out", str(out)]
    )
    said = capsys.readouterr()
    assert code == 0, said.err
    assert "get_weather" in said.out and "stop: answer after 2 steps" in said.out
    data = json.loads(out.read_text())
    assert data["format"] == "agentcore.transcript" and data["version"] == 1
    calls = data["messages"][1]["tool_calls"]
    assert [c["arguments"]["city"] for c in calls] == ["Paris", "Rome"]
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "tool", "tool", "assistant"]
    assert data["stop_reason"] == "answer"


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["run", "--provider", "scripted", "--scenario", "runaway", "--max-steps", "3"], 3, "stop: max_steps"),
        (["run", "--provider", "scripted", "--scenario", "structured"], 0, "stop: structured"),
        (["run", "--provider", "scripted", "--scenario", "recovery", "--sequential-tools"], 0, "= 395"),
        (["run", "x", "--provider", "scripted", "--scenario", "nope"], 2, "unknown scenario 'nope'"),
        (["run", "x", "--provider", "scripted", "--tools", "nope"], 2, "unknown tool 'nope'"),
        (["run", "x", "--provider", "nope"], 2, "unknown provider 'nope'"),
        (["run", "x", "--provider", "scripted", "--max-steps", "0"], 2, "--max-steps must be at least 1"),
        (["frobnicate"], 2, "invalid choice"),
    ],
)
def test_exit_codes_and_messages(args, code, words, capsys):
    assert main(args) == code
    captured = capsys.readouterr()
    assert words in captured.out + captured.err
    assert "Traceback" not in captured.err


def test_a_provider_error_exits_4_and_keeps_the_transcript(tmp_path, capsys):
    source = tmp_path / "short.json"
    assert main(["run", "--provider", "scripted", "--scenario", "weather", "--out", str(source)]) == 0
    data = json.loads(source.read_text())
    data["messages"] = data["messages"][:2]  # one assistant turn left to replay
    data["steps"] = data["steps"][:1]
    source.write_text(json.dumps(data))
    out = tmp_path / "replayed.json"
    code = main(["run", "--replay", str(source), "--out", str(out)])
    assert code == 4
    assert "only 1 assistant turns" in capsys.readouterr().err
    run = tr.load(out)
    assert run.stop_reason == "error" and len(run.steps) == 1 and run.messages[-1].role == "tool"


def test_replay_runs_the_tools_for_real(tmp_path, capsys):
    source = tmp_path / "t.json"
    main(["run", "--provider", "scripted", "--scenario", "recovery", "--out", str(source)])
    out = tmp_path / "r.json"
    assert main(["run", "--replay", str(source), "--out", str(out)]) == 0
    original, again = tr.load(source), tr.load(out)
    assert [m.content for m in again.messages] == [m.content for m in original.messages]


def test_show_and_validate_read_a_transcript(tmp_path, capsys):
    path = tmp_path / "t.json"
    main(["run", "--provider", "scripted", "--scenario", "recovery", "--out", str(path)])
    capsys.readouterr()
    assert main(["show", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "step 1" in shown and "calculater" in shown and "tool calculator error" in shown
    assert main(["validate", str(path)]) == 0
    assert "valid transcript" in capsys.readouterr().out


@pytest.mark.parametrize("content", ["{oops", '{"format": "agentcore.transcript", "version": 1, "messages": 5}', ""])
def test_a_malformed_transcript_is_one_line_and_exit_2(tmp_path, content, capsys):
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentcore: error: ") and err.count("\n") == 1
    assert "Traceback" not in err


def test_scenarios_and_tools_are_listed(capsys):
    assert main(["scenarios"]) == 0
    listed = capsys.readouterr().out
    for name in ("weather", "recovery", "research", "runaway", "structured"):
        assert name in listed
    assert main(["tools", "--schema"]) == 0
    assert '"expression"' in capsys.readouterr().out


def test_runs_are_saved_in_the_runs_database_unless_told_not_to(tmp_path, monkeypatch, capsys):
    from agentcore.store.runs import Store

    db = tmp_path / "runs.db"
    monkeypatch.setenv("AGENTCORE_DB", str(db))
    assert main(["run", "--provider", "scripted", "--scenario", "weather"]) == 0
    saved = Store(db).list_runs()
    assert len(saved) == 1 and saved[0].stop_reason == "answer"
    assert main(["run", "--provider", "scripted", "--scenario", "weather", "--no-db"]) == 0
    assert len(Store(db).list_runs()) == 1


@pytest.mark.slow  # starts the command line's own process and kills it
def test_a_run_killed_mid_run_keeps_every_finished_phase_in_the_database(tmp_path):
    from agentcore import Agent, Run, RunConfig, ScriptedProvider
    from agentcore.messages import AssistantMessage, ToolCall
    from agentcore.store.runs import Store
    from agentcore.tools import tool

    @tool
    def slow(seconds: float) -> str:
        """Stands in for the toolbox's slow while the transcript to replay is written."""
        return "slept"

    # a transcript whose model turns each call the toolbox's slow tool: replayed, each tools phase takes 0.6 s
    turns = [
        AssistantMessage(
            content=f"turn {n}", tool_calls=(ToolCall(id=f"call_{n}", name="slow", arguments={"seconds": 0.6}),)
        )
        for n in range(1, 7)
    ]
    source = Run.start("wait", RunConfig(provider="scripted", model="replay", max_steps=20))
    Agent(ScriptedProvider(replay=[*turns, AssistantMessage(content="done")]), [slow]).run(source)
    tr.save(source, tmp_path / "slow.json")
    db = tmp_path / "runs.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentcore", "run", "--replay", str(tmp_path / "slow.json"), "--tools", "slow"]
        + ["--db", str(db), "--max-steps", "20"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    seen: list[str] = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if "[call_3]" in line:  # step 3's model phase is finished: its tools phase sleeps 0.6 s
                time.sleep(0.3)
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGKILL and "[call_3]" in seen[-1], seen
    (summary,) = Store(db).list_runs()
    run = Store(db).load_run(summary.id)
    # steps 1 and 2 whole, step 3's model turn without its result: the tools phase was in flight
    assert [m.role for m in run.messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert [m.tool_calls[0].id for m in run.messages if m.role == "assistant"] == ["call_1", "call_2", "call_3"]
    assert [m.content for m in run.messages if m.role == "tool"] == ["slept 0.6 s", "slept 0.6 s"]
    assert len(run.steps) == 3 and run.next_phase == "tools" and run.stop_reason is None


def test_an_unusable_default_database_warns_and_the_run_goes_on(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path))  # a folder, not a database file
    assert main(["run", "--provider", "scripted", "--scenario", "weather"]) == 0
    err = capsys.readouterr().err
    assert "warning: not saving to the runs database" in err and err.count("\n") == 1
    assert main(["run", "--provider", "scripted", "--scenario", "weather", "--db", str(tmp_path)]) == 2


# -- the loop guard and the default tools ----------------------------------------------


def test_loop_guard_flag_parses_to_the_runs_setting_and_refuses_other_values(capsys):
    from agentcore.cli.main import build_parser

    parser = build_parser()
    assert parser.parse_args(["run", "x"]).loop_guard is None  # the provider's default: guard for local, warn else
    for mode in ("off", "warn", "guard"):
        assert parser.parse_args(["run", "x", "--loop-guard", mode]).loop_guard == mode
    assert main(["run", "x", "--provider", "scripted", "--loop-guard", "on"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--loop-guard" in err and "'guard'" in err


def test_the_parser_is_built_once_and_again_for_a_provider_or_hook_registered_since(monkeypatch, capsys):
    from agentcore.cli.main import parser
    from agentcore.hooks.examples import HOOKS
    from agentcore.providers import REGISTRY

    def run_help(built) -> str:
        with pytest.raises(SystemExit):
            built.parse_args(["run", "--help"])
        return " ".join(capsys.readouterr().out.split())

    first = parser()
    assert parser() is first  # parsing leaves it as it was: the next command line reads the same parser
    assert first.parse_args(["runs", "list"]).command == "runs" and parser().parse_args(["run", "x"]).prompt == "x"
    monkeypatch.setattr(REGISTRY, "_entries", {**REGISTRY._entries, "acmeprov": REGISTRY["scripted"]})
    with_provider = parser()
    assert with_provider is not first and "acmeprov" in run_help(with_provider) and "acmeprov" not in run_help(first)
    monkeypatch.setattr(HOOKS, "_entries", {**HOOKS._entries, "acmehook": next(iter(HOOKS.values()))})
    with_hook = parser()
    assert with_hook is not with_provider and "acmehook:" in run_help(with_hook)


def test_loop_guard_on_the_cli_ends_the_runaway_loop_with_an_answer(tmp_path, capsys):
    out = tmp_path / "t.json"
    args = ["run", "--provider", "scripted", "--scenario", "runaway", "--no-db", "--out", str(out)]
    assert main([*args, "--loop-guard", "guard"]) == 0
    printed = capsys.readouterr().out
    assert "loop guard: 2 repeated calls answered from the run" in printed and "stop: answer after 4 steps" in printed
    run = tr.load(out)
    assert run.config.loop_guard == "guard" and run.steps[-1].tools_withheld
    assert main([*args, "--max-steps", "3"]) == 3  # the scripted model's default is warn: the loop runs on
    assert "loop guard (warn): search_notes" in capsys.readouterr().out
    assert "loop_guard" not in json.loads(out.read_text())["config"]


def test_a_run_naming_no_tools_is_offered_the_apps_default_tools_and_none_offers_none(katan, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "katan-key")
    out = tmp_path / "t.json"
    args = ["run", "hello there", "--provider", "openai", "--base-url", f"{katan.url}/v1", "--model", "echo"]
    args += ["--max-steps", "1", "--no-db", "--out", str(out)]
    main(args)  # llm-katan answers a request with tools by a call: the budget of one step ends the run
    run = tr.load(out)
    assert [t.name for t in run.config.tools] == ["get_weather", "calculator"]
    assert [t["function"]["name"] for t in run.steps[0].wire.request["tools"]] == ["get_weather", "calculator"]
    assert main([*args, "--tools", "none"]) == 0  # no tools: katan echoes an answer
    run = tr.load(out)
    assert run.config.tools == [] and "tools" not in run.steps[0].wire.request and run.stop_reason == "answer"

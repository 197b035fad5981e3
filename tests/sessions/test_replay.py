"""The replay page: one self-contained HTML file that steps through a run, with its data kept inert and small.

The page itself is driven in a real Chromium by tests/e2e/test_replay_browser.py; here its data,
its policy, its size and the ways to get it (CLI, exports, the app's buttons) are checked.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import zipfile
from importlib import resources
from typing import Any

import pytest
from support.runs import decisions_run

from agentcore import Agent, Run, RunConfig, create_provider, toolbox, transcript
from agentcore.cli.main import main
from agentcore.exports import REPLAY, export_filename, export_json, export_replay, export_run, export_zip
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage, Usage, UserMessage
from agentcore.policies import ContextPolicies
from agentcore.providers.base import WireExchange
from agentcore.providers.scripted import ScriptedProvider, get_scenario
from agentcore.replay import FORMAT, frames, replay_html
from agentcore.secrets import forget_secrets, register_secret
from agentcore.steps import REPEAT_WORDS, StepRecord
from agentcore.store.runs import Store

SECRET = "sk-replay-0123456789abcdefghij"
DATA = re.compile(r'<script type="application/json" id="run-data">(.*?)</script>', re.S)


def scripted_run(scenario: str = "weather", max_steps: int = 10) -> Run:
    """A finished run of a scripted scenario, with its wire exchanges."""
    sc = get_scenario(scenario)
    tools = toolbox.get_tools(",".join(sc.tools))
    config = RunConfig(provider="scripted", model=scenario, tools=[t.spec() for t in tools], max_steps=max_steps)
    run = Run.start(sc.prompt, config)
    Agent(create_provider("scripted", scenario, scenario=scenario), tools).run(run)
    return run


def page_data(page: str) -> dict[str, Any]:
    """The run data a replay page carries, its messages read as the page's script reads them."""
    found = DATA.findall(page)
    assert len(found) == 1
    data = json.loads(found[0])
    data["messages"] = expand(data["messages"], data["pool"])
    return data


def expand(value: Any, pool: list[Any]) -> Any:
    """Data as the page's script rebuilds it: NUL + index is a pooled value, a leading NUL NUL one NUL less."""
    if isinstance(value, str) and value.startswith("\x00"):
        if value.startswith("\x00\x00"):
            return value[1:]
        kept = pool[int(value[1:])]
        return kept if isinstance(kept, str) else expand(kept, pool)
    if isinstance(value, list):
        return [expand(v, pool) for v in value]
    if isinstance(value, dict):
        return {k: expand(v, pool) for k, v in value.items()}
    return value


def hostile_run() -> Run:
    """A run whose tool output, wire and names try to close the data element, run script or fetch."""
    evil = (
        "</script><script>window.pwned=1</script><!-- <img src=x onerror=alert(1)> "
        '<a href="javascript:alert(1)">x</a> &amp; \u2028\u2029 ]]>'
    )
    call = ToolCall(id="c1</script>", name="get</script>", arguments={"q": evil})
    messages = [
        UserMessage(content=evil),
        AssistantMessage(content=evil, tool_calls=(call,)),
        ToolMessage(tool_call_id=call.id, name=call.name, content=f"{evil} key {SECRET}"),
        AssistantMessage(content="done"),
    ]
    wire = WireExchange(
        url="http://evil.invalid/</script>",
        request_headers={"authorization": f"Bearer {SECRET}", "x-trace": f"t {SECRET}"},
        request={"messages": [evil], "api_key": "plain-credential-value"},
        status=200,
        response_headers={"x-echo": SECRET},
        response={"content": evil, "note": "\x00looks like a reference"},
    )
    steps = [
        StepRecord(index=1, usage=Usage(input_tokens=40, output_tokens=9), message_count=1, wire=wire),
        StepRecord(index=2, usage=Usage(input_tokens=70, output_tokens=2), message_count=3, wire=wire),
    ]
    return Run(title=evil, messages=messages, steps=steps, stop_reason="answer")


@pytest.fixture
def secret():
    register_secret(SECRET)
    yield SECRET
    forget_secrets()


def test_each_step_s_wire_exchange_reads_back_exactly_as_the_transcript_export_holds_it():
    run = scripted_run("research")
    data = page_data(replay_html(run))
    exported = json.loads(export_json(run))
    assert data["format"] == FORMAT and len(data["steps"]) == len(run.steps) > 3
    for step, kept in zip(data["steps"], exported["steps"], strict=True):
        assert expand(step["wire"]["request"], data["pool"]) == kept["wire"]["request"]
        assert expand(step["wire"]["response"], data["pool"]) == kept["wire"]["response"]
        assert step["wire"]["url"] == kept["wire"]["url"]


def test_each_message_is_kept_once_with_the_figures_of_each_step():
    run = scripted_run("weather")
    data = page_data(replay_html(run))
    assert [m["role"] for m in data["messages"]] == [m.role for m in run.messages]
    assert [m["content"] for m in data["messages"]] == [m.content for m in run.messages]
    calls = data["messages"][1]["calls"]
    assert [c["arguments"] for c in calls] == [c.arguments_text for c in run.messages[1].tool_calls]
    sent = [s.usage.input_tokens for s in run.steps]
    assert [s["sent"] for s in data["steps"]] == sent
    assert [s["growth"] for s in data["steps"]] == [None] + [b - a for a, b in zip(sent, sent[1:], strict=False)]
    assert [s["received"] for s in data["steps"]] == [s.usage.output_tokens for s in run.steps]


def test_the_frames_are_the_prompt_then_each_phase_then_the_end():
    run = scripted_run("weather")  # one turn of three parallel calls, then the answer
    assert [(f["phase"], f["step"], f["shown"]) for f in frames(run)] == [
        ("prompt", 0, 1),
        ("model", 1, 2),
        ("tools", 1, 5),
        ("model", 2, 6),
        ("done", 2, 6),
    ]


def test_a_failed_model_call_is_a_frame_without_a_reply():
    run = Run.start("hi")
    run.steps.append(StepRecord(index=1, message_count=1))
    run.stop_reason, run.error = "error", "the server said no"
    assert frames(run) == [
        {"phase": "prompt", "step": 0, "shown": 1},
        {"phase": "model", "step": 1, "shown": 1, "failed": True},
        {"phase": "done", "step": 1, "shown": 1},
    ]


def test_a_30_step_run_replays_in_a_fraction_of_its_transcript():
    run = scripted_run("runaway", max_steps=30)
    page = replay_html(run)
    transcript_bytes = len(export_json(run).encode("utf-8"))
    assert len(run.steps) == 30
    assert len(page.encode("utf-8")) < transcript_bytes / 3
    assert page.count('\\"step-budget\\"') == 1  # the one search result, resent at every step, kept once


def test_hostile_text_cannot_end_the_data_element_and_reads_back_as_it_was(secret):
    run = hostile_run()
    page = replay_html(run)
    raw = DATA.findall(page)[0]
    assert not re.search(r"[<>&\u2028\u2029]", raw)
    assert page.count("</script>") == 2  # the data's own and the script's own
    data = page_data(page)
    assert data["messages"][0]["content"] == run.messages[0].content
    assert data["run"]["title"] == run.title
    note = expand(data["steps"][0]["wire"]["response"], data["pool"])["note"]
    assert note == "\x00looks like a reference"


@pytest.mark.parametrize(
    "text",
    ["Wetter in Zürich, 東京, 🌧 \u2028\u2029", "and a lone surrogate \ud800, as the CLI takes undecodable bytes 🌧"],
)
def test_the_page_is_ascii_and_its_text_reads_back_whatever_the_script(secret, text):
    run = Run.start(text)
    run.append(AssistantMessage(content=f"{text} {SECRET}"))
    page = replay_html(run)
    assert page.isascii()
    data = page_data(page)
    assert data["messages"][0]["content"] == text
    assert data["messages"][1]["content"] == f"{text} [redacted]"


@pytest.mark.parametrize("lone", ["", " \ud800"])  # a lone surrogate makes the writer escape every character
def test_bidi_controls_show_as_their_escapes_in_the_page_and_reorder_nothing(lone):
    controls = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    name = f"invoice\u202efdp.exe\u202c{lone}"
    run = Run.start(f"open {name}", title=name)
    run.append(AssistantMessage(content=f"{controls} and the text \\u202e as typed"))
    data = page_data(replay_html(run))
    shown = json.dumps(data, ensure_ascii=False)
    assert not any(c in shown for c in controls)
    assert data["messages"][0]["content"] == f"open invoice\\u202efdp.exe\\u202c{lone}"
    assert data["run"]["title"] == f"invoice\\u202efdp.exe\\u202c{lone}"
    escapes = "".join(f"\\u{ord(c):04x}" for c in controls)
    assert data["messages"][1]["content"] == f"{escapes} and the text \\u202e as typed"


def test_no_secret_is_written_into_the_page(secret):
    page = replay_html(hostile_run())
    assert SECRET not in page and "plain-credential-value" not in page
    data = page_data(page)
    wire = data["steps"][0]["wire"]
    assert wire["request_headers"]["authorization"] == "[redacted]"
    assert "[redacted]" in wire["request_headers"]["x-trace"] and "[redacted]" in wire["response_headers"]["x-echo"]
    assert expand(wire["request"], data["pool"])["api_key"] == "[redacted]"
    assert "[redacted]" in data["messages"][2]["content"]


def test_the_page_may_run_only_its_own_script_and_style_and_loads_nothing():
    page = replay_html(scripted_run("weather"))
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page).group(1)
    script = re.findall(r"<script>(.*?)</script>", page, re.S)
    style = re.findall(r"<style>(.*?)</style>", page, re.S)
    assert len(script) == len(style) == 1

    def digest(text: str) -> str:
        return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()

    rules = dict(rule.strip().split(" ", 1) for rule in policy.split(";"))
    assert rules["default-src"] == "'none'" and rules["img-src"] == "data:"
    assert rules["script-src"] == f"'{digest(script[0])}'" and rules["style-src"] == f"'{digest(style[0])}'"
    assert not re.search(r"\b(src|href|action)\s*=", page.replace(DATA.findall(page)[0], ""))
    for unsafe in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function("):
        assert unsafe not in script[0]


def test_the_replay_carries_what_the_transcript_export_carries_through_the_same_redaction(secret):
    run = hostile_run()
    kept = json.loads(export_json(run))
    data = page_data(export_replay(run))
    for step, exported in zip(data["steps"], kept["steps"], strict=True):
        for side in ("request_headers", "response_headers"):
            assert step["wire"][side] == exported["wire"][side]
        for side in ("request", "response"):
            assert expand(step["wire"][side], data["pool"]) == exported["wire"][side]
    assert [m["content"] for m in data["messages"]] == [m["content"] for m in kept["messages"]]


def test_agentcore_export_format_html_prints_the_replay_page(tmp_path, capsys):
    run = scripted_run("weather")
    transcript.save(run, tmp_path / "t.json")
    assert main(["export", str(tmp_path / "t.json"), "--format", "html"]) == 0
    page = capsys.readouterr().out
    assert page.startswith("<!DOCTYPE html>") and page_data(page)["run"]["id"] == run.id


def test_runs_export_format_html_writes_a_page_or_a_zip_of_pages(tmp_path, capsys):
    db = tmp_path / "runs.db"
    store = Store(db)
    one, two = scripted_run("weather"), scripted_run("recovery")
    store.save_run(one)
    store.save_run(two)
    assert main(["runs", "export", one.id, "--format", "html", "--db", str(db)]) == 0
    assert page_data(capsys.readouterr().out)["run"]["id"] == one.id
    out = tmp_path / "both.zip"
    assert main(["runs", "export", one.id, two.id, "--format", "html", "--out", str(out), "--db", str(db)]) == 0
    with zipfile.ZipFile(out) as archive:
        names = sorted(archive.namelist())
        assert names == sorted([f"{one.id}.json", f"{one.id}.html", f"{two.id}.json", f"{two.id}.html"])
        assert page_data(archive.read(f"{two.id}.html").decode())["run"]["id"] == two.id


def test_the_replay_is_an_export_like_the_others():
    run = scripted_run("weather")
    assert export_filename(run, REPLAY) == f"agentcore-run-{run.id}.html"
    assert export_run(run, REPLAY) == replay_html(run)
    assert export_run(run, "json") == export_json(run)
    with zipfile.ZipFile(io.BytesIO(export_zip([run], ("json", REPLAY)))) as archive:
        assert archive.read(f"{run.id}.html").decode() == replay_html(run)


def test_the_playground_and_the_runs_page_offer_the_replay(tmp_path, monkeypatch, open_app, downloads):
    from ui.state import Session

    run = scripted_run("weather")
    monkeypatch.setenv("AGENTCORE_DB", str(tmp_path / "runs.db"))
    Store(tmp_path / "runs.db").save_run(run)
    session = Session()
    session.add_run(run)
    at = open_app(session=session)
    button = at.download_button(key="export_replay")
    assert page_data(downloads.data(button).decode())["run"]["id"] == run.id
    at.switch_page("views/runs.py").run()
    at.selectbox(key="runs_selected").set_value(run.id).run()
    assert not at.exception
    assert page_data(downloads.data(at.download_button(key="runs_dl_html")).decode())["run"]["id"] == run.id


def test_a_whole_body_that_starts_with_nul_reads_back_as_it_was():
    from agentcore.replay import replay_data

    wire = WireExchange(url="http://x.invalid/", request="\x000", status=200, response="\x00\x00plain")
    run = Run(
        messages=[UserMessage(content="hi"), AssistantMessage(content="done")],
        steps=[StepRecord(index=1, message_count=1, wire=wire)],
        stop_reason="answer",
    )
    data = replay_data(run)
    kept = data["steps"][0]["wire"]
    assert expand(kept["request"], data["pool"]) == "\x000"
    assert expand(kept["response"], data["pool"]) == "\x00\x00plain"


def test_the_replay_shows_each_decision_with_the_apps_badge_words_and_what_the_model_asked():
    run = decisions_run()
    data = page_data(export_run(run, REPLAY))
    runs = {t["tool_call_id"]: t for t in data["steps"][0]["tool_runs"]}
    assert {k: t["badge"] for k, t in runs.items()} == {
        "a": "edited by a person",
        "b": "edited by a person",
        "c": "denied by a person",
        "d": "result typed by a person",
    }
    assert runs["b"]["original_arguments"] == '{"expression": "1+1"}'
    assert runs["a"]["original_arguments"] is None and runs["a"]["original_content"] == "0+0 = 0"
    assert runs["c"]["original_arguments"] is None and runs["c"]["original_content"] is None
    assert [s["model"] for s in data["steps"]] == [run.answered_by(s).label for s in run.steps]


def test_the_replay_shows_the_loop_guards_repeats_and_its_withheld_tools():
    tools = toolbox.get_tools("search_notes")
    config = RunConfig(provider="scripted", model="runaway", scenario="runaway", tools=[t.spec() for t in tools])
    run = Run.start("Find out what a step budget is.", config.model_copy(update={"loop_guard": "guard"}))
    Agent(ScriptedProvider(scenario="runaway"), tools).run(run)
    steps = page_data(replay_html(run))["steps"]
    assert [[t["badge"] for t in s["tool_runs"]] for s in steps][:2] == [[None], [REPEAT_WORDS]]
    assert [s["tools_withheld"] for s in steps][-1] is True


def test_the_replay_shows_what_the_context_policies_did_to_each_step():
    provider = ScriptedProvider(scenario="research")
    config = RunConfig(scenario="research", policies=ContextPolicies(keep_tool_results=1))
    run = Run.start(provider.scenario.prompt, config)
    Agent(provider, toolbox.get_tools(list(provider.scenario.tools))).run(run)
    steps = page_data(replay_html(run))["steps"]
    cleared = [s["policies"]["marks"].get("cleared", 0) for s in steps]
    assert cleared == [sum(c.mark == "cleared" for c in s.sent.changes.values()) for s in run.steps]
    assert max(cleared) > 0 and steps[0]["policies"]["names"] == run.steps[0].sent.policies


def test_the_page_script_draws_the_badges_the_policies_and_the_model_of_each_step():
    script = (resources.files("agentcore") / "replay_page" / "replay.js").read_text("utf-8")
    for drawn in ("run.badge", "The model asked ", "the tool returned ", "Answered by ", "Context policies "):
        assert drawn in script

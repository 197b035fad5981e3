"""A pinned test keeps the hooks its run was made with: pinning writes them, every configuration runs with them."""

from __future__ import annotations

import json

import pytest

from agentcore import toolbox
from agentcore.cli.main import main
from agentcore.errors import TranscriptError, UsageError
from agentcore.loop import Agent
from agentcore.providers.scripted import ScriptedProvider
from agentcore.run import Run, RunConfig
from agentcore.testing import pinned
from agentcore.testing.runner import REPLAY, parse_config, run_cell

PROMPT = "What is the weather in Paris and Rome? Send it to bob@example.com."


def redacted_run() -> Run:
    """A scripted weather run made with the redactor, as `agentcore run --hook redact` makes one."""
    config = RunConfig(provider="scripted", model="weather", hooks=["redact"])
    run = Run.start(PROMPT, config)
    Agent(ScriptedProvider("weather"), toolbox.get_tools("get_weather")).run(run)
    return run


def test_pinning_a_run_made_with_the_redactor_writes_its_hooks_in_json_and_yaml():
    test = pinned.propose(redacted_run(), "weather redacted")
    assert json.loads(pinned.dumps(test))["hooks"] == ["redact"]
    assert pinned.loads(pinned.dumps(test)).hooks == ["redact"]
    pytest.importorskip("yaml", reason="YAML test files need PyYAML")
    text = pinned.dumps(test, yaml_format=True)
    assert "\nhooks:\n- redact\n" in text
    assert pinned.loads(text, yaml_format=True).hooks == ["redact"]


def test_a_test_without_hooks_writes_no_hooks_key():
    run = Run.start(PROMPT, RunConfig(provider="scripted", model="weather"))
    Agent(ScriptedProvider("weather"), toolbox.get_tools("get_weather")).run(run)
    assert "hooks" not in json.loads(pinned.dumps(pinned.propose(run)))


@pytest.mark.parametrize("config", [REPLAY, "scripted:weather"])
def test_a_pinned_test_with_the_redactor_runs_with_it_on_every_configuration(config):
    test = pinned.loads(pinned.dumps(pinned.propose(redacted_run(), "weather redacted")))
    cell = run_cell(test, parse_config(config))
    assert cell.passed, [str(f) for f in cell.failures]
    assert cell.run.config.hooks == ["redact"]
    first = cell.run.steps[0]
    assert [(e.hook, e.point) for e in first.hook_effects] == [("redact", "before_model")]
    sent = first.wire.request["messages"][-1]["content"]
    assert "[email]" in sent and "bob@example.com" not in sent  # the model read the mask, as when the run was made
    assert cell.run.messages[0].content == PROMPT  # the run keeps the original


@pytest.mark.parametrize(
    ("text", "yaml_format"),
    [
        (json.dumps({"format": "agentcore.test", "version": 1, "prompt": "q", "hooks": ["redact", "nosuch"]}), False),
        ("format: agentcore.test\nversion: 1\nprompt: q\nhooks: [nosuch]\n", True),
    ],
)
def test_an_unknown_hook_in_a_test_file_is_refused_in_one_line(text, yaml_format):
    if yaml_format:
        pytest.importorskip("yaml", reason="YAML test files need PyYAML")
    with pytest.raises(TranscriptError) as refused:
        pinned.loads(text, yaml_format=yaml_format)
    message = str(refused.value)
    assert "hooks" in message and "unknown hook 'nosuch'" in message and "redact" in message
    assert "\n" not in message


def test_the_cli_refuses_a_test_file_with_an_unknown_hook_in_one_line(tmp_path, capsys):
    body = {"format": "agentcore.test", "version": 1, "prompt": "q", "hooks": ["nosuch"]}
    (tmp_path / "t.json").write_text(json.dumps(body))
    assert main(["test", str(tmp_path / "t.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentcore: error: ") and "unknown hook 'nosuch'" in err
    assert len(err.strip().splitlines()) == 1


def test_a_run_whose_hook_is_not_registered_cannot_be_pinned():
    run = redacted_run()
    run.config = run.config.model_copy(update={"hooks": ["gone"]})
    with pytest.raises(UsageError, match="hook 'gone' is not registered"):
        pinned.propose(run)

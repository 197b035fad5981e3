"""YAML test files: parsed once by libyaml, held to JSON's limits, a lower size cap, and one-line refusals."""

from __future__ import annotations

import pytest

yaml = pytest.importorskip("yaml")

from agentcore.cli.main import main  # noqa: E402 - after the skip: PyYAML is optional
from agentcore.errors import TranscriptError  # noqa: E402
from agentcore.loop import Agent  # noqa: E402
from agentcore.providers.scripted import ScriptedProvider  # noqa: E402
from agentcore.run import Run, RunConfig  # noqa: E402
from agentcore.testing import pinned, yaml_file  # noqa: E402
from agentcore.transcript import MAX_FILE_BYTES  # noqa: E402

HEAD = "format: agentcore.test\nversion: 1\nprompt: q\n"


def weather_test() -> pinned.PinnedTest:
    from agentcore import toolbox

    run = Run.start("What is the weather in Paris and Rome?", RunConfig(provider="scripted", model="weather"))
    Agent(ScriptedProvider("weather"), toolbox.get_tools("get_weather")).run(run)
    return pinned.propose(run, "weather")


def test_a_yaml_test_file_is_parsed_once_by_libyaml(monkeypatch):
    assert yaml_file.C_LIBRARY and issubclass(yaml_file.EventParser, yaml.cyaml.CParser)
    made = []

    class Counted(yaml_file.EventParser):
        def __init__(self, stream):
            made.append(stream)
            super().__init__(stream)

    monkeypatch.setattr(yaml_file, "EventParser", Counted)
    monkeypatch.setattr(yaml_file, "PythonEventParser", None)  # PyYAML's own, slow parser is not used
    test = weather_test()
    text = pinned.dumps(test, yaml_format=True)
    again = pinned.loads(text, yaml_format=True)
    assert len(made) == 1
    assert again.expect == test.expect and again.pinned.messages == test.pinned.messages


def test_yaml_reads_the_same_data_as_pyyaml_with_dates_kept_as_written():
    text = (
        HEAD + "name: >-\n  folded\n  text\n"
        "tools: [get_weather]\nmax_steps: 0x0A\ntemperature: 0.5\nsystem_prompt: |\n  line one\n  line two\n"
        "expect:\n  stop_reason: [answer]\n  answer: {contains: [2024-02-30, 2024-02-03T10:00:00Z]}\n"
    )
    test = pinned.loads(text, yaml_format=True)
    assert (test.name, test.tools, test.max_steps, test.temperature) == ("folded text", ["get_weather"], 10, 0.5)
    assert test.system_prompt == "line one\nline two\n"
    assert test.expect.answer.contains == ["2024-02-30", "2024-02-03T10:00:00Z"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (HEAD.replace("version: 1", "version: " + "1" * 5000), "Exceeds the limit (4300 digits)"),
        (HEAD + "max_steps: 0x" + "f" * 5000 + "\n", "Exceeds the limit (4300 digits)"),
        (HEAD + "name: 2024-02-30\nexpect: {max_steps: " + "9" * 4301 + "}\n", "line 5"),
        (HEAD + "? !!binary aGVsbG8=\n: 1\n", "not test data: keys must be str"),
        (HEAD + "name: &n x\nsystem_prompt: *n\n", "YAML aliases are not read"),
        (HEAD + "expect: " + "[" * 101 + "]" * 101 + "\n", "nested more than 100 levels deep"),
        (HEAD + "expect: " + "[" * 900 + "]" * 900 + "\n", "nested more than 100 levels deep"),
        (HEAD + "expect:\n" + "".join("  " * k + "- \n" for k in range(1, 102)), "nested more than 100 levels deep"),
        (HEAD + "name: [unclosed\n", "not YAML: while parsing a flow sequence"),
        (b"format: agentcore.test\nname: \xff\n", "not YAML: "),
    ],
)
def test_a_bad_yaml_test_file_is_a_one_line_error(text, says, tmp_path, capsys):
    with pytest.raises(TranscriptError) as caught:
        pinned.loads(text, yaml_format=True)
    assert says in str(caught.value) and "\n" not in str(caught.value)
    path = tmp_path / "bad.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert main(["test", str(path), "--config", "replay"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "Traceback" not in err


def test_a_yaml_file_has_a_lower_size_cap_than_json_and_says_so(monkeypatch):
    assert yaml_file.MAX_YAML_BYTES <= MAX_FILE_BYTES // 4
    monkeypatch.setattr(yaml_file, "MAX_YAML_BYTES", 2**20)
    fits = HEAD + "name: " + "x" * (2**20 - len(HEAD) - 7) + "\n"
    assert len(fits) == 2**20 and pinned.loads(fits, yaml_format=True).name.startswith("xxx")
    with pytest.raises(TranscriptError, match=r"larger than 1 MB, the most a YAML test file may be \(a JSON one"):
        pinned.loads(fits + " ", yaml_format=True)
    assert pinned.loads(pinned.dumps(pinned.loads(fits, yaml_format=True)))  # the same test as JSON is read


def test_a_test_too_large_for_yaml_is_not_written_as_yaml(monkeypatch):
    monkeypatch.setattr(yaml_file, "MAX_YAML_BYTES", 4096)
    test = weather_test().model_copy(update={"system_prompt": "x" * 5000})
    with pytest.raises(TranscriptError, match="over 0 MB as YAML.*write it as JSON"):
        pinned.dumps(test, yaml_format=True)
    assert pinned.loads(pinned.dumps(test)).system_prompt == "x" * 5000


def test_a_lone_surrogate_written_as_yaml_reads_back():
    # undecodable bytes of a prompt typed on the command line: libyaml can neither write nor read them
    test = weather_test().model_copy(update={"prompt": "weather in Z\udcfcrich"})
    text = pinned.dumps(test, yaml_format=True)
    assert "\\uDCFC" in text
    assert pinned.loads(text, yaml_format=True).prompt == "weather in Z\udcfcrich"

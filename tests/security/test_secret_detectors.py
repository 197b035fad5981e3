"""Credentials a coding agent's session carries, planted in each session format and looked for in the bytes of
every export; the masks by kind, the import note, and the key_in_reply scanner finding what an import masks."""

from __future__ import annotations

import html
import io
import json
import zipfile

import pytest

from agentcore.errors import UsageError
from agentcore.exports import FORMATS, export_run, export_test, export_zip
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage
from agentcore.run import Run
from agentcore.secrets.detectors import DETECTORS_VERSION, KINDS, Tally, find_secrets, mask, mask_text, secret_kinds
from agentcore.sessions import read_import
from agentcore.steps import StepRecord
from agentcore.store.scanners import BUILTINS, scan_run
from agentcore.telemetry import OTLP_JSON
from agentcore.testing.pinned import propose

PEM_BODY = "MIIEowIBAAKCAQEAx4fQ2mJkD8sVtL3nRpZ6yWc1Hb9Xe0KfU7oGqTvNa5IrSdYh"
SHAPES = {  # each credential shape, as a session holds it
    "AWS access key id": "AKIAQ3EGH7XMPLQWERTY",
    "AWS secret access key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKY",
    "GitHub token": "ghp_R2d2C3poX1y2Z3a4B5c6D7e8F9g0H1i2J3k4",
    "Slack token": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "Google API key": "AIzaSyD4f5g6h7j8k9l0ZxCvBnMqWeRtYuIoP12",
    "JSON Web Token": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
    ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "PEM private key": PEM_BODY,
    "Hugging Face token": "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",
    "Stripe live key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "password in a postgresql:// URL": "Tr0ub4dor3xyz",
    "token argument": "tok-9f8e7d6c5b4a39281706",
    "password argument": "correct-horse-battery-staple",
    "sk- key": "sk-proj-AbCdEfGhIjKlMnOpQrSt0123",
    "sk-ant- key": "sk-ant-api03-ZyXwVuTsRqPoNmLk9876543210",
    "Bearer token": "9f8e7d6c5b4a3210fedcba98",
    "environment line of an sk- key": "sk-envAbCdEf0123456789ghijkl",
}
USER = f"My key is {SHAPES['sk- key']} and the Slack bot's is {SHAPES['Slack token']}; deploy it."
REPLY = (
    f"I will use {SHAPES['GitHub token']} and {SHAPES['sk-ant- key']} with the Google key {SHAPES['Google API key']}."
)
ARGUMENTS = {
    "command": f"curl -H 'Authorization: Bearer {SHAPES['Bearer token']}' https://api.example.com",
    "token": SHAPES["token argument"],
    "password": SHAPES["password argument"],
}
RESULT = "\n".join(
    [
        "[default]",
        f"aws_access_key_id = {SHAPES['AWS access key id']}",
        f"aws_secret_access_key = {SHAPES['AWS secret access key']}",
        f"OPENAI_API_KEY={SHAPES['environment line of an sk- key']}",
        f"DATABASE_URL=postgresql://app:{SHAPES['password in a postgresql:// URL']}@db.internal:5432/prod",
        f"HF_HUB={SHAPES['Hugging Face token']} STRIPE={SHAPES['Stripe live key']}",
        f"session cookie {SHAPES['JSON Web Token']}",
        "-----BEGIN RSA PRIVATE KEY-----",
        PEM_BODY,
        "-----END RSA PRIVATE KEY-----",
    ]
)


def claude_code() -> bytes:
    def line(kind: str, uuid: str, message: dict) -> dict:
        return {"type": kind, "uuid": uuid, "sessionId": "s", "message": message}

    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": ARGUMENTS}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": RESULT}
    lines = [
        line("user", "u1", {"role": "user", "content": USER}),
        line(
            "assistant", "a1", {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": REPLY}, tool_use]}
        ),
        line("user", "u2", {"role": "user", "content": [result]}),
        line("assistant", "a2", {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "Done."}]}),
    ]
    return "\n".join(map(json.dumps, lines)).encode()


def codex() -> bytes:
    def line(kind: str, payload: dict) -> dict:
        return {"timestamp": "2026-01-01T00:00:00Z", "type": kind, "payload": payload}

    def said(text: str) -> dict:
        return line(
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]},
        )

    call = {"type": "function_call", "name": "shell", "arguments": json.dumps(ARGUMENTS), "call_id": "c1"}
    lines = [
        line("session_meta", {"id": "s", "cli_version": "0.1"}),
        line("event_msg", {"type": "user_message", "message": USER}),
        said(REPLY),
        line("response_item", call),
        line("response_item", {"type": "function_call_output", "call_id": "c1", "output": RESULT}),
        said("Done."),
    ]
    return "\n".join(map(json.dumps, lines)).encode()


def atif() -> bytes:
    call = {"tool_call_id": "c1", "function_name": "shell", "arguments": ARGUMENTS}
    steps = [
        {"step_id": 1, "source": "user", "message": USER},
        {
            "step_id": 2,
            "source": "agent",
            "message": REPLY,
            "tool_calls": [call],
            "observation": {"results": [{"source_call_id": "c1", "content": RESULT}]},
        },
        {"step_id": 3, "source": "agent", "message": "Done."},
    ]
    data = {
        "schema_version": "ATIF-v1.6",
        "session_id": "s",
        "agent": {"name": "a", "model_name": "gpt-4o"},
        "steps": steps,
    }
    return json.dumps(data).encode()


def live_run() -> Run:
    """The same conversation as a run made here, not imported: only the exports mask it."""
    run = Run.start(USER)
    run.steps.append(StepRecord(index=1, message_count=len(run.messages)))
    run.append(AssistantMessage(content=REPLY, tool_calls=(ToolCall(id="c1", name="shell", arguments=ARGUMENTS),)))
    run.append(ToolMessage(tool_call_id="c1", name="shell", content=RESULT))
    run.steps.append(StepRecord(index=2, message_count=len(run.messages)))
    run.append(AssistantMessage(content="Done."))
    return run


def exports(run: Run) -> dict[str, bytes]:
    """Every export kind of the run, as the bytes a person would download."""
    out: dict[str, bytes] = {}
    for fmt in (*FORMATS, "html", OTLP_JSON, "atif"):
        try:
            out[fmt] = export_run(run, fmt).encode()
        except UsageError:  # a wire format whose model refuses the run's settings writes no body
            continue
    out["pinned test"] = export_test(propose(run, "planted")).encode()
    out["pinned test (YAML)"] = export_test(propose(run, "planted"), yaml_format=True).encode()
    with zipfile.ZipFile(io.BytesIO(export_zip([run], (*FORMATS, "html", OTLP_JSON, "atif")))) as archive:
        for member in archive.namelist():
            out[f"zip: {member}"] = archive.read(member)
    return out


def forms(value: str) -> set[str]:
    """The ways a writer may spell a value: as is, JSON-escaped, HTML-escaped."""
    return {value, json.dumps(value)[1:-1], html.escape(value), value.replace("/", "\\/")}


@pytest.mark.parametrize(
    ("name", "raw"), [("session.jsonl", claude_code()), ("rollout.jsonl", codex()), ("trajectory.json", atif())]
)
def test_no_export_of_an_imported_session_holds_any_planted_credential(name, raw):
    assert len(SHAPES) >= 16
    got = read_import(raw, name)
    run = got.runs[0]
    assert {c.name for m in run.messages for c in getattr(m, "tool_calls", ())} == {
        "Bash" if "session" in name else "shell"
    }
    assert_no_credential_in_any_export(run, name)
    assert "secrets masked (" in got.notes and "GitHub Token" in got.notes


def test_no_export_of_a_run_made_here_holds_any_planted_credential():
    run = live_run()
    assert SHAPES["AWS access key id"] in run.messages[-2].content
    assert_no_credential_in_any_export(run, "a run made here")


def assert_no_credential_in_any_export(run: Run, name: str) -> None:
    files = exports(run)
    assert {"json", "html", OTLP_JSON, "atif", "pinned test"} <= set(files) and any(
        k.startswith("zip: ") for k in files
    )
    for kind, data in files.items():
        text = data.decode("utf-8", "surrogatepass")
        for shape, value in SHAPES.items():
            assert not any(f in text for f in forms(value)), f"{shape} is in the {kind} export of {name}"
    assert (
        "[redacted: AWS Access Key]" in files["json"].decode() and "[redacted: Private Key]" in files["json"].decode()
    )


def test_the_import_note_counts_each_kind_it_masked():
    got = read_import(atif(), "trajectory.json")
    assert got.masked["Secret Keyword"] >= 3  # the token and password arguments, the INI file's secret
    for kind in ("AWS Access Key", "GitHub Token", "Slack Token", "Google API Key", "JSON Web Token", "Private Key"):
        assert got.masked[kind] == 1, kind
    assert f"{sum(got.masked.values())} secrets masked" in got.notes


def test_ordinary_text_of_a_session_is_left_as_it_is():
    text = (
        "commit 3f786850e387550fdab836ed7e6dc881de23001b, id 123e4567-e89b-12d3-a456-426614174000, "
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08, Asia/Tokyo, "
        "the password field is required, see https://example.com/docs?page=2, api_key = None"
    )
    assert mask_text(text) == text
    assert mask({"password": "", "n": 3, "token_count": 5}) == {"password": "", "n": 3, "token_count": 5}


def test_a_masked_value_shows_its_kind_never_its_text_and_masking_again_changes_nothing():
    tally = Tally()
    once = mask_text(RESULT, tally)
    assert "[redacted: Basic Auth Credentials]" in once and "[redacted: Hugging Face Token]" in once
    assert tally.counts["Private Key"] == 1 and tally.counts["sk- key"] == 1
    assert mask_text(once) == once


def test_a_value_found_once_is_masked_wherever_it_recurs_in_the_text():
    key = SHAPES["Stripe live key"]
    assert (
        mask_text(f"{key} and again {key}") == "[redacted: Stripe Access Key] and again [redacted: Stripe Access Key]"
    )


def replied(text: str) -> Run:
    run = Run.start("go")
    run.steps.append(StepRecord(index=1, message_count=len(run.messages)))
    run.messages.append(AssistantMessage(content=text))
    return run


def test_the_key_in_reply_scanner_finds_what_an_import_masks():
    for shape in ("GitHub token", "AWS access key id", "JSON Web Token", "Slack token", "Google API key"):
        run = replied(f"here: {SHAPES[shape]}")
        [annotation] = scan_run(run, [BUILTINS["key_in_reply"]])["scanner:key_in_reply"]
        assert SHAPES[shape] not in annotation.note
        assert secret_kinds(SHAPES[shape])[0] in annotation.note, shape
    words = replied("Basic arithmetic, 17 x 23 = 391.")
    assert scan_run(words, [BUILTINS["key_in_reply"]])["scanner:key_in_reply"] == []


def test_a_tool_arguments_credential_field_is_masked_whole_and_the_call_keeps_its_other_arguments():
    call = ToolCall(id="c", name="login", arguments={"user": "ada", "password": "x9", "api_key": "abc"})
    masked = mask(call)
    assert masked.arguments == {
        "user": "ada",
        "password": "[redacted: Secret Keyword]",
        "api_key": "[redacted: Secret Keyword]",
    }
    assert call.arguments["password"] == "x9"  # copied, never changed in place


@pytest.mark.parametrize("name", ["token", "authorization", "cookie", "password", "secret", "api_key"])
def test_json_text_naming_a_credential_field_is_masked_whatever_the_name_of_the_field(name):
    # arguments a model wrote as text, as a session or a wire body keeps them: each name of the JSON-field rule masks
    # its value in a text and in the text a structure holds, and is found by the key-in-reply scanner's reading
    value = "a8f5f167f44f4964e6c998dee827110c"
    text = f'{{"{name}": "{value}", "city": "Paris"}}'
    assert mask_text(text) == f'{{"{name}": "[redacted: Secret Keyword]", "city": "Paris"}}'
    assert value not in json.dumps(mask({"arguments": text}))
    assert find_secrets(text) == [("Secret Keyword", value)]
    assert secret_kinds(f'{{"{name[:-1]}x": "{value}"}}') == []  # a field of another name is left as it is


@pytest.mark.parametrize(
    "hostile",
    ["eyJ" * 100_000, ("passwordsecret" * 10 + "='x'\n") * 5_000, "xsk-" * 100_000, "://a:b" * 100_000],
)
def test_text_made_to_make_a_pattern_backtrack_is_read_without_hanging(hostile):
    # no time is asserted (bench/hostile_inputs.py measures it): a pattern that backtracked over the whole
    # text would make this test run for hours, and pytest's timeout would end it
    find_secrets(hostile)


def test_the_kinds_and_the_library_version_are_those_the_security_guide_lists():
    guide = (pytest.importorskip("pathlib").Path(__file__).parents[2] / "docs" / "security.md").read_text()
    assert f"detect-secrets {DETECTORS_VERSION}" in guide
    for kind in KINDS:
        assert f"`{kind}`" in guide, kind


def test_an_assignment_is_found_in_text_whose_lower_case_is_longer():
    # "İ" lowers to two characters: the names are then searched in the text itself, case ignored
    for text in ('DB_PASSWORD = "hunt3rHunter"', 'İstanbul DB_PASSWORD = "hunt3rHunter"'):
        assert mask_text(text).endswith('DB_PASSWORD = "[redacted: Secret Keyword]"'), text


def test_a_value_of_four_characters_is_masked_and_one_of_three_is_not():
    assert find_secrets('{"token": "abcd"}') == [("Secret Keyword", "abcd")]
    assert find_secrets('{"token": "abc"}') == []


def test_a_credential_field_that_is_blank_or_already_masked_is_left_as_it_is():
    for value in ("   ", "[redacted: GitHub Token]"):
        assert mask({"token": value}) == {"token": value}
    assert mask({"token": " x "}) == {"token": "[redacted: Secret Keyword]"}


def test_a_value_is_masked_200_levels_deep_and_left_past_them():
    def nested(depth: int) -> list:
        value: list | str = SHAPES["GitHub token"]
        for _ in range(depth):
            value = [value]
        return value

    def innermost(value: list | str) -> str:
        while isinstance(value, list):
            [value] = value
        return value

    assert innermost(mask(nested(200))) == "[redacted: GitHub Token]"
    assert innermost(mask(nested(201))) == SHAPES["GitHub token"]


def test_what_holds_no_credential_comes_back_as_the_same_object_and_what_does_is_a_copy():
    clean = {"user": "ada", "steps": ["one", ("two",)]}
    assert mask(clean) is clean
    held = {"user": "ada", "notes": [f"key {SHAPES['GitHub token']}"]}
    masked = mask(held)
    assert masked is not held and masked["notes"] == ["key [redacted: GitHub Token]"]
    assert held["notes"] == [f"key {SHAPES['GitHub token']}"]


def test_the_keyword_plugin_reads_200_characters_from_a_credentials_name_either_way():
    # `x; ` keeps the line from reading as a dotenv line, which is read whole
    def assigned(value: str) -> str:
        return f'x; password = "{value}"'

    def compared(value: str) -> str:
        return f'"{value}" == password'

    for written, padding in ((assigned, len('password = ""')), (compared, len('"" == password'))):
        fits = "Q" * (200 - padding - 2) + "w9"
        assert find_secrets(written(fits)) == [("Secret Keyword", fits)]
        assert find_secrets(written("Q" + fits)) == []


def test_the_import_note_counts_kinds_most_frequent_first_then_by_name_and_says_secret_for_one():
    from collections import Counter

    from agentcore.secrets.detectors import masked_note

    assert masked_note(Counter()) is None
    assert masked_note(Counter({"Slack Token": 1})) == "1 secret masked (1 Slack Token)"
    counts = Counter({"Slack Token": 1, "AWS Access Key": 1, "GitHub Token": 2})
    assert masked_note(counts) == "4 secrets masked (2 GitHub Token, 1 AWS Access Key, 1 Slack Token)"


def test_a_tally_counts_each_value_once_under_its_first_kind():
    tally = Tally()
    assert tally.masked("GitHub Token", "ghp_a") == "[redacted: GitHub Token]"
    tally.masked("Secret Keyword", "ghp_a")
    tally.masked("GitHub Token", "ghp_b")
    assert tally.counts == {"GitHub Token": 2}


def test_a_dicts_value_and_key_are_masked_200_levels_deep_and_left_past_them():
    key = SHAPES["GitHub token"]

    def nested(depth: int, as_key: bool) -> dict:
        value = {key: 1} if as_key else {"v": key}
        for _ in range(depth - 1):
            value = {"v": value}
        return value

    def innermost(value: dict) -> dict:
        while isinstance(value.get("v"), dict):
            value = value["v"]
        return value

    for as_key in (False, True):
        masked = {"[redacted: GitHub Token]": 1} if as_key else {"v": "[redacted: GitHub Token]"}
        assert innermost(mask(nested(200, as_key))) == masked
        assert innermost(mask(nested(201, as_key))) == nested(1, as_key)


def test_an_assignment_after_a_long_line_whose_lower_case_is_longer_is_found_where_it_is():
    # 250 "İ" lower to 500 characters: a search of the lower-cased text would read 250 characters too early
    text = "İ" * 250 + '\nx; DB_PASSWORD = "hunt3rHunter"'
    assert mask_text(text).endswith('\nx; DB_PASSWORD = "[redacted: Secret Keyword]"')


# a credential of each plugin whose every marker is three characters long, alone in its text: no longer marker and
# no capital M, N or O (the shapes of the two-character markers) is there to let the text through the first look
ALONE = {
    "Hugging Face Token": "hf_abcdefghijklabcdefghijklabcdefghij",
    "Mailchimp Access Key": "0123456789abcdef0123456789abcdef-us12",
    "Slack Token": "xoxb-123456789012-1234567890123-abcdefghijklabcdefghijkl",
    "SendGrid API Key": "SG.abcdefghijklabcdefghij.abcdefghijklabcdefghijklabcdefghijklabcdefg",
}


@pytest.mark.parametrize("kind", sorted(ALONE))
def test_a_credential_found_by_a_three_character_marker_alone_in_its_text_is_masked(kind):
    assert find_secrets(f"see {ALONE[kind]}") == [(kind, ALONE[kind])]
    assert mask_text(f"see {ALONE[kind]}") == f"see [redacted: {kind}]"


def test_a_credential_field_of_json_text_is_found_with_spaces_around_its_colon():
    # the field rule's pattern allows them; "token" is not one of the keyword plugin's names, so only it finds these
    for text in ('{"token" : "abcd1234"}', '{"token":"abcd1234"}', '{"token"  :\t"abcd1234"}'):
        assert find_secrets(text) == [("Secret Keyword", "abcd1234")], text
    assert find_secrets('{"tokens" : "abcd1234"}') == []  # a name that only holds "token" is not a credential's


@pytest.mark.parametrize("value", ["$DB_PASS", "${DB_PASS}", "{{ db_pass }}", "********", "abcdefghij", "0123456789"])
def test_a_keyword_value_that_is_a_placeholder_a_variable_a_mask_or_a_run_of_characters_is_left(value):
    # the keyword plugin's pattern takes no value that starts with "$", "{", "<" or "*"; a run of letters or digits
    # in order it takes, and the sequence filter leaves it
    assert find_secrets(f'password = "{value}"') == []
    assert find_secrets('password = "hunt3rHunter2"') == [("Secret Keyword", "hunt3rHunter2")]


def test_secret_kinds_names_a_shaped_key_by_its_shape_and_a_registered_one_as_registered():
    from agentcore.secrets import REGISTERED_KIND, forget_secrets, register_secret

    assert secret_kinds(f"key {SHAPES['sk- key']} here") == ["sk- key"]
    assert secret_kinds(f"Authorization: Bearer {SHAPES['Bearer token']}") == ["Bearer token"]
    try:
        register_secret("zq81-kept-in-memory-0042")
        assert secret_kinds("the value zq81-kept-in-memory-0042 again") == [REGISTERED_KIND]
    finally:
        forget_secrets()


def test_a_model_is_masked_200_levels_deep_and_left_past_them_and_what_mask_does_not_know_comes_back_as_it_is():
    from pydantic import BaseModel

    class Box(BaseModel):
        inner: Box | str

    def nested(depth: int) -> Box:
        value: Box | str = SHAPES["GitHub token"]
        for _ in range(depth):
            value = Box(inner=value)
        return value

    def innermost(value: Box) -> str:
        while isinstance(value, Box):
            value = value.inner
        return value

    assert innermost(mask(nested(200))) == "[redacted: GitHub Token]"
    assert innermost(mask(nested(201))) == SHAPES["GitHub token"]

    class Copyable:  # a model_copy, but no model fields: not a model
        def model_copy(self, **_: object) -> Copyable:
            return self

    for odd in (b"ghp_R2d2C3poX1y2Z3a4B5c6D7e8F9g0H1i2J3k4", {1, 2}, Copyable(), True):
        assert mask(odd) is odd

"""The runs server's shared rules, called here without a server: how a failure is said (one line of at most 500
characters, its kind named unless it is agentcore's own), the server's log, a tool's description, and whose call
it is when a header names the user."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from support.runs import made_run, priced_run, scripted_run
from support.stand_in import Reply, StandIn

from agentcore import toolbox
from agentcore.annotations import Annotation
from agentcore.compare import MAX_COLUMNS
from agentcore.errors import ProviderError, UsageError
from agentcore.messages import AssistantMessage, ToolCall, ToolMessage
from agentcore.run import Run, RunConfig
from agentcore.runs_server import context, groups, limits, tools
from agentcore.runs_server.context import Shared, _one_line, said, tool_errors
from agentcore.runs_server.data import MAX_TEXT
from agentcore.runs_server.groups import add_library, add_reading, add_tests
from agentcore.runs_server.http import StorePool
from agentcore.runs_server.limits import NO_BODY, ClientRules, Deadline, Limits, _QuietProvider, client_gone
from agentcore.runs_server.tools import MAX_BLAME_IDS, MAX_EDIT_CHARS, SCAN_CHUNK
from agentcore.store.runs import Store


@pytest.fixture
def store(tmp_path):
    return Store(str(tmp_path / "runs.db"))


@pytest.fixture
def weather(store, tmp_path, monkeypatch):
    """A finished scripted weather run, stored; the server's working folder is the test's."""
    monkeypatch.chdir(tmp_path)
    run = scripted_run("weather")
    store.save_run(run)
    return run


class Ctx:
    def __init__(self, headers: dict[str, str] | None) -> None:
        self.headers = headers


def test_a_failure_is_one_line_of_at_most_500_characters():
    assert _one_line(ValueError("a\n  b\tc")) == "a b c"
    assert _one_line(ValueError("")) == "ValueError"
    assert _one_line(ValueError("x" * 500)) == "x" * 500
    assert _one_line(ValueError("x" * 501)) == "x" * 499 + "…"


def test_agentcores_own_failure_is_said_as_it_is_a_bug_with_its_kind_and_a_bad_value_as_a_reader_says_it():
    from pydantic import BaseModel, ValidationError

    class Model(BaseModel):
        n: int

    assert said(UsageError("no such run")) == "no such run"
    assert said(KeyError("k")) == "KeyError: 'k'"
    with pytest.raises(ValidationError) as caught:
        Model.model_validate({"n": "many"})
    words = said(caught.value)
    assert "n" in words and not words.startswith("ValidationError") and "\n" not in words


def test_the_servers_log_is_one_plain_line_a_record_set_up_once(monkeypatch):
    log = logging.getLogger("agentcore.runs_server")
    monkeypatch.setattr(log, "handlers", [])
    monkeypatch.setattr(log, "propagate", True)
    context.log_to_stderr()
    context.log_to_stderr()
    assert len(log.handlers) == 1 and log.propagate is False and log.level == logging.WARNING
    assert log.handlers[0].formatter._fmt == "agentcore mcp-server: %(message)s"


def test_a_tools_failure_is_a_one_line_tool_error_logged_once_and_its_description_is_its_docstring(monkeypatch):
    from mcp.server.mcpserver.exceptions import ToolError

    def broken(x: int) -> int:
        """Breaks.

        Indented detail.
        """
        raise RuntimeError("bad\nthing")

    def works() -> int:
        return 1

    wrapped = tool_errors(broken)
    assert wrapped.__doc__ == "Breaks.\n\nIndented detail."
    assert tool_errors(works).__doc__ == "" and tool_errors(works)() == 1
    heard: list[str] = []

    class Heard(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            heard.append(record.getMessage())

    log = logging.getLogger("agentcore.runs_server")
    monkeypatch.setattr(log, "handlers", [Heard()])  # the server's log alone, whatever another test set up
    monkeypatch.setattr(log, "propagate", False)
    monkeypatch.setattr(log, "level", logging.WARNING)
    with pytest.raises(ToolError, match=r"^RuntimeError: bad thing$"):
        wrapped(1)
    assert heard == ["tool broken: RuntimeError: bad thing"]


def test_a_calls_viewer_is_the_servers_user_or_the_name_its_header_carries_in_either_case(monkeypatch):
    monkeypatch.setenv("AGENTCORE_TEACHERS", "tess")
    plain = Shared(server=None, pool=None, rules=None, limits=None, user="ann")  # type: ignore[arg-type]
    assert plain.viewer(None) == ("ann", None)
    shared = Shared(server=None, pool=None, rules=None, limits=None, user_header="X-User")  # type: ignore[arg-type]
    assert shared.viewer(Ctx({"x-user": "bob"})) == ("bob", False)
    assert shared.viewer(Ctx({"X-User": "tess"})) == ("tess", True)
    for headers in (None, {}, {"x-user": "<b>"}):
        with pytest.raises(UsageError, match="not signed in: this server takes the user's name from the X-User header"):
            shared.viewer(Ctx(headers))
    with pytest.raises(UsageError):
        shared.viewer(None)
    with pytest.raises(AttributeError):
        shared.user = "mallory"  # type: ignore[misc]


def test_a_calls_limits_and_a_clients_rules_are_values_no_tool_can_change():
    with pytest.raises(AttributeError):
        Limits().calls = 10**6  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ClientRules().allowed_urls = ("http://anywhere",)  # type: ignore[misc]


def test_a_client_is_gone_only_when_its_request_was_cancelled():
    import anyio
    import anyio.to_thread

    assert client_gone() is False  # not a worker thread of the server's loop

    async def asked() -> bool:
        return await anyio.to_thread.run_sync(client_gone)

    assert anyio.run(asked) is False  # a worker thread whose request goes on


def test_a_deadlines_timer_is_a_daemon_and_sets_the_event_when_the_time_runs_out():
    import threading

    done = threading.Event()
    before = set(threading.enumerate())  # pytest's own timer among them
    with Deadline(0.05).cancels(done):
        timers = [t for t in threading.enumerate() if isinstance(t, threading.Timer) and t not in before]
        assert len(timers) == 1 and timers[0].daemon  # a call that ends early leaves no thread holding the server
        assert done.wait(5)


def test_a_quiet_providers_failure_names_what_failed_and_its_request_id_cut_at_100_and_the_rest_passes_through():
    class Loud:
        name, model = "openai", "gpt-x"

        def __init__(self, request_id: str | None, status: int | None = 500) -> None:
            self.request_id, self.status = request_id, status

        def complete(self, request, on_text=None):
            raise ProviderError(
                "the upstream said <secret page>", provider="openai", status=self.status, request_id=self.request_id
            )

    quiet = _QuietProvider(Loud("r" * 150))
    assert (quiet.name, quiet.model) == ("openai", "gpt-x")
    with pytest.raises(ProviderError) as caught:
        quiet.complete(None)
    assert caught.value.message == NO_BODY and caught.value.request_id == "r" * 100 and caught.value.status == 500
    with pytest.raises(ProviderError) as caught:
        _QuietProvider(Loud("", None)).complete(None)
    assert caught.value.request_id is None and caught.value.message.startswith("no reply it could use")


# -- the tools as the server adds them, called here without a transport ----------------------------------------


class _Server:
    """What the SDK's server is asked for by the groups: each tool and resource, kept by name."""

    def __init__(self) -> None:
        self.tools: dict[str, Any] = {}
        self.resources: dict[str, Any] = {}

    def tool(self):
        return lambda fn: self.tools.setdefault(fn.__name__, fn)

    def resource(self, uri: str, mime_type: str):
        return lambda fn: self.resources.setdefault(uri, fn)


@pytest.fixture
def served(tmp_path, store):
    db = str(tmp_path / "runs.db")
    server = _Server()
    shared = Shared(
        server, StorePool(lambda owner, teacher: Store(db, owner=owner, teacher=teacher)), ClientRules(), Limits()
    )
    for add in (add_reading, add_library, add_tests):
        add(shared)
    return server, store


def test_list_runs_says_whether_there_are_more_than_its_limit_and_filters_by_model_and_label_past_it(served):
    server, store = served
    runs = [priced_run([(10, 1, 0, 1.0)], model="gpt-4o-mini" if n % 2 else "gpt-4o") for n in range(6)]
    for run in runs:
        store.save_run(run)
    list_runs = server.tools["list_runs"]
    assert len(list_runs(limit=6)["runs"]) == 6 and list_runs(limit=6)["more"] is False
    assert list_runs(text="no such words")["runs"] == [] and list_runs(provider="anthropic")["runs"] == []
    assert list_runs(owner="bob")["runs"] == []
    assert len(list_runs(limit=5)["runs"]) == 5 and list_runs(limit=5)["more"] is True
    minis = list_runs(model="mini", limit=2)  # filtered from more than the limit: the limit is of what is kept
    assert len(minis["runs"]) == 2 and minis["more"] is True
    assert len(list_runs(model="mini", limit=3)["runs"]) == 3 and list_runs(model="mini", limit=3)["more"] is False
    store.annotate(runs[0].id, Annotation(step=1, labels=["good"]), user="ann")
    store.annotate(runs[1].id, Annotation(step=1, labels=["good"]), user="ann")
    labelled = list_runs(label="good", limit=1)
    assert len(labelled["runs"]) == 1 and labelled["more"] is True
    assert {r["run_id"] for r in list_runs(label="good", limit=5)["runs"]} == {runs[0].id, runs[1].id}


def test_stats_groups_with_a_filter_left_empty_meaning_none_and_totals_only_where_a_run_is_in_one_group(served):
    server, store = served
    for model in ("gpt-4o", "gpt-4o-mini"):
        store.save_run(priced_run([(10, 1, 0, 1.0)], model=model))
    stats = server.tools["stats"]
    by_model = stats(by="model")
    assert [g["runs"] for g in by_model["groups"]] == [1, 1] and by_model["totals"]["steps"] == 2
    assert stats(by="provider", provider="", owner="", text="", since="")["groups"][0]["runs"] == 2
    assert stats(by="label")["totals"] is None  # a run may be in several groups: no total
    for narrowed in ({"provider": "anthropic"}, {"owner": "bob"}, {"text": "no such words"}):
        assert stats(by="model", **narrowed)["groups"] == [], narrowed


def test_a_scan_left_to_its_defaults_skips_runs_read_already_and_the_replay_page_is_the_runs(served):
    server, store = served
    run = priced_run([(10, 1, 0, 1.0)])
    store.save_run(run)
    first = server.tools["scan"]()
    again = server.tools["scan"]()
    assert (first["runs"], again["runs"], again["skipped"]) == (1, 0, 1)
    assert server.tools["scan"](again=True)["runs"] == 1
    page = next(fn for uri, fn in server.resources.items() if "replay" in uri)(run.id, None)
    assert page.startswith("<!DOCTYPE html>") and run.id in page


# -- the tools' own rules, on a Store of the test's ----------------------------------------------------------------


def _fresh(store: Any, max_steps: int = 5, **config: Any) -> Any:
    tools = [t.spec() for t in toolbox.get_tools("get_weather")]
    settings = {"provider": "scripted", "model": "weather", "scenario": "weather", "tools": tools} | config
    run = Run.start("What is the weather in Paris?", RunConfig(max_steps=max_steps, **settings))
    store.save_run(run)
    return run


def test_a_run_no_one_stored_or_named_by_no_text_is_refused_by_name(store):
    for missing in ("nope", 7):
        with pytest.raises(UsageError, match=f"no run {str(missing)!r} in the runs database"):
            tools.read(store, missing)  # type: ignore[arg-type]


def test_a_stored_run_going_on_with_a_model_file_of_the_servers_is_refused(store):
    run = _fresh(store, provider="local", model="/srv/models/secret.gguf")
    with pytest.raises(UsageError, match="a client names no file of the server's"):
        tools.own(store, run.id, ClientRules())


def test_a_fork_takes_edited_messages_up_to_their_limit_of_json_exactly(store):
    run = _fresh(store)
    shell = json.dumps([{"role": "user", "content": ""}])
    exact = [{"role": "user", "content": "x" * (MAX_EDIT_CHARS - len(shell))}]
    assert len(json.dumps(exact)) == MAX_EDIT_CHARS
    made = tools.fork(store, run.id, 1, exact, None)
    assert made["parent"]["run_id"] == run.id and store.summary(made["run_id"]) is not None
    over = [{"role": "user", "content": "x" * (MAX_EDIT_CHARS - len(shell) + 1)}]
    with pytest.raises(UsageError, match="more than 2,000,000 characters of JSON"):
        tools.fork(store, run.id, 1, over, None)


def test_step_run_moves_one_phase_or_one_step_and_an_ended_run_only_through_its_tools(store):
    run = _fresh(store)
    model = tools.step(store, run.id, "model", ClientRules(), Limits())
    assert model["next_phase"] == "tools" and model["new_messages"] == 1
    tools_phase = tools.step(store, run.id, "tools", ClientRules(), Limits())
    assert tools_phase["next_phase"] == "model" and tools_phase["new_messages"] >= 1
    whole = tools.step(store, _fresh(store).id, "step", ClientRules(), Limits())
    assert whole["next_phase"] == "model" and whole["new_messages"] >= 2
    ended = tools.to_end(store, run.id, ClientRules(), Limits())
    assert ended["stop_reason"] == "answer"
    with pytest.raises(UsageError, match=rf"run {run.id} has ended \(answer\): fork it to go on"):
        tools.step(store, run.id, "step", ClientRules(), Limits())
    with pytest.raises(UsageError, match=rf"run {run.id} has ended \(answer\): fork it to go on"):
        tools.to_end(store, run.id, ClientRules(), Limits())


def test_run_to_end_takes_a_run_whose_budget_is_within_the_calls_of_one_call_exactly(store):
    within = _fresh(store, max_steps=3)
    assert tools.to_end(store, within.id, ClientRules(), Limits(calls=3))["stop_reason"] == "answer"
    past = _fresh(store, max_steps=4)
    with pytest.raises(UsageError, match=rf"run {past.id} may make 4 more calls: step it, at most 3 here"):
        tools.to_end(store, past.id, ClientRules(), Limits(calls=3))


def test_a_pinned_test_is_written_as_yaml_or_json_by_its_suffix(store, weather, tmp_path):
    tools.pin(store, weather.id, "t.yaml", "weather")
    tools.pin(store, weather.id, "t.json", "weather")
    assert not (tmp_path / "t.yaml").read_text().lstrip().startswith("{")
    assert json.loads((tmp_path / "t.json").read_text())["name"] == "weather"
    tools.pin(store, weather.id, "deep/er/t.json", "weather")  # the folders made as needed
    assert (tmp_path / "deep" / "er" / "t.json").is_file()


def test_a_test_run_takes_configurations_trials_and_runs_up_to_their_limits_exactly(store, weather):
    tools.pin(store, weather.id, "tests/weather.json", "weather")
    rules = ClientRules()
    with pytest.raises(UsageError, match=f"at most {MAX_COLUMNS} configurations in one call, not {MAX_COLUMNS + 1}"):
        tools.run_tests(store, "tests", ["replay"] * (MAX_COLUMNS + 1), 1, rules, Limits())
    with pytest.raises(UsageError, match=rf"x {MAX_COLUMNS} configurations x 1 trials is {MAX_COLUMNS} runs"):
        tools.run_tests(store, "tests", ["replay"] * MAX_COLUMNS, 1, rules, Limits(trials=MAX_COLUMNS - 1))
    for bad in (0, -1, "2"):
        with pytest.raises(UsageError, match=f"trials is a whole number from 1, not {bad}"):
            tools.run_tests(store, "tests", None, bad, rules, Limits())  # type: ignore[arg-type]
    done = tools.run_tests(store, "tests", None, 2, rules, Limits(trials=2))  # 1 test x 1 configuration x 2
    assert (done["passed"], done["cells"], done["trials"], done["stopped"]) == (1, 1, 2, None)
    with pytest.raises(UsageError, match="is 3 runs, over this server's 2 in one call"):
        tools.run_tests(store, "tests", None, 3, rules, Limits(trials=2))


def test_blame_grades_by_a_text_or_a_test_one_of_them(store):
    for grading in ((None, None), ("18", "tests/t.json")):
        with pytest.raises(UsageError, match="give `expect` .* or `test` .*, one of them"):
            tools.blame(store, "any", grading, None, 1, None, False, ClientRules(), Limits())
    with pytest.raises(UsageError, match="no run 'any'"):
        tools.blame(store, "any", ("18", None), None, 1, None, False, ClientRules(), Limits())


def test_list_runs_filtered_by_a_model_reads_the_newest_max_list_x_5_runs_and_no_further(served, monkeypatch):
    server, store = served
    monkeypatch.setattr(groups, "MAX_LIST", 10)  # the rule at a size a test stores quickly
    read = 10 * 5
    oldest = Run.start("Hello?", RunConfig(provider="openai", model="gpt-4o-mini"))
    store.save_run(oldest)
    time.sleep(0.002)  # saved a millisecond before the rest: the oldest, whatever their ids
    for _ in range(read - 1):
        store.save_run(Run.start("Hello?", RunConfig(provider="openai", model="gpt-4o")))
    found = server.tools["list_runs"](model="mini")
    assert [r["run_id"] for r in found["runs"]] == [oldest.id] and found["more"] is False
    store.save_run(Run.start("Hello?", RunConfig(provider="openai", model="gpt-4o")))  # now one past the newest 50
    assert server.tools["list_runs"](model="mini") == {"runs": [], "more": False}


def _within(calls: int = 100) -> tuple[ClientRules, Limits]:
    return ClientRules(), Limits(calls=calls)


def test_blame_left_to_its_defaults_forks_before_every_step_on_the_runs_own_configuration_five_times(served, weather):
    server, store = served
    found = server.tools["blame"](run_id=weather.id, expect="Atlantis")
    assert (found["config"], found["bisect"], found["trials"]) == ("scripted:weather", False, 5)
    assert [r["step"] for r in found["rates"]] == list(range(1, len(weather.steps) + 1))  # every step, not halves
    for rate in found["rates"]:
        assert (rate["trials"], len(rate["run_ids"]), rate["more_run_ids"]) == (5, 5, 0)
        assert all(store.read_run(i).parent.run_id == weather.id for i in rate["run_ids"])


def test_blame_lists_five_continuations_of_a_fork_step_and_counts_the_rest_each_one_saved(store, weather):
    found = tools.blame(store, weather.id, ("Atlantis", None), None, MAX_BLAME_IDS + 1, None, False, *_within())
    for rate in found["rates"]:
        assert (rate["trials"], len(rate["run_ids"]), rate["more_run_ids"]) == (MAX_BLAME_IDS + 1, MAX_BLAME_IDS, 1)
    made = [c.id for c in store.children(weather.id)]
    assert len(made) == (MAX_BLAME_IDS + 1) * len(weather.steps)
    assert {i for rate in found["rates"] for i in rate["run_ids"]} < set(made)


def _calculator_call(shown: int) -> tuple[ToolCall, str]:
    """A calculator call whose row text, `calculator(ARGUMENTS)`, is `shown` characters long; and that text."""
    padding = shown - len(
        f"calculator({ToolCall(id='c', name='calculator', arguments={'expression': ''}).arguments_text})"
    )
    call = ToolCall(id=f"c{shown}", name="calculator", arguments={"expression": "1" * padding})
    text = f"calculator({call.arguments_text})"
    assert len(text) == shown
    return call, text


def test_a_comparisons_rows_keep_a_reply_and_a_call_whole_at_their_limits_and_cut_them_one_past(store):
    whole_call, whole_shown = _calculator_call(500)
    long_call, long_shown = _calculator_call(501)

    def result(call: ToolCall) -> list[ToolMessage]:
        return [ToolMessage(tool_call_id=call.id, name="calculator", content="2")]

    run = made_run(
        [
            AssistantMessage(content="a" * MAX_TEXT, tool_calls=[whole_call]),
            result(whole_call),
            AssistantMessage(content="b" * (MAX_TEXT + 1), tool_calls=[long_call]),
            result(long_call),
            AssistantMessage(content="c" * (MAX_TEXT + 1)),
        ]
    )
    store.save_run(run)
    columns = ["scripted:weather", "scripted:weather"]
    first = tools.compare(store, run, 1, columns, 1, *_within())
    assert first["step"][0]["reply"] == "a" * MAX_TEXT and first["step"][0]["tool_calls"] == [whole_shown]
    assert first["summary"][0]["final_answer"] == "c" * MAX_TEXT + "… (1 more characters not shown)"
    second = tools.compare(store, run, 2, columns, 1, *_within())["step"][0]
    assert second["reply"] == "b" * MAX_TEXT + "… (1 more characters not shown)"
    assert second["tool_calls"] == [long_shown[:500] + "… (1 more characters not shown)"]


def test_a_comparison_takes_configurations_x_steps_up_to_the_calls_of_one_call_exactly(store, weather):
    columns = ["scripted:weather", "scripted:weather"]
    with pytest.raises(UsageError, match="2 configurations x 2 steps is 4 model calls, over this server's 3 in one"):
        tools.compare(store, weather, 1, columns, 2, *_within(calls=3))
    assert store.children(weather.id) == []  # refused before any fork
    compared = tools.compare(store, weather, 1, columns, 2, *_within(calls=4))
    assert [r["steps"] for r in compared["summary"][1:]] == [2, 2] and compared["stopped"] is None


def test_a_comparisons_failed_column_is_not_asked_again_while_the_others_go_on_to_their_end(
    store, weather, monkeypatch
):
    for name in ("OPENAI_BASE_URL", "AGENTCORE_MCP_ALLOW_BASE_URLS"):
        monkeypatch.delenv(name, raising=False)
    refusing = Reply(json.dumps({"error": {"message": "bad request"}}).encode(), status=400)  # not retried
    with StandIn(refusing) as upstream:
        rules = ClientRules.of([f"{upstream.url}/v1"])
        columns = [f"openai:m@{upstream.url}/v1", "scripted:weather"]
        compared = tools.compare(store, weather, 1, columns, None, rules, Limits())
        asked = len(upstream.seen)
    assert asked == 1
    failed, went_on = compared["summary"][1:]
    assert (failed["state"], failed["steps"]) == ("error", 0) and "400" in compared["forks"][0]["error"]
    assert (went_on["stop_reason"], went_on["steps"]) == ("answer", len(weather.steps))


def test_a_test_run_saves_each_failing_trials_run_and_no_passing_one(store, weather):
    tools.pin(store, weather.id, "tests/passes.json", "passes")
    tools.pin(store, weather.id, "tests/fails.json", "fails")
    failing = json.loads(Path("tests/fails.json").read_text())
    failing["expect"]["answer"]["contains"] = ["Atlantis"]
    Path("tests/fails.json").write_text(json.dumps(failing))
    for trials in (1, 2):
        before = set(store.run_ids())
        done = tools.run_tests(store, "tests", None, trials, ClientRules(), Limits())
        outcomes = {r["test"]: r["outcomes"] for r in done["results"]}
        assert [o["passed"] for o in outcomes["fails"]] == [False] * trials
        assert [o["passed"] for o in outcomes["passes"]] == [True] * trials
        assert set(store.run_ids()) - before == {o["run_id"] for o in outcomes["fails"]}


def test_a_scan_whose_client_goes_away_says_how_many_runs_it_read_of_how_many(served, monkeypatch):
    server, store = served
    for _ in range(SCAN_CHUNK // 2):
        store.save_run(priced_run([(10, 1, 0, 1.0)]))
    assert server.tools["scan"]()["runs"] == SCAN_CHUNK // 2
    for _ in range(SCAN_CHUNK // 2 + 2):
        store.save_run(priced_run([(10, 1, 0, 1.0)]))
    looks: list[bool] = []

    def gone_at_the_second_look() -> bool:
        looks.append(True)
        return len(looks) > 1

    monkeypatch.setattr(limits, "client_gone", gone_at_the_second_look)
    stopped = server.tools["scan"]()
    assert (stopped["runs"], stopped["skipped"]) == (SCAN_CHUNK // 2, SCAN_CHUNK // 2)  # one chunk: old and new
    assert stopped["stopped"] == (
        f"the client went away after {SCAN_CHUNK} of {SCAN_CHUNK + 2} runs: scan again to go on (runs read are skipped)"
    )
    monkeypatch.setattr(limits, "client_gone", lambda: False)
    rest = server.tools["scan"]()
    assert (rest["runs"], rest["skipped"], rest["stopped"]) == (2, SCAN_CHUNK, None)
